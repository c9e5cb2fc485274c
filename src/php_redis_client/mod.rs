//! The Redis store over a PHP client the app already has: phpredis' `\Redis` / `\RedisCluster` or
//! a Predis client. Scripts run through the object's own methods (EVALSHA, then EVAL on NOSCRIPT),
//! so its connection, prefix and auth settings apply. Only ever used on PHP's thread, inside a PHP
//! call: locks on it are `StoreRef::Lent`, which keeps them out of `Drop`, and it offers no
//! connection for the background refresher. Each client class speaks its own dialect
//! (`dialect.rs`): how it runs a script and a blocking pop, and what its exceptions mean; errors
//! are classified there, once.
//! A client whose connection this process still shares with its parent (connected before `fork()`)
//! is refused before anything is sent, and an error out of step names that as its likely cause
//! (`deadbolt_core::fork_sharing`, which asks `/proc`).

mod dialect;

use std::cell::Cell;
use std::time::{Duration, Instant};

use deadbolt_core::{RunError, RunErrorKind, ScriptCall, Sharing, Signal, Transport};
use ext_php_rs::convert::IntoZvalDyn;
use ext_php_rs::types::{ZendCallable, ZendHashTable, Zval};

use crate::php_call::guarded;
use crate::zend_object::{take_pending_exception, ParkedException};
use dialect::Dialect;

/// The app's client object, and how to speak with it.
struct Client {
    object: Zval,
    dialect: &'static dyn Dialect,
    /// `\Class(host:port)`, for messages.
    name: String,
    /// Whether this process shares the client's connection with its parent, as found at the start
    /// of the current call: a failure of the call names a shared connection as its likely cause.
    sharing: Cell<Sharing>,
}

impl Client {
    /// Calls `$client->method(...$params)`; an exception it throws is the error.
    fn call(&self, method: &str, params: Vec<&dyn IntoZvalDyn>) -> Result<Zval, RunError> {
        self.call_on(&self.object, method, params)
    }

    /// Calls a method of another object of the client (Predis' connection).
    fn call_on(
        &self,
        object: &Zval,
        method: &str,
        params: Vec<&dyn IntoZvalDyn>,
    ) -> Result<Zval, RunError> {
        call(object, method, params, self.dialect)
    }

    fn name(&self) -> &str {
        &self.name
    }

    /// A server's error reply (or its absence), classified by its code. A failure without a reply
    /// is what a connection out of step gets (another process read the reply): the hint says so.
    fn server_error(&self, error: Option<String>) -> RunError {
        match error {
            Some(error) => RunError::from_reply(&format!("Redis through {}: ", self.name), &error),
            None => RunError::new(
                RunErrorKind::Server,
                format!(
                    "Redis through {}: the script failed without an error message{}",
                    self.name,
                    self.hint(true)
                ),
            ),
        }
    }

    /// Refuses, before anything is sent, a client whose connection this process shares with its
    /// parent (connected before `fork()`); keeps the verdict for the messages of the call's errors.
    fn check_not_shared(&self) -> Result<(), RunError> {
        let id = self
            .object
            .object()
            .map_or(0, |object| u64::from(object.handle));
        let sharing = deadbolt_core::fork_sharing(id, || self.dialect.peer(self));
        self.sharing.set(sharing);
        match sharing.refusal(&self.name) {
            Some(refusal) => Err(RunError::new(RunErrorKind::Server, refusal)),
            None => Ok(()),
        }
    }

    /// A shared connection as the likely cause of a failure, when it may be one (`out_of_step`: a
    /// reply that is not the one asked for, or none).
    fn hint(&self, out_of_step: bool) -> String {
        self.sharing.get().hint(out_of_step).unwrap_or_default()
    }

    /// A connection failure says which client it came through (server errors already do).
    fn through(&self, e: RunError) -> RunError {
        if e.kind() == RunErrorKind::Connection {
            return RunError::new(
                RunErrorKind::Connection,
                format!("Redis through {}: {e}{}", self.name, self.hint(false)),
            );
        }
        e
    }

    /// A reply of the wrong shape.
    fn unexpected(&self, what: &str, reply: &Zval) -> RunError {
        RunError::new(
            RunErrorKind::Server,
            format!(
                "Redis through {}: {what} answered with {}, not a reply Deadbolt understands.{}",
                self.name,
                reply.get_type(),
                self.hint(true)
            ),
        )
    }
}

/// A transport over a PHP Redis client object.
pub struct PhpClientTransport {
    client: Client,
}

