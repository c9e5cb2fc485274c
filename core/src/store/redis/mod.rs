//! Locks in Redis on symfony/lock's data model (a sorted set per resource, `__write__` for
//! writers, scores in server milliseconds), so Deadbolt and symfony/lock >= 5.2 processes share
//! locks on one Redis. Acquire with the lock's TTL is one script call, release is one.
//!
//! Beside the lock key, Deadbolt may keep three keys per resource, all in the resource's hash slot:
//! `deadbolt:fence:{resource}`, the fencing counter (made on the first getFencingToken(); never
//! expires, so tokens never go back), `deadbolt:waiters:{resource}`, the waiters of the last second (token, expiry), written by a
//! waiter, and `deadbolt:wake:{resource}`, the list a release pushes to (only while someone waits)
//! and waiters BLPOP on.

pub mod dsn;
pub mod native;
pub mod runner;
pub mod scripts;

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::store::{poll, Extender, Mode, Store, WaitReport};
use crate::{Error, Key, Result, Ttl};
use native::NativeRunner;
use runner::{RunError, ScriptRunner};
use scripts::{
    LockScript, DELETE, EXISTS, FENCE, LEAVE, PUT_OFF, SAVE, SAVE_READ, WRONGTYPE_MARKER,
};

/// Longest a waiter sleeps without a signal before it tries again: bounds the cost of a lost
/// signal or of a holder that never sends one (symfony/lock).
const SIGNAL_POLL_CAP: Duration = Duration::from_millis(100);

/// A Redis-backed store over any [`ScriptRunner`].
pub struct RedisStore {
    runner: Box<dyn ScriptRunner>,
    /// The native runner, when there is one, for making the refresher's own connection.
    native: Option<NativeRunner>,
    extender: OnceLock<Arc<dyn Extender>>,
    initial_ttl: Ttl,
    name: String,
}

impl RedisStore {
    /// A store on `runner`. `initial_ttl` is the lifetime a bare `save()` gives (symfony/lock's
    /// `$initialTtl`); locks made by a `Lock` with a TTL use that TTL instead.
    pub fn new(runner: Box<dyn ScriptRunner>, initial_ttl: Ttl) -> Self {
        let name = format!("RedisStore({})", runner.name());
        RedisStore {
            runner,
            native: None,
            extender: OnceLock::new(),
            initial_ttl,
            name,
        }
    }

    /// A store on this process's native connection for `dsn`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a malformed DSN.
    pub fn connect(dsn: &str, initial_ttl: Ttl) -> Result<Self> {
        let runner = NativeRunner::new(dsn)?;
        let twin = runner.twin("refresher");
        let mut store = Self::new(Box::new(runner), initial_ttl);
        store.native = Some(twin);
        Ok(store)
    }

    /// Runs `script` with KEYS = the resource and `companions`, ARGV = the key's token and `args`.
    fn run(
        &self,
        script: &LockScript,
        key: &Key,
        companions: &[&[u8]],
        args: &[&[u8]],
    ) -> Result<i64> {
        let token = key.token()?;
        let keys: Vec<&[u8]> = std::iter::once(key.resource())
            .chain(companions.iter().copied())
            .collect();
        let argv: Vec<&[u8]> = std::iter::once(token.as_str().as_bytes())
            .chain(args.iter().copied())
            .collect();
        self.runner
            .run(script, &keys, &argv)
            .map_err(|e| self.storage_error(key, e))
    }

    fn storage_error(&self, key: &Key, e: RunError) -> Error {
        let detail = e.to_string();
        let message = match detail.split_once(WRONGTYPE_MARKER) {
            Some((_, what)) => format!(
                "The Redis key \"{}\" is not a lock ({}) in {}.",
                key.display_resource(),
                what.trim_matches(|c: char| c == ':' || c == '"' || c.is_whitespace()),
                self.name
            ),
            None => format!(
                "The \"{}\" lock could not be read or written in {}: {detail}",
                key.display_resource(),
                self.name
            ),
        };
        Error::storage(message, e)
    }

