//! Locks on files with flock(2), in symfony/lock's layout (`flock_path`), so a Deadbolt process and
//! a symfony/lock process exclude each other on the same host.
//!
//! Each key holds its own file description: two keys in one process exclude each other, and the
//! lock lives exactly as long as the key's handle. Locks held this way never expire. A released
//! file stays open for the next cycle on the same resource (`flock_files`), and every lock taken is
//! checked to be on the file that is at the path now, so a removed or replaced lock file never
//! gives two holders.
//!
//! Fencing tokens live in the lock file itself (a decimal counter, read and bumped under the
//! exclusive lock), drawn when a holder first asks for one: holders that never ask pay nothing.
//! symfony/lock never reads the file's content, so the files stay compatible.

#[path = "flock_list.rs"]
mod list;
#[path = "flock_slots.rs"]
mod slots;

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fs4::{FileExt, TryLockError};

use crate::holder::LockState;
use crate::key::display_resource;
use crate::process::{epoch, Epoch};
use crate::store::flock_fence::bump_counter;
use crate::store::flock_files::{self, FileId, LockFile};
use crate::store::flock_holders;
use crate::store::flock_path::push_lock_file_name;
use crate::store::{
    poll, BlockingStore, Capabilities, FencingStore, InspectingStore, Mode, Store, WaitReport,
};
use crate::{Error, Key, Result, Ttl};

/// Mode of a lock file: any user who can reach the directory may lock it (symfony/lock does the same).
const LOCK_FILE_MODE: u32 = 0o666;
/// Sleeps of a wait with a deadline between non-blocking attempts: 1 ms, doubling up to 25 ms.
const WAIT_BACKOFF_START: Duration = Duration::from_millis(1);
const WAIT_BACKOFF_MAX: Duration = Duration::from_millis(25);
/// Locks taken in a row on a file that was no longer the one at its path (someone removes or
/// replaces lock files as fast as we open them) before the attempt fails.
const REPLACED_ATTEMPTS: usize = 8;

/// A key's open, locked lock file, kept in the key as the store's state (as symfony/lock keeps its
/// handle). Dropping it in the process that locked it unlocks and closes the file: the lock is
/// freed even while a forked child still has a copy of the descriptor. A child drops its copy on
/// adoption (`Key`) without unlocking, which leaves the parent's lock in place.
#[derive(Debug)]
struct FlockHold {
    /// Always `Some` until the hold is taken apart.
    lock_file: Option<LockFile>,
    mode: Mode,
    epoch: Epoch,
}

impl FlockHold {
    fn new(lock_file: LockFile, mode: Mode) -> Self {
        FlockHold {
            lock_file: Some(lock_file),
            mode,
            epoch: epoch(),
        }
    }

    /// The file, still locked, for the caller to unlock or lock anew.
    fn into_lock_file(mut self) -> Option<LockFile> {
        self.lock_file.take()
    }
}

impl Drop for FlockHold {
    fn drop(&mut self) {
        if let Some(lock_file) = self.lock_file.take() {
            if self.epoch == epoch() {
                let _ = FileExt::unlock(&lock_file.file);
            }
        }
    }
}

/// flock(2)-based store for one host.
#[derive(Debug)]
pub struct FlockStore {
    /// `dir` with a trailing `/`, to build lock file paths with few allocations.
    dir_prefix: OsString,
    name: String,
}

