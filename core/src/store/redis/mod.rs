//! Locks in Redis on symfony/lock's data model (a sorted set per resource, `__write__` for
//! writers, scores in server milliseconds), so Deadbolt and symfony/lock >= 5.2 processes share
//! locks on one Redis. Acquire with the lock's TTL is one script call, release is one.
//!
//! Beside the lock key, Deadbolt may keep these keys per resource, all in the resource's hash slot:
//! `deadbolt:fence:{resource}`, the fencing counter (made on the first getFencingToken(); never
//! expires, so tokens never go back); while someone waits, `deadbolt:waiters:{resource}`, the queue
//! of waiters (token -> arrival), and `deadbolt:waiting:{resource}`, their details (token -> "alive
//! until, mode, TTL") and recent hand-overs, both gone 400 ms after the last waiter last asked;
//! and for a waiter that a release handed the lock over to, `deadbolt:waiters:{resource}:TOKEN`,
//! the list that tells it so (its BLPOP reads it).

pub mod dsn;
pub mod native;
pub mod runner;
pub mod scripts;

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::store::{Extender, Mode, Store, WaitReport};
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
        self.call(key, companions, args, |keys, argv| {
            self.runner.run(script, keys, argv)
        })
    }

    /// Makes `runner` run a script with KEYS = the resource and `companions`, ARGV = the key's
    /// token and `args`; its failure becomes a storage error about the key.
    fn call<T>(
        &self,
        key: &Key,
        companions: &[&[u8]],
        args: &[&[u8]],
        runner: impl FnOnce(&[&[u8]], &[&[u8]]) -> std::result::Result<T, RunError>,
    ) -> Result<T> {
        let token = key.token()?;
        let keys: Vec<&[u8]> = std::iter::once(key.resource())
            .chain(companions.iter().copied())
            .collect();
        let argv: Vec<&[u8]> = std::iter::once(token.as_str().as_bytes())
            .chain(args.iter().copied())
            .collect();
        runner(&keys, &argv).map_err(|e| self.storage_error(key, e))
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

    /// One attempt, without waiting: taken, or held (with the holder's remaining time when the
    /// server told it). A waiting caller (`queue`: its [`WaitKeys`]) joins the queue of waiters
    /// when refused.
    fn attempt(
        &self,
        key: &mut Key,
        mode: Mode,
        ttl: Ttl,
        queue: Option<&WaitKeys>,
    ) -> Result<Attempt> {
        let script = self.prepare(key, mode, ttl);
        let ttl_ms = ttl_millis(ttl).to_string();
        let reply = match queue {
            None => self.run(script, key, &[], &[ttl_ms.as_bytes()])?,
            // No pause given: the script sends no signal of its own, nobody would read it.
            Some(queue) => self.run(
                script,
                key,
                &queue.all(),
                &[ttl_ms.as_bytes(), b"wait", b"", queue.overdue()],
            )?,
        };
        self.outcome(key, reply)
    }

    /// A waiter's attempt followed by a wait of up to `pause` for a hand-over, in one round trip
    /// where the runner can pipeline them (else one after the other).
    fn attempt_then_wait(
        &self,
        key: &mut Key,
        mode: Mode,
        ttl: Ttl,
        queue: &WaitKeys,
        pause: Duration,
    ) -> Result<Attempt> {
        let asked = Instant::now();
        let script = self.prepare(key, mode, ttl);
        let ttl_ms = ttl_millis(ttl).to_string();
        let pause_ms = pause.as_millis().to_string();
        let args = [
            ttl_ms.as_bytes(),
            b"wait",
            pause_ms.as_bytes(),
            queue.overdue(),
        ];
        let pipelined = self.call(key, &queue.all(), &args, |keys, argv| {
            self.runner
                .run_then_wait(script, keys, argv, &queue.grant, pause)
                .transpose()
        })?;
        let Some((reply, signal)) = pipelined else {
            // A runner that cannot pipeline (a PHP client): attempt, then wait, in turn.
            return match self.attempt(key, mode, ttl, Some(queue))? {
                Attempt::Held(left) => {
                    let pause = left.map_or(pause, |left| left.min(pause));
                    if self.wait_for_signal(&queue.grant, pause)? {
                        self.accept_hand_over(key, ttl, asked)
                    } else {
                        Ok(Attempt::Held(left))
                    }
                }
                other => Ok(other),
            };
        };
        match (reply, signal.as_deref()) {
            (..1, Some(b"granted")) => self.accept_hand_over(key, ttl, asked),
            (..1, Some(b"soon")) => match self.outcome(key, reply)? {
                Attempt::Held(left) => Ok(Attempt::Soon(left)),
                other => Ok(other),
            },
            _ => self.outcome(key, reply),
        }
    }

    /// Readies `key` for an attempt and picks the script for `mode`.
    fn prepare(&self, key: &mut Key, mode: Mode, ttl: Ttl) -> &'static LockScript {
        key.adopt_if_inherited();
        key.reset_lifetime();
        key.reduce_lifetime(ttl);
        key.fence = None;
        match mode {
            Mode::Exclusive => &SAVE,
            Mode::Shared => &SAVE_READ,
        }
    }

    /// What a save script's reply means: 1 taken, 0 or minus the holder's remaining ms held.
    fn outcome(&self, key: &mut Key, reply: i64) -> Result<Attempt> {
        if reply < 1 {
            let hint = u64::try_from(-reply).ok().filter(|ms| *ms > 0);
            return Ok(Attempt::Held(hint.map(Duration::from_millis)));
        }
        self.check_not_expired(key)?;
        Ok(Attempt::Taken)
    }

    /// Waits up to `pause` for a hand-over signal on a waiter's grant list.
    fn wait_for_signal(&self, grant: &[u8], pause: Duration) -> Result<bool> {
        self.runner
            .wait_signal(grant, pause.max(Duration::from_millis(1)))
            .map_err(|e| {
                Error::storage(
                    format!("Waiting for the lock in {} failed: {e}", self.name),
                    e,
                )
            })
    }

    /// A release handed the lock over to this waiter: it holds it with `ttl` since some moment
    /// after `asked` (when it started to wait for the signal), so its lifetime counts from there.
    fn accept_hand_over(&self, key: &mut Key, ttl: Ttl, asked: Instant) -> Result<Attempt> {
        key.reset_lifetime();
        key.reduce_lifetime_from(asked, ttl);
        key.fence = None;
        self.check_not_expired(key)?;
        Ok(Attempt::HandedOver)
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

/// Whether `e` is the store's answer that Redis is still loading its data after a restart.
fn is_loading(e: &Error) -> bool {
    matches!(e, Error::Storage { source: Some(cause), .. }
        if cause.downcast_ref::<RunError>().is_some_and(RunError::is_loading))
}

/// How one attempt went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attempt {
    /// Taken by the attempt itself.
    Taken,
    /// Handed over by a release while the caller waited.
    HandedOver,
    /// Held, with the holder's remaining time when the server told it.
    Held(Option<Duration>),
    /// Held by a holder whose time runs out before the caller's wait would have ended: the
    /// caller waits only that long (its remaining time) before it tries again.
    Soon(Option<Duration>),
}

