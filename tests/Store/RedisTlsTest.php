<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\Exception\LockStorageException;
use Deadbolt\LockFactory;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\RedisClusterServers;
use Deadbolt\Tests\Support\RedisServer;
use Deadbolt\Tests\Support\TestCertificates;

/**
 * rediss:// against a private TLS redis-server whose certificate a private CA signed (made here with openssl):
 * the certificate is always verified, and no DSN option turns that off; also against a Redis Cluster whose nodes
 * speak TLS (`tls-cluster yes`), where every node is reached over TLS with the same checks.
 */
final class RedisTlsTest extends DeadboltTestCase
{
    /** Made once for the class: two CAs, a server certificate for 127.0.0.1, one for another host. */
    private static ?string $certificates = null;

    private string $certs;

    private RedisServer $server;

    private int $tlsPort;

    public static function setUpBeforeClass(): void
    {
        self::$certificates = TestCertificates::make();
    }

    public static function tearDownAfterClass(): void
    {
        TestCertificates::remove((string) self::$certificates);
        self::$certificates = null;
    }

    protected function setUp(): void
    {
        $this->certs = (string) self::$certificates;
        $this->startServer('server');
    }

    protected function tearDown(): void
    {
        $this->server->stop();
    }

    /**
     * The TLS handshake falls under the DSN's timeouts: against a server that accepts and never answers, and with
     * rediss:// pointed at a plain Redis port, an acquire ends in a LockAcquiringException instead of waiting without
     * end (a oneshot job would block every later run). The child is killed, and the test fails, if it hangs.
     */
    public function testAStalledHandshakeEndsInAnError(): void
    {
        $silent = stream_socket_server('tcp://127.0.0.1:0', $errno, $error);
        $this->assertNotFalse($silent, $error);
        $silentPort = (int) substr((string) strrchr((string) stream_socket_get_name($silent, false), ':'), 1);
        foreach (['a server that never answers' => $silentPort, 'a plain Redis port' => $this->server->port] as $what => $port) {
            $result = \Deadbolt\Tests\Support\PhpProcess::run(<<<'PHP'
                $store = new Deadbolt\Store\RedisStore($vars['dsn']);
                try {
                    (new Deadbolt\LockFactory($store))->createLock('stalled-handshake', 5.0)->acquire();
                    echo 'acquired';
                } catch (Deadbolt\Exception\LockAcquiringException $e) {
                    echo 'failed: ', $e->getPrevious()?->getMessage();
                }
                PHP, ['dsn' => "rediss://127.0.0.1:$port?timeout=1&read_timeout=1"], true, 60.0);
            $this->assertSame(0, $result['exit'], "$what: the process did not end by itself\n".$result['stderr']);
            $this->assertStringStartsWith('failed: ', $result['stdout'], $what);
        }
        fclose($silent);
    }

    public function testATlsConnectionWithTheRightCaWorks(): void
    {
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory(new RedisStore($this->dsn('ca'))))->createLock($resource, 30.0);

        $this->assertTrue($lock->acquire());

