//! The native connection: one per process per DSN, kept across lock factories and FPM requests,
//! never across fork(). A child that inherits a connection leaks its copy without touching it (a
//! TLS close would write to the parent's socket) and opens its own.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use parking_lot::Mutex;
use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisConnectionInfo};

use crate::process::current_pid;
use crate::store::redis::dsn::{Dsn, Endpoint};
use crate::store::redis::runner::{RanThenWaited, RunError, ScriptRunner};
use crate::store::redis::scripts::LockScript;
use crate::Error;

/// Eviction policies that may drop a live lock key.
const EVICTING_POLICIES: [&str; 2] = ["allkeys-", "volatile-"];

/// The connection of one process to one DSN.
struct Slot {
    pid: u32,
    connection: Option<redis::Connection>,
    /// The eviction-policy check runs once per process and DSN.
    policy_checked: bool,
    warning: Option<String>,
}

impl Slot {
    /// Forgets a connection inherited through fork() without closing it.
    fn adopt(&mut self) {
        if self.pid != current_pid() {
            if let Some(inherited) = self.connection.take() {
                std::mem::forget(inherited);
            }
            self.pid = current_pid();
            self.policy_checked = false;
            self.warning = None;
        }
    }
}

/// Process-wide slots, one per distinct DSN text (secrets included, so two users never share).
static SLOTS: LazyLock<Mutex<HashMap<String, Arc<Mutex<Slot>>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// This process's slot named `name` (a DSN, or a DSN and a purpose), made on first use. Keyed
/// by pid too: a forked child gets slots of its own and never locks one its parent's refresher
/// thread might have held at the instant of the fork.
fn slot_for(name: &str) -> Arc<Mutex<Slot>> {
    SLOTS
        .lock()
        .entry(format!("{}/{name}", current_pid()))
        .or_insert_with(|| {
            Arc::new(Mutex::new(Slot {
                pid: current_pid(),
                connection: None,
                policy_checked: false,
                warning: None,
            }))
        })
        .clone()
}

/// A runner on the process's native connection for one DSN.
pub struct NativeRunner {
    dsn: Dsn,
    client: redis::Client,
    /// This runner's slot in the process that made the runner (`slot_pid`); other processes look
    /// up their own.
    slot: Arc<Mutex<Slot>>,
    slot_pid: u32,
    /// The name of the slot in `SLOTS` (holds the DSN's secrets: never shown).
    slot_name: String,
    name: String,
}

impl NativeRunner {
    /// A runner for `dsn_text`. Does not connect: the first script does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a malformed DSN or an unreadable CA file.
    pub fn new(dsn_text: &str) -> crate::Result<Self> {
        let dsn = Dsn::parse(dsn_text)?;
        let client = client_for(&dsn)?;
        let name = dsn.redacted();
        Ok(NativeRunner {
            dsn,
            client,
            slot: slot_for(dsn_text),
            slot_pid: current_pid(),
            slot_name: dsn_text.to_owned(),
            name,
        })
    }

    fn connect(&self) -> Result<redis::Connection, RunError> {
        let connection = self
            .client
            .get_connection_with_timeout(self.dsn.connect_timeout)
            .map_err(|e| self.error(&e))?;
        let timeout = Some(self.dsn.read_timeout);
        connection
            .set_read_timeout(timeout)
            .and_then(|()| connection.set_write_timeout(timeout))
            .map_err(|e| self.error(&e))?;
        Ok(connection)
    }

    fn error(&self, e: &redis::RedisError) -> RunError {
        let text = format!("Redis at {}: {e}", self.name);
        if e.is_io_error()
            || e.is_timeout()
            || e.is_connection_dropped()
            || e.is_connection_refusal()
        {
            RunError::Connection(text)
        } else {
            RunError::Server(text)
        }
    }
}

/// Warns when the server may evict lock keys. CONFIG may be refused (ACLs, managed services):
/// then nothing is said.
fn eviction_warning(connection: &mut redis::Connection, name: &str) -> Option<String> {
    let reply: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .query(connection)
        .ok()?;
    let policy = reply.get(1)?;
    EVICTING_POLICIES
        .iter()
        .any(|prefix| policy.starts_with(prefix))
        .then(|| {
            format!(
                "Redis at {name} uses maxmemory-policy {policy}: under memory pressure it may evict live lock keys, which silently breaks mutual exclusion. Use noeviction for lock data."
            )
        })
}

impl ScriptRunner for NativeRunner {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&self, script: &LockScript, keys: &[&[u8]], args: &[&[u8]]) -> Result<i64, RunError> {
        let mut invocation = script.script().prepare_invoke();
        for key in keys {
            invocation.key(*key);
        }
        for arg in args {
            invocation.arg(*arg);
        }
        self.with_connection(|connection| invocation.invoke::<i64>(connection))
    }

    fn wait_signal(&self, key: &[u8], timeout: Duration) -> Result<bool, RunError> {
        self.blocking(timeout, |connection, seconds| {
            let popped: Option<(Vec<u8>, Vec<u8>)> = redis::cmd("BLPOP")
                .arg(key)
                .arg(seconds)
                .query(connection)?;
            Ok(popped.is_some())
        })
    }

    fn run_then_wait(
        &self,
        script: &LockScript,
        keys: &[&[u8]],
        args: &[&[u8]],
        key: &[u8],
        timeout: Duration,
    ) -> Option<Result<RanThenWaited, RunError>> {
        Some(self.blocking(timeout, |connection, seconds| {
            let mut pipe = redis::pipe();
            pipe.cmd("EVALSHA")
                .arg(script.sha1())
                .arg(keys.len())
                .arg(keys)
                .arg(args)
                .cmd("BLPOP")
                .arg(key)
                .arg(seconds);
            let replies = match pipe.query::<(i64, Option<(Vec<u8>, Vec<u8>)>)>(connection) {
                // The server lost its scripts (restart, SCRIPT FLUSH): the wait ran its course
                // without the attempt. Load the script and do both again.
                Err(e)
                    if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
                {
                    redis::cmd("SCRIPT")
                        .arg("LOAD")
                        .arg(script.code())
                        .exec(connection)?;
                    pipe.query(connection)
                }
                other => other,
            }?;
            Ok((replies.0, replies.1.map(|(_, value)| value)))
        }))
    }

    fn is_native(&self) -> bool {
        true
    }

    fn take_warning(&self) -> Option<String> {
        self.current_slot().lock().warning.take()
    }
}

