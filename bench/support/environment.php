<?php

/*
 * What a scenario measures against and where it writes: the Redis server's address, the anchor libraries
 * (symfony/lock and Predis from Debian's packages), the output directory under target/, and the line that says
 * which PHP and machine a run was on.
 *
 * Env: DEADBOLT_REDIS_PORT, SYMFONY_LOCK_AUTOLOAD, PREDIS_AUTOLOAD (library paths), CARGO_TARGET_DIR.
 */

declare(strict_types=1);

/** Every Redis a scenario talks to is a private one on loopback (scripts/redis-start.sh). */
const REDIS_HOST = '127.0.0.1';
const SYMFONY_LOCK_AUTOLOAD = '/usr/share/php/Symfony/Component/Lock/autoload.php';
const PREDIS_AUTOLOAD = '/usr/share/php/Predis/autoload.php';

/** The port given as --port=PORT, else DEADBOLT_REDIS_PORT; null when there is neither (not yet checked). */
function redisPortSetting(?string $option): ?string
{
    return $option ?? (getenv('DEADBOLT_REDIS_PORT') ?: null);
}

/** symfony/lock's autoload.php: SYMFONY_LOCK_AUTOLOAD, or Debian's php-symfony-lock (5.4). */
function symfonyLockAutoload(): string
{
    return getenv('SYMFONY_LOCK_AUTOLOAD') ?: SYMFONY_LOCK_AUTOLOAD;
}

/** Predis' autoload.php: PREDIS_AUTOLOAD, or Debian's php-predis. */
function predisAutoload(): string
{
    return getenv('PREDIS_AUTOLOAD') ?: PREDIS_AUTOLOAD;
}

/** Loads the library whose autoload.php is $path; false, loading nothing, when there is no such file. */
function loadLibrary(string $path): bool
{
    if (!is_file($path)) {
        return false;
    }
    require_once $path;

    return true;
}

function deadboltLoaded(): bool
{
    return class_exists(Deadbolt\LockFactory::class);
}

/** "PHP 8.2.36, Linux 6.1.0 x86_64, opcache off (CLI)". */
function phpAndMachine(): string
{
    return sprintf('PHP %s, %s, %s', PHP_VERSION, php_uname('s') . ' ' . php_uname('r') . ' ' . php_uname('m'),
        extension_loaded('Zend OPcache') && ini_get('opcache.enable_cli') ? 'opcache on' : 'opcache off (CLI)');
}

/**
 * The directory a scenario's files (CSV, PNG) go to, made when missing: bench/ under the repository's target/
 * ($CARGO_TARGET_DIR when set, as for the build), never a tracked file.
 */
function outputDir(): string
{
    $dir = (getenv('CARGO_TARGET_DIR') ?: dirname(__DIR__, 2) . '/target') . '/bench';
    if (!is_dir($dir) && !mkdir($dir, 0777, true) && !is_dir($dir)) {
        throw new RuntimeException("cannot create $dir");
    }

    return $dir;
}
