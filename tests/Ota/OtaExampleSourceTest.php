<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Ota;

use Deadbolt\Tests\Support\DeadboltTestCase;

/**
 * The OTA example as a team would copy it: every docblock sits on what it documents, and its Redis tests keep the
 * seed's skip guard (skipped without a Redis; a failure where the project requires one). No Redis needed here.
 */
final class OtaExampleSourceTest extends DeadboltTestCase
{
    private const ROOT = __DIR__.'/../..';

    /**
     * A docblock followed by another one documents nothing (PHP gives a declaration only the last one): it was
     * written for a member that was moved away from it.
     */
    public function testEveryDocblockSitsOnWhatItDocuments(): void
    {
        $files = [];
        foreach (['examples/ota', 'tests/Ota'] as $dir) {
            $all = new \RecursiveIteratorIterator(new \RecursiveDirectoryIterator(self::ROOT.'/'.$dir, \FilesystemIterator::SKIP_DOTS));
            foreach ($all as $file) {
                if ('php' === $file->getExtension()) {
                    $files[] = $file->getPathname();
                }
            }
        }
        $this->assertNotEmpty($files);
        $stray = [];
        foreach ($files as $file) {
            $waiting = null;
            foreach (\PhpToken::tokenize((string) file_get_contents($file)) as $token) {
                if ($token->is([T_WHITESPACE, T_COMMENT])) {
                    continue;
                }
                if (null !== $waiting && $token->is(T_DOC_COMMENT)) {
                    $stray[] = sprintf('%s:%d: %s', substr($file, \strlen(self::ROOT) + 1), $waiting->line, strtok(trim($waiting->text, "/* \n"), "\n"));
                }
                $waiting = $token->is(T_DOC_COMMENT) ? $token : null;
            }
        }
        $this->assertSame([], $stray, 'docblocks followed by another docblock, away from what they document');
    }

    /**
     * Without DEADBOLT_REDIS_PORT, or with nothing answering there, the OTA Redis tests are skipped, as the seed's
     * suite is; with DEADBOLT_REQUIRE_REDIS=1 (the project's own runs) the same is a failure.
     */
    public function testTheRedisTestsAreSkippedWithoutRedisUnlessRedisIsRequired(): void
    {
        $deadPort = self::deadPort();
        foreach ([[null, null], [(string) $deadPort, null]] as [$port, $required]) {
            $run = self::runOtaRedisTest($port, $required);
            $this->assertSame(0, $run['exit'], $run['output']);
            $this->assertMatchesRegularExpression('/OK, but (some tests were skipped|there (were|was) issues)|Skipped: 1/', $run['output']);
            $this->assertStringContainsString(null === $port ? 'DEADBOLT_REDIS_PORT is not set' : "no Redis answers on 127.0.0.1:$deadPort", $run['output']);
        }
        foreach ([null, (string) $deadPort] as $port) {
            $run = self::runOtaRedisTest($port, '1');
            $this->assertSame(1, $run['exit'], $run['output']);
            $this->assertStringContainsString('DEADBOLT_REQUIRE_REDIS=1 makes a missing Redis a failure', $run['output']);
        }
    }

    /**
     * One test of OtaCheckLogicTest in a PHPUnit of its own, with the environment given (null: unset).
     *
     * @return array{exit: int, output: string}
     */
    private static function runOtaRedisTest(?string $port, ?string $required): array
    {
        $env = getenv();
        unset($env['DEADBOLT_REDIS_PORT'], $env['DEADBOLT_REQUIRE_REDIS']);
        if (null !== $port) {
            $env['DEADBOLT_REDIS_PORT'] = $port;
        }
        if (null !== $required) {
            $env['DEADBOLT_REQUIRE_REDIS'] = $required;
        }
        $command = [
            'bash', self::ROOT.'/scripts/phpunit.sh', DEADBOLT_SO,
            // The skip reasons: PHPUnit 10 shows them with --display-skipped, 9.6 with --verbose.
            (int) \PHPUnit\Runner\Version::id() >= 10 ? '--display-skipped' : '--verbose',
            '--filter', 'testLockFactoryUsesTheCurrentPoolConnection', self::ROOT.'/tests/Ota/OtaCheckLogicTest.php',
        ];
        $process = proc_open($command, [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes, self::ROOT, $env);
        if (!\is_resource($process)) {
            throw new \RuntimeException('cannot start PHPUnit');
        }
        $output = (string) stream_get_contents($pipes[1]);
        fclose($pipes[1]);

        return ['exit' => proc_close($process), 'output' => $output];
    }

    /** A loopback port nothing listens on (bound, then closed). */
    private static function deadPort(): int
    {
        $server = stream_socket_server('tcp://127.0.0.1:0');
        if (false === $server) {
            throw new \RuntimeException('cannot bind a loopback port');
        }
        $name = (string) stream_socket_get_name($server, false);
        fclose($server);

        return (int) substr($name, strrpos($name, ':') + 1);
    }
}
