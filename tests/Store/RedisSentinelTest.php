<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\LockFactory;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\RedisServer;
use Deadbolt\Tests\Support\SentinelGroup;

/**
 * A Sentinel DSN (`redis:?host[s1]&host[s2]&redis_sentinel=service`): the primary is asked of the sentinels, and a
 * failover is followed by the objects made before it. Real sentinels (redis-server --sentinel) over a real primary and
 * replica.
 *
 * Slow: make check leaves it out, make test runs it.
 *
 * @group slow
 */
#[\PHPUnit\Framework\Attributes\Group('slow')]
final class RedisSentinelTest extends DeadboltTestCase
{
    private ?SentinelGroup $group = null;

    protected function tearDown(): void
    {
        $this->group?->stop();
    }

    public function testTheLockIsTakenOnThePrimaryTheSentinelsName(): void
    {
        $this->group = SentinelGroup::start();
        $primary = $this->group->servers[0];
        $authority = 'redis://127.0.0.1:'.$this->group->sentinels[1]->port.'/2?redis_sentinel='.SentinelGroup::SERVICE;
        foreach (['host[] form' => $this->group->dsn('db=2'), 'host form' => $authority] as $form => $dsn) {
            $lock = (new LockFactory(new RedisStore($dsn)))->createLock('through-sentinel', 30);
            $this->assertTrue($lock->acquire(), $form);
            $client = $primary->client();
            $client->select(2);
            $this->assertSame(1, $client->exists('through-sentinel'), "$form: the primary, database 2, has it");
            $lock->release();
            $this->assertSame(0, $client->exists('through-sentinel'), $form);
        }
    }

    public function testSentinelsThatAreDownOrDoNotKnowTheServiceAreSkipped(): void
    {
        $this->group = SentinelGroup::start();
        $stranger = RedisServer::startSentinel('another-service', $this->group->servers[0]->port);
        $dead = RedisServer::freePort();
        $dsn = "redis:?host[127.0.0.1:$dead]&host[127.0.0.1:{$stranger->port}]&host[127.0.0.1:{$this->group->sentinels[2]->port}]&redis_sentinel=".SentinelGroup::SERVICE;
        $lock = (new LockFactory(new RedisStore($dsn)))->createLock('skipping', 30);
        $this->assertTrue($lock->acquire());
        $lock->release();
        $stranger->stop();
    }

    public function testNoSentinelLeadingToAPrimaryFailsNamingEachOne(): void
    {
        $this->group = SentinelGroup::start(0);
        $dead = RedisServer::freePort();
        $sentinel = $this->group->sentinels[0]->port;
        $lock = (new LockFactory(new RedisStore("redis:?host[127.0.0.1:$dead]&host[127.0.0.1:$sentinel]&redis_sentinel=unknown&timeout=1")))->createLock('nowhere', 30);
        try {
            $lock->acquire();
            $this->fail('acquired with no primary to be found');
        } catch (LockAcquiringException $e) {
            $message = (string) $e->getPrevious()?->getMessage();
            $this->assertStringContainsString('no sentinel led to a primary for "unknown"', $message);
            $this->assertStringContainsString("sentinel 127.0.0.1:$dead the connection was refused", $message);
            $this->assertStringContainsString("sentinel 127.0.0.1:$sentinel knows no service \"unknown\"", $message);
        }
    }

    /**
     * The primary dies: the store made before finds the promoted replica on its next call (a dropped connection, then
     * the sentinels asked again), with no new PHP object.
     */
    public function testAKilledPrimaryIsFollowedToThePromotedReplica(): void
    {
        $this->group = SentinelGroup::start();
        $old = $this->group->servers[0];
        $factory = new LockFactory(new RedisStore($this->group->dsn()));
        $lock = $factory->createLock('followed', 30);
        $this->assertTrue($lock->acquire());
        $lock->release();
        $old->stop();
        $new = $this->group->waitForFailoverFrom($old);
        $this->assertTrue($lock->acquire(), 'the same Lock, on the new primary');
        $this->assertSame(1, $new->client()->exists('followed'));
        $this->assertTrue($factory->createLock('followed', 30)->acquire() === false, 'and it excludes others there');
        $lock->release();
    }

