<?php

declare(strict_types=1);

namespace app\logic;

use app\constant\OtaErrorCode;
use app\exception\BusinessException;
use app\repository\UpgradeTaskRepository;
use support\Log;
use support\Redis;

/**
 * The OTA check as it was before Deadbolt, kept for comparison: the same constants, business flow, retries and
 * SERVICE_BUSY as OtaCheckLogic, with a hand-written Redis lock:
 *
 * - acquire: `SET key token NX PX ttl` with a random token, retried like OtaCheckLogic::acquireOrFail();
 * - release: a Lua compare-and-delete (delete the key only if it still holds our token), errors only logged.
 *
 * Everything the lock needs is this class's job: the token, the script, checking phpredis' false-with-
 * getLastError() as well as its exceptions. A forked child that runs the `finally` holds the parent's token and
 * can delete the parent's lock.
 */
class LegacyOtaCheckLogic
{
    public const LOCK_KEY_PREFIX = 'ota:lock:device_firmware:';

    public const LOCK_TTL_SECONDS = 10;

    public const LOCK_MAX_RETRY = 5;

    public const LOCK_RETRY_INTERVAL_US = 100_000;

    /** Deletes KEYS[1] only when it still holds ARGV[1] (our token): never someone else's lock. */
    private const RELEASE_SCRIPT = <<<'LUA'
        if redis.call('get', KEYS[1]) == ARGV[1] then
            return redis.call('del', KEYS[1])
        end
        return 0
        LUA;

    private readonly UpgradeTaskRepository $tasks;

    public function __construct(?UpgradeTaskRepository $tasks = null)
    {
        $this->tasks = $tasks ?? new UpgradeTaskRepository();
    }

    /**
     * @return array{task_id: string, created: bool, task: array<string, mixed>}
     *
     * @throws BusinessException SERVICE_BUSY, INVALID_PARAM
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
     * @template T
     *
     * @param callable(): T $criticalSection
     *
     * @return T
     */
    public function withDeviceFirmwareLock(int|string $deviceId, int|string $firmwareId, callable $criticalSection): mixed
    {
        $key = self::lockKey($deviceId, $firmwareId);
        $token = $this->acquireLock($key);
        try {
            return $criticalSection();
        } finally {
            $this->releaseLock($key, $token);
        }
    }

    /**
     * @return string the token that proves ownership at release
     */
    private function acquireLock(string $key): string
    {
        $token = bin2hex(random_bytes(16));
        for ($attempt = 1; $attempt <= self::LOCK_MAX_RETRY; ++$attempt) {
            $set = Redis::connection()->client()->set($key, $token, ['NX', 'PX' => self::LOCK_TTL_SECONDS * 1000]);
            if ($set === true) {
                return $token;
            }
            if ($attempt < self::LOCK_MAX_RETRY) {
                usleep(self::LOCK_RETRY_INTERVAL_US);
            }
        }

        Log::warning('OTA lock busy: giving up', [
            'lock' => $key,
            'attempts' => self::LOCK_MAX_RETRY,
            'retry_interval_us' => self::LOCK_RETRY_INTERVAL_US,
        ]);

        throw new BusinessException(OtaErrorCode::SERVICE_BUSY);
    }

    private function releaseLock(string $key, string $token): void
    {
        try {
            $client = Redis::connection()->client();
            $client->clearLastError();
            if ($client->eval(self::RELEASE_SCRIPT, [$key, $token], 1) === false) {
                // A server-side error (WRONGTYPE, script error) is a false from phpredis, not an exception.
                throw new \RuntimeException('Redis refused the release script: ' . ($client->getLastError() ?? 'no error message'));
            }
        } catch (\Throwable $e) {
            Log::warning('OTA lock release failed: the TTL will free it', [
                'lock' => $key,
                'ttl_s' => self::LOCK_TTL_SECONDS,
                'exception' => $e,
            ]);
        }
    }

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
