<?php

/*
 * The daily report job, guarded by a Deadbolt lock (see deploy/README.md for the systemd timer or cron line).
 *
 * Manual runs and the scheduler use the same key and the same store (the same LOCK_DIR on one host, the same Redis
 * for several hosts), so they exclude each other. A run that finds the lock taken does nothing and reports
 * `skipped`. With flock the `.lock` file stays after the run: that does not mean the lock is held, and it must not
 * be deleted while an owner may be running. With Redis the lock is a key with a TTL that goes away on release.
 *
 * Environment (the store: see Stores.php):
 *   LOCK_STORE, LOCK_DIR   one host: flock (default) in LOCK_DIR
 *   LOCK_REDIS_URL         several hosts: a Deadbolt RedisStore, redis:// or rediss:// (TLS) without the password
 *   LOCK_REDIS_PASSWORD    the Redis password; read by the extension itself, never logged nor shown
 *   REPORT_LOCK_KEY   the lock key (default myapp:prod:daily-report; tests override it)
 *   REPORT_WORK_MS    duration of the simulated report in milliseconds (default 1500)
 *
 * Output: exactly one JSON line on stdout, for example
 *   {"event":"report.lock","key_hash":"…","outcome":"acquired","wait_ms":0.1,"hold_ms":1503.2,"job_id":"…",
 *    "label":"…","pid":123}
 * label: the caller label the lock records in the store (systemd's INVOCATION_ID under the timer, else the job id):
 * `deadbolt status` and `$store->inspect()` show it, so whoever finds the job skipped sees which run holds it. On
 * skipped the line also carries "held_by": the holder's host, pid, label and since (Unix seconds) where known.
 * outcome: acquired (the report ran), skipped (someone else holds the lock), lost (ownership was lost mid-run:
 * the remaining side effects were not performed), error (the store or the job failed). On lost and error the line
 * also carries "exception" (the class name only: messages name the key) and a diagnostic follows on stderr.
 * The key itself, a DSN or a password never appear.
 *
 * Exit code: 0 acquired or skipped, 3 lost, 1 error.
 */

declare(strict_types=1);

use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Exception\LockExpiredException;
use Deadbolt\Lock;
use Deadbolt\LockFactory;
use DeadboltExamples\Stores;

require __DIR__ . '/Stores.php';

const DEFAULT_KEY = 'myapp:prod:daily-report';
const DEFAULT_WORK_MS = 1500;
const WORK_UNITS = 5;
// TTL = one unit of work times UNIT_TTL_FACTOR plus TTL_PAUSE_MARGIN_S for pauses (GC, I/O, a slow store), and at
// least MIN_TTL_S. The lock is refreshed after every unit, long before the TTL can run out.
const UNIT_TTL_FACTOR = 3.0;
const TTL_PAUSE_MARGIN_S = 10.0;
const MIN_TTL_S = 30.0;

const EXIT_OK = 0;
const EXIT_ERROR = 1;
const EXIT_LOST = 3;

/** Raised by the job when it must stop before its next side effect. */
final class OwnershipLost extends RuntimeException
{
}

/**
 * Who holds the lock we were refused, for the skipped line: host, pid, label and since, as the store recorded them
 * (null when it cannot tell, or when the holder let go in the meantime).
 *
 * @return array{host: ?string, pid: ?int, label: ?string, since: ?float}|null
 */
function heldBy(Lock $lock): ?array
{
    try {
        $holder = $lock->inspect()->getHolders()[0] ?? null;
    } catch (\Deadbolt\Exception\ExceptionInterface) {
        return null;
    }

    return $holder === null ? null : [
        'host' => $holder->getHost(),
        'pid' => $holder->getPid(),
        'label' => $holder->getLabel(),
        'since' => $holder->getAcquiredAt(),
    ];
}

/** Milliseconds since $since (an hrtime(true) reading), rounded for the log. */
function elapsedMs(int $since): float
{
    return round((hrtime(true) - $since) / 1e6, 1);
}

/** A positive integer from the environment, or $default when unset. */
function envInt(string $name, int $default): int
{
    $raw = getenv($name);
    if ($raw === false || $raw === '') {
        return $default;
    }
    if (!ctype_digit($raw)) {
        throw new InvalidArgumentException(sprintf('%s must be a non-negative integer.', $name));
    }

    return (int) $raw;
}

/**
 * The simulated report: WORK_UNITS units of work. After computing each unit the lock is refreshed, and only then is
 * the unit's result written (the side effect). If the refresh fails, nothing more is written.
 *
 * @return list<string> the units written
 */
