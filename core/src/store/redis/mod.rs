//! Locks in Redis on symfony/lock's data model (a sorted set per resource, `__write__` for
//! writers, scores in server milliseconds), so Deadbolt and symfony/lock >= 5.2 processes share
//! locks on one Redis. Acquire with the lock's TTL is one script call, release is one.

pub mod dsn;
pub mod native;
pub mod runner;
pub mod scripts;

use crate::store::{ExpiringStore, SharedStore, Store};
use crate::{Error, Key, Result, Ttl};
use runner::{RunError, ScriptRunner};
use scripts::{LockScript, DELETE, EXISTS, PUT_OFF, SAVE, SAVE_READ, WRONGTYPE_MARKER};

/// A Redis-backed store over any [`ScriptRunner`].
pub struct RedisStore {
    runner: Box<dyn ScriptRunner>,
    initial_ttl: Ttl,
    name: String,
}

impl RedisStore {
    /// A store on `runner`. `initial_ttl` is the lifetime a bare `save()` gives (symfony/lock's
    /// `$initialTtl`); locks made by a `Lock` with a TTL use that TTL instead.
    pub fn new(runner: Box<dyn ScriptRunner>, initial_ttl: Ttl) -> Self {
        let name = format!("RedisStore({})", runner.name());
        RedisStore {
            runner,
            initial_ttl,
            name,
        }
    }

    fn run(&self, script: &LockScript, key: &Key, ttl: Option<Ttl>) -> Result<bool> {
        let token = key.token()?;
        let ttl_ms = ttl.map(|ttl| ttl_millis(ttl).to_string());
        let mut args: Vec<&[u8]> = vec![token.as_str().as_bytes()];
        if let Some(ttl_ms) = &ttl_ms {
            args.push(ttl_ms.as_bytes());
        }
        match self.runner.run(script, key.resource(), &args) {
            Ok(reply) => Ok(reply == 1),
            Err(e) => Err(self.storage_error(key, e)),
        }
    }

    fn storage_error(&self, key: &Key, e: RunError) -> Error {
        let detail = e.to_string();
        let message = if detail.contains(WRONGTYPE_MARKER) {
            let what = detail.split(WRONGTYPE_MARKER).nth(1).unwrap_or("").trim();
            format!(
                "The Redis key \"{}\" is not a lock ({what}) in {}.",
                key.display_resource(),
                self.name
            )
        } else {
            format!(
                "The \"{}\" lock could not be read or written in {}: {detail}",
                key.display_resource(),
                self.name
            )
        };
        Error::storage(message, e)
    }

    /// Takes the lock with `script` for `ttl`, then checks it did not expire on the way, as
    /// symfony/lock does: the key's lifetime starts before the round trip.
    fn save_with(&self, script: &LockScript, key: &mut Key, ttl: Ttl) -> Result<()> {
        key.adopt_if_inherited();
        key.reduce_lifetime(ttl);
        if !self.run(script, key, Some(ttl))? {
            return Err(self.conflict(key));
        }
        self.check_not_expired(key)
    }

    fn check_not_expired(&self, key: &mut Key) -> Result<()> {
        if !key.is_expired() {
            return Ok(());
        }
        // The lock is already past its TTL: remove what is left. A failure of this cleanup is
        // dropped; the expiry itself is the failure to report, and Redis drops the key anyway.
        let _ = self.delete(key);
        Err(Error::Expired {
            message: format!(
                "Failed to store the \"{}\" lock in {}: it expired before it was acquired.",
                key.display_resource(),
                self.name
            ),
        })
    }

    fn conflict(&self, key: &Key) -> Error {
        Error::conflict(key.display_resource(), &self.name)
    }

    fn not_held(&self, key: &Key) -> Error {
        Error::not_held(key.display_resource(), &self.name)
    }
}

/// Milliseconds for Redis, rounded up so a tiny TTL never becomes 0.
fn ttl_millis(ttl: Ttl) -> u64 {
    let millis = ttl.duration().as_nanos().div_ceil(1_000_000);
    u64::try_from(millis).unwrap_or(u64::MAX)
}

impl Store for RedisStore {
    fn name(&self) -> &str {
        &self.name
    }

    fn save(&self, key: &mut Key) -> Result<()> {
        self.save_with(&SAVE, key, self.initial_ttl)
    }

    fn put_off_expiration(&self, key: &mut Key, ttl: Ttl) -> Result<()> {
        if key.is_inherited() {
            return Err(self.not_held(key));
        }
        key.reduce_lifetime(ttl);
        if !self.run(&PUT_OFF, key, Some(ttl))? {
            return Err(self.not_held(key));
        }
        self.check_not_expired(key)
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        if key.is_inherited() || key.drawn_token().is_none() {
            return Ok(());
        }
        self.run(&DELETE, key, None).map(|_| ())
    }

    fn exists(&self, key: &Key) -> Result<bool> {
        if key.is_inherited() || key.drawn_token().is_none() {
            return Ok(false);
        }
        self.run(&EXISTS, key, None)
    }

    fn releases_from_drop(&self) -> bool {
        self.runner.is_native()
    }

    /// A warning noticed on connect (an evicting `maxmemory-policy`), handed out once.
    fn take_warning(&self) -> Option<String> {
        self.runner.take_warning()
    }

    fn as_shared(&self) -> Option<&dyn SharedStore> {
        Some(self)
    }

    fn as_expiring(&self) -> Option<&dyn ExpiringStore> {
        Some(self)
    }
}

impl SharedStore for RedisStore {
    fn save_read(&self, key: &mut Key) -> Result<()> {
        self.save_with(&SAVE_READ, key, self.initial_ttl)
    }
}

impl ExpiringStore for RedisStore {
    fn save_for(&self, key: &mut Key, ttl: Ttl) -> Result<()> {
        self.save_with(&SAVE, key, ttl)
    }

    fn save_read_for(&self, key: &mut Key, ttl: Ttl) -> Result<()> {
        self.save_with(&SAVE_READ, key, ttl)
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
