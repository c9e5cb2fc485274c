//! The System V semaphore sets of PHP's sysvsem extension (`sem_get()`, `sem_acquire()`,
//! `sem_remove()`), spoken from Rust so that a Deadbolt process and a PHP process using sysvsem
//! (symfony/lock's `SemaphoreStore`) share one set per key and exclude each other.
//!
//! PHP's sets have three semaphores: the lock itself ([`SEM`]), a count of the processes using the
//! set ([`USAGE`]) and a guard ([`SETVAL`]) under which the first user gives a new set its value
//! (the kernel creates semaphores at 0, and a lock taken by lowering [`SEM`] starts at 1). Every
//! change is made with `SEM_UNDO`: the kernel reverts it when the process ends, so a killed
//! holder frees its lock. A forked child inherits no undo record, so its end frees nothing of
//! its parent's.
//!
//! Removing a set (what symfony/lock's release does) wakes everyone blocked on it with `EIDRM`;
//! they join the set that the next `semget()` makes.

use std::io;
use std::time::Duration;

use libc::{c_int, c_short, key_t, sembuf};

/// The semaphore that is the lock: 1 when free, 0 when held.
const SEM: u16 = 0;
/// How many processes use the set; the first one sets [`SEM`] to 1.
const USAGE: u16 = 1;
/// Held (1) while a process joins the set.
const SETVAL: u16 = 2;
/// PHP's `sem_get()` default permissions: any user may lock (symfony/lock passes no others).
const PERMISSIONS: c_int = 0o666;
/// The one value PHP's `sem_get()` gives [`SEM`] by default (`$max_acquire = 1`).
const MAX_ACQUIRE: c_int = 1;

extern "C" {
    // In glibc and musl since long ago; the libc crate does not declare it.
    fn semtimedop(
        semid: c_int,
        sops: *mut sembuf,
        nsops: libc::size_t,
        timeout: *const libc::timespec,
    ) -> c_int;
}

/// How an attempt to take the lock went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Take {
    Taken,
    /// Held by someone else (the wait, if any, timed out).
    Busy,
    /// A signal came during the wait.
    Interrupted,
    /// The set was removed (its holder released it): join the set that is there now.
    Removed,
}

fn op(num: u16, value: c_short, flags: c_int) -> sembuf {
    sembuf {
        sem_num: num,
        sem_op: value,
        // The flags fit in a short (IPC_NOWAIT and SEM_UNDO are 0o4000 and 0x1000).
        sem_flg: flags as c_short,
    }
}

