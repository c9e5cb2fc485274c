//! The mutex, condition variable and atomics that state shared by threads lives behind, told to valgrind's
//! thread checkers.
//!
//! std's locks wait on futexes, which helgrind and DRD do not see: every access under a std mutex looks to them
//! like a race, and their reports on PHP threads would drown a real one. Built with the `helgrind` feature (the
//! thread suite's checked build), each lock and unlock is announced to valgrind as a reader-writer lock taken for
//! writing (`ANNOTATE_RWLOCK_ACQUIRED` / `RELEASED`, which both tools understand), and each operation on an
//! atomic as a synchronisation edge (`ANNOTATE_HAPPENS_AFTER` before it, `ANNOTATE_HAPPENS_BEFORE` after it: every
//! operation on one atomic is ordered after the ones before it, as seq-cst atomics are; a lock announced around
//! an atomic was not one, and helgrind saw it "granted while held" when two threads counted at once); in every
//! other build the announcements are empty functions and the types are std's.
//!
//! No poisoning: every value behind these locks is changed by single steps that leave it usable, so a panic in
//! another thread while it held one leaves nothing half-done to refuse.

use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering;
use std::sync::PoisonError;
use std::time::Duration;

/// A mutual-exclusion lock whose guard never reports poisoning.
#[derive(Default)]
pub struct Mutex<T: ?Sized> {
    inner: std::sync::Mutex<T>,
}

/// Holds a [`Mutex`] until dropped.
pub struct MutexGuard<'a, T: ?Sized> {
    /// Dropped by our `Drop`, after the release is announced; taken out by a [`Condvar`]'s wait.
    guard: ManuallyDrop<std::sync::MutexGuard<'a, T>>,
    lock: &'a Mutex<T>,
}

impl<T> Mutex<T> {
    pub const fn new(value: T) -> Self {
        Self {
            inner: std::sync::Mutex::new(value),
        }
    }
}

impl<T: ?Sized> Mutex<T> {
    pub fn lock(&self) -> MutexGuard<'_, T> {
        let guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        checker::acquired(self);
        MutexGuard {
            guard: ManuallyDrop::new(guard),
            lock: self,
        }
    }
}

impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        // Announced before the real unlock: another thread's acquire is seen after it.
        checker::released(self.lock);
        // SAFETY: dropped once, here; a wait that took the std guard out never runs this `drop`.
        unsafe { ManuallyDrop::drop(&mut self.guard) };
    }
}

/// A condition variable for a [`Mutex`]'s guard.
#[derive(Default)]
pub struct Condvar {
    inner: std::sync::Condvar,
}

impl Condvar {
    /// Gives the lock back until notified, then takes it again.
    pub fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.wait_with(guard, |inner| {
            self.inner
                .wait(inner)
                .unwrap_or_else(PoisonError::into_inner)
        })
    }

    /// As [`Condvar::wait`], for at most `timeout`.
    pub fn wait_timeout<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: Duration,
    ) -> MutexGuard<'a, T> {
        self.wait_with(guard, |inner| {
            self.inner
                .wait_timeout(inner, timeout)
                .unwrap_or_else(PoisonError::into_inner)
                .0
        })
    }

    fn wait_with<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        wait: impl FnOnce(std::sync::MutexGuard<'a, T>) -> std::sync::MutexGuard<'a, T>,
    ) -> MutexGuard<'a, T> {
        let lock = guard.lock;
        // Our guard is forgotten, its std guard taken out: the wait gives the lock back and takes it again.
        let mut guard = ManuallyDrop::new(guard);
        // SAFETY: taken once; the forgotten guard never drops it again.
        let inner = unsafe { ManuallyDrop::take(&mut guard.guard) };
        checker::released(lock);
        let inner = wait(inner);
        checker::acquired(lock);
        MutexGuard {
            guard: ManuallyDrop::new(inner),
            lock,
        }
    }

    pub fn notify_one(&self) {
        self.inner.notify_one();
    }
}

