<?php

/*
 * The OTA example without a framework: an autoloader for the two namespaces webman's composer.json maps
 * (`app\` -> app/, `support\` -> support/), and a check that the extensions it needs are loaded.
 *
 *     require __DIR__ . '/bootstrap.php';
 */

declare(strict_types=1);

foreach (['deadbolt' => 'Deadbolt (php -d extension=/path/to/libdeadbolt.so)', 'redis' => 'phpredis (php-redis)'] as $extension => $what) {
    if (!extension_loaded($extension)) {
        throw new RuntimeException(sprintf('The OTA example needs the %s extension.', $what));
    }
}

// The Symfony-typed variant (app\logic\SymfonyOtaCheckLogic) needs symfony/lock and the Deadbolt bridge (php/ in this
// repository; in an application, Composer loads both).
(static function (): void {
    $symfonyLock = getenv('DEADBOLT_SYMFONY_LOCK_AUTOLOAD') ?: '/usr/share/php/Symfony/Component/Lock/autoload.php';
    if (!interface_exists(\Symfony\Component\Lock\LockInterface::class) && is_file($symfonyLock)) {
        require_once $symfonyLock;
    }
})();

spl_autoload_register(static function (string $class): void {
    foreach (['app\\' => __DIR__ . '/app/', 'support\\' => __DIR__ . '/support/', 'Deadbolt\\Bridge\\Symfony\\' => __DIR__ . '/../../php/src/'] as $prefix => $dir) {
        if (str_starts_with($class, $prefix)) {
            $file = $dir . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
            if (is_file($file)) {
                require $file;
            }

            return;
        }
    }
});
