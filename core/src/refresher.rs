//! The background refresher: one thread per process keeps auto-refreshed locks alive while PHP
//! code runs, sleeps, or waits in curl or a slow query. It never touches the PHP engine: it holds
//! only copies (resource bytes, token text, TTL) and an [`Extender`] on a connection of its own.
//!
//! Fork: a child has no refresher thread (threads do not survive fork()); the registry is a
//! [`PerProcess`] value, so the one it inherits is left alone (its mutex may even be held by the
//! parent's thread at that instant) and the child makes a fresh one if it ever refreshes.
//! Locks inherited by the child are never refreshed there.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

// std's, not parking_lot's: parking_lot parks a waiting thread in a process-wide table. A fork()
// while this thread waits leaves the child that table with the parent's thread in it, pointing
// into the thread's TLS, which glibc frees when the child starts a thread on the cached stack; the
// child's next wait or notify on that table then reads and writes freed memory (seen under
// valgrind). std's futex-based Mutex and Condvar keep their whole state in their own words.
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use crate::lifetime::Expiry;
use crate::metrics::{self, Counter};
use crate::process::PerProcess;
use crate::store::Extender;
use crate::Ttl;

/// A refresh is due when a third of the TTL is left, and retried after a failure this often.
const REFRESH_FRACTION: u32 = 3;
const RETRY_FRACTION: u32 = 10;

/// The registration of one lock; dropping it stops the refreshing.
#[derive(Debug)]
pub struct Ticket {
    state: Arc<TicketState>,
}

/// What the PHP thread and the refresher share about one lock: atomics only, so a `fork()` at any
/// instant leaves the child a readable copy.
#[derive(Debug, Default)]
struct TicketState {
    stopped: AtomicBool,
    lost: AtomicBool,
    /// The TTL each extension gives, in nanoseconds: the lock's, or the last explicit refresh's.
    ttl_nanos: AtomicU64,
    /// The lock's last known expiry: past it without a successful extension, it is lost.
    expiry: Expiry,
    /// Set by an explicit refresh: the next extension is due a third of its TTL after it.
    rescheduled: AtomicBool,
    /// Extensions made, and failed, since the owner last asked ([`Ticket::take_news`]).
    refreshes: AtomicU64,
    failures: AtomicU64,
    /// The owner was told of the loss.
    lost_told: AtomicBool,
}

/// What the refresher did for one lock since its owner last asked, for the owner's logger (the
/// refresher itself has no way to one: it runs without PHP).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct News {
    pub refreshes: u64,
    pub failures: u64,
    /// Found lost, told once.
    pub lost: bool,
}

impl TicketState {
    fn ttl(&self) -> Duration {
        Duration::from_nanos(self.ttl_nanos.load(Ordering::Acquire))
    }

    fn extended(&self, at: Instant, ttl: Duration) {
        self.expiry.set(at + ttl);
    }
}

impl Ticket {
    /// True once the refresher found the lock gone (taken by someone else, or expired).
    pub fn is_lost(&self) -> bool {
        self.state.lost.load(Ordering::Acquire)
    }

    /// What happened since the last call (and resets it).
    pub fn take_news(&self) -> News {
        let state = &self.state;
        News {
            refreshes: state.refreshes.swap(0, Ordering::AcqRel),
            failures: state.failures.swap(0, Ordering::AcqRel),
            lost: state.lost.load(Ordering::Acquire)
                && !state.lost_told.swap(true, Ordering::AcqRel),
        }
    }

    /// The lock's expiry as the refresher keeps it: a key follows it while the lock is held.
    pub fn expiry(&self) -> Expiry {
        self.state.expiry.clone()
    }

    /// An explicit refresh extended the lock by `ttl` at `at`: from now on the refresher extends
    /// it by that TTL too, so the two never disagree on when the lock ends.
    pub fn refreshed(&self, at: Instant, ttl: Ttl) {
        let nanos = u64::try_from(ttl.duration().as_nanos()).unwrap_or(u64::MAX);
        self.state.ttl_nanos.store(nanos, Ordering::Release);
        self.state.extended(at, ttl.duration());
        self.state.rescheduled.store(true, Ordering::Release);
        if let Some(registry) = REGISTRY.get() {
            registry.wake.notify_one();
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.state.stopped.store(true, Ordering::Release);
    }
}

struct Entry {
    extender: Arc<dyn Extender>,
    resource: Vec<u8>,
    token: String,
    due: Instant,
    /// After this, refreshing stops and the lock runs out by itself.
    give_up: Option<Instant>,
    state: Arc<TicketState>,
}

/// One extension to make, copied out so the registry is unlocked during the network call.
struct Job {
    index: usize,
    extender: Arc<dyn Extender>,
    resource: Vec<u8>,
    token: String,
    ttl: Ttl,
}

#[derive(Default)]
struct Registry {
    entries: Mutex<Vec<Entry>>,
    wake: Condvar,
    started: AtomicBool,
    /// The thread's handle, never joined: kept so that what the thread owns stays reachable from
    /// this registry. In a forked child the thread is gone but its handle and name are still
    /// there; held here (the registry is kept for the life of the child), they are inherited
    /// memory like the rest, not memory that a checker reports as lost.
    thread: OnceLock<JoinHandle<()>>,
}

static REGISTRY: PerProcess<Registry> = PerProcess::new();

/// The registry's entries (a panic elsewhere while holding them leaves them usable: every change
/// to them is one push or one retain).
fn lock(registry: &Registry) -> MutexGuard<'_, Vec<Entry>> {
    registry
        .entries
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// This process's registry.
fn registry() -> &'static Registry {
    REGISTRY.get_or_init(Registry::default)
}

