//! This process's native connections, by connection identity: kept across lock factories and
//! FPM requests while a store uses them; of those no store uses any more, the [`IDLE_KEPT`] most
//! recent stay open for the next request and older ones are closed. Per process
//! ([`PerProcess`]): a forked child opens its own.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use parking_lot::Mutex;

use crate::process::PerProcess;
use crate::store::redis::pending::UnreadReplies;

/// The connection of this process to one DSN.
#[derive(Default)]
pub struct Slot {
    pub connection: Option<redis::Connection>,
    /// The read timeout set on `connection`'s socket, so that a command sets it only when it
    /// changes (one `setsockopt` per command saved).
    pub read_timeout: Option<Duration>,
    /// The eviction-policy check runs once per process and DSN.
    pub policy_checked: bool,
    pub warning: Option<String>,
    /// Releases sent on `connection` whose replies are still to be read.
    pub unread: UnreadReplies,
}

impl Slot {
    /// Forgets the connection (broken, or out of step with the server); releases whose replies
    /// were still to come on it are settled as unconfirmed.
    pub fn drop_connection(&mut self, why: &str) {
        self.connection = None;
        self.read_timeout = None;
        self.unread.lost(why);
    }
}

/// How many connections no store uses any more stay open (the most recently made ones), so that
/// the next FPM request or the next factory finds its connection ready.
pub const IDLE_KEPT: usize = 8;

/// This process's slots by name (a connection identity, and a purpose), each with the order in
/// which it was made.
#[derive(Default)]
struct Slots {
    by_name: HashMap<String, (u64, Arc<Mutex<Slot>>)>,
    made: u64,
}

static SLOTS: LazyLock<PerProcess<Mutex<Slots>>> = LazyLock::new(PerProcess::new);

/// This process's slot named `name`, made on first use. Making one closes the oldest idle
/// connections beyond [`IDLE_KEPT`] (idle: no transport holds the slot but this table).
pub fn slot_for(name: &str) -> Arc<Mutex<Slot>> {
    let mut slots = SLOTS.get_or_init(Mutex::default).lock();
    if let Some((_, slot)) = slots.by_name.get(name) {
        return Arc::clone(slot);
    }
    let mut idle: Vec<(u64, String)> = slots
        .by_name
        .iter()
        .filter(|(_, (_, slot))| Arc::strong_count(slot) == 1)
        .map(|(name, (made, _))| (*made, name.clone()))
        .collect();
    if idle.len() > IDLE_KEPT {
        idle.sort_unstable();
        for (_, name) in &idle[..idle.len() - IDLE_KEPT] {
            slots.by_name.remove(name);
        }
    }
    slots.made += 1;
    let made = slots.made;
    let slot = Arc::new(Mutex::new(Slot::default()));
    slots
        .by_name
        .insert(name.to_owned(), (made, Arc::clone(&slot)));
    slot
}

/// Reads the replies of every release sent without waiting on this process's connections (at the
/// end of a request, and at exit), so each release is settled and no socket closes with a reply
/// unread.
pub fn read_unread_replies() {
    let Some(slots) = SLOTS.get() else {
        return;
    };
    let slots: Vec<Arc<Mutex<Slot>>> = slots
        .lock()
        .by_name
        .values()
        .map(|(_, slot)| Arc::clone(slot))
        .collect();
    for slot in slots {
        let mut slot = slot.lock();
        let slot = &mut *slot;
        if let Some(connection) = slot.connection.as_mut() {
            if !slot.unread.is_empty()
                && slot
                    .unread
                    .read_all(connection, &|e| e.to_string())
                    .is_err()
            {
                slot.drop_connection("connection lost");
            }
        }
    }
}
