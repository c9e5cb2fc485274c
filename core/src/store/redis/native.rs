//! The native connection: one per process per connection identity (what the DSN resolves to:
//! endpoint, credentials, database, TLS, timeouts), shared by every store on it (the table of
//! them is `connections.rs`). Never across fork(): connections are [`PerProcess`] values, so a
//! child that inherits one keeps its copy untouched (a TLS close would write to the parent's
//! socket) and opens its own. A Redis Cluster DSN has one such connection per node, each call
//! routed by its first key's hash slot (`native_cluster.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::process::PerProcess;
use crate::store::redis::client::{ConnectError, Connector};
use crate::store::redis::cluster::Node;
use crate::store::redis::connections::{slot_for, Slot};
use crate::store::redis::dsn::Dsn;
use crate::store::redis::protocol::{self, Signal};
use crate::store::redis::replicas::{self, ReplicaAck, Shortfall};
use crate::store::redis::scripts::LockScript;
use crate::store::redis::sentinel::Bounds;
use crate::store::redis::transport::{RanThenWaited, RunError, RunErrorKind, Transport};
use crate::store::redis::wording::{self, node_name};
use crate::store::PendingRelease;

/// A transport on the process's native connection for one DSN.
pub struct NativeTransport {
    dsn: Dsn,
    connector: Arc<Connector>,
    /// This process's slot (another process looks up its own).
    slot: PerProcess<Arc<Mutex<Slot>>>,
    /// The name of the slot in `SLOTS` (a digest of the connection identity).
    slot_name: String,
    /// No socket wait lasts past this (`Transport::set_deadline`); used by PHP's thread only.
    deadline: Mutex<Option<Instant>>,
    name: String,
    /// For a Redis Cluster DSN: this process's slot map and node connections.
    cluster: Option<ClusterLinks>,
}

impl NativeTransport {
    /// A transport for `dsn_text`. Does not connect: the first script does.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for a malformed DSN or an unreadable CA file.
    pub fn new(dsn_text: &str) -> crate::Result<Self> {
        let dsn = Dsn::parse(dsn_text)?;
        let connector = Arc::new(Connector::for_dsn(&dsn)?);
        let name = dsn.redacted();
        let slot_name = dsn.connection_identity();
        let cluster = ClusterLinks::for_dsn(&dsn);
        Ok(NativeTransport {
            dsn,
            connector,
            slot: PerProcess::new(),
            slot_name,
            deadline: Mutex::new(None),
            name,
            cluster,
        })
    }

    fn connect(&self, node: Option<&Node>) -> Result<redis::Connection, RunError> {
        let bounds = Bounds {
            connect: self.dsn.connect_timeout,
            read: self.dsn.read_timeout,
            capped: &|wanted| self.capped(wanted),
            describe: &|e| self.describe(e),
        };
        self.connector.connect(node, &bounds).map_err(|e| match e {
            ConnectError::Redis(e) => self.error_at(&e, node),
            ConnectError::NoPrimary(why) => RunError::new(
                RunErrorKind::Connection,
                format!("Redis at {}: {why}", self.name),
            ),
        })
    }

    /// `wanted`, or the time left to the deadline when that is shorter (at least 1 ms: a zero
    /// socket timeout would mean none at all).
    fn capped(&self, wanted: Duration) -> Duration {
        match *self.deadline.lock() {
            Some(deadline) => wanted
                .min(deadline.saturating_duration_since(Instant::now()))
                .max(Duration::from_millis(1)),
            None => wanted,
        }
    }

    /// The DSN's acknowledgement, its WAIT bounded by half the time left to the deadline: its
    /// reply must come before the socket's timeout (capped by the same deadline), or a wait
    /// would take the lock, lose the reply, and leave the lock behind.
    fn replicas(&self) -> Option<ReplicaAck> {
        let mut ack = self.dsn.replicas?;
        if let Some(deadline) = *self.deadline.lock() {
            let half_left = deadline.saturating_duration_since(Instant::now()) / 2;
            ack.timeout = ack.timeout.min(half_left).max(Duration::from_millis(1));
        }
        Some(ack)
    }

    /// A write too few replicas acknowledged, as the error the store releases the lock on.
    fn acknowledged(&self, shortfall: Option<Shortfall>) -> Result<(), RunError> {
        shortfall.map_or(Ok(()), |shortfall| {
            let message = format!("Redis at {}: {shortfall}", self.name);
            Err(RunError::new(RunErrorKind::NotAcknowledged, message))
        })
    }

