<?php

declare(strict_types=1);

/*
 * PHPUnit bootstrap: the suite only makes sense against the loaded extension, so it refuses to start without it.
 *
 *     bash scripts/phpunit.sh target/release/libdeadbolt.so [tests/Some/Path]
 *
 * Child processes (tests/Support/PhpProcess.php) load the same .so: DEADBOLT_SO, or the release build.
 * The platform's own pieces come from the environment, defaulting to Debian's packages:
 *   DEADBOLT_REDIS_SERVER / DEADBOLT_REDIS_CLI   redis-server / redis-cli, or valkey-server / valkey-cli
 *   DEADBOLT_SYMFONY_LOCK_AUTOLOAD               symfony/lock's autoload.php (Debian's php-symfony-lock by default)
 *   DEADBOLT_PHP_FPM                             the php-fpm of this PHP (default: Debian's php-fpmX.Y)
 */

if (!extension_loaded('deadbolt')) {
    fwrite(STDERR, sprintf(
        "The deadbolt extension is not loaded. Build it, then run:\n    php -d extension=%s %s -c phpunit.xml.dist\n",
        getenv('DEADBOLT_SO') ?: dirname(__DIR__).'/target/release/libdeadbolt.so',
        $_SERVER['argv'][0] ?? 'phpunit'
    ));
    exit(1);
}

/** Absolute path of the extension that child php processes load. */
define('DEADBOLT_SO', (static function (): string {
    $path = getenv('DEADBOLT_SO') ?: __DIR__.'/../target/release/libdeadbolt.so';
    $real = realpath($path);
    if (false === $real) {
        fwrite(STDERR, "DEADBOLT_SO points at a missing file: $path\n");
        exit(1);
    }

    return $real;
})());

/*
 * The suite tests the build tree: when an installed deadbolt.so was loaded instead (php only warns "Module already
 * loaded" and keeps the first), every result would be about the wrong binary. scripts/php.sh prevents it; this
 * refuses to go on if it happened anyway.
 */
(static function (): void {
    $maps = @file_get_contents('/proc/self/maps');
    if (false === $maps) {
        return;
    }
    $loaded = [];
    foreach (explode("\n", $maps) as $line) {
        if (preg_match('~\s(/\S*deadbolt\S*\.so)$~', $line, $m)) {
            $loaded[(string) realpath($m[1])] = true;
        }
    }
    if (!isset($loaded[DEADBOLT_SO]) || 1 !== count($loaded)) {
        fwrite(STDERR, sprintf(
            "The loaded deadbolt extension is not the one under test (%s): loaded %s. An installed copy wins over\n"
            ."-d extension=...; run the suite with scripts/phpunit.sh, which keeps installed copies out.\n",
            DEADBOLT_SO,
            implode(', ', array_keys($loaded)) ?: 'none found'
        ));
        exit(1);
    }
})();

/** A Redis or Valkey binary: $kind is 'server' or 'cli' (DEADBOLT_REDIS_SERVER / DEADBOLT_REDIS_CLI). */
function deadbolt_redis_binary(string $kind): string
{
    return match ($kind) {
        'server' => getenv('DEADBOLT_REDIS_SERVER') ?: 'redis-server',
        'cli' => getenv('DEADBOLT_REDIS_CLI') ?: 'redis-cli',
    };
}

/** symfony/lock's autoload.php: the interop peer and benchmark anchor (Debian's php-symfony-lock by default). */
function deadbolt_symfony_lock_autoload(): string
{
    return getenv('DEADBOLT_SYMFONY_LOCK_AUTOLOAD') ?: '/usr/share/php/Symfony/Component/Lock/autoload.php';
}

/** Debian's Predis (php-predis). */
const DEADBOLT_PREDIS_AUTOLOAD = '/usr/share/php/Predis/autoload.php';

/** The php-fpm of the PHP that runs the suite: DEADBOLT_PHP_FPM, Debian's php-fpmX.Y, or the sbin beside PHP. */
function deadbolt_php_fpm_binary(): string
{
    $candidates = [
        (string) getenv('DEADBOLT_PHP_FPM'),
        '/usr/sbin/php-fpm'.PHP_MAJOR_VERSION.'.'.PHP_MINOR_VERSION,
        dirname(PHP_BINARY, 2).'/sbin/php-fpm',
    ];
    foreach ($candidates as $candidate) {
        if ('' !== $candidate && is_executable($candidate)) {
            return $candidate;
        }
    }

    throw new \RuntimeException('No php-fpm for PHP '.PHP_VERSION.' (Debian: apt-get install php-fpm; or set DEADBOLT_PHP_FPM)');
}

/**
 * The command line that starts a child php process like this one: same binary, same extension.
 *
 * @return list<string> argv for proc_open(), to be followed by a script path
 */
function deadbolt_php_command(bool $withExtension = true): array
{
    $command = [PHP_BINARY, '-d', 'display_errors=stderr', '-d', 'log_errors=0', '-d', 'error_reporting=-1'];
    if ($withExtension) {
        array_push($command, '-d', 'extension='.DEADBOLT_SO);
    }

    return $command;
}

spl_autoload_register(static function (string $class): void {
    $prefix = 'Deadbolt\\Tests\\';
    if (0 === strncmp($class, $prefix, strlen($prefix))) {
        $file = __DIR__.'/'.str_replace('\\', '/', substr($class, strlen($prefix))).'.php';
        if (is_file($file)) {
            require $file;
        }
    }
});

// The Symfony bridge (php/, PSR-4), as Composer would load it.
spl_autoload_register(static function (string $class): void {
    $prefix = 'Deadbolt\\Bridge\\Symfony\\';
    if (0 === strncmp($class, $prefix, strlen($prefix))) {
        $file = dirname(__DIR__).'/php/src/'.str_replace('\\', '/', substr($class, strlen($prefix))).'.php';
        if (is_file($file)) {
            require $file;
        }
    }
});

// symfony/semaphore's and symfony/lock's own store tests, changed mechanically to run on Deadbolt
// (scripts/symfony-own-tests.sh), when scripts/test-php.sh runs them: their abstract test cases load on demand.
spl_autoload_register(static function (string $class): void {
    $suites = [
        'Symfony\\Component\\Semaphore\\Tests\\Store\\' => getenv('DEADBOLT_SYMFONY_SEMAPHORE_TESTS'),
        'Symfony\\Component\\Lock\\Tests\\Store\\' => getenv('DEADBOLT_SYMFONY_LOCK_TESTS'),
    ];
    foreach ($suites as $prefix => $dir) {
        if (false !== $dir && 0 === strncmp($class, $prefix, strlen($prefix))) {
            $file = $dir.'/'.substr($class, strlen($prefix)).'.php';
            if (is_file($file)) {
                require $file;
            }
        }
    }
});
if (false !== getenv('DEADBOLT_SYMFONY_SEMAPHORE_TESTS')) {
    require_once DEADBOLT_PREDIS_AUTOLOAD; // PredisStoreTest's client
}

// symfony/lock from Debian (php-symfony-lock: 5.4 on Debian 12, 6.4 on Debian 13), the peer of the interop tests.
require_once deadbolt_symfony_lock_autoload();
