//! How each PHP Redis client speaks: the calls that run a script and a blocking pop, what it says
//! about itself, and what its exceptions mean. One dialect per client class.

use deadbolt_core::{LockScript, Peer, RunError, RunErrorKind};
use ext_php_rs::convert::IntoZvalDyn;
use ext_php_rs::types::{ZendHashTable, ZendObject, Zval};

use super::{function, is_false, Client};
use crate::args::message_of;

/// One client API. The defaults are phpredis' (`\\Redis` and `\\RedisCluster` speak it alike but
/// for the blocking pop); Predis overrides them.
pub(super) trait Dialect {
    /// Runs `script` by EVALSHA with `argv` (its keys first, `keys` of them), then by EVAL when
    /// the server does not know it; the reply, or the server's error.
    fn run_script(
        &self,
        client: &Client,
        script: &LockScript,
        argv: Vec<Zval>,
        keys: i64,
    ) -> Result<Zval, RunError> {
        phpredis_run_script(client, script, argv, keys)
    }

    /// BLPOP `list` for up to `seconds` (decimals); the reply, or the server's error.
    fn blocking_pop(&self, client: &Client, list: &[u8], seconds: &str) -> Result<Zval, RunError>;

    /// Refuses, before anything is sent, a client that would queue commands instead of running
    /// them.
    fn check_runs_commands(&self, client: &Client) -> Result<(), RunError> {
        phpredis_check_runs_commands(client)
    }

    /// `host:port` of the client's connection, for messages; `None` when it cannot be told.
    fn endpoint(&self, _client: &Client) -> Option<String> {
        None
    }

    /// Where the client's connection goes, when it is connected to one server: whether it is shared
    /// with the parent process is asked of the kernel by it. `None` when it cannot be told (not
    /// connected, or connections to many servers).
    fn peer(&self, _client: &Client) -> Option<Peer> {
        None
    }

    /// Whether the client is a Redis Cluster client.
    fn cluster(&self) -> bool {
        false
    }

    /// Whether an exception the client threw is the server's error reply (else its connection
    /// failed). phpredis throws one class (`RedisException`, `RedisClusterException`) for both: a
    /// reply code it throws in some versions (`NOSCRIPT`, `LOADING`) is the server's.
    fn is_reply(&self, _exception: &ZendObject, message: &str) -> bool {
        is_reply_code(message)
    }
}

/// The dialect of `object`, when it is a client Deadbolt speaks with.
pub(super) fn of(object: &ZendObject) -> Option<&'static dyn Dialect> {
    if is(object, "RedisCluster") {
        Some(&PhpRedisCluster)
    } else if is(object, "Redis") {
        Some(&PhpRedis)
    } else if is(object, "Predis\\ClientInterface") {
        Some(&Predis)
    } else {
        None
    }
}

fn is(object: &ZendObject, class: &str) -> bool {
    crate::args::is_instance_of(object, class)
}

/// phpredis' `\Redis`: `evalSha($sha, $args, $numKeys)`, a `false` reply and `getLastError()` on
/// an error reply.
struct PhpRedis;

/// phpredis' `\RedisCluster`: as `\Redis`, its raw commands naming the key (the node) first.
struct PhpRedisCluster;

/// `\Predis\ClientInterface`: `evalsha($sha, $numKeys, ...$args)`, errors as exceptions or
/// `ErrorInterface` replies.
struct Predis;

/// `\Redis::OPT_PREFIX` (the same in every phpredis release).
const PHPREDIS_OPT_PREFIX: i64 = 2;
/// `\Redis::ATOMIC` and `\Redis::MULTI` (`getMode()`), the same in every phpredis release.
const PHPREDIS_MODE_ATOMIC: i64 = 0;
const PHPREDIS_MODE_MULTI: i64 = 1;

impl Dialect for PhpRedis {
    fn blocking_pop(&self, client: &Client, list: &[u8], seconds: &str) -> Result<Zval, RunError> {
        let name = phpredis_prefixed(client, list)?;
        phpredis_raw(client, vec![&"BLPOP", &name, &seconds])
    }

    fn endpoint(&self, client: &Client) -> Option<String> {
        let host = client.call("getHost", vec![]).ok()?.string()?;
        let port = client.call("getPort", vec![]).ok()?.long()?;
        Some(format!("{host}:{port}"))
    }

