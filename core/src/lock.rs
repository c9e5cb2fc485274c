//! The rules of a lock, after symfony/lock's `Lock`: acquire (exclusive or shared, blocking or
//! not), refresh, release, and the release when the lock object dies. Store failures are wrapped
//! here, once, into `Acquiring`/`Releasing` errors; every outcome is reported as an [`Event`].
//!
//! Deadbolt's differences from symfony/lock, each deliberate:
//! - a lock inherited through `fork()` is inert in the child (never released or refreshed there);
//! - dropping a lock never fails and never logs (it may run during PHP's shutdown);
//! - releasing trusts the store's delete instead of asking `exists` again (one call, not two).

use std::rc::Rc;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::event::{messages, Event, EventSink, Level};
use crate::store;
use crate::{Error, Key, Result, Store, Ttl};

/// A key shared between a lock and the PHP `Key` object it was made from.
/// (Stores are `Rc`: PHP runs a request on one thread, and a store may hold a PHP client.)
pub type SharedKey = Arc<Mutex<Key>>;

/// A lock on one key in one store.
pub struct Lock {
    key: SharedKey,
    store: Rc<dyn Store>,
    ttl: Option<Ttl>,
    auto_release: bool,
    /// True when this lock may hold the key in the store (symfony/lock's `dirty`): only then is
    /// the lock released when it dies.
    dirty: bool,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("resource", &self.key.lock().display_resource())
            .field("store", &self.store.name())
            .field("ttl", &self.ttl.map(Ttl::as_secs))
            .field("auto_release", &self.auto_release)
            .finish()
    }
}

impl Lock {
    /// A lock on `key` in `store`. `ttl` is the lifetime given at each acquire and refresh.
    pub fn new(key: SharedKey, store: Rc<dyn Store>, ttl: Option<Ttl>, auto_release: bool) -> Self {
        Lock {
            key,
            store,
            ttl,
            auto_release,
            dirty: false,
        }
    }

    /// The key this lock is about.
    pub fn key(&self) -> &SharedKey {
        &self.key
    }

    /// The store this lock uses.
    pub fn store(&self) -> &Rc<dyn Store> {
        &self.store
    }

    /// Takes the lock exclusively. Non-blocking: `Ok(false)` when someone else holds it.
    /// Blocking: waits (natively, or by polling every ~100 ms) until it is free.
    ///
    /// # Errors
    /// [`Error::Acquiring`] with the cause when the store fails or the lock expired at once.
    pub fn acquire(&mut self, blocking: bool, sink: &mut dyn EventSink) -> Result<bool> {
        let store = Rc::clone(&self.store);
        let ttl = self.ttl;
        self.acquire_with(blocking, messages::ACQUIRED, sink, |key| {
            // A store whose locks expire takes the lock with this lock's TTL in one call.
            if let (Some(ttl), Some(expiring)) = (ttl, store.as_expiring()) {
                let save = |key: &mut Key| expiring.save_for(key, ttl);
                return until_saved(blocking, key, save).map(|()| true);
            }
            let saved = if blocking {
                store::wait_and_save(store.as_ref(), key)
            } else {
                store.save(key)
            };
            saved.map(|()| false)
        })
    }

    /// Takes a shared lock; falls back to [`Lock::acquire`] on stores without shared locks.
    ///
    /// # Errors
    /// As [`Lock::acquire`].
    pub fn acquire_read(&mut self, blocking: bool, sink: &mut dyn EventSink) -> Result<bool> {
        let store = Rc::clone(&self.store);
        if store.as_shared().is_none() {
            sink.emit(Event::new(Level::Debug, messages::READ_FALLBACK));
            return self.acquire(blocking, sink);
        }
        let ttl = self.ttl;
        self.acquire_with(blocking, messages::ACQUIRED_READ, sink, |key| {
            if let (Some(ttl), Some(expiring)) = (ttl, store.as_expiring()) {
                let save = |key: &mut Key| expiring.save_read_for(key, ttl);
                return until_saved(blocking, key, save).map(|()| true);
            }
            let saved = if blocking {
                store::wait_and_save_read(store.as_ref(), key)
            } else {
                store::save_read(store.as_ref(), key)
            };
            saved.map(|()| false)
        })
    }

