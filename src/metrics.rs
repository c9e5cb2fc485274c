//! `Deadbolt\Metrics`: this process's lock counters and histograms, or (`Metrics::SHARED`) the
//! totals of the metrics file every process of a php-fpm pool adds to, for a status page, a log
//! line or a Prometheus scrape; and the two settings that take numbers out of the process
//! (`deadbolt.metrics_file`, `deadbolt.metrics_textfile`, docs/METRICS.md).

use std::ffi::{c_int, c_void};
use std::path::PathBuf;

use ext_php_rs::boxed::ZBox;
use ext_php_rs::ffi::{zend_ini_entry, zend_string};
use ext_php_rs::flags::{ClassFlags, ErrorType, IniEntryPermission};
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendHashTable, ZendStr};
use ext_php_rs::zend::{IniEntryDef, IniEntryDefs};

use crate::error_map::{invalid_argument, to_php};

#[php_class]
#[php(name = "Deadbolt\\Metrics")]
#[php(flags = ClassFlags::Final)]
pub struct PhpMetrics;

#[php_impl]
impl PhpMetrics {
    /// This process's numbers (the default scope).
    const PROCESS: &'static str = "process";
    /// The metrics file's numbers: every process's that adds to it (`deadbolt.metrics_file`).
    const SHARED: &'static str = "shared";

    /// `['counters' => [name => int], 'timings' => [name => ['count' => int, 'sum' => float,
    /// 'buckets' => [le => cumulative int, ..., '+Inf' => int]]]]`.
    #[php(defaults(scope = None))]
    pub fn snapshot(scope: Option<String>) -> PhpResult<ZBox<ZendHashTable>> {
        let failed = |e: ext_php_rs::error::Error| invalid_argument(e.to_string());
        let snapshot = numbers(scope.as_deref())?;
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
    #[php(defaults(scope = None))]
    pub fn prometheus(scope: Option<String>) -> PhpResult<String> {
        Ok(deadbolt_core::render_prometheus(
            &numbers(scope.as_deref())?,
            "",
        ))
    }

    /// This process starts counting from zero (a metrics file's totals are the pool's: untouched).
    pub fn reset() {
        deadbolt_core::reset_metrics();
    }
}

/// The numbers a scope names: null or `process`, this process's; `shared`, the metrics file's.
fn numbers(scope: Option<&str>) -> PhpResult<deadbolt_core::Snapshot> {
    match scope {
        None | Some(PhpMetrics::PROCESS) => Ok(deadbolt_core::snapshot()),
        Some(PhpMetrics::SHARED) => deadbolt_core::shared_snapshot().map_err(to_php),
        Some(other) => Err(invalid_argument(format!(
            "Unknown metrics scope \"{}\": use Deadbolt\\Metrics::PROCESS (this process) or \
             Deadbolt\\Metrics::SHARED (the totals of deadbolt.metrics_file).",
            other.escape_debug()
        ))),
    }
}

/// Both settings are PHP_INI_SYSTEM (php.ini, `-d`, php-fpm's `php_admin_value`): a script's
/// `ini_set()` is undone at the end of its request, before the process ends, and a pool's file is
/// the pool's decision. PHP calls each handler when the value is registered (MINIT: php-fpm's
/// master, before it forks) and when php-fpm applies a pool's `php_admin_value` in a new worker.
static INI: IniEntryDefs<3> = IniEntryDefs::new([
    setting(c"deadbolt.metrics_file", metrics_file_set),
    setting(c"deadbolt.metrics_textfile", metrics_textfile_set),
    IniEntryDef::end(),
]);

type OnModify = unsafe extern "C" fn(
    *mut zend_ini_entry,
    *mut zend_string,
    *mut c_void,
    *mut c_void,
    *mut c_void,
    c_int,
) -> c_int;

const fn setting(name: &'static std::ffi::CStr, on_modify: OnModify) -> IniEntryDef {
    let mut entry = IniEntryDef::new(name, c"", IniEntryPermission::System);
    entry.on_modify = Some(on_modify);
    entry
}

/// Registers the settings (MINIT).
pub fn register_settings(module_number: i32) {
    IniEntryDef::register(INI.as_slice(), module_number);
}

/// The setting's new value as a path; None when empty.
///
/// # Safety
/// `value` is null or a live `zend_string`.
unsafe fn path_of(value: *mut zend_string) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let value: &ZendStr = unsafe { value.as_ref() }?;
    let bytes = value.as_bytes();
    (!bytes.is_empty()).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
}

unsafe extern "C" fn metrics_file_set(
    _entry: *mut zend_ini_entry,
    value: *mut zend_string,
    _: *mut c_void,
    _: *mut c_void,
    _: *mut c_void,
    _stage: c_int,
) -> c_int {
    // SAFETY: PHP hands the handler the entry's new value, a live string.
    let path = unsafe { path_of(value) };
    // A failure is kept by the engine and told at the next request's start (this may be MINIT,
    // where a warning has no request to go to).
    let _ = deadbolt_core::use_metrics_file(path.as_deref());
    0 // SUCCESS: the value stands (a failure is told, never a reason to refuse PHP's start)
}

unsafe extern "C" fn metrics_textfile_set(
    _entry: *mut zend_ini_entry,
    value: *mut zend_string,
    _: *mut c_void,
    _: *mut c_void,
    _: *mut c_void,
    _stage: c_int,
) -> c_int {
    // SAFETY: as above.
    deadbolt_core::use_textfile(unsafe { path_of(value) }.as_deref());
    0
}

/// RINIT: a metrics file that could not be used is a warning in the first request after it.
pub fn tell_setting_failure() {
    if let Some(message) = deadbolt_core::take_metrics_file_warning() {
        ext_php_rs::error::php_error(&ErrorType::Warning, &message);
    }
}

/// MSHUTDOWN: this process's totals go into its textfile, if it has one; a failure is a warning.
pub fn write_textfile() {
    if let Err(error) = deadbolt_core::write_textfile() {
        ext_php_rs::error::php_error(&ErrorType::Warning, &error.to_string());
    }
}