/// One semop(2); a signal restarts it.
fn semop_restarting(semid: c_int, ops: &mut [sembuf]) -> io::Result<()> {
    loop {
        // SAFETY: `ops` is a live slice of sembufs, its length passed with it.
        if unsafe { libc::semop(semid, ops.as_mut_ptr(), ops.len()) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Whether `e` says the set is gone (removed since we learnt its id).
pub(crate) fn is_removed(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EIDRM | libc::EINVAL))
}

/// Joins the set of `ipc_key` as PHP's `sem_get()` does (creating it when missing): counts this
/// process as a user, and gives a set it is the first user of its value. Returns the set's id, or
/// how waiting for the set's guard ended when it stayed taken for `guard_wait` (a process stopped
/// while joining holds it; PHP would wait for ever). The caller leaves again ([`leave`]) unless it
/// takes the lock.
pub(crate) fn join(ipc_key: key_t, guard_wait: Duration) -> io::Result<Result<c_int, Take>> {
    // SAFETY: plain syscall on integers.
    let semid = unsafe { libc::semget(ipc_key, 3, PERMISSIONS | libc::IPC_CREAT) };
    if semid < 0 {
        return Err(io::Error::last_os_error());
    }
    // Wait for the guard to be free and take it, counting this process as a user.
    let guard = [
        op(SETVAL, 0, 0),
        op(SETVAL, 1, libc::SEM_UNDO),
        op(USAGE, 1, libc::SEM_UNDO),
    ];
    match timed_semop(semid, guard, Some(guard_wait))? {
        Take::Taken => {}
        other => return Ok(Err(other)),
    }
    let initialised = first_user_sets_value(semid);
    let released = semop_restarting(semid, &mut [op(SETVAL, -1, libc::SEM_UNDO)]);
    initialised.and(released).map(|()| Ok(semid))
}

/// The first user of a set sets the lock's value (under the guard, so no one else does at once).
fn first_user_sets_value(semid: c_int) -> io::Result<()> {
    // SAFETY: GETVAL and SETVAL take an int (SETVAL's union semun holds it as its first member).
    let users = unsafe { libc::semctl(semid, c_int::from(USAGE), libc::GETVAL) };
    if users < 0 {
        return Err(io::Error::last_os_error());
    }
    if users == 1 && unsafe { libc::semctl(semid, c_int::from(SEM), libc::SETVAL, MAX_ACQUIRE) } < 0
    {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Stops counting this process as a user of `semid` (after a failed take). A set removed
/// meanwhile needs nothing.
pub(crate) fn leave(semid: c_int) {
    let _ = semop_restarting(
        semid,
        &mut [op(USAGE, -1, libc::SEM_UNDO | libc::IPC_NOWAIT)],
    );
}

/// Takes the lock of `semid`: at once (`wait` `None`), or waiting in the kernel for up to `wait`.
pub(crate) fn take(semid: c_int, wait: Option<Duration>) -> io::Result<Take> {
    let flags = match wait {
        None => libc::SEM_UNDO | libc::IPC_NOWAIT,
        Some(_) => libc::SEM_UNDO,
    };
    timed_semop(semid, [op(SEM, -1, flags)], wait)
}

/// One semtimedop(2) of `ops`, waiting up to `timeout` (`None`: as the flags say). Busy when it
/// would block or timed out; Interrupted by a signal; Removed when the set is gone.
fn timed_semop<const N: usize>(
    semid: c_int,
    mut ops: [sembuf; N],
    timeout: Option<Duration>,
) -> io::Result<Take> {
    let timeout = timeout.map(|wait| libc::timespec {
        tv_sec: libc::time_t::try_from(wait.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: wait.subsec_nanos().into(),
    });
    let timeout_ptr = timeout
        .as_ref()
        .map_or(std::ptr::null(), std::ptr::from_ref);
    // SAFETY: N live sembufs; the timeout is null or points to a live timespec.
    if unsafe { semtimedop(semid, ops.as_mut_ptr(), N, timeout_ptr) } == 0 {
        return Ok(Take::Taken);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN) => Ok(Take::Busy),
        Some(libc::EINTR) => Ok(Take::Interrupted),
        _ if is_removed(&e) => Ok(Take::Removed),
        _ => Err(e),
    }
}

/// The id of the set of `ipc_key` now, `None` when there is none.
pub(crate) fn current(ipc_key: key_t) -> io::Result<Option<c_int>> {
    // SAFETY: plain syscall on integers.
    let semid = unsafe { libc::semget(ipc_key, 0, 0) };
    if semid >= 0 {
        return Ok(Some(semid));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ENOENT) {
        Ok(None)
    } else {
        Err(e)
    }
}

/// Removes the set `semid` if it is still the set of `ipc_key` (an id the kernel reuses for
/// another key is left alone). Everyone blocked on it wakes with `EIDRM`. False when it was gone.
pub(crate) fn remove(semid: c_int, ipc_key: key_t) -> io::Result<bool> {
    // SAFETY: semid_ds is plain data; IPC_STAT fills it.
    let mut stat: libc::semid_ds = unsafe { std::mem::zeroed() };
    // SAFETY: IPC_STAT takes a pointer to a semid_ds (union semun's `buf`).
    if unsafe { libc::semctl(semid, 0, libc::IPC_STAT, std::ptr::from_mut(&mut stat)) } < 0 {
        let e = io::Error::last_os_error();
        return if is_removed(&e) { Ok(false) } else { Err(e) };
    }
    if stat.sem_perm.__key != ipc_key {
        return Ok(false);
    }
    // SAFETY: plain syscall on integers.
    if unsafe { libc::semctl(semid, 0, libc::IPC_RMID) } < 0 {
        let e = io::Error::last_os_error();
        return if is_removed(&e) { Ok(false) } else { Err(e) };
    }
    Ok(true)
}

/// What the kernel says about a set's lock: held or not, the pid of the last process that took
/// or gave it (the holder's, while held), and how many processes wait for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) held: bool,
    pub(crate) last_pid: u32,
    pub(crate) waiting: usize,
}

/// See [`Seen`].
pub(crate) fn seen(semid: c_int) -> io::Result<Seen> {
    let get = |command: c_int| {
        // SAFETY: GETVAL, GETPID and GETNCNT take no fourth argument.
        let value = unsafe { libc::semctl(semid, c_int::from(SEM), command) };
        if value < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(value)
        }
    };
    Ok(Seen {
        held: get(libc::GETVAL)? == 0,
        last_pid: u32::try_from(get(libc::GETPID)?).unwrap_or(0),
        waiting: usize::try_from(get(libc::GETNCNT)?).unwrap_or(0),
    })
}
