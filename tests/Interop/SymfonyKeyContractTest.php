<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\Key;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\SharedRedis;
use Symfony\Component\Lock\Key as SymfonyKey;
use Symfony\Component\Lock\Store\FlockStore as SymfonyFlockStore;
use Symfony\Component\Lock\Store\RedisStore as SymfonyRedisStore;

/**
 * symfony/lock's Key and store contract, observed on symfony/lock's own classes and on Deadbolt's side by side: the
 * same calls give the same outcomes (the suite runs this against the platform's symfony/lock and against 7.4).
 */
final class SymfonyKeyContractTest extends DeadboltTestCase
{
    /**
     * Everything a Key says about its state and lifetime, through serialize() and back.
     *
     * @param \Closure(string): object $newKey
     *
     * @return array<string, mixed>
     */
    private static function keyStory(\Closure $newKey): array
    {
        $key = $newKey('story');
        $story = ['fresh' => [$key->hasState('store'), $key->getRemainingLifetime(), $key->isExpired()]];
        $key->setState('store', ['token' => 'abc']);
        $key->setState('other', 42);
        $key->setState('other', 43);
        $story['set'] = [$key->hasState('store'), $key->getState('store'), $key->getState('other')];
        $key->removeState('other');
        $story['removed'] = $key->hasState('other');
        $key->reduceLifetime(30.0);
        $key->reduceLifetime(60.0);
        $copy = unserialize(serialize($key));
        $story['copy'] = [
            (string) $copy,
            $copy->hasState('store'),
            $copy->getState('store'),
            $copy->hasState('other'),
            round($copy->getRemainingLifetime()),
            $copy->isExpired(),
        ];
        $key->reduceLifetime(0.0);
        $story['reduced to 0'] = [$key->isExpired(), $key->getRemainingLifetime() <= 0.0];
        $copy->reduceLifetime(-5.0);
        $story['reduced below 0'] = $copy->isExpired();
        $key->resetLifetime();
        $story['reset'] = [$key->isExpired(), $key->getRemainingLifetime()];
        $key->markUnserializable();
        try {
            serialize($key);
            $story['unserializable'] = 'serialized';
        } catch (\Throwable $e) {
            $story['unserializable'] = substr(strrchr($e::class, '\\'), 1);
        }

        return $story;
    }

    public function testKeysTellTheSameStory(): void
    {
        $symfony = self::keyStory(static fn (string $resource): object => new SymfonyKey($resource));
        $deadbolt = self::keyStory(static fn (string $resource): object => new Key($resource));
        $this->assertSame($symfony, $deadbolt);
        $this->assertSame('UnserializableKeyException', $deadbolt['unserializable']);
        $this->assertSame(30.0, $deadbolt['copy'][4], 'serialize() keeps the remaining lifetime');
    }

    /**
     * What a Redis store's save() does with the Key's lifetime: it only shortens it, and a Key already expired is not
     * saved (LockExpiredException, nothing left in Redis).
     *
     * @return array<string, mixed>
     */
    private static function saveStory(object $store, \Closure $newKey, string $resource): array
    {
        $inspector = SharedRedis::client();
        $key = $newKey($resource.':short');
        $key->reduceLifetime(2.0);
        $store->save($key);
        $story = ['short lifetime kept' => $key->getRemainingLifetime() <= 2.0, 'held' => $store->exists($key)];
        $store->delete($key);

        $fresh = $newKey($resource.':fresh');
        $store->save($fresh);
        $story['initial ttl applied'] = round($fresh->getRemainingLifetime());
        $store->delete($fresh);

        $expired = $newKey($resource.':expired');
        $expired->reduceLifetime(0.0);
        try {
            $store->save($expired);
            $story['expired'] = 'saved';
        } catch (\Throwable $e) {
            $story['expired'] = substr(strrchr($e::class, '\\'), 1);
        }
        $story['expired left in redis'] = $inspector->exists($resource.':expired');

        return $story;
    }

    public function testRedisStoresSaveAKeyAlike(): void
    {
        $resource = 'key-contract-'.bin2hex(random_bytes(4));
        $symfony = self::saveStory(new SymfonyRedisStore(SharedRedis::newPhpRedis(), 60.0), static fn (string $r): object => new SymfonyKey($r), $resource.':symfony');
        foreach (['by DSN' => new RedisStore(SharedRedis::dsn(), 60.0), 'through \Redis' => new RedisStore(SharedRedis::newPhpRedis(), 60.0)] as $how => $store) {
            $deadbolt = self::saveStory($store, static fn (string $r): object => new Key($r), $resource.':deadbolt:'.bin2hex(random_bytes(2)));
            $this->assertSame($symfony, $deadbolt, $how);
        }
        $this->assertSame('LockExpiredException', $symfony['expired']);
        $this->assertSame(60.0, $symfony['initial ttl applied']);
        $this->assertSame(0, $symfony['expired left in redis']);
    }

    public function testFlockStoresWordDirectoryErrorsAlike(): void
    {
        $file = $this->tempDir().'/a-file';
        touch($file);
        foreach ([$file.'/below-a-file', '/proc/self'] as $path) {
            $messages = [];
            foreach ([static fn () => new SymfonyFlockStore($path), static fn () => new FlockStore($path)] as $make) {
                try {
                    $make();
                    $messages[] = 'made';
                } catch (\InvalidArgumentException $e) {
                    $messages[] = $e->getMessage();
                }
            }
            $this->assertNotSame('made', $messages[0], $path);
            $this->assertSame($messages[0], $messages[1], $path);
        }
    }
}
