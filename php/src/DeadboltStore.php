<?php

declare(strict_types=1);

namespace Deadbolt\Bridge\Symfony;

use Deadbolt\Key as DeadboltKey;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\BlockingSharedLockStoreInterface as DeadboltBlockingSharedStoreInterface;
use Deadbolt\Store\BlockingStoreInterface as DeadboltStoreInterface;
use Deadbolt\Store\SemaphoreStore;
use Deadbolt\Store\SharedLockStoreInterface as DeadboltSharedStoreInterface;
use Symfony\Component\Lock\BlockingSharedLockStoreInterface;
use Symfony\Component\Lock\BlockingStoreInterface;
use Symfony\Component\Lock\Exception\LockExpiredException;
use Symfony\Component\Lock\Key;
use Symfony\Component\Lock\SharedLockStoreInterface;
use Symfony\Component\Lock\Store\RedisStore as SymfonyRedisStore;

/**
 * A symfony/lock store over any Deadbolt store: Symfony's own Lock, LockFactory, LockableTrait and framework config
 * run on Deadbolt's engine (one script per Redis call, hand-over to waiters, fork safety).
 *
 * ```php
 * $factory = new \Symfony\Component\Lock\LockFactory(new DeadboltStore(new \Deadbolt\Store\RedisStore($dsn)));
 * ```
 *
 * The owner token lives in Symfony's Key state under symfony/lock's RedisStore name, as symfony/lock's RedisStore
 * keeps it: a Key saved through this store can be released by symfony/lock's RedisStore, and a Key that
 * symfony/lock's RedisStore saved is this store's to refresh or release. The Deadbolt Key that carries it is kept in
 * the state too (under this class's name), so a flock or System V semaphore lock stays with the Symfony Key that took
 * it; such a Key is marked unserializable, as symfony/lock's FlockStore and SemaphoreStore mark it. Over a store without
 * shared locks (SemaphoreStore), a read lock is an exclusive one, as symfony/lock's Lock takes it on such a store.
 */
final class DeadboltStore implements BlockingStoreInterface, BlockingSharedLockStoreInterface, SharedLockStoreInterface
{
    public function __construct(private readonly DeadboltStoreInterface $store)
    {
    }

    public function save(Key $key): void
    {
        $this->run($key, fn (DeadboltKey $k) => $this->store->save($k), true);
    }

    public function saveRead(Key $key): void
    {
        $this->run($key, fn (DeadboltKey $k) => $this->store instanceof DeadboltSharedStoreInterface ? $this->store->saveRead($k) : $this->store->save($k), true);
    }

    public function waitAndSave(Key $key): void
    {
        $this->run($key, fn (DeadboltKey $k) => $this->store->waitAndSave($k), true);
    }

    public function waitAndSaveRead(Key $key): void
    {
        $this->run($key, fn (DeadboltKey $k) => $this->store instanceof DeadboltBlockingSharedStoreInterface ? $this->store->waitAndSaveRead($k) : $this->store->waitAndSave($k), true);
    }

    public function putOffExpiration(Key $key, float $ttl): void
    {
        $this->run($key, fn (DeadboltKey $k) => $this->store->putOffExpiration($k, $ttl), true);
    }

    public function delete(Key $key): void
    {
        $this->run($key, fn (DeadboltKey $k) => $this->store->delete($k), false);
    }

    public function exists(Key $key): bool
    {
        if (!$key->hasState(self::class) && !$key->hasState(SymfonyRedisStore::class)) {
            return false; // never saved anywhere: no token to ask about
        }

        return $this->run($key, fn (DeadboltKey $k): bool => $this->store->exists($k), false);
    }

    /** The store this one runs on. */
    public function deadboltStore(): DeadboltStoreInterface
    {
        return $this->store;
    }

    /**
     * Runs $call on the Deadbolt Key of $key, with $key's lifetime; when $call takes or extends the lock ($takes),
     * $key then has the lifetime the Deadbolt store gave, and a $key that has run out is released and refused, as
     * symfony/lock's stores do.
     *
     * @template T
     *
     * @param \Closure(DeadboltKey): T $call
     *
     * @return T
     */
    private function run(Key $key, \Closure $call, bool $takes): mixed
    {
        $deadbolt = $this->deadboltKey($key);
        $deadbolt->resetLifetime();
        $left = $key->getRemainingLifetime();
        if (null !== $left) {
            $deadbolt->reduceLifetime($left);
        }
        $result = Exceptions::symfony(static fn () => $call($deadbolt));
        if ($takes) {
            $left = $deadbolt->getRemainingLifetime();
            if (null !== $left) {
                $key->reduceLifetime($left);
            }
            if ($this->store instanceof FlockStore || $this->store instanceof SemaphoreStore) {
                $key->markUnserializable();
            }
            if ($key->isExpired()) {
                Exceptions::symfony(fn () => $this->store->delete($deadbolt));
                throw new LockExpiredException(sprintf('Failed to store the "%s" lock.', $key));
            }
        }

        return $result;
    }

    /**
     * The Deadbolt Key kept in $key's state, made (with $key's token, if it has one) on first use: the one this
     * store's calls, and a {@see LockFactory::createLockFromKey()} lock, run on.
     */
    public function deadboltKey(Key $key): DeadboltKey
    {
        if ($key->hasState(self::class)) {
            return $key->getState(self::class);
        }
        $resource = (string) $key;
        $deadbolt = new DeadboltKey($resource);
        if ($key->hasState(SymfonyRedisStore::class)) {
            $deadbolt->__unserialize(['resource' => $resource, 'token' => $key->getState(SymfonyRedisStore::class)]);
        } else {
            $key->setState(SymfonyRedisStore::class, $deadbolt->__serialize()['token']);
        }
        $key->setState(self::class, $deadbolt);

        return $deadbolt;
    }
}
