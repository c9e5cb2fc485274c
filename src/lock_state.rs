//! `Deadbolt\LockState`, `Deadbolt\Holder`, `Deadbolt\Waiter`: who holds a resource and who waits
//! for it, as a store tells an operator (`$store->inspect()`, `$lock->inspect()`). Values: made
//! by Deadbolt only, read by getters, exported with `toArray()` (for JSON and logs: the same
//! fields as `deadbolt status --json`). A token is never shown, only its digest.
#![allow(non_snake_case)]

use deadbolt_core::{unix_secs, LockState, Mode, Origin};
use ext_php_rs::binary::Binary;
use ext_php_rs::boxed::ZBox;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendClassObject, ZendHashTable};

use crate::error_map::{invalid_argument, to_php};
use crate::key::PhpKey;

/// "write" or "read", as `toArray()` and the `deadbolt` command say.
fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Exclusive => "write",
        Mode::Shared => "read",
    }
}

/// Who a holder or waiter is: its token's digest, mode and origin.
#[derive(Default, Clone)]
struct Who {
    digest: Option<String>,
    write: bool,
    origin: Origin,
}

impl Who {
    fn new(digest: String, mode: Mode, origin: Origin) -> Self {
        Who {
            digest: (!digest.is_empty()).then_some(digest),
            write: mode == Mode::Exclusive,
            origin,
        }
    }

    /// `['mode', 'tokenDigest', 'host', 'pid', 'label']`.
    fn to_array(&self) -> PhpResult<ZBox<ZendHashTable>> {
        let failed = |e: ext_php_rs::error::Error| invalid_argument(e.to_string());
        let mut array = ZendHashTable::new();
        array
            .insert("mode", mode_name(write_mode(self.write)))
            .map_err(failed)?;
        array
            .insert("tokenDigest", self.digest.clone())
            .map_err(failed)?;
        array
            .insert("host", self.origin.host.clone())
            .map_err(failed)?;
        array
            .insert("pid", self.origin.pid.map(i64::from))
            .map_err(failed)?;
        array
            .insert("label", self.origin.label.clone())
            .map_err(failed)?;
        Ok(array)
    }
}

/// One holder of a resource.
#[php_class]
#[php(name = "Deadbolt\\Holder")]
#[php(flags = ClassFlags::Final)]
#[derive(Default)]
pub struct PhpHolder {
    who: Who,
    acquired_at: Option<f64>,
    expires_at: Option<f64>,
}

/// One caller waiting for a resource in the store's queue.
#[php_class]
#[php(name = "Deadbolt\\Waiter")]
#[php(flags = ClassFlags::Final)]
#[derive(Default)]
pub struct PhpWaiter {
    who: Who,
    since: Option<f64>,
}

/// A resource's holders and waiters, as the store saw them at one moment.
#[php_class]
#[php(name = "Deadbolt\\LockState")]
#[php(flags = ClassFlags::Final)]
#[derive(Default)]
pub struct PhpLockState {
    resource: Vec<u8>,
    holders: Vec<PhpHolder>,
    waiters: Vec<PhpWaiter>,
}

impl PhpLockState {
    pub fn new(resource: &[u8], state: LockState) -> Self {
        PhpLockState {
            resource: resource.to_vec(),
            holders: state
                .holders
                .into_iter()
                .map(|h| PhpHolder {
                    who: Who::new(h.token_digest, h.mode, h.origin),
                    acquired_at: h.acquired_at.map(unix_secs),
                    expires_at: h.expires_at.map(unix_secs),
                })
                .collect(),
            waiters: state
                .waiters
                .into_iter()
                .map(|w| PhpWaiter {
                    who: Who::new(w.token_digest, w.mode, w.origin),
                    since: w.since.map(unix_secs),
                })
                .collect(),
        }
    }
}

fn write_mode(write: bool) -> Mode {
    if write {
        Mode::Exclusive
    } else {
        Mode::Shared
    }
}

/// Whether `digest` is the digest of `key`'s token (a key that never drew one owns nothing).
fn owned_by(digest: Option<&String>, key: &PhpKey) -> PhpResult<bool> {
    let key = key.engine()?;
    Ok(match (digest, key.drawn_token()) {
        (Some(digest), Some(token)) => *digest == deadbolt_core::token_digest(token.as_str()),
        _ => false,
    })
}

/// The PHP methods of a holder or waiter class: the getters of who it is (mode, digest, host,
/// pid, label, `isOwnedBy()`), then the class's own. ext-php-rs takes one `#[php_impl]` block per
/// class, so the shared getters are stamped here rather than written twice.
macro_rules! who_class_methods {
    ($class:ident { $($own:tt)* }) => {
        #[php_impl]
        impl $class {
            /// "write" (exclusive) or "read" (shared).
            pub fn get_mode(&self) -> &'static str {
                mode_name(write_mode(self.who.write))
            }

            /// A short one-way digest of the token (`Key::getTokenDigest()`), or null where the
            /// store shows none (flock: the kernel knows processes, not tokens).
            pub fn get_token_digest(&self) -> Option<String> {
                self.who.digest.clone()
            }

            /// The host name, or null when no record was left (symfony/lock, an older Deadbolt).
            pub fn get_host(&self) -> Option<String> {
                self.who.origin.host.clone()
            }

            pub fn get_pid(&self) -> Option<i64> {
                self.who.origin.pid.map(i64::from)
            }

            /// The caller label (`Lock::setLabel()`, `DEADBOLT_LABEL`, systemd's `INVOCATION_ID`).
            pub fn get_label(&self) -> Option<String> {
                self.who.origin.label.clone()
            }

            /// Whether this is `$key` (its token's digest matches).
            pub fn is_owned_by(&self, key: &PhpKey) -> PhpResult<bool> {
                owned_by(self.who.digest.as_ref(), key)
            }

            $($own)*
        }
    };
}

