<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Key;
use Deadbolt\Store\FlockStore;

final class FlockStoreTest extends StoreContractTestCase
{
    use BlockingSharedStoreTestTrait;
    use BlockingStoreTestTrait;
    use NeverExpiringStoreTestTrait;
    use SharedStoreTestTrait;

    private ?string $lockDir = null;

    protected function getStore(): object
    {
        return new FlockStore($this->lockDir ??= $this->tempDir());
    }

    public function testTheDefaultDirectoryIsTheSystemTempDir(): void
    {
        $resource = uniqid(__METHOD__, true);
        $store = new FlockStore();
        $key = new Key($resource);

        $store->save($key);

        try {
            $this->assertFileExists(sys_get_temp_dir().'/'.FlockFileNameTest::expectedFileName($resource));
            $explicit = new FlockStore(sys_get_temp_dir());
            $this->expectException(\Deadbolt\Exception\LockConflictedException::class);
            $explicit->save(new Key($resource));
        } finally {
            $store->delete($key);
            @unlink(sys_get_temp_dir().'/'.FlockFileNameTest::expectedFileName($resource));
        }
    }

    public function testAMissingDirectoryIsCreatedRecursively(): void
    {
        $dir = $this->tempDir().'/a/b/c';

        $store = new FlockStore($dir);
        $key = new Key(uniqid(__METHOD__, true));
        $store->save($key);

        $this->assertDirectoryExists($dir);
        $this->assertTrue($store->exists($key));
    }

    public function testADirectoryUnderARegularFileIsRejectedWithItsPath(): void
    {
        $file = tempnam($this->tempDir(), 'not-a-dir-');
        $path = $file.'/sub';

        try {
            new FlockStore($path);
            $this->fail('FlockStore accepted a directory under a regular file.');
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString($path, $e->getMessage());
        }
    }

    public function testARegularFileAsDirectoryIsRejectedWithItsPath(): void
    {
        $file = tempnam($this->tempDir(), 'not-a-dir-');

        try {
            new FlockStore($file);
            $this->fail('FlockStore accepted a regular file as its directory.');
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString($file, $e->getMessage());
        }
    }

    public function testTwoKeysInOneProcessExcludeEachOtherAcrossStoreInstances(): void
    {
        $dir = $this->tempDir();
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);
        $store = new FlockStore($dir);
        $other = new FlockStore($dir);
        $store->save($key);

        $this->expectException(\Deadbolt\Exception\LockConflictedException::class);
        $other->save(new Key($resource));
    }

    public function testStoresInDifferentDirectoriesDoNotShareLocks(): void
    {
        $resource = uniqid(__METHOD__, true);
        $first = new Key($resource);
        $second = new Key($resource);

        $store = new FlockStore($this->tempDir());
        $other = new FlockStore($this->tempDir());
        $store->save($first);

        $other->save($second);

        $this->assertTrue($store->exists($first));
        $this->assertTrue($other->exists($second));
    }
}
