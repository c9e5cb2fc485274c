//! Locks on System V semaphores, on the very sets symfony/lock's `SemaphoreStore` uses (through
//! PHP's sysvsem: `sysv_sem`), so a Deadbolt process and a symfony/lock process exclude each
//! other on the same host.
//!
//! One set per resource, found by a 32-bit IPC key that symfony/lock derives from the resource:
//! the first four bytes of its xxh128 digest since symfony/lock 6.x, of its md5 digest in 5.4
//! ([`KeyHash`]), read as a native-endian int. A release removes the set, as symfony/lock's does.
//!
//! What the backend gives: waits in the kernel (woken at once by a release), no expiry (a lock
//! lives until it is released or its process ends: the kernel undoes a dead holder's hold), fork
//! safety (a child inherits no hold). What it rules out: shared locks (a set counts holders, it
//! has no readers: a read lock is an exclusive one, as symfony/lock's `Lock` does on a store
//! without them), fencing tokens and holder records (a set keeps two small counters, nothing
//! else), and any reach beyond one host.

#[path = "sysv_sem.rs"]
mod sem;

use std::time::{Duration, Instant};

use libc::{c_int, key_t};
use md5::Digest as _;

use crate::holder::{Holder, LockState, Origin, Waiter};
use crate::key::display_resource;
use crate::process::{epoch, Epoch};
use crate::store::{BlockingStore, Capabilities, InspectingStore, Mode, Store, WaitReport};
use crate::{Error, Key, Result, Ttl};

use sem::Take;

/// The longest a wait sleeps in the kernel before it gives the host its turn
/// (`crate::interrupt`); a signal ends the sleep sooner.
const WAIT_SLICE: Duration = Duration::from_millis(100);
/// Sets removed under a non-blocking attempt in a row (each holder released and someone took the
/// next set) before it reports the lock as held.
const REMOVED_ATTEMPTS: usize = 8;

/// How the IPC key of a resource is derived: as symfony/lock derives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyHash {
    /// symfony/lock 6.0 and later: `unpack('i', hash('xxh128', $resource, true))`.
    Xxh128,
    /// symfony/lock 5.4: `unpack('i', md5($resource, true))`.
    Md5,
}

impl KeyHash {
    /// The derivation a name gives: `xxh128` or `md5`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the choices for any other name.
    pub fn named(name: &str) -> Result<Self> {
        match name {
            "xxh128" => Ok(KeyHash::Xxh128),
            "md5" => Ok(KeyHash::Md5),
            other => Err(Error::invalid_argument(format!(
                "Unknown SemaphoreStore key hash \"{}\": use \"xxh128\" (symfony/lock 6.0 and later, the \
                 default) or \"md5\" (symfony/lock 5.4).",
                other.chars().take(32).collect::<String>()
            ))),
        }
    }

    /// The derivation a semaphore connection string names: `semaphore` (symfony/lock's DSN, xxh128)
    /// or `semaphore?hash=md5|xxh128`; `None` when `dsn` is not a semaphore one.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a malformed semaphore DSN or an unknown hash.
    pub fn of_dsn(dsn: &str) -> Option<Result<Self>> {
        let rest = dsn.strip_prefix("semaphore")?;
        if rest.is_empty() {
            return Some(Ok(KeyHash::Xxh128));
        }
        Some(match rest.strip_prefix("?hash=") {
            Some(name) => KeyHash::named(name),
            None => Err(Error::invalid_argument(
                "A semaphore DSN is \"semaphore\", or \"semaphore?hash=md5\" for the IPC keys of \
                 symfony/lock 5.4.",
            )),
        })
    }

    /// The IPC key of `resource`.
    pub fn ipc_key(self, resource: &[u8]) -> key_t {
        let head: [u8; 4] = match self {
            // PHP gives xxh128's canonical (big-endian) bytes.
            KeyHash::Xxh128 => first_four(&xxhash_rust::xxh3::xxh3_128(resource).to_be_bytes()),
            KeyHash::Md5 => first_four(&md5::Md5::digest(resource)),
        };
        // unpack('i') reads the machine's byte order.
        key_t::from_ne_bytes(head)
    }
}

