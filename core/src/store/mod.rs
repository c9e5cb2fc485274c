//! The store contract, after symfony/lock's: take a lock now (exclusive or shared), wait for one,
//! extend it, release it, ask whether a key holds it. Every store can wait; the default waits by
//! polling, and stores that can be woken (flock, Redis) do better. Nothing here knows about PHP.

pub mod flock;
pub mod flock_path;
pub mod memory;
pub mod redis;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::{Key, Result, Ttl};

/// Poll interval of waits that nothing can shorten, as in symfony/lock (90-110 ms).
const POLL_MS: u64 = 100;
const POLL_JITTER_MS: u64 = 10;

/// Exclusive (write) or shared (read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Exclusive,
    Shared,
}

/// How a wait went: how often it was woken by a release, and how often it woke up by itself.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WaitReport {
    pub wakeups: u64,
    pub polls: u64,
}

/// What every store does. A held lock is [`crate::Error::Conflict`]; anything else that goes
/// wrong in the store is [`crate::Error::Storage`].
pub trait Store {
    /// The store's name for messages, e.g. `FlockStore(/var/lib/app/locks)`. Never holds a secret.
    fn name(&self) -> &str;

    /// Takes the lock for `key` now. Exclusive also promotes `key`'s own shared lock when it is
    /// the only reader; shared demotes `key`'s exclusive lock. `ttl` is the lifetime to give a
    /// lock in a store whose locks expire (`None`: the store's initial TTL); other stores ignore it.
    /// An exclusive save records a fencing token on the key.
    ///
    /// # Errors
    /// Conflict when someone else holds it; Storage when the store fails.
    fn save(&self, key: &mut Key, mode: Mode, ttl: Option<Ttl>) -> Result<()>;

    /// Waits until the lock can be taken, then takes it as [`Store::save`] does; gives up at
    /// `deadline` (`None`: waits forever) and answers false.
    ///
    /// # Errors
    /// Storage when the store fails.
    fn wait(
        &self,
        key: &mut Key,
        mode: Mode,
        ttl: Option<Ttl>,
        deadline: Option<Instant>,
        report: &mut WaitReport,
    ) -> Result<bool> {
        poll(deadline, report, || self.save(key, mode, ttl))
    }

    /// Extends the lock of `key` by `ttl` (stores whose locks never expire only check ownership).
    ///
    /// # Errors
    /// Conflict when `key` does not hold the lock; Storage when the store fails.
    fn put_off_expiration(&self, key: &mut Key, ttl: Ttl) -> Result<()>;

    /// Releases the lock of `key`; does nothing when `key` does not hold it.
    ///
    /// # Errors
    /// Storage when the store fails.
    fn delete(&self, key: &mut Key) -> Result<()>;

    /// The fencing token of `key`'s exclusive hold: a number that grows with every exclusive
    /// acquisition of the resource, so a resource can refuse writes from a holder that was
    /// overtaken. `None` when `key` holds no exclusive lock here.
    ///
    /// # Errors
    /// Storage when the store fails (flock draws the token from the lock file on first request).
    fn fencing_token(&self, key: &mut Key) -> Result<Option<u64>> {
        Ok(key.fence().filter(|_| !key.is_inherited()))
    }

    /// Whether `key` (not anyone) holds the lock.
    ///
    /// # Errors
    /// Storage when the store fails.
    fn exists(&self, key: &Key) -> Result<bool>;

    /// Whether locks in this store expire: then a lock's TTL goes into [`Store::save`] (one
    /// call) and extending it means something. flock and in-memory locks never expire.
    fn expires(&self) -> bool {
        false
    }

    /// Whether a lock may be released from Rust's `Drop` (no PHP call on the way). Stores that
    /// talk through a PHP object answer false and are released in PHP's destructor phase instead.
    fn releases_from_drop(&self) -> bool {
        true
    }

    /// A warning about the store's setup noticed during the last calls (an evicting Redis), once.
    fn take_warning(&self) -> Option<String> {
        None
    }

    /// What a background thread needs to extend this store's locks without PHP, if it can.
    fn extender(&self) -> Option<Arc<dyn Extender>> {
        None
    }
}

/// Extends locks from a background thread: no PHP, no key object, only what was copied out.
pub trait Extender: Send + Sync {
    /// Extends the lock that `token` holds on `resource` by `ttl`; false when it is no longer held.
    ///
    /// # Errors
    /// Storage when the store fails.
    fn extend(&self, resource: &[u8], token: &str, ttl: Ttl) -> Result<bool>;
}

/// Retries `save` until it stops conflicting or `deadline` passes, sleeping 90-110 ms between
/// attempts (never past the deadline).
pub(crate) fn poll(
    deadline: Option<Instant>,
    report: &mut WaitReport,
    mut save: impl FnMut() -> Result<()>,
) -> Result<bool> {
    loop {
        match save() {
            Ok(()) => return Ok(true),
            Err(e) if e.is_conflict() => {}
            Err(e) => return Err(e),
        }
        let mut pause = poll_interval();
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            pause = pause.min(left);
        }
        std::thread::sleep(pause);
        report.polls += 1;
    }
}

/// 90-110 ms, so that pollers started together spread out.
pub(crate) fn poll_interval() -> Duration {
    let jitter = getrandom::u32().map_or(0, |r| u64::from(r) % (2 * POLL_JITTER_MS + 1));
    Duration::from_millis(POLL_MS - POLL_JITTER_MS + jitter)
}
