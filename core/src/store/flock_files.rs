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

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::process::PerProcess;

/// Idle files kept per process: beyond that the least recently used one is closed. Each is one
/// descriptor of the process's `ulimit -n`.
pub const MAX_IDLE: usize = 64;

/// Which file a path or a descriptor names (device and inode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    /// The file `file` is open on.
    pub fn of(file: &File) -> io::Result<Self> {
        file.metadata().map(|m| FileId {
            dev: m.dev(),
            ino: m.ino(),
        })
    }

    /// The file at `path` now; `None` when there is none.
    pub fn at(path: &Path) -> io::Result<Option<Self>> {
        match std::fs::metadata(path) {
            Ok(m) => Ok(Some(FileId {
                dev: m.dev(),
                ino: m.ino(),
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// An open lock file and the file it was opened on.
#[derive(Debug)]
pub struct LockFile {
    pub file: File,
    pub id: FileId,
}

#[derive(Default)]
struct Idle {
    files: HashMap<PathBuf, (LockFile, u64)>,
    /// Counts uses, to find the least recently used file.
    clock: u64,
}

static IDLE: PerProcess<Mutex<Idle>> = PerProcess::new();

fn idle() -> MutexGuard<'static, Idle> {
    IDLE.get_or_init(Mutex::default)
        .lock()
        // Every change to the map is one insert or one remove: usable after a panic elsewhere.
        .unwrap_or_else(PoisonError::into_inner)
}

/// The idle file of `path`, taken out (the caller owns it until it gives it back with [`keep`]).
pub fn take(path: &Path) -> Option<LockFile> {
    idle().files.remove(path).map(|(file, _)| file)
}

/// Keeps `file`, unlocked, for the next cycle on `path`. One idle file per path is enough (a second
/// one, from a second key of the same resource, is closed).
pub fn keep(path: PathBuf, file: LockFile) {
    let mut idle = idle();
    if idle.files.contains_key(&path) {
        return;
    }
    if idle.files.len() >= MAX_IDLE {
        let oldest = idle
            .files
            .iter()
            .min_by_key(|(_, (_, used))| *used)
            .map(|(path, _)| path.clone());
        if let Some(oldest) = oldest {
            idle.files.remove(&oldest);
        }
    }
    idle.clock += 1;
    let used = idle.clock;
    idle.files.insert(path, (file, used));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock_file(dir: &Path, name: &str) -> (PathBuf, LockFile) {
        let path = dir.join(name);
        let file = File::create(&path).unwrap();
        let id = FileId::of(&file).unwrap();
        (path, LockFile { file, id })
    }

    #[test]
    fn a_kept_file_is_taken_once_and_matches_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let (path, file) = lock_file(dir.path(), "a");
        assert_eq!(FileId::at(&path).unwrap(), Some(file.id));
        keep(path.clone(), file);
        assert!(take(&path).is_some());
        assert!(take(&path).is_none(), "taken out, it belongs to one key");
    }

    #[test]
    fn a_removed_file_no_longer_matches_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let (path, file) = lock_file(dir.path(), "b");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(FileId::at(&path).unwrap(), None);
        File::create(&path).unwrap();
        assert_ne!(FileId::at(&path).unwrap(), Some(file.id));
    }

    #[test]
    fn at_most_max_idle_files_stay_open() {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<PathBuf> = (0..MAX_IDLE + 3)
            .map(|i| {
                let (path, file) = lock_file(dir.path(), &format!("c{i}"));
                keep(path.clone(), file);
                path
            })
            .collect();
        let kept = paths.iter().filter(|p| take(p).is_some()).count();
        assert!(kept <= MAX_IDLE, "{kept} kept");
    }
}
