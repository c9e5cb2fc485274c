//! Locks on files with flock(2), in symfony/lock's layout (`flock_path`), so a Deadbolt process and
//! a symfony/lock process exclude each other on the same host.
//!
//! Each key opens its own file description: two keys in one process exclude each other, and the
//! lock lives exactly as long as the key's handle. Locks held this way never expire.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use fs4::{FileExt, TryLockError};

use crate::process::current_pid;
use crate::store::flock_path::lock_file_name;
use crate::store::{BlockingSharedStore, BlockingStore, SharedStore, Store};
use crate::{Error, Key, Result, Ttl};

/// Mode of a lock file: any user who can reach the directory may lock it (symfony/lock does the same).
const LOCK_FILE_MODE: u32 = 0o666;

/// A key's open lock file. Dropping it closes the descriptor, which frees the lock when no other
/// descriptor of the same file description is left.
#[derive(Debug)]
pub struct FlockHold {
    file: File,
    shared: bool,
    /// The process that opened it: only that process ever unlocks it.
    pid: u32,
}

impl FlockHold {
    /// Unlocks explicitly, but only in the process that took the lock: a forked child shares the
    /// file description with its parent, and unlocking it there would free the parent's lock.
    fn release(self) -> io::Result<()> {
        if self.pid == current_pid() {
            FileExt::unlock(&self.file)?;
        }
        Ok(())
    }
}

/// flock(2)-based store for one host.
#[derive(Debug)]
pub struct FlockStore {
    dir: PathBuf,
    name: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Exclusive,
    Shared,
}

impl FlockStore {
    /// A store whose lock files live in `dir`, created (with parents) when missing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the path when it cannot be created or is not writable.
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self> {
        let dir = dir.into();
        if !dir.is_dir() {
            fs::create_dir_all(&dir).map_err(|e| {
                Error::invalid_argument(format!(
                    "The FlockStore directory \"{}\" does not exist and cannot be created: {e}.",
                    dir.display()
                ))
            })?;
        }
        if rustix::fs::access(&dir, rustix::fs::Access::WRITE_OK).is_err() {
            return Err(Error::invalid_argument(format!(
                "The FlockStore directory \"{}\" is not writable.",
                dir.display()
            )));
        }
        let name = format!("FlockStore({})", dir.display());
        Ok(FlockStore { dir, name })
    }

    /// The directory holding the lock files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where `key`'s lock file lives.
    pub fn path_for(&self, key: &Key) -> PathBuf {
        self.dir.join(lock_file_name(key.resource()))
    }

    fn lock(&self, key: &mut Key, mode: Mode, blocking: bool) -> Result<()> {
        key.adopt_if_inherited();
        let shared = mode == Mode::Shared;
        let file = match key.flock.take() {
            // Already held in the wanted mode: nothing to do.
            Some(hold) if hold.shared == shared => {
                key.flock = Some(hold);
                return Ok(());
            }
            // Promotion or demotion on the same descriptor. On Linux the conversion is not atomic:
            // when it fails, the old lock is already gone, so the key holds nothing afterwards.
            Some(hold) => hold.file,
            None => self.open(key)?,
        };
        match flock(&file, mode, blocking) {
            Ok(()) => {
                key.flock = Some(FlockHold {
                    file,
                    shared,
                    pid: current_pid(),
                });
                Ok(())
            }
            Err(TryLockError::WouldBlock) => {
                Err(Error::conflict(key.display_resource(), &self.name))
            }
            Err(TryLockError::Error(e)) => Err(self.io_error("lock", key, e)),
        }
    }

    /// Opens (creating with mode 0666 when missing) the key's lock file.
    fn open(&self, key: &Key) -> Result<File> {
        let path = self.path_for(key);
        let read_write = || OpenOptions::new().read(true).write(true).open(&path);
        // flock works on a read-only descriptor too: used when another user made the file and
        // did not give us write access.
        let read_only = || File::open(&path);
        match read_write() {
            Ok(file) => return Ok(file),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                return read_only().map_err(|e| self.io_error("open", key, e))
            }
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(self.io_error("open", key, e))
            }
            Err(_) => {}
        }
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => {
                // Explicit chmod: the umask would otherwise keep other users out.
                fs::set_permissions(&path, fs::Permissions::from_mode(LOCK_FILE_MODE))
                    .map_err(|e| self.io_error("chmod", key, e))?;
                Ok(file)
            }
            // Another process created it between our two opens.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => read_write()
                .or_else(|_| read_only())
                .map_err(|e| self.io_error("open", key, e)),
            Err(e) => Err(self.io_error("create", key, e)),
        }
    }

    fn io_error(&self, action: &str, key: &Key, e: io::Error) -> Error {
        Error::storage(
            format!(
                "Cannot {action} the lock file of the \"{}\" lock in {}: {e}.",
                key.display_resource(),
                self.name
            ),
            e,
        )
    }
}

/// One flock(2) call; blocking calls retry when a signal interrupts them.
fn flock(file: &File, mode: Mode, blocking: bool) -> std::result::Result<(), TryLockError> {
    if !blocking {
        return match mode {
            Mode::Exclusive => FileExt::try_lock(file),
            Mode::Shared => FileExt::try_lock_shared(file),
        };
    }
    loop {
        let result = match mode {
            Mode::Exclusive => FileExt::lock(file),
            Mode::Shared => FileExt::lock_shared(file),
        };
        match result {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other.map_err(TryLockError::Error),
        }
    }
}

impl Store for FlockStore {
    fn name(&self) -> &str {
        &self.name
    }

    fn save(&self, key: &mut Key) -> Result<()> {
        self.lock(key, Mode::Exclusive, false)
    }

    fn put_off_expiration(&self, key: &mut Key, _ttl: Ttl) -> Result<()> {
        // flock locks never expire, so the key keeps no lifetime (as in symfony/lock); unlike
        // symfony/lock, a key that does not hold the lock is told so.
        if self.exists(key)? {
            Ok(())
        } else {
            Err(Error::not_held(key.display_resource(), &self.name))
        }
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        match key.flock.take() {
            Some(hold) => hold.release().map_err(|e| self.io_error("unlock", key, e)),
            None => Ok(()),
        }
    }

    fn exists(&self, key: &Key) -> Result<bool> {
        Ok(key
            .flock
            .as_ref()
            .is_some_and(|hold| hold.pid == current_pid()))
    }

    fn as_shared(&self) -> Option<&dyn SharedStore> {
        Some(self)
    }

    fn as_blocking(&self) -> Option<&dyn BlockingStore> {
        Some(self)
    }

    fn as_blocking_shared(&self) -> Option<&dyn BlockingSharedStore> {
        Some(self)
    }
}

impl SharedStore for FlockStore {
    fn save_read(&self, key: &mut Key) -> Result<()> {
        self.lock(key, Mode::Shared, false)
    }
}

impl BlockingStore for FlockStore {
    fn wait_and_save(&self, key: &mut Key) -> Result<()> {
        self.lock(key, Mode::Exclusive, true)
    }
}

impl BlockingSharedStore for FlockStore {
    fn wait_and_save_read(&self, key: &mut Key) -> Result<()> {
        self.lock(key, Mode::Shared, true)
    }
}
