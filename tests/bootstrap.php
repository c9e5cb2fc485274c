<?php

declare(strict_types=1);

/*
 * PHPUnit bootstrap: the suite only makes sense against the loaded extension, so it refuses to start without it.
 *
 *     php -d extension=$PWD/target/release/libdeadbolt.so /usr/bin/phpunit -c phpunit.xml.dist
 *
 * Child processes (tests/Support/PhpProcess.php) load the same .so: DEADBOLT_SO, or the release build.
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

// symfony/lock 5.4 from Debian (php-symfony-lock), the peer of the interop tests.
require_once '/usr/share/php/Symfony/Component/Lock/autoload.php';
