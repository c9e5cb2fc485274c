//! A lock key: the resource, the owner's token and the lifetime; and, as in symfony/lock, a place
//! where a store keeps its own state for a key it holds (the flock store's open file).

use std::any::{Any, TypeId};
use std::sync::OnceLock;

use crate::lifetime::{Expiry, Lifetime};
use crate::process::{epoch, Epoch};
use crate::token::Token;
use crate::{Result, Ttl};

/// Longest resource text quoted in a message; resources may be megabytes of binary.
const SHOWN_RESOURCE_BYTES: usize = 200;

/// The unit a lock is about. Any byte string is a valid resource.
#[derive(Debug)]
pub struct Key {
    resource: Vec<u8>,
    /// Drawn on first use: stores that need no token (flock) never pay for the random bytes.
    token: OnceLock<Token>,
    lifetime: Lifetime,
    /// The process that made the key. In a forked child its ownership is inherited and must not be
    /// used: [`Key::adopt_if_inherited`] makes it the child's own, once, before any store call.
    epoch: Epoch,
    /// Stores' own state for this key, one entry per store type (symfony/lock's `Key::setState`).
    /// State belongs to this process: a key holding any cannot be serialized.
    states: Vec<(TypeId, Box<dyn Any + Send>)>,
    /// The caller's label for the records its locks leave (a job id); checked when set.
    label: Option<String>,
    /// A semaphore's key: how many slots there are and how many this key takes.
    slots: Option<Slots>,
}

/// A semaphore's size and a holder's share of it (symfony/semaphore's `limit` and `weight`): at
/// most `limit` weight is held at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slots {
    limit: u64,
    weight: u64,
}

impl Slots {
    /// One slot of one: a semaphore that is a plain lock.
    pub const ONE: Slots = Slots {
        limit: 1,
        weight: 1,
    };

    /// Checked as symfony/semaphore's Key checks them, with its messages.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for a limit or weight under 1, or a weight over the limit.
    pub fn new(limit: i64, weight: i64) -> Result<Self> {
        if limit < 1 {
            return Err(crate::Error::invalid_argument(format!(
                "The limit ({limit}) should be greater than 0."
            )));
        }
        if weight < 1 {
            return Err(crate::Error::invalid_argument(format!(
                "The weight ({weight}) should be greater than 0."
            )));
        }
        if weight > limit {
            return Err(crate::Error::invalid_argument(format!(
                "The weight ({weight}) should be lower or equals to the limit ({limit})."
            )));
        }
        Ok(Slots {
            limit: limit.unsigned_abs(),
            weight: weight.unsigned_abs(),
        })
    }

    /// The most weight held at once.
    pub fn limit(self) -> u64 {
        self.limit
    }

    /// The weight this key holds.
    pub fn weight(self) -> u64 {
        self.weight
    }
}

impl Key {
    /// A key for `resource` with no expiry; its token is drawn when first needed.
    pub fn new(resource: impl Into<Vec<u8>>) -> Self {
        Key {
            resource: resource.into(),
            token: OnceLock::new(),
            lifetime: Lifetime::default(),
            epoch: epoch(),
            states: Vec::new(),
            label: None,
            slots: None,
        }
    }

    /// A semaphore's key: `resource` with `slots`. Stores keep semaphores apart from locks (a
    /// lock and a semaphore on one resource name are two things).
    pub fn with_slots(resource: impl Into<Vec<u8>>, slots: Slots) -> Self {
        Key {
            slots: Some(slots),
            ..Key::new(resource)
        }
    }

    /// The semaphore's slots; `None` for a lock's key.
    pub fn slots(&self) -> Option<Slots> {
        self.slots
    }

    /// A key that arrived from another process (or from symfony/lock) with its owner token: it
    /// can release or refresh the lock that token holds in a store not bound to a process.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for an unusable token.
    pub fn import(resource: impl Into<Vec<u8>>, token: String) -> Result<Self> {
        let key = Key::new(resource);
        let token = Token::import(token)?;
        key.token.get_or_init(|| token);
        Ok(key)
    }