impl FlockStore {
    /// A store whose lock files live in `dir`, created (with parents) when missing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the path when it cannot be created or is not writable.
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self> {
        let dir = dir.into();
        if !dir.is_dir() {
            // symfony/lock's message, word for word ("exists" included): code that matches it
            // keeps working.
            fs::create_dir_all(&dir).map_err(|_| {
                Error::invalid_argument(format!(
                    "The FlockStore directory \"{}\" does not exists and cannot be created.",
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
        let mut dir_prefix = dir.into_os_string();
        if !dir_prefix.as_encoded_bytes().ends_with(b"/") {
            dir_prefix.push("/");
        }
        Ok(FlockStore { dir_prefix, name })
    }

    /// Where `key`'s lock file lives.
    pub fn path_for(&self, key: &Key) -> PathBuf {
        self.path_for_resource(key.resource())
    }

    /// Where the lock file of `resource` lives.
    fn path_for_resource(&self, resource: &[u8]) -> PathBuf {
        let mut name = String::with_capacity(72);
        push_lock_file_name(&mut name, resource);
        let mut path = OsString::with_capacity(self.dir_prefix.len() + name.len());
        path.push(&self.dir_prefix);
        path.push(name);
        PathBuf::from(path)
    }

    fn lock(&self, key: &mut Key, mode: Mode, blocking: bool) -> Result<()> {
        match key.take_state::<FlockHold>() {
            // Already held in the wanted mode: nothing to do.
            Some(hold) if hold.mode == mode => {
                key.set_state(hold);
                Ok(())
            }
            // Promotion or demotion on the same descriptor. On Linux the conversion is not atomic:
            // when it fails, the old lock is already gone, so the key holds nothing afterwards.
            Some(hold) => {
                let Some(lock_file) = hold.into_lock_file() else {
                    return self.lock_path(key, mode, blocking);
                };
                match flock(&lock_file.file, mode, blocking) {
                    Ok(()) => {
                        key.set_state(FlockHold::new(lock_file, mode));
                        Ok(())
                    }
                    Err(e) => Err(self.lock_error(key, e)),
                }
            }
            None => self.lock_path(key, mode, blocking),
        }
    }

    /// Locks the key's lock file, on the idle descriptor this process kept for it if there is one.
    /// The lock counts only when the file locked is still the one at the path: a lock on a file
    /// that was removed (a temp cleaner) or replaced excludes nobody, so it is dropped and the
    /// file at the path opened and locked instead.
    fn lock_path(&self, key: &mut Key, mode: Mode, blocking: bool) -> Result<()> {
        let name = flock_files::name(self.dir_prefix.as_encoded_bytes(), key.resource());
        let mut kept = flock_files::take(&name);
        for _ in 0..REPLACED_ATTEMPTS {
            let lock_file = match kept.take() {
                Some(lock_file) => lock_file,
                None => self.open(self.path_for(key), name.clone(), key)?,
            };
            match flock(&lock_file.file, mode, blocking) {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    flock_files::keep(lock_file);
                    return Err(Error::conflict(key.display_resource(), &self.name));
                }
                Err(e) => return Err(self.lock_error(key, e)),
            }
            match FileId::at(&lock_file.path) {
                Ok(Some(id)) if id == lock_file.id => {
                    key.set_state(FlockHold::new(lock_file, mode));
                    return Ok(());
                }
                Ok(_) => drop(FlockHold::new(lock_file, mode)),
                Err(e) => {
                    drop(FlockHold::new(lock_file, mode));
                    return Err(self.io_error("check", key, e));
                }
            }
        }
        Err(self.io_error(
            "keep",
            key,
            io::Error::other(format!(
                "it was removed or replaced {REPLACED_ATTEMPTS} times in a row while being locked"
            )),
        ))
    }

    fn lock_error(&self, key: &Key, e: TryLockError) -> Error {
        match e {
            TryLockError::WouldBlock => Error::conflict(key.display_resource(), &self.name),
            TryLockError::Error(e) => self.io_error("lock", key, e),
        }
    }

    /// Waits for the lock until `deadline` (`None`: until it is taken or the host interrupts the
    /// wait). A flock(2) that blocks cannot be cancelled when the
    /// deadline comes (a thread left blocked in it would take the lock later, for nobody, racing
    /// the next acquire), so a wait with a deadline retries without blocking, sleeping 1 ms at
    /// first and doubling up to 25 ms: no spinning, and at most 25 ms late after a release.
    /// Waits without a deadline block in the kernel.
    fn poll_until(
        &self,
        key: &mut Key,
        mode: Mode,
        deadline: Option<Instant>,
        report: &mut WaitReport,
    ) -> Result<bool> {
        poll(deadline, report, wait_backoff(), || {
            self.lock(key, mode, false)
        })
    }

    /// Opens (creating with mode 0666 when missing) the key's lock file at `path`, to be kept
    /// under `name`. A process out of descriptors first closes the lock files it keeps idle: a
    /// cache never takes a descriptor the process needs.
    fn open(&self, path: PathBuf, name: Vec<u8>, key: &Key) -> Result<LockFile> {
        let file = match open_lock_file(&path) {
            Err(e) if out_of_descriptors(&e) && flock_files::close_idle() > 0 => {
                open_lock_file(&path)
            }
            other => other,
        }
        .map_err(|e| self.open_error(&path, key, e))?;
        let id = FileId::of(&file).map_err(|e| self.io_error("open", key, e))?;
        Ok(LockFile {
            file,
            id,
            path,
            name,
        })
    }

    fn open_error(&self, path: &Path, key: &Key, e: io::Error) -> Error {
        if e.raw_os_error() == Some(libc::ELOOP) {
            return self.io_error(
                "open",
                key,
                io::Error::other(format!(
                    "{} is a symbolic link, which a lock file never is (someone who can write the \
                     lock directory planted it?): it is not followed; remove it",
                    path.display()
                )),
            );
        }
        self.io_error("open", key, e)
    }

    /// The fencing token of `key`'s exclusive hold: drawn from the counter in the lock file on
    /// first request (under the exclusive lock, so holders draw in the order they held it), never
    /// below the clock (`flock_fence`). A hold whose file is no longer the one at its path (it
    /// was removed or replaced) holds nothing, and bumps nothing.
    fn draw_fence(&self, key: &mut Key) -> Result<Option<u64>> {
        let next = match key.state_mut::<FlockHold>() {
            Some(hold) if hold.mode == Mode::Exclusive => match hold.lock_file.as_mut() {
                Some(lock_file) => match on_its_path(lock_file) {
                    Ok(true) => bump_counter(&mut lock_file.file, micros_since_epoch()),
                    Ok(false) => Err(io::Error::other(
                        "the lock file was removed or replaced while held: this key no longer \
                         holds the lock",
                    )),
                    Err(e) => Err(e),
                },
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        next.map(Some)
            .map_err(|e| self.io_error("draw a fencing token from", key, e))
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

/// The pauses of a wait with a deadline: 1 ms, doubling up to 25 ms (see `poll_until`).
fn wait_backoff() -> impl FnMut() -> Duration {
    let mut pause = WAIT_BACKOFF_START / 2;
    move || {
        pause = (pause * 2).min(WAIT_BACKOFF_MAX);
        pause
    }
}

/// Flags of every open of a lock file: never through a symbolic link (ELOOP instead), and never
/// blocking in open(2) (a FIFO planted at the path is refused after it opens, not waited on).
const NO_FOLLOW: i32 = libc::O_NOFOLLOW | libc::O_NONBLOCK;

/// Opens an existing lock file, read-write or read-only, never through a symbolic link.
fn open_existing(path: &Path, write: bool) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(NO_FOLLOW)
        .open(path)
}

/// Opens the lock file at `path`, read-write (read-only when another user made it without giving
/// us write access: flock works on that too), creating it with mode 0666 when missing. Never
/// through a symbolic link, and never anything but a regular file: the directory is often
/// writable by others, and a planted link would have the fencing counter written into its target.
fn open_lock_file(path: &Path) -> io::Result<File> {
    let file = match open_existing(path, true) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => open_existing(path, false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => create_lock_file(path),
        other => other,
    }?;
    if file.metadata()?.file_type().is_file() {
        return Ok(file);
    }
    Err(io::Error::other(
        "it is not a regular file (a FIFO, socket or device planted in the lock directory?): \
         remove it",
    ))
}

/// Creates the lock file; one that another process made meanwhile is opened instead.
fn create_lock_file(path: &Path) -> io::Result<File> {
    let created = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(NO_FOLLOW)
        .open(path);
    match created {
        // Explicit chmod, on the descriptor (the path could be swapped for a link meanwhile):
        // the umask would otherwise keep other users out.
        Ok(file) => {
            file.set_permissions(fs::Permissions::from_mode(LOCK_FILE_MODE))?;
            Ok(file)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            open_existing(path, true).or_else(|_| open_existing(path, false))
        }
        Err(e) => Err(e),
    }
}

/// Whether `lock_file` is still the file at its path.
fn on_its_path(lock_file: &LockFile) -> io::Result<bool> {
    Ok(FileId::at(&lock_file.path)? == Some(lock_file.id))
}

/// The wall clock in microseconds since the Unix epoch (0 before it): the fencing counter's floor.
fn micros_since_epoch() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_micros()).unwrap_or(u64::MAX)
        })
}

/// EMFILE (this process) or ENFILE (the system): no descriptor to be had.
fn out_of_descriptors(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
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

    fn save(&self, key: &mut Key, mode: Mode, _ttl: Option<Ttl>) -> Result<()> {
        self.lock(key, mode, false)
    }

    fn put_off_expiration(&self, key: &mut Key, _ttl: Ttl) -> Result<()> {
        // flock locks never expire, so the key keeps no lifetime (as in symfony/lock).
        crate::store::check_ownership(self, key)
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        let Some(lock_file) = key
            .take_state::<FlockHold>()
            .and_then(FlockHold::into_lock_file)
        else {
            return Ok(());
        };
        FileExt::unlock(&lock_file.file).map_err(|e| self.io_error("unlock", key, e))?;
        flock_files::keep(lock_file);
        Ok(())
    }

    /// Held while the key's file is still the one at its path: a holder whose lock file was
    /// removed (a temp cleaner) or replaced excludes nobody any more.
    fn exists(&self, key: &Key) -> Result<bool> {
        match key
            .state::<FlockHold>()
            .and_then(|hold| hold.lock_file.as_ref())
        {
            Some(lock_file) => on_its_path(lock_file).map_err(|e| self.io_error("check", key, e)),
            None => Ok(false),
        }
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities {
            blocking: Some(self),
            fencing: Some(self),
            inspecting: Some(self),
            semaphores: Some(self),
            ..Capabilities::default()
        }
    }
}

impl BlockingStore for FlockStore {
    fn wait(
        &self,
        key: &mut Key,
        mode: Mode,
        _ttl: Option<Ttl>,
        deadline: Option<Instant>,
        report: &mut WaitReport,
    ) -> Result<bool> {
        match deadline {
            // Blocking in the kernel cannot be interrupted (flock(2) is restarted after a signal
            // handler): while the host may need its turn, a wait without a deadline polls too.
            None if crate::interrupt::watched() => self.poll_until(key, mode, None, report),
            None => self.lock(key, mode, true).map(|()| true),
            Some(deadline) => self.poll_until(key, mode, Some(deadline), report),
        }
    }
}

impl FencingStore for FlockStore {
    fn draw_fencing_token(&self, key: &mut Key) -> Result<Option<u64>> {
        self.draw_fence(key)
    }
}

/// The kernel's view of a lock file (`flock_holders`). A forced release removes the file: its
/// holders keep a lock on a file that is no longer at the path, which Deadbolt holders notice at
/// their next call (the lock is lost, as on a file a temp cleaner removed); the next taker makes a
/// new file, whose fencing counter starts at the clock, above every token drawn before. A
/// symfony/lock holder is not told: it keeps working under a lock that excludes nobody.
impl InspectingStore for FlockStore {
    fn inspect(&self, resource: &[u8]) -> Result<LockState> {
        let path = self.path_for_resource(resource);
        let read = || match FileId::at(&path)? {
            Some(id) => flock_holders::state_of(&id.proc_locks_name()),
            None => Ok(LockState::default()),
        };
        read().map_err(|e| self.resource_error("inspect", resource, e))
    }

    /// The file goes whether or not the kernel listed a holder a moment before (one may have
    /// come since): removing a lock file nobody holds costs only its next taker a new file.
    fn force_release(&self, resource: &[u8]) -> Result<usize> {
        let holders = self.inspect(resource)?.holders.len();
        match fs::remove_file(self.path_for_resource(resource)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(self.resource_error("remove", resource, e)),
        }
        crate::metrics::count(crate::metrics::Counter::ForceReleased, 1);
        Ok(holders)
    }
}

impl FlockStore {
    fn resource_error(&self, action: &str, resource: &[u8], e: io::Error) -> Error {
        Error::storage(
            format!(
                "Cannot {action} the lock file of the \"{}\" lock in {}: {e}.",
                display_resource(resource),
                self.name
            ),
            e,
        )
    }
}
