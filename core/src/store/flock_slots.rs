//! Semaphores on one host with flock(2): a semaphore of `limit` N on resource R is N slot files,
//! one unit of weight each, locked exclusively by their holder; a key of weight w holds w of them
//! open and locked (its state, [`SlotHold`]). The kernel counts for us: a slot file has one
//! holder, so at most N weight is held, and a process that dies frees its slots.
//!
//! Two more files order the takers. The **turnstile**: whoever collects slots holds it, and a
//! waiter keeps it, with the slots it got, until it has all of its weight, so the waiter at the
//! turnstile is never overtaken: a lighter caller that would fit in the slots freed meanwhile
//! cannot collect them. A caller that does not wait finds the turnstile taken and is refused
//! (nobody barges past a waiter). The **gate** lines up callers that do not wait among
//! themselves, held only for one scan of the slots (never across a wait): without it two of them
//! scanning at once would each find the other's turnstile and be refused while there was room.
//!
//! The waiting rule: one waiter at a time at the turnstile, first come, first served from there
//! on; which waiter gets the turnstile next is the kernel's choice (a blocked flock(2) woken by
//! the release, or a poller's next try), so arrival order is not strict among waiters.
//!
//! How it waits: for the turnstile as the lock store waits for a lock file (blocking in the kernel
//! without a deadline unless interrupts are watched, else polling with its backoff). For the
//! missing slots it always polls them all, 1 ms doubling to 25 ms: blocking on one chosen slot
//! would wait for that holder while the others give theirs back, and every waiter stuck behind
//! the turnstile with it.
//!
//! Files: `deadbolt-sem.<slug>.<SHA-256 of R, hex>.` + `turnstile`, `gate`, `slot<i>` in the
//! store's directory, mode 0666 as lock files. symfony/lock's lock files are `sf.*.lock`, so no
//! name of ours is one; the whole digest keeps two resources apart. Slots never expire. Limits:
//! at most [`MAX_SLOTS`]; keys of one resource should agree on the limit (a key with a smaller
//! limit counts only the first `limit` slot files); a holder keeps w descriptors open; files are
//! never removed; a caller that does not wait may wait behind another one's scan (at most N
//! non-blocking flock(2)s).

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

use fs4::{FileExt, TryLockError};
use sha2::{Digest, Sha256};

use super::{
    flock, open_lock_file, out_of_descriptors, wait_backoff, FlockStore, REPLACED_ATTEMPTS,
};
use crate::process::{epoch, Epoch};
use crate::store::flock_files::{self, FileId};
use crate::store::flock_path::push_slug;
use crate::store::{poll, Mode, SemaphoreStore, WaitReport};
use crate::{Error, Key, Result, Slots, Ttl};

/// The largest limit: one file per slot, each opened (and tried) by a caller scanning them.
pub const MAX_SLOTS: u64 = 1024;

/// What every file of a semaphore's name begins with.
const PREFIX: &str = "deadbolt-sem.";

/// An open file of a semaphore, and which file it was opened on.
#[derive(Debug)]
struct SemFile {
    file: File,
    id: FileId,
    path: PathBuf,
}

/// The slot files a key holds, open and locked, kept in the key. Dropped in the process that
/// locked them, it unlocks them; in a forked child (which drops its copy on adoption) it only
/// closes them, leaving the parent's slots held: the child's descriptors share the parent's
/// locks, and unlocking them would free the parent's weight.
#[derive(Debug)]
struct SlotHold {
    slots: Vec<SemFile>,
    epoch: Epoch,
}

impl Drop for SlotHold {
    fn drop(&mut self) {
        if self.epoch == epoch() {
            for slot in &self.slots {
                let _ = FileExt::unlock(&slot.file);
            }
        }
    }
}

/// The turnstile or the gate, locked for the length of one call.
struct Held(SemFile);

impl Drop for Held {
    fn drop(&mut self) {
        let _ = FileExt::unlock(&self.0.file);
    }
}

/// A key's slots, checked against [`MAX_SLOTS`].
fn checked_slots(key: &Key, store: &str) -> Result<Slots> {
    let slots = key
        .slots()
        .ok_or_else(|| Error::invalid_argument("A semaphore key has a limit and a weight."))?;
    if slots.limit() > MAX_SLOTS {
        return Err(Error::invalid_argument(format!(
            "The \"{}\" semaphore has a limit of {}, and {store} keeps at most {MAX_SLOTS} slots \
             (one file each): use a RedisStore for larger limits.",
            key.display_resource(),
            slots.limit()
        )));
    }
    Ok(slots)
}

impl FlockStore {
    /// Where the turnstile of `resource`'s semaphore lives: whoever holds it is the waiter at the
    /// front (or a caller scanning the slots).
    pub fn turnstile_path(&self, resource: &[u8]) -> PathBuf {
        self.semaphore_file(resource, "turnstile")
    }

