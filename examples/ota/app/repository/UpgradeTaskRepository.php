<?php

declare(strict_types=1);

namespace app\repository;

use support\Redis;

/**
 * The upgrade task "table" of the example: one Redis hash per device, field = task id, value = the task row as JSON.
 *
 * findActive() stands for the real service's `SELECT ... WHERE device_id = ? AND firmware_id = ? AND status IN
 * (...)` and create() for its INSERT. The two are not atomic together, and nothing in the table stops a second
 * active task for the same device and firmware: the caller holds the device/firmware lock around both (check, then
 * create or reuse), which is what makes checkUpgrade() idempotent.
 */
final class UpgradeTaskRepository
{
    public const TASKS_KEY_PREFIX = 'ota:upgrade_tasks:';

    /** Statuses of a task that is still going on: a new check reuses it instead of creating another. */
    public const ACTIVE_STATUSES = ['pending', 'downloading', 'installing'];

    /**
     * @param int $createLatencyUs the time the real service spends before its INSERT (resolving the firmware
     *                             package URL and checksum, asking the device registry): the window in which two
     *                             unguarded workers would both create a task. The tests widen it.
     */
    public function __construct(private readonly int $createLatencyUs = 0)
    {
    }

    public static function tasksKey(int|string $deviceId): string
    {
        return self::TASKS_KEY_PREFIX . $deviceId;
    }

    /**
     * The active task of this device for this firmware, or null.
     *
     * @return array{task_id: string, device_id: string, firmware_id: string, status: string, created_at: string, created_by: int}|null
     */
    public function findActive(int|string $deviceId, int|string $firmwareId): ?array
    {
        $rows = Redis::connection()->client()->hGetAll(self::tasksKey($deviceId));
        foreach (is_array($rows) ? $rows : [] as $json) {
            $row = json_decode((string) $json, true, 16, JSON_THROW_ON_ERROR);
            if ($row['firmware_id'] === (string) $firmwareId && in_array($row['status'], self::ACTIVE_STATUSES, true)) {
                return $row;
            }
        }

        return null;
    }

    /**
     * Inserts a new pending task and returns it.
     *
     * @return array{task_id: string, device_id: string, firmware_id: string, status: string, created_at: string, created_by: int}
     */
    public function create(int|string $deviceId, int|string $firmwareId): array
    {
        if ($this->createLatencyUs > 0) {
            usleep($this->createLatencyUs);
        }
        $row = [
            'task_id' => 'ota_' . bin2hex(random_bytes(8)),
            'device_id' => (string) $deviceId,
            'firmware_id' => (string) $firmwareId,
            'status' => 'pending',
            'created_at' => date(DATE_ATOM),
            'created_by' => getmypid(),
        ];
        $written = Redis::connection()->client()->hSet(
            self::tasksKey($deviceId),
            $row['task_id'],
            json_encode($row, JSON_UNESCAPED_SLASHES | JSON_THROW_ON_ERROR),
        );
        if ($written === false) {
            throw new \RuntimeException('The upgrade task could not be stored.');
        }

        return $row;
    }
}