    /// The one place a redis-rs error is classified.
    fn error(&self, e: &redis::RedisError) -> RunError {
        self.error_at(e, None)
    }

    /// `e` as the error of a call on `node` (a cluster's node, named by the slot map or a
    /// redirect: the message names it, not only the DSN's seeds).
    fn error_at(&self, e: &redis::RedisError, node: Option<&Node>) -> RunError {
        let at = match node {
            Some((host, port)) => format!("{}, node {}", self.name, node_name(host, *port)),
            None => self.name.clone(),
        };
        RunError::new(
            Self::kind_of(e),
            format!("Redis at {at}: {}", self.describe(e)),
        )
    }

    fn kind_of(e: &redis::RedisError) -> RunErrorKind {
        let kind = if e.is_timeout() {
            RunErrorKind::TimedOut
        } else if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
            RunErrorKind::Connection
        } else {
            match e.code() {
                Some("LOADING" | "TRYAGAIN" | "CLUSTERDOWN") => RunErrorKind::Loading,
                // A primary turned replica (a failover): another connection finds the new one.
                Some("READONLY" | "UNBLOCKED" | "MASTERDOWN") => RunErrorKind::Connection,
                Some("NOSCRIPT") => RunErrorKind::NoScript,
                Some(code) if code == crate::store::redis::protocol::NOT_A_LOCK => {
                    RunErrorKind::NotALock
                }
                _ => RunErrorKind::Server,
            }
        };
        kind
    }

    fn describe(&self, e: &redis::RedisError) -> String {
        let context = wording::Context {
            tls: self.dsn.endpoint.tls(),
            timeout: self.dsn.read_timeout,
        };
        wording::describe(e, context)
    }
}

/// A pipeline's error as the error of its first failed command, so that its reply's text (a
/// cluster redirect's slot and node, `TRYAGAIN`'s reason) is read as a single command's is.
fn first_failure(e: redis::RedisError) -> redis::RedisError {
    match e.clone().into_server_errors() {
        Some(failures) => failures
            .first()
            .map_or(e, |(_, failure)| redis::RedisError::from(failure.clone())),
        None => e,
    }
}

impl Transport for NativeTransport {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&self, script: &LockScript, keys: &[&[u8]], args: &[&[u8]]) -> Result<i64, RunError> {
        let describe = |e: &redis::RedisError| self.error(e).to_string();
        let ack = self.replicas().filter(|_| script.writes_lock());
        let wait = self.dsn.read_timeout + ack.map_or(Duration::ZERO, |ack| ack.timeout);
        let route = keys.first().copied().unwrap_or_default();
        let (reply, shortfall) =
            self.with_connection(route, wait, &mut |connection, unread, asking| {
                if asking {
                    redis::cmd("ASKING").exec(connection)?;
                }
                let reply = unread.run_behind(connection, script, keys, args, &describe)?;
                Ok((
                    reply,
                    replicas::check(ack, protocol::took(reply), connection)?,
                ))
            })?;
        self.acknowledged(shortfall)?;
        Ok(reply)
    }

    fn wait_signal(&self, list: &[u8], timeout: Duration) -> Result<Option<Signal>, RunError> {
        self.blocking(list, timeout, |connection, seconds, asking| {
            if asking {
                redis::cmd("ASKING").exec(connection)?;
            }
            let popped: Option<(Vec<u8>, Vec<u8>)> = redis::cmd("BLPOP")
                .arg(list)
                .arg(seconds)
                .query(connection)?;
            Ok(popped.and_then(|(_, item)| Signal::parse(&item)))
        })
    }

    fn run_then_wait(
        &self,
        script: &LockScript,
        keys: &[&[u8]],
        args: &[&[u8]],
        list: &[u8],
        timeout: Duration,
    ) -> Result<RanThenWaited, RunError> {
        let route = keys.first().copied().unwrap_or_default();
        self.blocking(route, timeout, |connection, seconds, asking| {
            let mut pipe = redis::pipe();
            if asking {
                pipe.cmd("ASKING").ignore();
            }
            pipe.cmd("EVALSHA")
                .arg(script.sha1())
                .arg(keys.len())
                .arg(keys)
                .arg(args);
            if asking {
                pipe.cmd("ASKING").ignore();
            }
            pipe.cmd("BLPOP").arg(list).arg(seconds);
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
            }
            .map_err(first_failure)?;
            let signal = replies.1.and_then(|(_, item)| Signal::parse(&item));
            // Taken by the attempt (a hand-over is acknowledged through its claim, wait.rs).
            let shortfall =
                replicas::check(self.replicas(), protocol::took(replies.0), connection)?;
            Ok(((replies.0, signal), shortfall))
        })
        .and_then(|(ran, shortfall)| self.acknowledged(shortfall).map(|()| ran))
    }

    fn take_warning(&self) -> Option<String> {
        match &self.cluster {
            Some(cluster) => cluster.take_warning(),
            None => self.slot().lock().warning.take(),
        }
    }

    fn cluster(&self) -> bool {
        self.cluster.is_some()
    }

    fn defers_release(&self) -> bool {
        self.dsn.deferred_release
    }

    fn acknowledges(&self) -> bool {
        self.dsn.replicas.is_some()
    }

    fn read_unread(&self) {
        // A cluster never defers a release (dsn.rs), so it has nothing unread.
        if self.cluster.is_none() {
            self.read_unread_in(&mut self.slot().lock());
        }
    }

    fn send(
        &self,
        script: &'static LockScript,
        keys: &[&[u8]],
        args: &[&[u8]],
    ) -> Result<PendingRelease, RunError> {
        if self.cluster.is_some() {
            self.run(script, keys, args)?;
            return Ok(PendingRelease::done());
        }
        let mut guard = self.slot().lock();
        let slot = &mut *guard;
        if let Some(connection) = slot.connection.as_mut() {
            match slot.unread.send(connection, script, keys, args) {
                Ok(pending) => return Ok(pending),
                Err(e) => slot.drop_connection(&self.error(&e).to_string()),
            }
        }
        // No connection to write to (a first command, or it just broke): run it now, on a new one.
        drop(guard);
        self.run(script, keys, args)?;
        Ok(PendingRelease::done())
    }

    fn set_deadline(&self, deadline: Option<Instant>) {
        *self.deadline.lock() = deadline;
    }

    fn for_background(&self) -> Option<Box<dyn Transport + Send + Sync>> {
        Some(Box::new(self.twin("refresher")))
    }
}

