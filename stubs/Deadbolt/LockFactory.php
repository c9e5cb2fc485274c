<?php

declare(strict_types=1);

namespace Deadbolt;

/**
 * Creates locks bound to one store; the entry point of Deadbolt.
 *
 * ```php
 * $factory = new \Deadbolt\LockFactory(new \Deadbolt\Store\FlockStore('/var/lock/app'));
 * $lock = $factory->createLock('invoice:42', 30.0);
 *
 * if ($lock->acquire()) {
 *     try {
 *         // ... at most 30 seconds of work on invoice 42 ...
 *     } finally {
 *         $lock->release();
 *     }
 * }
 * ```
 *
 * The PHP surface mirrors symfony/lock's LockFactory, under the Deadbolt namespace.
 */
class LockFactory
{
    /**
     * @param object $store a Deadbolt store ({@see Store\FlockStore}, {@see Store\InMemoryStore},
     *                     {@see Store\RedisStore}), or any object implementing {@see Store\PersistingStoreInterface},
     *                     which is then called through its methods
     *
     * @throws \TypeError when $store is neither (a symfony/lock store is not accepted: its methods take Symfony's Key;
     *                    give it to the bridge in php/ instead)
     */
    public function __construct(object $store)
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Creates a lock on a resource; nothing is locked until {@see Lock::acquire()}.
     *
     * With $autoRefresh a native thread keeps the TTL topped up (every TTL/3) while the lock is held, also while PHP
     * sleeps or waits on curl or a slow query; it stops on release, when the Lock dies, after $maxHold, and never
     * runs for a lock inherited by a forked child. If it finds the lock gone, {@see Lock::isLost()} turns true.
     *
     * @param string     $resource    any bytes: empty, binary and long names are valid
     * @param float|null $ttl         maximum expected lock duration in seconds; null for a lock that never expires
     * @param bool       $autoRelease whether the lock is released when the Lock object is destroyed
     * @param bool       $autoRefresh keep the TTL topped up from a background thread (Redis by DSN; flock and
     *                                in-memory locks never expire, so there it does nothing)
     * @param float|null $maxHold     seconds after which the refresher stops and the lock runs out by itself
     *
     * @throws Exception\InvalidTtlException      when $ttl or $maxHold is zero, negative, NaN or INF
     * @throws Exception\InvalidArgumentException when $autoRefresh is asked without a TTL, or on a Redis store over
     *                                            a \Redis or Predis object (the thread cannot call PHP)
     */
    public function createLock(string $resource, ?float $ttl = 300.0, bool $autoRelease = true, bool $autoRefresh = false, ?float $maxHold = null): Lock
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Creates a lock that shares the given Key: its expiry and ownership are visible through the Key object.
     *
     * @param float|null $ttl         maximum expected lock duration in seconds; null for a lock that never expires
     * @param bool       $autoRelease whether the lock is released when the Lock object is destroyed
     * @param bool       $autoRefresh keep the TTL topped up from a background thread (see createLock())
     * @param float|null $maxHold     seconds after which the refresher stops
     *
     * @throws Exception\InvalidTtlException      when $ttl or $maxHold is zero, negative, NaN or INF
     * @throws Exception\InvalidArgumentException when $autoRefresh cannot be honoured (see createLock())
     */
    public function createLockFromKey(Key $key, ?float $ttl = 300.0, bool $autoRelease = true, bool $autoRefresh = false, ?float $maxHold = null): Lock
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Sends the locks' log records to a PSR-3 logger.
     *
     * Messages are templates ("{resource}" is not interpolated) with the context keys "resource" (string),
     * "ttl" (float, seconds) on refresh and "exception" (\Throwable) on failures. Locks log nothing when they
     * are released automatically on destruction.
     *
     * @param object $logger any object with a method log($level, string $message, array $context), such as a
     *                       \Psr\Log\LoggerInterface
     *
     * @throws \TypeError when $logger has no log() method
     */
    public function setLogger(object $logger): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * The code var_export() writes calls this, and it cannot rebuild a LockFactory: the object's state lives in the
     * extension, not in its properties. Construct it again with its store.
     *
     * @param array<string, mixed> $properties
     *
     * @throws \BadMethodCallException always
     */
    public static function __set_state(array $properties): LockFactory
    {
    }
}
