//! Refresh: extend the lock's TTL (by hand; the background refresher is `crate::refresher`).

use std::sync::Arc;
use std::time::Instant;

use super::{refreshed, Lock};
use crate::event::{Event, EventSink, Level};
use crate::metrics::{self, Counter};
use crate::{Error, Key, Result, Ttl};

impl Lock {
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
        self.report_background(sink);
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

    pub(super) fn refresh_key(
        &mut self,
        key: &mut Key,
        ttl: Ttl,
        sink: &mut dyn EventSink,
    ) -> Result<()> {
        // Held, and not expired by our own clock: a store that now says "not yours" had the lock
        // taken away (an operator's forceRelease(), a removed lock file), and that is a lost lock,
        // not a conflict (which an expired lock's refresh is, as in symfony/lock).
        let taken_away_if_refused = self.dirty && !key.is_expired();
        let result = if key.is_inherited() {
            // The parent's ownership does not pass to a forked child.
            Err(Error::not_held(key.display_resource(), self.store().name()))
        } else {
            key.reset_lifetime();
            let started = Instant::now();
            let extended = self.store().put_off_expiration(key, ttl);
            // An auto-refreshed lock: the refresher goes on with this TTL, and the key follows it.
            if let (Ok(()), Some(ticket)) = (&extended, &self.ticket) {
                ticket.refreshed(started, ttl);
                key.follow_expiry(ticket.expiry());
            }
            extended
        };
        let result = result.and_then(|()| {
            self.dirty = true;
            if key.is_expired() {
                return Err(Error::Expired {
                    message: format!(
                        "Failed to put off the expiration of the \"{}\" {} within the specified time.",
                        key.display_resource(),
                        self.words.noun
                    ),
                });
            }
            Ok(())
        });
        match result {
            Ok(()) => {
                sink.emit(refreshed(self.words, ttl));
                Ok(())
            }
            Err(e) if e.is_conflict() && taken_away_if_refused && !key.is_inherited() => {
                self.dirty = false;
                self.lost = true;
                self.held_since = None;
                metrics::count(Counter::Lost, 1);
                sink.emit(Event::new(Level::Warning, self.words.lost_on_refresh));
                Err(self.lost_error(key))
            }
            Err(e) if e.is_conflict() => {
                self.dirty = false;
                sink.emit(Event::new(Level::Notice, self.words.refresh_conflict));
                Err(e)
            }
            Err(e) => {
                let e = Error::Acquiring {
                    message: format!(
                        "Failed to define an expiration for the \"{}\" {} on {}.",
                        key.display_resource(),
                        self.words.noun,
                        self.store().name()
                    ),
                    source: Box::new(e),
                };
                sink.emit(Event::new(Level::Notice, self.words.refresh_failed).with_error(&e));
                Err(e)
            }
        }
    }
}
