<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Exception;

use Deadbolt\Exception\ExceptionInterface;
use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\InvalidTtlException;
use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Exception\LockExpiredException;
use Deadbolt\Exception\LockReleasingException;
use Deadbolt\Exception\LockStorageException;
use Deadbolt\Exception\UnserializableKeyException;
use PHPUnit\Framework\TestCase;

/**
 * The exception classes behave like userland exceptions: hierarchy, constructor, file/line/trace, subclassing.
 * What throws them for real is in ExceptionTriggersTest.
 */
final class ExceptionHierarchyTest extends TestCase
{
    /**
     * @return iterable<string, array{class-string<\Throwable>, class-string<\Throwable>}>
     */
    public static function exceptionClasses(): iterable
    {
        yield 'InvalidArgumentException' => [InvalidArgumentException::class, \InvalidArgumentException::class];
        yield 'InvalidTtlException' => [InvalidTtlException::class, InvalidArgumentException::class];
        yield 'LockAcquiringException' => [LockAcquiringException::class, \RuntimeException::class];
        yield 'LockConflictedException' => [LockConflictedException::class, \RuntimeException::class];
        yield 'LockExpiredException' => [LockExpiredException::class, \RuntimeException::class];
        yield 'LockReleasingException' => [LockReleasingException::class, \RuntimeException::class];
        yield 'LockStorageException' => [LockStorageException::class, \RuntimeException::class];
        yield 'UnserializableKeyException' => [UnserializableKeyException::class, \RuntimeException::class];
    }

    /**
     * The classes alone, for tests that take no parent (PHPUnit 12 and later refuse a data set with more values
     * than the test method has parameters).
     *
     * @return iterable<string, array{class-string<\Throwable>}>
     */
    public static function exceptionClassNames(): iterable
    {
        foreach (self::exceptionClasses() as $name => [$class]) {
            yield $name => [$class];
        }
    }

    public function testExceptionInterfaceIsAnInterfaceExtendingThrowable(): void
    {
        $interface = new \ReflectionClass(ExceptionInterface::class);

        $parents = $interface->getInterfaceNames();
        sort($parents);

        $this->assertTrue($interface->isInterface());
        $this->assertSame([\Stringable::class, \Throwable::class], $parents, 'Throwable, and Stringable through it');
    }

