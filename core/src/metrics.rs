//! Per-process lock metrics: counters and two latency histograms, lock-free (atomics only), so
//! the refresher thread and a `fork()` at any moment are both harmless. A forked child starts
//! from zero: its numbers describe what it did, not what its parent did.
//!
//! Two ways out of the process, for numbers that must outlive it or add up across processes:
//! - `shared`: a metrics file mapped into every process of a php-fpm pool, whose counts each of
//!   them also adds to (a forked child keeps adding: the file is the pool's, not a process's);
//! - `textfile`: a process's totals added, when it ends, into a node_exporter textfile.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::process::PerProcess;
use crate::sync::AtomicU64;

pub(crate) mod shared;
pub(crate) mod textfile;

/// Upper bounds of the histogram buckets, in seconds (Prometheus `le`), plus +Inf.
pub const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0,
];

/// What is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// Locks taken (exclusive or shared).
    Acquired,
    /// Non-blocking attempts that found the lock held.
    Conflicts,
    /// Waits that reached their deadline.
    Timeouts,
    /// Auto-refreshed locks found gone.
    Lost,
    /// Extensions that succeeded (refresh() and the background refresher).
    RefreshOk,
    /// Extensions that failed (lock gone, store error).
    RefreshFailed,
    /// Store failures of any operation.
    StoreErrors,
    /// Waits woken by a release signal.
    Wakeups,
    /// Waits that woke up by themselves to try again.
    Polls,
    /// Locks released.
    Released,
    /// Locks written that too few replicas acknowledged (`replicas` on a Redis DSN), released.
    Unacknowledged,
    /// Resources released by an operator whatever their owner (`forceRelease()`, `deadbolt release --force`).
    ForceReleased,
}

impl Counter {
    /// Every counter, in report order.
    pub const ALL: [Counter; 12] = [
        Counter::Acquired,
        Counter::Conflicts,
        Counter::Timeouts,
        Counter::Lost,
        Counter::RefreshOk,
        Counter::RefreshFailed,
        Counter::StoreErrors,
        Counter::Wakeups,
        Counter::Polls,
        Counter::Released,
        Counter::Unacknowledged,
        Counter::ForceReleased,
    ];

    /// The name in snapshots and in the Prometheus rendering.
    pub fn name(self) -> &'static str {
        match self {
            Counter::Acquired => "acquired",
            Counter::Conflicts => "conflicts",
            Counter::Timeouts => "timeouts",
            Counter::Lost => "lost",
            Counter::RefreshOk => "refresh_ok",
            Counter::RefreshFailed => "refresh_failed",
            Counter::StoreErrors => "store_errors",
            Counter::Wakeups => "wakeups",
            Counter::Polls => "polls",
            Counter::Released => "released",
            Counter::Unacknowledged => "unacknowledged",
            Counter::ForceReleased => "force_released",
        }
    }
}

/// Which duration is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    /// From the start of an acquire to its end (taken, timed out or failed).
    Wait,
    /// From taking a lock to releasing it.
    Hold,
}

impl Timing {
    /// Both timings, in report order.
    pub const ALL: [Timing; 2] = [Timing::Wait, Timing::Hold];

    /// The name in snapshots and in the Prometheus rendering.
    pub fn name(self) -> &'static str {
        match self {
            Timing::Wait => "wait_seconds",
            Timing::Hold => "hold_seconds",
        }
    }
}

/// Per-bucket counts (not cumulative; the count is their sum) and the sum of the durations.
/// `repr(C)`: the same layout is the body of a metrics file (`shared.rs`).
#[repr(C)]
struct Histogram {
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Histogram {
    const fn new() -> Self {
        Histogram {
            buckets: [const { AtomicU64::new(0) }; BUCKETS.len() + 1],
            sum_nanos: AtomicU64::new(0),
        }
    }
}

/// One set of numbers: a process's, or a metrics file's (`repr(C)`, laid over the mapped file).
#[repr(C)]
struct Table {
    counters: [AtomicU64; Counter::ALL.len()],
    histograms: [Histogram; 2],
}

impl Table {
    const fn new() -> Self {
        Table {
            counters: [const { AtomicU64::new(0) }; Counter::ALL.len()],
            histograms: [Histogram::new(), Histogram::new()],
        }
    }

