//! Locks in Redis on symfony/lock's data model (a sorted set per resource, `__write__` for
//! writers, scores in server milliseconds), so Deadbolt and symfony/lock >= 5.2 processes share
//! locks on one Redis. Acquire with the lock's TTL is one script call, release is one.
//!
//! - `protocol.rs`: the wait and hand-over protocol (timings, signals, the scripts' arguments);
//! - `keys.rs`: the names of Deadbolt's own keys beside a lock key;
//! - `scripts.rs` and `scripts/*.lua`: the scripts; `calls.rs`: one typed call per script;
//! - `wait.rs`: the one wait loop;
//! - `transport.rs`: what a connection must do, and its errors; `native/` is ours (by DSN,
//!   `dsn/`, through the redis-rs clients of `client.rs`; a Redis Cluster routed by
//!   `native/router.rs` with `cluster.rs`'s slot map), the extension lends PHP's clients.

pub mod calls;
mod client;
mod cluster;
pub mod dsn;
mod eviction;
mod inspect;
mod keys;
mod list;
pub mod native;
mod pending;
pub mod protocol;
pub mod replicas;
pub mod scripts;
mod semaphore;
mod sentinel;
pub mod transport;
mod wait;
mod wording;

pub(crate) use client::{install_tls_provider, read_ca_file};

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::key::display_resource;
use crate::store::{
    expired_on_refresh, expired_on_save, noun, Capabilities, DeferringStore, ExpiringStore,
    Extender, FencingStore, Mode, PendingRelease, Store,
};
use crate::{Error, Key, Result, Ttl};
use calls::{Holder, ScriptCall};
use native::NativeTransport;
use transport::{RunError, RunErrorKind, Transport};

/// Redis's once-made values (`crate::threads`): the scripts and their digests, the native connections'
/// table, the TLS crypto provider, and the CPU checks of the reply parser (memchr decides on first use).
pub(crate) fn set_up() {
    scripts::set_up();
    native::set_up();
    client::install_tls_provider();
    let _ = redis::parse_redis_value(b"+OK\r\n");
}

/// A Redis-backed store over any [`Transport`].
pub struct RedisStore<T: Transport> {
    transport: T,
    extender: OnceLock<Option<Arc<dyn Extender>>>,
    /// The same for semaphores' slots (made once, on first use, as `extender`).
    slot_extender: OnceLock<Option<Arc<dyn Extender>>>,
    initial_ttl: Ttl,
    name: String,
}

impl RedisStore<NativeTransport> {
    /// A store on this process's native connection for `dsn`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a malformed DSN.
    pub fn connect(dsn: &str, initial_ttl: Ttl) -> Result<Self> {
        Ok(Self::new(NativeTransport::new(dsn)?, initial_ttl))
    }
}

impl<T: Transport> RedisStore<T> {
    /// A store on `transport`. `initial_ttl` is the lifetime a bare `save()` gives (symfony/lock's
    /// `$initialTtl`); locks made by a `Lock` with a TTL use that TTL instead.
    pub fn new(transport: T, initial_ttl: Ttl) -> Self {
        let name = format!("RedisStore({})", transport.name());
        RedisStore {
            transport,
            extender: OnceLock::new(),
            slot_extender: OnceLock::new(),
            initial_ttl,
            name,
        }
    }

