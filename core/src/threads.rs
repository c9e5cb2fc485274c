//! The engine's own threads beside PHP's: what a process makes once is made before a thread-safe PHP starts its
//! threads, and a thread of ours never takes a signal meant for PHP.
//!
//! Each of these values is made on first use behind a `Once` or an atomic pointer, which is safe from any thread;
//! but helgrind and DRD cannot see either hand-off, and the thread suite would read every first use racing another
//! thread's as a data race. Made here, on the one thread that loads the module (PHP's MINIT), each is written
//! before PHP creates a thread, and every thread only reads it. The engine stays correct without this (a forked
//! child makes its own per-process values again, on first use).

/// Makes the fork hook and epoch, the monotonic origin, the per-process tables (metrics, refresher registry,
/// idle lock files, token generator, native connections), the Lua scripts and their digests, the TLS crypto
/// provider, and runs the CPU feature checks of SHA-256 (sha2 decides on first use).
pub fn set_up_before_threads() {
    crate::sync::set_up();
    crate::process::epoch();
    crate::lifetime::set_up();
    crate::metrics::set_up();
    crate::refresher::set_up();
    crate::token::set_up();
    crate::holder::set_up();
    crate::store::set_up();
}

/// Runs `spawn` (a thread start) with the asynchronous signals blocked in the calling thread, then gives it its
/// mask back: the new thread inherits the blocked mask. A thread of ours runs no PHP, yet the kernel hands a
/// process-directed signal to any thread that does not block it: a signal PHP code blocked (`pcntl_sigprocmask`)
/// would be taken at once by our thread, running pcntl's handler outside PHP, and under a thread-safe PHP, where
/// only PHP's threads have its handlers, end the process. The faults a thread's own code raises (SIGSEGV, SIGBUS,
/// SIGFPE, SIGILL) stay deliverable to it.
pub(crate) fn without_signals<R>(spawn: impl FnOnce() -> R) -> R {
    let mut blocked = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    let mut previous = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigfillset and sigdelset initialise and edit the set they are given; pthread_sigmask reads one set
    // and writes the other, on the calling thread only.
    let changed = unsafe {
        libc::sigfillset(blocked.as_mut_ptr());
        for fault in [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL] {
            libc::sigdelset(blocked.as_mut_ptr(), fault);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, blocked.as_ptr(), previous.as_mut_ptr()) == 0
    };
    let result = spawn();
    if changed {
        // SAFETY: `previous` was written by the successful call above.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, previous.as_ptr(), std::ptr::null_mut())
        };
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mask of the calling thread, as a set of signal numbers among the ones checked.
    fn blocked(signals: &[i32]) -> Vec<i32> {
        let mut mask = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: reads the calling thread's mask into `mask`.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), mask.as_mut_ptr()) };
        // SAFETY: written by the call above.
        let mask = unsafe { mask.assume_init() };
        signals
            .iter()
            .copied()
            .filter(|&s| unsafe { libc::sigismember(&mask, s) } == 1)
            .collect()
    }

    #[test]
    fn a_thread_started_without_signals_blocks_them_and_its_starter_gets_its_mask_back() {
        let checked = [libc::SIGUSR1, libc::SIGTERM, libc::SIGALRM, libc::SIGSEGV];
        let before = blocked(&checked);
        let inside = without_signals(|| std::thread::spawn(move || blocked(&checked)))
            .join()
            .unwrap_or_default();
        assert_eq!(inside, vec![libc::SIGUSR1, libc::SIGTERM, libc::SIGALRM]);
        assert_eq!(blocked(&checked), before);
    }
}
