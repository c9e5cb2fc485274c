<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * Certificates made with openssl for the TLS tests, and a redis-server that speaks TLS with one of them.
 */
final class TestCertificates
{
    /**
     * A new directory with two CAs (ca, other-ca), a server certificate for 127.0.0.1 (server) and one for another
     * host (misnamed), both signed by ca.
     */
    public static function make(): string
    {
        $dir = sys_get_temp_dir().'/deadbolt-tls-'.bin2hex(random_bytes(6));
        mkdir($dir, 0700);
        self::makeCertificateAuthority($dir, 'ca');
        self::makeCertificateAuthority($dir, 'other-ca');
        self::makeServerCertificate($dir, 'server', 'ca', 'IP:127.0.0.1,DNS:localhost');
        self::makeServerCertificate($dir, 'misnamed', 'ca', 'DNS:not-this-host.example');

        return $dir;
    }

    public static function remove(string $dir): void
    {
        foreach (glob($dir.'/*') ?: [] as $file) {
            unlink($file);
        }
        @rmdir($dir);
    }

    /**
     * A redis-server with a TLS port serving $certificate (from $dir); the server and its TLS port.
     *
     * @return array{RedisServer, int}
     */
    public static function startServer(string $dir, string $certificate): array
    {
        $tlsPort = RedisServer::freePort();
        $server = RedisServer::start([
            'tls-port' => (string) $tlsPort,
            'tls-cert-file' => "$dir/$certificate.crt",
            'tls-key-file' => "$dir/$certificate.key",
            'tls-ca-cert-file' => "$dir/ca.crt",
            'tls-auth-clients' => 'no',
        ]);

        return [$server, $tlsPort];
    }

    private static function makeCertificateAuthority(string $dir, string $name): void
    {
        self::openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', "/CN=Deadbolt test $name",
            '-keyout', "$dir/$name.key", '-out', "$dir/$name.crt"]);
    }

    private static function makeServerCertificate(string $dir, string $name, string $ca, string $subjectAltName): void
    {
        self::openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', "/CN=$name", '-keyout', "$dir/$name.key", '-out', "$dir/$name.csr"]);
        file_put_contents("$dir/$name.ext", "subjectAltName=$subjectAltName\n");
        self::openssl(['x509', '-req', '-days', '2', '-in', "$dir/$name.csr", '-CA', "$dir/$ca.crt", '-CAkey', "$dir/$ca.key",
            '-CAcreateserial', '-extfile', "$dir/$name.ext", '-out', "$dir/$name.crt"]);
    }

    /**
     * @param list<string> $arguments
     */
    private static function openssl(array $arguments): void
    {
        $process = proc_open(array_merge(['openssl'], $arguments), [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        if (false === $process) {
            throw new \RuntimeException('Cannot run openssl');
        }
        $output = stream_get_contents($pipes[1]).stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);
        if (0 !== proc_close($process)) {
            throw new \RuntimeException('openssl '.implode(' ', $arguments)." failed:\n".$output);
        }
    }
}
