//! What every call of one native transport carries down to its connections: the name for
//! messages, the DSN's timeouts and the deadline of the call (read once when the call starts, then
//! passed along), and the one place a redis-rs error is classified.

use std::time::{Duration, Instant};

use crate::store::redis::client::Bounds;
use crate::store::redis::cluster::Node;
use crate::store::redis::protocol::NOT_A_LOCK;
use crate::store::redis::replicas::Shortfall;
use crate::store::redis::transport::{RunError, RunErrorKind};
use crate::store::redis::wording::{self, node_name};

/// One call's view of its transport.
pub(super) struct Link<'a> {
    /// The DSN, redacted.
    pub name: &'a str,
    pub connect_timeout: Duration,
    pub read_timeout: Duration,
    pub tls: bool,
    /// No socket wait of the call lasts past this.
    pub deadline: Option<Instant>,
}

impl Link<'_> {
    /// `wanted`, or the time left to the deadline when that is shorter (at least 1 ms: a zero
    /// socket timeout would mean none at all).
    pub fn capped(&self, wanted: Duration) -> Duration {
        match self.deadline {
            Some(deadline) => wanted
                .min(deadline.saturating_duration_since(Instant::now()))
                .max(Duration::from_millis(1)),
            None => wanted,
        }
    }

    /// How long connecting may take, for the connect helpers (`client.rs`, `sentinel.rs`).
    pub fn bounds<R>(&self, use_them: impl FnOnce(&Bounds<'_>) -> R) -> R {
        let capped = |wanted| self.capped(wanted);
        let describe = |e: &redis::RedisError| self.describe(e);
        use_them(&Bounds {
            connect: self.connect_timeout,
            read: self.read_timeout,
            capped: &capped,
            describe: &describe,
        })
    }

    /// `e` as a call's error.
    pub fn error(&self, e: &redis::RedisError) -> RunError {
        self.error_at(e, None)
    }

    /// `e` as the error of a call on `node` (a cluster's node, named by the slot map or a
    /// redirect: the message names it, not only the DSN's seeds).
    pub fn error_at(&self, e: &redis::RedisError, node: Option<&Node>) -> RunError {
        let at = match node {
            Some((host, port)) => format!("{}, node {}", self.name, node_name(host, *port)),
            None => self.name.to_owned(),
        };
        RunError::new(kind_of(e), format!("Redis at {at}: {}", self.describe(e)))
    }

    /// An error of `kind` about this transport's server.
    pub fn failure(&self, kind: RunErrorKind, why: impl std::fmt::Display) -> RunError {
        RunError::new(kind, format!("Redis at {}: {why}", self.name))
    }

    /// A write too few replicas acknowledged, as the error the store releases the lock on.
    pub fn acknowledged(&self, shortfall: Option<Shortfall>) -> Result<(), RunError> {
        shortfall.map_or(Ok(()), |shortfall| {
            Err(self.failure(RunErrorKind::NotAcknowledged, shortfall))
        })
    }

    pub fn describe(&self, e: &redis::RedisError) -> String {
        let context = wording::Context {
            tls: self.tls,
            timeout: self.read_timeout,
        };
        wording::describe(e, context)
    }
}

/// What the store does about a redis-rs error.
fn kind_of(e: &redis::RedisError) -> RunErrorKind {
    if e.is_timeout() {
        return RunErrorKind::TimedOut;
    }
    if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
        return RunErrorKind::Connection;
    }
    match e.code() {
        Some("LOADING" | "TRYAGAIN" | "CLUSTERDOWN") => RunErrorKind::Loading,
        // A primary turned replica (a failover): another connection finds the new one.
        Some("READONLY" | "UNBLOCKED" | "MASTERDOWN") => RunErrorKind::Connection,
        Some("NOSCRIPT") => RunErrorKind::NoScript,
        Some(code) if code == NOT_A_LOCK => RunErrorKind::NotALock,
        _ => RunErrorKind::Server,
    }
}

/// A pipeline's error as the error of its first failed command, so that its reply's text (a
/// cluster redirect's slot and node, `TRYAGAIN`'s reason) is read as a single command's is.
pub(super) fn first_failure(e: redis::RedisError) -> redis::RedisError {
    match e.clone().into_server_errors() {
        Some(failures) => failures
            .first()
            .map_or(e, |(_, failure)| redis::RedisError::from(failure.clone())),
        None => e,
    }
}
