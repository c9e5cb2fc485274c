//! A lock key: the resource, the owner's token, the lifetime, and what the store keeps per key.

use std::sync::OnceLock;

use crate::lifetime::Lifetime;
use crate::process::current_pid;
use crate::store::flock::FlockHold;
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
    /// The pid that drew the token. In any other process this key's ownership is inherited
    /// through fork() and must not be used.
    owner_pid: u32,
    /// The flock store's open file for this key, if it holds one.
    pub(crate) flock: Option<FlockHold>,
    /// The fencing token of the current exclusive hold, once known.
    pub(crate) fence: Option<u64>,
}

impl Key {
    /// A key for `resource` with no expiry; its token is drawn when first needed.
    pub fn new(resource: impl Into<Vec<u8>>) -> Self {
        Key {
            resource: resource.into(),
            token: OnceLock::new(),
            lifetime: Lifetime::default(),
            owner_pid: current_pid(),
            flock: None,
            fence: None,
        }
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

    /// Moves the expiry to `now + ttl` unless already sooner.
    pub fn reduce_lifetime(&mut self, ttl: Ttl) {
        self.lifetime.reduce(ttl);
    }

    /// Moves the expiry to `since + ttl` unless already sooner.
    pub fn reduce_lifetime_from(&mut self, since: std::time::Instant, ttl: Ttl) {
        self.lifetime.reduce_from(since, ttl);
    }

    /// Forgets the expiry.
    pub fn reset_lifetime(&mut self) {
        self.lifetime.reset();
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
        self.owner_pid != current_pid()
    }

    /// The fencing token of the current exclusive hold, if the store assigned one.
    pub fn fence(&self) -> Option<u64> {
        self.fence
    }

    /// True when the key holds state that only this process can use (an open lock file).
    pub fn is_process_bound(&self) -> bool {
        self.flock.is_some()
    }

    /// Makes an inherited key this process's own: drops the parent's file handle without
    /// unlocking it (closing our copy of the descriptor leaves the parent's lock in place) and
    /// forgets the token (a new one is drawn on use), so the child can never pass for the parent.
    pub fn adopt_if_inherited(&mut self) {
        if self.is_inherited() {
            self.flock = None;
            self.fence = None;
            self.token = OnceLock::new();
            self.lifetime.reset();
            self.owner_pid = current_pid();
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
    fn keys_of_the_same_resource_have_different_tokens() {
        let a = Key::new("r");
        let b = Key::new("r");
        assert_ne!(a.token().unwrap(), b.token().unwrap());
        assert_eq!(a.token().unwrap(), a.token().unwrap());
    }
}