    /// The lock `key` stands for in a script call, once its resource name is one this store can
    /// lock.
    fn holder<'k>(&self, key: &'k Key) -> Result<Holder<'k>> {
        self.check_lockable(key.resource())?;
        Ok(Holder {
            resource: key.resource(),
            token: key.token()?.as_str(),
        })
    }

    /// The record `key`'s lock leaves (`holder::record`), or none with `records=off`.
    fn record_of(&self, key: &Key) -> String {
        if self.transport.records() {
            key.holder_record()
        } else {
            String::new()
        }
    }

    /// Refuses a resource whose name this store cannot lock.
    fn check_lockable(&self, resource: &[u8]) -> Result<()> {
        if keys::reserved(resource) {
            return Err(reserved_resource(resource));
        }
        if self.transport.cluster() && !keys::co_slotted(resource) {
            return Err(not_co_slotted(resource));
        }
        Ok(())
    }

    /// Runs the call `make` builds for `key`'s lock; a failure becomes the engine's error about
    /// the key. A wait, which decides on the transport's failures, runs its calls itself.
    fn run(&self, key: &Key, make: impl FnOnce(Holder<'_>) -> ScriptCall) -> Result<i64> {
        let call = make(self.holder(key)?);
        self.transport
            .run(&call, None)
            .map_err(|e| self.error(key, e))
    }

    /// A transport failure about `key`, as the engine's error: the one place where it becomes one.
    fn error(&self, key: &Key, e: RunError) -> Error {
        match e.kind() {
            RunErrorKind::NotAcknowledged => self.unacknowledged(key, e),
            _ => self.storage_error(key, e),
        }
    }

    /// A lock written that too few replicas acknowledged (`replicas` on the DSN) must not count:
    /// it is released (a failed release is left to the TTL), counted, and the error says so.
    /// Here, where every script's failure passes, so that no caller has to remember it.
    fn unacknowledged(&self, key: &Key, e: RunError) -> Error {
        crate::metrics::count(crate::metrics::Counter::Unacknowledged, 1);
        let released = match key.slots() {
            Some(_) => self.run_slot(key, ScriptCall::release_slot),
            None => self.run(key, |holder| {
                ScriptCall::release(holder, self.transport.records())
            }),
        };
        let released = match released {
            Ok(_) => "it was released",
            Err(_) => "releasing it failed too: it expires with its TTL",
        };
        let message = format!(
            "The \"{}\" {} does not count in {}: {e}; {released}.",
            key.display_resource(),
            noun(key),
            self.name
        );
        Error::storage(message, e)
    }

    /// A transport failure of an operator's call about `resource` (no key of its own).
    fn resource_error(&self, resource: &[u8], e: RunError) -> Error {
        Error::storage(
            format!(
                "The \"{}\" lock could not be read or written in {}: {e}",
                display_resource(resource),
                self.name
            ),
            e,
        )
    }

    fn storage_error(&self, key: &Key, e: RunError) -> Error {
        let message = match e.not_a_lock_detail() {
            Some(what) => format!(
                "The Redis key \"{}\" is not a lock ({what}) in {}.",
                key.display_resource(),
                self.name
            ),
            None => format!(
                "The \"{}\" {} could not be read or written in {}: {e}",
                key.display_resource(),
                noun(key),
                self.name
            ),
        };
        Error::storage(message, e)
    }

    /// Readies `key` for an attempt of a wait, whose lifetime counts from this attempt.
    fn prepare(key: &mut Key, ttl: Ttl) {
        key.reset_lifetime();
        key.reduce_lifetime(ttl);
    }

    /// What a save script's reply means: `None` taken, else held (with the holder's remaining
    /// time when the server told it).
    fn refusal(reply: i64) -> Option<Option<Duration>> {
        (reply < 1).then(|| {
            u64::try_from(-reply)
                .ok()
                .filter(|ms| *ms > 0)
                .map(Duration::from_millis)
        })
    }

    /// Fails a save whose key ran out of lifetime before the lock was stored.
    fn check_not_expired(&self, key: &mut Key) -> Result<()> {
        if key.is_expired() {
            return Err(expired_on_save(self, key));
        }
        Ok(())
    }

    fn not_held(&self, key: &Key) -> Error {
        Error::not_held(key.display_resource(), &self.name)
    }

    /// A save of a lock or a semaphore's slot by the script `run` runs: as symfony/lock, the TTL
    /// only shortens the key's lifetime (a Lock resets it before it saves); a key whose lifetime
    /// has run out is not saved, and what it held goes. A refusal is a conflict.
    fn save_by(
        &self,
        key: &mut Key,
        ttl: Ttl,
        run: impl FnOnce(&Key) -> Result<i64>,
    ) -> Result<()> {
        key.reduce_lifetime(ttl);
        if key.is_expired() {
            return Err(expired_on_save(self, key));
        }
        if Self::refusal(run(key)?).is_some() {
            return Err(Error::conflict(key.display_resource(), &self.name));
        }
        self.check_not_expired(key)
    }

    /// An extension of a lock or a semaphore's slot by the script `run` runs (1: extended). As
    /// symfony/lock: a key that ran out of lifetime on the way loses what is left (a failed
    /// cleanup is dropped; Redis expires it).
    fn put_off_by(
        &self,
        key: &mut Key,
        ttl: Ttl,
        run: impl FnOnce(&Key) -> Result<i64>,
    ) -> Result<()> {
        key.reduce_lifetime(ttl);
        if run(key)? != 1 {
            return Err(self.not_held(key));
        }
        if key.is_expired() {
            let _ = match key.slots() {
                Some(_) => crate::store::SemaphoreStore::delete(self, key),
                None => Store::delete(self, key),
            };
            return Err(expired_on_refresh(self, key));
        }
        Ok(())
    }
}