    /// A semaphore's key that arrived from another process with its owner token and its slots:
    /// it can give back or put off the slot that token holds in a store not bound to a process.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for an unusable token.
    pub fn import_with_slots(
        resource: impl Into<Vec<u8>>,
        token: String,
        slots: Slots,
    ) -> Result<Self> {
        Ok(Key {
            slots: Some(slots),
            ..Key::import(resource, token)?
        })
    }

    /// The resource, byte for byte.
    pub fn resource(&self) -> &[u8] {
        &self.resource
    }

    /// The resource for messages: lossy UTF-8, shortened when long.
    pub fn display_resource(&self) -> String {
        display_resource(&self.resource)
    }

    /// The owner token, drawn now if this is its first use.
    ///
    /// # Errors
    /// [`crate::Error::Storage`] when no random token can be drawn.
    pub fn token(&self) -> Result<&Token> {
        if let Some(token) = self.token.get() {
            return Ok(token);
        }
        let token = Token::generate()?;
        Ok(self.token.get_or_init(|| token))
    }

    /// The owner token if one was drawn; a key without one has never been saved anywhere.
    pub fn drawn_token(&self) -> Option<&Token> {
        self.token.get()
    }

    /// The caller's label for the records this key's locks leave, if it set one.
    pub fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }

    /// Sets the label for the records this key's locks leave (see `holder`); empty: none (the
    /// process's default applies).
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for a label a record cannot hold.
    pub fn set_label(&mut self, label: &str) -> Result<()> {
        self.label = crate::holder::checked_label(label)?;
        Ok(())
    }

    /// The record this key's locks leave in a store (`holder::record`).
    pub fn holder_record(&self) -> String {
        crate::holder::record(self.label())
    }

    /// Moves the expiry to `now + ttl` unless already sooner.
    pub fn reduce_lifetime(&mut self, ttl: Ttl) {
        self.lifetime.reduce(ttl);
    }

    /// Moves the expiry to `since + ttl` unless already sooner.
    pub fn reduce_lifetime_from(&mut self, since: std::time::Instant, ttl: Ttl) {
        self.lifetime.reduce_from(since, ttl);
    }

    /// Expires the key now unless it already has.
    pub fn expire_now(&mut self) {
        self.lifetime.expire_now();
    }

    /// Expired `ago` (a key restored with an expiry in the past).
    pub fn expired_ago(&mut self, ago: std::time::Duration) {
        self.lifetime.expired_ago(ago);
    }

    /// Forgets the expiry.
    pub fn reset_lifetime(&mut self) {
        self.lifetime.reset();
    }

    /// Lets the expiry follow `expiry` (the background refresher's extensions of the lock).
    pub fn follow_expiry(&mut self, expiry: Expiry) {
        self.lifetime.follow(expiry);
    }

    /// Stops following an expiry; the last one stays.
    pub fn unfollow_expiry(&mut self) {
        self.lifetime.unfollow();
    }

    /// Seconds left (negative once past), `None` without expiry.
    pub fn remaining_lifetime(&self) -> Option<f64> {
        self.lifetime.remaining_secs()
    }

    /// True once the expiry has passed.
    pub fn is_expired(&self) -> bool {
        self.lifetime.is_expired()
    }

    /// True when this key was created in another process and reached this one through fork().
    pub fn is_inherited(&self) -> bool {
        self.epoch != epoch()
    }

    /// True when a store keeps state in this key that only this process can use (an open lock
    /// file): such a key cannot travel to another process.
    pub fn is_process_bound(&self) -> bool {
        !self.states.is_empty()
    }

    /// The state a store of type `S` keeps in this key.
    pub fn state<S: Any + Send>(&self) -> Option<&S> {
        self.states
            .iter()
            .find(|(id, _)| *id == TypeId::of::<S>())
            .and_then(|(_, state)| state.downcast_ref())
    }

    /// The state a store of type `S` keeps in this key, to change it.
    pub fn state_mut<S: Any + Send>(&mut self) -> Option<&mut S> {
        self.states
            .iter_mut()
            .find(|(id, _)| *id == TypeId::of::<S>())
            .and_then(|(_, state)| state.downcast_mut())
    }

    /// Keeps `state` for stores of its type, replacing what was there.
    pub fn set_state<S: Any + Send>(&mut self, state: S) {
        drop(self.take_state::<S>());
        self.states.push((TypeId::of::<S>(), Box::new(state)));
    }

    /// Removes and returns the state of type `S`.
    pub fn take_state<S: Any + Send>(&mut self) -> Option<S> {
        let at = self
            .states
            .iter()
            .position(|(id, _)| *id == TypeId::of::<S>())?;
        self.states
            .swap_remove(at)
            .1
            .downcast()
            .ok()
            .map(|state| *state)
    }

    /// Makes an inherited key this process's own, and is a no-op otherwise. Called once at each
    /// entry point (a `Lock` call, a store call from PHP) before the key reaches a store, so that
    /// stores never ask which process they run in. Drops the stores' state (closing our copy of a
    /// lock file's descriptor leaves the parent's lock in place) and forgets the token (a new one
    /// is drawn on use), so the child can never pass for the parent.
    pub fn adopt_if_inherited(&mut self) {
        if self.is_inherited() {
            self.states.clear();
            self.token = OnceLock::new();
            self.lifetime.reset();
            self.epoch = epoch();
        }
    }
}

