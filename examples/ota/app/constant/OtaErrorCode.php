<?php

declare(strict_types=1);

namespace app\constant;

/**
 * Error codes of the OTA service, returned to the device in the response body.
 */
final class OtaErrorCode
{
    public const SUCCESS = 0;

    /** A device or firmware id that is empty or has characters outside [A-Za-z0-9_-]. */
    public const INVALID_PARAM = 40001;

    /** Another worker is checking the same device and firmware right now: the device retries later. */
    public const SERVICE_BUSY = 50301;

    private const MESSAGES = [
        self::SUCCESS => 'ok',
        self::INVALID_PARAM => 'invalid device or firmware id',
        self::SERVICE_BUSY => 'service busy, retry later',
    ];

    private function __construct()
    {
    }

    public static function message(int $code): string
    {
        return self::MESSAGES[$code] ?? 'unknown error';
    }
}
