<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Packaging;

use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;

/**
 * The install story of the two Composer packages (docs/PHP-PACKAGES.md), run with Debian's composer the way the
 * document says, in a fresh project per test with its own COMPOSER_HOME and cache, packagist off and
 * COMPOSER_DISABLE_NETWORK=1 (Composer refuses any download): nothing comes from outside this machine.
 *
 *  - from a checkout: path repositories on stubs/ and php/;
 *  - from release files: an artifact repository of the zips that scripts/php-packages.sh makes (make dist).
 *
 * symfony/lock, which the bridge requires, is Debian's php-symfony-lock (5.4 on Debian 12, 6.4 on Debian 13) given
 * to Composer as a "package" repository: name, Debian's upstream version, a path dist on its directory under
 * /usr/share/php, and its own autoload.php as the autoload file (Debian ships no composer.json; that autoload.php
 * loads psr/log and symfony/deprecation-contracts from Debian too, which is why the entry declares no requirements).
 * An application with packagist gets symfony/lock from there instead; what is tested here is the bridge's package.
 *
 * Judged by what an application sees: composer's exit status, vendor/'s contents, the versions Composer recorded,
 * and a php process that loads vendor/autoload.php and takes a lock through the bridge's classes from vendor/.
 * examples/phpstan.neon is checked for pointing at the installed stubs; PHPStan itself is not packaged by Debian
 * 12 or 13 (docs/PHP-PACKAGES.md), so it is not run here.
 */
final class ComposerInstallTest extends DeadboltTestCase
{
    private const DEBIAN_SYMFONY_LOCK = '/usr/share/php/Symfony/Component/Lock';

    public function testStubsAndBridgeInstallFromACheckoutThroughPathRepositories(): void
    {
        $root = dirname(__DIR__, 2);
        $app = $this->newProject();
        $this->composer($app, ['config', 'repositories.deadbolt-stubs', 'path', $root.'/stubs']);
        $this->composer($app, ['config', 'repositories.deadbolt-bridge', 'path', $root.'/php']);
        $this->composer($app, ['require', '--no-audit', 'deadbolt/symfony-bridge:@dev']);
        $this->composer($app, ['require', '--no-audit', '--dev', 'deadbolt/deadbolt-stubs:@dev']);

        // A path repository links the checkout's directory in (Composer's default for a directory on this disk).
        $this->assertSame(realpath($root.'/stubs'), realpath($app.'/vendor/deadbolt/deadbolt-stubs'));
        $this->assertSame(realpath($root.'/php'), realpath($app.'/vendor/deadbolt/symfony-bridge'));
        $this->assertStubsInstalled($app, $root.'/stubs/Deadbolt');
        $this->assertBridgeWorks($app);
        $this->assertPhpstanExampleFindsTheStubs($app);
    }

