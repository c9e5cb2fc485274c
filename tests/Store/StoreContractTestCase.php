<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\InvalidTtlException;
use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Key;
use Deadbolt\Tests\Support\DeadboltTestCase;

/**
 * The behaviour every Deadbolt store shares: a concrete test is getStore() plus the capability traits it earns.
 */
abstract class StoreContractTestCase extends DeadboltTestCase
{
    /**
     * A new store; two calls in one test must share their locks (same directory, same instance...).
     */
    abstract protected function getStore(): object;

    public function testSaveMakesTheKeyTheOwner(): void
    {
        $store = $this->getStore();
        $key = new Key(uniqid(__METHOD__, true));

        $store->save($key);

        $this->assertTrue($store->exists($key));
    }

    public function testAKeyThatWasNeverSavedDoesNotExist(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $owner = new Key($resource);
        $store->save($owner);

        $this->assertFalse($store->exists(new Key($resource)), 'exists() answers "does THIS key own the lock"');
        $this->assertFalse($store->exists(new Key(uniqid(__METHOD__, true))));
    }

    public function testDeleteReleasesTheLock(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $first = new Key($resource);
        $second = new Key($resource);
        $store->save($first);

        $store->delete($first);

        $this->assertFalse($store->exists($first));
        $store->save($second);
        $this->assertTrue($store->exists($second));
    }

    public function testTwoKeysOnOneResourceExcludeEachOther(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $first = new Key($resource);
        $second = new Key($resource);
        $store->save($first);

        try {
            $store->save($second);
            $this->fail('A second key saved a lock that the first key holds.');
        } catch (LockConflictedException $e) {
            $this->addToAssertionCount(1);
        }

        $this->assertTrue($store->exists($first));
        $this->assertFalse($store->exists($second));
    }

    public function testTheLoserCanSaveOnceTheWinnerDeleted(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $winner = new Key($resource);
        $loser = new Key($resource);
        $store->save($winner);
        try {
            $store->save($loser);
            $this->fail('The second key saved a held lock.');
        } catch (LockConflictedException $e) {
            $this->addToAssertionCount(1);
        }

        $store->delete($winner);
        $store->save($loser);

        $this->assertTrue($store->exists($loser));
        $this->assertFalse($store->exists($winner));
    }

    public function testReleaseByAnotherKeyLeavesTheLockHeld(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $owner = new Key($resource);
        $stranger = new Key($resource);
        $store->save($owner);

        $store->delete($stranger);

        $this->assertTrue($store->exists($owner));
        $this->expectException(LockConflictedException::class);
        $store->save(new Key($resource));
    }

    public function testDeleteOfANeverSavedKeyIsANoOp(): void
    {
        $store = $this->getStore();
        $key = new Key(uniqid(__METHOD__, true));

        $store->delete($key);
        $store->delete($key);

        $this->assertFalse($store->exists($key));
        $store->save($key);
        $this->assertTrue($store->exists($key), 'a no-op delete must not break a later save');
    }

    public function testDeletingTwiceIsANoOp(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);
        $store->save($key);

        $store->delete($key);
        $store->delete($key);

        $this->assertFalse($store->exists($key));
        $other = new Key($resource);
        $store->save($other);
        $this->assertTrue($store->exists($other));
    }

    public function testSavingTwiceWithTheSameKeyKeepsTheLock(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);

        $store->save($key);
        $store->save($key);

        $this->assertTrue($store->exists($key));
        $store->delete($key);
        $this->assertFalse($store->exists($key), 'one delete releases a lock saved twice');
        $other = new Key($resource);
        $store->save($other);
        $this->assertTrue($store->exists($other));
    }

    public function testAKeyCanSaveAgainAfterDeletingItsLock(): void
    {
        $store = $this->getStore();
        $key = new Key(uniqid(__METHOD__, true));

        for ($round = 0; $round < 3; ++$round) {
            $store->save($key);
            $this->assertTrue($store->exists($key), "round $round: saved");
            $store->delete($key);
            $this->assertFalse($store->exists($key), "round $round: deleted");
        }
    }

    public function testDifferentResourcesDoNotConflict(): void
    {
        $store = $this->getStore();
        $first = new Key(uniqid(__METHOD__, true));
        $second = new Key(uniqid(__METHOD__, true));

        $store->save($first);
        $store->save($second);

        $this->assertTrue($store->exists($first));
        $this->assertTrue($store->exists($second));
    }

    public function testResourcesDifferingOnlyInCaseOrPunctuationAreDistinct(): void
    {
        $store = $this->getStore();
        $base = uniqid(__METHOD__, true);
        // Same file-name slug ("sf.<slug>."), different hash: they must be different locks.
        $keys = [new Key($base.':a'), new Key($base.'/a'), new Key($base.' a'), new Key(strtoupper($base).':a')];

        foreach ($keys as $key) {
            $store->save($key);
        }

        foreach ($keys as $i => $key) {
            $this->assertTrue($store->exists($key), "key $i");
        }
    }

    public function testPutOffExpirationByAKeyThatDoesNotHoldTheLockIsAConflict(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $owner = new Key($resource);
        $stranger = new Key($resource);
        $store->save($owner);

        try {
            $store->putOffExpiration($stranger, 10.0);
            $this->fail('putOffExpiration() accepted a key that does not hold the lock.');
        } catch (LockConflictedException $e) {
            $this->addToAssertionCount(1);
        }

        $this->assertTrue($store->exists($owner));
        $this->assertFalse($store->exists($stranger));
    }

    public function testPutOffExpirationOfAKeyThatNoLongerHoldsTheLockIsAConflict(): void
    {
        $store = $this->getStore();
        $key = new Key(uniqid(__METHOD__, true));
        $store->save($key);
        $store->delete($key);

        $this->expectException(LockConflictedException::class);
        $store->putOffExpiration($key, 10.0);
    }

    /**
     * @dataProvider invalidTtls
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('invalidTtls')]
    public function testPutOffExpirationRejectsAnInvalidTtl(float $ttl): void
    {
        $store = $this->getStore();
        $key = new Key(uniqid(__METHOD__, true));
        $store->save($key);

        try {
            $store->putOffExpiration($key, $ttl);
            $this->fail('putOffExpiration() accepted the TTL '.var_export($ttl, true));
        } catch (InvalidTtlException $e) {
            $this->addToAssertionCount(1);
        }

        $this->assertTrue($store->exists($key), 'a rejected TTL leaves the lock alone');
    }

    /**
     * @return iterable<string, array{float}>
     */
    public static function invalidTtls(): iterable
    {
        yield 'zero' => [0.0];
        yield 'negative zero' => [-0.0];
        yield 'negative' => [-1.0];
        yield 'tiny negative' => [-PHP_FLOAT_EPSILON];
        yield 'NaN' => [NAN];
        yield 'INF' => [INF];
        yield '-INF' => [-INF];
    }

    public function testKeysOfOneResourceShareTheLockWhateverTheirStoreInstance(): void
    {
        $resource = uniqid(__METHOD__, true);
        $store = $this->getStore();
        $sameStore = $this->getStore();
        $key = new Key($resource);
        $store->save($key);

        $this->expectException(LockConflictedException::class);
        $sameStore->save(new Key($resource));
    }
}
