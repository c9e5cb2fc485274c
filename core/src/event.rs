//! What a lock tells its logger. The engine emits events; the extension turns them into PSR-3
//! calls. The message texts are symfony/lock's, as templates with `{resource}` and `{ttl}`, so log
//! pipelines built for symfony/lock keep matching.

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

/// One log event. `error` is the failure to attach as `exception` in the PSR-3 context.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    pub level: Level,
    pub message: &'static str,
    pub ttl: Option<f64>,
    pub error: Option<&'a Error>,
}

impl<'a> Event<'a> {
    pub(crate) fn new(level: Level, message: &'static str) -> Self {
        Event {
            level,
            message,
            ttl: None,
            error: None,
        }
    }

    pub(crate) fn with_error(mut self, error: &'a Error) -> Self {
        self.error = Some(error);
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
}