    public function testBothPackagesInstallFromTheReleaseZipsThroughAnArtifactRepository(): void
    {
        $root = dirname(__DIR__, 2);
        $version = self::cargoVersion();
        $dist = $this->tempDir();
        $made = self::exec(['bash', $root.'/scripts/php-packages.sh', $dist], $root);
        $this->assertSame(0, $made['status'], 'scripts/php-packages.sh failed: '.$made['stderr']);
        $zips = array_map('basename', glob($dist.'/*') ?: []);
        sort($zips);
        $this->assertSame(["deadbolt-stubs-$version.zip", "deadbolt-symfony-bridge-$version.zip"], $zips);

        $app = $this->newProject();
        $this->composer($app, ['config', 'repositories.deadbolt', 'artifact', $dist]);
        $this->composer($app, ['require', '--no-audit', 'deadbolt/symfony-bridge']);
        $this->composer($app, ['require', '--no-audit', '--dev', 'deadbolt/deadbolt-stubs']);

        // Unpacked copies, at the version stamped into the zips, required as the release's own range.
        $this->assertFalse(is_link($app.'/vendor/deadbolt/symfony-bridge'));
        $installed = json_decode((string) file_get_contents($app.'/vendor/composer/installed.json'), true, 512, JSON_THROW_ON_ERROR);
        $versions = array_column($installed['packages'], 'version', 'name');
        $this->assertSame($version, $versions['deadbolt/symfony-bridge'] ?? null);
        $this->assertSame($version, $versions['deadbolt/deadbolt-stubs'] ?? null);
        $this->assertSame('zip', array_column($installed['packages'], 'dist', 'name')['deadbolt/symfony-bridge']['type']);
        $manifest = json_decode((string) file_get_contents($app.'/composer.json'), true, 512, JSON_THROW_ON_ERROR);
        $this->assertSame('^'.$version, $manifest['require']['deadbolt/symfony-bridge']);
        $this->assertSame('^'.$version, $manifest['require-dev']['deadbolt/deadbolt-stubs']);

        $bridgeFiles = self::filesUnder($app.'/vendor/deadbolt/symfony-bridge');
        $this->assertSame(
            [
                'LICENSE', 'README.md', 'composer.json', 'src/DeadboltStore.php', 'src/Exceptions.php', 'src/LockFactory.php',
                'src/NativeLock.php', 'src/Semaphore/Exceptions.php', 'src/Semaphore/NativeSemaphore.php',
                'src/Semaphore/SemaphoreFactory.php', 'src/StoreFactory.php', 'src/SymfonyStore.php',
            ],
            array_keys($bridgeFiles)
        );
        foreach (self::filesUnder($root.'/php/src') as $name => $content) {
            $this->assertSame($content, $bridgeFiles['src/'.$name], "vendor/deadbolt/symfony-bridge/src/$name differs from php/src/$name");
        }
        $this->assertStubsInstalled($app, $root.'/stubs/Deadbolt');
        $this->assertBridgeWorks($app);
        $this->assertPhpstanExampleFindsTheStubs($app);

        // The bridge's ext-deadbolt requirement is real: without the extension Composer refuses to install it.
        $bare = $this->newProject();
        $this->composer($bare, ['config', 'repositories.deadbolt', 'artifact', $dist]);
        $refused = $this->composer($bare, ['require', '--no-audit', 'deadbolt/symfony-bridge'], withExtension: false, expectSuccess: false);
        $this->assertNotSame(0, $refused['status']);
        $this->assertStringContainsString('requires ext-deadbolt ^0.', $refused['stderr'].$refused['stdout']);
        $this->assertDirectoryDoesNotExist($bare.'/vendor/deadbolt');
    }

    /**
     * An empty application whose only packages are ours and Debian's symfony/lock; packagist is off.
     */
    private function newProject(): string
    {
        if (!is_file(self::DEBIAN_SYMFONY_LOCK.'/autoload.php')) {
            self::fail('No '.self::DEBIAN_SYMFONY_LOCK.'/autoload.php: apt-get install php-symfony-lock (make deps installs it).');
        }
        $dpkg = self::exec(['dpkg-query', '-W', '-f=${Version}', 'php-symfony-lock'], sys_get_temp_dir());
        if (0 !== $dpkg['status'] || 1 !== preg_match('/^(?:\d+:)?(\d+\.\d+\.\d+)/', $dpkg['stdout'], $m)) {
            self::fail('Cannot tell the version of Debian\'s php-symfony-lock: '.$dpkg['stdout'].$dpkg['stderr']);
        }
        $home = $this->tempDir();
        $app = $home.'/app';
        mkdir($app);
        $manifest = [
            'name' => 'example/app',
            'description' => 'An application of the packaging test',
            'repositories' => [
                'packagist.org' => false,
                'debian-symfony-lock' => ['type' => 'package', 'package' => [
                    'name' => 'symfony/lock',
                    'version' => $m[1],
                    'dist' => ['type' => 'path', 'url' => self::DEBIAN_SYMFONY_LOCK],
                    'autoload' => ['files' => ['autoload.php']],
                ]],
            ],
        ];
        file_put_contents($app.'/composer.json', json_encode($manifest, JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES)."\n");

        return $app;
    }

