//! Lock files kept open between the lock cycles of one process, so that a cycle on a resource
//! used before costs flock, stat, flock instead of open, flock, flock, close.
//!
//! A file kept here is idle: no key holds it. Taken out for a lock attempt, it belongs to that key
//! alone, because flock(2) locks belong to a file description: two keys of one process sharing one
//! would not exclude each other, so a second key of the same resource opens a description of its
//! own. The store checks a lock it took against the file now at the path ([`FileId`]) before it
//! reports it held: a lock on a removed or replaced file excludes nobody. The files are per-process
//! state ([`PerProcess`]): a forked child opens its own and never locks one of its parent's
//! descriptions, which the parent may lock again at any time.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use crate::process::PerProcess;
use crate::sync::{Mutex, MutexGuard};

/// Idle files kept per process at most: beyond that the least recently used one is closed. Each
/// is one descriptor of the process's `ulimit -n`, so fewer are kept under a low limit
/// ([`idle_limit`]).
pub const MAX_IDLE: usize = 64;

/// The share of the process's descriptors (its soft `RLIMIT_NOFILE`) idle lock files may take.
const SHARE_OF_LIMIT: u64 = 8;

/// How many idle files this process keeps: [`MAX_IDLE`], or an eighth of its descriptor limit
/// when that is less (`ulimit -n 64`: 8). Read once (a system call per release would be a tenth
/// of a cycle); a process that lowers its limit later is still covered: an open that finds no
/// descriptor closes the idle files first.
fn idle_limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        limit.map_or(MAX_IDLE, |limit| {
            usize::try_from(limit / SHARE_OF_LIMIT).map_or(MAX_IDLE, |share| share.min(MAX_IDLE))
        })
    })
}

/// Which file a path or a descriptor names (device and inode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    /// The file `file` is open on.
    pub fn of(file: &File) -> io::Result<Self> {
        let stat = rustix::fs::fstat(file)?;
        Ok(FileId {
            dev: stat.st_dev,
            ino: stat.st_ino,
        })
    }

    /// The file at `path` now, never through a symbolic link; `None` when there is none. (rustix: a short path goes to the
    /// kernel from the stack, without the allocation std's `metadata` makes for it.)
    pub fn at(path: &Path) -> io::Result<Option<Self>> {
        // lstat: a symbolic link at the path is not the file we locked, whatever it points to.
        match rustix::fs::lstat(path) {
            Ok(stat) => Ok(Some(FileId {
                dev: stat.st_dev,
                ino: stat.st_ino,
            })),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// How `/proc/locks` names this file: `MAJOR:MINOR:INODE`, the device numbers in hex.
    pub fn proc_locks_name(&self) -> String {
        let (major, minor) = (rustix::fs::major(self.dev), rustix::fs::minor(self.dev));
        format!("{major:02x}:{minor:02x}:{}", self.ino)
    }
}

/// An open lock file, the file it was opened on, its path, and the name it is kept under here
/// (see [`name`]): a cycle that finds it kept computes neither.
#[derive(Debug)]
pub struct LockFile {
    pub file: File,
    pub id: FileId,
    pub path: PathBuf,
    pub name: Vec<u8>,
}

/// The name a lock file is kept under: its store's directory and its resource, unambiguously
/// (the directory's length first), so that finding it costs no hash of the resource.
pub fn name(dir: &[u8], resource: &[u8]) -> Vec<u8> {
    let mut name = Vec::with_capacity(8 + dir.len() + resource.len());
    name.extend_from_slice(&(dir.len() as u64).to_le_bytes());
    name.extend_from_slice(dir);
    name.extend_from_slice(resource);
    name
}

#[derive(Default)]
struct Idle {
    /// Fx, not SipHash: at most [`MAX_IDLE`] entries, so even names chosen to collide cost a
    /// short scan, and SipHash was a tenth of a cycle.
    files: FxHashMap<Vec<u8>, (LockFile, u64)>,
    /// Counts uses, to find the least recently used file.
    clock: u64,
}

static IDLE: PerProcess<Mutex<Idle>> = PerProcess::new();

/// Makes this process's table and reads the descriptor limit now (`crate::threads`).
pub(crate) fn set_up() {
    idle_limit();
    drop(idle());
}

fn idle() -> MutexGuard<'static, Idle> {
    // Every change to the map is one insert or one remove: usable after a panic elsewhere.
    IDLE.get_or_init(Mutex::default).lock()
}

/// The idle file kept under `name`, taken out (the caller owns it until it gives it back with
/// [`keep`]).
pub fn take(name: &[u8]) -> Option<LockFile> {
    idle().files.remove(name).map(|(file, _)| file)
}

/// Keeps `file`, unlocked, for the next cycle on its resource. One idle file per resource is
/// enough (a second one, from a second key of the same resource, is closed).
pub fn keep(file: LockFile) {
    let mut idle = idle();
    if idle.files.contains_key(&file.name) {
        return;
    }
    let limit = idle_limit();
    if limit == 0 {
        return;
    }
    while idle.files.len() >= limit {
        let oldest = idle
            .files
            .iter()
            .min_by_key(|(_, (_, used))| *used)
            .map(|(name, _)| name.clone());
        match oldest {
            Some(oldest) => idle.files.remove(&oldest),
            None => break,
        };
    }
    idle.clock += 1;
    let used = idle.clock;
    idle.files.insert(file.name.clone(), (file, used));
}

/// Closes every idle file of this process (an open failed for want of descriptors); returns how
/// many there were.
pub fn close_idle() -> usize {
    let mut idle = idle();
    let closed = idle.files.len();
    idle.files.clear();
    closed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock_file(dir: &Path, resource: &str) -> LockFile {
        let path = dir.join(resource);
        let file = File::create(&path).unwrap();
        let id = FileId::of(&file).unwrap();
        let name = name(dir.as_os_str().as_encoded_bytes(), resource.as_bytes());
        LockFile {
            file,
            id,
            path,
            name,
        }
    }

    #[test]
    fn a_kept_file_is_taken_once_and_matches_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = lock_file(dir.path(), "a");
        assert_eq!(FileId::at(&file.path).unwrap(), Some(file.id));
        let kept_as = file.name.clone();
        keep(file);
        assert!(take(&kept_as).is_some());
        assert!(take(&kept_as).is_none(), "taken out, it belongs to one key");
    }

    #[test]
    fn names_tell_the_directory_from_the_resource() {
        assert_ne!(name(b"/a/", b"b/c"), name(b"/a/b/", b"c"));
    }

    #[test]
    fn a_removed_file_no_longer_matches_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = lock_file(dir.path(), "b");
        std::fs::remove_file(&file.path).unwrap();
        assert_eq!(FileId::at(&file.path).unwrap(), None);
        File::create(&file.path).unwrap();
        assert_ne!(FileId::at(&file.path).unwrap(), Some(file.id));
    }

    #[test]
    fn at_most_max_idle_files_stay_open() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<Vec<u8>> = (0..MAX_IDLE + 3)
            .map(|i| {
                let file = lock_file(dir.path(), &format!("c{i}"));
                let name = file.name.clone();
                keep(file);
                name
            })
            .collect();
        let kept = names.iter().filter(|n| take(n).is_some()).count();
        assert!(kept <= MAX_IDLE, "{kept} kept");
    }
}