    /// phpredis shows no socket: its host (a unix socket is a path) and port.
    fn peer(&self, client: &Client) -> Option<Peer> {
        if client.call("isConnected", vec![]).ok()?.bool() != Some(true) {
            return None;
        }
        let host = client.call("getHost", vec![]).ok()?.string()?;
        if host.starts_with('/') || host.starts_with("unix:") {
            return Some(Peer::Unix);
        }
        let port = client.call("getPort", vec![]).ok()?.long()?;
        Some(Peer::Tcp {
            remote_port: u16::try_from(port).ok()?,
            local_port: None,
        })
    }
}

impl Dialect for PhpRedisCluster {
    fn blocking_pop(&self, client: &Client, list: &[u8], seconds: &str) -> Result<Zval, RunError> {
        let name = phpredis_prefixed(client, list)?;
        phpredis_raw(client, vec![&name, &"BLPOP", &name, &seconds])
    }

    fn cluster(&self) -> bool {
        true
    }
}

impl Dialect for Predis {
    fn run_script(
        &self,
        client: &Client,
        script: &LockScript,
        argv: Vec<Zval>,
        keys: i64,
    ) -> Result<Zval, RunError> {
        let evalsha = |method: &str, first: &dyn IntoZvalDyn| {
            let mut params: Vec<&dyn IntoZvalDyn> = vec![first, &keys];
            params.extend(argv.iter().map(|a| a as &dyn IntoZvalDyn));
            client.call(method, params)
        };
        let sha = script.sha1();
        let reply = match evalsha("evalsha", &sha) {
            Err(e) if e.kind() == RunErrorKind::NoScript => None,
            Err(e) => return Err(e),
            Ok(reply) if predis_error(&reply).is_some_and(|m| m.starts_with("NOSCRIPT")) => None,
            Ok(reply) => Some(reply),
        };
        let code = script.code();
        let reply = match reply {
            Some(reply) => reply,
            None => evalsha("eval", &code)?,
        };
        match predis_error(&reply) {
            Some(message) => Err(client.server_error(Some(message))),
            None => Ok(reply),
        }
    }

    /// Predis runs every command as it is called.
    fn check_runs_commands(&self, _client: &Client) -> Result<(), RunError> {
        Ok(())
    }

    /// Predis prefixes BLPOP's keys itself and passes the timeout on as given.
    fn blocking_pop(&self, client: &Client, list: &[u8], seconds: &str) -> Result<Zval, RunError> {
        let mut name = Zval::new();
        name.set_binary(list.to_vec());
        let mut lists = ZendHashTable::new();
        lists.push(name).map_err(|e| {
            RunError::new(
                RunErrorKind::Server,
                format!("cannot pass the list name: {e}"),
            )
        })?;
        let reply = client.call("blpop", vec![&lists, &seconds])?;
        match predis_error(&reply) {
            Some(message) => Err(client.server_error(Some(message))),
            None => Ok(reply),
        }
    }

    fn endpoint(&self, client: &Client) -> Option<String> {
        let connection = client.call("getConnection", vec![]).ok()?;
        client
            .call_on(&connection, "__toString", vec![])
            .ok()?
            .string()
    }

    /// A single server's connection (`NodeConnectionInterface`) shows its stream: both its ends.
    fn peer(&self, client: &Client) -> Option<Peer> {
        let connection = client.call("getConnection", vec![]).ok()?;
        if !is(
            connection.object()?,
            "Predis\\Connection\\NodeConnectionInterface",
        ) || client
            .call_on(&connection, "isConnected", vec![])
            .ok()?
            .bool()
            != Some(true)
        {
            return None;
        }
        let stream = client.call_on(&connection, "getResource", vec![]).ok()?;
        if !stream.is_resource()
            || function("get_resource_type", vec![&stream])?
                .string()
                .as_deref()
                != Some("stream")
        {
            return None;
        }
        let end =
            |remote: bool| function("stream_socket_get_name", vec![&stream, &remote])?.string();
        let port = |name: String| name.rsplit_once(':')?.1.parse::<u16>().ok();
        let remote = end(true)?;
        if remote.starts_with('/') {
            return Some(Peer::Unix);
        }
        Some(Peer::Tcp {
            remote_port: port(remote)?,
            local_port: end(false).and_then(port),
        })
    }

