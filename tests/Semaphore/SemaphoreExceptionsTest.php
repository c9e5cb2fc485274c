<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Semaphore;

use Deadbolt\Semaphore\Exception\ExceptionInterface;
use Deadbolt\Semaphore\Exception\SemaphoreAcquiringException;
use Deadbolt\Semaphore\Exception\SemaphoreExpiredException;
use Deadbolt\Semaphore\Exception\SemaphoreReleasingException;
use Deadbolt\Semaphore\Key;
use Deadbolt\Semaphore\SemaphoreFactory;
use Deadbolt\Semaphore\SemaphoreStore;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Tests\Support\DeadboltTestCase;

/**
 * symfony/semaphore's Semaphore*Exception constructors, `(Key $key, string $message)`, with its message formats, as
 * a store written in PHP (or code ported from symfony/semaphore) throws them; the exceptions the engine throws itself
 * keep their own messages.
 */
final class SemaphoreExceptionsTest extends DeadboltTestCase
{
    /**
     * @return iterable<string, array{class-string<\RuntimeException>, string}>
     */
    public static function classesAndFormats(): iterable
    {
        yield 'SemaphoreAcquiringException' => [SemaphoreAcquiringException::class, 'The semaphore "%s" could not be acquired: %s.'];
        yield 'SemaphoreExpiredException' => [SemaphoreExpiredException::class, 'The semaphore "%s" has expired: %s.'];
        yield 'SemaphoreReleasingException' => [SemaphoreReleasingException::class, 'The semaphore "%s" could not be released: %s.'];
    }

    /**
     * @return iterable<string, array{class-string<\RuntimeException>}>
     */
    public static function classes(): iterable
    {
        foreach (self::classesAndFormats() as $name => [$class]) {
            yield $name => [$class];
        }
    }