function runReport(Lock $lock, float $ttl, int $workMs): array
{
    $written = [];
    $unitUs = intdiv($workMs * 1000, WORK_UNITS);
    for ($unit = 1; $unit <= WORK_UNITS; ++$unit) {
        usleep($unitUs); // compute the unit (simulated)

        try {
            $lock->refresh($ttl);
        } catch (LockConflictedException|LockExpiredException|LockAcquiringException $e) {
            throw new OwnershipLost(sprintf('Lock lost before writing unit %d of %d.', $unit, WORK_UNITS), 0, $e);
        }
        if (!$lock->isAcquired()) {
            // A strict resource would also check a fencing token or a version at write time: a window remains.
            throw new OwnershipLost(sprintf('Lock no longer held before writing unit %d of %d.', $unit, WORK_UNITS));
        }

        $written[] = sprintf('unit %d', $unit); // write the unit (simulated side effect)
    }

    return $written;
}

$key = getenv('REPORT_LOCK_KEY');
$key = $key === false || $key === '' ? DEFAULT_KEY : $key;
$record = [
    'event' => 'report.lock',
    'key_hash' => substr(hash('sha256', $key), 0, 16),
    'outcome' => 'error',
    'wait_ms' => 0.0,
    'hold_ms' => 0.0,
    'job_id' => bin2hex(random_bytes(8)),
    'label' => '',
    'pid' => getmypid(),
];
// The caller label the lock records: systemd's id of this run of the unit, else this job's id.
$record['label'] = (string) (getenv('INVOCATION_ID') ?: $record['job_id']);
$exitCode = EXIT_ERROR;
$failure = null;

try {
    if (!class_exists(LockFactory::class)) {
        throw new RuntimeException('The deadbolt extension is not loaded (check `php -m` and `php --ini`).');
    }
    $workMs = envInt('REPORT_WORK_MS', DEFAULT_WORK_MS);
    $ttl = max(MIN_TTL_S, $workMs / 1000 / WORK_UNITS * UNIT_TTL_FACTOR + TTL_PAUSE_MARGIN_S);

    $lock = (new LockFactory(Stores::fromEnvironment()))->createLock($key, $ttl);
    $lock->setLabel($record['label']);

    $waitFrom = hrtime(true);
    try {
        $acquired = $lock->acquire(false);
    } finally {
        // Also when acquire() fails: a store that does not answer is what the time shows.
        $record['wait_ms'] = elapsedMs($waitFrom);
    }

    if (!$acquired) {
        $record['outcome'] = 'skipped';
        $record['held_by'] = heldBy($lock);
        $exitCode = EXIT_OK;
    } else {
        $heldFrom = hrtime(true);
        try {
            runReport($lock, $ttl, $workMs);
            $record['outcome'] = 'acquired';
            $exitCode = EXIT_OK;
        } catch (OwnershipLost $e) {
            $record['outcome'] = 'lost';
            $exitCode = EXIT_LOST;
            $failure = $e;
        } finally {
            try {
                $lock->release();
            } catch (Throwable $e) {
                // A failed release spoils a complete run. After a lost lock or a failed job it is dropped: the
                // first failure is the one to diagnose, and the lock ends with the process (flock) or its TTL anyway.
                if ($exitCode === EXIT_OK) {
                    $record['outcome'] = 'error';
                    $exitCode = EXIT_ERROR;
                    $failure = $e;
                }
            }
            $record['hold_ms'] = elapsedMs($heldFrom);
        }
    }
} catch (Throwable $e) {
    $record['outcome'] = 'error';
    $exitCode = EXIT_ERROR;
    $failure = $e;
}

if ($failure !== null) {
    $shown = $failure instanceof OwnershipLost ? ($failure->getPrevious() ?? $failure) : $failure;
    $record['exception'] = get_class($shown);
    // Deadbolt's messages name the resource: show its hash instead. Stores.php never puts a DSN or password in one.
    $diagnostic = $failure;
    $lines = [];
    while ($diagnostic !== null) {
        $message = str_replace($key, '<key ' . $record['key_hash'] . '>', $diagnostic->getMessage());
        $lines[] = get_class($diagnostic) . ': ' . $message;
        $diagnostic = $diagnostic->getPrevious();
    }
    fwrite(STDERR, sprintf("report.php job %s: %s\n", $record['job_id'], implode(' <- ', $lines)));
}

echo json_encode($record, JSON_UNESCAPED_SLASHES | JSON_PRESERVE_ZERO_FRACTION | JSON_THROW_ON_ERROR), "\n";
exit($exitCode);
