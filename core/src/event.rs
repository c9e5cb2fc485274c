//! What a lock tells its logger. The engine emits events; the extension turns them into PSR-3
//! calls. The message texts are symfony/lock's, as templates with `{resource}` and `{ttl}`, so log
//! pipelines built for symfony/lock keep matching.

use std::time::Duration;

use crate::Error;

/// PSR-3 levels the lock uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Debug,
    Info,
    Notice,
    Warning,
}

impl Level {
    /// The PSR-3 level name.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Notice => "notice",
            Level::Warning => "warning",
        }
    }
}

/// One log event: its figures go into the PSR-3 context under their field names (`ttl`, `wait`,
/// `hold` and `timeout` in seconds, `count`), and `error` as `exception`.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    pub level: Level,
    pub message: &'static str,
    pub ttl: Option<f64>,
    /// How long the acquire waited.
    pub wait: Option<f64>,
    /// How long the lock was held (on release).
    pub hold: Option<f64>,
    /// How long the wait was allowed to take.
    pub timeout: Option<f64>,
    /// How often it happened (the background refresher's outcomes since the last call).
    pub count: Option<u64>,
    pub error: Option<&'a Error>,
    /// The error is an earlier call's, found out only now (a deferred release's reply): the
    /// call that reports it does not end with it.
    pub earlier: bool,
}

impl<'a> Event<'a> {
    pub(crate) fn new(level: Level, message: &'static str) -> Self {
        Event {
            level,
            message,
            ttl: None,
            wait: None,
            hold: None,
            timeout: None,
            count: None,
            error: None,
            earlier: false,
        }
    }

    pub(crate) fn with_error(mut self, error: &'a Error) -> Self {
        self.error = Some(error);
        self
    }

    /// The error of an earlier call, reported now.
    pub(crate) fn with_earlier_error(mut self, error: &'a Error) -> Self {
        self.error = Some(error);
        self.earlier = true;
        self
    }

    pub(crate) fn waited(mut self, wait: Duration) -> Self {
        self.wait = Some(wait.as_secs_f64());
        self
    }

    pub(crate) fn held(mut self, hold: Option<Duration>) -> Self {
        self.hold = hold.map(|hold| hold.as_secs_f64());
        self
    }

    pub(crate) fn allowed(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout.as_secs_f64());
        self
    }

    pub(crate) fn counted(mut self, count: u64) -> Self {
        self.count = Some(count);
        self
    }
}

/// Receives a lock's events. Implementations must not fail: logging never changes an outcome.
pub trait EventSink {
    fn emit(&mut self, event: Event<'_>);
}

/// Drops every event: for auto-release from `Drop`, where nothing may call into PHP.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl EventSink for Silent {
    fn emit(&mut self, _event: Event<'_>) {}
}

/// The message templates, symfony/lock's texts.
pub(crate) mod messages {
    pub const ACQUIRED: &str = "Successfully acquired the \"{resource}\" lock.";
    pub const ACQUIRED_READ: &str = "Successfully acquired the \"{resource}\" lock for reading.";
    pub const CONFLICT: &str =
        "Failed to acquire the \"{resource}\" lock. Someone else already acquired the lock.";
    pub const ACQUIRE_FAILED: &str = "Failed to acquire the \"{resource}\" lock.";
    pub const REFRESHED: &str = "Expiration defined for \"{resource}\" lock for \"{ttl}\" seconds.";
    pub const REFRESH_CONFLICT: &str =
        "Failed to define an expiration for the \"{resource}\" lock, someone else acquired the lock.";
    pub const REFRESH_FAILED: &str = "Failed to define an expiration for the \"{resource}\" lock.";
    pub const RELEASED: &str = "Successfully released the \"{resource}\" lock.";
    pub const RELEASE_FAILED: &str = "Failed to release the \"{resource}\" lock.";
    // Deadbolt's own: symfony/lock has no deadlines and no background refresher.
    pub const TIMED_OUT: &str =
        "Failed to acquire the \"{resource}\" lock within {timeout} seconds.";
    pub const REFRESHED_IN_BACKGROUND: &str =
        "Expiration of the \"{resource}\" lock put off {count} times in the background.";
    pub const BACKGROUND_REFRESH_FAILED: &str =
        "Failed {count} times to put off the expiration of the \"{resource}\" lock in the background.";
    pub const FORCE_RELEASED: &str =
        "The \"{resource}\" lock was released by force, whoever held it ({count} holders).";
    pub const LOST_ON_REFRESH: &str =
        "The \"{resource}\" lock was lost: the store no longer has it (released by force, or its lock file removed).";
    pub const LOST: &str =
        "The \"{resource}\" lock was lost: the background refresher found it expired or taken by someone else.";
}