    /// A server's error reply is a `ServerException`; anything else Predis throws while talking
    /// to the server (`ConnectionException`, a protocol error) means the connection failed.
    fn is_reply(&self, exception: &ZendObject, message: &str) -> bool {
        is(exception, "Predis\\Response\\ServerException") || is_reply_code(message)
    }
}

/// EVALSHA, then EVAL on NOSCRIPT, through phpredis: an error reply is `false`, its text
/// `getLastError()`.
fn phpredis_run_script(
    client: &Client,
    script: &LockScript,
    argv: Vec<Zval>,
    keys: i64,
) -> Result<Zval, RunError> {
    let mut list = ZendHashTable::new();
    for arg in argv {
        list.push(arg).map_err(|e| {
            RunError::new(
                RunErrorKind::Server,
                format!("cannot pass the script arguments: {e}"),
            )
        })?;
    }
    let argv = list;
    let reply = client.call("evalSha", vec![&script.sha1(), &argv, &keys])?;
    if !is_false(&reply) {
        return Ok(reply);
    }
    let error = client.server_error(phpredis_last_error(client));
    if error.kind() != RunErrorKind::NoScript {
        return Err(error);
    }
    let reply = client.call("eval", vec![&script.code(), &argv, &keys])?;
    if is_false(&reply) {
        return Err(client.server_error(phpredis_last_error(client)));
    }
    Ok(reply)
}

/// The error of the call that just answered `false`. A script answers an integer, so `false` from
/// EVALSHA or EVAL is always an error reply, which phpredis records anew: nothing needs clearing
/// before those calls (one PHP call per script saved).
fn phpredis_last_error(client: &Client) -> Option<String> {
    client.call("getLastError", vec![]).ok()?.string()
}

/// A raw command (BLPOP), whose `false` may also mean nil: the last error is cleared first, so
/// that one left by an earlier call of the app is not taken for this one's.
fn phpredis_raw(client: &Client, arguments: Vec<&dyn IntoZvalDyn>) -> Result<Zval, RunError> {
    let _ = client.call("clearLastError", vec![]);
    let reply = client.call("rawCommand", arguments)?;
    match is_false(&reply)
        .then(|| phpredis_last_error(client))
        .flatten()
    {
        Some(error) => Err(client.server_error(Some(error))),
        None => Ok(reply),
    }
}

/// `list` with the client's key prefix, as phpredis' own `blPop()` would apply it (BLPOP goes
/// raw: phpredis 5 takes whole seconds only in `blPop()`).
fn phpredis_prefixed(client: &Client, list: &[u8]) -> Result<Zval, RunError> {
    let prefix = client
        .call("getOption", vec![&PHPREDIS_OPT_PREFIX])?
        .string()
        .unwrap_or_default();
    let mut name = Zval::new();
    name.set_binary([prefix.as_bytes(), list].concat());
    Ok(name)
}

/// phpredis queues commands instead of running them while the client is in `multi()` or
/// `pipeline()` mode (and answers with the client itself): a lock script sent then would run
/// later, at `exec()`, for nobody.
fn phpredis_check_runs_commands(client: &Client) -> Result<(), RunError> {
    let mode = match client.call("getMode", vec![])?.long() {
        Some(PHPREDIS_MODE_ATOMIC) | None => return Ok(()),
        Some(PHPREDIS_MODE_MULTI) => "multi()",
        Some(_) => "pipeline()",
    };
    Err(RunError::new(
        RunErrorKind::Server,
        format!(
            "Redis through {}: the client is in {mode} mode, where commands are queued instead of run; lock with a client outside multi() and pipeline() (exec() or discard() first).",
            client.name()
        ),
    ))
}

/// Whether an exception's message is a reply code Deadbolt acts on (`NOSCRIPT`, `LOADING`, the
/// scripts' own).
fn is_reply_code(message: &str) -> bool {
    RunError::from_reply("", message).kind() != RunErrorKind::Server
}

/// The message of a Predis error reply object, if the reply is one.
fn predis_error(reply: &Zval) -> Option<String> {
    let object = reply.object()?;
    if !is(object, "Predis\\Response\\ErrorInterface") {
        return None;
    }
    message_of(object)
}
