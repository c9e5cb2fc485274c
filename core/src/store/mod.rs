//! The store contract, after symfony/lock's: take a lock now (exclusive or shared), extend it,
//! release it, ask whether a key holds it; and the capabilities some stores add (waiting better
//! than by polling, expiring locks, fencing tokens). Nothing here knows about PHP.

pub mod combined;
pub mod flock;
mod flock_fence;
mod flock_files;
mod flock_holders;
pub mod flock_path;
pub mod memcached;
pub mod memory;
pub mod mysql;
pub mod postgres;
pub mod redis;
pub mod refusing;
pub mod sysv;
pub mod table;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::holder::LockState;
use crate::{Error, Key, Result, Ttl};

/// The stores' once-made values (`crate::threads`): the idle lock files' table, SHA-256's CPU checks (a lock
/// file's name is a digest), std's check for `statx` (its first file metadata call), and Redis's.
pub(crate) fn set_up() {
    flock_files::set_up();
    flock_path::lock_file_name(b"");
    let _ = std::fs::metadata("/");
    redis::set_up();
}

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
    /// The host asked the wait to stop (crate::interrupt): it ended without the lock.
    pub interrupted: bool,
}

/// What every store does, symfony/lock's `PersistingStoreInterface`. A held lock is
/// [`crate::Error::Conflict`]; anything else that goes wrong in the store is
/// [`crate::Error::Storage`]. Keys reach a store already adopted (never inherited through
/// `fork()`: the caller ran [`Key::adopt_if_inherited`]), so no store asks which process it is in.
/// What a store can do beyond this, it says in [`Store::capabilities`].
pub trait Store {
    /// The store's name for messages, e.g. `FlockStore(/var/lib/app/locks)`. Never holds a secret.
    fn name(&self) -> &str;

    /// The concrete store, for a host that must look inside it (the extension shows PHP's cycle
    /// collector the PHP values a store written in PHP keeps). `None` unless a store says so.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }

    /// Takes the lock for `key` now. Exclusive also promotes `key`'s own shared lock when it is
    /// the only reader; shared demotes `key`'s exclusive lock. `ttl` is the lifetime to give a
    /// lock in a store whose locks expire (`None`: the store's initial TTL); other stores ignore it.
    ///
    /// # Errors
    /// Conflict when someone else holds it; Expired when the key's lifetime ran out before the
    /// lock was stored (nothing is left behind); Storage when the store fails.
    fn save(&self, key: &mut Key, mode: Mode, ttl: Option<Ttl>) -> Result<()>;

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

    /// Whether `key` (not anyone) holds the lock.
    ///
    /// # Errors
    /// Storage when the store fails.
    fn exists(&self, key: &Key) -> Result<bool>;

    /// What this store can do beyond the contract above (nothing, by default).
    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities::default()
    }
}

/// The optional parts of a store, one small trait each (as symfony/lock has one interface per
/// capability); a store lists the ones it has in [`Store::capabilities`].
#[derive(Default, Clone, Copy)]
pub struct Capabilities<'a> {
    /// It can wait for a lock better than by polling (symfony/lock's `BlockingStoreInterface`).
    pub blocking: Option<&'a dyn BlockingStore>,
    /// Its locks expire: a lock's TTL goes into [`Store::save`] (one call), and extending it
    /// means something.
    pub expiring: Option<&'a dyn ExpiringStore>,
    /// It draws fencing tokens.
    pub fencing: Option<&'a dyn FencingStore>,
    /// It can release without waiting for the reply (a native Redis connection with
    /// `release=deferred`).
    pub deferring: Option<&'a dyn DeferringStore>,
    /// It can say who holds a resource and who waits, and release it whatever its owner.
    pub inspecting: Option<&'a dyn InspectingStore>,
    /// It keeps semaphores too (keys with slots, [`crate::Slots`]): `crate::semaphore` makes a
    /// store of them for the lock engine.
    pub semaphores: Option<&'a dyn SemaphoreStore>,
}

/// The semaphore side of a store (symfony/semaphore's `PersistingStoreInterface`), for keys with
/// [`crate::Slots`]: at most `limit` weight held at once. Semaphores live apart from locks (a
/// lock and a semaphore on one name are two things). Errors as for [`Store`]: full is
/// [`crate::Error::Conflict`], not held any more is a not-held conflict.
pub trait SemaphoreStore {
    /// Takes `key`'s weight now, with `ttl` where slots expire; `Ok` also when `key` holds it
    /// already (its expiry put off).
    ///
    /// # Errors
    /// Conflict when there is no room (or, where waiters are served in order, someone waits
    /// first); Storage when the store fails.
    fn save(&self, key: &mut Key, ttl: Option<Ttl>) -> Result<()>;

