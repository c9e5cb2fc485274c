<?php

declare(strict_types=1);

namespace app\logic;

use app\constant\OtaErrorCode;
use app\exception\BusinessException;
use app\repository\UpgradeTaskRepository;
use app\support\OtaLockFactory;
use Deadbolt\LockInterface;
use Symfony\Component\Lock\LockInterface as SymfonyLockInterface;
use support\Log;

/**
 * "Check the device's firmware upgrade, then create or reuse its upgrade task", under a per device+firmware lock.
 *
 * The lock is a Deadbolt Lock on a RedisStore (OtaLockFactory): a random token per acquisition, an owner-checked
 * release, the expiry and the Redis scripts are the extension's. This class only decides the policy: a bounded
 * number of non-blocking attempts (a webman worker must never block for long), SERVICE_BUSY when they are used up,
 * and a release failure that is logged and left to the TTL. LegacyOtaCheckLogic is the same service with the
 * hand-written lock it replaces.
 */
class OtaCheckLogic
{
    public const LOCK_KEY_PREFIX = 'ota:lock:device_firmware:';

    /** Longer than a check+create ever takes, so the lock never expires under a live owner. */
    public const LOCK_TTL_SECONDS = 10;

    /** Attempts before SERVICE_BUSY: LOCK_MAX_RETRY attempts, LOCK_RETRY_INTERVAL_US apart (0.4 s of waiting). */
    public const LOCK_MAX_RETRY = 5;

    public const LOCK_RETRY_INTERVAL_US = 100_000;

    private readonly UpgradeTaskRepository $tasks;

    public function __construct(?UpgradeTaskRepository $tasks = null)
    {
        $this->tasks = $tasks ?? new UpgradeTaskRepository();
    }

    /**
     * The device's active upgrade task for this firmware: the existing one, or a new one. Idempotent: any number of
     * concurrent checks of the same device and firmware leave exactly one active task.
     *
     * @return array{task_id: string, created: bool, task: array<string, mixed>}
     *
     * @throws BusinessException SERVICE_BUSY when another worker holds the lock longer than the retries last,
     *                           INVALID_PARAM for an unusable id
     */
    public function checkUpgrade(int|string $deviceId, int|string $firmwareId): array
    {
        return $this->withDeviceFirmwareLock($deviceId, $firmwareId, function () use ($deviceId, $firmwareId): array {
            $task = $this->tasks->findActive($deviceId, $firmwareId);
            $created = $task === null;
            $task ??= $this->tasks->create($deviceId, $firmwareId);

            return ['task_id' => $task['task_id'], 'created' => $created, 'task' => $task];
        });
    }

    /**
     * Runs `$criticalSection` while holding the lock of this device and firmware, and returns what it returns.
     *
     * @template T
     *
     * @param callable(): T $criticalSection
     *
     * @return T
     *
     * @throws BusinessException SERVICE_BUSY when the lock stays taken
     * @throws \Deadbolt\Exception\LockAcquiringException when Redis fails (not the same thing as busy)
     */
    public function withDeviceFirmwareLock(int|string $deviceId, int|string $firmwareId, callable $criticalSection): mixed
    {
        $resource = self::lockKey($deviceId, $firmwareId);
        $lock = $this->createLock($resource);
        $this->acquireOrFail($lock, $resource);
        try {
            return $criticalSection();
        } finally {
            $this->releaseQuietly($lock, $resource);
        }
    }

    /**
     * The lock of one device and firmware: a Deadbolt Lock here; {@see SymfonyOtaCheckLogic} makes a lock typed as
     * symfony/lock's, as seed 001's plan wrote it. Either is typed as an interface, so a test can hand in a double.
     */
    protected function createLock(string $resource): LockInterface|SymfonyLockInterface
    {
        return OtaLockFactory::create($resource, (float) self::LOCK_TTL_SECONDS);
    }

    /**
     * Up to LOCK_MAX_RETRY non-blocking attempts, LOCK_RETRY_INTERVAL_US apart; then a warning and SERVICE_BUSY.
     */
    protected function acquireOrFail(LockInterface|SymfonyLockInterface $lock, string $resource): void
    {
        for ($attempt = 1; $attempt <= self::LOCK_MAX_RETRY; ++$attempt) {
            if ($lock->acquire(false)) {
                return;
            }
            if ($attempt < self::LOCK_MAX_RETRY) {
                usleep(self::LOCK_RETRY_INTERVAL_US);
            }
        }

        Log::warning('OTA lock busy: giving up', [
            'lock' => $resource,
            'attempts' => self::LOCK_MAX_RETRY,
            'retry_interval_us' => self::LOCK_RETRY_INTERVAL_US,
        ]);

        throw new BusinessException(OtaErrorCode::SERVICE_BUSY);
    }

    /**
     * Releases the lock; a failure is only logged: the work is done, and the TTL frees the lock anyway.
     */
    protected function releaseQuietly(LockInterface|SymfonyLockInterface $lock, string $resource): void
    {
        try {
            $lock->release();
        } catch (\Throwable $e) {
            Log::warning('OTA lock release failed: the TTL will free it', [
                'lock' => $resource,
                'ttl_s' => self::LOCK_TTL_SECONDS,
                'exception' => $e,
            ]);
        }
    }

    /** The lock key; ids are restricted so that one device's key can never spell another's. */
    private static function lockKey(int|string $deviceId, int|string $firmwareId): string
    {
        foreach ([$deviceId, $firmwareId] as $id) {
            if (preg_match('/\A[A-Za-z0-9_-]{1,64}\z/', (string) $id) !== 1) {
                throw new BusinessException(OtaErrorCode::INVALID_PARAM);
            }
        }

        return self::LOCK_KEY_PREFIX . $deviceId . ':' . $firmwareId;
    }
}
