//! The store contract, one trait per capability, after symfony/lock's interfaces:
//! every store persists ([`Store`]); some also share ([`SharedStore`]), block natively
//! ([`BlockingStore`]) or both ([`BlockingSharedStore`]). The fallback for a store that cannot
//! block (polling) lives once, in [`crate::lock`].

pub mod flock;
pub mod flock_path;
pub mod memory;
pub mod redis;

use std::time::Duration;

use crate::{Key, Result, Ttl};

/// Poll interval for blocking waits on stores that cannot block natively, as in symfony/lock.
const POLL_MS: u64 = 100;
const POLL_JITTER_MS: u64 = 10;

/// What every store does. Errors: a held lock is [`crate::Error::Conflict`]; anything else that
/// goes wrong in the store is [`crate::Error::Storage`].
pub trait Store {
    /// The store's name for messages, e.g. `FlockStore(/var/lib/app/locks)`. Never holds a secret.
    fn name(&self) -> &str;

    /// Takes the lock exclusively for `key`, or promotes `key`'s shared lock.
    ///
    /// # Errors
    /// Conflict when someone else holds it; Storage when the store fails.
    fn save(&self, key: &mut Key) -> Result<()>;

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

    /// Whether a lock may be released from Rust's `Drop` (no PHP call on the way). Stores that
    /// talk through a PHP object answer false and are released by `Lock::__destruct` instead.
    fn releases_from_drop(&self) -> bool {
        true
    }

    /// A warning about the store's setup noticed during the last calls (an evicting Redis), once.
    fn take_warning(&self) -> Option<String> {
        None
    }

    /// The capability to take a lock with a given TTL in one step, if the store's locks expire.
    fn as_expiring(&self) -> Option<&dyn ExpiringStore> {
        None
    }

    /// The shared-lock capability, if the store has it.
    fn as_shared(&self) -> Option<&dyn SharedStore> {
        None
    }

    /// The native blocking capability, if the store has it.
    fn as_blocking(&self) -> Option<&dyn BlockingStore> {
        None
    }

    /// The native blocking shared capability, if the store has it.
    fn as_blocking_shared(&self) -> Option<&dyn BlockingSharedStore> {
        None
    }
}

/// Stores that grant shared (read) locks.
pub trait SharedStore: Store {
    /// Takes a shared lock for `key`, or demotes its exclusive lock.
    ///
    /// # Errors
    /// Conflict when a writer holds it; Storage when the store fails.
    fn save_read(&self, key: &mut Key) -> Result<()>;
}

/// Stores whose locks expire, and which can take a lock for a given TTL in one step (one round
/// trip) instead of a save with the initial TTL followed by an extension.
pub trait ExpiringStore: Store {
    /// As [`Store::save`], for `ttl`.
    ///
    /// # Errors
    /// As [`Store::save`]; [`crate::Error::Expired`] when the lock expired before it was taken.
    fn save_for(&self, key: &mut Key, ttl: Ttl) -> Result<()>;

    /// As [`SharedStore::save_read`], for `ttl`.
    ///
    /// # Errors
    /// As [`Store::save`].
    fn save_read_for(&self, key: &mut Key, ttl: Ttl) -> Result<()>;
}

/// Stores that can wait for an exclusive lock without polling.
pub trait BlockingStore: Store {
    /// Waits until the exclusive lock is free, then takes it.
    ///
    /// # Errors
    /// Storage when the store fails.
    fn wait_and_save(&self, key: &mut Key) -> Result<()>;
}

/// Stores that can wait for a shared lock without polling.
pub trait BlockingSharedStore: SharedStore {
    /// Waits until no writer holds the lock, then takes a shared lock.
    ///
    /// # Errors
    /// Storage when the store fails.
    fn wait_and_save_read(&self, key: &mut Key) -> Result<()>;
}

/// Takes a shared lock where the store has them, an exclusive one otherwise.
///
/// # Errors
/// As [`SharedStore::save_read`] or [`Store::save`].
pub fn save_read(store: &dyn Store, key: &mut Key) -> Result<()> {
    match store.as_shared() {
        Some(shared) => shared.save_read(key),
        None => store.save(key),
    }
}

/// Waits for the exclusive lock: natively where the store can, by polling every ~100 ms otherwise.
///
/// # Errors
/// Storage when the store fails.
pub fn wait_and_save(store: &dyn Store, key: &mut Key) -> Result<()> {
    match store.as_blocking() {
        Some(native) => native.wait_and_save(key),
        None => poll(|| store.save(key)),
    }
}

/// Waits for a shared lock (an exclusive one on stores without shared locks), natively where
/// the store can, by polling otherwise.
///
/// # Errors
/// Storage when the store fails.
pub fn wait_and_save_read(store: &dyn Store, key: &mut Key) -> Result<()> {
    match (store.as_blocking_shared(), store.as_shared()) {
        (Some(native), _) => native.wait_and_save_read(key),
        (None, Some(shared)) => poll(|| shared.save_read(key)),
        (None, None) => wait_and_save(store, key),
    }
}

/// Calls `save` until it stops reporting a conflict, sleeping 90-110 ms between attempts so that
/// pollers started together spread out.
pub(crate) fn poll(mut save: impl FnMut() -> Result<()>) -> Result<()> {
    loop {
        match save() {
            Err(e) if e.is_conflict() => {
                let jitter =
                    getrandom::u32().map_or(0, |r| u64::from(r) % (2 * POLL_JITTER_MS + 1));
                std::thread::sleep(Duration::from_millis(POLL_MS - POLL_JITTER_MS + jitter));
            }
            other => return other,
        }
    }
}
