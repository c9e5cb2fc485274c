//! A metrics file: one [`Table`] of atomics in a file every process of a php-fpm pool maps
//! `MAP_SHARED`, so that each count is added both to the process's own table and to the pool's.
//!
//! Why a file and not anonymous shared memory: the master (MINIT, before it forks the workers)
//! maps it when `deadbolt.metrics_file` is set in php.ini, and its workers inherit the mapping
//! (they need no right on the file: the master may create it as root); a pool that names its own
//! file (`php_admin_value`) is mapped by each worker itself, the same pages through the same file;
//! and a command without PHP (`deadbolt metrics`, [`metrics_file_prometheus`]) reads the totals
//! from the file while the pool runs.
//!
//! Layout (native byte order, checked): a 64-byte header, then the `repr(C)` [`Table`]:
//!
//! | offset | size | content |
//! |---|---|---|
//! | 0 | 16 | `deadbolt-metrics` |
//! | 16 | 4 | format, little-endian ([`FORMAT`]) |
//! | 20 | 4 | header length (64) |
//! | 24 | 4 | table length in bytes |
//! | 28 | 4 | `0x01020304` in the writer's byte order |
//! | 32 | 8 | layout fingerprint: FNV-1a of the counter names, timing names and bucket bounds |
//! | 40 | 24 | zero |
//! | 64 | table length | the counters, then per timing its buckets (not cumulative) and sum in nanoseconds, each a `u64` |
//!
//! A file whose header is not exactly this version's is refused, never reinterpreted: another
//! version may order its counters differently. The header is written under an exclusive flock(2)
//! of the file and read under a shared one, so no process maps a half-made file.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind as IoKind;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::{render, Counter, Snapshot, Table, Timing, BUCKETS};
use crate::error::{Error, Result};
use crate::sync::{AtomicBool, AtomicPtr, Mutex};

/// The metrics file format this version writes and reads.
pub const FORMAT: u32 = 1;
const MAGIC: &[u8; 16] = b"deadbolt-metrics";
const HEADER_LEN: usize = 64;
const TABLE_LEN: usize = std::mem::size_of::<Table>();
const FILE_LEN: usize = HEADER_LEN + TABLE_LEN;

/// The table of the file this process adds to, or null: read on every count, so an atomic.
static MAPPED: AtomicPtr<Table> = AtomicPtr::new(std::ptr::null_mut());

/// What the setting asked for and how it went, for `shared_snapshot()`'s answer, and every file
/// this process mapped: a setting that comes back to a path (a value applied per request and
/// restored after it) finds its mapping again instead of mapping, and leaking, one more.
static STATE: Mutex<Setting> = Mutex::new(Setting {
    state: State::Off,
    mapped: Vec::new(),
});

struct Setting {
    state: State,
    mapped: Vec<(PathBuf, &'static Table)>,
}

/// Set when a failure has not been told yet (`take_metrics_file_warning`): an atomic, since every
/// request's start asks (on every PHP thread under ZTS).
static UNTOLD: AtomicBool = AtomicBool::new(false);

enum State {
    Off,
    On(PathBuf),
    /// The message says which file, and why.
    Failed(String),
}

/// The table of the metrics file this process adds to.
pub(super) fn table() -> Option<&'static Table> {
    // SAFETY: null, or a mapping that is never unmapped (`mapped` forgets it).
    unsafe { MAPPED.load(Ordering::Acquire).as_ref() }
}

/// Makes this process add its counts to the metrics file at `path` from now on (created when
/// missing, with mode 0644 less the umask), or to none (`None`). The same path again changes
/// nothing. On failure the process adds to no file, and the error is also kept for
/// [`shared_snapshot`]'s answer.
pub fn use_metrics_file(path: Option<&Path>) -> Result<()> {
    let mut setting = STATE.lock();
    let Some(path) = path else {
        MAPPED.store(std::ptr::null_mut(), Ordering::Release);
        setting.state = State::Off;
        return Ok(());
    };
    if matches!(&setting.state, State::On(current) if current == path) {
        return Ok(());
    }
    match mapped(&mut setting, path) {
        Ok(table) => {
            MAPPED.store(std::ptr::from_ref(table).cast_mut(), Ordering::Release);
            setting.state = State::On(path.to_owned());
            Ok(())
        }
        Err(error) => {
            MAPPED.store(std::ptr::null_mut(), Ordering::Release);
            setting.state = State::Failed(error.to_string());
            UNTOLD.store(true, Ordering::Release);
            Err(error)
        }
    }
}

