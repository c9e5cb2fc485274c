//! Locks in this process's memory, per store object (symfony/lock's InMemoryStore): for tests and
//! for code that only needs to exclude itself within one request or worker. Locks never expire.

use std::collections::{HashMap, HashSet};
use std::time::SystemTime;

use crate::sync::Mutex;

use crate::holder::{self, LockState, Origin};
use crate::store::{Capabilities, FencingStore, InspectingStore, Mode, SemaphoreStore, Store};
use crate::token::Token;
use crate::{Error, Key, Result, Ttl};

const NAME: &str = "InMemoryStore";

/// Who holds one resource.
#[derive(Debug, Default)]
struct Holders {
    writer: Option<Token>,
    readers: HashSet<Token>,
    /// Each holder's record: its label and when it took the lock (the rest is this process).
    records: HashMap<Token, (Option<String>, SystemTime)>,
}

impl Holders {
    fn is_empty(&self) -> bool {
        self.writer.is_none() && self.readers.is_empty()
    }

    /// Keeps `token`'s record unless it has one (a promotion or demotion keeps the first).
    fn record(&mut self, token: &Token, label: Option<&str>) {
        self.records
            .entry(token.clone())
            .or_insert_with(|| (label.map(str::to_owned), SystemTime::now()));
    }

    /// The holders as inspection shows them.
    fn state(&self) -> LockState {
        let holder = |token: &Token, mode| {
            let (label, acquired_at) = self.records.get(token).cloned().unzip();
            holder::Holder {
                token_digest: holder::digest(token.as_str()),
                mode,
                origin: Origin::here(label.flatten().as_deref()),
                acquired_at,
                expires_at: None,
            }
        };
        let writer = self.writer.iter().map(|w| holder(w, Mode::Exclusive));
        let readers = self.readers.iter().map(|r| holder(r, Mode::Shared));
        LockState {
            holders: writer.chain(readers).collect(),
            waiters: Vec::new(),
        }
    }
}

/// The locks of one store object.
#[derive(Debug, Default)]
struct Table {
    holders: HashMap<Vec<u8>, Holders>,
    /// Last fencing token given out. One counter for the whole store: it grows for every
    /// resource, and freed resources can be forgotten without tokens ever going back.
    fence: u64,
    /// The semaphores: each holder's token and weight, per resource (never expiring, as locks).
    semaphores: HashMap<Vec<u8>, HashMap<Token, u64>>,
}

