<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Tests\Support\DeadboltTestCase;

/**
 * The lock files on disk are symfony/lock's (SYMFONY-COMPAT.md section 5): same names, mode 0666, empty, kept.
 */
final class FlockFileNameTest extends DeadboltTestCase
{
    /**
     * The rule of SYMFONY-COMPAT.md section 5, written from its text.
     */
    public static function expectedFileName(string $resource): string
    {
        $slug = substr((string) preg_replace('/[^A-Za-z0-9._-]+/', '-', $resource), 0, 50);
        $hash = strtr(substr(base64_encode(hash('sha256', $resource, true)), 0, 7), '/', '_');

        return 'sf.'.$slug.'.'.$hash.'.lock';
    }

    /**
     * @dataProvider measuredFileNames
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('measuredFileNames')]
    public function testTheRuleReproducesTheMeasuredExamples(string $resource, string $fileName): void
    {
        $this->assertSame($fileName, self::expectedFileName($resource));
    }

    /**
     * @dataProvider measuredFileNames
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('measuredFileNames')]
    public function testAcquireCreatesTheFileSymfonyWouldUse(string $resource, string $fileName): void
    {
        $dir = $this->tempDir();
        $lock = (new LockFactory(new FlockStore($dir)))->createLock($resource);

        $this->assertTrue($lock->acquire());

        $this->assertSame([$fileName], self::filesIn($dir));
        $lock->release();
    }

    /**
     * @return iterable<string, array{string, string}>
     */
    public static function measuredFileNames(): iterable
    {
        yield 'colon' => ['invoice:42', 'sf.invoice-42.XNI+szs.lock'];
        yield 'slash and space' => ['a/b c', 'sf.a-b-c.CvmaYJF.lock'];
        yield 'empty' => ['', 'sf..47DEQpj.lock'];
        yield '80 x' => [str_repeat('x', 80), 'sf.'.str_repeat('x', 50).'.2SnN7qf.lock'];
        yield 'multibyte' => ['émoji✓', 'sf.-moji-.AqFA8dA.lock'];
    }

    public function testTheFileHasMode0666(): void
    {
        $dir = $this->tempDir();
        $resource = uniqid(__METHOD__, true);
        $oldUmask = umask(0022);
        try {
            $lock = (new LockFactory(new FlockStore($dir)))->createLock($resource);
            $lock->acquire();
        } finally {
            umask($oldUmask);
        }

        clearstatcache();
        $this->assertSame('0666', sprintf('%04o', fileperms($dir.'/'.self::expectedFileName($resource)) & 0777));
        $lock->release();
    }

    public function testTheFileIsEmptyAndStaysAfterRelease(): void
    {
        $dir = $this->tempDir();
        $resource = uniqid(__METHOD__, true);
        $path = $dir.'/'.self::expectedFileName($resource);
        $lock = (new LockFactory(new FlockStore($dir)))->createLock($resource, 30.0);
        $lock->acquire();
        $lock->refresh(60.0);
        $lock->acquireRead();

        $lock->release();

        clearstatcache();
        $this->assertFileExists($path);
        $this->assertSame(0, filesize($path));
        $this->assertSame([basename($path)], self::filesIn($dir), 'one file per resource, nothing else');
    }

    public function testAnExistingFileIsReusedAsItIs(): void
    {
        $dir = $this->tempDir();
        $resource = uniqid(__METHOD__, true);
        $path = $dir.'/'.self::expectedFileName($resource);
        touch($path);
        chmod($path, 0600);

        $lock = (new LockFactory(new FlockStore($dir)))->createLock($resource);

        $this->assertTrue($lock->acquire());
        $this->assertSame([basename($path)], self::filesIn($dir));
        $lock->release();
    }

    /**
     * @dataProvider unusualResources
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('unusualResources')]
    public function testUnusualResourcesLockTheirOwnFile(string $resource): void
    {
        $dir = $this->tempDir();
        $factory = new LockFactory(new FlockStore($dir));
        $lock = $factory->createLock($resource);

        $this->assertTrue($lock->acquire());
        $this->assertFalse($factory->createLock($resource)->acquire(), 'a second lock on the same resource is refused');
        $this->assertTrue($factory->createLock($resource.'x')->acquire(), 'another resource is another lock');
        $this->assertFileExists($dir.'/'.self::expectedFileName($resource));
        $lock->release();
        $this->assertTrue($factory->createLock($resource)->acquire(), 'free again after release');
    }

    /**
     * @return iterable<string, array{string}>
     */
    public static function unusualResources(): iterable
    {
        yield 'empty' => [''];
        yield 'NUL bytes' => ["a\0b\0\0c"];
        yield 'only a NUL byte' => ["\0"];
        yield 'invalid UTF-8' => ["\xff\xfe\x80"];
        yield '1 MB' => [str_repeat('0123456789abcdef', 65536)];
        yield 'dots and slashes' => ['../../etc/passwd'];
    }

    public function testResourcesWithNulBytesAreNotTruncated(): void
    {
        $dir = $this->tempDir();
        $factory = new LockFactory(new FlockStore($dir));
        $first = $factory->createLock("a\0b");
        $second = $factory->createLock("a\0c");

        $this->assertTrue($first->acquire());
        $this->assertTrue($second->acquire(), '"a\0b" and "a\0c" are different resources');
        $this->assertSame("a\0b", (string) new Key("a\0b"));
    }

    /**
     * @return list<string>
     */
    private static function filesIn(string $dir): array
    {
        return array_values(array_diff(scandir($dir) ?: [], ['.', '..']));
    }
}
