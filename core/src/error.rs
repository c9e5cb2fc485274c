//! One error type for the engine. Each variant is named for what happened and maps to exactly one
//! PHP exception class (`src/error_map.rs` in the extension is the only place that knows those names).

use std::fmt;

/// Result of every fallible engine call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A boxed cause from below the engine (io, a Redis driver), kept for its message.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong, carrying the resource and the store's redacted name where known.
/// Messages never contain a token or a credential: stores only hand in redacted names.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A caller passed a value the engine cannot use (a lock directory that cannot be created, ...).
    #[error("{message}")]
    InvalidArgument { message: String },

    /// A TTL that is not a positive, finite number of seconds.
    #[error("{message}")]
    InvalidTtl { message: String },

    /// Someone else holds the lock, or (`not_held`) this key does not hold it.
    #[error("{}", conflict_message(resource, store, *not_held))]
    Conflict {
        resource: String,
        store: String,
        not_held: bool,
    },

    /// The lock's lifetime ran out before the operation completed.
    #[error("{message}")]
    Expired { message: String },

    /// The store itself failed (file system, network).
    #[error("{message}")]
    Storage {
        message: String,
        #[source]
        source: Option<Cause>,
    },

    /// The key is bound to this process (a flock handle) and cannot travel.
    #[error("The \"{resource}\" key cannot be serialized: {reason}.")]
    Unserializable { resource: String, reason: String },

    /// Acquiring (or extending) failed for a reason other than a conflict; `source` says why.
    #[error("{message}")]
    Acquiring {
        message: String,
        #[source]
        source: Box<Error>,
    },

    /// Releasing failed; `source` says why.
    #[error("{message}")]
    Releasing {
        message: String,
        #[source]
        source: Box<Error>,
    },
}

/// The kind of an [`Error`], cheap to copy and to match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// See [`Error::InvalidArgument`].
    InvalidArgument,
    /// See [`Error::InvalidTtl`].
    InvalidTtl,
    /// See [`Error::Conflict`].
    Conflict,
    /// See [`Error::Expired`].
    Expired,
    /// See [`Error::Storage`].
    Storage,
    /// See [`Error::Unserializable`].
    Unserializable,
    /// See [`Error::Acquiring`].
    Acquiring,
    /// See [`Error::Releasing`].
    Releasing,
}

impl Error {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidArgument { .. } => ErrorKind::InvalidArgument,
            Error::InvalidTtl { .. } => ErrorKind::InvalidTtl,
            Error::Conflict { .. } => ErrorKind::Conflict,
            Error::Expired { .. } => ErrorKind::Expired,
            Error::Storage { .. } => ErrorKind::Storage,
            Error::Unserializable { .. } => ErrorKind::Unserializable,
            Error::Acquiring { .. } => ErrorKind::Acquiring,
            Error::Releasing { .. } => ErrorKind::Releasing,
        }
    }

    /// True when someone else holds the lock.
    pub fn is_conflict(&self) -> bool {
        self.kind() == ErrorKind::Conflict
    }

    /// The engine error this one wraps (the PHP exception's `previous`), if any.
    pub fn cause(&self) -> Option<&Error> {
        match self {
            Error::Acquiring { source, .. } | Error::Releasing { source, .. } => Some(source),
            _ => None,
        }
    }

    /// Someone else holds `resource` in `store`.
    pub fn conflict(resource: String, store: &str) -> Self {
        Error::Conflict {
            resource,
            store: store.to_owned(),
            not_held: false,
        }
    }

    /// The key does not hold `resource` in `store` (never acquired, released, or lost).
    pub fn not_held(resource: String, store: &str) -> Self {
        Error::Conflict {
            resource,
            store: store.to_owned(),
            not_held: true,
        }
    }

    pub(crate) fn invalid_argument(message: impl fmt::Display) -> Self {
        Error::InvalidArgument {
            message: message.to_string(),
        }
    }

    pub(crate) fn storage(message: impl fmt::Display, source: impl Into<Cause>) -> Self {
        Error::Storage {
            message: message.to_string(),
            source: Some(source.into()),
        }
    }
}

fn conflict_message(resource: &str, store: &str, not_held: bool) -> String {
    if not_held {
        format!("The \"{resource}\" lock is not held by this key ({store}).")
    } else {
        format!("The \"{resource}\" lock is held by someone else ({store}).")
    }
}

/// At most this many characters of a server's own text go into a message.
const QUOTED_CHARS: usize = 200;

/// Text a server sent (an error reply, a host a sentinel or a slot map named), fit for a message:
/// control characters escaped, and at most [`QUOTED_CHARS`] characters, the cut said with the
/// whole length, so a hostile or broken server cannot flood a message, a log line or a terminal.
pub fn quoted(text: &str) -> String {
    let mut shown: String = text
        .chars()
        .take(QUOTED_CHARS)
        .flat_map(char::escape_debug)
        .collect();
    if text.chars().nth(QUOTED_CHARS).is_some() {
        shown.push_str(&format!("... ({} bytes in all, cut)", text.len()));
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acquiring_error_exposes_its_cause_for_the_previous_chain() {
        let conflict = Error::conflict("r".into(), "InMemoryStore");
        let err = Error::Acquiring {
            message: "Failed".into(),
            source: Box::new(conflict),
        };
        assert_eq!(err.kind(), ErrorKind::Acquiring);
        assert!(err.cause().is_some_and(Error::is_conflict));
        assert!(!err.is_conflict());
    }

    #[test]
    fn conflict_message_names_resource_and_store() {
        let err = Error::conflict("orders:42".into(), "FlockStore(/tmp)");
        let text = err.to_string();
        assert!(
            text.contains("orders:42") && text.contains("FlockStore(/tmp)"),
            "{text}"
        );
        let text = Error::not_held("orders:42".into(), "FlockStore(/tmp)").to_string();
        assert!(text.contains("not held by this key"), "{text}");
    }
}
