//! `Deadbolt\Lock`: the engine's lock plus the PSR-3 logger it reports to.
// PHP takes parameter names from the Rust names; symfony/lock spells them in camelCase.
#![allow(non_snake_case)]

use std::cell::{RefCell, RefMut};
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::Arc;

use deadbolt_core::{Error, InMemoryStore, Key, Lock, Mode, StoreRef};
use ext_php_rs::exception::PhpException;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendCallable, ZendClassObject, ZendObject, Zval};
use ext_php_rs::zend::run_handler;

use crate::args;
use crate::end_of_request;
use crate::error_map::{bad_method_call_exception, lock_conflicted, not_rebuildable, Family};
use crate::key::PhpKey;
use crate::logger::{report_store_warning, take_store_warning, EventLog};
use crate::php_call;
use crate::php_param::{Bool, Bytes, OptionalFloat};
use crate::store_arg::engine_store_arg;
use crate::zend_object::{hook_destructor, standard_destructor};

#[php_class]
#[php(name = "Deadbolt\\Lock")]
#[php(flags = ClassFlags::Final)]
#[php(implements(crate::interfaces::PhpInterfaceDeadlineLockInterface))]
#[php(implements(crate::interfaces::PhpInterfaceFencedLockInterface))]
pub struct PhpLock {
    /// Shared with this request's end-of-request list while it may hold a lock on a lent
    /// connection, so that list never points at a freed PHP object.
    inner: Rc<RefCell<Lock>>,
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
        object: &mut PhpLock,
        mode: Mode,
        blocking: bool,
        timeout: Option<f64>,
    ) -> PhpResult<bool> {
        object.take_as(Family::Lock, mode, blocking, timeout)
    }

    /// An acquire (see [`Self::run_as`] for `family`), and the end-of-request bookkeeping of a
    /// hold.
    pub(crate) fn take_as(
        &mut self,
        family: Family,
        mode: Mode,
        blocking: bool,
        timeout: Option<f64>,
    ) -> PhpResult<bool> {
        let object = self;
        let wait = args::wait(blocking, timeout)?;
        let acquired = match object.run_as(family, |lock, log| lock.acquire(mode, wait, log)) {
            // A signal handler threw (or exited) during the wait: its exception is what the caller
            // gets; the wait ended without the lock.
            Err(_) if php_call::exception_in_flight() => return Ok(false),
            other => other?,
        };
        if acquired {
            end_of_request::remember_acquired(&object.inner);
        }
        let lent = matches!(object.inner.borrow().store_ref(), StoreRef::Lent(_));
        if acquired && lent {
            end_of_request::track(&object.inner);
        }
        Ok(acquired)
    }

    /// Makes PHP release a `Deadbolt\Lock` that dies while held, through any store, during PHP's
    /// destructor phase (where calling a `\Redis` or Predis client is allowed), silently:
    /// symfony/lock's destructor without its fatal error when the store is down. After a fatal
    /// error PHP runs no destructors; Rust's `Drop` then releases the locks of owned stores.
    pub fn hook_destructor() {
        hook_destructor::<PhpLock>(destroy_holding::<PhpLock>);
    }

    pub fn new(inner: Lock, logger: Option<Zval>) -> Self {
        PhpLock {
            inner: Rc::new(RefCell::new(inner)),
            logger,
        }
    }

    /// The engine's lock, unless one of its own calls is still running: a logger or a signal
    /// handler that PHP runs during a call may use this Lock only once that call is over.
    fn engine(&self) -> PhpResult<RefMut<'_, Lock>> {
        let lock = self.inner.try_borrow_mut().map_err(|_| in_use())?;
        // Its Key in use by a call still running (another Lock's, a store's made with it): the
        // engine would wait for that Key for ever.
        if lock.key().is_locked() {
            return Err(crate::key::key_in_use());
        }
        Ok(lock)
    }

    /// The engine's lock to read, on the same terms as [`Self::engine`].
    fn reading(&self) -> PhpResult<std::cell::Ref<'_, Lock>> {
        let lock = self.inner.try_borrow().map_err(|_| in_use())?;
        if lock.key().is_locked() {
            return Err(crate::key::key_in_use());
        }
        Ok(lock)
    }

    /// Runs one engine call, then logs its events and converts its error: the exception in the
    /// log context is the very object that is thrown. The logger is called once the engine's lock
    /// is no longer borrowed, through a reference of its own: it may use this Lock, even replace
    /// its logger. A fatal error in any call into PHP is re-raised once all of this is dropped.
    fn run<T>(
        &mut self,
        call: impl FnOnce(&mut Lock, &mut EventLog) -> Result<T, Error>,
    ) -> PhpResult<T> {
        self.run_as(Family::Lock, call)
    }

    /// [`Self::run`], its error thrown as an exception of `family`.
    pub(crate) fn run_as<T>(
        &mut self,
        family: Family,
        call: impl FnOnce(&mut Lock, &mut EventLog) -> Result<T, Error>,
    ) -> PhpResult<T> {
        php_call::method(|| {
            // Without a logger nothing is recorded, and the resource is copied only when needed.
            let mut events = EventLog::recording(self.logger.is_some());
            let (result, key, warning) = {
                let mut lock = self.engine()?;
                let result = call(&mut lock, &mut events);
                (
                    result,
                    lock.key().clone(),
                    take_store_warning(lock.store().as_ref()),
                )
            };
            let resource = || key.lock().resource().to_vec();
            let logger = self.logger.as_ref().map(Zval::shallow_clone);
            if let Some(warning) = warning {
                report_store_warning(&warning, logger.as_ref(), resource);
            }
            match result {
                Ok(value) => {
                    if let Some(logger) = &logger {
                        events.send(logger, &resource(), None);
                    }
                    Ok(value)
                }
                Err(err) => {
                    let object = family.exception_object(&err);
                    if let Some(logger) = &logger {
                        events.send(logger, &resource(), object.as_ref());
                    }
                    Err(family.throwable(&err, object))
                }
            }
        })
    }
}

