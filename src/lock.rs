//! `Deadbolt\Lock`: the engine's lock plus the PSR-3 logger it reports to.
// PHP takes parameter names from the Rust names; symfony/lock spells them in camelCase.
#![allow(non_snake_case)]

use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::{Arc, Once, OnceLock};

use deadbolt_core::{Error, InMemoryStore, Key, Lock, Mode};
use ext_php_rs::class::RegisteredClass;
use ext_php_rs::exception::PhpException;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendClassObject, ZendObject, Zval};
use ext_php_rs::zend::{run_handler, ExecutorGlobals};

use crate::args;
use crate::error_map::{exception_object, new_exception, throwable};
use crate::exceptions::bad_method_call;
use crate::key::PhpKey;
use crate::logger::{report_store_warning, EventLog};
use crate::shutdown;
use crate::stores::engine_store_arg;

#[php_class]
#[php(name = "Deadbolt\\Lock")]
#[php(flags = ClassFlags::Final)]
pub struct PhpLock {
    inner: Lock,
    logger: Option<Zval>,
}

/// The state PHP gives an object it makes without a constructor (`clone`, `unserialize()`): a lock
/// on nothing, never acquired, so its destructor has nothing to do.
impl Default for PhpLock {
    fn default() -> Self {
        let key = Arc::new(parking_lot::Mutex::new(Key::new("")));
        let placeholder = Lock::new(key, Rc::new(InMemoryStore::new()), None, false);
        PhpLock::new(placeholder, None)
    }
}

impl PhpLock {
    fn take(
        object: &mut ZendClassObject<PhpLock>,
        mode: Mode,
        blocking: bool,
        timeout: Option<f64>,
    ) -> PhpResult<bool> {
        let wait = args::wait(blocking, timeout)?;
        let acquired = object.run(|lock, log| lock.acquire(mode, wait, log))?;
        if acquired {
            shutdown::track(object);
        }
        Ok(acquired)
    }

    /// Whether Rust's `Drop` can release this lock (its store needs no PHP call).
    pub fn releases_from_drop(&self) -> bool {
        self.inner.store().releases_from_drop()
    }

    /// The silent release of a lock that is still held, inside a PHP frame (shutdown function).
    pub fn release_now(&mut self) {
        release_through_php(self);
    }

    pub fn new(inner: Lock, logger: Option<Zval>) -> Self {
        PhpLock { inner, logger }
    }

    /// Runs one engine call, then logs its events and converts its error: the exception in the
    /// log context is the very object that is thrown.
    fn run<T>(
        &mut self,
        call: impl FnOnce(&mut Lock, &mut EventLog) -> Result<T, Error>,
    ) -> PhpResult<T> {
        // Without a logger nothing is recorded, and the resource is copied only when needed.
        let mut events = EventLog::recording(self.logger.is_some());
        let result = call(&mut self.inner, &mut events);
        let key = self.inner.key().clone();
        let resource = || key.lock().resource().to_vec();
        report_store_warning(self.inner.store().as_ref(), self.logger.as_ref(), resource);
        let logger = self.logger.as_ref();
        match result {
            Ok(value) => {
                if let Some(logger) = logger {
                    events.send(logger, &resource(), None);
                }
                Ok(value)
            }
            Err(err) => {
                let object = exception_object(&err);
                if let Some(logger) = logger {
                    events.send(logger, &resource(), object.as_ref());
                }
                Err(throwable(&err, object))
            }
        }
    }
}

#[php_impl]
impl PhpLock {
    /// As symfony/lock's `new Lock($key, $store, $ttl, $autoRelease)`; usually made by LockFactory.
    #[php(defaults(ttl = None, autoRelease = true))]
    pub fn __construct(
        key: &PhpKey,
        store: &ZendObject,
        ttl: Option<f64>,
        autoRelease: bool,
    ) -> PhpResult<Self> {
        let store = engine_store_arg(store, "Deadbolt\\Lock::__construct(): Argument #2 ($store)")?;
        let ttl = args::optional_ttl(ttl)?;
        Ok(PhpLock::new(
            Lock::new(key.inner.clone(), store, ttl, autoRelease),
            None,
        ))
    }

    /// Any PSR-3 logger: an object with `log($level, $message, array $context)`.
    pub fn set_logger(&mut self, logger: &mut ZendObject) -> PhpResult<()> {
        self.logger = Some(args::logger(logger, "Deadbolt\\Lock::setLogger()")?);
        Ok(())
    }

    /// `$timeout` (seconds): wait at most that long, then return false. `acquire(true)` alone
    /// waits forever, as in symfony/lock.
    #[php(defaults(blocking = false, timeout = None))]
    pub fn acquire(
        self_: &mut ZendClassObject<PhpLock>,
        blocking: bool,
        timeout: Option<f64>,
    ) -> PhpResult<bool> {
        Self::take(self_, Mode::Exclusive, blocking, timeout)
    }

    #[php(defaults(blocking = false, timeout = None))]
    pub fn acquire_read(
        self_: &mut ZendClassObject<PhpLock>,
        blocking: bool,
        timeout: Option<f64>,
    ) -> PhpResult<bool> {
        Self::take(self_, Mode::Shared, blocking, timeout)
    }

    /// True once the background refresher found the lock gone (no network call).
    pub fn is_lost(&self) -> bool {
        self.inner.is_lost()
    }

    /// The fencing token of the current exclusive hold, or null.
    pub fn get_fencing_token(&mut self) -> PhpResult<Option<i64>> {
        let token = self.run(|lock, _| lock.fencing_token())?;
        Ok(token.map(|t| i64::try_from(t).unwrap_or(i64::MAX)))
    }

