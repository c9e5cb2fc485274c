<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\Bridge\Symfony\DeadboltStore;
use Deadbolt\Bridge\Symfony\LockFactory as BridgeLockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\RedisStore;
use Symfony\Bundle\FrameworkBundle\FrameworkBundle;
use Symfony\Bundle\FrameworkBundle\Kernel\MicroKernelTrait;
use Symfony\Component\DependencyInjection\Loader\Configurator\ContainerConfigurator;
use Symfony\Component\HttpKernel\Kernel;
use Symfony\Component\Lock\LockFactory;

use function Symfony\Component\DependencyInjection\Loader\Configurator\service;

/**
 * A Symfony application as README's "Using Deadbolt from Symfony code" wires it: framework.lock configures two lock
 * resources as usual, and the application's services put Deadbolt under both factories by decoration: the default one
 * becomes the bridge's LockFactory on a Deadbolt RedisStore, the "reports" one Symfony's LockFactory over a
 * DeadboltStore on a Deadbolt FlockStore.
 */
final class FrameworkLockKernel extends Kernel
{
    use MicroKernelTrait;

    public function __construct(private readonly string $dir, private readonly string $redisDsn)
    {
        parent::__construct('test', false);
    }

    public function registerBundles(): iterable
    {
        return [new FrameworkBundle()];
    }

    protected function configureContainer(ContainerConfigurator $container): void
    {
        $container->extension('framework', [
            'secret' => 'test',
            'http_method_override' => false,
            'lock' => ['default' => 'flock', 'reports' => 'flock'],
        ]);
        $services = $container->services();
        $services->set(RedisStore::class)->args([$this->redisDsn]);
        $services->set(FlockStore::class)->args([$this->dir]);
        $services->set('app.deadbolt_lock_factory', BridgeLockFactory::class)
            ->decorate('lock.default.factory')
            ->args([service(RedisStore::class)]);
        $services->set('app.reports_lock_factory', LockFactory::class)
            ->decorate('lock.reports.factory')
            ->args([service('app.reports_store')]);
        $services->set('app.reports_store', DeadboltStore::class)->args([service(FlockStore::class)]);
        // What the application's services get by autowiring, public here so that the test can look.
        $services->alias('test.default_factory', LockFactory::class)->public();
        $services->alias('test.reports_factory', LockFactory::class.' $reportsLockFactory')->public();
    }

    public function getProjectDir(): string
    {
        return $this->dir;
    }

    public function getCacheDir(): string
    {
        return $this->dir.'/cache';
    }

    public function getLogDir(): string
    {
        return $this->dir.'/log';
    }
}