    /// Where slot `index` (from 0) of `resource`'s semaphore lives.
    pub fn slot_path(&self, resource: &[u8], index: u64) -> PathBuf {
        self.semaphore_file(resource, &format!("slot{index}"))
    }

    fn semaphore_file(&self, resource: &[u8], part: &str) -> PathBuf {
        let mut name = String::with_capacity(PREFIX.len() + 50 + 1 + 64 + 1 + part.len());
        name.push_str(PREFIX);
        push_slug(&mut name, resource);
        name.push('.');
        for byte in Sha256::digest(resource) {
            name.push(char::from(HEX[usize::from(byte >> 4)]));
            name.push(char::from(HEX[usize::from(byte & 0xf)]));
        }
        name.push('.');
        name.push_str(part);
        let mut path = OsString::with_capacity(self.dir_prefix.len() + name.len());
        path.push(&self.dir_prefix);
        path.push(name);
        PathBuf::from(path)
    }

    /// Opens (creating 0666 when missing) a semaphore file; out of descriptors, the idle lock
    /// files go first, as for a lock file.
    fn open_sem(&self, path: PathBuf, key: &Key) -> Result<SemFile> {
        let file = match open_lock_file(&path) {
            Err(e) if out_of_descriptors(&e) && flock_files::close_idle() > 0 => {
                open_lock_file(&path)
            }
            other => other,
        }
        .map_err(|e| self.sem_error("open", &path, key, e))?;
        let id = FileId::of(&file).map_err(|e| self.sem_error("open", &path, key, e))?;
        Ok(SemFile { file, id, path })
    }

    /// Locks `sem` exclusively (`blocking`, or false when someone holds it). A lock on a file
    /// that is no longer the one at its path excludes nobody: it is dropped and the file at the
    /// path opened and locked instead.
    fn lock_sem(&self, sem: &mut SemFile, key: &Key, blocking: bool) -> Result<bool> {
        for _ in 0..REPLACED_ATTEMPTS {
            match flock(&sem.file, Mode::Exclusive, blocking) {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => return Ok(false),
                Err(TryLockError::Error(e)) => {
                    return Err(self.sem_error("lock", &sem.path, key, e))
                }
            }
            match FileId::at(&sem.path) {
                Ok(Some(id)) if id == sem.id => return Ok(true),
                Ok(_) => {
                    let _ = FileExt::unlock(&sem.file);
                    *sem = self.open_sem(sem.path.clone(), key)?;
                }
                Err(e) => {
                    let _ = FileExt::unlock(&sem.file);
                    return Err(self.sem_error("check", &sem.path, key, e));
                }
            }
        }
        let e = io::Error::other(format!(
            "it was removed or replaced {REPLACED_ATTEMPTS} times in a row while being locked"
        ));
        Err(self.sem_error("keep", &sem.path, key, e))
    }

    /// The file at `path`, locked now (`None` when someone holds it), or once free (`blocking`).
    fn hold_now(&self, path: PathBuf, key: &Key, blocking: bool) -> Result<Option<Held>> {
        let mut sem = self.open_sem(path, key)?;
        Ok(self.lock_sem(&mut sem, key, blocking)?.then_some(Held(sem)))
    }

    /// The turnstile, waited for as a lock file is (`BlockingStore for FlockStore`); `None` when
    /// the deadline came or the host interrupted the wait first.
    fn wait_turnstile(
        &self,
        key: &Key,
        deadline: Option<Instant>,
        report: &mut WaitReport,
    ) -> Result<Option<Held>> {
        let path = self.turnstile_path(key.resource());
        if deadline.is_none() && !crate::interrupt::watched() {
            return self.hold_now(path, key, true);
        }
        let mut sem = self.open_sem(path, key)?;
        let got = poll(deadline, report, wait_backoff(), || {
            match self.lock_sem(&mut sem, key, false)? {
                true => Ok(()),
                false => Err(Error::conflict(key.display_resource(), &self.name)),
            }
        })?;
        Ok(got.then_some(Held(sem)))
    }

    fn sem_error(&self, action: &str, path: &Path, key: &Key, e: io::Error) -> Error {
        Error::storage(
            format!(
                "Cannot {action} the semaphore file {} of the \"{}\" semaphore in {}: {e}.",
                path.display(),
                key.display_resource(),
                self.name
            ),
            e,
        )
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Where a collector stands with one slot file.
enum Slot {
    /// Not tried yet.
    Unopened,
    /// Someone else held it at the last try: kept open, to be tried again without reopening it.
    Taken(SemFile),
    /// In `held`.
    Mine,
}

/// A key's collection of slot files, under the turnstile.
struct Collector<'a> {
    store: &'a FlockStore,
    weight: usize,
    held: SlotHold,
    /// By slot index, the first `limit` slot files of the resource.
    slots: Vec<Slot>,
}

impl<'a> Collector<'a> {
    fn new(store: &'a FlockStore, slots: Slots) -> Self {
        let limit = usize::try_from(slots.limit()).unwrap_or(usize::MAX);
        let weight = usize::try_from(slots.weight()).unwrap_or(usize::MAX);
        Collector {
            store,
            weight,
            held: SlotHold {
                slots: Vec::with_capacity(weight),
                epoch: epoch(),
            },
            slots: (0..limit).map(|_| Slot::Unopened).collect(),
        }
    }

