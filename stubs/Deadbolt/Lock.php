<?php

declare(strict_types=1);

namespace Deadbolt;

/**
 * A lock on one resource, created by {@see LockFactory} or with `new`; mirrors symfony/lock's Lock.
 *
 * ```php
 * $lock = $factory->createLock('report:daily', 60.0);
 * // or: $lock = new \Deadbolt\Lock(new \Deadbolt\Key('report:daily'), $store, 60.0);
 *
 * if (!$lock->acquire()) {
 *     return; // someone else is building the report
 * }
 * try {
 *     foreach ($chunks as $chunk) {
 *         build($chunk);
 *         $lock->refresh(); // another 60 seconds
 *     }
 * } finally {
 *     $lock->release();
 * }
 * ```
 *
 * When the object is destroyed (unset, end of scope, exit(), fatal error) a lock that is still held is released,
 * if auto-release is on and the current process is the one that acquired it; this release does not log.
 * After pcntl_fork() a Lock inherited from the parent is inert in the child: it reports not acquired, release()
 * does nothing, and its destruction leaves the parent's lock alone. acquire() in the child starts its own ownership.
 *
 * FlockStore and InMemoryStore locks never expire, as in symfony/lock: on these stores acquire() and refresh() leave
 * getRemainingLifetime() null and isExpired() false, whatever the TTL. A lifetime set on the Key itself
 * ({@see Key::reduceLifetime()}) shows through the Lock. {@see Store\RedisStore} locks expire: acquire() with a TTL
 * takes the lock for that long in one Redis call, getRemainingLifetime() then counts down from the TTL, and once it
 * is over the lock is free for others (isAcquired() is false) unless refresh() put it off in time.
 *
 * A Lock cannot be serialized (serialize() throws \BadMethodCallException) nor cloned (clone throws \Error).
 */