#[php_impl]
impl PhpLock {
    /// As symfony/lock's `new Lock($key, $store, $ttl, $autoRelease)`; usually made by LockFactory.
    #[php(defaults(ttl = None, autoRelease = true))]
    pub fn __construct(
        key: &PhpKey,
        store: &mut ZendObject,
        ttl: OptionalFloat<3>,
        autoRelease: Bool<4>,
    ) -> PhpResult<Self> {
        let store = engine_store_arg(store, "Deadbolt\\Lock::__construct(): Argument #2 ($store)")?;
        let ttl = args::optional_ttl(ttl.0)?;
        Ok(PhpLock::new(
            Lock::new(key.inner.clone(), store, ttl, autoRelease.0),
            None,
        ))
    }

    /// Any PSR-3 logger: an object with `log($level, $message, array $context)`.
    pub fn set_logger(&mut self, logger: &mut ZendObject) -> PhpResult<()> {
        php_call::method(|| {
            self.logger = Some(args::logger(logger, "Deadbolt\\Lock::setLogger()")?);
            Ok(())
        })
    }

    /// `$timeout` (seconds): wait at most that long, then return false. `acquire(true)` alone
    /// waits forever, as in symfony/lock.
    #[php(defaults(blocking = false, timeout = None))]
    pub fn acquire(
        self_: &mut ZendClassObject<PhpLock>,
        blocking: Bool<1>,
        timeout: OptionalFloat<2>,
    ) -> PhpResult<bool> {
        Self::take(self_, Mode::Exclusive, blocking.0, timeout.0)
    }

    #[php(defaults(blocking = false, timeout = None))]
    pub fn acquire_read(
        self_: &mut ZendClassObject<PhpLock>,
        blocking: Bool<1>,
        timeout: OptionalFloat<2>,
    ) -> PhpResult<bool> {
        Self::take(self_, Mode::Shared, blocking.0, timeout.0)
    }

    /// True once the background refresher found the lock gone (no network call).
    pub fn is_lost(&self) -> PhpResult<bool> {
        Ok(self.reading()?.is_lost())
    }

    /// The fencing token of the current exclusive hold, or null.
    pub fn get_fencing_token(&mut self) -> PhpResult<Option<i64>> {
        let token = self.run(|lock, _| lock.fencing_token())?;
        Ok(token.map(|t| i64::try_from(t).unwrap_or(i64::MAX)))
    }

    #[php(defaults(ttl = None))]
    pub fn refresh(&mut self, ttl: OptionalFloat<1>) -> PhpResult<()> {
        let ttl = args::optional_ttl(ttl.0)?;
        self.run(|lock, log| lock.refresh(ttl, log))
    }