    fn acquire_with(
        &mut self,
        blocking: bool,
        acquired_message: &'static str,
        sink: &mut dyn EventSink,
        save: impl FnOnce(&mut Key) -> Result<bool>,
    ) -> Result<bool> {
        let key = Arc::clone(&self.key);
        let mut key = key.lock();
        key.adopt_if_inherited();
        key.reset_lifetime();
        let saved = save(&mut key);
        let outcome = saved.and_then(|ttl_applied| {
            self.dirty = true;
            sink.emit(Event::new(Level::Debug, acquired_message));
            match self.ttl {
                // Saved with the TTL already: report it as symfony/lock's refresh would.
                Some(ttl) if ttl_applied => sink.emit(refreshed(ttl)),
                Some(ttl) => self.refresh_key(&mut key, ttl, sink)?,
                None => {}
            }
            if key.is_expired() {
                // Cleanup after a failure never replaces it: a failed delete here is dropped,
                // the store's own expiry removes what is left.
                let _ = self.store.delete(&mut key);
                self.dirty = false;
                return Err(Error::Expired {
                    message: format!(
                        "Failed to store the \"{}\" lock: it expired before it was acquired.",
                        key.display_resource()
                    ),
                });
            }
            Ok(())
        });
        match outcome {
            Ok(()) => Ok(true),
            Err(e) if e.is_conflict() => {
                self.dirty = false;
                sink.emit(Event::new(Level::Info, messages::CONFLICT));
                if blocking {
                    Err(e)
                } else {
                    Ok(false)
                }
            }
            // A failure inside refresh is already wrapped and logged there.
            Err(e @ Error::Acquiring { .. }) => Err(e),
            Err(e) => {
                let e = Error::Acquiring {
                    message: format!(
                        "Failed to acquire the \"{}\" lock on {}.",
                        key.display_resource(),
                        self.store.name()
                    ),
                    source: Box::new(e),
                };
                sink.emit(Event::new(Level::Notice, messages::ACQUIRE_FAILED).with_error(&e));
                Err(e)
            }
        }
    }

    /// Extends the lock by `ttl`, or by the lock's own TTL when `None`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when no TTL is known; [`Error::Conflict`] when this lock no
    /// longer holds the key; [`Error::Acquiring`] with the cause when the store fails.
    pub fn refresh(&mut self, ttl: Option<Ttl>, sink: &mut dyn EventSink) -> Result<()> {
        let Some(ttl) = ttl.or(self.ttl) else {
            return Err(Error::invalid_argument(
                "You have to define an expiration duration.",
            ));
        };
        let key = Arc::clone(&self.key);
        let mut key = key.lock();
        self.refresh_key(&mut key, ttl, sink)
    }

    fn refresh_key(&mut self, key: &mut Key, ttl: Ttl, sink: &mut dyn EventSink) -> Result<()> {
        let result = if key.is_inherited() {
            // The parent's ownership does not pass to a forked child.
            Err(self.not_held(key))
        } else {
            key.reset_lifetime();
            self.store.put_off_expiration(key, ttl)
        };
        let result = result.and_then(|()| {
            self.dirty = true;
            if key.is_expired() {
                return Err(Error::Expired {
                    message: format!(
                        "Failed to put off the expiration of the \"{}\" lock within the specified time.",
                        key.display_resource()
                    ),
                });
            }
            Ok(())
        });
        match result {
            Ok(()) => {
                sink.emit(refreshed(ttl));
                Ok(())
            }
            Err(e) if e.is_conflict() => {
                self.dirty = false;
                sink.emit(Event::new(Level::Notice, messages::REFRESH_CONFLICT));
                Err(e)
            }
            Err(e) => {
                let e = Error::Acquiring {
                    message: format!(
                        "Failed to define an expiration for the \"{}\" lock on {}.",
                        key.display_resource(),
                        self.store.name()
                    ),
                    source: Box::new(e),
                };
                sink.emit(Event::new(Level::Notice, messages::REFRESH_FAILED).with_error(&e));
                Err(e)
            }
        }
    }

