//! Who holds a resource and who waits for it, as an operator asks (`inspect`), and the record a
//! lock leaves beside symfony/lock's data so that the answer says more than "some token": the
//! host, the process, when it was taken and an optional caller label (a job id).
//!
//! A record never holds a secret. Tokens are shown only as a short digest ([`digest`]), which a
//! holder can match against its own key and nobody can turn back into the token.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::process::PerProcess;
use crate::store::Mode;
use crate::{Error, Result};

/// Longest caller label, in bytes.
pub const MAX_LABEL_BYTES: usize = 128;
/// Environment variables a process's default label comes from, in order: ours, then systemd's
/// id of the unit's run (one per start of a service or timer job).
const LABEL_VARIABLES: [&str; 2] = ["DEADBOLT_LABEL", "INVOCATION_ID"];
/// Hex digits of a token's digest: 48 bits, enough to tell a resource's holders apart.
pub(crate) const DIGEST_HEX: usize = 12;
/// Separates a record's fields on the wire; never in a host name or a label.
const SEPARATOR: char = '\t';

/// The short, one-way digest of an owner token under which inspection shows it: the first hex
/// digits of its SHA-1, which a Redis script computes too (`redis.sha1hex`), so tokens never
/// leave the server to be shown.
pub fn digest(token: &str) -> String {
    let mut hex = sha1_smol::Sha1::from(token.as_bytes()).digest().to_string();
    hex.truncate(DIGEST_HEX);
    hex
}

/// A caller label checked: at most [`MAX_LABEL_BYTES`], no control characters (a record is one
/// line of tab-separated fields). An empty label is no label.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the rule.
pub fn checked_label(label: &str) -> Result<Option<String>> {
    if label.len() > MAX_LABEL_BYTES || label.chars().any(char::is_control) {
        return Err(Error::InvalidArgument {
            message: format!(
                "A lock label must be at most {MAX_LABEL_BYTES} bytes of text without control \
                 characters (tabs, newlines); got {} bytes. Use a job or request id.",
                label.len()
            ),
        });
    }
    Ok((!label.is_empty()).then(|| label.to_owned()))
}

/// Who this process is, for its records: host name and the label its environment gives
/// (`DEADBOLT_LABEL`, else systemd's `INVOCATION_ID`). Read once per process.
#[derive(Debug, Clone)]
struct Process {
    host: String,
    label: Option<String>,
}

static PROCESS: PerProcess<Process> = PerProcess::new();

/// Reads this process's host and label now (`crate::threads`: before PHP starts threads).
pub(crate) fn set_up() {
    this_process();
}

fn this_process() -> &'static Process {
    PROCESS.get_or_init(|| Process {
        host: host_name(),
        label: LABEL_VARIABLES
            .iter()
            .filter_map(|name| std::env::var(name).ok())
            .find_map(|value| checked_label(&value).ok().flatten()),
    })
}

/// The label a process's environment gives (`/proc/PID/environ`: NUL-separated `NAME=value`).
pub(crate) fn label_from_environ(environ: &[u8]) -> Option<String> {
    let value_of = |name: &str| {
        environ.split(|b| *b == 0).find_map(|entry| {
            let value = entry.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
            checked_label(&String::from_utf8_lossy(value))
                .ok()
                .flatten()
        })
    };
    LABEL_VARIABLES.iter().find_map(|name| value_of(name))
}

/// The node name, without characters a record cannot hold.
fn host_name() -> String {
    let uname = rustix::system::uname();
    let name = uname.nodename().to_string_lossy();
    name.chars()
        .filter(|c| !c.is_control() && *c != ' ')
        .collect()
}

/// The record a lock of this process leaves: `pid TAB host TAB label`, with `label` the key's
/// own when it has one, else the process's default.
pub fn record(label: Option<&str>) -> String {
    let process = this_process();
    let label = label.or(process.label.as_deref()).unwrap_or("");
    format!(
        "{}{SEPARATOR}{}{SEPARATOR}{label}",
        std::process::id(),
        process.host
    )
}

