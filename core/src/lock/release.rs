//! Release: by hand (errors reported), and when the lock object dies while held (silent).

use std::rc::Rc;
use std::sync::Arc;

use super::Lock;
use crate::event::{Event, EventSink, Level};
use crate::metrics::{self, Counter, Timing};
use crate::{Error, Key, Result};

impl Lock {
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
        self.report_background(sink);
        self.lost = self.is_lost();
        self.ticket = None;
        self.fence = None;
        // The lifetime stays what the refresher last made it.
        key.unfollow_expiry();
        if self.lost {
            // Nothing to release: the hold ended when the lock was lost, not here.
            self.dirty = false;
            self.held_since = None;
            return Err(self.lost_error(&key));
        }
        // A store that defers sends the release and leaves its reply for later; the lock is let
        // go here as with any other store (its failure, if one comes, is reported later).
        let store = Rc::clone(self.store());
        let sent = match store.capabilities().deferring {
            Some(deferring) => deferring.delete_deferred(&mut key).map(Some),
            None => store.delete(&mut key).map(|()| None),
        };
        match sent {
            Ok(pending) => {
                self.pending_release = pending;
                self.dirty = false;
                let hold = self.held_since.map(|since| since.elapsed());
                self.end_hold();
                sink.emit(Event::new(Level::Debug, self.words.released).held(hold));
                Ok(())
            }
            Err(e) => {
                metrics::count(Counter::StoreErrors, 1);
                let e = Error::Releasing {
                    message: format!(
                        "Failed to release the \"{}\" {} on {}.",
                        key.display_resource(),
                        self.words.noun,
                        self.store().name()
                    ),
                    source: Box::new(e),
                };
                sink.emit(Event::new(Level::Notice, self.words.release_failed).with_error(&e));
                Err(e)
            }
        }
    }

    /// An operator's release of the resource whoever holds it (this lock's own hold is released
    /// first, as usual): the other holders find the lock gone at their next call. Logged as a
    /// warning, counted in metrics (`force_released`). The number of other holders it had.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the store cannot do it (a store written in PHP); the
    /// store's error when it fails.
    pub fn force_release(&mut self, sink: &mut dyn EventSink) -> Result<usize> {
        if self.holds() {
            // A failure here leaves the hold to the forced release below.
            let _ = self.release(sink);
        }
        let store = Rc::clone(self.store());
        let resource = self.key.lock().resource().to_vec();
        let count = crate::store::inspecting(store.as_ref())?.force_release(&resource)?;
        sink.emit(
            Event::new(Level::Warning, self.words.force_released)
                .counted(u64::try_from(count).unwrap_or(u64::MAX)),
        );
        Ok(count)
    }

    /// Who holds this lock's resource and who waits, as its store tells.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the store cannot tell; the store's error when it fails.
    pub fn inspect(&self) -> Result<crate::holder::LockState> {
        let resource = self.key.lock().resource().to_vec();
        crate::store::inspecting(self.store().as_ref())?.inspect(&resource)
    }

    fn end_hold(&mut self) {
        if let Some(since) = self.held_since.take() {
            metrics::count(Counter::Released, 1);
            metrics::time(Timing::Hold, since.elapsed());
        }
    }

    pub(super) fn lost_error(&self, key: &Key) -> Error {
        Error::Expired {
            message: format!(
                "The \"{}\" {} was lost: it is gone from {} (expired, taken, or released by force).",
                key.display_resource(),
                self.words.noun,
                self.store().name()
            ),
        }
    }

    /// What the end of a request does to a lock whose object lives on (a long-running worker's
    /// logical end of request, `Deadbolt\Worker::endRequest()`): the release of
    /// [`Self::release_on_death`]. True when it released a lock.
    pub fn release_at_end_of_request(&mut self) -> bool {
        let releases = self.auto_release && self.dirty;
        self.release_on_death();
        releases && !self.dirty
    }

    /// The release of a lock that dies while held (symfony/lock's destructor), silent: it may run
    /// during PHP's shutdown, where neither an exception nor a log call is possible. Does nothing
    /// when auto-release is off, when the lock is not held, or when it was inherited through fork().
    pub fn release_on_death(&mut self) {
        self.ticket = None;
        self.fence = None;
        if !self.auto_release || !self.dirty {
            return;
        }
        let Some(mut key) = self.key.try_lock() else {
            // Never the case in single-threaded PHP; waiting here could only deadlock.
            return;
        };
        key.unfollow_expiry();
        if key.is_inherited() {
            return;
        }
        // delete() is owner-checked, so no exists() round trip first. Nothing can report a
        // failure from here; the store's expiry is the fallback.
        let _ = self.store().delete(&mut key);
        drop(key);
        self.dirty = false;
        self.end_hold();
    }
}