    pub fn is_acquired(&mut self) -> PhpResult<bool> {
        self.run(|lock, _| lock.is_acquired())
    }

    pub fn release(&mut self) -> PhpResult<()> {
        self.run(|lock, log| lock.release(log))
    }

    /// Runs `$work` under the lock and returns its value: takes the lock (waiting up to `$wait`
    /// seconds; null: one attempt), calls `$work($this)`, and releases in every case. Throws
    /// `LockConflictedException` when the lock could not be had, without running `$work`.
    #[php(name = "run", defaults(wait = None))]
    pub fn run_work(
        self_: &mut ZendClassObject<PhpLock>,
        work: ZendCallable,
        wait: OptionalFloat<2>,
    ) -> PhpResult<Zval> {
        let acquired = Self::take(self_, Mode::Exclusive, wait.0.is_some(), wait.0)?;
        if php_call::exception_in_flight() {
            return Ok(Zval::new());
        }
        if !acquired {
            return Err(not_run(self_, wait.0));
        }
        let mut this = Zval::new();
        this.set_object(&mut self_.std);
        let outcome = php_call::guarded(|| work.try_call(vec![&this]));
        drop(this);
        match outcome {
            Ok(Ok(value)) => {
                self_.release()?;
                Ok(value)
            }
            // `$work` threw (the exception is in flight) or the script is ending: the lock is
            // released quietly with the exception set aside, which then goes on unchanged.
            _ => {
                release_beside_exception(self_);
                Ok(Zval::new())
            }
        }
    }

    /// Releases the resource whoever holds it (an operator's action: logged as a warning,
    /// counted in metrics); this Lock's own hold is released first. The number of other holders
    /// it had. They find the lock gone at their next call.
    pub fn force_release(&mut self) -> PhpResult<i64> {
        let count = self.run(|lock, log| lock.force_release(log))?;
        Ok(i64::try_from(count).unwrap_or(i64::MAX))
    }

    /// Who holds this lock's resource and who waits, as its store tells (`Deadbolt\LockState`).
    pub fn inspect(&mut self) -> PhpResult<crate::lock_state::PhpLockState> {
        let resource = self.reading()?.key().lock().resource().to_vec();
        let state = self.run(|lock, _| lock.inspect())?;
        Ok(crate::lock_state::PhpLockState::new(&resource, state))
    }

    /// A label for the records this lock leaves in its store (a job or request id), shown by
    /// `inspect()` and the `deadbolt` command; by default `DEADBOLT_LABEL` or systemd's
    /// `INVOCATION_ID` from the environment. At most 128 bytes, no control characters.
    pub fn set_label(self_: &mut ZendClassObject<PhpLock>, label: Bytes<1>) -> PhpResult<()> {
        let label = String::from_utf8_lossy(&label.0).into_owned();
        let lock = self_.reading()?;
        let mut key = lock.key().lock();
        key.set_label(&label).map_err(crate::error_map::to_php)
    }

    pub fn is_expired(&self) -> PhpResult<bool> {
        Ok(self.reading()?.is_expired())
    }

    pub fn get_remaining_lifetime(&self) -> PhpResult<Option<f64>> {
        Ok(self.reading()?.remaining_lifetime())
    }

    /// A lock belongs to its process and its object: it cannot be serialized (symfony/lock
    /// throws the same exception).
    #[php(name = "__serialize")]
    pub fn serialize(&self) -> PhpResult<Vec<i64>> {
        Err(cannot_serialize())
    }

    /// `var_export()` output cannot rebuild a Lock: a lock belongs to its process and object.
    #[php(name = "__set_state")]
    pub fn from_var_export(properties: &ext_php_rs::types::ZendHashTable) -> PhpResult<Self> {
        let _ = properties;
        Err(not_rebuildable(
            "Deadbolt\\Lock",
            "Make one with Deadbolt\\LockFactory::createLock().",
        ))
    }

    #[php(name = "__unserialize")]
    pub fn unserialize(&self, data: &ext_php_rs::types::ZendHashTable) -> PhpResult<()> {
        let _ = data;
        Err(bad_method_call_exception(
            "Cannot unserialize Deadbolt\\Lock.",
        ))
    }
}

