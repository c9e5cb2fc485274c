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

spl_autoload_register(static function (string $class): void {
    foreach (['app\\' => __DIR__ . '/app/', 'support\\' => __DIR__ . '/support/'] as $prefix => $dir) {
        if (str_starts_with($class, $prefix)) {
            $file = $dir . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
            if (is_file($file)) {
                require $file;
            }

            return;
        }
    }
});