who_class_methods!(PhpHolder {
    /// When it took the lock (Unix seconds), where the store records it.
    pub fn get_acquired_at(&self) -> Option<f64> {
        self.acquired_at
    }

    /// When the store lets the lock expire (Unix seconds), for stores whose locks expire.
    pub fn get_expires_at(&self) -> Option<f64> {
        self.expires_at
    }

    /// `['mode', 'tokenDigest', 'host', 'pid', 'label', 'acquiredAt', 'expiresAt']`.
    pub fn to_array(&self) -> PhpResult<ZBox<ZendHashTable>> {
        let failed = |e: ext_php_rs::error::Error| invalid_argument(e.to_string());
        let mut array = self.who.to_array()?;
        array.insert("acquiredAt", self.acquired_at).map_err(failed)?;
        array.insert("expiresAt", self.expires_at).map_err(failed)?;
        Ok(array)
    }
});

who_class_methods!(PhpWaiter {
    /// Since when it waits (Unix seconds), where the store records it.
    pub fn get_waiting_since(&self) -> Option<f64> {
        self.since
    }

    /// `['mode', 'tokenDigest', 'host', 'pid', 'label', 'waitingSince']`.
    pub fn to_array(&self) -> PhpResult<ZBox<ZendHashTable>> {
        let mut array = self.who.to_array()?;
        array
            .insert("waitingSince", self.since)
            .map_err(|e| invalid_argument(e.to_string()))?;
        Ok(array)
    }
});

#[php_impl]
impl PhpLockState {
    pub fn get_resource(&self) -> Binary<u8> {
        Binary::new(self.resource.clone())
    }

    /// Whether anyone holds the resource.
    pub fn is_held(&self) -> bool {
        !self.holders.is_empty()
    }

    /// The holders (`Deadbolt\Holder[]`): one writer, or the readers.
    pub fn get_holders(&self) -> PhpResult<Vec<ZBox<ZendClassObject<PhpHolder>>>> {
        Ok(self
            .holders
            .iter()
            .map(|h| {
                ZendClassObject::new(PhpHolder {
                    who: h.who.clone(),
                    acquired_at: h.acquired_at,
                    expires_at: h.expires_at,
                })
            })
            .collect())
    }

    /// The waiters in queue order (`Deadbolt\Waiter[]`), for stores that queue them (Redis) or
    /// see them blocked (flock: callers blocked in flock(2) without a timeout).
    pub fn get_waiters(&self) -> PhpResult<Vec<ZBox<ZendClassObject<PhpWaiter>>>> {
        Ok(self
            .waiters
            .iter()
            .map(|w| {
                ZendClassObject::new(PhpWaiter {
                    who: w.who.clone(),
                    since: w.since,
                })
            })
            .collect())
    }

    /// `['resource' => string, 'held' => bool, 'holders' => [...], 'waiters' => [...]]`.
    pub fn to_array(&self) -> PhpResult<ZBox<ZendHashTable>> {
        let failed = |e: ext_php_rs::error::Error| invalid_argument(e.to_string());
        let mut holders = ZendHashTable::new();
        for holder in &self.holders {
            holders.push(holder.to_array()?).map_err(failed)?;
        }
        let mut waiters = ZendHashTable::new();
        for waiter in &self.waiters {
            waiters.push(waiter.to_array()?).map_err(failed)?;
        }
        let mut array = ZendHashTable::new();
        array
            .insert("resource", Binary::new(self.resource.clone()))
            .map_err(failed)?;
        array.insert("held", self.is_held()).map_err(failed)?;
        array.insert("holders", holders).map_err(failed)?;
        array.insert("waiters", waiters).map_err(failed)?;
        Ok(array)
    }
}

/// The state of `resource` in `store`, or the store's words for why it cannot tell.
pub fn inspect(store: &dyn deadbolt_core::Store, resource: &[u8]) -> PhpResult<PhpLockState> {
    let state = deadbolt_core::inspecting(store)
        .and_then(|inspecting| inspecting.inspect(resource))
        .map_err(to_php)?;
    Ok(PhpLockState::new(resource, state))
}

/// Releases `resource` in `store` whoever holds it: the number of holders it had.
pub fn force_release(store: &dyn deadbolt_core::Store, resource: &[u8]) -> PhpResult<i64> {
    let count = deadbolt_core::inspecting(store)
        .and_then(|inspecting| inspecting.force_release(resource))
        .map_err(to_php)?;
    Ok(i64::try_from(count).unwrap_or(i64::MAX))
}