/// The table of the file at `path`: mapped before by this process, or now (and then never
/// unmapped: another thread may still be counting through a pointer to it).
fn mapped(setting: &mut Setting, path: &Path) -> Result<&'static Table> {
    if !path.is_absolute() {
        return Err(invalid(format!(
            "deadbolt.metrics_file must be an absolute path, not \"{}\": a relative one would name another file \
             in each working directory.",
            path.display()
        )));
    }
    if let Some((_, table)) = setting.mapped.iter().find(|(known, _)| known == path) {
        return Ok(*table);
    }
    let mapping = Mapping::for_counting(path)?;
    // SAFETY: the mapping is forgotten, never unmapped: the table lives as long as the process.
    let table: &'static Table = unsafe { &*std::ptr::from_ref(mapping.table()) };
    std::mem::forget(mapping);
    setting.mapped.push((path.to_owned(), table));
    Ok(table)
}

/// Why the metrics file set last could not be used, once (the extension makes it a warning at
/// the next request's start: the setting may fail at MINIT, where a warning has no request).
pub fn take_metrics_file_warning() -> Option<String> {
    if !UNTOLD.load(Ordering::Acquire) || !UNTOLD.swap(false, Ordering::AcqRel) {
        return None;
    }
    match &STATE.lock().state {
        State::Failed(message) => Some(message.clone()),
        _ => None,
    }
}

/// The numbers of the metrics file this process adds to: every process's that adds to it.
pub fn shared_snapshot() -> Result<Snapshot> {
    let setting = STATE.lock();
    match (&setting.state, table()) {
        (State::On(_), Some(table)) => Ok(table.read()),
        (State::Failed(message), _) => Err(invalid(message.clone())),
        _ => Err(invalid(
            "No metrics file: this process adds its numbers to none. Set deadbolt.metrics_file (in php.ini, or \
             php_admin_value[deadbolt.metrics_file] in a php-fpm pool) to the path of a file the pool's processes \
             share (docs/METRICS.md)."
                .to_owned(),
        )),
    }
}

/// The numbers of the metrics file at `path`, read without adding to it (`deadbolt metrics`).
pub fn metrics_file_snapshot(path: &Path) -> Result<Snapshot> {
    Ok(Mapping::for_reading(path)?.table().read())
}

/// The metrics file at `path` in the Prometheus text exposition format, as
/// `Deadbolt\Metrics::prometheus(Metrics::SHARED)` renders it in a process that adds to it.
pub fn metrics_file_prometheus(path: &Path) -> Result<String> {
    Ok(render(&metrics_file_snapshot(path)?, ""))
}

/// The header this version writes, and expects byte for byte.
fn header() -> [u8; HEADER_LEN] {
    let mut header = [0u8; HEADER_LEN];
    header[..16].copy_from_slice(MAGIC);
    header[16..20].copy_from_slice(&FORMAT.to_le_bytes());
    header[20..24].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    header[24..28].copy_from_slice(&(TABLE_LEN as u32).to_le_bytes());
    header[28..32].copy_from_slice(&0x0102_0304u32.to_ne_bytes());
    header[32..40].copy_from_slice(&fingerprint().to_le_bytes());
    header
}

/// FNV-1a of everything that decides the table's layout: a build that adds a counter or moves a
/// bucket bound writes another fingerprint, and never reads an older file as its own.
fn fingerprint() -> u64 {
    let names = Counter::ALL.iter().map(|c| c.name().to_owned());
    let timings = Timing::ALL.iter().map(|t| t.name().to_owned());
    let bounds = BUCKETS.iter().map(|b| b.to_string());
    names
        .chain(timings)
        .chain(bounds)
        .flat_map(|part| part.into_bytes().into_iter().chain([0]))
        .fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// Why a file's header is not this version's, in words that say what to do.
fn refusal(path: &Path, found: &[u8]) -> Error {
    let path = path.display();
    if found.get(..16) != Some(&MAGIC[..]) {
        return invalid(format!(
            "{path} is not a Deadbolt metrics file (it does not begin with \"deadbolt-metrics\"): point \
             deadbolt.metrics_file at a file of its own."
        ));
    }
    let format = found
        .get(16..20)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_le_bytes);
    invalid(format!(
        "{path} was written by another version of Deadbolt (metrics file format {format} or another set of \
         counters; this version uses format {FORMAT}): stop the processes that use it and remove it (the totals \
         start over), or give this version a file of its own."
    ))
}

/// One mapping of a whole metrics file.
struct Mapping {
    base: *mut libc::c_void,
}

