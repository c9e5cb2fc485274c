<?php

declare(strict_types=1);

namespace Deadbolt\Bridge\Symfony;

use Deadbolt\Exception\LockConflictedException as DeadboltConflict;
use Deadbolt\Exception\LockExpiredException as DeadboltExpired;
use Deadbolt\Key as DeadboltKey;
use Deadbolt\Store\SharedLockStoreInterface as DeadboltSharedStoreInterface;
use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\Exception\LockExpiredException;
use Symfony\Component\Lock\Key;
use Symfony\Component\Lock\PersistingStoreInterface;
use Symfony\Component\Lock\SharedLockStoreInterface;

/**
 * A Deadbolt store over any symfony/lock store (PdoStore, PostgreSqlStore, MongoDbStore, ZookeeperStore, MemcachedStore,
 * DynamoDB, a team's own): Deadbolt's Lock and LockFactory run on it, with their deadlines, fork safety, metrics, logger
 * and one-line run(), on the data symfony/lock keeps (so processes still on symfony/lock share the locks).
 *
 * ```php
 * $store = new SymfonyStore(new \Symfony\Component\Lock\Store\PdoStore($pdo));
 * $lock = (new \Deadbolt\LockFactory($store))->createLock('invoice:42', 30.0);
 * $lock->acquire(true, timeout: 5.0);
 * ```
 *
 * It is a store written in PHP to Deadbolt's engine (docs/API-CONTRACT.md, "Stores written in PHP"): a blocking acquire
 * polls save() every 90-110 ms, as symfony/lock's Lock does with a store that cannot block; no background refresher
 * (the refresher's thread cannot call PHP: refresh() yourself), no fencing tokens. A read lock is symfony/lock's read
 * lock where the store has them, else an exclusive lock (symfony/lock's own fallback).
 *
 * Each Deadbolt Key carries its Symfony Key (in its state, under this class's name): the token and whatever else the
 * Symfony store keeps there, and the lifetime, copied both ways around each call.
 */
final class SymfonyStore implements DeadboltSharedStoreInterface
{
    public function __construct(private readonly PersistingStoreInterface $store)
    {
    }

    public function save(DeadboltKey $key): void
    {
        $this->run($key, fn (Key $k) => $this->store->save($k));
    }

    public function saveRead(DeadboltKey $key): void
    {
        $this->run($key, fn (Key $k) => $this->store instanceof SharedLockStoreInterface ? $this->store->saveRead($k) : $this->store->save($k));
    }

    public function putOffExpiration(DeadboltKey $key, float $ttl): void
    {
        $this->run($key, fn (Key $k) => $this->store->putOffExpiration($k, $ttl));
    }

    public function delete(DeadboltKey $key): void
    {
        if ($key->hasState(self::class)) {
            $this->run($key, fn (Key $k) => $this->store->delete($k));
        }
    }

    public function exists(DeadboltKey $key): bool
    {
        return $key->hasState(self::class) && $this->run($key, fn (Key $k): bool => $this->store->exists($k));
    }

    /** The symfony/lock store this one runs on. */
    public function symfonyStore(): PersistingStoreInterface
    {
        return $this->store;
    }

    /**
     * Runs $call on the Symfony Key of $key with $key's lifetime, then gives $key the lifetime the Symfony store left.
     * symfony/lock's conflict and expiry become Deadbolt's, with the original as previous.
     *
     * @template T
     *
     * @param \Closure(Key): T $call
     *
     * @return T
     */
    private function run(DeadboltKey $key, \Closure $call): mixed
    {
        $symfony = $this->symfonyKey($key);
        self::copyLifetime($key, $symfony);
        try {
            return $call($symfony);
        } catch (LockConflictedException $e) {
            throw new DeadboltConflict($e->getMessage(), 0, $e);
        } catch (LockExpiredException $e) {
            throw new DeadboltExpired($e->getMessage(), 0, $e);
        } finally {
            self::copyLifetime($symfony, $key);
        }
    }

    private static function copyLifetime(DeadboltKey|Key $from, DeadboltKey|Key $to): void
    {
        $to->resetLifetime();
        $left = $from->getRemainingLifetime();
        if (null !== $left) {
            // A lifetime already spent is spent on the other side too (reduceLifetime() takes no negative TTL).
            $to->reduceLifetime(max($left, 0.0));
        }
    }

    /** The Symfony Key kept in $key's state, made on first use (its token drawn by the Symfony store). */
    private function symfonyKey(DeadboltKey $key): Key
    {
        if (!$key->hasState(self::class)) {
            $key->setState(self::class, new Key((string) $key));
        }

        return $key->getState(self::class);
    }
}