    /// One attempt. Ok(Ok(())) when taken; Ok(Err(hint)) when held, with the holder's remaining
    /// time when the server told it.
    fn attempt(
        &self,
        key: &mut Key,
        mode: Mode,
        ttl: Ttl,
        intent: Intent,
    ) -> Result<std::result::Result<(), Option<Duration>>> {
        key.adopt_if_inherited();
        key.reset_lifetime();
        key.reduce_lifetime(ttl);
        key.fence = None;
        let script = match mode {
            Mode::Exclusive => &SAVE,
            Mode::Shared => &SAVE_READ,
        };
        let ttl_ms = ttl_millis(ttl).to_string();
        let waiters = waiters_key(key.resource());
        let reply = self.run(
            script,
            key,
            &[waiters.as_slice()],
            &[ttl_ms.as_bytes(), intent.as_arg()],
        )?;
        if reply < 1 {
            let hint = u64::try_from(-reply).ok().filter(|ms| *ms > 0);
            return Ok(Err(hint.map(Duration::from_millis)));
        }
        self.check_not_expired(key)?;
        Ok(Ok(()))
    }

    fn check_not_expired(&self, key: &mut Key) -> Result<()> {
        if !key.is_expired() {
            return Ok(());
        }
        // The lock is already past its TTL: remove what is left. A failure of this cleanup is
        // dropped; the expiry itself is the failure to report, and Redis drops the key anyway.
        let _ = self.delete(key);
        Err(Error::Expired {
            message: format!(
                "Failed to store the \"{}\" lock in {}: it expired before it was acquired.",
                key.display_resource(),
                self.name
            ),
        })
    }

    fn conflict(&self, key: &Key) -> Error {
        Error::conflict(key.display_resource(), &self.name)
    }

    fn not_held(&self, key: &Key) -> Error {
        Error::not_held(key.display_resource(), &self.name)
    }
}

/// What an attempt is, for the scripts (see the prelude's `intent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Intent {
    /// A plain attempt: no waiting follows.
    Plain,
    /// The first attempt of a wait: a refusal marks the caller as a waiter.
    Join,
    /// A waiter's attempt after it waited: may take a lock held for waiters.
    Wake,
}

impl Intent {
    fn as_arg(self) -> &'static [u8] {
        match self {
            Intent::Plain => b"",
            Intent::Join => b"join",
            Intent::Wake => b"wake",
        }
    }
}

/// The resource's fencing counter, in the resource's hash slot.
fn fence_key(resource: &[u8]) -> Vec<u8> {
    companion(b"deadbolt:fence:{", resource)
}

/// The resource's wake-up list, in the resource's hash slot.
fn wake_key(resource: &[u8]) -> Vec<u8> {
    companion(b"deadbolt:wake:{", resource)
}

/// The set of waiters (token, expiry) that releases look at, in the resource's slot.
fn waiters_key(resource: &[u8]) -> Vec<u8> {
    companion(b"deadbolt:waiters:{", resource)
}

fn companion(prefix: &[u8], resource: &[u8]) -> Vec<u8> {
    let mut name = Vec::with_capacity(prefix.len() + resource.len() + 1);
    name.extend_from_slice(prefix);
    name.extend_from_slice(resource);
    name.push(b'}');
    name
}

/// Milliseconds for Redis, rounded up so a tiny TTL never becomes 0.
fn ttl_millis(ttl: Ttl) -> u64 {
    let millis = ttl.duration().as_nanos().div_ceil(1_000_000);
    u64::try_from(millis).unwrap_or(u64::MAX)
}

impl Store for RedisStore {
    fn name(&self) -> &str {
        &self.name
    }

    fn save(&self, key: &mut Key, mode: Mode, ttl: Option<Ttl>) -> Result<()> {
        match self.attempt(key, mode, ttl.unwrap_or(self.initial_ttl), Intent::Plain)? {
            Ok(()) => Ok(()),
            Err(_) => Err(self.conflict(key)),
        }
    }