impl Mapping {
    /// Opens (creating and setting up when missing or empty) the file to count in it.
    fn for_counting(path: &Path) -> Result<Mapping> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| io_error(path, "open or create", &e))?;
        lock(&file, path, rustix::fs::FlockOperation::LockExclusive)?;
        let len = regular_len(&file, path)?;
        if len == 0 {
            // Header first: a file cut short here is refused as another version, never read as zeroes.
            file.write_all_at(&header(), 0)
                .and_then(|()| file.set_len(FILE_LEN as u64))
                .map_err(|e| io_error(path, "set up", &e))?;
        } else {
            check(&file, path, len)?;
        }
        Mapping::map_and_unlock(&file, path, libc::PROT_READ | libc::PROT_WRITE)
    }

    /// Opens the file to read it only.
    fn for_reading(path: &Path) -> Result<Mapping> {
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| match e.kind() {
                // A reader creates nothing: the writer's hint (make the directory) does not apply.
                IoKind::NotFound => Error::Storage {
                    message: format!(
                        "The metrics file {} does not exist: no process with deadbolt.metrics_file set to it \
                         has started (check the path php.ini gives).",
                        path.display()
                    ),
                    source: None,
                },
                _ => io_error(path, "open", &e),
            })?;
        lock(&file, path, rustix::fs::FlockOperation::LockShared)?;
        let len = regular_len(&file, path)?;
        if len == 0 {
            return Err(invalid(format!(
                "{} is empty: no process has set it up yet (the first process with deadbolt.metrics_file set to \
                 it does, a php-fpm master when it starts).",
                path.display()
            )));
        }
        check(&file, path, len)?;
        Mapping::map_and_unlock(&file, path, libc::PROT_READ)
    }

    /// Maps the file, then unlocks it explicitly: the mapping keeps the open file description
    /// alive, so closing the descriptor would not release the flock.
    fn map_and_unlock(file: &File, path: &Path, protection: libc::c_int) -> Result<Mapping> {
        let mapping = Mapping::map(file, path, protection);
        lock(file, path, rustix::fs::FlockOperation::Unlock)?;
        mapping
    }

    fn map(file: &File, path: &Path, protection: libc::c_int) -> Result<Mapping> {
        use std::os::fd::AsRawFd;
        // SAFETY: maps FILE_LEN bytes of a file checked to be exactly that long; the mapping
        // outlives the descriptor, which the caller closes.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                FILE_LEN,
                protection,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io_error(path, "map", &std::io::Error::last_os_error()));
        }
        Ok(Mapping { base })
    }

    fn table(&self) -> &Table {
        // SAFETY: the mapping is FILE_LEN bytes, page-aligned, so HEADER_LEN (64) keeps the u64s
        // aligned; every bit pattern is a valid Table (atomics of u64), and the other processes
        // only ever touch it through the same atomics.
        unsafe { &*self.base.cast::<u8>().add(HEADER_LEN).cast::<Table>() }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps what `map` mapped, once; no reference into it outlives `self`.
        unsafe { libc::munmap(self.base, FILE_LEN) };
    }
}

/// flock(2), waiting: another process holds it only while it sets the file up or checks it.
fn lock(file: &File, path: &Path, operation: rustix::fs::FlockOperation) -> Result<()> {
    rustix::fs::flock(file, operation).map_err(|e| io_error(path, "lock", &std::io::Error::from(e)))
}

/// The file's length, once it is known to be a regular file.
fn regular_len(file: &File, path: &Path) -> Result<u64> {
    let meta = file.metadata().map_err(|e| io_error(path, "inspect", &e))?;
    if !meta.is_file() {
        return Err(invalid(format!(
            "{} is not a regular file: point deadbolt.metrics_file at a file of its own.",
            path.display()
        )));
    }
    Ok(meta.len())
}

/// Refuses a file whose header or length is not this version's.
fn check(file: &File, path: &Path, len: u64) -> Result<()> {
    let mut found = [0u8; HEADER_LEN];
    let read = file.read_at(&mut found, 0).unwrap_or(0);
    if read != HEADER_LEN || found != header() || len != FILE_LEN as u64 {
        return Err(refusal(path, &found[..read]));
    }
    Ok(())
}

fn invalid(message: String) -> Error {
    Error::InvalidArgument { message }
}

