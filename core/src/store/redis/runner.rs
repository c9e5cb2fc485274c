//! "Run this lock script": the one thing the Redis store needs from a connection. The native
//! connection (`native.rs`) implements it here; the extension implements it over PHP's `\Redis`,
//! `\RedisCluster` and Predis objects, so an app can lend the connection it already has.

use crate::store::redis::scripts::LockScript;

/// Why a script did not run. Messages are safe to show: endpoints only, never credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// The server could not be reached or the connection broke (refused, reset, timed out).
    Connection(String),
    /// The server answered with an error (wrong password, wrong key type, script error).
    Server(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Connection(m) | RunError::Server(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RunError {}

impl RunError {
    /// Whether the server answered that it is still loading its data after a restart (`LOADING`;
    /// the detail text is the same through redis-rs, phpredis and Predis): a wait tries again
    /// later, anything else ends it.
    pub fn is_loading(&self) -> bool {
        matches!(self, RunError::Server(m) if m.contains("Redis is loading the dataset"))
    }
}

/// What [`ScriptRunner::run_then_wait`] got: the script's reply, and the signal if one came.
pub type RanThenWaited = (i64, Option<Vec<u8>>);

/// Runs lock scripts against one Redis endpoint.
pub trait ScriptRunner {
    /// The endpoint for messages, e.g. `redis://10.0.0.5:6379/0` or `\Redis(10.0.0.5:6379)`.
    fn name(&self) -> &str;

    /// Runs `script` with `KEYS = keys` and `ARGV = args`; returns its integer reply.
    ///
    /// # Errors
    /// [`RunError`] when the script could not run or the server answered with an error.
    fn run(&self, script: &LockScript, keys: &[&[u8]], args: &[&[u8]]) -> Result<i64, RunError>;

    /// Waits up to `timeout` for a signal on the list `key` (BLPOP); true when one came.
    ///
    /// # Errors
    /// [`RunError`] when the server cannot be reached.
    fn wait_signal(&self, key: &[u8], timeout: std::time::Duration) -> Result<bool, RunError>;

    /// Runs `script`, and in the same round trip waits up to `timeout` for a signal on the list
    /// `key` (a pipelined BLPOP): the script's reply and the signal, if one came. The script is
    /// told (an extra argument) to push to `key` itself when it needs no wait, so that the wait
    /// ends at once. `None`: this runner cannot, and the caller runs and waits in turn.
    fn run_then_wait(
        &self,
        script: &LockScript,
        keys: &[&[u8]],
        args: &[&[u8]],
        key: &[u8],
        timeout: std::time::Duration,
    ) -> Option<Result<RanThenWaited, RunError>> {
        let _ = (script, keys, args, key, timeout);
        None
    }

    /// Whether this runner may be used where PHP must not be called (a `Drop`, another thread).
    fn is_native(&self) -> bool;

    /// A warning noticed while connecting (an eviction policy that can drop locks), once.
    fn take_warning(&self) -> Option<String> {
        None
    }
}