    /**
     * @dataProvider exceptionClasses
     *
     * @param class-string<\Throwable> $class
     * @param class-string<\Throwable> $parent
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('exceptionClasses')]
    public function testTheClassHasItsParentAndTheMarkerInterface(string $class, string $parent): void
    {
        $reflection = new \ReflectionClass($class);

        $this->assertSame($parent, $reflection->getParentClass()->getName());
        $this->assertTrue($reflection->implementsInterface(ExceptionInterface::class));
        $this->assertFalse($reflection->isFinal(), 'userland code must be able to extend it');
        $this->assertFalse($reflection->isAbstract());
        $this->assertTrue($reflection->isInstantiable());
    }

    /**
     * @dataProvider exceptionClassNames
     *
     * @param class-string<\Throwable> $class
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('exceptionClassNames')]
    public function testItIsConstructibleWithMessageCodeAndPrevious(string $class): void
    {
        $previous = new \LogicException('cause');

        $e = new $class('the message', 42, $previous);

        $this->assertSame('the message', $e->getMessage());
        $this->assertSame(42, $e->getCode());
        $this->assertSame($previous, $e->getPrevious());
    }

    /**
     * @dataProvider exceptionClassNames
     *
     * @param class-string<\Throwable> $class
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('exceptionClassNames')]
    public function testItIsConstructibleWithoutArguments(string $class): void
    {
        $e = new $class();

        $this->assertSame('', $e->getMessage());
        $this->assertSame(0, $e->getCode());
        $this->assertNull($e->getPrevious());
    }

    /**
     * @dataProvider exceptionClassNames
     *
     * @param class-string<\Throwable> $class
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('exceptionClassNames')]
    public function testFileLineAndTraceAreWhereItWasCreated(string $class): void
    {
        $line = __LINE__ + 1;
        $e = new $class('m');

        $this->assertSame(__FILE__, $e->getFile());
        $this->assertSame($line, $e->getLine());
        $this->assertSame(__FUNCTION__, $e->getTrace()[0]['function'] ?? null);
        $this->assertSame(self::class, $e->getTrace()[0]['class'] ?? null);
        $this->assertStringContainsString(__FUNCTION__, $e->getTraceAsString());
    }

    /**
     * @dataProvider exceptionClassNames
     *
     * @param class-string<\Throwable> $class
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('exceptionClassNames')]
    public function testFileAndLineAreWhereItWasCreatedInsideAFunction(string $class): void
    {
        $line = __LINE__ + 1;
        $create = static fn (): \Throwable => new $class('m');

        $e = $create();

        $this->assertSame(__FILE__, $e->getFile());
        $this->assertSame($line, $e->getLine());
        // The closure's frame: "Namespace\{closure}" up to PHP 8.3, "{closure:Class::method():line}" from PHP 8.4 on.
        $this->assertMatchesRegularExpression('/(^|\\\\)\{closure(:.*)?\}$/', $e->getTrace()[0]['function'] ?? '');
    }

    /**
     * @dataProvider exceptionClasses
     *
     * @param class-string<\Throwable> $class
     * @param class-string<\Throwable> $parent
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('exceptionClasses')]
    public function testAPhpClassCanExtendIt(string $class, string $parent): void
    {
        $code = sprintf(
            'return new class("sub", 7) extends \\%s { public function __construct(string $m, int $c) { parent::__construct("[".$m."]", $c); } public function extra(): string { return "extra"; } };',
            $class
        );

        $e = eval($code);

        $this->assertInstanceOf($class, $e);
        $this->assertInstanceOf($parent, $e);
        $this->assertInstanceOf(ExceptionInterface::class, $e);
        $this->assertSame('[sub]', $e->getMessage());
        $this->assertSame(7, $e->getCode());
        $this->assertSame('extra', $e->extra());
        $this->assertSame($class, get_parent_class($e));
    }

    /**
     * @dataProvider exceptionClasses
     *
     * @param class-string<\Throwable> $class
     * @param class-string<\Throwable> $parent
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('exceptionClasses')]
    public function testItIsCaughtByItsParentAndByTheInterface(string $class, string $parent): void
    {
        $caughtByParent = $caughtByInterface = null;

        try {
            throw new $class('thrown');
        } catch (\Throwable $e) {
            if ($e instanceof $parent) {
                $caughtByParent = $e;
            }
        }
        try {
            throw new $class('thrown');
        } catch (ExceptionInterface $e) {
            $caughtByInterface = $e;
        }

        $this->assertInstanceOf($class, $caughtByParent);
        $this->assertInstanceOf($class, $caughtByInterface);
    }

    public function testCatchBlocksNamingTheParentsCatchDeadboltExceptions(): void
    {
        try {
            throw new InvalidTtlException('ttl');
        } catch (\InvalidArgumentException $e) {
            $this->assertInstanceOf(InvalidArgumentException::class, $e);
        }
        try {
            throw new InvalidTtlException('ttl');
        } catch (InvalidArgumentException $e) {
            $this->assertInstanceOf(InvalidTtlException::class, $e);
        }
        try {
            throw new LockConflictedException('conflict');
        } catch (\RuntimeException $e) {
            $this->assertInstanceOf(LockConflictedException::class, $e);
        }
    }

    public function testAnUncaughtDeadboltExceptionPrintsLikeAnyException(): void
    {
        $e = new LockReleasingException('cannot release', 3, new LockStorageException('disk'));

        $text = (string) $e;

        $this->assertStringContainsString(LockReleasingException::class.': cannot release in '.__FILE__, $text);
        $this->assertStringContainsString(LockStorageException::class.': disk', $text);
    }
}