/// A file-system failure on the metrics file, with what to check.
fn io_error(path: &Path, action: &str, error: &std::io::Error) -> Error {
    let hint = match error.kind() {
        IoKind::NotFound => "create its directory first (for php-fpm: owned by the pool's user, or set the file in \
                             php.ini so the master creates it before it forks the workers)",
        IoKind::PermissionDenied => "give this process's user the right to it, or set deadbolt.metrics_file in \
                                     php.ini so that php-fpm's master creates and maps it before the workers \
                                     change user",
        _ if error.raw_os_error() == Some(libc::ELOOP) => {
            "it is a symbolic link, which is not followed: point deadbolt.metrics_file at the file itself"
        }
        _ => "check the path and the file system",
    };
    Error::Storage {
        message: format!(
            "Cannot {action} the metrics file {}: {error}; {hint}.",
            path.display()
        ),
        source: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn two_mappings_of_one_file_add_up_and_a_reader_renders_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pool.metrics");
        let a = Mapping::for_counting(&path).unwrap();
        let b = Mapping::for_counting(&path).unwrap();
        a.table().add(Counter::Acquired, 2);
        b.table().add(Counter::Acquired, 3);
        b.table().observe(Timing::Wait, 1, 700_000);
        let text = metrics_file_prometheus(&path).unwrap();
        assert!(text.contains("deadbolt_acquired_total 5\n"), "{text}");
        assert!(
            text.contains("deadbolt_wait_seconds_bucket{le=\"0.001\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("deadbolt_wait_seconds_count 1\n"), "{text}");
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            FILE_LEN as u64,
            "the file is the header and one table"
        );
    }

    #[test]
    fn a_process_counts_into_its_table_and_the_file_the_setting_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("counted.metrics");
        use_metrics_file(Some(&path)).unwrap();
        super::super::count(Counter::ForceReleased, 4);
        super::super::time(Timing::Hold, Duration::from_secs(2));
        let shared = shared_snapshot().unwrap();
        use_metrics_file(None).unwrap();
        assert!(shared.counters.contains(&(Counter::ForceReleased, 4)));
        assert_eq!(shared.timings[1].1.count, 1);
        let off = shared_snapshot().unwrap_err().to_string();
        assert!(off.contains("Set deadbolt.metrics_file"), "{off}");
        // The file keeps the totals for the next reader.
        let again = metrics_file_snapshot(&path).unwrap();
        assert!(again.counters.contains(&(Counter::ForceReleased, 4)));

        // A path that cannot be set up: named, with what to do; the process then adds to no file.
        let error = use_metrics_file(Some(Path::new("/nonexistent-deadbolt/x.metrics")))
            .unwrap_err()
            .to_string();
        assert!(error.contains("/nonexistent-deadbolt/x.metrics"), "{error}");
        assert!(error.contains("create its directory first"), "{error}");
        assert!(table().is_none());
        let kept = shared_snapshot().unwrap_err().to_string();
        assert_eq!(kept, error, "the process adds to no file and says why");
        assert_eq!(take_metrics_file_warning(), Some(error), "told once");
        assert_eq!(take_metrics_file_warning(), None);

        // Back to the first path: the same mapping again, not one more.
        use_metrics_file(Some(&path)).unwrap();
        let first = table().map(std::ptr::from_ref);
        use_metrics_file(None).unwrap();
        use_metrics_file(Some(&path)).unwrap();
        assert_eq!(table().map(std::ptr::from_ref), first);
        assert_eq!(STATE.lock().mapped.len(), 1);

        let error = use_metrics_file(Some(Path::new("run/x.metrics")))
            .unwrap_err()
            .to_string();
        assert!(error.contains("must be an absolute path"), "{error}");
        use_metrics_file(None).unwrap();
    }

    #[test]
    fn a_file_of_another_version_or_kind_is_refused_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other.metrics");
        let mut old = header();
        old[16..20].copy_from_slice(&0u32.to_le_bytes());
        let mut bytes = old.to_vec();
        bytes.resize(FILE_LEN, 0);
        std::fs::write(&other, &bytes).unwrap();
        let error = Mapping::for_counting(&other).err().unwrap().to_string();
        assert!(error.contains("another version of Deadbolt"), "{error}");
        assert!(error.contains("remove it"), "{error}");
        let error = metrics_file_snapshot(&other).unwrap_err().to_string();
        assert!(error.contains("another version of Deadbolt"), "{error}");

        let foreign = dir.path().join("notes.txt");
        std::fs::write(&foreign, "hello").unwrap();
        let error = Mapping::for_counting(&foreign).err().unwrap().to_string();
        assert!(error.contains("is not a Deadbolt metrics file"), "{error}");
        assert_eq!(std::fs::read(&foreign).unwrap(), b"hello", "left as it was");

        let empty = dir.path().join("empty.metrics");
        std::fs::write(&empty, "").unwrap();
        let error = metrics_file_snapshot(&empty).unwrap_err().to_string();
        assert!(error.contains("is empty"), "{error}");
    }

    #[test]
    fn the_fingerprint_follows_the_layout() {
        assert_eq!(header()[32..40], fingerprint().to_le_bytes());
        assert_eq!(
            TABLE_LEN,
            (Counter::ALL.len() + 2 * (BUCKETS.len() + 2)) * 8
        );
    }
}
