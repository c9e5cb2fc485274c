<?php

declare(strict_types=1);

namespace Deadbolt\Tests;

use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\ReflectionDump;

/**
 * stubs/ documents the extension: any drift between the two fails here, naming what differs.
 *
 * The stubs are loaded in a `php -n` process (no extension, no ini) and reflected there; the extension is
 * reflected in this process; both sides go through the same ReflectionDump.
 */
final class StubsMatchExtensionTest extends DeadboltTestCase
{
    private const STUBS = __DIR__.'/../stubs';

    /** @var array<string, array<string, mixed>>|null */
    private static ?array $stubDump = null;

    /**
     * One `php -l` per stub. Group "parser": PHP's parser is the same on every architecture, so the arm64 run under
     * emulation (where each php start costs a second) leaves it to the x86_64 PHPs (8.2, 8.4, 8.5).
     *
     * @group parser
     */
    #[\PHPUnit\Framework\Attributes\Group('parser')]
    public function testEveryStubFileIsValidPhp(): void
    {
        foreach (self::stubFiles() as $file) {
            $output = [];
            exec(escapeshellarg(PHP_BINARY).' -n -l '.escapeshellarg($file).' 2>&1', $output, $exit);
            $this->assertSame(0, $exit, $file.': '.implode("\n", $output));
        }
    }

    public function testStubsAndExtensionDeclareTheSameClasses(): void
    {
        $stubClasses = array_keys(self::stubDump());
        $extensionClasses = self::extensionClasses();

        $this->assertSame([], array_values(array_diff($extensionClasses, $stubClasses)), 'classes of the extension without a stub');
        $this->assertSame([], array_values(array_diff($stubClasses, $extensionClasses)), 'stubs of classes the extension does not define');
    }

    /**
     * The extension declares no functions, so there is no functions stub: the end-of-request release of locks on
     * PHP clients is an object only the extension can make (Deadbolt\Internal\EndOfRequest), not a function any
     * code could call mid-request.
     */
    public function testTheExtensionDeclaresNoFunctions(): void
    {
        $this->assertSame([], get_extension_funcs('deadbolt') ?: []);
        $this->assertFileDoesNotExist(self::STUBS.'/Deadbolt/functions.php');
    }

    public function testEachStubFileHoldsTheClassItsPathNames(): void
    {
        $stubs = self::stubDump();

        foreach (self::stubFiles() as $file) {
            $class = self::classOfFile($file);
            $this->assertArrayHasKey($class, $stubs, basename($file).' must declare '.$class);
        }
    }

    public function testStubSignaturesMatchTheExtension(): void
    {
        $differences = [];
        foreach (self::stubDump() as $class => $stub) {
            if (!class_exists($class, false) && !interface_exists($class, false)) {
                continue; // reported by testStubsAndExtensionDeclareTheSameClasses
            }
            self::compare($class, $stub, ReflectionDump::ofClass($class), $differences);
        }

        $this->assertSame([], $differences, "stubs/ and the extension differ:\n".implode("\n", $differences));
    }

    public function testTheExtensionRegistersItsClassesUnderItsName(): void
    {
        $registered = (new \ReflectionExtension('deadbolt'))->getClassNames();
        sort($registered);

        $this->assertSame(self::extensionClasses(), $registered, 'ReflectionExtension::getClassNames() of "deadbolt"');
    }

    /**
     * @param array<mixed>  $stub
     * @param array<mixed>  $extension
     * @param list<string>  $differences
     */
    private static function compare(string $path, array $stub, array $extension, array &$differences): void
    {
        foreach (array_unique(array_merge(array_keys($stub), array_keys($extension))) as $key) {
            $where = \is_int($key) ? sprintf('%s[%d]', $path, $key) : $path.' '.$key;
            if (!\array_key_exists($key, $extension)) {
                $differences[] = $where.': in the stub only';
                continue;
            }
            if (!\array_key_exists($key, $stub)) {
                $differences[] = $where.': in the extension only';
                continue;
            }
            if (\is_array($stub[$key]) && \is_array($extension[$key]) && 'interfaces' !== $key) {
                self::compare($where, $stub[$key], $extension[$key], $differences);
                continue;
            }
            if ($stub[$key] !== $extension[$key]) {
                $differences[] = sprintf('%s: stub %s, extension %s', $where, json_encode($stub[$key]), json_encode($extension[$key]));
            }
        }
    }

    /**
     * @return array<string, array<string, mixed>>
     */
    private static function stubDump(): array
    {
        if (null !== self::$stubDump) {
            return self::$stubDump;
        }
        $result = PhpProcess::run(<<<'PHP'
            require $vars['dumper'];
            spl_autoload_register(static function (string $class) use ($vars): void {
                $file = $vars['stubs'].'/'.str_replace('\\', '/', $class).'.php';
                if (is_file($file)) {
                    require $file;
                }
            });
            $dump = [];
            foreach ($vars['classes'] as $class) {
                if (class_exists($class) || interface_exists($class)) {
                    $dump[$class] = Deadbolt\Tests\Support\ReflectionDump::ofClass($class);
                }
            }
            if (extension_loaded('deadbolt')) {
                fwrite(STDERR, 'the stub process must not load the extension');
                exit(1);
            }
            echo json_encode($dump, JSON_THROW_ON_ERROR);
            PHP, [
            'dumper' => (new \ReflectionClass(ReflectionDump::class))->getFileName(),
            'stubs' => realpath(self::STUBS),
            'classes' => array_map([self::class, 'classOfFile'], self::stubFiles()),
        ], false, 60.0, [PHP_BINARY, '-n']);
        if (0 !== $result['exit'] || '' !== $result['stderr']) {
            throw new \RuntimeException("The stub process failed (exit {$result['exit']}):\n{$result['stderr']}{$result['stdout']}");
        }
        $dump = json_decode($result['stdout'], true, 512, JSON_THROW_ON_ERROR);
        ksort($dump);

        return self::$stubDump = $dump;
    }

    /**
     * @return list<string>
     */
    private static function extensionClasses(): array
    {
        $classes = array_filter(
            array_merge(get_declared_classes(), get_declared_interfaces()),
            static fn (string $class): bool => str_starts_with($class, 'Deadbolt\\') && (new \ReflectionClass($class))->isInternal()
        );
        sort($classes);

        return array_values($classes);
    }

    /**
     * @return list<string>
     */
    private static function stubFiles(): array
    {
        $files = [];
        $iterator = new \RecursiveIteratorIterator(new \RecursiveDirectoryIterator(realpath(self::STUBS), \FilesystemIterator::SKIP_DOTS));
        foreach ($iterator as $file) {
            if ('php' === $file->getExtension()) {
                $files[] = $file->getPathname();
            }
        }
        sort($files);

        return $files;
    }

    private static function classOfFile(string $file): string
    {
        $relative = substr($file, \strlen((string) realpath(self::STUBS)) + 1, -4);

        return str_replace('/', '\\', $relative);
    }
}
