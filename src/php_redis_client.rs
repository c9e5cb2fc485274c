//! The Redis store over a PHP client the app already has: phpredis' `\Redis` / `\RedisCluster` or
//! a Predis client. Scripts run through the object's own methods (EVALSHA, then EVAL on NOSCRIPT),
//! so its connection, prefix and auth settings apply. Only ever used on PHP's thread, inside a PHP
//! call: locks on it are `StoreRef::Lent`, which keeps them out of `Drop`, and it offers no
//! connection for the background refresher. Errors are classified here, once, from the text the
//! client gives (it has no error kinds to read).

use deadbolt_core::{LockScript, RunError, RunErrorKind, Signal, Transport};
use ext_php_rs::convert::IntoZvalDyn;
use ext_php_rs::types::{ZendCallable, ZendHashTable, Zval};
use ext_php_rs::zend::ClassEntry;

use crate::php_call::guarded;
use crate::zend_object::{take_pending_exception, ParkedException};

/// Which client API the object speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavour {
    /// `\Redis`, `\RedisCluster`: `evalSha($sha, $args, $numKeys)`, errors via `getLastError()`.
    PhpRedis,
    /// `\Predis\ClientInterface`: `evalsha($sha, $numKeys, ...$args)`, errors as exceptions or
    /// `ErrorInterface` replies.
    Predis,
}

/// A transport over a PHP Redis client object.
pub struct PhpClientTransport {
    client: Zval,
    flavour: Flavour,
    /// `\RedisCluster`, whose raw commands name the key (node) first.
    cluster: bool,
    name: String,
}

/// `\Redis::OPT_PREFIX` (the same in every phpredis release).
const PHPREDIS_OPT_PREFIX: i64 = 2;

impl PhpClientTransport {
    /// A transport over the client object in `connection`, or `None` when it is not a supported client.
    pub fn new(connection: &Zval) -> Option<Self> {
        let object = connection.object()?;
        let is = |class: &str| ClassEntry::try_find(class).is_some_and(|ce| object.instance_of(ce));
        let cluster = is("RedisCluster");
        let flavour = if is("Redis") || cluster {
            Flavour::PhpRedis
        } else if is("Predis\\ClientInterface") {
            Flavour::Predis
        } else {
            return None;
        };
        let class = crate::args::class_name(object);
        let client = connection.shallow_clone();
        let endpoint = endpoint_of(&client, flavour);
        let name = match endpoint {
            Some(endpoint) => format!("\\{class}({endpoint})"),
            None => format!("\\{class}"),
        };
        Some(PhpClientTransport {
            client,
            flavour,
            cluster,
            name,
        })
    }

    fn run_phpredis(
        &self,
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
        let _ = call(&self.client, "clearLastError", vec![]);
        let reply = call(&self.client, "evalSha", vec![&script.sha1(), &argv, &keys])?;
        if !is_false(&reply) {
            return Ok(reply);
        }
        let error = self.describe(last_error(&self.client));
        if error.kind() != RunErrorKind::NoScript {
            return Err(error);
        }
        let _ = call(&self.client, "clearLastError", vec![]);
        let reply = call(&self.client, "eval", vec![&script.code(), &argv, &keys])?;
        if is_false(&reply) {
            return Err(self.describe(last_error(&self.client)));
        }
        Ok(reply)
    }

    fn run_predis(
        &self,
        script: &LockScript,
        argv: Vec<Zval>,
        keys: i64,
    ) -> Result<Zval, RunError> {
        let evalsha = |method: &str, first: &dyn IntoZvalDyn| {
            let mut params: Vec<&dyn IntoZvalDyn> = vec![first, &keys];
            params.extend(argv.iter().map(|a| a as &dyn IntoZvalDyn));
            call(&self.client, method, params)
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
            Some(message) => Err(self.describe(Some(message))),
            None => Ok(reply),
        }
    }

    /// BLPOP `list` for up to `seconds` through the client; the reply (an array when popped).
    fn blocking_pop(&self, list: &[u8], seconds: &str) -> Result<Zval, RunError> {
        match self.flavour {
            // phpredis 5 takes whole seconds only in blPop(): BLPOP goes raw, with the client's key
            // prefix applied here as blPop() would.
            Flavour::PhpRedis => {
                let prefix = call(&self.client, "getOption", vec![&PHPREDIS_OPT_PREFIX])?
                    .string()
                    .unwrap_or_default();
                let mut name = Zval::new();
                name.set_binary([prefix.as_bytes(), list].concat());
                let _ = call(&self.client, "clearLastError", vec![]);
                if self.cluster {
                    call(
                        &self.client,
                        "rawCommand",
                        vec![&name, &"BLPOP", &name, &seconds],
                    )
                } else {
                    call(&self.client, "rawCommand", vec![&"BLPOP", &name, &seconds])
                }
            }
            // Predis prefixes BLPOP's keys itself and passes the timeout on as given.
            Flavour::Predis => {
                let mut name = Zval::new();
                name.set_binary(list.to_vec());
                let mut lists = ZendHashTable::new();
                lists.push(name).map_err(|e| {
                    RunError::new(
                        RunErrorKind::Server,
                        format!("cannot pass the list name: {e}"),
                    )
                })?;
                call(&self.client, "blpop", vec![&lists, &seconds])
            }
        }
    }

