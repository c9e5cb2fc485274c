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
use std::rc::Rc;

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
