<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Features;

/**
 * A PSR-3 shaped logger (Deadbolt only needs log($level, $message, $context)) that keeps every record.
 */
final class RecordingLogger
{
    /** @var list<array{0: mixed, 1: string, 2: array<string, mixed>}> */
    public array $records = [];

    /**
     * @param array<string, mixed> $context
     */
    public function log(mixed $level, string|\Stringable $message, array $context = []): void
    {
        $this->records[] = [$level, (string) $message, $context];
    }
}
