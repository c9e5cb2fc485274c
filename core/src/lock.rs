//! The rules of a lock, after symfony/lock's `Lock`: acquire (exclusive or shared, blocking or
//! not), refresh, release, and the release when the lock object dies. Store failures are wrapped
//! here, once, into `Acquiring`/`Releasing` errors; every outcome is reported as an [`Event`] and
//! counted in [`crate::metrics`].
//!
//! Deadbolt's differences from symfony/lock, each deliberate:
//! - waits can have a deadline (monotonic clock) and end in `false`;
//! - a lock can be kept alive by the background refresher (`crate::refresher`); once that finds
//!   the lock gone, the lock is "lost" and the next refresh or release says so;
//! - a lock inherited through `fork()` is inert in the child (never released or refreshed there);
//! - dropping a lock never fails and never logs (it may run during PHP's shutdown);
//! - releasing trusts the store's delete instead of asking `exists` again (one call, not two).

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::event::{messages, Event, EventSink, Level};
use crate::metrics::{self, Counter, Timing};
use crate::refresher::{self, Ticket};
use crate::store::{Mode, WaitReport};
use crate::{Error, Key, Result, Store, Ttl};

/// A key shared between a lock and the PHP `Key` object it was made from.
/// (Stores are `Rc`: PHP runs a request on one thread, and a store may hold a PHP client.)
pub type SharedKey = Arc<Mutex<Key>>;

/// How long an acquire may wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Not at all: a held lock answers false at once.
    No,
    /// Until the lock is free (symfony/lock's blocking acquire).
    Forever,
    /// Until the lock is free or the deadline passes (then false).
    Until(Instant),
}

/// Options of the background refresher for one lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AutoRefresh {
    /// Keep the TTL topped up from a background thread.
    pub enabled: bool,
    /// Stop refreshing after this long, letting the lock run out.
    pub max_hold: Option<Duration>,
}

