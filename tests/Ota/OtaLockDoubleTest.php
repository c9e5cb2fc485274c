<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Ota;

use app\constant\OtaErrorCode;
use app\exception\BusinessException;
use app\logic\OtaCheckLogic;
use Deadbolt\Tests\Support\DeadboltTestCase;
use support\Log;

/**
 * The OTA service's lock handling unit-tested with doubled locks, no Redis: both lock types it may be handed
 * (Deadbolt's LockInterface, and symfony/lock's as seed 001's plan types it) can be mocked.
 */
final class OtaLockDoubleTest extends DeadboltTestCase
{
    private string $logFile;

    public static function setUpBeforeClass(): void
    {
        require_once __DIR__ . '/../../examples/ota/bootstrap.php';
    }

    protected function setUp(): void
    {
        $this->logFile = $this->tempDir() . '/ota.log';
        Log::configure($this->logFile);
    }

    protected function tearDown(): void
    {
        Log::configure(null);
    }

    /** @return iterable<string, array{class-string}> */
    public static function lockTypes(): iterable
    {
        yield 'Deadbolt\LockInterface' => [\Deadbolt\LockInterface::class];
        yield 'Symfony\Component\Lock\LockInterface' => [\Symfony\Component\Lock\LockInterface::class];
    }

    private function logicWith(object $lock): OtaCheckLogic
    {
        return new class($lock) extends OtaCheckLogic {
            public function __construct(private readonly object $double)
            {
                parent::__construct();
            }

            protected function createLock(string $resource): \Deadbolt\LockInterface|\Symfony\Component\Lock\LockInterface
            {
                return $this->double;
            }
        };
    }

    /** @return list<array<string, mixed>> */
    private function logRecords(): array
    {
        $lines = is_file($this->logFile) ? file($this->logFile, FILE_IGNORE_NEW_LINES) : [];

        return array_map(static fn (string $line): array => json_decode($line, true, 16, JSON_THROW_ON_ERROR), $lines ?: []);
    }

    /**
     * @dataProvider lockTypes
     *
     * @param class-string $type
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('lockTypes')]
    public function testABusyLockIsServiceBusyAfterTheRetries(string $type): void
    {
        $lock = $this->createMock($type);
        $lock->expects($this->exactly(OtaCheckLogic::LOCK_MAX_RETRY))->method('acquire')->with(false)->willReturn(false);
        $lock->expects($this->never())->method('release');
        try {
            $this->logicWith($lock)->withDeviceFirmwareLock('dev1', 'fw1', fn () => $this->fail('ran without the lock'));
            $this->fail('no BusinessException');
        } catch (BusinessException $e) {
            $this->assertSame(OtaErrorCode::SERVICE_BUSY, $e->getCode());
        }
        $this->assertSame(['OTA lock busy: giving up'], array_column($this->logRecords(), 'message'));
    }

    /**
     * @dataProvider lockTypes
     *
     * @param class-string $type
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('lockTypes')]
    public function testAFailedReleaseIsOnlyLogged(string $type): void
    {
        $lock = $this->createMock($type);
        $lock->expects($this->once())->method('acquire')->willReturn(true);
        $lock->expects($this->once())->method('release')->willThrowException(new \RuntimeException('Redis went away'));
        $result = $this->logicWith($lock)->withDeviceFirmwareLock('dev1', 'fw1', static fn (): string => 'done');
        $this->assertSame('done', $result);
        $this->assertSame(['OTA lock release failed: the TTL will free it'], array_column($this->logRecords(), 'message'));
    }
}