    /// Every atomic of the table, in layout order.
    fn cells(&self) -> impl Iterator<Item = &AtomicU64> {
        self.counters.iter().chain(
            self.histograms
                .iter()
                .flat_map(|h| h.buckets.iter().chain([&h.sum_nanos])),
        )
    }

    fn add(&self, counter: Counter, n: u64) {
        self.counters[counter as usize].fetch_add(n, Ordering::Relaxed);
    }

    fn observe(&self, timing: Timing, bucket: usize, nanos: u64) {
        let histogram = &self.histograms[timing as usize];
        histogram.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        histogram.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Zeroes the table, moving what it held into `aside` (a count made meanwhile is never lost:
    /// each cell is swapped, not overwritten).
    fn drain_into(&self, aside: &Table) {
        for (cell, kept) in self.cells().zip(aside.cells()) {
            kept.fetch_add(cell.swap(0, Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    fn read(&self) -> Snapshot {
        let counters = Counter::ALL
            .iter()
            .map(|c| (*c, self.counters[*c as usize].load(Ordering::Relaxed)))
            .collect();
        let timings = Timing::ALL
            .iter()
            .map(|t| (*t, self.histograms[*t as usize].read()))
            .collect();
        Snapshot { counters, timings }
    }
}

impl Histogram {
    fn read(&self) -> HistogramSnapshot {
        let mut running = 0;
        let cumulative = self
            .buckets
            .iter()
            .map(|b| {
                running += b.load(Ordering::Relaxed);
                running
            })
            .collect();
        let nanos = self.sum_nanos.load(Ordering::Relaxed);
        HistogramSnapshot {
            cumulative,
            count: running,
            sum_seconds: Duration::from_nanos(nanos).as_secs_f64(),
        }
    }
}

/// This process's numbers: a forked child starts from a fresh table.
static TABLE: PerProcess<Table> = PerProcess::new();

/// What `reset()` took out of this process's table: gone from `snapshot()`, still this process's work for the
/// textfile written when it ends (`textfile.rs`), so an application's reset never loses the job's counts.
static RESET_ASIDE: PerProcess<Table> = PerProcess::new();

/// Makes this process's table now (`crate::threads`).
pub(crate) fn set_up() {
    table();
    aside();
}

fn table() -> &'static Table {
    TABLE.get_or_init(Table::new)
}

fn aside() -> &'static Table {
    RESET_ASIDE.get_or_init(Table::new)
}

/// Adds `n` to `counter`, here and in the metrics file this process adds to (if any).
pub fn count(counter: Counter, n: u64) {
    if n == 0 {
        return;
    }
    table().add(counter, n);
    if let Some(shared) = shared::table() {
        shared.add(counter, n);
    }
}

/// Records one duration, here and in the metrics file this process adds to (if any).
pub fn time(timing: Timing, duration: Duration) {
    let secs = duration.as_secs_f64();
    let bucket = BUCKETS
        .iter()
        .position(|le| secs <= *le)
        .unwrap_or(BUCKETS.len());
    let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    table().observe(timing, bucket, nanos);
    if let Some(shared) = shared::table() {
        shared.observe(timing, bucket, nanos);
    }
}

/// Forgets everything counted so far in this process (not in a metrics file: the pool's totals
/// belong to every process that adds to them).
pub fn reset() {
    table().drain_into(aside());
}

/// A histogram's numbers at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// Cumulative counts per bucket bound of [`BUCKETS`], then +Inf (Prometheus order).
    pub cumulative: Vec<u64>,
    pub count: u64,
    pub sum_seconds: f64,
}

/// All numbers at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub counters: Vec<(Counter, u64)>,
    pub timings: Vec<(Timing, HistogramSnapshot)>,
}

impl Snapshot {
    /// All zero.
    pub fn zero() -> Snapshot {
        Table::new().read()
    }

    /// Adds `other`'s numbers to these.
    pub fn add(&mut self, other: &Snapshot) {
        for ((_, mine), (_, theirs)) in self.counters.iter_mut().zip(&other.counters) {
            *mine = mine.saturating_add(*theirs);
        }
        for ((_, mine), (_, theirs)) in self.timings.iter_mut().zip(&other.timings) {
            for (bucket, add) in mine.cumulative.iter_mut().zip(&theirs.cumulative) {
                *bucket = bucket.saturating_add(*add);
            }
            mine.count = mine.count.saturating_add(theirs.count);
            mine.sum_seconds += theirs.sum_seconds;
        }
    }
}

/// Reads this process's counters and histograms.
pub fn snapshot() -> Snapshot {
    table().read()
}

/// Everything this process counted, `reset()` or not: what its textfile gets when it ends.
fn process_totals() -> Snapshot {
    let mut totals = table().read();
    totals.add(&aside().read());
    totals
}

/// This process's snapshot in the Prometheus text exposition format, metric names prefixed `deadbolt_`.
pub fn prometheus() -> String {
    render(&snapshot(), "")
}

/// `snapshot` in the Prometheus text exposition format; `labels` (`name="value"` pairs, escaped, comma
/// separated, or empty) go on every sample.
pub fn render(snapshot: &Snapshot, labels: &str) -> String {
    use std::fmt::Write as _;
    let plain = if labels.is_empty() {
        String::new()
    } else {
        format!("{{{labels}}}")
    };
    let before_le = if labels.is_empty() {
        String::new()
    } else {
        format!("{labels},")
    };
    let mut out = String::new();
    for (counter, value) in &snapshot.counters {
        let name = counter.name();
        let _ = writeln!(out, "# TYPE deadbolt_{name}_total counter");
        let _ = writeln!(out, "deadbolt_{name}_total{plain} {value}");
    }
    for (timing, histogram) in &snapshot.timings {
        let name = timing.name();
        let _ = writeln!(out, "# TYPE deadbolt_{name} histogram");
        for (le, count) in BUCKETS.iter().zip(&histogram.cumulative) {
            let _ = writeln!(
                out,
                "deadbolt_{name}_bucket{{{before_le}le=\"{le}\"}} {count}"
            );
        }
        let total = histogram.cumulative.last().copied().unwrap_or(0);
        let _ = writeln!(
            out,
            "deadbolt_{name}_bucket{{{before_le}le=\"+Inf\"}} {total}"
        );
        let _ = writeln!(out, "deadbolt_{name}_sum{plain} {}", histogram.sum_seconds);
        let _ = writeln!(out, "deadbolt_{name}_count{plain} {}", histogram.count);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_times_and_renders_prometheus_text() {
        reset();
        count(Counter::Acquired, 2);
        time(Timing::Wait, Duration::from_micros(700));
        time(Timing::Wait, Duration::from_secs(60));
        let snap = snapshot();
        assert!(snap.counters.contains(&(Counter::Acquired, 2)));
        let (_, wait) = &snap.timings[0];
        assert_eq!(wait.count, 2);
        assert_eq!(wait.cumulative[0], 0, "700 us is above 0.5 ms");
        assert_eq!(wait.cumulative[1], 1, "and within 1 ms");
        assert_eq!(*wait.cumulative.last().unwrap(), 2);
        let text = prometheus();
        assert!(text.contains("deadbolt_acquired_total 2"), "{text}");
        assert!(
            text.contains("deadbolt_wait_seconds_bucket{le=\"+Inf\"} 2"),
            "{text}"
        );
        assert!(text.contains("deadbolt_wait_seconds_count 2"), "{text}");
    }
}
