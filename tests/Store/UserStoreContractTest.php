<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Key;
use Deadbolt\Store\CombinedStore;
use Deadbolt\Store\PersistingStoreInterface;
use Deadbolt\Strategy\UnanimousStrategy;

/**
 * A store written in PHP keeps the store contract when Deadbolt's engine drives it: here through a CombinedStore of
 * that one store, so that every call of the contract goes through the engine's user-store adapter (UserStoreTest
 * checks the adapter's calls one by one).
 */
final class UserStoreContractTest extends StoreContractTestCase
{
    private ?PersistingStoreInterface $userStore = null;

    protected function getStore(): object
    {
        return new CombinedStore([$this->userStore ??= self::memoryStore()], new UnanimousStrategy());
    }

    /** A store in this process's memory, its owner mark kept in the Key's state as symfony/lock's stores do. */
    private static function memoryStore(): PersistingStoreInterface
    {
        return new class() implements PersistingStoreInterface {
            /** @var array<string, string> resource => owner mark */
            private array $held = [];

            private static function owner(Key $key): string
            {
                if (!$key->hasState('owner')) {
                    $key->setState('owner', bin2hex(random_bytes(8)));
                }

                return $key->getState('owner');
            }

            public function save(Key $key): void
            {
                $owner = self::owner($key);
                if (($this->held[(string) $key] ?? $owner) !== $owner) {
                    throw new \Deadbolt\Exception\LockConflictedException('held');
                }
                $this->held[(string) $key] = $owner;
            }

            public function delete(Key $key): void
            {
                if (($this->held[(string) $key] ?? null) === self::owner($key)) {
                    unset($this->held[(string) $key]);
                }
            }

            public function exists(Key $key): bool
            {
                return ($this->held[(string) $key] ?? null) === self::owner($key);
            }

            public function putOffExpiration(Key $key, float $ttl): void
            {
                if (!$this->exists($key)) {
                    throw new \Deadbolt\Exception\LockConflictedException('not held');
                }
                $key->reduceLifetime($ttl);
            }
        };
    }
}