impl NativeTransport {
    /// A transport on a connection of its own for the same DSN (the background refresher's, so
    /// that it never waits behind a blocked wait of the PHP thread).
    fn twin(&self, purpose: &str) -> Self {
        NativeTransport {
            dsn: self.dsn.clone(),
            connector: Arc::clone(&self.connector),
            slot: PerProcess::new(),
            slot_name: format!("{}#{purpose}", self.slot_name),
            deadline: Mutex::new(None),
            name: self.name.clone(),
            cluster: ClusterLinks::for_dsn(&self.dsn),
        }
    }

    /// Runs a call that blocks in the server for up to `timeout` (handed over as BLPOP's
    /// seconds, decimals since Redis 6), with a socket timeout that outwaits it.
    fn blocking<T>(
        &self,
        route: &[u8],
        timeout: Duration,
        mut call: impl FnMut(&mut redis::Connection, &str, bool) -> redis::RedisResult<T>,
    ) -> Result<T, RunError> {
        let seconds = format!("{:.3}", timeout.as_secs_f64().max(0.001));
        let describe = |e: &redis::RedisError| self.error(e).to_string();
        let ack = self.dsn.replicas.map_or(Duration::ZERO, |ack| ack.timeout);
        self.with_connection(
            route,
            timeout + self.dsn.read_timeout + ack,
            &mut |connection, unread, asking| {
                unread.read_all(connection, &describe)?;
                call(connection, &seconds, asking)
            },
        )
    }

    /// Reads the replies of releases sent earlier on the slot's connection (they come before any
    /// later command's), with the usual read timeout capped by the deadline. A connection that
    /// breaks meanwhile is dropped; the caller then opens a new one.
    fn read_unread_in(&self, slot: &mut Slot) {
        let Some(connection) = slot.connection.as_mut() else {
            return;
        };
        if slot.unread.is_empty() {
            return;
        }
        let _ = set_read_timeout(
            connection,
            &mut slot.read_timeout,
            self.capped(self.dsn.read_timeout),
        );
        let describe = |e: &redis::RedisError| self.error(e).to_string();
        if slot.unread.read_all(connection, &describe).is_err() {
            slot.drop_connection("connection lost");
        }
    }

    /// This process's slot.
    fn slot(&self) -> &Arc<Mutex<Slot>> {
        self.slot.get_or_init(|| slot_for(&self.slot_name))
    }
}

#[path = "native_call.rs"]
mod native_call;
use native_call::{set_read_timeout, Call, Failure};

#[path = "native_cluster.rs"]
mod native_cluster;
use native_cluster::ClusterLinks;
