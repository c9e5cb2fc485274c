//! Semaphores in Redis on symfony/semaphore's data (`{r}:time` and `{r}:weight`, `keys.rs`), so
//! Deadbolt and symfony/semaphore processes count the same slots; Deadbolt's waiters queue beside
//! them and are handed freed weight in order of arrival (`scripts/semaphore/`), with the lock's
//! wait loop (`wait.rs`). Expiries are whole seconds on the server's clock (symfony/semaphore
//! writes its clients' `time()`).

use std::sync::Arc;
use std::time::Instant;

use super::calls::{Holder, ScriptCall, Target};
use super::keys;
use super::transport::Transport;
use super::RedisStore;
use crate::key::display_resource;
use crate::store::{Extender, SemaphoreStore, WaitReport};
use crate::{Error, Key, Result, Slots, Ttl};

impl<T: Transport> RedisStore<T> {
    /// The semaphore `key` stands for in a script call, once its name is one this store can keep.
    pub(super) fn slot_holder<'k>(&self, key: &'k Key) -> Result<Holder<'k>> {
        let resource = key.resource();
        if keys::reserved(resource) {
            return Err(super::reserved_resource(resource));
        }
        if self.transport.cluster() && !keys::semaphore_co_slotted(resource) {
            return Err(Error::invalid_argument(format!(
                "The semaphore name \"{}\" cannot be used on a Redis Cluster: its keys ({{name}}:time, \
                 {{name}}:weight and Deadbolt's beside them) share a hash slot only when the name is \
                 not empty and does not begin with \"}}\".",
                display_resource(resource)
            )));
        }
        Ok(Holder {
            resource,
            token: key.token()?.as_str(),
        })
    }

    /// Runs the semaphore call `make` builds for `key`.
    pub(super) fn run_slot(
        &self,
        key: &Key,
        make: impl FnOnce(Holder<'_>) -> ScriptCall,
    ) -> Result<i64> {
        let call = make(self.slot_holder(key)?);
        self.transport
            .run(&call, None)
            .map_err(|e| self.error(key, e))
    }
}

/// A key's slots (the engine gives a semaphore store only keys with slots).
fn slots(key: &Key) -> Result<Slots> {
    key.slots()
        .ok_or_else(|| Error::invalid_argument("A semaphore key has a limit and a weight."))
}

impl<T: Transport> SemaphoreStore for RedisStore<T> {
    fn save(&self, key: &mut Key, ttl: Option<Ttl>) -> Result<()> {
        let slots = slots(key)?;
        let ttl = ttl.unwrap_or(self.initial_ttl);
        self.save_by(key, ttl, |key| {
            self.run_slot(key, |holder| {
                ScriptCall::take_slots(slots, holder, ttl, None)
            })
        })
    }

    fn put_off_expiration(&self, key: &mut Key, ttl: Ttl) -> Result<()> {
        self.put_off_by(key, ttl, |key| {
            self.run_slot(key, |holder| ScriptCall::extend_slot(holder, ttl))
        })
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        if key.drawn_token().is_none() {
            return Ok(());
        }
        self.run_slot(key, ScriptCall::release_slot).map(|_| ())
    }

    fn exists(&self, key: &Key) -> Result<bool> {
        if key.drawn_token().is_none() {
            return Ok(false);
        }
        Ok(self.run_slot(key, ScriptCall::check_slot)? == 1)
    }

    fn wait(
        &self,
        key: &mut Key,
        ttl: Option<Ttl>,
        deadline: Option<Instant>,
        report: &mut WaitReport,
    ) -> Result<bool> {
        let target = Target::Semaphore(slots(key)?);
        self.wait_for(target, key, ttl, deadline, report)
    }

    fn expires(&self) -> bool {
        true
    }

    /// On a connection of the transport's own for the background, made once, on first use (not
    /// at every auto-refreshed acquire).
    fn extender(&self) -> Option<Arc<dyn Extender>> {
        self.slot_extender
            .get_or_init(|| {
                let transport = self.transport.for_background()?;
                Some(Arc::new(SlotExtender { transport }) as Arc<dyn Extender>)
            })
            .clone()
    }
}

/// Puts semaphores' slots off on a connection of its own, from the refresher thread.
struct SlotExtender {
    transport: Box<dyn Transport + Send + Sync>,
}

impl Extender for SlotExtender {
    fn extend(&self, resource: &[u8], token: &str, ttl: Ttl) -> Result<bool> {
        let call = ScriptCall::extend_slot(Holder { resource, token }, ttl);
        self.transport
            .run(&call, None)
            .map(|reply| reply == 1)
            .map_err(|e| {
                Error::storage(
                    format!(
                        "Refreshing a semaphore in {} failed: {e}",
                        self.transport.name()
                    ),
                    e,
                )
            })
    }
}
