//! What a lock's `Deadbolt\Key` and a `Deadbolt\Semaphore\Key` share: the values kept in them by
//! name (`setState()`), and their serialized form (resource, owner token, expiry as Unix time,
//! state), so that a key moves to another process and releases or refreshes there what it holds.
//! Errors are the engine's `InvalidArgument`/`Unserializable`; each class maps them to its own
//! exception family.

use std::cell::RefCell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use deadbolt_core::{Error, Key};
use ext_php_rs::binary::Binary;
use ext_php_rs::types::{ZendHashTable, Zval};

/// What stores and applications keep in a Key by name (symfony's `setState()`), counted
/// references to the PHP values, in the order they were set.
#[derive(Default)]
pub(crate) struct KeyStates(RefCell<Vec<(Vec<u8>, Zval)>>);

impl KeyStates {
    pub(crate) fn has(&self, name: &[u8]) -> bool {
        self.0.borrow().iter().any(|(kept, _)| kept == name)
    }

    pub(crate) fn set(&self, name: Vec<u8>, state: &Zval) {
        let value = state.shallow_clone();
        let mut states = self.0.borrow_mut();
        match states.iter_mut().find(|(kept, _)| *kept == name) {
            Some((_, kept)) => *kept = value,
            None => states.push((name, value)),
        }
    }

    pub(crate) fn remove(&self, name: &[u8]) {
        self.0.borrow_mut().retain(|(kept, _)| kept != name);
    }

    /// The value kept under `name`; null when there is none.
    pub(crate) fn get(&self, name: &[u8]) -> Zval {
        self.0
            .borrow()
            .iter()
            .find(|(kept, _)| kept == name)
            .map_or_else(Zval::new, |(_, value)| value.shallow_clone())
    }

    /// A copy holding references to the same values (a cloned Key's).
    pub(crate) fn shallow_copy(&self) -> Self {
        let states = self.0.borrow();
        let copy = states
            .iter()
            .map(|(name, value)| (name.clone(), value.shallow_clone()))
            .collect();
        KeyStates(RefCell::new(copy))
    }

    pub(crate) fn replace(&self, other: KeyStates) {
        *self.0.borrow_mut() = other.0.into_inner();
    }

    /// Each value is one counted reference of the Key's. Borrowed right now (a value being set):
    /// not reported, which is only ever safe.
    pub(crate) fn gc_children(&self, report: &mut dyn FnMut(&Zval)) {
        if let Ok(states) = self.0.try_borrow() {
            states.iter().for_each(|(_, value)| report(value));
        }
    }
}

/// The owner token a key is serialized with. A key inherited through fork() never exports its
/// parent's token: it becomes this process's own first, with a token of its own that holds
/// nothing. Refused for a key marked unserializable or holding something bound to this process
/// (an open flock file).
pub(crate) fn exported_token(key: &mut Key, unserializable: bool) -> Result<String, Error> {
    key.adopt_if_inherited();
    let refused = |reason: &str| Error::Unserializable {
        resource: key.display_resource(),
        reason: reason.into(),
    };
    if unserializable {
        return Err(refused("it was marked unserializable"));
    }
    if key.is_process_bound() {
        return Err(refused(
            "it holds a lock bound to this process (flock, System V semaphore)",
        ));
    }
    Ok(key.token()?.as_str().to_owned())
}

/// Writes `resource`, `token`, `expiringTime` (Unix time, as symfony's Keys keep it, so the
/// remaining lifetime carries over to a host whose clock agrees) and `state` into `data`.
pub(crate) fn write_parts(
    data: &mut ZendHashTable,
    key: &Key,
    token: String,
    states: &KeyStates,
) -> Result<(), Error> {
    let failed = |e: ext_php_rs::error::Error| Error::InvalidArgument {
        message: e.to_string(),
    };
    data.insert("resource", Binary::new(key.resource().to_vec()))
        .map_err(failed)?;
    data.insert("token", token).map_err(failed)?;
    let expiring_time = key.remaining_lifetime().map(|left| unix_now() + left);
    data.insert("expiringTime", expiring_time).map_err(failed)?;
    let mut state = ZendHashTable::new();
    for (name, value) in states.0.borrow().iter() {
        let name = String::from_utf8_lossy(name);
        state
            .insert(name.as_ref(), value.shallow_clone())
            .map_err(failed)?;
    }
    data.insert("state", state).map_err(failed)
}

/// The common parts of a serialized key, checked.
pub(crate) struct KeyParts {
    pub resource: Vec<u8>,
    pub token: String,
    pub expiry: SavedExpiry,
    pub state: KeyStates,
}

/// Reads what [`write_parts`] wrote (or a key imported from its parts): string `resource` and
/// `token`, optionally `expiringTime` (Unix time) and `state` (array). `class` names the Key
/// class in the messages. The token is never quoted.
pub(crate) fn read_parts(data: &ZendHashTable, class: &str) -> Result<KeyParts, Error> {
    let field = |name: &str| data.get(name).and_then(|value| value.binary::<u8>());
    let (Some(resource), Some(token)) = (field("resource"), field("token")) else {
        return Err(invalid(format!(
            "A serialized {class} needs string \"resource\" and \"token\" fields."
        )));
    };
    let token = String::from_utf8(token).map_err(|_| {
        invalid(format!(
            "A serialized {class}'s \"token\" must be valid UTF-8."
        ))
    })?;
    let expiring_time = data
        .get("expiringTime")
        .and_then(|at| at.double().or_else(|| at.long().map(|at| at as f64)));
    let state = KeyStates::default();
    if let Some(kept) = data.get("state").and_then(Zval::array) {
        for (name, value) in kept {
            state.set(name.to_string().into_bytes(), value);
        }
    }
    Ok(KeyParts {
        resource,
        token,
        expiry: SavedExpiry {
            at: expiring_time,
            class: class.to_owned(),
        },
        state,
    })
}

/// A serialized key's expiry (Unix time; `None`: none), to give the restored key.
pub(crate) struct SavedExpiry {
    at: Option<f64>,
    class: String,
}

impl SavedExpiry {
    /// Gives `key` the expiry it was saved with: one in the past stays that far in the past; one
    /// further ahead than any TTL (~31 years) is refused, as a TTL that long would be.
    pub(crate) fn restore(&self, key: &mut Key) -> Result<(), Error> {
        let Some(at) = self.at else {
            return Ok(());
        };
        let left = at - unix_now();
        let class = &self.class;
        if !left.is_finite() {
            return Err(invalid(format!(
                "A serialized {class}'s \"expiringTime\" must be a finite number."
            )));
        }
        if left <= 0.0 {
            key.expired_ago(Duration::try_from_secs_f64(-left).unwrap_or(Duration::MAX));
            return Ok(());
        }
        let ttl = deadbolt_core::Ttl::from_secs(left).map_err(|_| {
            invalid(format!(
                "A serialized {class}'s \"expiringTime\" is {left:.0} s ahead, more than the \
                 longest TTL (about 31 years): it cannot be an expiry this Key was given."
            ))
        })?;
        key.reduce_lifetime(ttl);
        Ok(())
    }
}

fn invalid(message: String) -> Error {
    Error::InvalidArgument { message }
}

/// Now as Unix time in seconds.
fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64())
}
