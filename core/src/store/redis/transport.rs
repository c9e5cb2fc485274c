//! What the Redis store needs from a connection: run a lock script, and wait on a list (BLPOP).
//! The native connection (`native/`) implements it here; the extension implements it over PHP's
//! `\Redis`, `\RedisCluster` and Predis objects, so an app can lend the connection it already has.

use std::time::{Duration, Instant};

use crate::store::redis::calls::ScriptCall;
use crate::store::redis::protocol::{Signal, NOT_A_LOCK};
use crate::store::PendingRelease;

/// Why a script or a wait did not run, classified once by the transport that saw it (from the
/// client library's error kinds where it has them, from the reply text where it has not), so the
/// store never parses messages. Messages are safe to show: endpoints only, never credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunError {
    kind: RunErrorKind,
    message: String,
}

/// The kinds of [`RunError`] the store acts on differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunErrorKind {
    /// The server could not be reached or the connection broke (refused, reset).
    Connection,
    /// The server did not answer within the socket timeout (or the time left to a deadline): it
    /// may be paused (`CLIENT PAUSE`), busy or gone. A wait with a deadline tries again.
    TimedOut,
    /// The server cannot serve the key for now: it is still loading its data after a restart
    /// (`LOADING`), or, in a Redis Cluster, the key's slot is being migrated (`TRYAGAIN`: a
    /// script's keys are not all on one side yet) or has no primary (`CLUSTERDOWN`). A wait
    /// tries again.
    Loading,
    /// The server does not know the script (`NOSCRIPT`): the transport loads it and retries.
    NoScript,
    /// The key holds something other than a lock (the scripts' [`NOT_A_LOCK`] error); the message
    /// says what it holds.
    NotALock,
    /// Any other error reply (wrong password, missing permission, script error).
    Server,
    /// The script took or extended the lock, but too few replicas acknowledged the write in time
    /// (`replicas` on a DSN, `replicas.rs`): the lock must not count, and is released.
    NotAcknowledged,
}

impl RunError {
    /// An error of `kind` described by `message`.
    pub fn new(kind: RunErrorKind, message: impl Into<String>) -> Self {
        RunError {
            kind,
            message: message.into(),
        }
    }

