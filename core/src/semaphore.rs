//! Semaphores on the lock engine. A semaphore is a lock whose key has slots ([`crate::Slots`]):
//! at most `limit` weight held at once instead of one holder. Everything a lock does around its
//! store (waits with a deadline, the hand-over, the background refresher, fork safety, metrics,
//! the logger, interrupts) a semaphore does the same way, so the engine stays one: [`semaphores`]
//! turns a store's semaphore side ([`SemaphoreStore`]) into a [`Store`] the engine runs on.

use std::any::Any;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use crate::store::{
    BlockingStore, Capabilities, ExpiringStore, Extender, Mode, SemaphoreStore, Store, WaitReport,
};
use crate::{Error, Key, Result, Ttl};

/// The semaphores of `store`, as a store for [`crate::Lock`] (whose keys must have slots).
///
/// # Errors
/// [`Error::InvalidArgument`] when `store` keeps no semaphores (a CombinedStore, a store written
/// in PHP for locks).
pub fn semaphores(store: Rc<dyn Store>) -> Result<Rc<dyn Store>> {
    if store.capabilities().semaphores.is_none() {
        return Err(Error::invalid_argument(format!(
            "{} cannot keep semaphores: use a RedisStore, FlockStore or InMemoryStore, or a \
             store implementing Deadbolt\\Semaphore\\PersistingStoreInterface.",
            store.name()
        )));
    }
    Ok(Rc::new(Semaphores { store }))
}

/// A store's semaphore side, seen as a store of locks on keys with slots.
struct Semaphores {
    store: Rc<dyn Store>,
}

impl Semaphores {
    fn side(&self) -> Result<&dyn SemaphoreStore> {
        self.store.capabilities().semaphores.ok_or_else(|| {
            Error::invalid_argument(format!("{} cannot keep semaphores.", self.store.name()))
        })
    }
}

/// A key without slots reaching a semaphore store is the caller's mistake, never the user's.
fn slotted(key: &Key) -> Result<()> {
    if key.slots().is_none() {
        return Err(Error::invalid_argument(
            "A semaphore store takes semaphore keys (with a limit and a weight), not a lock's key.",
        ));
    }
    Ok(())
}

impl Store for Semaphores {
    fn name(&self) -> &str {
        self.store.name()
    }

    fn as_any(&self) -> Option<&dyn Any> {
        self.store.as_any()
    }

    fn save(&self, key: &mut Key, _mode: Mode, ttl: Option<Ttl>) -> Result<()> {
        slotted(key)?;
        self.side()?.save(key, ttl)
    }

    fn put_off_expiration(&self, key: &mut Key, ttl: Ttl) -> Result<()> {
        slotted(key)?;
        self.side()?.put_off_expiration(key, ttl)
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        slotted(key)?;
        self.side()?.delete(key)
    }

    fn exists(&self, key: &Key) -> Result<bool> {
        slotted(key)?;
        self.side()?.exists(key)
    }

    fn capabilities(&self) -> Capabilities<'_> {
        let Some(side) = self.store.capabilities().semaphores else {
            return Capabilities::default();
        };
        Capabilities {
            blocking: Some(self as &dyn BlockingStore),
            expiring: side.expires().then_some(self as &dyn ExpiringStore),
            ..Capabilities::default()
        }
    }
}

impl BlockingStore for Semaphores {
    fn wait(
        &self,
        key: &mut Key,
        _mode: Mode,
        ttl: Option<Ttl>,
        deadline: Option<Instant>,
        report: &mut WaitReport,
    ) -> Result<bool> {
        slotted(key)?;
        self.side()?.wait(key, ttl, deadline, report)
    }
}

impl ExpiringStore for Semaphores {
    fn extender(&self) -> Option<Arc<dyn Extender>> {
        self.side().ok()?.extender()
    }

    /// The store's own warnings (an evicting Redis), as its locks would give them.
    fn take_warning(&self) -> Option<String> {
        self.store.capabilities().expiring?.take_warning()
    }
}