    /// A connection failure says which client it came through (server errors already do).
    fn through(&self, e: RunError) -> RunError {
        if e.kind() == RunErrorKind::Connection {
            return RunError::new(
                RunErrorKind::Connection,
                format!("Redis through {}: {e}", self.name),
            );
        }
        e
    }

    /// A server's error reply (or its absence), classified by its code.
    fn describe(&self, error: Option<String>) -> RunError {
        RunError::from_reply(
            &format!("Redis through {}: ", self.name),
            error
                .as_deref()
                .unwrap_or("the script failed without an error message"),
        )
    }
}

impl Transport for PhpClientTransport {
    fn name(&self) -> &str {
        &self.name
    }

    fn cluster(&self) -> bool {
        self.cluster
    }

    fn run(&self, script: &LockScript, keys: &[&[u8]], args: &[&[u8]]) -> Result<i64, RunError> {
        self.check_runs_commands()?;
        let key_count = i64::try_from(keys.len()).unwrap_or(1);
        let argv: Vec<Zval> = keys
            .iter()
            .chain(args.iter())
            .copied()
            .map(|bytes| {
                let mut zval = Zval::new();
                zval.set_binary(bytes.to_vec());
                zval
            })
            .collect();
        let reply = match self.flavour {
            Flavour::PhpRedis => self.run_phpredis(script, argv, key_count),
            Flavour::Predis => self.run_predis(script, argv, key_count),
        }
        .map_err(|e| self.through(e))?;
        // Every script answers an integer, which phpredis and Predis give as a PHP int; anything
        // else is not a reply of the script (read as 0 it would pass for "held").
        reply
            .long()
            .ok_or_else(|| self.unexpected("the lock script", &reply))
    }

    /// A blocking wait through the client (BLPOP): a hand-over reaches a waiter at once here too.
    /// The client's own read timeout must outlast it (phpredis and Predis default to PHP's
    /// `default_socket_timeout`, 60 s).
    fn wait_signal(
        &self,
        list: &[u8],
        timeout: std::time::Duration,
    ) -> Result<Option<Signal>, RunError> {
        self.check_runs_commands()?;
        let seconds = format!("{:.3}", timeout.as_secs_f64().max(0.001));
        let reply = self
            .blocking_pop(list, &seconds)
            .map_err(|e| self.through(e))?;
        if let Some(message) = predis_error(&reply) {
            return Err(self.describe(Some(message)));
        }
        if self.flavour == Flavour::PhpRedis && is_false(&reply) {
            if let Some(error) = last_error(&self.client) {
                return Err(self.describe(Some(error)));
            }
        }
        // BLPOP answers [list, item] when it popped; nil when it timed out, which phpredis gives as
        // null or false, and \RedisCluster's raw command as an empty array.
        if reply.is_null() || is_false(&reply) {
            return Ok(None);
        }
        let popped = reply
            .array()
            .ok_or_else(|| self.unexpected("BLPOP", &reply))?;
        if popped.is_empty() {
            return Ok(None);
        }
        let item = popped
            .get_index(1)
            .and_then(|item| item.binary::<u8>())
            .ok_or_else(|| self.unexpected("BLPOP", &reply))?;
        Ok(Signal::parse(&item))
    }
}

impl PhpClientTransport {
    /// phpredis queues commands instead of running them while the client is in `multi()` or
    /// `pipeline()` mode (and answers with the client itself): a lock script sent then would run
    /// later, at `exec()`, for nobody. Refused before anything is sent.
    fn check_runs_commands(&self) -> Result<(), RunError> {
        if self.flavour != Flavour::PhpRedis {
            return Ok(());
        }
        let mode = match call(&self.client, "getMode", vec![])?.long() {
            Some(PHPREDIS_MODE_ATOMIC) | None => return Ok(()),
            Some(PHPREDIS_MODE_MULTI) => "multi()",
            Some(_) => "pipeline()",
        };
        Err(RunError::new(
            RunErrorKind::Server,
            format!(
                "Redis through {}: the client is in {mode} mode, where commands are queued instead of run; lock with a client outside multi() and pipeline() (exec() or discard() first).",
                self.name
            ),
        ))
    }