impl NativeRunner {
    /// A runner on a connection of its own for the same DSN (the background refresher's, so that
    /// it never waits behind a blocked wait of the PHP thread).
    pub fn twin(&self, purpose: &str) -> Self {
        let slot_name = format!("{}#{purpose}", self.slot_name);
        NativeRunner {
            dsn: self.dsn.clone(),
            client: self.client.clone(),
            slot: slot_for(&slot_name),
            slot_pid: current_pid(),
            slot_name,
            name: self.name.clone(),
        }
    }

    /// Runs a call that blocks in the server for up to `timeout` (handed over as BLPOP's
    /// seconds, decimals since Redis 6), with a socket timeout that outwaits it.
    fn blocking<T>(
        &self,
        timeout: Duration,
        mut call: impl FnMut(&mut redis::Connection, &str) -> redis::RedisResult<T>,
    ) -> Result<T, RunError> {
        let seconds = format!("{:.3}", timeout.as_secs_f64().max(0.001));
        let socket_timeout = Some(timeout + self.dsn.read_timeout);
        let normal_timeout = Some(self.dsn.read_timeout);
        self.with_connection(|connection| {
            connection.set_read_timeout(socket_timeout)?;
            let reply = call(connection, &seconds);
            connection.set_read_timeout(normal_timeout)?;
            reply
        })
    }

    /// This process's slot: the one made with the runner, or after a fork the child's own.
    fn current_slot(&self) -> Arc<Mutex<Slot>> {
        if self.slot_pid == current_pid() {
            Arc::clone(&self.slot)
        } else {
            slot_for(&self.slot_name)
        }
    }

    /// Runs `call` on this process's connection, opening it first when needed.
    fn with_connection<T>(
        &self,
        mut call: impl FnMut(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, RunError> {
        let slot = self.current_slot();
        let mut slot = slot.lock();
        slot.adopt();
        // A kept connection may have died since its last use (server restart, idle timeout): on a
        // connection error it is replaced once and the call made again. Every lock script is
        // idempotent for its token; after a lost reply a second run at most skips a fencing
        // number or repeats a wake-up signal, which no one can tell from a real one.
        let reused = slot.connection.is_some();
        for attempt in 0..2 {
            let slot = &mut *slot;
            let connection = match slot.connection.as_mut() {
                Some(connection) => connection,
                None => slot.connection.insert(self.connect()?),
            };
            if !slot.policy_checked {
                slot.warning = eviction_warning(connection, &self.name);
                slot.policy_checked = true;
            }
            match call(connection) {
                Ok(reply) => return Ok(reply),
                Err(e) => {
                    let error = self.error(&e);
                    if matches!(error, RunError::Connection(_)) {
                        slot.connection = None;
                        if reused && attempt == 0 {
                            continue;
                        }
                    }
                    return Err(error);
                }
            }
        }
        Err(RunError::Connection(format!(
            "Redis at {}: connection lost",
            self.name
        )))
    }
}

fn client_for(dsn: &Dsn) -> crate::Result<redis::Client> {
    let invalid = |why: String| Error::InvalidArgument {
        message: format!("Invalid Redis DSN for {}: {why}.", dsn.redacted()),
    };
    let addr = match &dsn.endpoint {
        Endpoint::Tcp {
            host,
            port,
            tls: false,
        } => ConnectionAddr::Tcp(host.clone(), *port),
        Endpoint::Tcp {
            host,
            port,
            tls: true,
        } => ConnectionAddr::TcpTls {
            host: host.clone(),
            port: *port,
            insecure: false,
            tls_params: None,
        },
        Endpoint::Unix(path) => ConnectionAddr::Unix(path.clone()),
    };
    let mut redis_info = RedisConnectionInfo::default()
        .set_db(dsn.db)
        .set_skip_set_lib_name();
    if let Some(user) = &dsn.username {
        redis_info = redis_info.set_username(user);
    }
    if let Some(password) = &dsn.password {
        redis_info = redis_info.set_password(password);
    }
    let info: ConnectionInfo = addr
        .into_connection_info()
        .map_err(|e| invalid(e.to_string()))?
        .set_redis_settings(redis_info);
    match &dsn.ca_file {
        None => redis::Client::open(info).map_err(|e| invalid(e.to_string())),
        Some(ca_file) => {
            let pem = std::fs::read(ca_file).map_err(|e| {
                invalid(format!(
                    "cannot read the CA file \"{}\": {e}",
                    ca_file.display()
                ))
            })?;
            let certificates = redis::TlsCertificates {
                client_tls: None,
                root_cert: Some(pem),
            };
            redis::Client::build_with_tls(info, certificates).map_err(|e| invalid(e.to_string()))
        }
    }
}
