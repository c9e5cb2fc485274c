//! Per-process state, and the one rule for what a `fork()` leaves behind.
//!
//! `fork()` copies the whole address space: every connection, open lock file, registry and counter
//! of the parent appears in the child, sharing sockets and file descriptions with the parent, and
//! possibly with a mutex that the parent's refresher thread held at that instant (threads do not
//! survive `fork()`). Using any of it in the child could unlock, refresh or release what the
//! parent holds, or deadlock. So each process lives in an **epoch**: a number that a
//! `pthread_atfork` child handler bumps, and that state made by this process records. Everything
//! per-process goes through [`PerProcess`]: in a new epoch it makes a fresh value, and the
//! inherited one is leaked, never dropped (dropping could close the parent's TLS session or
//! unlock its file, and its mutex may be held forever).

use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::Once;

use crate::sync::{AtomicBool, AtomicPtr, AtomicU64};

/// The current epoch; 0 before the fork hook is in place.
static EPOCH: AtomicU64 = AtomicU64::new(0);
static FORK_HOOK: Once = Once::new();
/// Set when the fork hook could not be installed: then the pid stands in for the epoch.
static NO_HOOK: AtomicBool = AtomicBool::new(false);
/// The epoch in which the hook was installed (MINIT: the process that loaded the module).
static FIRST: AtomicU64 = AtomicU64::new(0);

/// Which process (counting forks) is running: different in a forked child than in its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Epoch(u64);

/// The epoch of the calling process.
pub fn epoch() -> Epoch {
    match EPOCH.load(Ordering::Relaxed) {
        0 => install_hook(),
        _ if NO_HOOK.load(Ordering::Relaxed) => Epoch(u64::from(std::process::id())),
        epoch => Epoch(epoch),
    }
}

fn install_hook() -> Epoch {
    FORK_HOOK.call_once(|| {
        // SAFETY: registers a handler with no parent-side parts; the child handler is
        // async-signal-safe (one atomic add). A failure (ENOMEM) leaves the pid as the epoch.
        let rc = unsafe { libc::pthread_atfork(None, None, Some(next_epoch_in_child)) };
        if rc != 0 {
            NO_HOOK.store(true, Ordering::Relaxed);
            FIRST.store(u64::from(std::process::id()), Ordering::Relaxed);
        } else {
            FIRST.store(1, Ordering::Relaxed);
        }
        EPOCH.store(1, Ordering::Relaxed);
    });
    epoch()
}

/// Whether this process was forked since the fork hook was installed (at MINIT, or on the first
/// call to [`epoch`]): `false` in the process that loaded the module, `true` in every child it
/// forked (php-fpm's workers too: their master loads the module and then forks them). A PHP object
/// of a process for which this is `false` was made in that process.
pub fn forked_since_load() -> bool {
    epoch() != Epoch(FIRST.load(Ordering::Relaxed))
}

extern "C" fn next_epoch_in_child() {
    EPOCH.fetch_add(1, Ordering::Relaxed);
}

/// A value that belongs to one process: made on first use in each epoch; in a forked child the
/// parent's value is leaked untouched and a fresh one made. Lock-free, so a fork at any instant
/// (even while another thread reads it) leaves the child a usable cell.
pub struct PerProcess<T> {
    current: AtomicPtr<Owned<T>>,
}

struct Owned<T> {
    epoch: Epoch,
    value: T,
}