fn first_four(digest: &[u8]) -> [u8; 4] {
    [digest[0], digest[1], digest[2], digest[3]]
}

/// A key's hold on a set: dropping it in the process that took it removes the set (a Key
/// dropped without a release frees its lock, as a PHP resource from `sem_get()` does when freed).
/// A forked child drops its copy without touching the set.
#[derive(Debug)]
struct SemHold {
    semid: c_int,
    ipc_key: key_t,
    epoch: Epoch,
}

impl Drop for SemHold {
    fn drop(&mut self) {
        if self.epoch == epoch() {
            let _ = sem::remove(self.semid, self.ipc_key);
        }
    }
}

impl SemHold {
    /// Removes the set now; the hold is gone either way.
    fn release(self) -> std::io::Result<bool> {
        let hold = std::mem::ManuallyDrop::new(self);
        sem::remove(hold.semid, hold.ipc_key)
    }
}

/// How long the next sleep in the kernel may be: `None` for an attempt that does not wait, else
/// a slice of at most [`WAIT_SLICE`] (zero once the deadline has passed).
fn slice(wait: Option<Option<Instant>>) -> Option<Duration> {
    wait.map(|deadline| match deadline {
        Some(deadline) => WAIT_SLICE.min(deadline.saturating_duration_since(Instant::now())),
        None => WAIT_SLICE,
    })
}

/// Whether an attempt that found the lock (or the set's guard) taken, or was interrupted by a
/// signal, ends here: it does not wait, its deadline passed, or the host asks it to stop.
fn gives_up(wait: Option<Option<Instant>>, outcome: Take, report: &mut WaitReport) -> bool {
    let Some(deadline) = wait else {
        return true;
    };
    report.polls += u64::from(outcome == Take::Busy);
    if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
        return true;
    }
    if crate::interrupt::requested() {
        report.interrupted = true;
        return true;
    }
    false
}

/// System V semaphore store for one host.
#[derive(Debug)]
pub struct SysvSemaphoreStore {
    hash: KeyHash,
    name: String,
}

impl SysvSemaphoreStore {
    pub fn new(hash: KeyHash) -> Self {
        let name = match hash {
            KeyHash::Xxh128 => "SemaphoreStore".to_owned(),
            KeyHash::Md5 => "SemaphoreStore(md5 keys)".to_owned(),
        };
        SysvSemaphoreStore { hash, name }
    }

    /// The IPC key of `resource`; refused when it is IPC_PRIVATE (0), which would make a new set
    /// at every call and exclude nobody (one resource name in four billion).
    fn ipc_key(&self, resource: &[u8]) -> Result<key_t> {
        match self.hash.ipc_key(resource) {
            libc::IPC_PRIVATE => Err(Error::invalid_argument(format!(
                "The \"{}\" resource hashes to System V's IPC_PRIVATE key, which locks nothing: \
                 rename it (any other name does) or use another store.",
                display_resource(resource)
            ))),
            ipc_key => Ok(ipc_key),
        }
    }

