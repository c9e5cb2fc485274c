//! `Deadbolt\Lock`: the engine's lock plus the PSR-3 logger it reports to.
// PHP takes parameter names from the Rust names; symfony/lock spells them in camelCase.
#![allow(non_snake_case)]

use deadbolt_core::{Error, Lock};
use ext_php_rs::class::RegisteredClass;
use ext_php_rs::exception::PhpException;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendObject, Zval};

use crate::args;
use crate::error_map::{exception_object, new_exception, throwable};
use crate::exceptions::bad_method_call;
use crate::key::PhpKey;
use crate::logger::EventLog;
use crate::stores::engine_store_arg;

#[php_class]
#[php(name = "Deadbolt\\Lock")]
#[php(flags = ClassFlags::Final)]
pub struct PhpLock {
    inner: Lock,
    logger: Option<Zval>,
}

impl PhpLock {
    pub fn new(inner: Lock, logger: Option<Zval>) -> Self {
        PhpLock { inner, logger }
    }

    /// Runs one engine call, then logs its events and converts its error: the exception in the
    /// log context is the very object that is thrown.
    fn run<T>(
        &mut self,
        call: impl FnOnce(&mut Lock, &mut EventLog) -> Result<T, Error>,
    ) -> PhpResult<T> {
        let mut events = EventLog::default();
        let result = call(&mut self.inner, &mut events);
        let resource = self.inner.key().lock().resource().to_vec();
        match result {
            Ok(value) => {
                events.send(self.logger.as_ref(), &resource, None);
                Ok(value)
            }
            Err(err) => {
                let object = exception_object(&err);
                events.send(self.logger.as_ref(), &resource, object.as_ref());
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
    pub fn set_logger(&mut self, logger: &mut ZendObject) {
        self.logger = Some(args::object_zval(logger));
    }

    #[php(defaults(blocking = false))]
    pub fn acquire(&mut self, blocking: bool) -> PhpResult<bool> {
        self.run(|lock, log| lock.acquire(blocking, log))
    }

    #[php(defaults(blocking = false))]
    pub fn acquire_read(&mut self, blocking: bool) -> PhpResult<bool> {
        self.run(|lock, log| lock.acquire_read(blocking, log))
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
    pub fn unserialize(&self, _data: &ext_php_rs::types::ZendHashTable) -> PhpResult<()> {
        Err(cannot_serialize())
    }
}

fn cannot_serialize() -> PhpException {
    let message = "Cannot serialize Deadbolt\\Lock.";
    let exception = PhpException::new(message.into(), 0, bad_method_call());
    match new_exception(bad_method_call(), message, None) {
        Some(object) => exception.with_object(object),
        None => exception,
    }
}

/// Clears the engine's "not serializable" flag on `Deadbolt\Lock`, so that `serialize()` reaches
/// `__serialize` and gets symfony/lock's `BadMethodCallException`.
pub fn let_serialize_reach_the_class() {
    let ce = PhpLock::get_metadata().ce();
    let not_serializable = ClassFlags::NotSerializable.bits();
    if ce.ce_flags & not_serializable != 0 {
        let ce = std::ptr::from_ref(ce).cast_mut();
        // SAFETY: the class entry is PHP's and lives for the whole process; PHP is between requests
        // or at the start of one, so no code reads the flags while this one bit changes.
        unsafe { (*ce).ce_flags &= !not_serializable };
    }
}
