//! Releases, at the end of a request, locks held through a PHP Redis client (`\Redis`, Predis).
//!
//! PHP destroys the objects left at the end of a script after the script's last frame is gone,
//! and a client called there would turn any exception of its own into a fatal error. Shutdown
//! functions still run inside a frame, so the first such lock of a request registers
//! `Deadbolt\release_client_locks()`, which releases every one of them that is still held. Locks
//! on native (DSN, flock, in-memory) stores need none of this: Rust releases them from `Drop`.

use std::cell::{Cell, RefCell};

use ext_php_rs::types::{ZendCallable, ZendClassObject, ZendObject};

use crate::lock::PhpLock;

thread_local! {
    /// The Lock objects of this request that may hold a lock through a PHP client. Entries leave
    /// when the object is destroyed, so every pointer here is a live object.
    static TRACKED: RefCell<Vec<*mut ZendObject>> = const { RefCell::new(Vec::new()) };
    static REGISTERED: Cell<bool> = const { Cell::new(false) };
}

/// Remembers `lock`, just acquired, when its store talks through a PHP client.
pub fn track(lock: &mut ZendClassObject<PhpLock>) {
    if lock.releases_from_drop() {
        return;
    }
    let object: *mut ZendObject = &raw mut lock.std;
    TRACKED.with(|tracked| {
        let mut tracked = tracked.borrow_mut();
        if !tracked.contains(&object) {
            tracked.push(object);
        }
    });
    if !REGISTERED.replace(true) {
        let registered = ZendCallable::try_from_name("register_shutdown_function")
            .and_then(|register| register.try_call(vec![&"Deadbolt\\release_client_locks"]));
        if registered.is_err() {
            REGISTERED.set(false);
        }
    }
}

/// Forgets a Lock object that is being destroyed.
pub fn forget(object: *mut ZendObject) {
    TRACKED.with(|tracked| tracked.borrow_mut().retain(|tracked| *tracked != object));
}

/// A new request starts with nothing tracked.
pub fn reset() {
    TRACKED.with(|tracked| tracked.borrow_mut().clear());
    REGISTERED.set(false);
}

/// Releases every lock of this request still held through a PHP Redis client, silently (a
/// failure leaves the lock to its TTL). `Deadbolt\release_client_locks()` in `lib.rs`.
pub fn release_tracked() {
    let objects = TRACKED.with(|tracked| std::mem::take(&mut *tracked.borrow_mut()));
    for object in objects {
        // SAFETY: tracked objects are alive (destroyed ones were forgotten in their destructor).
        let lock =
            unsafe { object.as_mut() }.and_then(ZendClassObject::<PhpLock>::from_zend_obj_mut);
        if let Some(lock) = lock {
            lock.release_now();
        }
    }
}
