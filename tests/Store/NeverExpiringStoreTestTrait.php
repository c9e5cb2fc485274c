<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Key;

/**
 * For stores whose locks never expire (FlockStore, InMemoryStore, as in symfony/lock): the store never gives the Key
 * a lifetime. Expiring stores (RedisStore) have their own rules in RedisStoreTestCase.
 */
trait NeverExpiringStoreTestTrait
{
    abstract protected function getStore(): object;

    public function testPutOffExpirationLeavesTheKeyWithoutLifetime(): void
    {
        $store = $this->getStore();
        $key = new Key(uniqid(__METHOD__, true));
        $store->save($key);
        $this->assertNull($key->getRemainingLifetime(), 'a saved key has no lifetime');

        $store->putOffExpiration($key, 10.0);

        $this->assertNull($key->getRemainingLifetime(), 'the lock never expires on this store');
        $this->assertFalse($key->isExpired());
        $this->assertTrue($store->exists($key));
    }

    public function testPutOffExpirationLeavesALifetimeSetOnTheKeyAsItIs(): void
    {
        $store = $this->getStore();
        $key = new Key(uniqid(__METHOD__, true));
        $store->save($key);
        $key->reduceLifetime(10.0);

        $store->putOffExpiration($key, 1000.0);

        $remaining = $key->getRemainingLifetime();
        $this->assertIsFloat($remaining, 'putOffExpiration() does not remove the Key\'s expiry');
        $this->assertLessThanOrEqual(10.0, $remaining, 'nor extend it');
        $store->putOffExpiration($key, 1.0);
        $this->assertGreaterThan(1.0, $key->getRemainingLifetime(), 'nor shorten it');
        $this->assertTrue($store->exists($key));
    }
}