    /// Waits on the resource's wake-up list: a release anywhere wakes the longest waiter at once;
    /// without a signal the waiter tries again when the holder's TTL runs out, and at least every
    /// 100 ms (a holder that does not signal, a lost signal).
    fn wait(
        &self,
        key: &mut Key,
        mode: Mode,
        ttl: Option<Ttl>,
        deadline: Option<Instant>,
        report: &mut WaitReport,
    ) -> Result<bool> {
        let ttl = ttl.unwrap_or(self.initial_ttl);
        let wake = wake_key(key.resource());
        // The holder's remaining time, as the last refusal told it.
        let hint = std::cell::Cell::new(None::<Duration>);
        let intent = std::cell::Cell::new(Intent::Join);
        let key = std::cell::RefCell::new(key);
        let taken = poll(
            deadline,
            report,
            |max| {
                let pause = hint.get().map_or(max, |h| h.min(max)).min(SIGNAL_POLL_CAP);
                let signal = self
                    .runner
                    .wait_signal(&wake, pause.max(Duration::from_millis(1)))
                    .map_err(|e| {
                        Error::storage(
                            format!("Waiting for the lock in {} failed: {e}", self.name),
                            e,
                        )
                    });
                Some(signal)
            },
            || {
                let mut key = key.borrow_mut();
                let this_attempt = intent.replace(Intent::Wake);
                match self.attempt(&mut key, mode, ttl, this_attempt)? {
                    Ok(()) => Ok(()),
                    Err(left) => {
                        hint.set(left);
                        Err(self.conflict(&key))
                    }
                }
            },
        )?;
        if !taken && intent.get() == Intent::Wake {
            // Gave up at the deadline: leave the waiters, or the next release would hold the
            // lock for nobody. Should this fail, the entry expires within a second anyway.
            let key = key.borrow();
            let waiters = waiters_key(key.resource());
            let _ = self.run(&LEAVE, &key, &[waiters.as_slice()], &[]);
        }
        Ok(taken)
    }

    fn put_off_expiration(&self, key: &mut Key, ttl: Ttl) -> Result<()> {
        if key.is_inherited() {
            return Err(self.not_held(key));
        }
        key.reduce_lifetime(ttl);
        let ttl_ms = ttl_millis(ttl).to_string();
        if self.run(&PUT_OFF, key, &[], &[ttl_ms.as_bytes()])? != 1 {
            return Err(self.not_held(key));
        }
        self.check_not_expired(key)
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        key.fence = None;
        if key.is_inherited() || key.drawn_token().is_none() {
            return Ok(());
        }
        let (wake, waiters) = (wake_key(key.resource()), waiters_key(key.resource()));
        self.run(&DELETE, key, &[wake.as_slice(), waiters.as_slice()], &[])
            .map(|_| ())
    }

    fn exists(&self, key: &Key) -> Result<bool> {
        if key.is_inherited() || key.drawn_token().is_none() {
            return Ok(false);
        }
        Ok(self.run(&EXISTS, key, &[], &[])? == 1)
    }

    /// Drawn on first request by a script that checks this key is the live writer: the acquire
    /// itself stays four commands, and holders draw in the order they held the lock.
    fn fencing_token(&self, key: &mut Key) -> Result<Option<u64>> {
        if key.is_inherited() || key.drawn_token().is_none() {
            return Ok(None);
        }
        if key.fence.is_none() {
            let reply = self.run(&FENCE, key, &[fence_key(key.resource()).as_slice()], &[])?;
            key.fence = u64::try_from(reply).ok().filter(|token| *token > 0);
        }
        Ok(key.fence)
    }

    fn expires(&self) -> bool {
        true
    }

    fn releases_from_drop(&self) -> bool {
        self.runner.is_native()
    }

    /// A warning noticed on connect (an evicting `maxmemory-policy`), handed out once.
    fn take_warning(&self) -> Option<String> {
        self.runner.take_warning()
    }

    fn extender(&self) -> Option<Arc<dyn Extender>> {
        let native = self.native.as_ref()?;
        Some(Arc::clone(self.extender.get_or_init(|| {
            Arc::new(RedisExtender {
                runner: native.twin("refresher"),
            })
        })))
    }
}

/// Extends Redis locks on a connection of its own, from the refresher thread.
struct RedisExtender {
    runner: NativeRunner,
}

impl Extender for RedisExtender {
    fn extend(&self, resource: &[u8], token: &str, ttl: Ttl) -> Result<bool> {
        let ttl_ms = ttl_millis(ttl).to_string();
        self.runner
            .run(
                &PUT_OFF,
                &[resource],
                &[token.as_bytes(), ttl_ms.as_bytes()],
            )
            .map(|reply| reply == 1)
            .map_err(|e| {
                Error::storage(
                    format!("Refreshing a lock in {} failed: {e}", self.runner.name()),
                    e,
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_in_milliseconds_rounds_up() {
        assert_eq!(ttl_millis(Ttl::from_secs(0.0001).unwrap()), 1);
        assert_eq!(ttl_millis(Ttl::from_secs(1.5).unwrap()), 1500);
    }

    #[test]
    fn companion_keys_share_the_resource_hash_slot() {
        assert_eq!(fence_key(b"orders:42"), b"deadbolt:fence:{orders:42}");
        assert_eq!(wake_key(b""), b"deadbolt:wake:{}");
    }
}
