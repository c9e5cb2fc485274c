<?php

declare(strict_types=1);

namespace Deadbolt\Bridge\Symfony;

use Deadbolt\Store\StoreFactory as DeadboltStoreFactory;
use Symfony\Component\Lock\PersistingStoreInterface;
use Symfony\Component\Lock\Store\StoreFactory as SymfonyStoreFactory;

/**
 * symfony/lock's StoreFactory, with Deadbolt's stores behind a `deadbolt+` prefix, so a DSN in configuration can pick
 * Deadbolt's engine: `deadbolt+redis://host:6379`, `deadbolt+rediss://...`, `deadbolt+flock`, `deadbolt+flock:///dir`,
 * `deadbolt+semaphore` (`deadbolt+semaphore?hash=md5` beside symfony/lock 5.4), `deadbolt+memcached://host:11211`,
 * `deadbolt+pgsql:host=...;dbname=...` and `deadbolt+sqlite:/path` (PdoStore), `deadbolt+pgsql+advisory:...`,
 * `deadbolt+postgresql+advisory://...` (PostgreSqlStore), `deadbolt+mysql:host=...` (PdoStore),
 * `deadbolt+mysql+advisory:host=...` (MysqlStore), `deadbolt+in-memory` (what Deadbolt's StoreFactory
 * takes, prefixed). Anything else goes to symfony/lock's factory.
 */
final class StoreFactory
{
    public const PREFIX = 'deadbolt+';

    public static function createStore(#[\SensitiveParameter] object|string $connection): PersistingStoreInterface
    {
        if (\is_string($connection) && str_starts_with($connection, self::PREFIX)) {
            // No closure here: its bound variables (the DSN) would show in a trace's arguments
            // (zend.exception_ignore_args=0); this frame's own parameter is marked sensitive.
            try {
                return new DeadboltStore(DeadboltStoreFactory::createStore(substr($connection, \strlen(self::PREFIX))));
            } catch (\Throwable $e) {
                throw Exceptions::translate($e);
            }
        }

        return SymfonyStoreFactory::createStore($connection);
    }
}