    #[php(defaults(ttl = None))]
    pub fn refresh(&mut self, ttl: Option<f64>) -> PhpResult<()> {
        let ttl = args::optional_ttl(ttl)?;
        self.run(|lock, log| lock.refresh(ttl, log))
    }

    pub fn is_acquired(&mut self) -> PhpResult<bool> {
        self.run(|lock, _| lock.is_acquired())
    }

    pub fn release(&mut self) -> PhpResult<()> {
        self.run(|lock, log| lock.release(log))
    }

    pub fn is_expired(&self) -> bool {
        self.inner.is_expired()
    }

    pub fn get_remaining_lifetime(&self) -> Option<f64> {
        self.inner.remaining_lifetime()
    }

    /// A lock belongs to its process and its object: it cannot be serialized (symfony/lock
    /// throws the same exception).
    #[php(name = "__serialize")]
    pub fn serialize(&self) -> PhpResult<Vec<i64>> {
        Err(cannot_serialize())
    }

    #[php(name = "__unserialize")]
    pub fn unserialize(&self, data: &ext_php_rs::types::ZendHashTable) -> PhpResult<()> {
        let _ = data;
        Err(bad_method_call_exception(
            "Cannot unserialize Deadbolt\\Lock.",
        ))
    }
}

fn cannot_serialize() -> PhpException {
    bad_method_call_exception("Cannot serialize Deadbolt\\Lock.")
}

fn bad_method_call_exception(message: &str) -> PhpException {
    let exception = PhpException::new(message.into(), 0, bad_method_call());
    match new_exception(bad_method_call(), message, None) {
        Some(object) => exception.with_object(object),
        None => exception,
    }
}

/// Clears the engine's "not serializable" flag on a class, so that `serialize()` reaches its
/// `__serialize` (Lock: symfony/lock's `BadMethodCallException`; Key: the key's data).
pub fn let_serialize_reach<T: RegisteredClass>() {
    let ce = T::get_metadata().ce();
    let not_serializable = ClassFlags::NotSerializable.bits();
    if ce.ce_flags & not_serializable != 0 {
        let ce = std::ptr::from_ref(ce).cast_mut();
        // SAFETY: the class entry is PHP's and lives for the whole process; PHP is between requests
        // or at the start of one, so no code reads the flags while this one bit changes.
        unsafe { (*ce).ce_flags &= !not_serializable };
    }
}

/// The engine's own destructor of objects (`zend_objects_destroy_object`), run after ours.
static STANDARD_DESTRUCTOR: OnceLock<unsafe extern "C" fn(*mut ZendObject)> = OnceLock::new();

/// Makes PHP release a `Deadbolt\Lock` that dies while held, through any store, during PHP's
/// destructor phase (where calling a `\Redis` or Predis client is allowed), silently: symfony/lock's
/// destructor without its fatal error when the store is down. After a fatal error PHP runs no
/// destructors; Rust's `Drop` then releases the locks of native stores.
///
/// A destructor hook rather than a `__destruct` method: PHP also destroys the placeholder object
/// of a failed `clone`, which has no Rust state, and a method cannot be called on it.
pub fn install_destructor() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let handlers = std::ptr::from_ref(PhpLock::get_metadata().handlers()).cast_mut();
        // SAFETY: the handler table is ext-php-rs' static for this class, alive for the whole
        // process; this runs once, at the first request startup on PHP's thread, before any Lock
        // object exists, and only swaps one function pointer.
        unsafe {
            if let Some(standard) = (*handlers).dtor_obj {
                let _ = STANDARD_DESTRUCTOR.set(standard);
            }
            (*handlers).dtor_obj = Some(destroy_lock);
        }
    });
}

/// Releases a dying lock whose store talks through a PHP client. Such a client may be called only
/// inside a running frame (at shutdown there is none, and its exceptions would be fatal): then
/// the lock is left to its TTL. An exception already in flight (the lock dies while it unwinds)
/// is set aside for the call and put back untouched, with the frame's position.
fn release_through_php(lock: &mut PhpLock) {
    let saved = {
        let mut globals = ExecutorGlobals::get_mut();
        // SAFETY: reading the engine's current frame, which lives while this destructor runs.
        let Some(frame) = (unsafe { globals.current_execute_data.as_mut() }) else {
            return;
        };
        let saved = (
            globals.exception,
            frame.opline,
            globals.opline_before_exception,
        );
        globals.exception = std::ptr::null_mut();
        saved
    };
    run_handler(AssertUnwindSafe(|| lock.inner.release_on_death()));
    let mut globals = ExecutorGlobals::get_mut();
    let (exception, opline, before) = saved;
    if !exception.is_null() {
        globals.exception = exception;
        globals.opline_before_exception = before;
        // SAFETY: the same frame as above: the destructor has not returned to it yet.
        if let Some(frame) = unsafe { globals.current_execute_data.as_mut() } {
            frame.opline = opline;
        }
    }
}

unsafe extern "C" fn destroy_lock(object: *mut ZendObject) {
    shutdown::forget(object);
    // SAFETY: PHP hands a live object of this class (the handler table is PhpLock's only).
    let lock = unsafe { object.as_mut() }.and_then(ZendClassObject::<PhpLock>::from_zend_obj_mut);
    if let Some(lock) = lock {
        let lock = &mut **lock;
        if lock.inner.store().releases_from_drop() {
            run_handler(AssertUnwindSafe(|| lock.inner.release_on_death()));
        } else {
            release_through_php(lock);
        }
    }
    if let Some(standard) = STANDARD_DESTRUCTOR.get() {
        // SAFETY: the engine's destructor, called as the engine would have called it.
        unsafe { standard(object) };
    }
}