    /// Tries the slots not held yet until the key has its weight: whether it has.
    fn round(&mut self, key: &Key) -> Result<bool> {
        for (index, slot) in (0u64..).zip(self.slots.iter_mut()) {
            if self.held.slots.len() == self.weight {
                break;
            }
            let mut sem = match std::mem::replace(slot, Slot::Mine) {
                Slot::Mine => continue,
                Slot::Taken(sem) => sem,
                Slot::Unopened => {
                    let path = self.store.slot_path(key.resource(), index);
                    self.store.open_sem(path, key)?
                }
            };
            if self.store.lock_sem(&mut sem, key, false)? {
                self.held.slots.push(sem);
            } else {
                *slot = Slot::Taken(sem);
            }
        }
        Ok(self.held.slots.len() == self.weight)
    }
}

impl SemaphoreStore for FlockStore {
    /// Through the gate (see the module), then the turnstile without waiting: a waiter holding it
    /// means refusal, as does too little room.
    fn save(&self, key: &mut Key, _ttl: Option<Ttl>) -> Result<()> {
        let slots = checked_slots(key, &self.name)?;
        if key.state::<SlotHold>().is_some() {
            return Ok(());
        }
        let refused = || Error::conflict(key.display_resource(), &self.name);
        let gate = self.semaphore_file(key.resource(), "gate");
        let _gate = self.hold_now(gate, key, true)?;
        let turnstile = self.turnstile_path(key.resource());
        let Some(_turnstile) = self.hold_now(turnstile, key, false)? else {
            return Err(refused());
        };
        let mut collector = Collector::new(self, slots);
        if !collector.round(key)? {
            return Err(refused());
        }
        key.set_state(collector.held);
        Ok(())
    }

    fn put_off_expiration(&self, key: &mut Key, _ttl: Ttl) -> Result<()> {
        if SemaphoreStore::exists(self, key)? {
            Ok(())
        } else {
            Err(Error::not_held(key.display_resource(), &self.name))
        }
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        let Some(hold) = key.take_state::<SlotHold>() else {
            return Ok(());
        };
        for slot in &hold.slots {
            FileExt::unlock(&slot.file)
                .map_err(|e| self.sem_error("unlock", &slot.path, key, e))?;
        }
        Ok(())
    }

    /// Held while every slot file of the key is still the one at its path (a slot file removed
    /// by a temp cleaner excludes nobody any more).
    fn exists(&self, key: &Key) -> Result<bool> {
        let Some(hold) = key.state::<SlotHold>() else {
            return Ok(false);
        };
        for slot in &hold.slots {
            match FileId::at(&slot.path) {
                Ok(Some(id)) if id == slot.id => {}
                Ok(_) => return Ok(false),
                Err(e) => return Err(self.sem_error("check", &slot.path, key, e)),
            }
        }
        Ok(true)
    }

    /// The turnstile first, then the missing slots, polled, under it; at the deadline everything
    /// collected is dropped.
    fn wait(
        &self,
        key: &mut Key,
        _ttl: Option<Ttl>,
        deadline: Option<Instant>,
        report: &mut WaitReport,
    ) -> Result<bool> {
        let slots = checked_slots(key, &self.name)?;
        if key.state::<SlotHold>().is_some() {
            return Ok(true);
        }
        let Some(_turnstile) = self.wait_turnstile(key, deadline, report)? else {
            return Ok(false);
        };
        let mut collector = Collector::new(self, slots);
        let got = poll(deadline, report, wait_backoff(), || {
            match collector.round(key)? {
                true => Ok(()),
                false => Err(Error::conflict(key.display_resource(), &self.name)),
            }
        })?;
        if got {
            key.set_state(collector.held);
        }
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_name(path: &Path) -> String {
        path.file_name().unwrap().to_str().unwrap().to_owned()
    }

    #[test]
    fn names_are_ours_bounded_and_apart() {
        let dir = tempfile::tempdir().unwrap();
        let store = FlockStore::new(dir.path()).unwrap();
        let long = vec![b'x'; 10_000];
        let longest = file_name(&store.slot_path(&long, MAX_SLOTS - 1));
        assert!(longest.len() <= 255, "{longest}");
        for path in [store.turnstile_path(b"a/b"), store.slot_path(b"a/b", 3)] {
            let name = file_name(&path);
            assert!(
                name.starts_with(PREFIX) && !name.ends_with(".lock"),
                "{name}"
            );
            assert_eq!(path.parent(), Some(dir.path()));
        }
        // Same slug, other digest.
        assert_ne!(store.slot_path(b"a/b", 0), store.slot_path(b"a:b", 0));
        assert_ne!(store.slot_path(b"a", 1), store.slot_path(b"a", 11));
    }
}
