//! The background refresher keeps auto-refreshed locks alive while PHP code runs, sleeps, or
//! waits in curl or a slow query. It never touches the PHP engine: it holds only copies (resource
//! bytes, token text, TTL) and an [`Extender`] on a connection of its own.
//!
//! One scheduler thread per process decides what is due and never waits on a store: each
//! extension runs on a thread of its lane (one lane per extender, one call at a time on it), so a
//! store that stops answering delays only its own locks. A lock whose expiry passes without a
//! confirmed extension is lost from that instant (`Ticket::is_lost` checks the clock itself),
//! whatever an extension still on its way answers later.
//!
//! Fork: a child has no refresher thread (threads do not survive fork()); the registry is a
//! [`PerProcess`] value, so the one it inherits is left alone (its mutex may even be held by the
//! parent's thread at that instant) and the child makes a fresh one if it ever refreshes.
//! Locks inherited by the child are never refreshed there.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

// std's (through crate::sync), not parking_lot's: parking_lot parks a waiting thread in a
// process-wide table. A fork() while this thread waits leaves the child that table with the
// parent's thread in it, pointing into the thread's TLS, which glibc frees when the child starts a
// thread on the cached stack; the child's next wait or notify on that table then reads and writes
// freed memory (seen under valgrind). std's futex-based Mutex and Condvar keep their whole state in
// their own words.
use crate::sync::{AtomicBool, AtomicU64, Condvar, Mutex, MutexGuard};

use crate::lifetime::Expiry;
use crate::metrics::{self, Counter};
use crate::process::PerProcess;
use crate::store::Extender;
use crate::threads;
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

    /// The lock is lost, for good: counted once, whoever notices first (the scheduler, a lane's
    /// thread, or the owner asking [`Ticket::is_lost`]).
    fn mark_lost(&self) {
        if !self.lost.swap(true, Ordering::AcqRel) {
            metrics::count(Counter::Lost, 1);
        }
    }

    /// Past the last expiry the store was asked for, with no extension confirmed since: the lock
    /// may already be someone else's, whatever an extension still on its way will say.
    fn ran_out(&self) -> bool {
        !self.stopped.load(Ordering::Acquire)
            && self.expiry.get().is_some_and(|at| Instant::now() >= at)
    }
}

impl Ticket {
    /// True once the refresher found the lock gone (taken by someone else), or once its expiry
    /// passed without an extension confirmed (its store stalled or kept failing): never later
    /// than the moment the store may give the lock to someone else.
    pub fn is_lost(&self) -> bool {
        if self.state.ran_out() {
            self.state.mark_lost();
        }
        self.state.lost.load(Ordering::Acquire)
    }

    /// What happened since the last call (and resets it).
    pub fn take_news(&self) -> News {
        let state = &self.state;
        if state.ran_out() {
            state.mark_lost();
        }
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
    /// An extension of this lock is on its way (on its lane's thread).
    in_flight: bool,
    state: Arc<TicketState>,
}

impl Entry {
    /// The lane this lock is extended on: its extender's (one connection, so one call at a time).
    fn lane(&self) -> Lane {
        Lane(Arc::as_ptr(&self.extender).cast::<()>() as usize)
    }
}

/// The extensions through one extender, made one at a time on a thread of their own: a store that
/// stalls delays only its own locks, never another store's (each of those has its own lane), and
/// two threads never queue on one connection.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Lane(usize);

/// One extension to make, copied out so the registry is unlocked during the network call.
struct Job {
    lane: Lane,
    extender: Arc<dyn Extender>,
    resource: Vec<u8>,
    token: String,
    ttl: Ttl,
    state: Arc<TicketState>,
}

#[derive(Default)]
struct Table {
    entries: Vec<Entry>,
    /// Lanes with an extension on its way.
    busy: rustc_hash::FxHashSet<Lane>,
}

#[derive(Default)]
struct Registry {
    table: Mutex<Table>,
    wake: Condvar,
    started: AtomicBool,
    /// The thread's handle, never joined: kept so that what the thread owns stays reachable from
    /// this registry. In a forked child the thread is gone but its handle and name are still
    /// there; held here (the registry is kept for the life of the child), they are inherited
    /// memory like the rest, not memory that a checker reports as lost.
    thread: OnceLock<JoinHandle<()>>,
}

static REGISTRY: PerProcess<Registry> = PerProcess::new();

/// The registry's table (a panic elsewhere while holding it leaves it usable: every change to it
/// is one push, one retain or one field).
fn lock(registry: &Registry) -> MutexGuard<'_, Table> {
    registry.table.lock()
}

