<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * The secrets tests' private redis-server: it needs the using class's PASSWORD, knows the user USER by the same
 * password, and holds a hash under 'typed-as-hash' (a key of the wrong type for the failure paths). The using class
 * defines PASSWORD, WRONG_PASSWORD, USER and PASSWORD_ENV; its child php process gets them through childVars().
 */
trait ProtectedRedisFixture
{
    private ?RedisServer $server = null;

    protected function tearDown(): void
    {
        $this->server?->stop();
        $this->server = null;
    }

    /**
     * @return iterable<string, array{'dsn'|'env'}>
     */
    public static function passwordSources(): iterable
    {
        yield 'password in the DSN' => ['dsn'];
        yield 'password from password_env' => ['env'];
    }

    /**
     * @param array<string, string> $options more redis-server options
     */
    private function startProtectedServer(array $options = []): RedisServer
    {
        $this->server = RedisServer::start(['requirepass' => self::PASSWORD] + $options);
        $this->prepareProtectedServer($this->server);

        return $this->server;
    }

    /** The user and the hash key; again after a restart, since the server keeps no data. */
    private function prepareProtectedServer(RedisServer $server): void
    {
        $admin = $server->client(self::PASSWORD);
        $admin->rawCommand('ACL', 'SETUSER', self::USER, 'on', '>'.self::PASSWORD, '~*', '&*', '+@all');
        $admin->hSet('typed-as-hash', 'field', 'value');
        $admin->close();
    }

    /**
     * @param 'dsn'|'env' $source where the child's DSN takes the password from
     *
     * @return array<string, mixed>
     */
    private function childVars(RedisServer $server, string $source): array
    {
        return [
            'port' => $server->port,
            'source' => $source,
            'user' => self::USER,
            'password' => self::PASSWORD,
            'wrong' => self::WRONG_PASSWORD,
            'env' => self::PASSWORD_ENV,
        ];
    }
}
