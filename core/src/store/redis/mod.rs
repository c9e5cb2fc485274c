//! Locks in Redis on symfony/lock's data model (a sorted set per resource, `__write__` for
//! writers, scores in server milliseconds), so Deadbolt and symfony/lock >= 5.2 processes share
//! locks on one Redis. Acquire with the lock's TTL is one script call, release is one.
//!
//! - `protocol.rs`: the wait and hand-over protocol (timings, signals, the scripts' arguments);
//! - `keys.rs`: the names of Deadbolt's own keys beside a lock key;
//! - `scripts.rs` and `scripts/*.lua`: the scripts;
//! - `wait.rs`: the one wait loop;
//! - `transport.rs`: what a connection must do, and its errors; `native/` is ours (by DSN,
//!   `dsn/`, through the redis-rs clients of `client.rs`; a Redis Cluster routed by
//!   `native/router.rs` with `cluster.rs`'s slot map), the extension lends PHP's clients.

mod client;
mod cluster;
pub mod dsn;
mod eviction;
mod keys;
pub mod native;
mod pending;
pub mod protocol;
pub mod replicas;
pub mod scripts;
mod sentinel;
pub mod transport;
mod wait;
mod wording;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::store::{
    expired_on_refresh, expired_on_save, Capabilities, DeferringStore, ExpiringStore, Extender,
    FencingStore, Mode, PendingRelease, Store,
};
use crate::{Error, Key, Result, Ttl};
use native::NativeTransport;
use scripts::{LockScript, DELETE, EXISTS, FENCE, PUT_OFF, SAVE, SAVE_READ};
use transport::{RunError, RunErrorKind, Transport};

/// A Redis-backed store over any [`Transport`].
pub struct RedisStore<T: Transport> {
    transport: T,
    extender: OnceLock<Option<Arc<dyn Extender>>>,
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
            initial_ttl,
            name,
        }
    }

    /// Runs `script` with KEYS = the resource and `companions`, ARGV = the key's token and `args`.
    fn run(
        &self,
        script: &LockScript,
        key: &Key,
        companions: &[&[u8]],
        args: &[&[u8]],
    ) -> Result<i64> {
        self.call(key, companions, args, |keys, argv| {
            self.transport.run(script, keys, argv)
        })
    }

    /// Makes the transport run a script with KEYS = the resource and `companions`, ARGV = the
    /// key's token and `args`; its failure becomes a storage error about the key.
    fn call<R>(
        &self,
        key: &Key,
        companions: &[&[u8]],
        args: &[&[u8]],
        call: impl FnOnce(&[&[u8]], &[&[u8]]) -> std::result::Result<R, RunError>,
    ) -> Result<R> {
        if keys::reserved(key.resource()) {
            return Err(reserved_resource(key));
        }
        if self.transport.cluster() && !keys::co_slotted(key.resource()) {
            return Err(not_co_slotted(key));
        }
        let token = key.token()?;
        let keys: Vec<&[u8]> = std::iter::once(key.resource())
            .chain(companions.iter().copied())
            .collect();
        let argv: Vec<&[u8]> = std::iter::once(token.as_str().as_bytes())
            .chain(args.iter().copied())
            .collect();
        call(&keys, &argv).map_err(|e| match e.kind() {
            RunErrorKind::NotAcknowledged => self.unacknowledged(key, e),
            _ => self.storage_error(key, e),
        })
    }

    /// A lock written that too few replicas acknowledged (`replicas` on the DSN) must not count:
    /// it is released (a failed release is left to the TTL), counted, and the error says so.
    /// Here, where every script's failure passes, so that no caller has to remember it.
    fn unacknowledged(&self, key: &Key, e: RunError) -> Error {
        crate::metrics::count(crate::metrics::Counter::Unacknowledged, 1);
        let [queue, waiters, handovers] = release_companions(key.resource());
        let released = match self.run(&DELETE, key, &[&queue, &waiters, &handovers], &[]) {
            Ok(_) => "it was released",
            Err(_) => "releasing it failed too: it expires with its TTL",
        };
        let message = format!(
            "The \"{}\" lock does not count in {}: {e}; {released}.",
            key.display_resource(),
            self.name
        );
        Error::storage(message, e)
    }

    fn storage_error(&self, key: &Key, e: RunError) -> Error {
        let message = match e.not_a_lock_detail() {
            Some(what) => format!(
                "The Redis key \"{}\" is not a lock ({what}) in {}.",
                key.display_resource(),
                self.name
            ),
            None => format!(
                "The \"{}\" lock could not be read or written in {}: {e}",
                key.display_resource(),
                self.name
            ),
        };
        Error::storage(message, e)
    }

    /// Readies `key` for an attempt of a wait (whose lifetime counts from this attempt) and picks
    /// the script for `mode`.
    fn prepare(key: &mut Key, mode: Mode, ttl: Ttl) -> &'static LockScript {
        key.reset_lifetime();
        key.reduce_lifetime(ttl);
        Self::script(mode)
    }

    /// The script that takes a lock in `mode`.
    fn script(mode: Mode) -> &'static LockScript {
        match mode {
            Mode::Exclusive => &SAVE,
            Mode::Shared => &SAVE_READ,
        }
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
}

/// The kind of transport failure behind a storage error of this store, if it is one.
fn run_error_kind(e: &Error) -> Option<RunErrorKind> {
    match e {
        Error::Storage {
            source: Some(cause),
            ..
        } => cause.downcast_ref::<RunError>().map(RunError::kind),
        _ => None,
    }
}

