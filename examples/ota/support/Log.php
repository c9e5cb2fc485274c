<?php

declare(strict_types=1);

namespace support;

/**
 * Stand-in for webman's `support\Log` (a static PSR-3 facade over Monolog): one JSON line per record,
 * appended to a file or written to stderr.
 *
 *     {"time":"2026-01-02T03:04:05.678+00:00","level":"warning","message":"...","context":{...},"pid":1234}
 *
 * The message stays a template (`{placeholder}` is not interpolated); the context carries the values. A Throwable
 * in the context is written as its class, message and code. Destination: configure(), else the file named by
 * OTA_LOG_FILE, else stderr. Lines are appended with one write under an exclusive lock, so forked workers can
 * share a file.
 */
final class Log
{
    private const LEVELS = ['emergency', 'alert', 'critical', 'error', 'warning', 'notice', 'info', 'debug'];

    private static bool $configured = false;

    private static ?string $file = null;

    private function __construct()
    {
    }

    /** A file to append to, or null for stderr. Without a call, OTA_LOG_FILE decides. */
    public static function configure(?string $file): void
    {
        self::$file = $file;
        self::$configured = true;
    }

    /**
     * @param array<string, mixed> $context
     */
    public static function log(string $level, string|\Stringable $message, array $context = []): void
    {
        if (!in_array($level, self::LEVELS, true)) {
            throw new \InvalidArgumentException(sprintf('Unknown log level "%s".', $level));
        }
        $record = [
            'time' => (new \DateTimeImmutable())->format('Y-m-d\TH:i:s.vP'),
            'level' => $level,
            'message' => (string) $message,
            'context' => (object) array_map(self::normalize(...), $context),
            'pid' => getmypid(),
        ];
        $line = json_encode($record, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_INVALID_UTF8_SUBSTITUTE
            | JSON_PRESERVE_ZERO_FRACTION | JSON_THROW_ON_ERROR) . "\n";

        $file = self::destination();
        if ($file === null) {
            fwrite(STDERR, $line);
        } elseif (file_put_contents($file, $line, FILE_APPEND | LOCK_EX) === false) {
            fwrite(STDERR, $line);
        }
    }

    /** @param array<string, mixed> $context */
    public static function emergency(string|\Stringable $message, array $context = []): void
    {
        self::log('emergency', $message, $context);
    }

    /** @param array<string, mixed> $context */
    public static function alert(string|\Stringable $message, array $context = []): void
    {
        self::log('alert', $message, $context);
    }

    /** @param array<string, mixed> $context */
    public static function critical(string|\Stringable $message, array $context = []): void
    {
        self::log('critical', $message, $context);
    }

    /** @param array<string, mixed> $context */
    public static function error(string|\Stringable $message, array $context = []): void
    {
        self::log('error', $message, $context);
    }

    /** @param array<string, mixed> $context */
    public static function warning(string|\Stringable $message, array $context = []): void
    {
        self::log('warning', $message, $context);
    }

    /** @param array<string, mixed> $context */
    public static function notice(string|\Stringable $message, array $context = []): void
    {
        self::log('notice', $message, $context);
    }

    /** @param array<string, mixed> $context */
    public static function info(string|\Stringable $message, array $context = []): void
    {
        self::log('info', $message, $context);
    }

    /** @param array<string, mixed> $context */
    public static function debug(string|\Stringable $message, array $context = []): void
    {
        self::log('debug', $message, $context);
    }

    private static function destination(): ?string
    {
        if (self::$configured) {
            return self::$file;
        }
        $file = getenv('OTA_LOG_FILE');

        return $file === false || $file === '' ? null : $file;
    }

    private static function normalize(mixed $value): mixed
    {
        return match (true) {
            $value instanceof \Throwable => [
                'class' => $value::class,
                'message' => $value->getMessage(),
                'code' => $value->getCode(),
            ],
            $value instanceof \Stringable => (string) $value,
            is_object($value) => $value::class,
            is_resource($value) => get_resource_type($value),
            is_array($value) => array_map(self::normalize(...), $value),
            default => $value,
        };
    }
}