final class Lock implements DeadlineLockInterface, FencedLockInterface
{
    /**
     * Creates a lock on the Key's resource in a store, as {@see LockFactory::createLockFromKey()} does.
     *
     * Nothing is locked until {@see acquire()}. The Lock shares the Key object: its lifetime is visible through both.
     * The Lock has no logger until {@see setLogger()} is called.
     *
     * @param Key        $key         the resource to lock; shared with the Lock, not copied
     * @param object     $store       a Deadbolt store ({@see Store\FlockStore}, {@see Store\InMemoryStore},
     *                                {@see Store\RedisStore}), or any object implementing
     *                                {@see Store\PersistingStoreInterface}
     * @param float|null $ttl         maximum expected lock duration in seconds, used by acquire() and refresh();
     *                                null for none (refresh() then needs an explicit TTL)
     * @param bool       $autoRelease whether the lock is released when the Lock object is destroyed
     *
     * @throws \TypeError when $store is neither (a symfony/lock store is not accepted: its methods take Symfony's Key)
     */
    public function __construct(Key $key, object $store, ?float $ttl = null, bool $autoRelease = true)
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Sends this lock's log records to a PSR-3 logger, replacing any logger it got from its factory.
     *
     * Same records as {@see LockFactory::setLogger()}: templates ("{resource}" is not interpolated) with the context
     * keys "resource" (string), "ttl" (float, seconds) on refresh and "exception" (\Throwable) on failures; nothing
     * is logged by the automatic release on destruction.
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
     * Acquires the lock for writing (exclusive).
     *
     * With a timeout the call waits at most that long (monotonic clock), then returns false: a deadline symfony/lock
     * does not have. Waiting costs no CPU: flock blocks in the kernel (with a timeout it retries after 1 to 25 ms sleeps), and a Redis waiter (DSN store) is woken by the
     * holder's release at once, or retries when the holder's TTL runs out and at least every 100 ms.
     *
     * ```php
     * if (!$lock->acquire(timeout: 2.0)) {
     *     throw new ServiceBusy();          // nobody let go within 2 s
     * }
     * ```
     *
     * @param bool       $blocking wait until the lock is free instead of returning false (forever, without $timeout)
     * @param float|null $timeout  seconds to wait at most, whatever $blocking says; 0 = one try
     *
     * @return bool true when acquired; false when someone else holds it (non-blocking) or the timeout ran out
     *
     * @throws Exception\InvalidArgumentException when $timeout is negative, NaN or INF
     * @throws Exception\LockConflictedException  when a blocking wait ends without the lock
     * @throws Exception\LockAcquiringException   when the store fails; getPrevious() is the cause
     */
    public function acquire(bool $blocking = false, ?float $timeout = null): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Acquires the lock for reading (shared with other readers, exclusive with writers).
     *
     * Calling it while holding the write lock demotes the lock; acquire() while holding the read lock promotes it.
     *
     * @param bool       $blocking wait until no writer holds the lock instead of returning false
     * @param float|null $timeout  seconds to wait at most, whatever $blocking says; 0 = one try
     *
     * @return bool true when acquired; false when a writer holds it (non-blocking) or the timeout ran out
     *
     * @throws Exception\InvalidArgumentException when $timeout is negative, NaN or INF
     * @throws Exception\LockConflictedException  when a blocking wait ends without the lock
     * @throws Exception\LockAcquiringException   when the store fails; getPrevious() is the cause
     */
    public function acquireRead(bool $blocking = false, ?float $timeout = null): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Puts off the lock's expiration to $ttl seconds from now, after resetting the Key's lifetime.
     *
     * On a RedisStore this is one Redis call. FlockStore and InMemoryStore locks never expire: there, refresh() only
     * checks that this lock is the owner, and the lifetime stays null.
     *
     * @param float|null $ttl seconds; null uses the TTL given to the factory or the constructor
     *
     * @throws Exception\InvalidArgumentException when no TTL is given here nor to the factory or the constructor
     * @throws Exception\InvalidTtlException      when $ttl is zero, negative, NaN or INF
     * @throws Exception\LockConflictedException  when this lock is not (or no longer) the owner
     * @throws Exception\LockAcquiringException   when the store fails; getPrevious() is the cause
     */
    public function refresh(?float $ttl = null): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Whether this lock currently owns the resource (asks the store).
     */
    public function isAcquired(): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Releases the lock; does nothing when it is not held.
     *
     * @throws Exception\LockReleasingException when the store fails to release it
     */
    public function release(): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Runs $work under the lock and returns its value: takes the lock (waiting up to $wait seconds; null: one
     * attempt), calls $work($this), and releases it in every case (also when $work throws, which then goes on).
     *
     * ```php
     * $report = $factory->createLock('myapp:prod:daily-report', 3600)->run(fn () => build_report(), wait: 2.0);
     * ```
     *
     * @template T
     * @param callable(Lock): T $work
     * @return T
     * @throws Exception\LockConflictedException when the lock could not be had (the work did not run)
     */
    public function run(callable $work, ?float $wait = null): mixed
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Releases the resource whoever holds it (an operator's action: logged as a warning, counted in metrics); this
     * Lock's own hold is released first. See the stores' forceRelease().
     *
     * @return int how many other holders it had
     */
    public function forceRelease(): int
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Who holds this lock's resource and who waits, as its store tells.
     */
    public function inspect(): LockState
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * A label for the records this lock leaves in its store (a job or request id), shown by inspect() and the
     * `deadbolt` command. Default: DEADBOLT_LABEL, else systemd's INVOCATION_ID, from the environment. At most 128
     * bytes, no control characters (else InvalidArgumentException). Set it before acquiring.
     */
    public function setLabel(string $label): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Whether the lock's TTL has elapsed; always false on FlockStore and InMemoryStore unless the Key's own lifetime
     * was reduced.
     */
    public function isExpired(): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Seconds left before the lock expires (the Key's lifetime); null when it has none, which is always the case
     * on FlockStore and InMemoryStore unless the Key's own lifetime was reduced.
     */
    public function getRemainingLifetime(): ?float
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * A Lock cannot be serialized.
     *
     * @throws \BadMethodCallException always
     */
    public function __serialize(): array
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * A Lock cannot be unserialized: unserialize() of a payload naming Deadbolt\Lock never yields a Lock.
     *
     * @throws \BadMethodCallException always
     */
    public function __unserialize(array $data): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Whether this lock was found gone while held: by the background refresher (autoRefresh: taken by someone else,
     * or expired while the store was unreachable or stalled; true at the latest at the lock's last known expiry), or
     * by a refresh() that found it taken away before its TTL (released by force, its lock file removed). Answers at
     * once, without a network call; once true, refresh() and release() throw LockExpiredException.
     */
    public function isLost(): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * A number that strictly increases with every exclusive acquisition of this resource, across processes and
     * hosts, to hand to a resource that must refuse writes from a holder that was overtaken (a paused process
     * whose lock expired and passed to another).
     *
     * ```php
     * $lock->acquire(true);
     * $token = $lock->getFencingToken();
     * // SQL: the write succeeds only if no later holder wrote first.
     * $pdo->prepare('UPDATE report SET body = ?, fence = ? WHERE id = ? AND fence < ?')
     *     ->execute([$body, $token, $id, $token]);
     * ```
     *
     * Drawn on the first call of a hold, under the lock, and the same for the rest of the hold. Redis: the server
     * clock in microseconds, or one past the last token when that is ahead (kept under "resource#deadbolt:fence{resource}"
     * for a minute past the hold), so tokens are large and keep increasing. flock: a counter in the lock file. In-memory: a
     * counter of the store.
     *
     * @return int|null null when the lock is not held exclusively (not acquired, released, or a read lock)
     *
     * @throws Exception\LockStorageException when the store fails
     */
    public function getFencingToken(): ?int
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * The code var_export() writes calls this, and it cannot rebuild a Lock: the object's state lives in the
     * extension, not in its properties. A lock belongs to its process and object: make one with {@see LockFactory::createLock()}.
     *
     * @param array<string, mixed> $properties
     *
     * @throws \BadMethodCallException always
     */
    public static function __set_state(array $properties): Lock
    {
    }
}