    /// Puts off the expiry of `key`'s slot.
    ///
    /// # Errors
    /// Not-held conflict when `key` holds none (expired and taken, released); Storage.
    fn put_off_expiration(&self, key: &mut Key, ttl: Ttl) -> Result<()>;

    /// Gives `key`'s weight back (to the waiters, in order); nothing when it holds none.
    ///
    /// # Errors
    /// Storage when the store fails.
    fn delete(&self, key: &mut Key) -> Result<()>;

    /// Whether `key` holds a live slot.
    ///
    /// # Errors
    /// Storage when the store fails.
    fn exists(&self, key: &Key) -> Result<bool>;

    /// Waits for room, then takes it as [`Self::save`] does; gives up at `deadline` (`None`:
    /// waits forever) and answers false. By default: [`Self::save`] every 90-110 ms, as a lock
    /// store that cannot be woken is polled.
    ///
    /// # Errors
    /// Storage when the store fails.
    fn wait(
        &self,
        key: &mut Key,
        ttl: Option<Ttl>,
        deadline: Option<Instant>,
        report: &mut WaitReport,
    ) -> Result<bool> {
        poll(deadline, report, poll_interval, || self.save(key, ttl))
    }

    /// Whether slots expire unless put off (a TTL then goes into [`Self::save`]).
    fn expires(&self) -> bool {
        false
    }

    /// What the background refresher needs to put this store's slots off without PHP, if it can.
    fn extender(&self) -> Option<Arc<dyn Extender>> {
        None
    }
}

/// An operator's view of a store: who holds a resource (and who waits for it), and the release of
/// a resource whatever its owner. A forced release is the store's to make: its old holders find
/// the lock gone at their next call (lost, as if it had expired), and fencing tokens keep growing.
pub trait InspectingStore {
    /// The resource's live holders and waiters.
    ///
    /// # Errors
    /// InvalidArgument for a resource the store cannot lock; Storage when the store fails.
    fn inspect(&self, resource: &[u8]) -> Result<LockState>;

    /// Releases the resource whoever holds it (waiters then get it as after a release); the
    /// number of holders it had.
    ///
    /// # Errors
    /// InvalidArgument for a resource the store cannot lock; Storage when the store fails.
    fn force_release(&self, resource: &[u8]) -> Result<usize>;
}

/// A store that can send a release and read its reply later.
pub trait DeferringStore {
    /// Sends the release of `key` and returns at once; the returned handle learns the outcome
    /// when the reply is read (before the connection's next command, at the end of the request,
    /// or at exit).
    ///
    /// # Errors
    /// Storage when the release could not even be sent (the key then still holds its lock).
    fn delete_deferred(&self, key: &mut Key) -> Result<PendingRelease>;

    /// Reads the replies still unread now (the lock that sent one is about to report it).
    fn read_replies(&self);
}

/// The outcome of a release whose reply is read later: shared between the connection, which
/// settles it once, and the lock, which reports a failure at its next call.
#[derive(Debug, Clone, Default)]
pub struct PendingRelease(Arc<std::sync::OnceLock<std::result::Result<(), String>>>);

impl PendingRelease {
    /// The outcome of a release that did not wait to be sent: done.
    pub fn done() -> Self {
        let done = PendingRelease::default();
        let _ = done.0.set(Ok(()));
        done
    }

    /// Records the outcome (the first one only; a reply is read once).
    pub fn settle(&self, outcome: std::result::Result<(), String>) {
        if outcome.is_err() {
            crate::metrics::count(crate::metrics::Counter::StoreErrors, 1);
        }
        let _ = self.0.set(outcome);
    }

    /// `None` while the reply is unread; then `Ok` or the failure's message (which names the
    /// endpoint, never a credential).
    pub fn outcome(&self) -> Option<std::result::Result<(), &str>> {
        self.0
            .get()
            .map(|outcome| outcome.as_ref().copied().map_err(String::as_str))
    }
}

/// A store that can be woken, or can block, while it waits.
pub trait BlockingStore {
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
    ) -> Result<bool>;
}

/// A store whose locks expire unless extended.
pub trait ExpiringStore {
    /// What a background thread needs to extend this store's locks without PHP, if it can.
    fn extender(&self) -> Option<Arc<dyn Extender>>;

    /// A warning about the store's setup noticed during the last calls (an evicting Redis), once.
    fn take_warning(&self) -> Option<String> {
        None
    }
}

/// A store that hands out fencing tokens.
pub trait FencingStore {
    /// A fencing token for `key`'s exclusive hold: a number that grows with every token drawn for
    /// the resource, drawn under the lock (so holders draw in the order they held it), so a
    /// resource can refuse writes from a holder that was overtaken. Each call draws a new one
    /// ([`crate::Lock`] asks once per hold). `None` when `key` holds no exclusive lock here.
    ///
    /// # Errors
    /// Storage when the store fails.
    fn draw_fencing_token(&self, key: &mut Key) -> Result<Option<u64>>;
}