        $this->assertSame(\Redis::REDIS_ZSET, $this->server->client()->type($resource), 'the lock is in that server');
        $lock->release();
        $this->assertSame(0, $this->server->client()->exists($resource));
    }

    public function testTheHostNameLocalhostMatchesTheCertificateToo(): void
    {
        $lock = (new LockFactory(new RedisStore("rediss://localhost:{$this->tlsPort}?timeout=10&ca_file={$this->certs}/ca.crt")))->createLock(uniqid(__METHOD__, true), 30.0);

        $this->assertTrue($lock->acquire());
        $lock->release();
    }

    /**
     * A cluster over TLS: seeded with one node's TLS port, the store learns the others' TLS ports from CLUSTER SLOTS
     * (asked over TLS) and locks on every node through verified TLS connections; the locks are the ones a plain-port
     * \RedisCluster sees. A CA that did not sign the nodes' certificates is refused, and nothing is written.
     */
    public function testAClusterIsReachedOverTlsOnEveryNode(): void
    {
        $tlsPorts = [];
        $cluster = RedisClusterServers::start(3, 0, [
            'tls-cluster' => 'yes',
            'tls-cert-file' => "{$this->certs}/server.crt",
            'tls-key-file' => "{$this->certs}/server.key",
            'tls-ca-cert-file' => "{$this->certs}/ca.crt",
            'tls-auth-clients' => 'no',
        ], static function () use (&$tlsPorts): array {
            $tlsPorts[] = $port = RedisServer::freePort();

            return ['tls-port' => (string) $port];
        });
        try {
            $dsn = "rediss:?host[127.0.0.1:$tlsPorts[0]]&redis_cluster=1&timeout=10&ca_file={$this->certs}";
            $overTls = new LockFactory(new RedisStore("$dsn/ca.crt"));
            $plain = new LockFactory(new RedisStore($cluster->client()));
            $masters = [];
            // 30 names miss one of three masters once in 60 000 runs.
            for ($i = 0; $i < 30; ++$i) {
                $resource = 'tls-cluster-'.$i.'-'.bin2hex(random_bytes(3));
                $lock = $overTls->createLock($resource, 30.0);
                $this->assertTrue($lock->acquire(), $resource);
                $this->assertFalse($plain->createLock($resource, 30.0)->acquire(false), "$resource is held");
                $masters[$cluster->masterOf($cluster->slotOf($resource))->port] = true;
                $lock->release();
            }
            $this->assertCount(3, $masters, 'every master was reached over TLS');

            $untrusted = new LockFactory(new RedisStore("$dsn/other-ca.crt"));
            $resource = 'tls-cluster-untrusted-'.bin2hex(random_bytes(3));
            try {
                $untrusted->createLock($resource, 30.0)->acquire();
                $this->fail('a node whose certificate another CA signed was trusted');
            } catch (LockAcquiringException $e) {
                $this->assertInstanceOf(LockStorageException::class, $e->getPrevious());
            }
            $this->assertSame(0, $cluster->node($cluster->masterOf($cluster->slotOf($resource)))->exists($resource));
        } finally {
            $cluster->stop();
        }
    }

    /**
     * @dataProvider untrustedSetups
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('untrustedSetups')]
    public function testAnUnverifiableCertificateIsRefused(?string $ca, string $certificate, string $says): void
    {
        if ('server' !== $certificate) {
            $this->server->stop();
            $this->startServer($certificate);
        }
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory(new RedisStore($this->dsn($ca))))->createLock($resource, 30.0);

        try {
            $lock->acquire();
            $this->fail('The lock was taken over a connection whose certificate could not be verified.');
        } catch (LockAcquiringException $e) {
            $this->assertInstanceOf(LockStorageException::class, $e->getPrevious());
            $this->assertStringContainsString('127.0.0.1:'.$this->tlsPort, $e->getPrevious()->getMessage());
            // Issue 25, item 14: each of these said only "the connection failed".
            $this->assertStringContainsString($says, $e->getPrevious()->getMessage());
        }
        $this->assertSame(0, $this->server->client()->exists($resource), 'nothing was written');
    }

    /**
     * @return iterable<string, array{?string, string}>
     */
    public static function untrustedSetups(): iterable
    {
        yield 'no ca_file: the system CAs do not know this one' => [null, 'server', 'signed by a CA this client does not trust (the system\'s CAs, or ca_file\'s): for a private CA, set ca_file='];
        yield 'another CA' => ['other-ca', 'server', 'signed by a CA this client does not trust'];
        yield 'right CA, certificate for another host' => ['ca', 'misnamed', 'is not valid for "127.0.0.1", the host checked'];
    }

    /** Issue 25, item 14: a ca_file that is not PEM was taken, and every connection then "failed". */
    public function testACaFileThatIsNotPemIsRefusedNamingIt(): void
    {
        $notPem = $this->tempDir().'/ca.der';
        file_put_contents($notPem, random_bytes(64));
        try {
            new RedisStore("rediss://127.0.0.1:{$this->tlsPort}?ca_file=$notPem");
            $this->fail('a CA file without a PEM certificate was taken');
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString("the CA file \"$notPem\" holds no PEM certificate", $e->getMessage());
        }
    }

    /**
     * @dataProvider verificationSwitches
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('verificationSwitches')]
    public function testNoOptionTurnsVerificationOff(string $option): void
    {
        try {
            new RedisStore("rediss://127.0.0.1:{$this->tlsPort}?$option");
            $this->fail("RedisStore accepted ?$option");
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString(rawurldecode(explode('=', $option)[0]), $e->getMessage());
        }
    }

    /**
     * @return iterable<string, array{string}>
     */
    public static function verificationSwitches(): iterable
    {
        yield 'verify_peer' => ['verify_peer=0'];
        yield 'verify_peer_name' => ['verify_peer_name=false'];
        yield 'insecure' => ['insecure=1'];
        yield 'ssl[verify_peer]' => ['ssl%5Bverify_peer%5D=0'];
        yield 'tls_insecure' => ['tls_insecure=true'];
    }

    private function dsn(?string $ca): string
    {
        // A generous connect timeout: a TLS handshake under valgrind takes seconds.
        return "rediss://127.0.0.1:{$this->tlsPort}?timeout=10".(null !== $ca ? "&ca_file={$this->certs}/$ca.crt" : '');
    }

    private function startServer(string $certificate): void
    {
        [$this->server, $this->tlsPort] = TestCertificates::startServer($this->certs, $certificate);
    }
}
