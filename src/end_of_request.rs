//! Releases, at the end of a request, locks held on connections the application lent (`\Redis`,
//! Predis): `StoreRef::Lent` locks, which Rust's `Drop` never releases.
//!
//! PHP destroys the objects left at the end of a script after the script's last frame is gone,
//! and a client called there would turn any exception of its own into a fatal error. Shutdown
//! functions still run inside a frame, so the first such lock of a request registers one armed
//! [`PhpEndOfRequest`] object with `register_shutdown_function()`; when it runs, it registers itself
//! again, behind the shutdown functions the application registered after it (they may still use
//! their locks), and that second run releases, once, every one of them that is still held. Nothing
//! else can reach it: the class cannot be made from PHP, and an object that was not armed here does
//! nothing. [`release_through_php`] is the one way such a lock is let go when it dies, here and in
//! the Lock's destructor alike.

use std::cell::{Cell, RefCell};
use std::panic::AssertUnwindSafe;
use std::rc::{Rc, Weak};

use deadbolt_core::Lock;
use ext_php_rs::convert::IntoZval;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::ZendClassObject;
use ext_php_rs::zend::run_handler;

use crate::php_call;
use crate::zend_object::{register_shutdown, ParkedException};

thread_local! {
    /// The engine locks of this request that may hold a lock on a lent connection, shared with
    /// their Lock objects: an object freed without its destructor (after a fatal error, PHP runs
    /// none) leaves its lock here, still releasable, never a dangling pointer.
    static TRACKED: RefCell<Vec<Rc<RefCell<Lock>>>> = const { RefCell::new(Vec::new()) };
    static REGISTERED: Cell<bool> = const { Cell::new(false) };
    /// Every lock acquired since the logical request began (the real one's start, or the last
    /// `Deadbolt\Worker::endRequest()`), weakly: a long-running worker's end of request releases
    /// those still held, as the end of an FPM request would.
    static ACQUIRED: RefCell<Vec<Weak<RefCell<Lock>>>> = const { RefCell::new(Vec::new()) };
}

/// Remembers `lock`, just acquired (any store), for the logical end of the request: one push on
/// the acquire path, nothing else. A Lock acquired again while held is pushed again (its second
/// entry finds nothing left to release). Whenever the list's length reaches a power of two past
/// 64 it keeps only its live entries, once each, so a worker that never ends a request keeps it as
/// long as its live locks, not its history.
pub fn remember_acquired(lock: &Rc<RefCell<Lock>>) {
    ACQUIRED.with(|acquired| {
        let mut acquired = acquired.borrow_mut();
        let len = acquired.len();
        if len >= 64 && len.is_power_of_two() {
            acquired.retain(|a| a.strong_count() > 0);
            acquired.sort_unstable_by_key(|a| a.as_ptr() as usize);
            acquired.dedup_by(|a, b| Weak::ptr_eq(a, b));
        }
        acquired.push(Rc::downgrade(lock));
    });
}

/// The logical end of a request in a long-running worker: every lock acquired since the last one
/// (or since the real request began) that is still held and releases itself when it dies
/// (`autoRelease`) is released, silently, as the end of an FPM request releases it; locks made
/// with `autoRelease: false` stay held, as they would there. Returns how many it released.
pub fn end_logical_request() -> usize {
    let acquired = ACQUIRED.with(|acquired| std::mem::take(&mut *acquired.borrow_mut()));
    let mut released = 0;
    for lock in acquired.iter().filter_map(Weak::upgrade) {
        forget(&lock);
        // A Lock whose own call is still running (this runs from its logger) is left to that call.
        let Ok(mut lock) = lock.try_borrow_mut() else {
            continue;
        };
        let mut done = false;
        run_handler(AssertUnwindSafe(|| done = lock.release_at_end_of_request()));
        released += usize::from(done);
    }
    released
}

/// Remembers `lock`, just acquired on a lent connection.
pub fn track(lock: &Rc<RefCell<Lock>>) {
    TRACKED.with(|tracked| {
        let mut tracked = tracked.borrow_mut();
        if !tracked.iter().any(|t| Rc::ptr_eq(t, lock)) {
            tracked.push(Rc::clone(lock));
        }
    });
    if !REGISTERED.replace(true) && !register(Round::First) {
        REGISTERED.set(false);
    }
}

/// Forgets a lock whose object is being destroyed (its destructor releases it).
pub fn forget(lock: &Rc<RefCell<Lock>>) {
    TRACKED.with(|tracked| tracked.borrow_mut().retain(|t| !Rc::ptr_eq(t, lock)));
}

/// A new request starts with nothing tracked.
pub fn reset() {
    TRACKED.with(|tracked| tracked.borrow_mut().clear());
    ACQUIRED.with(|acquired| acquired.borrow_mut().clear());
    REGISTERED.set(false);
}

/// The end of the request (RSHUTDOWN, while PHP's objects still exist): whatever is still tracked
/// (the shutdown callback never ran) is let go, leaving its locks to their TTL.
pub fn drop_tracked() {
    let tracked = TRACKED.with(|tracked| std::mem::take(&mut *tracked.borrow_mut()));
    drop(tracked);
    REGISTERED.set(false);
}

/// Which run of the shutdown callback this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Round {
    /// Registered at the first acquire: shutdown functions the application registered later come
    /// after it, and may still use their locks, so it only moves itself behind them.
    First,
    /// Registered during shutdown, behind every function registered during the request.
    Last,
}

fn register(round: Round) -> bool {
    let armed = ZendClassObject::new(PhpEndOfRequest { armed: Some(round) }).into_zval(false);
    armed.is_ok_and(register_shutdown)
}

/// Releases every lock of this request still held on a lent connection, silently (a failure
/// leaves the lock to its TTL).
fn release_tracked() {
    let tracked = TRACKED.with(|tracked| std::mem::take(&mut *tracked.borrow_mut()));
    for lock in tracked {
        release_through_php(&lock);
    }
}

/// Releases a dying lock whose store talks through a PHP client (from its destructor, or at the
/// end of the request).
/// Such a client may be called only inside a running frame (at shutdown there is none, and its
/// exceptions would be fatal): then the lock is left to its TTL. An exception already in flight
/// (the lock dies while it unwinds) is set aside for the call and put back untouched. A Lock whose
/// own call is still running (it dies inside its logger) is left to that call.
pub(crate) fn release_through_php(lock: &RefCell<Lock>) {
    let Some(parked) = ParkedException::park() else {
        return;
    };
    if let Ok(mut lock) = lock.try_borrow_mut() {
        run_handler(AssertUnwindSafe(|| lock.release_on_death()));
    }
    drop(parked);
}

/// The shutdown callback (see the module's description).
#[php_class]
#[php(name = "Deadbolt\\Internal\\EndOfRequest")]
#[php(flags = ClassFlags::Final)]
pub struct PhpEndOfRequest {
    armed: Option<Round>,
}

#[php_impl]
impl PhpEndOfRequest {
    /// Releases this request's locks on lent connections after every shutdown function the
    /// application registered, the first time only, and only when Deadbolt made this object.
    pub fn __invoke(&mut self) {
        php_call::method(|| match self.armed.take() {
            Some(Round::First) if register(Round::Last) => {}
            Some(Round::First | Round::Last) => release_tracked(),
            None => {}
        });
    }
}