    /// A server error reply by its text, as PHP clients hand it over: the kind is read from the
    /// reply's code (`LOADING`, `NOSCRIPT`, the scripts' own), `context` goes in front.
    pub fn from_reply(context: &str, reply: &str) -> Self {
        let code = reply.split_whitespace().next().unwrap_or_default();
        let kind = match code {
            "LOADING" | "TRYAGAIN" | "CLUSTERDOWN" => RunErrorKind::Loading,
            "NOSCRIPT" => RunErrorKind::NoScript,
            _ if reply.contains(NOT_A_LOCK) => RunErrorKind::NotALock,
            _ => RunErrorKind::Server,
        };
        RunError::new(kind, format!("{context}{reply}"))
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> RunErrorKind {
        self.kind
    }

    /// For [`RunErrorKind::NotALock`]: what the key holds instead, from the script's message.
    pub fn not_a_lock_detail(&self) -> Option<&str> {
        if self.kind != RunErrorKind::NotALock {
            return None;
        }
        let (_, what) = self.message.split_once(NOT_A_LOCK)?;
        Some(what.trim_matches(|c: char| c == ':' || c == '"' || c.is_whitespace()))
    }
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RunError {}

/// A script's reply and the signal its waiter read from its grant list, if one came.
pub type RanThenWaited = (i64, Option<Signal>);

/// Runs lock scripts against one Redis endpoint. A `deadline` bounds every socket wait of a call
/// (connecting, the command, a blocking pop) where the transport can bound them; a PHP client,
/// whose timeouts are the application's, cannot.
pub trait Transport {
    /// The endpoint for messages, e.g. `redis://10.0.0.5:6379/0` or `\Redis(10.0.0.5:6379)`.
    fn name(&self) -> &str;

    /// Runs a script; returns its integer reply.
    ///
    /// # Errors
    /// [`RunError`] when the script could not run or the server answered with an error.
    fn run(&self, call: &ScriptCall, deadline: Option<Instant>) -> Result<i64, RunError>;

    /// Runs a script that answers with text (an operator's `inspect`); returns its bytes.
    ///
    /// # Errors
    /// [`RunError`] when the script could not run or the server answered with an error.
    fn fetch(&self, call: &ScriptCall, deadline: Option<Instant>) -> Result<Vec<u8>, RunError>;

    /// Waits up to `timeout` for a signal on the list `list` (BLPOP).
    ///
    /// # Errors
    /// [`RunError`] when the server cannot be reached.
    fn wait_signal(
        &self,
        list: &[u8],
        timeout: Duration,
        deadline: Option<Instant>,
    ) -> Result<Option<Signal>, RunError>;

    /// Runs a script, then waits up to `timeout` for a signal on `list`. The script pushes a
    /// signal of its own when there is nothing to wait for (the protocol's `taken` and `soon`),
    /// so the wait then ends at once. This default takes two round trips; a transport that can
    /// pipeline sends both in one.
    ///
    /// # Errors
    /// [`RunError`] when the script could not run or the server cannot be reached.
    fn run_then_wait(
        &self,
        call: &ScriptCall,
        list: &[u8],
        timeout: Duration,
        deadline: Option<Instant>,
    ) -> Result<RanThenWaited, RunError> {
        let reply = self.run(call, deadline)?;
        Ok((reply, self.wait_signal(list, timeout, deadline)?))
    }

    /// Whether releases on this transport are sent without waiting for their reply
    /// (`release=deferred` on a native connection).
    fn defers_release(&self) -> bool {
        false
    }

    /// Whether locks leave a holder record beside them (`records=off` on a DSN: not).
    fn records(&self) -> bool {
        true
    }

    /// Whether a lock this transport writes counts only once replicas acknowledged it (`replicas`
    /// on a DSN): a script that writes a lock then fails with [`RunErrorKind::NotAcknowledged`]
    /// when too few did.
    fn acknowledges(&self) -> bool {
        false
    }

    /// Sends a script and returns before its reply is read (`pending.rs`); the handle learns the
    /// outcome later. This default, for transports that cannot defer, runs it now.
    ///
    /// # Errors
    /// [`RunError`] when the script could not be sent (or, run now, failed).
    fn send(&self, call: &ScriptCall) -> Result<PendingRelease, RunError> {
        self.run(call, None)?;
        Ok(PendingRelease::done())
    }

    /// Reads the replies of scripts sent without waiting, now (a transport that never defers has
    /// none).
    fn read_unread(&self) {}

    /// Whether the server is a Redis Cluster: the store then refuses resource names whose
    /// companion keys cannot share their hash slot (`keys::co_slotted`).
    fn cluster(&self) -> bool {
        false
    }

    /// A warning noticed while connecting (an eviction policy that can drop locks), once.
    fn take_warning(&self) -> Option<String> {
        None
    }

    /// A connection of its own to the same server for the background refresher, which must never
    /// wait behind a blocked wait of the PHP thread; `None` when this transport can only be used
    /// from PHP's thread (a PHP client object).
    fn for_background(&self) -> Option<Box<dyn Transport + Send + Sync>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_classified_by_their_code() {
        let loading = RunError::from_reply("", "LOADING Redis is loading the dataset in memory");
        assert_eq!(loading.kind(), RunErrorKind::Loading);
        let migrating = RunError::from_reply("", "TRYAGAIN Multiple keys request during rehashing");
        assert_eq!(migrating.kind(), RunErrorKind::Loading);
        assert_eq!(
            RunError::from_reply("x: ", "NOSCRIPT No matching script").kind(),
            RunErrorKind::NoScript
        );
        let wrong = RunError::from_reply(
            "Redis through \\Redis: ",
            "DEADBOLT_WRONGTYPE the key holds a hash, not a lock",
        );
        assert_eq!(wrong.kind(), RunErrorKind::NotALock);
        assert_eq!(
            wrong.not_a_lock_detail(),
            Some("the key holds a hash, not a lock")
        );
        assert_eq!(
            RunError::from_reply("", "NOPERM no permission").kind(),
            RunErrorKind::Server
        );
    }
}
