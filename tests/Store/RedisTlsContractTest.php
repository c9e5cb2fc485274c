<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\RedisServer;
use Deadbolt\Tests\Support\TestCertificates;

/**
 * RedisStore by a rediss:// DSN (a private CA's certificate, verified) keeps the store contract and shared locks
 * (RedisTlsTest checks the verification itself).
 */
final class RedisTlsContractTest extends StoreContractTestCase
{
    use SharedStoreTestTrait;

    private static ?string $certificates = null;

    private static ?RedisServer $server = null;

    private static int $tlsPort = 0;

    public static function setUpBeforeClass(): void
    {
        self::$certificates = TestCertificates::make();
        [self::$server, self::$tlsPort] = TestCertificates::startServer(self::$certificates, 'server');
    }

    public static function tearDownAfterClass(): void
    {
        self::$server?->stop();
        self::$server = null;
        TestCertificates::remove((string) self::$certificates);
        self::$certificates = null;
    }

    protected function getStore(): object
    {
        // A generous connect timeout: a TLS handshake under valgrind takes seconds.
        return new RedisStore('rediss://127.0.0.1:'.self::$tlsPort.'?timeout=10&ca_file='.self::$certificates.'/ca.crt');
    }
}