/// A lock on one key in one store.
pub struct Lock {
    key: SharedKey,
    store: Rc<dyn Store>,
    ttl: Option<Ttl>,
    auto_release: bool,
    auto_refresh: AutoRefresh,
    /// True when this lock may hold the key in the store (symfony/lock's `dirty`): only then is
    /// the lock released when it dies.
    dirty: bool,
    /// When the current hold began, for the hold-time metric.
    held_since: Option<Instant>,
    /// The refresher's registration while the lock is held and auto-refreshed.
    ticket: Option<Ticket>,
    /// Set once this hold was found lost; stays until the next acquire.
    lost: bool,
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
            auto_refresh: AutoRefresh::default(),
            dirty: false,
            held_since: None,
            ticket: None,
            lost: false,
        }
    }

    /// Keeps the lock's TTL topped up by the background refresher while it is held.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the lock has no TTL, or its store expires locks but cannot
    /// be reached without PHP (a Redis store over a PHP client object).
    pub fn with_auto_refresh(mut self, auto_refresh: AutoRefresh) -> Result<Self> {
        if auto_refresh.enabled {
            if self.ttl.is_none() {
                return Err(Error::invalid_argument(
                    "autoRefresh needs a TTL to keep topped up.",
                ));
            }
            if self.store.expires() && self.store.extender().is_none() {
                return Err(Error::invalid_argument(format!(
                    "autoRefresh needs a store the refresher can reach without PHP (a Redis DSN), not {}.",
                    self.store.name()
                )));
            }
        }
        self.auto_refresh = auto_refresh;
        Ok(self)
    }

    /// The key this lock is about.
    pub fn key(&self) -> &SharedKey {
        &self.key
    }

    /// The store this lock uses.
    pub fn store(&self) -> &Rc<dyn Store> {
        &self.store
    }

    /// Takes the lock in `mode`. `Wait::No`: `Ok(false)` when someone else holds it. Otherwise
    /// waits (natively where the store can) until it is free, or until the deadline (`Ok(false)`).
    ///
    /// # Errors
    /// [`Error::Acquiring`] with the cause when the store fails or the lock expired at once;
    /// [`Error::Conflict`] when a blocking acquire lost the lock right after taking it.
    pub fn acquire(&mut self, mode: Mode, wait: Wait, sink: &mut dyn EventSink) -> Result<bool> {
        let started = Instant::now();
        let outcome = self.take(mode, wait, sink);
        metrics::time(Timing::Wait, started.elapsed());
        match &outcome {
            Ok(true) => {
                metrics::count(Counter::Acquired, 1);
                self.held_since = Some(Instant::now());
                self.start_refreshing();
            }
            Ok(false) if wait == Wait::No => metrics::count(Counter::Conflicts, 1),
            Ok(false) => metrics::count(Counter::Timeouts, 1),
            Err(e) if e.is_conflict() => metrics::count(Counter::Conflicts, 1),
            Err(_) => metrics::count(Counter::StoreErrors, 1),
        }
        outcome
    }

    fn take(&mut self, mode: Mode, wait: Wait, sink: &mut dyn EventSink) -> Result<bool> {
        let store = Rc::clone(&self.store);
        let key = Arc::clone(&self.key);
        let mut key = key.lock();
        self.ticket = None;
        self.lost = false;
        key.adopt_if_inherited();
        key.reset_lifetime();
        // A store whose locks expire takes the lock with this lock's TTL in the same call.
        let ttl = self.ttl.filter(|_| store.expires());
        let mut report = WaitReport::default();
        let saved = match wait {
            Wait::No => store.save(&mut key, mode, ttl).map(|()| true),
            Wait::Forever => store.wait(&mut key, mode, ttl, None, &mut report),
            Wait::Until(deadline) => store.wait(&mut key, mode, ttl, Some(deadline), &mut report),
        };
        metrics::count(Counter::Wakeups, report.wakeups);
        metrics::count(Counter::Polls, report.polls);
        let acquired_message = match mode {
            Mode::Exclusive => messages::ACQUIRED,
            Mode::Shared => messages::ACQUIRED_READ,
        };
        let outcome = saved.and_then(|taken| {
            if !taken {
                return Ok(false);
            }
            self.dirty = true;
            sink.emit(Event::new(Level::Debug, acquired_message));
            match self.ttl {
                // Saved with the TTL already: report it as symfony/lock's refresh would.
                Some(ttl) if store.expires() => sink.emit(refreshed(ttl)),
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
            Ok(true)
        });
        match outcome {
            Ok(true) => Ok(true),
            Ok(false) => {
                // Only a deadline ends a wait with false.
                self.dirty = false;
                sink.emit(Event::new(Level::Info, messages::CONFLICT));
                Ok(false)
            }
            Err(e) if e.is_conflict() => {
                self.dirty = false;
                sink.emit(Event::new(Level::Info, messages::CONFLICT));
                if wait == Wait::No {
                    Ok(false)
                } else {
                    Err(e)
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

    fn start_refreshing(&mut self) {
        let (true, Some(ttl)) = (self.auto_refresh.enabled, self.ttl) else {
            return;
        };
        let Some(extender) = self.store.extender() else {
            return;
        };
        let key = self.key.lock();
        let Some(token) = key.drawn_token() else {
            return;
        };
        let registered = refresher::register(
            extender,
            key.resource().to_vec(),
            token.as_str().to_owned(),
            ttl,
            self.auto_refresh.max_hold,
        );
        // Without the thread the lock still works; it just is not kept alive.
        self.ticket = registered.ok();
    }

    /// Extends the lock by `ttl`, or by the lock's own TTL when `None`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when no TTL is known; [`Error::Expired`] when the refresher
    /// found the lock lost; [`Error::Conflict`] when this lock no longer holds the key;
    /// [`Error::Acquiring`] with the cause when the store fails.
    pub fn refresh(&mut self, ttl: Option<Ttl>, sink: &mut dyn EventSink) -> Result<()> {
        let Some(ttl) = ttl.or(self.ttl) else {
            return Err(Error::invalid_argument(
                "You have to define an expiration duration.",
            ));
        };
        let key = Arc::clone(&self.key);
        let mut key = key.lock();
        if self.is_lost() {
            self.lost = true;
            return Err(self.lost_error(&key));
        }
        let result = self.refresh_key(&mut key, ttl, sink);
        match &result {
            Ok(()) => metrics::count(Counter::RefreshOk, 1),
            Err(_) => metrics::count(Counter::RefreshFailed, 1),
        }
        result
    }

    fn refresh_key(&mut self, key: &mut Key, ttl: Ttl, sink: &mut dyn EventSink) -> Result<()> {
        let result = if key.is_inherited() {
            // The parent's ownership does not pass to a forked child.
            Err(Error::not_held(key.display_resource(), self.store.name()))
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

    /// True once the background refresher found this lock gone: no network call.
    pub fn is_lost(&self) -> bool {
        self.lost || self.ticket.as_ref().is_some_and(Ticket::is_lost)
    }

    /// The fencing token of the current exclusive hold (`None` when not held exclusively).
    ///
    /// # Errors
    /// [`Error::Storage`] when the store fails to draw one.
    pub fn fencing_token(&self) -> Result<Option<u64>> {
        if !self.dirty {
            return Ok(None);
        }
        let mut key = self.key.lock();
        self.store.fencing_token(&mut key)
    }

    /// Releases the lock; does nothing when it is not held (or was inherited through fork()).
    ///
    /// # Errors
    /// [`Error::Expired`] when the refresher found the lock lost (it is not held any more);
    /// [`Error::Releasing`] with the cause when the store fails.
    pub fn release(&mut self, sink: &mut dyn EventSink) -> Result<()> {
        let key = Arc::clone(&self.key);
        let mut key = key.lock();
        if key.is_inherited() {
            self.dirty = false;
            return Ok(());
        }
        self.lost = self.is_lost();
        self.ticket = None;
        if self.lost {
            // Nothing to release: the hold ended when the lock was lost, not here.
            self.dirty = false;
            self.held_since = None;
            return Err(self.lost_error(&key));
        }
        match self.store.delete(&mut key) {
            Ok(()) => {
                self.dirty = false;
                self.end_hold();
                sink.emit(Event::new(Level::Debug, messages::RELEASED));
                Ok(())
            }
            Err(e) => {
                metrics::count(Counter::StoreErrors, 1);
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

    fn end_hold(&mut self) {
        if let Some(since) = self.held_since.take() {
            metrics::count(Counter::Released, 1);
            metrics::time(Timing::Hold, since.elapsed());
        }
    }

    fn lost_error(&self, key: &Key) -> Error {
        Error::Expired {
            message: format!(
                "The \"{}\" lock was lost: the refresher found it gone from {} (expired or taken).",
                key.display_resource(),
                self.store.name()
            ),
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

    /// The release of a lock that dies while held (symfony/lock's destructor), silent: it may run
    /// during PHP's shutdown, where neither an exception nor a log call is possible. Does nothing
    /// when auto-release is off, when the lock is not held, or when it was inherited through fork().
    pub fn release_on_death(&mut self) {
        self.ticket = None;
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
        self.end_hold();
    }
}

impl Drop for Lock {
    /// The last line of defence (after a fatal error PHP runs no destructors): only for stores
    /// that need no PHP call. The others were released in PHP's destructor phase.
    fn drop(&mut self) {
        if self.store.releases_from_drop() {
            self.release_on_death();
        }
        self.ticket = None;
    }
}

/// The log event of a successful extension, symfony/lock's "Expiration defined" message.
fn refreshed(ttl: Ttl) -> Event<'static> {
    let mut event = Event::new(Level::Debug, messages::REFRESHED);
    event.ttl = Some(ttl.as_secs());
    event
}