/// A store whose locks live in this object only.
#[derive(Debug, Default)]
pub struct InMemoryStore {
    locks: Mutex<Table>,
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Store for InMemoryStore {
    fn name(&self) -> &str {
        NAME
    }

    fn save(&self, key: &mut Key, mode: Mode, _ttl: Option<Ttl>) -> Result<()> {
        let token = key.token()?.clone();
        let mut table = self.locks.lock();
        let table = &mut *table;
        let holders = table.holders.entry(key.resource().to_vec()).or_default();
        let other_writer = holders.writer.as_ref().is_some_and(|w| *w != token);
        let other_reader = holders.readers.iter().any(|r| *r != token);
        match mode {
            Mode::Exclusive if other_writer || other_reader => {
                Err(Error::conflict(key.display_resource(), NAME))
            }
            Mode::Shared if other_writer => Err(Error::conflict(key.display_resource(), NAME)),
            Mode::Exclusive => {
                // Promotion: the sole reader becomes the writer.
                holders.readers.clear();
                holders.record(&token, key.label());
                holders.writer = Some(token);
                Ok(())
            }
            Mode::Shared => {
                // Demotion: a writer asking for read gives up its write lock.
                holders.writer = None;
                holders.record(&token, key.label());
                holders.readers.insert(token);
                Ok(())
            }
        }
    }

    fn put_off_expiration(&self, key: &mut Key, _ttl: Ttl) -> Result<()> {
        // In-memory locks never expire; only ownership is checked.
        if Store::exists(self, key)? {
            Ok(())
        } else {
            Err(Error::not_held(key.display_resource(), NAME))
        }
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        let Some(token) = key.drawn_token() else {
            return Ok(());
        };
        let mut table = self.locks.lock();
        if let Some(holders) = table.holders.get_mut(key.resource()) {
            if holders.writer.as_ref() == Some(token) {
                holders.writer = None;
            }
            holders.readers.remove(token);
            holders.records.remove(token);
            if holders.is_empty() {
                table.holders.remove(key.resource());
            }
        }
        Ok(())
    }

    fn exists(&self, key: &Key) -> Result<bool> {
        let Some(token) = key.drawn_token() else {
            return Ok(false);
        };
        let table = self.locks.lock();
        Ok(table
            .holders
            .get(key.resource())
            .is_some_and(|h| h.writer.as_ref() == Some(token) || h.readers.contains(token)))
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities {
            fencing: Some(self),
            inspecting: Some(self),
            semaphores: Some(self),
            ..Capabilities::default()
        }
    }
}

impl FencingStore for InMemoryStore {
    fn draw_fencing_token(&self, key: &mut Key) -> Result<Option<u64>> {
        let Some(token) = key.drawn_token() else {
            return Ok(None);
        };
        let mut table = self.locks.lock();
        let writes = table
            .holders
            .get(key.resource())
            .is_some_and(|h| h.writer.as_ref() == Some(token));
        if !writes {
            return Ok(None);
        }
        table.fence += 1;
        Ok(Some(table.fence))
    }
}

impl InspectingStore for InMemoryStore {
    fn inspect(&self, resource: &[u8]) -> Result<LockState> {
        let table = self.locks.lock();
        Ok(table
            .holders
            .get(resource)
            .map(Holders::state)
            .unwrap_or_default())
    }

    /// The resource's holders are forgotten; the store-wide fencing counter keeps its value.
    fn force_release(&self, resource: &[u8]) -> Result<usize> {
        let mut table = self.locks.lock();
        Ok(table
            .holders
            .remove(resource)
            .map_or(0, |h| usize::from(h.writer.is_some()) + h.readers.len()))
    }
}

/// A key's slots, which the engine checked were there.
fn slots_of(key: &Key) -> Result<crate::Slots> {
    key.slots()
        .ok_or_else(|| Error::invalid_argument("A semaphore key has slots."))
}

impl SemaphoreStore for InMemoryStore {
    fn save(&self, key: &mut Key, _ttl: Option<Ttl>) -> Result<()> {
        let slots = slots_of(key)?;
        let token = key.token()?.clone();
        let mut table = self.locks.lock();
        let holders = table.semaphores.entry(key.resource().to_vec()).or_default();
        if holders.contains_key(&token) {
            return Ok(());
        }
        let held: u64 = holders.values().sum();
        if held.saturating_add(slots.weight()) > slots.limit() {
            return Err(Error::conflict(key.display_resource(), NAME));
        }
        holders.insert(token, slots.weight());
        Ok(())
    }

    fn put_off_expiration(&self, key: &mut Key, _ttl: Ttl) -> Result<()> {
        if SemaphoreStore::exists(self, key)? {
            Ok(())
        } else {
            Err(Error::not_held(key.display_resource(), NAME))
        }
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        let Some(token) = key.drawn_token() else {
            return Ok(());
        };
        let mut table = self.locks.lock();
        if let Some(holders) = table.semaphores.get_mut(key.resource()) {
            holders.remove(token);
            if holders.is_empty() {
                table.semaphores.remove(key.resource());
            }
        }
        Ok(())
    }

    fn exists(&self, key: &Key) -> Result<bool> {
        let Some(token) = key.drawn_token() else {
            return Ok(false);
        };
        let table = self.locks.lock();
        Ok(table
            .semaphores
            .get(key.resource())
            .is_some_and(|holders| holders.contains_key(token)))
    }
}