    /// Whether this lock holds its key (asks the store).
    ///
    /// # Errors
    /// [`Error::Storage`] when the store fails.
    pub fn is_acquired(&mut self) -> Result<bool> {
        let key = self.key.lock();
        let held = !key.is_inherited() && self.store.exists(&key)?;
        self.dirty = held;
        Ok(held)
    }

    /// Releases the lock; does nothing when it is not held (or was inherited through fork()).
    ///
    /// # Errors
    /// [`Error::Releasing`] with the cause when the store fails.
    pub fn release(&mut self, sink: &mut dyn EventSink) -> Result<()> {
        let key = Arc::clone(&self.key);
        let mut key = key.lock();
        if key.is_inherited() {
            self.dirty = false;
            return Ok(());
        }
        match self.store.delete(&mut key) {
            Ok(()) => {
                self.dirty = false;
                sink.emit(Event::new(Level::Debug, messages::RELEASED));
                Ok(())
            }
            Err(e) => {
                let e = Error::Releasing {
                    message: format!(
                        "Failed to release the \"{}\" lock on {}.",
                        key.display_resource(),
                        self.store.name()
                    ),
                    source: Box::new(e),
                };
                sink.emit(Event::new(Level::Notice, messages::RELEASE_FAILED).with_error(&e));
                Err(e)
            }
        }
    }

    /// True once the key's lifetime has passed.
    pub fn is_expired(&self) -> bool {
        self.key.lock().is_expired()
    }

    /// Seconds left (negative once past), `None` without expiry.
    pub fn remaining_lifetime(&self) -> Option<f64> {
        self.key.lock().remaining_lifetime()
    }

    fn not_held(&self, key: &Key) -> Error {
        Error::not_held(key.display_resource(), self.store.name())
    }
}

impl Lock {
    /// The release of a lock that dies while held (symfony/lock's destructor), silent: it may run
    /// during PHP's shutdown, where neither an exception nor a log call is possible. Does nothing
    /// when auto-release is off, when the lock is not held, or when it was inherited through fork().
    pub fn release_on_death(&mut self) {
        if !self.auto_release || !self.dirty {
            return;
        }
        let Some(mut key) = self.key.try_lock() else {
            // Never the case in single-threaded PHP; waiting here could only deadlock.
            return;
        };
        if key.is_inherited() {
            return;
        }
        // delete() is owner-checked, so no exists() round trip first. Nothing can report a
        // failure from here; the store's expiry is the fallback.
        let _ = self.store.delete(&mut key);
        drop(key);
        self.dirty = false;
    }
}

impl Drop for Lock {
    /// The last line of defence (after a fatal error PHP runs no destructors): only for stores
    /// that need no PHP call. The others were released by `Lock::__destruct`.
    fn drop(&mut self) {
        if self.store.releases_from_drop() {
            self.release_on_death();
        }
    }
}

/// The log event of a successful extension, symfony/lock's "Expiration defined" message.
fn refreshed(ttl: Ttl) -> Event<'static> {
    let mut event = Event::new(Level::Debug, messages::REFRESHED);
    event.ttl = Some(ttl.as_secs());
    event
}

/// One save, or a polling wait until it stops conflicting.
fn until_saved(
    blocking: bool,
    key: &mut Key,
    mut save: impl FnMut(&mut Key) -> Result<()>,
) -> Result<()> {
    if blocking {
        store::poll(|| save(key))
    } else {
        save(key)
    }
}
