//! The rules of a lock, after symfony/lock's `Lock`: acquire (exclusive or shared, blocking or
//! not; `acquire.rs`), refresh (`refresh.rs`), release, and the release when the lock object dies
//! (`release.rs`). Store failures are wrapped here, once, into `Acquiring`/`Releasing` errors;
//! every outcome is reported as an [`Event`] and counted in [`crate::metrics`].
//!
//! Deadbolt's differences from symfony/lock, each deliberate:
//! - waits can have a deadline (monotonic clock) and end in `false`;
//! - a lock can be kept alive by the background refresher (`crate::refresher`); once that finds
//!   the lock gone, the lock is "lost" and the next refresh or release says so;
//! - a lock inherited through `fork()` is inert in the child (never released or refreshed there);
//!   an acquire in the child adopts the key first, so no store ever sees an inherited key;
//! - dropping a lock never fails and never logs (it may run during PHP's shutdown);
//! - releasing trusts the store's delete instead of asking `exists` again (one call, not two).

mod acquire;
mod refresh;
mod release;

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::event::{Event, EventSink, Level, Words, LOCK, SEMAPHORE};
use crate::refresher::Ticket;
use crate::store::PendingRelease;
use crate::{Error, Key, Result, Store, Ttl};

/// A key shared between a lock and the PHP `Key` object it was made from.
/// (Stores are `Rc`: PHP runs a request on one thread, and a store may hold a PHP client.)
pub type SharedKey = Arc<Mutex<Key>>;

/// A store as a lock holds it, by where the store may be called from.
#[derive(Clone)]
pub enum StoreRef {
    /// The store needs nothing from its caller's runtime (a file, this process's memory, a native
    /// connection): it may be called anywhere, so a lock dropped while held releases itself.
    Owned(Rc<dyn Store>),
    /// The store talks through a connection the application lent it (a PHP `\Redis` object),
    /// which may be called only inside the application's own calls: never from `Drop`. The
    /// extension releases such locks in PHP's destructor phase and from a shutdown function.
    Lent(Rc<dyn Store>),
}

impl StoreRef {
    /// The store itself.
    pub fn store(&self) -> &Rc<dyn Store> {
        match self {
            StoreRef::Owned(store) | StoreRef::Lent(store) => store,
        }
    }
}

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
    store: StoreRef,
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
    /// The fencing token of the current exclusive hold, once drawn: one per hold.
    fence: Option<u64>,
    /// The last release, when it was sent without waiting for its reply (`release=deferred`):
    /// a failure is reported at this lock's next acquire, refresh or release.
    pending_release: Option<PendingRelease>,
    /// What its messages call it: a lock, or a semaphore (a key with slots).
    words: &'static Words,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("resource", &self.key.lock().display_resource())
            .field("store", &self.store().name())
            .field("ttl", &self.ttl.map(Ttl::as_secs))
            .field("auto_release", &self.auto_release)
            .finish()
    }
}