/// What `store` offers an operator, or why it cannot.
///
/// # Errors
/// [`Error::InvalidArgument`] for a store that keeps no records an operator can read or clear (a
/// store written in PHP).
pub fn inspecting(store: &dyn Store) -> Result<&dyn InspectingStore> {
    store.capabilities().inspecting.ok_or_else(|| {
        Error::invalid_argument(format!(
            "{} cannot tell who holds a lock or release it for an operator (a store written in \
             PHP keeps its own records; PostgreSQL and MySQL show their sessions' locks in \
             pg_locks and performance_schema.metadata_locks). \
             Inspect its storage directly, or use a FlockStore, \
             RedisStore, InMemoryStore or a CombinedStore of those.",
            store.name()
        ))
    })
}

/// `putOffExpiration` of a store whose locks never expire: nothing to extend, only the key's
/// ownership is checked (unlike symfony/lock's such stores, a key that does not hold the lock is
/// told so).
///
/// # Errors
/// A not-held conflict when `key` does not hold the lock; the store's error when it fails.
pub(crate) fn check_ownership(store: &dyn Store, key: &Key) -> Result<()> {
    if store.exists(key)? {
        Ok(())
    } else {
        Err(Error::not_held(key.display_resource(), store.name()))
    }
}

/// Waits for `store`'s lock: natively where the store can, else by polling.
///
/// # Errors
/// Storage when the store fails.
pub fn wait(
    store: &dyn Store,
    key: &mut Key,
    mode: Mode,
    ttl: Option<Ttl>,
    deadline: Option<Instant>,
    report: &mut WaitReport,
) -> Result<bool> {
    match store.capabilities().blocking {
        Some(blocking) => blocking.wait(key, mode, ttl, deadline, report),
        None => poll(deadline, report, poll_interval, || {
            store.save(key, mode, ttl)
        }),
    }
}

/// The failure of a save whose key ran out of lifetime before the lock was stored: the lock is
/// removed again (a failure of that cleanup is dropped: the expiry is the failure to report, and
/// the store's own expiry removes what is left). One message for every store and for `Lock`.
pub(crate) fn expired_on_save(store: &dyn Store, key: &mut Key) -> Error {
    // A semaphore's key leaves a slot, which the store's semaphore side removes.
    let _ = match (key.slots(), store.capabilities().semaphores) {
        (Some(_), Some(semaphores)) => semaphores.delete(key),
        _ => store.delete(key),
    };
    Error::Expired {
        message: format!(
            "Failed to store the \"{}\" {} in {}: it expired before it was acquired.",
            key.display_resource(),
            noun(key),
            store.name()
        ),
    }
}

/// The failure of an extension whose key ran out of lifetime on the way (symfony/lock's message).
pub(crate) fn expired_on_refresh(store: &dyn Store, key: &Key) -> Error {
    Error::Expired {
        message: format!(
            "Failed to put off the expiration of the \"{}\" {} in {} within the specified time.",
            key.display_resource(),
            noun(key),
            store.name()
        ),
    }
}

/// What a key stands for in a message: a lock, or a semaphore (a key with slots).
pub(crate) fn noun(key: &Key) -> &'static str {
    if key.slots().is_some() {
        "semaphore"
    } else {
        "lock"
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

/// The one polling loop: retries `save` until it stops conflicting or `deadline` passes, sleeping
/// `next_pause()` between attempts (never past the deadline). Stores that cannot be woken poll
/// this way: 90-110 ms apart ([`poll_interval`], as symfony/lock), or on a schedule of their own.
pub(crate) fn poll(
    deadline: Option<Instant>,
    report: &mut WaitReport,
    mut next_pause: impl FnMut() -> Duration,
    mut save: impl FnMut() -> Result<()>,
) -> Result<bool> {
    loop {
        match save() {
            Ok(()) => return Ok(true),
            Err(e) if e.is_conflict() => {}
            Err(e) => return Err(e),
        }
        let mut pause = next_pause();
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            pause = pause.min(left);
        }
        std::thread::sleep(pause);
        report.polls += 1;
        if crate::interrupt::requested() {
            report.interrupted = true;
            return Ok(false);
        }
    }
}

/// 90-110 ms, so that pollers started together spread out.
pub(crate) fn poll_interval() -> Duration {
    let jitter = getrandom::u32().map_or(0, |r| u64::from(r) % (2 * POLL_JITTER_MS + 1));
    Duration::from_millis(POLL_MS - POLL_JITTER_MS + jitter)
}