impl<T> PerProcess<T> {
    /// An empty cell (usable in a `static`).
    pub const fn new() -> Self {
        PerProcess {
            current: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// This process's value, if it made one.
    pub fn get(&self) -> Option<&T> {
        // SAFETY: the pointer is null or a leaked box that is freed only by `drop`, which
        // cannot run while `&self` is borrowed.
        let owned = unsafe { self.current.load(Ordering::Acquire).as_ref() }?;
        (owned.epoch == epoch()).then_some(&owned.value)
    }

    /// This process's value, made by `init` when there is none yet in this epoch.
    pub fn get_or_init(&self, init: impl FnOnce() -> T) -> &T {
        let seen = self.current.load(Ordering::Acquire);
        // SAFETY: as in `get`.
        if let Some(owned) = unsafe { seen.as_ref() } {
            if owned.epoch == epoch() {
                return &owned.value;
            }
        }
        let fresh = Box::into_raw(Box::new(Owned {
            epoch: epoch(),
            value: init(),
        }));
        match self
            .current
            .compare_exchange(seen, fresh, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {
                // The inherited value (if any) is kept, untouched: it belongs to the parent.
                keep_forever(seen.cast());
                // SAFETY: `fresh` is the box just installed, alive until `drop`.
                unsafe { &(*fresh).value }
            }
            Err(winner) => {
                // Another thread of this process installed one first (only threads of this
                // process can, so it is this epoch's): ours was never shared.
                // SAFETY: `fresh` came from Box::into_raw above and was not published; `winner`
                // is a live box, freed only by `drop`.
                drop(unsafe { Box::from_raw(fresh) });
                unsafe { &(*winner).value }
            }
        }
    }
}

impl<T> Default for PerProcess<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Drop for PerProcess<T> {
    fn drop(&mut self) {
        let owned = *self.current.get_mut();
        // SAFETY: a box made in `get_or_init`; freed here only when this process made it.
        if let Some(value) = unsafe { owned.as_ref() } {
            if value.epoch == epoch() {
                drop(unsafe { Box::from_raw(owned) });
            } else {
                keep_forever(owned.cast());
            }
        }
    }
}

/// One inherited allocation kept for the life of the process.
struct Kept {
    /// Only held, never read: holding it is the point.
    #[allow(dead_code)]
    allocation: *mut (),
    next: *mut Kept,
}

/// Inherited values, never dropped, and kept reachable (a memory checker would otherwise report
/// each as lost in every forked child): a push-only list, lock-free like the cells themselves.
static KEPT: AtomicPtr<Kept> = AtomicPtr::new(ptr::null_mut());

/// Keeps `allocation` (a value from another epoch, or null) without ever freeing or using it.
fn keep_forever(allocation: *mut ()) {
    if allocation.is_null() {
        return;
    }
    let node = Box::into_raw(Box::new(Kept {
        allocation,
        next: ptr::null_mut(),
    }));
    let mut head = KEPT.load(Ordering::Acquire);
    loop {
        // SAFETY: `node` is ours until it is published by the exchange below.
        unsafe { (*node).next = head };
        match KEPT.compare_exchange(head, node, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return,
            Err(now) => head = now,
        }
    }
}

// SAFETY: the cell hands out `&T` to any thread and drops `T` on the dropping thread.
unsafe impl<T: Send + Sync> Sync for PerProcess<T> {}
// SAFETY: as above; moving the cell moves ownership of its `T`.
unsafe impl<T: Send> Send for PerProcess<T> {}

impl<T> std::fmt::Debug for PerProcess<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PerProcess")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Runs `child` in a forked process; true when it returned true.
    fn in_child(child: impl FnOnce() -> bool) -> bool {
        let mut fds = [0i32; 2];
        // SAFETY: plain pipe/fork/write/read/waitpid; the child only computes, writes and _exits.
        unsafe {
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                let ok = u8::from(child());
                libc::write(fds[1], (&raw const ok).cast(), 1);
                libc::_exit(0);
            }
            let mut ok = 0u8;
            assert_eq!(libc::read(fds[0], (&raw mut ok).cast(), 1), 1);
            libc::waitpid(pid, ptr::null_mut(), 0);
            ok == 1
        }
    }

    #[test]
    fn the_epoch_is_stable_in_a_process_and_new_in_a_child() {
        let parent = epoch();
        assert_eq!(epoch(), parent);
        assert!(in_child(|| epoch() != parent));
        assert_eq!(epoch(), parent);
    }

    #[test]
    fn a_child_gets_a_fresh_value_and_never_drops_the_inherited_one() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        struct Counted(u32);
        impl Drop for Counted {
            fn drop(&mut self) {
                DROPS.fetch_add(1, Ordering::SeqCst);
            }
        }
        let mut cell = PerProcess::new();
        assert!(cell.get().is_none());
        assert_eq!(cell.get_or_init(|| Counted(1)).0, 1);
        assert_eq!(cell.get_or_init(|| Counted(2)).0, 1);
        assert!(in_child(|| {
            let before = DROPS.load(Ordering::SeqCst);
            let fresh = cell.get().is_none() && cell.get_or_init(|| Counted(3)).0 == 3;
            drop(std::mem::take(&mut cell));
            // Only the child's own value was dropped.
            fresh && DROPS.load(Ordering::SeqCst) == before + 1
        }));
        assert_eq!(cell.get().map(|c| c.0), Some(1));
    }
}