    /**
     * A primary demoted to replica (a failover it survived) answers writes with READONLY: the store asks the sentinels
     * again instead of failing, and the write lands on the new primary.
     */
    public function testAPrimaryTurnedReplicaIsLeftForTheNewOne(): void
    {
        $this->group = SentinelGroup::start();
        $old = $this->group->servers[0];
        $lock = (new LockFactory(new RedisStore($this->group->dsn())))->createLock('demoted', 30);
        $this->assertTrue($lock->acquire());
        $lock->release();
        $this->group->sentinels[0]->client()->rawCommand('SENTINEL', 'FAILOVER', SentinelGroup::SERVICE);
        $new = $this->group->waitForFailoverFrom($old);
        $this->group->waitUntilReplica($old);
        $this->assertTrue($lock->acquire(), 'the connection to the old primary gets READONLY, the next one goes to the new');
        $this->assertSame(1, $new->client()->exists('demoted'));
        $lock->release();
    }

    public function testSentinelAndPrimaryCredentialsComeFromTheEnvironmentAndStayOutOfMessages(): void
    {
        $this->group = SentinelGroup::start(1, 'primary-secret-1', ['requirepass sentinel-secret-2']);
        putenv('DEADBOLT_TEST_PRIMARY_PW=primary-secret-1');
        putenv('DEADBOLT_TEST_SENTINEL_PW=sentinel-secret-2');
        putenv('DEADBOLT_TEST_WRONG_PW=wrong-secret-3');
        try {
            $good = $this->group->dsn('password_env=DEADBOLT_TEST_PRIMARY_PW&sentinel_password_env=DEADBOLT_TEST_SENTINEL_PW');
            $lock = (new LockFactory(new RedisStore($good)))->createLock('authenticated', 30);
            $this->assertTrue($lock->acquire());
            $lock->release();
            foreach (['sentinel_password_env' => 'password_env=DEADBOLT_TEST_PRIMARY_PW&sentinel_password_env=DEADBOLT_TEST_WRONG_PW',
                'password_env' => 'password_env=DEADBOLT_TEST_WRONG_PW&sentinel_password_env=DEADBOLT_TEST_SENTINEL_PW'] as $wrong => $options) {
                $store = new RedisStore($this->group->dsn($options));
                $lock = (new LockFactory($store))->createLock('refused', 30);
                try {
                    $lock->acquire();
                    $this->fail("$wrong: acquired with a wrong password");
                } catch (LockAcquiringException $e) {
                    $text = $e->getMessage().$e->getPrevious()?->getMessage().$e->getTraceAsString().print_r($store, true);
                    $this->assertStringContainsString('no sentinel led to a primary', $text, $wrong);
                    foreach (['primary-secret-1', 'sentinel-secret-2', 'wrong-secret-3'] as $secret) {
                        $this->assertStringNotContainsString($secret, $text, $wrong);
                    }
                }
            }
        } finally {
            putenv('DEADBOLT_TEST_PRIMARY_PW');
            putenv('DEADBOLT_TEST_SENTINEL_PW');
            putenv('DEADBOLT_TEST_WRONG_PW');
        }
    }

    public function testABadSentinelDsnIsRefusedUpFront(): void
    {
        $this->expectException(InvalidArgumentException::class);
        // Several hosts without redis_sentinel are a cluster's seed nodes, unless redis_cluster=0 says they are not.
        $this->expectExceptionMessage('several hosts need redis_sentinel=<service> or redis_cluster=1');
        new RedisStore('redis:?host[127.0.0.1:26379]&host[127.0.0.1:26380]&redis_cluster=0');
    }
}
