//! `Deadbolt\Metrics`: this process's lock counters and histograms, for a status page, a log
//! line or a Prometheus scrape.

use ext_php_rs::boxed::ZBox;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::ZendHashTable;

use crate::error_map::invalid_argument;

#[php_class]
#[php(name = "Deadbolt\\Metrics")]
#[php(flags = ClassFlags::Final)]
pub struct PhpMetrics;

#[php_impl]
impl PhpMetrics {
    /// `['counters' => [name => int], 'timings' => [name => ['count' => int, 'sum' => float,
    /// 'buckets' => [le => cumulative int, ..., '+Inf' => int]]]]`.
    pub fn snapshot() -> PhpResult<ZBox<ZendHashTable>> {
        let failed = |e: ext_php_rs::error::Error| invalid_argument(e.to_string());
        let snapshot = deadbolt_core::snapshot();
        let mut counters = ZendHashTable::new();
        for (counter, value) in snapshot.counters {
            counters
                .insert(counter.name(), i64::try_from(value).unwrap_or(i64::MAX))
                .map_err(failed)?;
        }
        let mut timings = ZendHashTable::new();
        for (timing, histogram) in snapshot.timings {
            let mut buckets = ZendHashTable::new();
            let bounds = deadbolt_core::BUCKETS.iter().map(|le| le.to_string());
            for (le, count) in bounds.chain(["+Inf".to_owned()]).zip(&histogram.cumulative) {
                buckets
                    .insert(le.as_str(), i64::try_from(*count).unwrap_or(i64::MAX))
                    .map_err(failed)?;
            }
            let mut entry = ZendHashTable::new();
            entry
                .insert("count", i64::try_from(histogram.count).unwrap_or(i64::MAX))
                .map_err(failed)?;
            entry.insert("sum", histogram.sum_seconds).map_err(failed)?;
            entry.insert("buckets", buckets).map_err(failed)?;
            timings.insert(timing.name(), entry).map_err(failed)?;
        }
        let mut all = ZendHashTable::new();
        all.insert("counters", counters).map_err(failed)?;
        all.insert("timings", timings).map_err(failed)?;
        Ok(all)
    }

    /// The same numbers in the Prometheus text format (`deadbolt_*` metrics).
    pub fn prometheus() -> String {
        deadbolt_core::prometheus()
    }

    /// Starts counting from zero.
    pub fn reset() {
        deadbolt_core::reset_metrics();
    }
}