/// Keeps the lock of `token` on `resource` alive by `ttl` until the ticket is dropped, the lock is
/// found gone, or `max_hold` has passed.
///
/// # Errors
/// A description when the thread cannot be started (then nothing is refreshed).
pub fn register(
    extender: Arc<dyn Extender>,
    resource: Vec<u8>,
    token: String,
    ttl: Ttl,
    max_hold: Option<Duration>,
) -> Result<Ticket, String> {
    let registry = registry();
    start(registry)?;
    let now = Instant::now();
    let state = Arc::new(TicketState::default());
    state.ttl_nanos.store(
        u64::try_from(ttl.duration().as_nanos()).unwrap_or(u64::MAX),
        Ordering::Release,
    );
    state.extended(now, ttl.duration());
    lock(registry).push(Entry {
        extender,
        resource,
        token,
        due: now + ttl.duration() / REFRESH_FRACTION,
        give_up: max_hold.map(|hold| now + hold),
        state: Arc::clone(&state),
    });
    registry.wake.notify_one();
    Ok(Ticket { state })
}

fn start(registry: &'static Registry) -> Result<(), String> {
    if registry.started.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("deadbolt-refresher".into())
        .spawn(move || run(registry))
        .map(|handle| {
            let _ = registry.thread.set(handle);
        })
        .map_err(|e| {
            registry.started.store(false, Ordering::Release);
            format!("the refresher thread could not start: {e}")
        })
}

fn run(registry: &'static Registry) {
    let mut entries = lock(registry);
    loop {
        let now = Instant::now();
        entries.retain(|e| {
            !e.state.stopped.load(Ordering::Acquire) && e.give_up.is_none_or(|at| now < at)
        });
        for entry in entries.iter_mut() {
            if entry.state.rescheduled.swap(false, Ordering::AcqRel) {
                let ttl = entry.state.ttl();
                if let Some(expiry) = entry.state.expiry.get() {
                    entry.due = expiry.checked_sub(ttl).unwrap_or(now) + ttl / REFRESH_FRACTION;
                }
            }
        }
        let due: Vec<usize> = (0..entries.len())
            .filter(|i| entries[*i].due <= now)
            .collect();
        if due.is_empty() {
            entries = match entries.iter().map(|e| e.due).min() {
                Some(next) => {
                    let timeout = next.saturating_duration_since(Instant::now());
                    registry
                        .wake
                        .wait_timeout(entries, timeout)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => registry
                    .wake
                    .wait(entries)
                    .unwrap_or_else(PoisonError::into_inner),
            };
            continue;
        }
        // The network calls run without the registry lock, so PHP can register meanwhile.
        let jobs: Vec<Job> = due
            .iter()
            .filter_map(|i| {
                let e = &entries[*i];
                Some(Job {
                    index: *i,
                    extender: Arc::clone(&e.extender),
                    resource: e.resource.clone(),
                    token: e.token.clone(),
                    ttl: Ttl::from_duration(e.state.ttl())?,
                })
            })
            .collect();
        drop(entries);
        let results = jobs
            .into_iter()
            .map(|job| {
                let started = Instant::now();
                let outcome = job.extender.extend(&job.resource, &job.token, job.ttl);
                (job.index, started, job.ttl.duration(), outcome)
            })
            .collect::<Vec<_>>();
        entries = lock(registry);
        for (i, started, sent_ttl, result) in results {
            let Some(entry) = entries.get_mut(i) else {
                continue;
            };
            // Stopped meanwhile (released, or dropped): a release that lands while the extension is
            // on its way makes it find the lock gone, which is no loss and no failure.
            if entry.state.stopped.load(Ordering::Acquire) {
                continue;
            }
            let ttl = entry.state.ttl();
            match result {
                Ok(true) => {
                    metrics::count(Counter::RefreshOk, 1);
                    entry.state.refreshes.fetch_add(1, Ordering::AcqRel);
                    entry.state.extended(started, sent_ttl);
                    entry.due = started + sent_ttl / REFRESH_FRACTION;
                }
                Ok(false) => {
                    metrics::count(Counter::RefreshFailed, 1);
                    lose(entry);
                }
                Err(_) => {
                    metrics::count(Counter::RefreshFailed, 1);
                    metrics::count(Counter::StoreErrors, 1);
                    entry.state.failures.fetch_add(1, Ordering::AcqRel);
                    if entry
                        .state
                        .expiry
                        .get()
                        .is_none_or(|expiry| Instant::now() >= expiry)
                    {
                        lose(entry);
                    } else {
                        entry.due = Instant::now() + ttl / RETRY_FRACTION;
                    }
                }
            }
        }
    }
}

fn lose(entry: &mut Entry) {
    entry.state.lost.store(true, Ordering::Release);
    entry.state.stopped.store(true, Ordering::Release);
    metrics::count(Counter::Lost, 1);
}
