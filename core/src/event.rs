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

/// The message templates a lock or a semaphore logs, with `{resource}` (and `{ttl}`, `{count}`,
/// `{timeout}`) left for the logger: symfony/lock's texts for a lock, symfony/semaphore's for a
/// semaphore (whose TTL is `{ttlInSecond}`, as there), and Deadbolt's own where neither has one.
#[derive(Debug)]
pub(crate) struct Words {
    /// "lock" or "semaphore", in the messages of errors.
    pub noun: &'static str,
    pub acquired: &'static str,
    pub acquired_read: &'static str,
    pub conflict: &'static str,
    pub acquire_failed: &'static str,
    pub refreshed: &'static str,
    pub refresh_conflict: &'static str,
    pub refresh_failed: &'static str,
    pub released: &'static str,
    pub release_failed: &'static str,
    pub timed_out: &'static str,
    pub refreshed_in_background: &'static str,
    pub background_refresh_failed: &'static str,
    pub force_released: &'static str,
    pub lost_on_refresh: &'static str,
    pub lost: &'static str,
}

/// A lock's: symfony/lock's texts.
pub(crate) const LOCK: Words = Words {
    noun: "lock",
    acquired: "Successfully acquired the \"{resource}\" lock.",
    acquired_read: "Successfully acquired the \"{resource}\" lock for reading.",
    conflict: "Failed to acquire the \"{resource}\" lock. Someone else already acquired the lock.",
    acquire_failed: "Failed to acquire the \"{resource}\" lock.",
    refreshed: "Expiration defined for \"{resource}\" lock for \"{ttl}\" seconds.",
    refresh_conflict:
        "Failed to define an expiration for the \"{resource}\" lock, someone else acquired the lock.",
    refresh_failed: "Failed to define an expiration for the \"{resource}\" lock.",
    released: "Successfully released the \"{resource}\" lock.",
    release_failed: "Failed to release the \"{resource}\" lock.",
    // Deadbolt's own: symfony/lock has no deadlines and no background refresher.
    timed_out: "Failed to acquire the \"{resource}\" lock within {timeout} seconds.",
    refreshed_in_background:
        "Expiration of the \"{resource}\" lock put off {count} times in the background.",
    background_refresh_failed:
        "Failed {count} times to put off the expiration of the \"{resource}\" lock in the background.",
    force_released:
        "The \"{resource}\" lock was released by force, whoever held it ({count} holders).",
    lost_on_refresh:
        "The \"{resource}\" lock was lost: the store no longer has it (released by force, or its lock file removed).",
    lost: "The \"{resource}\" lock was lost: the background refresher found it expired or taken by someone else.",
};

/// A semaphore's: symfony/semaphore's texts (it logs no release and has no shared mode).
pub(crate) const SEMAPHORE: Words = Words {
    noun: "semaphore",
    acquired: "Successfully acquired the \"{resource}\" semaphore.",
    acquired_read: "Successfully acquired the \"{resource}\" semaphore.",
    conflict: "Failed to acquire the \"{resource}\" semaphore. Someone else already acquired the semaphore.",
    acquire_failed: "Failed to acquire the \"{resource}\" semaphore.",
    refreshed: "Expiration defined for \"{resource}\" semaphore for \"{ttlInSecond}\" seconds.",
    refresh_conflict:
        "Failed to define an expiration for the \"{resource}\" semaphore, the semaphore has expired.",
    refresh_failed: "Failed to define an expiration for the \"{resource}\" semaphore.",
    released: "Successfully released the \"{resource}\" semaphore.",
    release_failed: "Failed to release the \"{resource}\" semaphore.",
    timed_out: "Failed to acquire the \"{resource}\" semaphore within {timeout} seconds.",
    refreshed_in_background:
        "Expiration of the \"{resource}\" semaphore put off {count} times in the background.",
    background_refresh_failed:
        "Failed {count} times to put off the expiration of the \"{resource}\" semaphore in the background.",
    force_released:
        "The \"{resource}\" semaphore was released by force, whoever held it ({count} holders).",
    lost_on_refresh:
        "The \"{resource}\" semaphore was lost: the store no longer has it (released by force, or its slot file removed).",
    lost: "The \"{resource}\" semaphore was lost: the background refresher found it expired or taken by someone else.",
};