/// Whether `e` is the store's answer that Redis is still loading its data after a restart.
fn is_loading(e: &Error) -> bool {
    run_error_kind(e) == Some(RunErrorKind::Loading)
}

/// The companion keys a release names (QUEUE, WAITERS, HANDOVERS): it hands the lock over to the
/// longest waiter.
fn release_companions(resource: &[u8]) -> [Vec<u8>; 3] {
    [
        keys::queue(resource),
        keys::waiters(resource),
        keys::handovers(resource),
    ]
}

/// A resource whose name would be taken for one of Deadbolt's own keys.
fn reserved_resource(key: &Key) -> Error {
    Error::invalid_argument(format!(
        "The resource name \"{}\" contains \"{}\", which Deadbolt reserves for the Redis keys it \
         keeps beside each lock; choose a name without it.",
        key.display_resource(),
        keys::MARK
    ))
}

/// A resource whose companion keys cannot share its hash slot, on a Redis Cluster: every script
/// names them, so each would fail with CROSSSLOT.
fn not_co_slotted(key: &Key) -> Error {
    Error::invalid_argument(format!(
        "The resource name \"{}\" cannot be locked on a Redis Cluster: Deadbolt keeps its own keys \
         beside each lock in the resource's hash slot, which a name with a brace but no hash tag \
         (or an empty name) cannot share; use a name without braces, or one with a hash tag such \
         as \"{{orders}}:42\".",
        key.display_resource()
    ))
}

/// Milliseconds for Redis, rounded up so a tiny TTL never becomes 0.
fn ttl_millis(ttl: Ttl) -> u64 {
    let millis = ttl.duration().as_nanos().div_ceil(1_000_000);
    u64::try_from(millis).unwrap_or(u64::MAX)
}

impl<T: Transport> Store for RedisStore<T> {
    fn name(&self) -> &str {
        &self.name
    }

    fn save(&self, key: &mut Key, mode: Mode, ttl: Option<Ttl>) -> Result<()> {
        let ttl = ttl.unwrap_or(self.initial_ttl);
        // As symfony/lock: the TTL only shortens the key's lifetime (a Lock resets it before it
        // saves); a key whose lifetime has run out is not saved, and what it held goes.
        key.reduce_lifetime(ttl);
        if key.is_expired() {
            return Err(expired_on_save(self, key));
        }
        let script = Self::script(mode);
        let ttl_ms = ttl_millis(ttl).to_string();
        // The keys a release may touch are named here too, unused: a Redis ACL that does not
        // grant them fails this acquire, not the release after the work is done.
        let [queue, waiters, handovers] = release_companions(key.resource());
        let reply = self.run(
            script,
            key,
            &[&queue, &waiters, &handovers],
            &[ttl_ms.as_bytes()],
        )?;
        if Self::refusal(reply).is_some() {
            return Err(Error::conflict(key.display_resource(), &self.name));
        }
        self.check_not_expired(key)
    }

    fn put_off_expiration(&self, key: &mut Key, ttl: Ttl) -> Result<()> {
        key.reduce_lifetime(ttl);
        let ttl_ms = ttl_millis(ttl).to_string();
        if self.run(&PUT_OFF, key, &[], &[ttl_ms.as_bytes()])? != 1 {
            return Err(self.not_held(key));
        }
        if key.is_expired() {
            // As symfony/lock: what is left goes (a failed cleanup is dropped; Redis expires it).
            let _ = self.delete(key);
            return Err(expired_on_refresh(self, key));
        }
        Ok(())
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        if key.drawn_token().is_none() {
            return Ok(());
        }
        let [queue, waiters, handovers] = release_companions(key.resource());
        self.run(&DELETE, key, &[&queue, &waiters, &handovers], &[])
            .map(|_| ())
    }

    fn exists(&self, key: &Key) -> Result<bool> {
        if key.drawn_token().is_none() {
            return Ok(false);
        }
        Ok(self.run(&EXISTS, key, &[], &[])? == 1)
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities {
            blocking: Some(self),
            expiring: Some(self),
            fencing: Some(self),
            deferring: self.transport.defers_release().then_some(self),
        }
    }
}

impl<T: Transport> DeferringStore for RedisStore<T> {
    fn delete_deferred(&self, key: &mut Key) -> Result<PendingRelease> {
        if key.drawn_token().is_none() {
            return Ok(PendingRelease::done());
        }
        let [queue, waiters, handovers] = release_companions(key.resource());
        self.call(key, &[&queue, &waiters, &handovers], &[], |keys, argv| {
            self.transport.send(&DELETE, keys, argv)
        })
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
        let reply = self.run(&FENCE, key, &[&keys::fence(key.resource())], &[])?;
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
        let ttl_ms = ttl_millis(ttl).to_string();
        self.transport
            .run(
                &PUT_OFF,
                &[resource],
                &[token.as_bytes(), ttl_ms.as_bytes()],
            )
            .map(|reply| reply == 1)
            .map_err(|e| {
                Error::storage(
                    format!("Refreshing a lock in {} failed: {e}", self.transport.name()),
                    e,
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_in_milliseconds_rounds_up() {
        assert_eq!(ttl_millis(Ttl::from_secs(0.0001).unwrap()), 1);
        assert_eq!(ttl_millis(Ttl::from_secs(1.5).unwrap()), 1500);
    }
}