/// A resource whose name would be taken for one of Deadbolt's own keys.
fn reserved_resource(resource: &[u8]) -> Error {
    Error::invalid_argument(format!(
        "The resource name \"{}\" contains \"{}\", which Deadbolt reserves for the Redis keys it \
         keeps beside each lock; choose a name without it.",
        display_resource(resource),
        keys::MARK
    ))
}

/// A resource whose companion keys cannot share its hash slot, on a Redis Cluster: every script
/// names them, so each would fail with CROSSSLOT.
fn not_co_slotted(resource: &[u8]) -> Error {
    Error::invalid_argument(format!(
        "The resource name \"{}\" cannot be locked on a Redis Cluster: Deadbolt keeps its own keys \
         beside each lock in the resource's hash slot, which a name with a brace but no hash tag \
         (or an empty name) cannot share; use a name without braces, or one with a hash tag such \
         as \"{{orders}}:42\".",
        display_resource(resource)
    ))
}

impl<T: Transport> Store for RedisStore<T> {
    fn name(&self) -> &str {
        &self.name
    }

    fn save(&self, key: &mut Key, mode: Mode, ttl: Option<Ttl>) -> Result<()> {
        let ttl = ttl.unwrap_or(self.initial_ttl);
        let record = self.record_of(key);
        self.save_by(key, ttl, |key| {
            self.run(key, |holder| {
                ScriptCall::take(mode, holder, ttl, &record, None)
            })
        })
    }

    fn put_off_expiration(&self, key: &mut Key, ttl: Ttl) -> Result<()> {
        self.put_off_by(key, ttl, |key| {
            self.run(key, |holder| ScriptCall::extend(holder, ttl))
        })
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        if key.drawn_token().is_none() {
            return Ok(());
        }
        self.run(key, |holder| {
            ScriptCall::release(holder, self.transport.records())
        })
        .map(|_| ())
    }

    fn exists(&self, key: &Key) -> Result<bool> {
        if key.drawn_token().is_none() {
            return Ok(false);
        }
        Ok(self.run(key, ScriptCall::check)? == 1)
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities {
            blocking: Some(self),
            expiring: Some(self),
            fencing: Some(self),
            deferring: self.transport.defers_release().then_some(self),
            inspecting: Some(self),
            semaphores: Some(self),
        }
    }
}

impl<T: Transport> DeferringStore for RedisStore<T> {
    fn delete_deferred(&self, key: &mut Key) -> Result<PendingRelease> {
        if key.drawn_token().is_none() {
            return Ok(PendingRelease::done());
        }
        let call = ScriptCall::release(self.holder(key)?, self.transport.records());
        self.transport.send(&call).map_err(|e| self.error(key, e))
    }

    fn read_replies(&self) {
        self.transport.read_unread();
    }
}

impl<T: Transport> FencingStore for RedisStore<T> {
    /// Drawn by a script that checks this key is the live writer: the acquire itself stays as it
    /// is, and holders draw in the order they held the lock.
    fn draw_fencing_token(&self, key: &mut Key) -> Result<Option<u64>> {
        if key.drawn_token().is_none() {
            return Ok(None);
        }
        let reply = self.run(key, ScriptCall::draw_fencing_token)?;
        Ok(u64::try_from(reply).ok().filter(|token| *token > 0))
    }
}

impl<T: Transport> ExpiringStore for RedisStore<T> {
    /// On a connection of the transport's own for the background (made once, on first use).
    fn extender(&self) -> Option<Arc<dyn Extender>> {
        self.extender
            .get_or_init(|| {
                let transport = self.transport.for_background()?;
                Some(Arc::new(RedisExtender { transport }) as Arc<dyn Extender>)
            })
            .clone()
    }

    /// A warning noticed on connect (an evicting `maxmemory-policy`), handed out once.
    fn take_warning(&self) -> Option<String> {
        self.transport.take_warning()
    }
}

/// Extends Redis locks on a connection of its own, from the refresher thread.
struct RedisExtender {
    transport: Box<dyn Transport + Send + Sync>,
}

impl Extender for RedisExtender {
    fn extend(&self, resource: &[u8], token: &str, ttl: Ttl) -> Result<bool> {
        let call = ScriptCall::extend(Holder { resource, token }, ttl);
        self.transport
            .run(&call, None)
            .map(|reply| reply == 1)
            .map_err(|e| {
                Error::storage(
                    format!("Refreshing a lock in {} failed: {e}", self.transport.name()),
                    e,
                )
            })
    }
}