    /**
     * Debian's composer, run by this PHP (with the extension under test loaded, as in an application that has it
     * installed, unless $withExtension is false).
     *
     * @param list<string> $args
     *
     * @return array{status: int, stdout: string, stderr: string}
     */
    private function composer(string $app, array $args, bool $withExtension = true, bool $expectSuccess = true): array
    {
        $composer = self::exec(['sh', '-c', 'command -v composer'], $app)['stdout'];
        $composer = trim($composer);
        if ('' === $composer) {
            self::fail('No composer on PATH: apt-get install composer (make deps installs it).');
        }
        $home = dirname($app);
        $env = getenv();
        // Variables that would point Composer at other files than this project's.
        unset($env['COMPOSER'], $env['COMPOSER_VENDOR_DIR'], $env['COMPOSER_BIN_DIR'], $env['COMPOSER_AUTH']);
        $env['COMPOSER_HOME'] = $home.'/composer-home';
        $env['COMPOSER_CACHE_DIR'] = $home.'/composer-cache';
        $env['COMPOSER_DISABLE_NETWORK'] = '1';
        $env['COMPOSER_ALLOW_SUPERUSER'] = '1';
        $env['COMPOSER_NO_INTERACTION'] = '1';
        $command = [...deadbolt_php_command($withExtension), $composer, '--no-interaction', '--no-ansi', '--working-dir='.$app, ...$args];
        $result = self::exec($command, $app, $env);
        if ($expectSuccess && 0 !== $result['status']) {
            self::fail(sprintf("composer %s failed (%d):\n%s\n%s", implode(' ', $args), $result['status'], $result['stdout'], $result['stderr']));
        }

        return $result;
    }

    /**
     * The installed stubs are the checkout's, file for file, and none of them is autoloaded (the extension declares
     * those classes itself).
     */
    private function assertStubsInstalled(string $app, string $checkoutStubs): void
    {
        $installed = self::filesUnder($app.'/vendor/deadbolt/deadbolt-stubs/Deadbolt');
        $this->assertSame(self::filesUnder($checkoutStubs), $installed);
        foreach ((new \ReflectionExtension('deadbolt'))->getClassNames() as $class) {
            $file = str_replace('\\', '/', substr($class, strlen('Deadbolt\\'))).'.php';
            $this->assertArrayHasKey($file, $installed, "no stub for $class");
        }
        $autoload = implode("\n", array_map(
            static fn (string $f): string => (string) file_get_contents($app.'/vendor/composer/'.$f),
            ['autoload_psr4.php', 'autoload_classmap.php', 'autoload_files.php', 'autoload_namespaces.php']
        ));
        $this->assertStringNotContainsString('deadbolt-stubs', $autoload);
    }

