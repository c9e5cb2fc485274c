<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Bridge\Symfony\SymfonyStore;
use Deadbolt\Store\CombinedStore;
use Deadbolt\Strategy\UnanimousStrategy;
use Symfony\Component\Lock\Store\PdoStore;

/**
 * A symfony/lock store under Deadbolt's engine (the bridge's SymfonyStore) keeps the store contract: symfony/lock's
 * PdoStore on an SQLite file (an expiring store, with symfony/lock's table), every call going through the engine's
 * adapter for stores written in PHP (here through a CombinedStore of that one store, as UserStoreContractTest does).
 *
 * @requires extension pdo_sqlite
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pdo_sqlite')]
final class SymfonyStoreContractTest extends StoreContractTestCase
{
    private ?SymfonyStore $store = null;

    protected function getStore(): object
    {
        return new CombinedStore([$this->store ??= self::pdoStore($this->tempDir())], new UnanimousStrategy());
    }

    public static function pdoStore(string $dir): SymfonyStore
    {
        $pdo = new PdoStore('sqlite:'.$dir.'/locks.sqlite');
        $pdo->createTable();

        return new SymfonyStore($pdo);
    }
}
