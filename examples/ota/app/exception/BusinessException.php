<?php

declare(strict_types=1);

namespace app\exception;

use app\constant\OtaErrorCode;

/**
 * An expected business failure: the controller turns it into a response with getCode() (an OtaErrorCode) and
 * getMessage(); it is not an error of the service.
 */
class BusinessException extends \RuntimeException
{
    public function __construct(int $code, ?string $message = null, ?\Throwable $previous = null)
    {
        parent::__construct($message ?? OtaErrorCode::message($code), $code, $previous);
    }
}