/// Atomics as the thread checkers must see them: each operation one indivisible step, ordered with every other
/// operation on the same atomic (they see the instructions as plain loads and stores, and would report every pair
/// of threads using one atomic as a race). Each operation is announced as a tiny critical section of a lock at the
/// atomic's address; without the `helgrind` feature these are std's atomics, nothing added.
macro_rules! checked_atomic {
    ($(#[$doc:meta])* $name:ident, $value:ty) => {
        $(#[$doc])*
        // Transparent: an array of them may be laid over shared memory (the metrics file, `metrics/shared.rs`).
        #[derive(Debug, Default)]
        #[repr(transparent)]
        pub struct $name(std::sync::atomic::$name);

        impl $name {
            pub const fn new(value: $value) -> Self {
                Self(std::sync::atomic::$name::new(value))
            }

            fn step<R>(&self, op: impl FnOnce(&std::sync::atomic::$name) -> R) -> R {
                checker::before_atomic(self);
                let result = op(&self.0);
                checker::after_atomic(self);
                result
            }

            pub fn load(&self, order: Ordering) -> $value {
                self.step(|a| a.load(order))
            }

            pub fn store(&self, value: $value, order: Ordering) {
                self.step(|a| a.store(value, order));
            }
        }
    };
}

checked_atomic!(
    /// std's `AtomicBool`, seen by the thread checkers.
    AtomicBool,
    bool
);
checked_atomic!(
    /// std's `AtomicU64`, seen by the thread checkers.
    AtomicU64,
    u64
);
checked_atomic!(
    /// std's `AtomicUsize`, seen by the thread checkers.
    AtomicUsize,
    usize
);

macro_rules! checked_swap {
    ($name:ident, $value:ty) => {
        impl $name {
            pub fn swap(&self, value: $value, order: Ordering) -> $value {
                self.step(|a| a.swap(value, order))
            }
        }
    };
}
checked_swap!(AtomicBool, bool);
checked_swap!(AtomicU64, u64);

impl AtomicU64 {
    pub fn fetch_add(&self, value: u64, order: Ordering) -> u64 {
        self.step(|a| a.fetch_add(value, order))
    }
}

/// std's `AtomicPtr`, seen by the thread checkers.
#[derive(Debug)]
pub struct AtomicPtr<T>(std::sync::atomic::AtomicPtr<T>);

impl<T> AtomicPtr<T> {
    pub const fn new(value: *mut T) -> Self {
        Self(std::sync::atomic::AtomicPtr::new(value))
    }

    fn step<R>(&self, op: impl FnOnce(&std::sync::atomic::AtomicPtr<T>) -> R) -> R {
        checker::before_atomic(self);
        let result = op(&self.0);
        checker::after_atomic(self);
        result
    }

    pub fn load(&self, order: Ordering) -> *mut T {
        self.step(|a| a.load(order))
    }

    pub fn store(&self, value: *mut T, order: Ordering) {
        self.step(|a| a.store(value, order));
    }

    pub fn compare_exchange(
        &self,
        current: *mut T,
        new: *mut T,
        success: Ordering,
        failure: Ordering,
    ) -> Result<*mut T, *mut T> {
        self.step(|a| a.compare_exchange(current, new, success, failure))
    }

    /// The value, through exclusive access: no other thread can be using the atomic, nothing to announce.
    pub fn get_mut(&mut self) -> &mut *mut T {
        self.0.get_mut()
    }
}

/// Asks once, before PHP starts threads (`crate::threads`), whether valgrind runs this process: outside it the
/// announcements are skipped after one load of a flag (a call into crabgrind's C shim each was 6% of a flock cycle).
pub(crate) fn set_up() {
    checker::set_up();
}

/// The announcements: client requests under valgrind, nothing without the feature.
#[cfg(feature = "helgrind")]
mod checker {
    use crabgrind::helgrind::{annotate_rwlock_acquired, annotate_rwlock_released};
    // std's own: written once at MINIT, before any thread of PHP's exists, then only read.
    use std::sync::atomic::{AtomicBool, Ordering};

    static UNDER_VALGRIND: AtomicBool = AtomicBool::new(false);

    pub fn set_up() {
        let under = crabgrind::valgrind::running_mode().is_valgrind();
        UNDER_VALGRIND.store(under, Ordering::Relaxed);
    }

    #[inline]
    pub fn acquired<T: ?Sized>(lock: &T) {
        if UNDER_VALGRIND.load(Ordering::Relaxed) {
            announce(std::ptr::from_ref(lock).cast(), true);
        }
    }

    #[inline]
    pub fn released<T: ?Sized>(lock: &T) {
        if UNDER_VALGRIND.load(Ordering::Relaxed) {
            announce(std::ptr::from_ref(lock).cast(), false);
        }
    }

    /// An atomic operation is about to run: what threads published through this atomic before
    /// happened before it. Not a lock: two threads may be between these two calls at once (a
    /// lock announced around an atomic was, now and then, "granted while held").
    #[inline]
    pub fn before_atomic<T: ?Sized>(atomic: &T) {
        if UNDER_VALGRIND.load(Ordering::Relaxed) {
            edge(std::ptr::from_ref(atomic).cast(), false);
        }
    }

    /// An atomic operation ran: it happened before what the next one on this atomic does.
    #[inline]
    pub fn after_atomic<T: ?Sized>(atomic: &T) {
        if UNDER_VALGRIND.load(Ordering::Relaxed) {
            edge(std::ptr::from_ref(atomic).cast(), true);
        }
    }

    #[cold]
    #[inline(never)]
    fn edge(atomic: *const std::ffi::c_void, before: bool) {
        if before {
            crabgrind::helgrind::annotate_happens_before(atomic);
        } else {
            crabgrind::helgrind::annotate_happens_after(atomic);
        }
    }

    /// Out of line: outside valgrind the lock paths keep only the flag's test.
    #[cold]
    #[inline(never)]
    fn announce(lock: *const std::ffi::c_void, acquired: bool) {
        if acquired {
            annotate_rwlock_acquired(lock, true);
        } else {
            annotate_rwlock_released(lock, true);
        }
    }
}

#[cfg(not(feature = "helgrind"))]
mod checker {
    pub fn set_up() {}
    pub fn acquired<T: ?Sized>(_: &T) {}
    pub fn released<T: ?Sized>(_: &T) {}
    pub fn before_atomic<T: ?Sized>(_: &T) {}
    pub fn after_atomic<T: ?Sized>(_: &T) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_condvar_wait_gives_the_lock_back_and_takes_it_again() {
        let shared = Arc::new((Mutex::new(0), Condvar::default()));
        let other = Arc::clone(&shared);
        let waiter = std::thread::spawn(move || {
            let (lock, wake) = &*other;
            let mut value = lock.lock();
            while *value == 0 {
                value = wake.wait(value);
            }
            *value += 1;
        });
        {
            let (lock, wake) = &*shared;
            *lock.lock() = 1;
            wake.notify_one();
        }
        waiter.join().expect("the waiter ends");
        assert_eq!(*shared.0.lock(), 2);
    }

    #[test]
    fn a_panic_while_holding_leaves_the_lock_usable() {
        let lock = Arc::new(Mutex::new(vec![1]));
        let other = Arc::clone(&lock);
        let _ = std::thread::spawn(move || {
            let _held = other.lock();
            panic!("while holding");
        })
        .join();
        lock.lock().push(2);
        assert_eq!(*lock.lock(), vec![1, 2]);
    }
}
