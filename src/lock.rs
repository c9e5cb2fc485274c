//! `Deadbolt\Lock`: the engine's lock plus the PSR-3 logger it reports to.
// PHP takes parameter names from the Rust names; symfony/lock spells them in camelCase.
#![allow(non_snake_case)]

use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::Arc;

use deadbolt_core::{Error, InMemoryStore, Key, Lock, Mode, StoreRef};
use ext_php_rs::exception::PhpException;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendClassObject, ZendObject, Zval};
use ext_php_rs::zend::run_handler;

use crate::args;
use crate::end_of_request;
use crate::error_map::{exception_object, new_exception, throwable};
use crate::exceptions::bad_method_call;
use crate::key::PhpKey;
use crate::logger::{report_store_warning, EventLog};
use crate::store_arg::engine_store_arg;
use crate::zend_object::{hook_destructor, standard_destructor, ParkedException};

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
        let store = StoreRef::Owned(Rc::new(InMemoryStore::new()));
        let placeholder = Lock::new(key, store, None, false);
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
        if acquired && matches!(object.inner.store_ref(), StoreRef::Lent(_)) {
            end_of_request::track(&raw mut object.std, release_at_shutdown);
        }
        Ok(acquired)
    }

    /// Makes PHP release a `Deadbolt\Lock` that dies while held, through any store, during PHP's
    /// destructor phase (where calling a `\Redis` or Predis client is allowed), silently:
    /// symfony/lock's destructor without its fatal error when the store is down. After a fatal
    /// error PHP runs no destructors; Rust's `Drop` then releases the locks of owned stores.
    pub fn hook_destructor() {
        hook_destructor::<PhpLock>(destroy_lock);
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

/// The silent release of a lock still held at the end of the request (end_of_request.rs).
fn release_at_shutdown(object: &mut ZendObject) {
    if let Some(lock) = ZendClassObject::<PhpLock>::from_zend_obj_mut(object) {
        release_through_php(lock);
    }
}

/// Releases a dying lock whose store talks through a PHP client. Such a client may be called only
/// inside a running frame (at shutdown there is none, and its exceptions would be fatal): then
/// the lock is left to its TTL. An exception already in flight (the lock dies while it unwinds)
/// is set aside for the call and put back untouched.
fn release_through_php(lock: &mut PhpLock) {
    let Some(parked) = ParkedException::park() else {
        return;
    };
    run_handler(AssertUnwindSafe(|| lock.inner.release_on_death()));
    drop(parked);
}

unsafe extern "C" fn destroy_lock(object: *mut ZendObject) {
    end_of_request::forget(object);
    // SAFETY: PHP hands a live object of this class (the handler table is PhpLock's only).
    let lock = unsafe { object.as_mut() }.and_then(ZendClassObject::<PhpLock>::from_zend_obj_mut);
    if let Some(lock) = lock {
        let lock = &mut **lock;
        match lock.inner.store_ref() {
            StoreRef::Owned(_) => run_handler(AssertUnwindSafe(|| lock.inner.release_on_death())),
            StoreRef::Lent(_) => release_through_php(lock),
        }
    }
    // SAFETY: the object PHP handed this hook.
    unsafe { standard_destructor(object) };
}

impl crate::zend_object::DebugInfo for PhpLock {
    fn debug_info(&self, table: &mut ext_php_rs::types::ZendHashTable) {
        let resource = self.inner.key().lock().resource().to_vec();
        let _ = table.insert("resource", ext_php_rs::binary::Binary::new(resource));
        let _ = table.insert("store", self.inner.store().name());
        let _ = table.insert("held", self.inner.holds());
        let _ = table.insert("ttl", self.inner.ttl().map(deadbolt_core::Ttl::as_secs));
        let _ = table.insert("remainingLifetime", self.inner.remaining_lifetime());
        let _ = table.insert("lost", self.inner.is_lost());
    }
}
