//! Locks in this process's memory, per store object (symfony/lock's InMemoryStore): for tests and
//! for code that only needs to exclude itself within one request or worker.

use std::collections::{HashMap, HashSet};

use parking_lot::Mutex;

use crate::store::{SharedStore, Store};
use crate::token::Token;
use crate::{Error, Key, Result, Ttl};

const NAME: &str = "InMemoryStore";

/// Who holds one resource.
#[derive(Debug, Default)]
struct Holders {
    writer: Option<Token>,
    readers: HashSet<Token>,
}

impl Holders {
    fn is_empty(&self) -> bool {
        self.writer.is_none() && self.readers.is_empty()
    }
}

/// A store whose locks live in this object only. Locks never expire.
#[derive(Debug, Default)]
pub struct InMemoryStore {
    locks: Mutex<HashMap<Vec<u8>, Holders>>,
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn conflict(key: &Key) -> Error {
        Error::conflict(key.display_resource(), NAME)
    }
}

impl Store for InMemoryStore {
    fn name(&self) -> &str {
        NAME
    }

    fn save(&self, key: &mut Key) -> Result<()> {
        key.adopt_if_inherited();
        let token = key.token()?;
        let mut locks = self.locks.lock();
        let holders = locks.entry(key.resource().to_vec()).or_default();
        let other_writer = holders.writer.as_ref().is_some_and(|w| w != token);
        let other_reader = holders.readers.iter().any(|r| r != token);
        if other_writer || other_reader {
            return Err(Self::conflict(key));
        }
        // Promotion: the sole reader becomes the writer.
        holders.readers.clear();
        holders.writer = Some(token.clone());
        Ok(())
    }

    fn put_off_expiration(&self, key: &mut Key, _ttl: Ttl) -> Result<()> {
        // In-memory locks never expire; only ownership is checked.
        if self.exists(key)? {
            Ok(())
        } else {
            Err(Error::not_held(key.display_resource(), NAME))
        }
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        let Some(token) = key.drawn_token().filter(|_| !key.is_inherited()) else {
            return Ok(());
        };
        let mut locks = self.locks.lock();
        if let Some(holders) = locks.get_mut(key.resource()) {
            if holders.writer.as_ref() == Some(token) {
                holders.writer = None;
            }
            holders.readers.remove(token);
            if holders.is_empty() {
                locks.remove(key.resource());
            }
        }
        Ok(())
    }

    fn exists(&self, key: &Key) -> Result<bool> {
        let Some(token) = key.drawn_token().filter(|_| !key.is_inherited()) else {
            return Ok(false);
        };
        let locks = self.locks.lock();
        Ok(locks
            .get(key.resource())
            .is_some_and(|h| h.writer.as_ref() == Some(token) || h.readers.contains(token)))
    }

    fn as_shared(&self) -> Option<&dyn SharedStore> {
        Some(self)
    }
}

impl SharedStore for InMemoryStore {
    fn save_read(&self, key: &mut Key) -> Result<()> {
        key.adopt_if_inherited();
        let token = key.token()?;
        let mut locks = self.locks.lock();
        let holders = locks.entry(key.resource().to_vec()).or_default();
        if holders.writer.as_ref().is_some_and(|w| w != token) {
            return Err(Self::conflict(key));
        }
        // Demotion: a writer asking for read gives up its write lock.
        holders.writer = None;
        holders.readers.insert(token.clone());
        Ok(())
    }
}
