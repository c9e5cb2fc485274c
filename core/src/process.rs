//! Process identity. State that belongs to a process (an open lock file, ownership of a lock)
//! records the pid that made it; a different pid means it was inherited through `fork()`, and
//! inherited state is inert: it is never used to unlock or release what the parent holds.
//!
//! The pid is asked for several times per lock operation, and `getpid()` is a real system call, so
//! it is cached. A `pthread_atfork` child handler clears the cache; the handler only stores to an
//! atomic (it never calls into PHP or allocates), and the child reads its own pid on next use.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Once;

/// The cached pid, 0 when unknown (never a real pid of ours).
static PID: AtomicU32 = AtomicU32::new(0);
static FORK_HOOK: Once = Once::new();

/// The pid of the calling process, correct in a child after `fork()`.
pub fn current_pid() -> u32 {
    match PID.load(Ordering::Relaxed) {
        0 => refresh(),
        pid => pid,
    }
}

fn refresh() -> u32 {
    // The hook goes in before the first pid is cached, so no fork can slip between the two.
    FORK_HOOK.call_once(|| {
        // SAFETY: registers a handler with no parent-side parts; the child handler is
        // async-signal-safe (one atomic store). A failure (ENOMEM) leaves the cache unused.
        let rc = unsafe { libc::pthread_atfork(None, None, Some(forget_pid_in_child)) };
        if rc != 0 {
            NO_CACHE.store(true, Ordering::Relaxed);
        }
    });
    let pid = std::process::id();
    if !NO_CACHE.load(Ordering::Relaxed) {
        PID.store(pid, Ordering::Relaxed);
    }
    pid
}

/// Set when the fork hook could not be installed: then every call asks the kernel.
static NO_CACHE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn forget_pid_in_child() {
    PID.store(0, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cached_pid_is_ours() {
        assert_eq!(current_pid(), std::process::id());
        assert_eq!(current_pid(), std::process::id());
    }

    #[test]
    fn a_forked_child_sees_its_own_pid() {
        let parent = current_pid();
        let mut fds = [0i32; 2];
        // SAFETY: plain pipe/fork/write/read/waitpid; the child only writes and _exits.
        unsafe {
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            let child = libc::fork();
            assert!(child >= 0);
            if child == 0 {
                let ok: u8 =
                    u8::from(current_pid() == std::process::id() && current_pid() != parent);
                libc::write(fds[1], (&raw const ok).cast(), 1);
                libc::_exit(0);
            }
            let mut ok = 0u8;
            assert_eq!(libc::read(fds[0], (&raw mut ok).cast(), 1), 1);
            libc::waitpid(child, std::ptr::null_mut(), 0);
            assert_eq!(ok, 1, "the child saw its parent's pid");
        }
        assert_eq!(current_pid(), parent);
    }
}