/// How long a wait goes before its attempts also look for hand-overs nobody read (the scripts'
/// CLAIM_MS): before that, an unread one cannot be what holds it up.
const TAKE_BACK_AFTER: Duration = Duration::from_millis(250);

/// The keys a waiting caller names besides the resource: the queue of waiters, their details,
/// and its own grant list (which the hand-over in the release scripts names the same way); and
/// when the wait began.
struct WaitKeys {
    queue: Vec<u8>,
    details: Vec<u8>,
    grant: Vec<u8>,
    since: Instant,
}

impl WaitKeys {
    fn new(resource: &[u8], token: &str) -> Self {
        let queue = queue_key(resource);
        // Named after the queue, as handover.lua names it.
        let mut grant = queue.clone();
        grant.push(b':');
        grant.extend_from_slice(token.as_bytes());
        WaitKeys {
            queue,
            details: details_key(resource),
            grant,
            since: Instant::now(),
        }
    }

    /// The scripts' ARGV[5]: "1" once the wait has lasted long enough that an unread hand-over
    /// may be what holds it up (then the attempt takes such hand-overs back).
    fn overdue(&self) -> &'static [u8] {
        if self.since.elapsed() > TAKE_BACK_AFTER {
            b"1"
        } else {
            b""
        }
    }

    fn all(&self) -> [&[u8]; 3] {
        [&self.queue, &self.details, &self.grant]
    }
}

/// The resource's fencing counter, in the resource's hash slot.
fn fence_key(resource: &[u8]) -> Vec<u8> {
    companion(b"deadbolt:fence:", resource)
}

/// The queue of waiters (token -> arrival), in the resource's hash slot.
fn queue_key(resource: &[u8]) -> Vec<u8> {
    companion(b"deadbolt:waiters:", resource)
}

/// The waiters' details (token -> "alive until, mode, TTL"), in the resource's hash slot.
fn details_key(resource: &[u8]) -> Vec<u8> {
    companion(b"deadbolt:waiting:", resource)
}

/// A key of Deadbolt's own for `resource`, in the resource's Redis Cluster hash slot, so that one
/// script may touch both. The resource becomes the hash tag (`prefix{resource}`), unless it has a
/// hash tag of its own, which must stay the first one: then `prefix=resource`. The two shapes
/// never collide (`{` or `=` right after the prefix).
fn companion(prefix: &[u8], resource: &[u8]) -> Vec<u8> {
    let mut name = Vec::with_capacity(prefix.len() + resource.len() + 2);
    name.extend_from_slice(prefix);
    if has_hash_tag(resource) {
        name.push(b'=');
        name.extend_from_slice(resource);
    } else {
        name.push(b'{');
        name.extend_from_slice(resource);
        name.push(b'}');
    }
    name
}

