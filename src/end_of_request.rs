//! Releases, at the end of a request, locks held on connections the application lent (`\Redis`,
//! Predis): `StoreRef::Lent` locks, which Rust's `Drop` never releases.
//!
//! PHP destroys the objects left at the end of a script after the script's last frame is gone,
//! and a client called there would turn any exception of its own into a fatal error. Shutdown
//! functions still run inside a frame, so the first such lock of a request registers one armed
//! [`PhpEndOfRequest`] object with `register_shutdown_function()`; it releases, once, every one of
//! them that is still held. Nothing else can reach it: the class cannot be made from PHP, and an
//! object that was not armed here does nothing.

use std::cell::{Cell, RefCell};

use ext_php_rs::convert::IntoZval;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendClassObject, ZendObject};

use crate::zend_object::register_shutdown;

/// A tracked Lock object and how to release it.
struct Tracked {
    object: *mut ZendObject,
    release: fn(&mut ZendObject),
}

thread_local! {
    /// The Lock objects of this request that may hold a lock on a lent connection. Entries leave
    /// when the object is destroyed, so every pointer here is a live object.
    static TRACKED: RefCell<Vec<Tracked>> = const { RefCell::new(Vec::new()) };
    static REGISTERED: Cell<bool> = const { Cell::new(false) };
}

/// Remembers `object`, a Lock just acquired on a lent connection; `release` releases it silently.
pub fn track(object: *mut ZendObject, release: fn(&mut ZendObject)) {
    TRACKED.with(|tracked| {
        let mut tracked = tracked.borrow_mut();
        if !tracked.iter().any(|t| t.object == object) {
            tracked.push(Tracked { object, release });
        }
    });
    if !REGISTERED.replace(true) {
        let armed = ZendClassObject::new(PhpEndOfRequest { armed: true }).into_zval(false);
        if !armed.is_ok_and(register_shutdown) {
            REGISTERED.set(false);
        }
    }
}

/// Forgets a Lock object that is being destroyed.
pub fn forget(object: *mut ZendObject) {
    TRACKED.with(|tracked| tracked.borrow_mut().retain(|t| t.object != object));
}

/// A new request starts with nothing tracked.
pub fn reset() {
    TRACKED.with(|tracked| tracked.borrow_mut().clear());
    REGISTERED.set(false);
}

/// Releases every lock of this request still held on a lent connection, silently (a failure
/// leaves the lock to its TTL).
fn release_tracked() {
    let tracked = TRACKED.with(|tracked| std::mem::take(&mut *tracked.borrow_mut()));
    for Tracked { object, release } in tracked {
        // SAFETY: tracked objects are alive (destroyed ones were forgotten in their destructor).
        if let Some(object) = unsafe { object.as_mut() } {
            release(object);
        }
    }
}

/// The shutdown callback (see the module's description).
#[php_class]
#[php(name = "Deadbolt\\Internal\\EndOfRequest")]
#[php(flags = ClassFlags::Final)]
pub struct PhpEndOfRequest {
    armed: bool,
}

#[php_impl]
impl PhpEndOfRequest {
    /// Releases this request's locks on lent connections, the first time only, and only when
    /// Deadbolt made this object.
    pub fn __invoke(&mut self) {
        if std::mem::take(&mut self.armed) {
            release_tracked();
        }
    }
}