    /// A reply of the wrong shape.
    fn unexpected(&self, what: &str, reply: &Zval) -> RunError {
        RunError::new(
            RunErrorKind::Server,
            format!(
                "Redis through {}: {what} answered with {}, not a reply Deadbolt understands.",
                self.name,
                reply.get_type()
            ),
        )
    }
}

/// `\Redis::ATOMIC` and `\Redis::MULTI` (`getMode()`), the same in every phpredis release.
const PHPREDIS_MODE_ATOMIC: i64 = 0;
const PHPREDIS_MODE_MULTI: i64 = 1;

/// Calls `$object->method(...$params)`. An exception the client throws is taken from the engine
/// and returned as an error: a connection failure, or a server error reply (Predis).
fn call(object: &Zval, method: &str, params: Vec<&dyn IntoZvalDyn>) -> Result<Zval, RunError> {
    // An exception already in flight (a signal handler threw or exited during a wait) is not the
    // client's: PHP would not run the call with it pending, and taking it afterwards would swallow
    // it. It is set aside for the call (a waiter still leaves the queue) and put back after it.
    let _parked = crate::php_call::exception_in_flight()
        .then(ParkedException::park)
        .flatten();
    crate::interrupts::forget_handlers();
    let result = guarded(|| match object.try_call_method(method, params.clone()) {
        // Predis answers commands through __call: no real method to find.
        Err(ext_php_rs::error::Error::Callable) => call_magic(object, method, params),
        other => other,
    })
    .map_err(|ended| RunError::new(RunErrorKind::Server, format!("{method}(): {ended}")))?;
    // A signal handler that PHP ran during the client's call may have thrown: that exception is
    // the application's, not the client's, and stays in flight for the caller.
    if crate::interrupts::exception_is_a_handlers() {
        return Err(RunError::new(
            RunErrorKind::Server,
            format!("{method}() was interrupted by an exception of the application"),
        ));
    }
    if let Some(exception) = take_pending_exception() {
        let class = crate::args::class_name(&exception);
        let message = message_of(&exception).unwrap_or_default();
        // A server's error reply (Predis' ServerException, or a reply code such as NOSCRIPT or
        // LOADING that phpredis throws in some versions), else the connection failed.
        let is_reply = class.contains("ServerException")
            || RunError::from_reply("", &message).kind() != RunErrorKind::Server;
        return Err(if is_reply {
            RunError::from_reply(&format!("{class}: "), &message)
        } else {
            RunError::new(RunErrorKind::Connection, format!("{class}: {message}"))
        });
    }
    result.map_err(|e| {
        RunError::new(
            RunErrorKind::Server,
            format!("{method}() could not be called: {e}"),
        )
    })
}

/// `call_user_func_array([$object, $method], $params)`, which goes through `__call`.
fn call_magic(
    object: &Zval,
    method: &str,
    params: Vec<&dyn IntoZvalDyn>,
) -> ext_php_rs::error::Result<Zval> {
    let mut callable = ZendHashTable::new();
    callable.push(object.shallow_clone())?;
    callable.push(method)?;
    let mut arguments = ZendHashTable::new();
    for param in params {
        arguments.push(param.as_zval(false)?)?;
    }
    ZendCallable::try_from_name("call_user_func_array")?.try_call(vec![&callable, &arguments])
}

fn is_false(zval: &Zval) -> bool {
    zval.bool() == Some(false) && !zval.is_long()
}

fn last_error(client: &Zval) -> Option<String> {
    call(client, "getLastError", vec![])
        .ok()
        .and_then(|e| e.string())
}

/// The message of a Predis error reply object, if the reply is one.
fn predis_error(reply: &Zval) -> Option<String> {
    let object = reply.object()?;
    let ce = ClassEntry::try_find("Predis\\Response\\ErrorInterface")?;
    if !object.instance_of(ce) {
        return None;
    }
    message_of(object)
}

/// `$throwable->getMessage()` (or a Predis error reply's).
fn message_of(object: &ext_php_rs::types::ZendObject) -> Option<String> {
    guarded(|| object.try_call_method("getMessage", vec![]))
        .ok()?
        .ok()?
        .string()
}

/// `host:port` of the client's connection, for messages; `None` when it cannot be told.
fn endpoint_of(client: &Zval, flavour: Flavour) -> Option<String> {
    let text = match flavour {
        Flavour::PhpRedis => {
            let host = call(client, "getHost", vec![]).ok()?.string()?;
            let port = call(client, "getPort", vec![]).ok()?.long()?;
            format!("{host}:{port}")
        }
        Flavour::Predis => {
            let connection = call(client, "getConnection", vec![]).ok()?;
            call(&connection, "__toString", vec![]).ok()?.string()?
        }
    };
    Some(text).filter(|t| !t.is_empty() && !t.contains('@'))
}