    /// Takes the lock for `key`: at once (`wait` `None`), or waiting until the deadline
    /// (`Some(None)`: for ever, or until the host interrupts). True when taken.
    fn lock(
        &self,
        key: &mut Key,
        wait: Option<Option<Instant>>,
        report: &mut WaitReport,
    ) -> Result<bool> {
        if self.holds(key)? {
            return Ok(true);
        }
        drop(key.take_state::<SemHold>());
        let ipc_key = self.ipc_key(key.resource())?;
        let mut removed = 0;
        loop {
            // Even an attempt that does not wait may wait a slice for the set's guard, which a
            // joining process holds for a few system calls.
            let outcome = match sem::join(ipc_key, slice(wait).unwrap_or(WAIT_SLICE)) {
                // Taken, or given up (a take that gives up has made its own decision).
                Ok(Ok(semid)) => match self.take_joined(key, (semid, ipc_key), wait, report)? {
                    Take::Removed => Take::Removed,
                    done => return Ok(done == Take::Taken),
                },
                Ok(Err(guard @ (Take::Busy | Take::Interrupted)))
                    if !gives_up(wait, guard, report) =>
                {
                    continue;
                }
                Ok(Err(guard)) => guard,
                Err(e) if sem::is_removed(&e) => Take::Removed,
                Err(e) => return Err(self.io_error("join", key, e)),
            };
            match outcome {
                Take::Removed if wait.is_some() || removed < REMOVED_ATTEMPTS => removed += 1,
                _ => return Ok(false),
            }
        }
    }

    /// Tries, then waits slice by slice, on the set this process joined, and keeps the hold in
    /// `key` when it takes the lock. Leaves the set unless the lock was taken or the set removed.
    fn take_joined(
        &self,
        key: &mut Key,
        (semid, ipc_key): (c_int, key_t),
        wait: Option<Option<Instant>>,
        report: &mut WaitReport,
    ) -> Result<Take> {
        let outcome = loop {
            let outcome = match sem::take(semid, slice(wait).filter(|slice| !slice.is_zero())) {
                Ok(outcome) => outcome,
                Err(e) => {
                    sem::leave(semid);
                    return Err(self.io_error("lock", key, e));
                }
            };
            match outcome {
                Take::Taken => {
                    key.set_state(SemHold {
                        semid,
                        ipc_key,
                        epoch: epoch(),
                    });
                    return Ok(outcome);
                }
                Take::Removed => {
                    report.wakeups += 1;
                    return Ok(outcome);
                }
                Take::Busy | Take::Interrupted if !gives_up(wait, outcome, report) => {}
                Take::Busy | Take::Interrupted => break outcome,
            }
        };
        sem::leave(semid);
        Ok(outcome)
    }

    /// Whether `key` holds the set that is its resource's now (a set removed by an operator, or
    /// by an `ipcrm`, holds nothing).
    fn holds(&self, key: &Key) -> Result<bool> {
        let Some(hold) = key.state::<SemHold>() else {
            return Ok(false);
        };
        match sem::current(hold.ipc_key) {
            Ok(current) => Ok(current == Some(hold.semid)),
            Err(e) => Err(self.io_error("check", key, e)),
        }
    }

    fn io_error(&self, action: &str, key: &Key, e: std::io::Error) -> Error {
        self.resource_error(action, key.resource(), e)
    }

    fn resource_error(&self, action: &str, resource: &[u8], e: std::io::Error) -> Error {
        Error::storage(
            format!(
                "Cannot {action} the System V semaphore of the \"{}\" lock in {}: {e}.",
                display_resource(resource),
                self.name
            ),
            e,
        )
    }
}

impl Store for SysvSemaphoreStore {
    fn name(&self) -> &str {
        &self.name
    }

    fn save(&self, key: &mut Key, _mode: Mode, _ttl: Option<Ttl>) -> Result<()> {
        if self.lock(key, None, &mut WaitReport::default())? {
            Ok(())
        } else {
            Err(Error::conflict(key.display_resource(), &self.name))
        }
    }

    fn put_off_expiration(&self, key: &mut Key, _ttl: Ttl) -> Result<()> {
        // The kernel's locks never expire: only ownership is checked, as on FlockStore.
        if self.holds(key)? {
            Ok(())
        } else {
            Err(Error::not_held(key.display_resource(), &self.name))
        }
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        match key.take_state::<SemHold>() {
            Some(hold) => hold
                .release()
                .map(drop)
                .map_err(|e| self.io_error("remove", key, e)),
            None => Ok(()),
        }
    }