impl Lock {
    /// A lock on `key` in `store`. `ttl` is the lifetime given at each acquire and refresh.
    pub fn new(key: SharedKey, store: StoreRef, ttl: Option<Ttl>, auto_release: bool) -> Self {
        let words = if key.lock().slots().is_some() {
            &SEMAPHORE
        } else {
            &LOCK
        };
        Lock {
            words,
            key,
            store,
            ttl,
            auto_release,
            auto_refresh: AutoRefresh::default(),
            dirty: false,
            held_since: None,
            ticket: None,
            lost: false,
            fence: None,
            pending_release: None,
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
            let expiring = self.store().capabilities().expiring;
            if expiring.is_some_and(|store| store.extender().is_none()) {
                return Err(Error::invalid_argument(format!(
                    "autoRefresh needs a store the refresher can reach without PHP (a Redis DSN), not {}.",
                    self.store().name()
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
        self.store.store()
    }

    /// How this lock holds its store.
    pub fn store_ref(&self) -> &StoreRef {
        &self.store
    }

    /// Whether this lock holds its key (asks the store).
    ///
    /// # Errors
    /// [`Error::Storage`] when the store fails.
    pub fn is_acquired(&mut self) -> Result<bool> {
        let key = self.key.lock();
        let held = !key.is_inherited() && self.store().exists(&key)?;
        self.dirty = held;
        Ok(held)
    }

    /// Passes on what happened out of sight since the last call (neither the refresher nor a
    /// connection reading a deferred release's reply can log): the refresher's news, and a
    /// deferred release that failed.
    fn report_background(&mut self, sink: &mut dyn EventSink) {
        if self
            .pending_release
            .as_ref()
            .is_some_and(|p| p.outcome().is_none())
        {
            if let Some(deferring) = self.store().capabilities().deferring {
                deferring.read_replies();
            }
        }
        if let Some(outcome) = self
            .pending_release
            .as_ref()
            .and_then(PendingRelease::outcome)
        {
            if let Err(why) = outcome {
                let e = Error::Releasing {
                    message: format!(
                        "Failed to release the \"{}\" {} on {}.",
                        self.key.lock().display_resource(),
                        self.words.noun,
                        self.store().name()
                    ),
                    source: Box::new(Error::Storage {
                        message: why.to_owned(),
                        source: None,
                    }),
                };
                sink.emit(
                    Event::new(Level::Notice, self.words.release_failed).with_earlier_error(&e),
                );
            }
            self.pending_release = None;
        }
        let Some(news) = self.ticket.as_ref().map(Ticket::take_news) else {
            return;
        };
        if news.refreshes > 0 {
            let event = Event::new(Level::Debug, self.words.refreshed_in_background);
            sink.emit(event.counted(news.refreshes));
        }
        if news.failures > 0 {
            let event = Event::new(Level::Notice, self.words.background_refresh_failed);
            sink.emit(event.counted(news.failures));
        }
        if news.lost {
            sink.emit(Event::new(Level::Warning, self.words.lost));
        }
    }

    /// True once the background refresher found this lock gone: no network call.
    pub fn is_lost(&self) -> bool {
        self.lost || self.ticket.as_ref().is_some_and(Ticket::is_lost)
    }

    /// The fencing token of the current exclusive hold (`None` when not held exclusively, or
    /// when the store draws none), drawn from the store on first request and kept for the hold.
    ///
    /// # Errors
    /// [`Error::Storage`] when the store fails to draw one.
    pub fn fencing_token(&mut self) -> Result<Option<u64>> {
        let mut key = self.key.lock();
        // A lock inherited through fork() is inert: not even the token its parent drew.
        if !self.dirty || key.is_inherited() {
            return Ok(None);
        }
        if self.fence.is_none() {
            let Some(fencing) = self.store.store().capabilities().fencing else {
                return Ok(None);
            };
            self.fence = fencing.draw_fencing_token(&mut key)?;
        }
        Ok(self.fence)
    }

    /// Whether this lock took its key and has not let go since, as far as it knows (no store
    /// call: symfony/lock's `dirty`).
    pub fn holds(&self) -> bool {
        self.dirty && !self.is_lost()
    }

    /// The TTL given at each acquire and refresh.
    pub fn ttl(&self) -> Option<Ttl> {
        self.ttl
    }

    /// True once the key's lifetime has passed.
    pub fn is_expired(&self) -> bool {
        self.key.lock().is_expired()
    }

    /// Seconds left (negative once past), `None` without expiry.
    pub fn remaining_lifetime(&self) -> Option<f64> {
        self.key.lock().remaining_lifetime()
    }
}

impl Drop for Lock {
    /// The last line of defence (after a fatal error PHP runs no destructors): only for stores
    /// it owns. Locks on lent connections were released in PHP's destructor phase.
    fn drop(&mut self) {
        if let StoreRef::Owned(_) = self.store {
            self.release_on_death();
        }
        self.ticket = None;
    }
}

/// The log event of a successful extension, symfony/lock's (or symfony/semaphore's) "Expiration
/// defined" message.
fn refreshed(words: &'static Words, ttl: Ttl) -> Event<'static> {
    let mut event = Event::new(Level::Debug, words.refreshed);
    event.ttl = Some(ttl.as_secs());
    event
}