/// Makes this process's registry now, without its thread (`crate::threads`).
pub(crate) fn set_up() {
    registry();
}

/// This process's registry.
fn registry() -> &'static Registry {
    REGISTRY.get_or_init(Registry::default)
}

/// Keeps the lock of `token` on `resource` alive by `ttl` until the ticket is dropped, the lock is
/// found gone, or `max_hold` has passed. `expires_at` is when the store lets the lock go unless
/// extended (None: `ttl` from now).
///
/// # Errors
/// A description when the thread cannot be started (then nothing is refreshed).
pub fn register(
    extender: Arc<dyn Extender>,
    resource: Vec<u8>,
    token: String,
    ttl: Ttl,
    expires_at: Option<Instant>,
    max_hold: Option<Duration>,
) -> Result<Ticket, String> {
    let registry = registry();
    start(registry)?;
    let now = Instant::now();
    let expires_at = expires_at.unwrap_or(now + ttl.duration());
    let state = Arc::new(TicketState::default());
    state.ttl_nanos.store(
        u64::try_from(ttl.duration().as_nanos()).unwrap_or(u64::MAX),
        Ordering::Release,
    );
    state.expiry.set(expires_at);
    lock(registry).entries.push(Entry {
        extender,
        resource,
        token,
        due: expires_at.checked_sub(ttl.duration()).unwrap_or(now)
            + ttl.duration() / REFRESH_FRACTION,
        give_up: max_hold.map(|hold| now + hold),
        in_flight: false,
        state: Arc::clone(&state),
    });
    registry.wake.notify_one();
    Ok(Ticket { state })
}

// Never inlined: its frame names the scheduler's spawn in scripts/valgrind.supp.
#[inline(never)]
fn start(registry: &'static Registry) -> Result<(), String> {
    if registry.started.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    threads::without_signals(|| {
        std::thread::Builder::new()
            .name("deadbolt-refresher".into())
            .spawn(move || run(registry))
    })
    .map(|handle| {
        let _ = registry.thread.set(handle);
    })
    .map_err(|e| {
        registry.started.store(false, Ordering::Release);
        format!("the refresher thread could not start: {e}")
    })
}

/// The scheduler: hands each due extension to its lane, and marks lost every lock whose expiry
/// passed without one (its extension stalled, or kept failing). It never waits on a store.
fn run(registry: &'static Registry) {
    let mut table = lock(registry);
    loop {
        let now = Instant::now();
        forget_finished(&mut table.entries, now);
        for entry in &mut table.entries {
            apply_explicit_refresh(entry, now);
            if entry.state.expiry.get().is_some_and(|expiry| now >= expiry) {
                lose(entry);
            }
        }
        dispatch_due(registry, &mut table, now);
        let next = next_wake(&table);
        table = match next {
            Some(next) => {
                let timeout = next.saturating_duration_since(Instant::now());
                registry.wake.wait_timeout(table, timeout)
            }
            None => registry.wake.wait(table),
        };
    }
}

/// Drops the entries of released locks and of locks held past their `max_hold` (those run out by
/// themselves: stopped, so their expiry no longer counts as a loss).
fn forget_finished(entries: &mut Vec<Entry>, now: Instant) {
    for entry in entries.iter() {
        if entry.give_up.is_some_and(|at| now >= at) {
            entry.state.stopped.store(true, Ordering::Release);
        }
    }
    entries.retain(|e| !e.state.stopped.load(Ordering::Acquire));
}