impl PhpClientTransport {
    /// A transport over the client object in `connection`, or `None` when it is not a supported client.
    pub fn new(connection: &Zval) -> Option<Self> {
        let object = connection.object()?;
        let dialect = dialect::of(object)?;
        let class = crate::args::class_name(object);
        let mut client = Client {
            object: connection.shallow_clone(),
            dialect,
            name: format!("\\{class}"),
            sharing: Cell::new(Sharing::Alone),
        };
        let endpoint = dialect
            .endpoint(&client)
            .filter(|text| !text.is_empty() && !text.contains('@'));
        if let Some(endpoint) = endpoint {
            client.name = format!("\\{class}({endpoint})");
        }
        Some(PhpClientTransport { client })
    }
}

impl PhpClientTransport {
    /// Runs `call`'s script through the client (EVALSHA, EVAL when the server lacks it).
    fn run_script(&self, call: &ScriptCall) -> Result<Zval, RunError> {
        let client = &self.client;
        client.dialect.check_runs_commands(client)?;
        client.check_not_shared()?;
        let key_count = i64::try_from(call.keys().len()).unwrap_or(1);
        let argv: Vec<Zval> = call
            .keys()
            .iter()
            .chain(call.args())
            .map(|bytes| {
                let mut zval = Zval::new();
                zval.set_binary(bytes.clone());
                zval
            })
            .collect();
        client
            .dialect
            .run_script(client, call.script(), argv, key_count)
            .map_err(|e| client.through(e))
    }
}

impl Transport for PhpClientTransport {
    fn name(&self) -> &str {
        &self.client.name
    }

    fn cluster(&self) -> bool {
        self.client.dialect.cluster()
    }

    /// The client's own timeouts bound its calls: `_deadline` cannot.
    fn run(&self, call: &ScriptCall, _deadline: Option<Instant>) -> Result<i64, RunError> {
        let reply = self.run_script(call)?;
        // Every lock script answers an integer, which phpredis and Predis give as a PHP int;
        // anything else is not a reply of the script (read as 0 it would pass for "held").
        reply
            .long()
            .ok_or_else(|| self.client.unexpected("the lock script", &reply))
    }

    /// The client's own timeouts bound its calls: `_deadline` cannot.
    fn fetch(&self, call: &ScriptCall, _deadline: Option<Instant>) -> Result<Vec<u8>, RunError> {
        let reply = self.run_script(call)?;
        reply
            .binary::<u8>()
            .ok_or_else(|| self.client.unexpected("the inspect script", &reply))
    }

    /// A blocking wait through the client (BLPOP): a hand-over reaches a waiter at once here too.
    /// The client's own read timeout must outlast it (phpredis and Predis default to PHP's
    /// `default_socket_timeout`, 60 s).
    fn wait_signal(
        &self,
        list: &[u8],
        timeout: Duration,
        _deadline: Option<Instant>,
    ) -> Result<Option<Signal>, RunError> {
        let client = &self.client;
        client.dialect.check_runs_commands(client)?;
        client.check_not_shared()?;
        let seconds = format!("{:.3}", timeout.as_secs_f64().max(0.001));
        let reply = client
            .dialect
            .blocking_pop(client, list, &seconds)
            .map_err(|e| client.through(e))?;
        // BLPOP answers [list, item] when it popped; nil when it timed out, which phpredis gives as
        // null or false, and \RedisCluster's raw command as an empty array.
        if reply.is_null() || is_false(&reply) {
            return Ok(None);
        }
        let popped = reply
            .array()
            .ok_or_else(|| client.unexpected("BLPOP", &reply))?;
        if popped.is_empty() {
            return Ok(None);
        }
        let item = popped
            .get_index(1)
            .and_then(|item| item.binary::<u8>())
            .ok_or_else(|| client.unexpected("BLPOP", &reply))?;
        Ok(Signal::parse(&item))
    }
}

/// Calls `$object->method(...$params)`. An exception the client throws is taken from the engine
/// and returned as an error: a connection failure, or a server error reply (Predis).
fn call(
    object: &Zval,
    method: &str,
    params: Vec<&dyn IntoZvalDyn>,
    dialect: &dyn Dialect,
) -> Result<Zval, RunError> {
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
        let message = crate::args::message_of(&exception).unwrap_or_default();
        // A server's error reply, or else the connection failed: the client's dialect tells.
        return Err(if dialect.is_reply(&exception, &message) {
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

/// A `false` reply (not an integer 0).
fn is_false(zval: &Zval) -> bool {
    zval.bool() == Some(false) && !zval.is_long()
}

/// `$throwable->getMessage()` (or a Predis error reply's).
/// Calls PHP's function `name(...$params)` (one of PHP's own, which runs no application code); `None`
/// when it fails or throws (the exception is dropped: it was ours).
fn function(name: &str, params: Vec<&dyn IntoZvalDyn>) -> Option<Zval> {
    let _parked = crate::php_call::exception_in_flight()
        .then(ParkedException::park)
        .flatten();
    let result = guarded(|| ZendCallable::try_from_name(name)?.try_call(params));
    if take_pending_exception().is_some() {
        return None;
    }
    result.ok()?.ok()
}
