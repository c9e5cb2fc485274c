//! Per-process lock metrics: counters and two latency histograms, lock-free (atomics only), so
//! the refresher thread and a `fork()` at any moment are both harmless. A forked child starts
//! from zero: its numbers describe what it did, not what its parent did.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::process::PerProcess;
use crate::sync::AtomicU64;

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

/// One process's numbers.
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

    fn clear(&self) {
        for counter in &self.counters {
            counter.store(0, Ordering::Relaxed);
        }
        for histogram in &self.histograms {
            for bucket in &histogram.buckets {
                bucket.store(0, Ordering::Relaxed);
            }
            histogram.sum_nanos.store(0, Ordering::Relaxed);
        }
    }
}

/// This process's numbers: a forked child starts from a fresh table.
static TABLE: PerProcess<Table> = PerProcess::new();

/// Makes this process's table now (`crate::threads`).
pub(crate) fn set_up() {
    table();
}

fn table() -> &'static Table {
    TABLE.get_or_init(Table::new)
}

/// Adds `n` to `counter`.
pub fn count(counter: Counter, n: u64) {
    if n == 0 {
        return;
    }
    table().counters[counter as usize].fetch_add(n, Ordering::Relaxed);
}

/// Records one duration.
pub fn time(timing: Timing, duration: Duration) {
    let histogram = &table().histograms[timing as usize];
    let secs = duration.as_secs_f64();
    let bucket = BUCKETS
        .iter()
        .position(|le| secs <= *le)
        .unwrap_or(BUCKETS.len());
    histogram.buckets[bucket].fetch_add(1, Ordering::Relaxed);
    let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    histogram.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
}

/// Forgets everything counted so far in this process.
pub fn reset() {
    table().clear();
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

/// Reads every counter and histogram.
pub fn snapshot() -> Snapshot {
    let table = table();
    let counters = Counter::ALL
        .iter()
        .map(|c| (*c, table.counters[*c as usize].load(Ordering::Relaxed)))
        .collect();
    let timings = Timing::ALL
        .iter()
        .map(|t| {
            let histogram = &table.histograms[*t as usize];
            let mut running = 0;
            let cumulative = histogram
                .buckets
                .iter()
                .map(|b| {
                    running += b.load(Ordering::Relaxed);
                    running
                })
                .collect();
            let nanos = histogram.sum_nanos.load(Ordering::Relaxed);
            let count = running;
            (
                *t,
                HistogramSnapshot {
                    cumulative,
                    count,
                    sum_seconds: Duration::from_nanos(nanos).as_secs_f64(),
                },
            )
        })
        .collect();
    Snapshot { counters, timings }
}

/// The snapshot in the Prometheus text exposition format, metric names prefixed `deadbolt_`.
pub fn prometheus() -> String {
    use std::fmt::Write as _;
    let snapshot = snapshot();
    let mut out = String::new();
    for (counter, value) in &snapshot.counters {
        let name = counter.name();
        let _ = writeln!(out, "# TYPE deadbolt_{name}_total counter");
        let _ = writeln!(out, "deadbolt_{name}_total {value}");
    }
    for (timing, histogram) in &snapshot.timings {
        let name = timing.name();
        let _ = writeln!(out, "# TYPE deadbolt_{name} histogram");
        for (le, count) in BUCKETS.iter().zip(&histogram.cumulative) {
            let _ = writeln!(out, "deadbolt_{name}_bucket{{le=\"{le}\"}} {count}");
        }
        let total = histogram.cumulative.last().copied().unwrap_or(0);
        let _ = writeln!(out, "deadbolt_{name}_bucket{{le=\"+Inf\"}} {total}");
        let _ = writeln!(out, "deadbolt_{name}_sum {}", histogram.sum_seconds);
        let _ = writeln!(out, "deadbolt_{name}_count {}", histogram.count);
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