    fn exists(&self, key: &Key) -> Result<bool> {
        self.holds(key)
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities {
            blocking: Some(self),
            inspecting: Some(self),
            ..Capabilities::default()
        }
    }
}

impl BlockingStore for SysvSemaphoreStore {
    fn wait(
        &self,
        key: &mut Key,
        _mode: Mode,
        _ttl: Option<Ttl>,
        deadline: Option<Instant>,
        report: &mut WaitReport,
    ) -> Result<bool> {
        self.lock(key, Some(deadline), report)
    }
}

/// The kernel's view of a set: whether it is held, and by which pid (the last to change the
/// lock's semaphore, which while it is held is the holder); how many wait (the kernel does not
/// say who). A forced release removes the set: Deadbolt holders find their lock lost at their
/// next call; a symfony/lock holder is not told, and its later release removes whatever set is
/// there then (symfony/lock's own behaviour with `ipcrm`).
impl InspectingStore for SysvSemaphoreStore {
    fn inspect(&self, resource: &[u8]) -> Result<LockState> {
        let ipc_key = self.ipc_key(resource)?;
        let read = || -> std::io::Result<LockState> {
            let Some(semid) = sem::current(ipc_key)? else {
                return Ok(LockState::default());
            };
            Ok(state_of(&sem::seen(semid)?))
        };
        match read() {
            Err(e) if sem::is_removed(&e) => Ok(LockState::default()),
            other => other.map_err(|e| self.resource_error("inspect", resource, e)),
        }
    }

    fn force_release(&self, resource: &[u8]) -> Result<usize> {
        let ipc_key = self.ipc_key(resource)?;
        let holders = self.inspect(resource)?.holders.len();
        let removed = match sem::current(ipc_key) {
            Ok(Some(semid)) => sem::remove(semid, ipc_key),
            Ok(None) => Ok(false),
            Err(e) => Err(e),
        }
        .map_err(|e| self.resource_error("remove", resource, e))?;
        if !removed {
            return Ok(0);
        }
        crate::metrics::count(crate::metrics::Counter::ForceReleased, 1);
        Ok(holders)
    }
}

/// A set's state as a [`LockState`]: one exclusive holder with its pid (and its label, when its
/// environment can be read), and as many anonymous waiters as the kernel counts.
fn state_of(seen: &sem::Seen) -> LockState {
    let host = Origin::here(None).host;
    let anonymous = Origin {
        host: host.clone(),
        pid: None,
        label: None,
    };
    let holders = seen.held.then(|| Holder {
        token_digest: String::new(),
        mode: Mode::Exclusive,
        origin: Origin {
            host: host.clone(),
            pid: Some(seen.last_pid),
            label: crate::store::flock_holders::label_of(seen.last_pid),
        },
        acquired_at: None,
        expires_at: None,
    });
    let waiters = (0..seen.waiting).map(|_| Waiter {
        token_digest: String::new(),
        mode: Mode::Exclusive,
        origin: anonymous.clone(),
        since: None,
    });
    LockState {
        holders: holders.into_iter().collect(),
        waiters: waiters.collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipc_keys_are_symfony_locks() {
        // From PHP: unpack('i', hash('xxh128', $r, true))[1] and unpack('i', md5($r, true))[1].
        for (resource, xxh128, md5) in [
            ("resource", 212_068_407, 374_254_486),
            ("a", 1_890_545_577, -1_183_465_204),
            ("myapp:prod:daily-report", 448_724_131, -668_457_387),
            ("\u{e9}", 1_885_942_416, -1_748_116_122),
        ] {
            assert_eq!(
                KeyHash::Xxh128.ipc_key(resource.as_bytes()),
                xxh128,
                "{resource}"
            );
            assert_eq!(KeyHash::Md5.ipc_key(resource.as_bytes()), md5, "{resource}");
        }
    }
}
