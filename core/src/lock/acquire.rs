//! Acquire: take the lock now, or wait for it (natively where the store can, else by polling).

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{refreshed, Lock, Wait};
use crate::event::{Event, EventSink, Level};
use crate::metrics::{self, Counter, Timing};
use crate::refresher;
use crate::store::{self, Mode, WaitReport};
use crate::{Error, Key, Result};

impl Lock {
    /// Takes the lock in `mode`. `Wait::No`: `Ok(false)` when someone else holds it. Otherwise
    /// waits (natively where the store can) until it is free, or until the deadline (`Ok(false)`).
    ///
    /// # Errors
    /// [`Error::Acquiring`] with the cause when the store fails or the lock expired at once;
    /// [`Error::Conflict`] when a blocking acquire lost the lock right after taking it.
    pub fn acquire(&mut self, mode: Mode, wait: Wait, sink: &mut dyn EventSink) -> Result<bool> {
        self.report_background(sink);
        let started = Instant::now();
        let outcome = self.take(mode, wait, started, sink);
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

    fn take(
        &mut self,
        mode: Mode,
        wait: Wait,
        started: Instant,
        sink: &mut dyn EventSink,
    ) -> Result<bool> {
        let store = Rc::clone(self.store());
        let key = Arc::clone(&self.key);
        let mut key = key.lock();
        self.ticket = None;
        self.lost = false;
        self.fence = None;
        key.adopt_if_inherited();
        key.reset_lifetime();
        // A store whose locks expire takes the lock with this lock's TTL in the same call.
        let expires = store.capabilities().expiring.is_some();
        let ttl = self.ttl.filter(|_| expires);
        let mut report = WaitReport::default();
        let saved = match wait {
            Wait::No => store.save(&mut key, mode, ttl).map(|()| true),
            Wait::Forever => store::wait(store.as_ref(), &mut key, mode, ttl, None, &mut report),
            Wait::Until(deadline) => {
                let deadline = Some(deadline);
                store::wait(store.as_ref(), &mut key, mode, ttl, deadline, &mut report)
            }
        };
        metrics::count(Counter::Wakeups, report.wakeups);
        metrics::count(Counter::Polls, report.polls);
        let outcome = match saved {
            Ok(true) => self.taken(&mut key, mode, started, sink),
            other => other,
        };
        self.settled(outcome, (wait, report.interrupted), started, &key, sink)
    }

    /// The store saved the key (with the lock's TTL where its locks expire): reported, and checked
    /// unexpired.
    fn taken(
        &mut self,
        key: &mut Key,
        mode: Mode,
        started: Instant,
        sink: &mut dyn EventSink,
    ) -> Result<bool> {
        self.dirty = true;
        let acquired_message = match mode {
            Mode::Exclusive => self.words.acquired,
            Mode::Shared => self.words.acquired_read,
        };
        sink.emit(Event::new(Level::Debug, acquired_message).waited(started.elapsed()));
        // Saved with the TTL already, or by a store whose locks never expire: nothing is left to
        // extend. Such a store's putOffExpiration only checks that the key holds the lock, which
        // the save has just said (a round trip on PostgreSQL and MySQL; symfony/lock's stores
        // that never expire do nothing there either). Reported as symfony/lock's refresh would.
        if let Some(ttl) = self.ttl {
            sink.emit(refreshed(self.words, ttl));
        }
        if key.is_expired() {
            self.dirty = false;
            return Err(store::expired_on_save(self.store().as_ref(), key));
        }
        Ok(true)
    }

    /// The acquire's outcome as its caller sees it, each with its event: not taken, a conflict
    /// (not an error when not waiting), or the store's failure wrapped once.
    fn settled(
        &mut self,
        outcome: Result<bool>,
        (wait, interrupted): (Wait, bool),
        started: Instant,
        key: &Key,
        sink: &mut dyn EventSink,
    ) -> Result<bool> {
        match outcome {
            Ok(true) => Ok(true),
            Ok(false) => {
                // Only a deadline (or the host's interrupt) ends a wait with false.
                self.dirty = false;
                let event = match wait {
                    Wait::Until(deadline) if !interrupted => {
                        Event::new(Level::Info, self.words.timed_out)
                            .allowed(deadline.saturating_duration_since(started))
                    }
                    _ => Event::new(Level::Info, self.words.conflict),
                };
                sink.emit(event.waited(started.elapsed()));
                Ok(false)
            }
            Err(e) if e.is_conflict() => {
                self.dirty = false;
                sink.emit(Event::new(Level::Info, self.words.conflict));
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
                        "Failed to acquire the \"{}\" {} on {}.",
                        key.display_resource(),
                        self.words.noun,
                        self.store().name()
                    ),
                    source: Box::new(e),
                };
                sink.emit(Event::new(Level::Notice, self.words.acquire_failed).with_error(&e));
                Err(e)
            }
        }
    }

    fn start_refreshing(&mut self) {
        let (true, Some(ttl)) = (self.auto_refresh.enabled, self.ttl) else {
            return;
        };
        let Some(extender) = self
            .store()
            .capabilities()
            .expiring
            .and_then(|store| store.extender())
        else {
            return;
        };
        let mut key = self.key.lock();
        let Some(token) = key.drawn_token() else {
            return;
        };
        // The store's expiry counts from before the save was sent, as the key's lifetime does.
        let expires_at = key
            .remaining_lifetime()
            .and_then(|left| Duration::try_from_secs_f64(left.max(0.0)).ok())
            .map(|left| Instant::now() + left);
        let registered = refresher::register(
            extender,
            key.resource().to_vec(),
            token.as_str().to_owned(),
            ttl,
            expires_at,
            self.auto_refresh.max_hold,
        );
        // Without the thread the lock still works; it just is not kept alive. With it, the key's
        // lifetime follows the refresher's extensions.
        self.ticket = registered.ok();
        if let Some(ticket) = &self.ticket {
            key.follow_expiry(ticket.expiry());
        }
    }
}