    /**
     * A php process with the extension, vendor/autoload.php and nothing else: the bridge's classes come from
     * vendor/, symfony/lock's from Debian, and a lock is taken and released through them.
     */
    private function assertBridgeWorks(string $app): void
    {
        $result = PhpProcess::run(<<<'PHP'
            require $vars['app'].'/vendor/autoload.php';
            $factory = new Deadbolt\Bridge\Symfony\LockFactory(new Deadbolt\Store\InMemoryStore());
            $lock = $factory->createLock('packaging');
            $other = $factory->createLock('packaging');
            echo json_encode([
                'factory' => (new ReflectionClass($factory))->getFileName(),
                'lock' => get_class($lock),
                'symfony' => (new ReflectionClass(Symfony\Component\Lock\LockInterface::class))->getFileName(),
                'acquired' => $lock->acquire(),
                'other' => $other->acquire(),
                'isSymfony' => $lock instanceof Symfony\Component\Lock\SharedLockInterface,
            ]);
            $lock->release();
            PHP, ['app' => $app]);
        $this->assertSame(0, $result['exit'], 'the application failed: '.$result['stderr']);
        $this->assertSame('', $result['stderr']);
        $seen = json_decode($result['stdout'], true, 512, JSON_THROW_ON_ERROR);
        $this->assertSame(realpath($app.'/vendor/deadbolt/symfony-bridge/src/LockFactory.php'), $seen['factory']);
        $this->assertSame('Deadbolt\Bridge\Symfony\NativeLock', $seen['lock']);
        $this->assertSame(self::DEBIAN_SYMFONY_LOCK.'/LockInterface.php', $seen['symfony']);
        $this->assertTrue($seen['acquired']);
        $this->assertFalse($seen['other'], 'a second lock on the same resource must not be acquired');
        $this->assertTrue($seen['isSymfony']);
    }

    /**
     * examples/phpstan.neon, copied into the application as docs/PHP-PACKAGES.md says, names the installed stubs'
     * directory in scanDirectories. (No NEON parser is packaged by Debian: the file keeps to the one-entry-per-line
     * form read here.)
     */
    private function assertPhpstanExampleFindsTheStubs(string $app): void
    {
        $neon = (string) file_get_contents(dirname(__DIR__, 2).'/examples/phpstan.neon');
        $this->assertSame(1, preg_match('/^    scanDirectories:\n((?:        - .+\n)+)/m', $neon, $m), 'examples/phpstan.neon has no scanDirectories list');
        preg_match_all('/- (.+)/', $m[1], $entries);
        $this->assertSame(['vendor/deadbolt/deadbolt-stubs/Deadbolt'], array_map('trim', $entries[1]));
        copy(dirname(__DIR__, 2).'/examples/phpstan.neon', $app.'/phpstan.neon');
        foreach ($entries[1] as $entry) {
            $this->assertFileExists($app.'/'.trim($entry).'/LockFactory.php');
        }
    }

    private static function cargoVersion(): string
    {
        $cargo = (string) file_get_contents(dirname(__DIR__, 2).'/Cargo.toml');
        self::assertSame(1, preg_match('/^version = "([^"]+)"/m', $cargo, $m));

        return $m[1];
    }

    /**
     * @return array<string, string> path relative to $dir => content, sorted by path
     */
    private static function filesUnder(string $dir): array
    {
        $dir = (string) realpath($dir);
        $files = [];
        $it = new \RecursiveIteratorIterator(new \RecursiveDirectoryIterator($dir, \FilesystemIterator::SKIP_DOTS));
        foreach ($it as $file) {
            $files[substr($file->getPathname(), strlen($dir) + 1)] = (string) file_get_contents($file->getPathname());
        }
        ksort($files, SORT_STRING);

        return $files;
    }

    /**
     * @param list<string>               $command
     * @param array<string, string>|null $env
     *
     * @return array{status: int, stdout: string, stderr: string}
     */
    private static function exec(array $command, string $cwd, ?array $env = null): array
    {
        // Output to files, not pipes: nothing to drain while waiting, however much composer prints.
        $out = tempnam(sys_get_temp_dir(), 'deadbolt-out-');
        $err = tempnam(sys_get_temp_dir(), 'deadbolt-err-');
        try {
            $process = proc_open($command, [0 => ['file', '/dev/null', 'r'], 1 => ['file', $out, 'w'], 2 => ['file', $err, 'w']], $pipes, $cwd, $env);
            if (false === $process) {
                throw new \RuntimeException('proc_open() failed for '.implode(' ', $command));
            }
            $status = proc_close($process);

            return ['status' => $status, 'stdout' => (string) file_get_contents($out), 'stderr' => (string) file_get_contents($err)];
        } finally {
            @unlink($out);
            @unlink($err);
        }
    }
}