/// An explicit refresh moved the lock's expiry: the next extension is due a third of its TTL
/// after it.
fn apply_explicit_refresh(entry: &mut Entry, now: Instant) {
    if entry.state.rescheduled.swap(false, Ordering::AcqRel) {
        let ttl = entry.state.ttl();
        if let Some(expiry) = entry.state.expiry.get() {
            entry.due = expiry.checked_sub(ttl).unwrap_or(now) + ttl / REFRESH_FRACTION;
        }
    }
}

/// Starts the due extensions whose lane is free, one thread per lane at a time. Never inlined:
/// its frame names the lanes' spawns in scripts/valgrind.supp.
#[inline(never)]
fn dispatch_due(registry: &'static Registry, table: &mut Table, now: Instant) {
    let Table { entries, busy } = table;
    for entry in entries.iter_mut() {
        if entry.in_flight || entry.due > now || busy.contains(&entry.lane()) {
            continue;
        }
        let Some(ttl) = Ttl::from_duration(entry.state.ttl()) else {
            continue;
        };
        let job = Job {
            lane: entry.lane(),
            extender: Arc::clone(&entry.extender),
            resource: entry.resource.clone(),
            token: entry.token.clone(),
            ttl,
            state: Arc::clone(&entry.state),
        };
        let started = threads::without_signals(|| {
            std::thread::Builder::new()
                .name("deadbolt-refresh".into())
                .spawn(move || extend(registry, job))
        });
        if started.is_ok() {
            entry.in_flight = true;
            busy.insert(entry.lane());
        } else {
            // No thread now: counted as a failed extension, tried again later.
            settle(entry, now, ttl.duration(), Err(()));
        }
    }
}

/// When the scheduler must look again: the next due extension on a free lane, or the next expiry
/// (a lock whose extension has not come back by then is lost). A lane's end wakes it too.
fn next_wake(table: &Table) -> Option<Instant> {
    table
        .entries
        .iter()
        .flat_map(|e| {
            let due = (!e.in_flight && !table.busy.contains(&e.lane())).then_some(e.due);
            [due, e.state.expiry.get()]
        })
        .flatten()
        .min()
}

/// On a lane's thread: one extension, then its outcome into the table.
fn extend(registry: &'static Registry, job: Job) {
    let started = Instant::now();
    let outcome = job
        .extender
        .extend(&job.resource, &job.token, job.ttl)
        .map_err(|_| ());
    let mut table = lock(registry);
    table.busy.remove(&job.lane);
    let entry = table
        .entries
        .iter_mut()
        .find(|e| Arc::ptr_eq(&e.state, &job.state));
    if let Some(entry) = entry {
        entry.in_flight = false;
        settle(entry, started, job.ttl.duration(), outcome);
    }
    drop(table);
    registry.wake.notify_one();
}

/// Records what one extension, sent at `started` with `sent_ttl`, found.
fn settle(entry: &mut Entry, started: Instant, sent_ttl: Duration, outcome: Result<bool, ()>) {
    // Stopped meanwhile (released, or dropped): a release that lands while the extension is on
    // its way makes it find the lock gone, which is no loss and no failure. Lost meanwhile (its
    // expiry passed first): it stays lost, whatever a late reply says.
    let state = &entry.state;
    if state.stopped.load(Ordering::Acquire) || state.lost.load(Ordering::Acquire) {
        return;
    }
    match outcome {
        Ok(true) => {
            metrics::count(Counter::RefreshOk, 1);
            state.refreshes.fetch_add(1, Ordering::AcqRel);
            state.extended(started, sent_ttl);
            entry.due = started + sent_ttl / REFRESH_FRACTION;
        }
        Ok(false) => {
            metrics::count(Counter::RefreshFailed, 1);
            lose(entry);
        }
        Err(()) => {
            metrics::count(Counter::RefreshFailed, 1);
            metrics::count(Counter::StoreErrors, 1);
            state.failures.fetch_add(1, Ordering::AcqRel);
            if state
                .expiry
                .get()
                .is_none_or(|expiry| Instant::now() >= expiry)
            {
                lose(entry);
            } else {
                entry.due = Instant::now() + state.ttl() / RETRY_FRACTION;
            }
        }
    }
}

fn lose(entry: &mut Entry) {
    entry.state.mark_lost();
    entry.state.stopped.store(true, Ordering::Release);
}