    /**
     * @dataProvider classesAndFormats
     *
     * @param class-string<\RuntimeException> $class
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('classesAndFormats')]
    public function testTheMessageIsSymfonysFromTheKeyAndTheReason(string $class, string $format): void
    {
        $line = __LINE__ + 1;
        $e = new $class(new Key('jobs', 3, 2), 'full');

        $this->assertSame(sprintf($format, 'jobs', 'full'), $e->getMessage());
        $this->assertSame(0, $e->getCode());
        $this->assertNull($e->getPrevious());
        $this->assertSame([__FILE__, $line], [$e->getFile(), $e->getLine()]);
        $this->assertInstanceOf(\RuntimeException::class, $e);
        $this->assertInstanceOf(ExceptionInterface::class, $e);
    }

    /**
     * @dataProvider classesAndFormats
     *
     * @param class-string<\RuntimeException> $class
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('classesAndFormats')]
    public function testAnyResourceAndReasonAreKeptAsGiven(string $class, string $format): void
    {
        $resource = "quote\" nul\0 é";
        $e = new $class(new Key($resource, 1), "a \"reason\"\0.");

        $this->assertSame(sprintf($format, $resource, "a \"reason\"\0."), $e->getMessage());
    }

    /**
     * @dataProvider classes
     *
     * @param class-string<\RuntimeException> $class
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('classes')]
    public function testTheConstructorIsSymfonysSignature(string $class): void
    {
        $parameters = array_map(
            static fn (\ReflectionParameter $p): string => $p->getType().' $'.$p->getName().($p->isOptional() ? ' = …' : ''),
            (new \ReflectionMethod($class, '__construct'))->getParameters()
        );

        $this->assertSame([Key::class.' $key', 'string $message'], $parameters);
        $this->assertFalse((new \ReflectionClass($class))->isFinal(), 'userland code must be able to extend it');
    }

    /**
     * @dataProvider classes
     *
     * @param class-string<\RuntimeException> $class
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('classes')]
    public function testAFirstArgumentThatIsNoSemaphoreKeyIsPhpsTypeError(string $class): void
    {
        $given = [
            'string' => 'the message',
            'null' => null,
            'stdClass' => new \stdClass(),
            'Deadbolt\\Key' => new \Deadbolt\Key('jobs'),
        ];
        foreach ($given as $type => $value) {
            try {
                new $class($value, 'full');
                $this->fail($type.' was taken as a Key');
            } catch (\TypeError $e) {
                $this->assertSame(
                    $class.'::__construct(): Argument #1 ($key) must be of type Deadbolt\\Semaphore\\Key, '.$type.' given',
                    $e->getMessage()
                );
            }
        }
    }

    public function testSymfonySemaphoresOwnKeyIsNotTaken(): void
    {
        require_once getenv('DEADBOLT_SYMFONY_SEMAPHORE_AUTOLOAD') ?: '/usr/share/php/Symfony/Component/Semaphore/autoload.php';
        $this->expectException(\TypeError::class);
        $this->expectExceptionMessage(
            SemaphoreAcquiringException::class.'::__construct(): Argument #1 ($key) must be of type Deadbolt\\Semaphore\\Key, Symfony\\Component\\Semaphore\\Key given'
        );

        new SemaphoreAcquiringException(new \Symfony\Component\Semaphore\Key('jobs', 1), 'full');
    }

    public function testTheMessageIsAStringAsForPhpsOwnFunctions(): void
    {
        $key = new Key('jobs', 1);
        try {
            new SemaphoreExpiredException($key, 42);
            $this->fail('an int message was taken under strict_types');
        } catch (\TypeError $e) {
            $this->assertSame(
                SemaphoreExpiredException::class.'::__construct(): Argument #2 ($message) must be of type string, int given',
                $e->getMessage()
            );
        }
        // eval'd code has no strict_types: a scalar is converted, as PHP's own functions do.
        $weak = eval('return new \\Deadbolt\\Semaphore\\Exception\\SemaphoreExpiredException($key, 42);');
        $this->assertSame('The semaphore "jobs" has expired: 42.', $weak->getMessage());
        $this->expectException(\TypeError::class);
        $this->expectExceptionMessage('Argument #2 ($message) must be of type string, array given');
        eval('new \\Deadbolt\\Semaphore\\Exception\\SemaphoreExpiredException($key, []);');
    }

    /**
     * @dataProvider classes
     *
     * @param class-string<\RuntimeException> $class
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('classes')]
    public function testAWrongArgumentCountIsPhpsArgumentCountError(string $class): void
    {
        foreach ([[], [new Key('jobs', 1)], [new Key('jobs', 1), 'full', 0]] as $arguments) {
            try {
                new $class(...$arguments);
                $this->fail(\count($arguments).' arguments were taken');
            } catch (\ArgumentCountError $e) {
                $this->assertSame(
                    $class.'::__construct() expects exactly 2 arguments, '.\count($arguments).' given',
                    $e->getMessage()
                );
            }
        }
    }

    public function testNamedArgumentsAndASubclassCallingTheParentConstructor(): void
    {
        $key = new Key('jobs', 1);
        $this->assertSame(
            'The semaphore "jobs" could not be released: busy.',
            (new SemaphoreReleasingException(message: 'busy', key: $key))->getMessage()
        );

        $subclass = new class($key) extends SemaphoreExpiredException {
            public function __construct(Key $key)
            {
                parent::__construct($key, 'mine');
            }
        };
        $this->assertSame('The semaphore "jobs" has expired: mine.', $subclass->getMessage());
    }

    /**
     * The engine makes its own without that constructor: their messages are its own, as before.
     */
    public function testTheEnginesOwnExceptionsKeepTheirMessages(): void
    {
        $store = new SemaphoreStore(new InMemoryStore());
        $store->save(new Key('jobs', 1), 30.0);
        try {
            $store->save(new Key('jobs', 1), 30.0);
            $this->fail('the store was full');
        } catch (SemaphoreAcquiringException $e) {
            $this->assertSame('The semaphore "jobs" could not be acquired: the script return false.', $e->getMessage());
            $this->assertSame(0, $e->getCode());
        }
        try {
            $store->putOffExpiration(new Key('other', 1), 30.0);
            $this->fail('a slot never taken was put off');
        } catch (SemaphoreExpiredException $e) {
            $this->assertSame('The semaphore "other" has expired: the script returns a positive number.', $e->getMessage());
        }
        $semaphore = (new SemaphoreFactory(new InMemoryStore()))->createSemaphore('never', 1);
        $this->expectException(SemaphoreExpiredException::class);
        $this->expectExceptionMessage('The semaphore "never" has expired: this key holds no slot of it in InMemoryStore any more.');
        $semaphore->refresh();
    }
}