/// Where a holder or waiter came from, as its record says: all `None` for one that left no record
/// (a symfony/lock process, an older Deadbolt).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    pub host: Option<String>,
    pub pid: Option<u32>,
    pub label: Option<String>,
}

impl Origin {
    /// Reads a [`record`]; anything that is not one gives an empty origin (records live in a
    /// shared store: they are shown, never trusted).
    pub fn parse(record: &str) -> Origin {
        let mut fields = record.splitn(3, SEPARATOR);
        let pid = fields.next().and_then(|pid| pid.parse().ok());
        let host = fields.next().filter(|host| !host.is_empty());
        let label = fields.next().filter(|label| !label.is_empty());
        match (pid, host) {
            (Some(pid), Some(host)) => Origin {
                host: Some(bounded(host)),
                pid: Some(pid),
                label: label.map(bounded),
            },
            _ => Origin::default(),
        }
    }

    /// This process, for stores whose holders are all in it (in-memory).
    pub fn here(label: Option<&str>) -> Origin {
        Origin::parse(&record(label))
    }
}

/// Text from a shared store, cut to what a record may hold.
fn bounded(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control())
        .take(MAX_LABEL_BYTES)
        .collect()
}

/// One holder of a resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Holder {
    /// The digest of its token ([`digest`]).
    pub token_digest: String,
    pub mode: Mode,
    pub origin: Origin,
    /// When it took the lock (wall clock, the store's where it has one), if recorded.
    pub acquired_at: Option<SystemTime>,
    /// When the store lets the lock expire, for stores whose locks expire.
    pub expires_at: Option<SystemTime>,
}

/// One caller waiting for a resource in the store's queue (stores that queue waiters).
#[derive(Debug, Clone, PartialEq)]
pub struct Waiter {
    pub token_digest: String,
    pub mode: Mode,
    pub origin: Origin,
    /// When it joined the queue.
    pub since: Option<SystemTime>,
}

/// A resource as a store sees it now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LockState {
    pub holders: Vec<Holder>,
    pub waiters: Vec<Waiter>,
}

/// A time in milliseconds since the Unix epoch, as stores write it.
pub fn from_millis(millis: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(millis)
}

/// Seconds since the Unix epoch, as PHP shows times.
pub fn unix_secs(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_short_stable_and_not_the_token() {
        let token = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY=";
        assert_eq!(digest(token), digest(token));
        assert_eq!(digest(token).len(), DIGEST_HEX);
        assert!(!token.contains(&digest(token)));
        assert_ne!(digest(token), digest("another"));
    }

    #[test]
    fn a_record_reads_back_as_its_origin() {
        let origin = Origin::parse(&record(Some("job 42")));
        assert_eq!(origin.pid, Some(std::process::id()));
        assert_eq!(origin.label.as_deref(), Some("job 42"));
        assert!(origin.host.is_some_and(|host| !host.is_empty()));
    }

    #[test]
    fn anything_else_reads_as_no_record() {
        for text in ["", "x\th\tl", "12", "12\t\tl"] {
            assert_eq!(Origin::parse(text), Origin::default(), "{text:?}");
        }
    }

    #[test]
    fn an_environment_gives_our_label_first_then_systemds() {
        let both = b"PATH=/bin\0INVOCATION_ID=abc\0DEADBOLT_LABEL=job 9\0";
        assert_eq!(label_from_environ(both).as_deref(), Some("job 9"));
        assert_eq!(
            label_from_environ(b"INVOCATION_ID=abc\0").as_deref(),
            Some("abc")
        );
        assert_eq!(label_from_environ(b"XDEADBOLT_LABEL=no\0"), None);
    }

    #[test]
    fn labels_are_bounded_one_line_text() {
        assert_eq!(checked_label("").unwrap(), None);
        assert_eq!(
            checked_label("nightly #7").unwrap().as_deref(),
            Some("nightly #7")
        );
        for bad in ["a\tb", "a\nb", &"x".repeat(MAX_LABEL_BYTES + 1)] {
            let message = checked_label(bad).unwrap_err().to_string();
            assert!(message.contains("job or request id"), "{message}");
        }
    }
}