/// The resource as quoted in messages: lossy UTF-8, cut after [`SHOWN_RESOURCE_BYTES`].
pub fn display_resource(resource: &[u8]) -> String {
    if resource.len() <= SHOWN_RESOURCE_BYTES {
        return String::from_utf8_lossy(resource).into_owned();
    }
    let head = String::from_utf8_lossy(&resource[..SHOWN_RESOURCE_BYTES]);
    format!("{head}...({} bytes)", resource.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_bytes_make_a_key() {
        for resource in [&b""[..], b"a\0b", b"\xff\xfe", &vec![b'x'; 1 << 20]] {
            let key = Key::new(resource);
            assert_eq!(key.resource(), resource);
            assert!(!key.is_inherited());
        }
    }

    #[test]
    fn long_resources_are_shortened_in_messages() {
        let shown = display_resource(&vec![b'x'; 1000]);
        assert!(shown.len() < 300, "{shown}");
        assert!(shown.ends_with("(1000 bytes)"));
    }

    #[test]
    fn an_imported_semaphore_key_keeps_its_token_and_slots() -> Result<()> {
        let slots = Slots::new(4, 3)?;
        let key = Key::import_with_slots("r", "a-token".into(), slots)?;
        assert_eq!(key.token()?.as_str(), "a-token");
        assert_eq!(key.slots(), Some(slots));
        assert!(Key::import_with_slots("r", String::new(), slots).is_err());
        Ok(())
    }

    #[test]
    fn a_store_keeps_state_per_type() {
        let mut key = Key::new("r");
        assert!(!key.is_process_bound());
        key.set_state(7u8);
        key.set_state(8u8);
        key.set_state(String::from("x"));
        assert!(key.is_process_bound());
        assert_eq!(key.state_mut::<u8>().copied(), Some(8));
        assert_eq!(key.take_state::<u8>(), Some(8));
        assert_eq!(key.take_state::<u8>(), None);
        assert_eq!(key.take_state::<String>().as_deref(), Some("x"));
        assert!(!key.is_process_bound());
    }

    #[test]
    fn keys_of_the_same_resource_have_different_tokens() {
        let a = Key::new("r");
        let b = Key::new("r");
        assert_ne!(a.token().unwrap(), b.token().unwrap());
        assert_eq!(a.token().unwrap(), a.token().unwrap());
    }
}