/// Why `run()` did not run its work.
fn not_run(object: &ZendClassObject<PhpLock>, wait: Option<f64>) -> PhpException {
    let resource = object
        .reading()
        .map(|lock| lock.key().lock().display_resource())
        .unwrap_or_default();
    let waited = match wait {
        Some(secs) => format!(" within {} seconds", deadbolt_core::shown_secs(secs)),
        None => String::new(),
    };
    lock_conflicted(&format!(
        "Could not acquire the \"{resource}\" lock{waited}: someone else holds it, and the work \
         was not run. Try again later, give run() a longer $wait, or see who holds it with \
         inspect()."
    ))
}

/// Releases after `run()`'s work threw or ended the script: the exception in flight is set
/// aside for the release (a store's PHP client may be called) and put back unchanged; a failed
/// release is left to the logger and the lock's TTL, as the work's exception is the one to see.
fn release_beside_exception(object: &mut ZendClassObject<PhpLock>) {
    let parked = crate::zend_object::ParkedException::park();
    if parked.is_some() && !php_call::exit_pending() {
        let _ = object.release();
    }
    drop(parked);
}

/// A Lock used from inside one of its own calls (a logger or signal handler run during it).
fn in_use() -> PhpException {
    bad_method_call_exception("This Deadbolt\\Lock is busy in a call of its own (its logger or a signal handler runs inside that call); use it once that call has returned.")
}

fn cannot_serialize() -> PhpException {
    bad_method_call_exception("Cannot serialize Deadbolt\\Lock.")
}

/// A PHP class whose objects hold an engine lock: a Lock, a Semaphore.
pub(crate) trait HoldsLock: ext_php_rs::class::RegisteredClass {
    fn php_lock(&self) -> &PhpLock;
}

impl HoldsLock for PhpLock {
    fn php_lock(&self) -> &PhpLock {
        self
    }
}

/// The destructor of a class whose objects hold an engine lock: the lock is released as it dies
/// while held (through PHP for a lent connection), silently.
pub(crate) unsafe extern "C" fn destroy_holding<C: HoldsLock>(object: *mut ZendObject) {
    // SAFETY: PHP hands a live object of this class (the handler table is C's only).
    let lock = unsafe { object.as_mut() }.and_then(ZendClassObject::<C>::from_zend_obj_mut);
    if let Some(lock) = lock {
        let inner = Rc::clone(&lock.php_lock().inner);
        end_of_request::forget(&inner);
        let lent = inner
            .try_borrow()
            .is_ok_and(|lock| matches!(lock.store_ref(), StoreRef::Lent(_)));
        if lent {
            end_of_request::release_through_php(&inner);
        } else if let Ok(mut lock) = inner.try_borrow_mut() {
            run_handler(AssertUnwindSafe(|| lock.release_on_death()));
        }
    }
    // SAFETY: the object PHP handed this hook.
    unsafe { standard_destructor(object) };
    // A fatal error inside the release is the engine's again, now that nothing here is held.
    php_call::reraise();
}

impl crate::zend_object::DebugInfo for PhpLock {
    fn debug_info(&self, table: &mut ext_php_rs::types::ZendHashTable) {
        // A Lock dumped from inside its own call (its logger) shows its resource only.
        let Ok(lock) = self.inner.try_borrow() else {
            return;
        };
        // Nor does a Lock whose Key a call still running holds (a signal handler's dump).
        let Some(key) = lock.key().try_lock() else {
            return;
        };
        let resource = key.resource().to_vec();
        drop(key);
        let _ = table.insert("resource", ext_php_rs::binary::Binary::new(resource));
        let _ = table.insert("store", lock.store().name());
        let _ = table.insert("held", lock.holds());
        let _ = table.insert("ttl", lock.ttl().map(deadbolt_core::Ttl::as_secs));
        let _ = table.insert("remainingLifetime", lock.remaining_lifetime());
        let _ = table.insert("lost", lock.is_lost());
    }
}

/// Its logger, and the object of a store written in PHP that only this Lock holds.
impl crate::zend_object::gc::GcChildren for PhpLock {
    fn gc_children(&self, report: &mut dyn FnMut(&Zval)) {
        if let Some(logger) = &self.logger {
            report(logger);
        }
        if let Ok(lock) = self.inner.try_borrow() {
            crate::user_store::store_children(lock.store_ref(), report);
        }
    }
}
