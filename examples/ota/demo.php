<?php

/*
 * Checks one device's firmware upgrade twice with each implementation, against the Redis of the environment:
 *
 *     OTA_REDIS_PORT=6379 php -d extension=/path/to/libdeadbolt.so examples/ota/demo.php [deviceId] [firmwareId]
 *
 * The first check of each implementation creates the task, the second reuses it. The demo deletes its tasks.
 */

declare(strict_types=1);

use app\logic\LegacyOtaCheckLogic;
use app\logic\OtaCheckLogic;
use app\repository\UpgradeTaskRepository;
use support\Redis;

require __DIR__ . '/bootstrap.php';

$deviceId = $argv[1] ?? 'demo-device-' . getmypid();
$firmwareId = $argv[2] ?? 'fw-2-1-0';

foreach ([new OtaCheckLogic(), new LegacyOtaCheckLogic()] as $logic) {
    foreach (['first check', 'second check'] as $when) {
        $result = $logic->checkUpgrade($deviceId, $firmwareId);
        printf("%-30s %-12s task %s %s\n", $logic::class, $when, $result['task_id'], $result['created'] ? 'created' : 'reused');
    }
    Redis::connection()->client()->del(UpgradeTaskRepository::tasksKey($deviceId));
}