/// Whether Redis Cluster hashes only part of `key`: a `{` followed later by a `}` with something
/// in between.
fn has_hash_tag(key: &[u8]) -> bool {
    key.iter().position(|b| *b == b'{').is_some_and(|open| {
        key[open + 1..]
            .iter()
            .position(|b| *b == b'}')
            .is_some_and(|len| len > 0)
    })
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
        match self.attempt(key, mode, ttl.unwrap_or(self.initial_ttl), None)? {
            Attempt::Taken | Attempt::HandedOver => Ok(()),
            Attempt::Held(_) | Attempt::Soon(_) => Err(self.conflict(key)),
        }
    }

    /// Waits in the resource's queue: a release anywhere hands the lock over to the longest
    /// waiter and signals its grant list, which it reads with BLPOP, so the woken waiter needs no
    /// further round trip; each attempt and the wait after it share one round trip (pipelined).
    /// Without a signal the waiter tries again when the holder's TTL runs out, and at least every
    /// 100 ms (a holder that does not hand over, such as symfony/lock, or a lock that expired).
    fn wait(
        &self,
        key: &mut Key,
        mode: Mode,
        ttl: Option<Ttl>,
        deadline: Option<Instant>,
        report: &mut WaitReport,
    ) -> Result<bool> {
        let ttl = ttl.unwrap_or(self.initial_ttl);
        let queue = WaitKeys::new(key.resource(), key.token()?.as_str());
        // The holder's remaining time, as the last refusal told it.
        let mut hint = None::<Duration>;
        loop {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                // Past the deadline: one last attempt, then leave the queue (releasing the lock
                // should a release have handed it over meanwhile; should this fail, the entry
                // expires within 400 ms). A server still loading its data refuses it too.
                match self.attempt(key, mode, ttl, Some(&queue)) {
                    Ok(Attempt::Taken) => return Ok(true),
                    Err(e) if !is_loading(&e) => return Err(e),
                    _ => {}
                }
                let _ = self.run(&LEAVE, key, &queue.all(), &[]);
                return Ok(false);
            }
            let pause = [Some(SIGNAL_POLL_CAP), hint, left]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(SIGNAL_POLL_CAP)
                .max(Duration::from_millis(1));
            let attempt = match self.attempt_then_wait(key, mode, ttl, &queue, pause) {
                // Redis restarted and is loading its data: the lock may well be held there; wait
                // as for a holder that does not hand over, and ask again.
                Err(e) if is_loading(&e) => {
                    std::thread::sleep(pause);
                    report.polls += 1;
                    continue;
                }
                other => other?,
            };
            match attempt {
                Attempt::Taken => return Ok(true),
                Attempt::HandedOver => {
                    report.wakeups += 1;
                    return Ok(true);
                }
                Attempt::Held(holder_left) => {
                    report.polls += 1;
                    hint = holder_left;
                }
                Attempt::Soon(holder_left) => {
                    // The holder expires before the pause would have ended: wait that long only.
                    let asked = Instant::now();
                    let pause = holder_left.unwrap_or(pause).min(pause);
                    if self.wait_for_signal(&queue.grant, pause)? {
                        report.wakeups += 1;
                        self.accept_hand_over(key, ttl, asked)?;
                        return Ok(true);
                    }
                    report.polls += 1;
                    hint = None;
                }
            }
        }
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
        let (queue, details) = (queue_key(key.resource()), details_key(key.resource()));
        self.run(&DELETE, key, &[queue.as_slice(), details.as_slice()], &[])
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
        assert_eq!(queue_key(b""), b"deadbolt:waiters:{}");
        let keys = WaitKeys::new(b"r", "T0k+/=");
        assert_eq!(keys.grant, b"deadbolt:waiters:{r}:T0k+/=");
    }

    #[test]
    fn a_resource_with_its_own_hash_tag_keeps_it_first_in_its_companions() {
        assert_eq!(
            fence_key(b"user:{42}:cart"),
            b"deadbolt:fence:=user:{42}:cart"
        );
        assert_eq!(queue_key(b"{x}"), b"deadbolt:waiters:={x}");
        assert_ne!(queue_key(b"{x}"), queue_key(b"x"));
        // No tag: an empty pair of braces, or a closing brace first.
        assert_eq!(queue_key(b"a{}b"), b"deadbolt:waiters:{a{}b}");
        assert_eq!(queue_key(b"a}b{"), b"deadbolt:waiters:{a}b{}");
    }
}
