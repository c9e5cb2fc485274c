<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Exception;

use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\DeadboltTestCase;

/** A careless use is told what went wrong, in Deadbolt's words, and what to do instead. */
final class MisuseMessagesTest extends DeadboltTestCase
{
    public function testAFactorySubclassThatSkippedTheParentConstructorSaysSo(): void
    {
        $factory = new class() extends LockFactory {
            public function __construct()
            {
                // parent::__construct($store) forgotten
            }
        };
        $calls = [
            'createLock' => static fn () => $factory->createLock('x'),
            'createLockFromKey' => static fn () => $factory->createLockFromKey(new Key('x')),
            'setLogger' => static fn () => $factory->setLogger(new \stdClass()),
        ];
        // PHP names an anonymous class up to its NUL byte, as its own messages do.
        $class = strstr($factory::class, "\0", true) ?: $factory::class;
        foreach ($calls as $method => $call) {
            try {
                $call();
                $this->fail($method.'() ran on a factory without a store');
            } catch (\Error $e) {
                $this->assertSame(\Error::class, $e::class);
                $this->assertStringContainsString($class.' extends Deadbolt\LockFactory', $e->getMessage());
                $this->assertStringContainsString('parent::__construct($store)', $e->getMessage());
                $this->assertStringContainsString($method.'()', $e->getMessage());
            }
        }
    }

    public function testAFactorySubclassThatCallsTheParentConstructorWorks(): void
    {
        $factory = new class() extends LockFactory {
            public function __construct()
            {
                parent::__construct(new InMemoryStore());
            }
        };
        $lock = $factory->createLock('subclassed');
        $this->assertTrue($lock->acquire());
        $this->assertFalse($factory->createLockFromKey(new Key('subclassed'))->acquire());
        $lock->release();
    }

    /** A Key is the exception: its code rebuilds a Key for the resource (KeyTest). */
    public function testVarExportOutputSaysWhyItCannotRebuildTheObject(): void
    {
        $factory = new LockFactory(new InMemoryStore());
        $objects = [
            'Deadbolt\Lock' => $factory->createLock('exported'),
            'Deadbolt\LockFactory' => $factory,
            'Deadbolt\Store\FlockStore' => new FlockStore($this->tempDir()),
            'Deadbolt\Store\InMemoryStore' => new InMemoryStore(),
            'Deadbolt\Store\RedisStore' => new RedisStore('redis://127.0.0.1:1'),
        ];
        foreach ($objects as $class => $object) {
            $code = var_export($object, true);
            try {
                eval('return '.$code.';');
                $this->fail('var_export() output rebuilt a '.$class);
            } catch (\BadMethodCallException $e) {
                $this->assertStringStartsWith('A '.$class.' cannot be rebuilt from var_export() output', $e->getMessage());
            }
        }
    }
}
