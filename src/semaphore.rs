//! `Deadbolt\Semaphore\{SemaphoreFactory, Semaphore, Key}`: symfony/semaphore's API on the engine,
//! where a semaphore is a lock on a key with slots (core's `semaphore.rs`). The Semaphore class
//! holds a `PhpLock` and uses its calls, with symfony/semaphore's exceptions.
// PHP takes parameter names from the Rust names; symfony/semaphore spells them in camelCase.
#![allow(non_snake_case)]

use std::rc::Rc;
use std::sync::Arc;

use deadbolt_core::{AutoRefresh, Key, Lock, Mode, SharedKey, Slots, StoreRef};
use ext_php_rs::binary::Binary;
use ext_php_rs::boxed::ZBox;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendHashTable, ZendObject, Zval};

use crate::args;
use crate::error_map::{bad_method_call_exception, Family};
use crate::exceptions::ExceptionClass;
use crate::key_data::{exported_token, read_parts, write_parts, KeyStates};
use crate::lock::{HoldsLock, PhpLock};
use crate::php_param::{Bool, Bytes, Float, OptionalFloat};
use crate::store_arg::engine_store_arg;
use crate::zend_object::gc::GcChildren;
use crate::zend_object::hook_destructor;

/// symfony/semaphore's default TTL (seconds).
const DEFAULT_TTL: f64 = 300.0;

/// An engine error as symfony/semaphore's exception.
fn semaphore_error(err: deadbolt_core::Error) -> PhpException {
    let object = Family::Semaphore.exception_object(&err);
    Family::Semaphore.throwable(&err, object)
}

/// `Deadbolt\Semaphore\Key`: a resource, how many may hold it at once (`limit`), and this key's
/// share (`weight`).
#[php_class]
#[php(name = "Deadbolt\\Semaphore\\Key")]
#[php(flags = ClassFlags::Final)]
pub struct PhpSemaphoreKey {
    inner: SharedKey,
    /// The engine key's resource and slots, which never change: kept here too, so the Key answers
    /// (and a clone copies them) while a call made with it holds the engine key.
    resource: Vec<u8>,
    slots: Slots,
    /// What stores and applications keep in the Key by name (symfony/semaphore's `setState()`).
    state: KeyStates,
}

/// What PHP makes without the constructor (`unserialize()`): one slot of one on "".
impl Default for PhpSemaphoreKey {
    fn default() -> Self {
        PhpSemaphoreKey::from_key(Key::with_slots("", Slots::ONE))
    }
}

/// `clone`: as symfony/semaphore's plain Key, an independent Key with the same state: the same
/// resource, limit, weight, owner token (so the copy holds what the original holds, in a store
/// not bound to a process), lifetime and values kept by name. A key inherited through fork(), or
/// cloned from inside a call made with it (a signal handler, a logger), gives a copy with an
/// owner of its own: the token is not this process's to copy, or cannot be read without waiting
/// for ever.
impl Clone for PhpSemaphoreKey {
    fn clone(&self) -> Self {
        let (resource, slots) = (self.resource.clone(), self.slots);
        let copy = self.inner.try_lock().and_then(|key| {
            let token = key.drawn_token().filter(|_| !key.is_inherited())?;
            let mut copy =
                Key::import_with_slots(resource.clone(), token.as_str().to_owned(), slots).ok()?;
            crate::user_store::copy_lifetime(&key, &mut copy);
            Some(copy)
        });
        PhpSemaphoreKey {
            state: self.state.shallow_copy(),
            ..PhpSemaphoreKey::from_key(copy.unwrap_or_else(|| Key::with_slots(resource, slots)))
        }
    }
}

/// A TTL argument of a semaphore: positive and finite, else symfony/semaphore's
/// InvalidArgumentException (with Deadbolt's words for what is wrong).
fn semaphore_ttl(secs: Option<f64>) -> PhpResult<Option<deadbolt_core::Ttl>> {
    secs.map(|secs| deadbolt_core::Ttl::from_secs(secs).map_err(semaphore_error))
        .transpose()
}

impl PhpSemaphoreKey {
    /// Wraps an engine key with slots.
    pub(crate) fn from_key(key: Key) -> Self {
        PhpSemaphoreKey {
            resource: key.resource().to_vec(),
            slots: key.slots().unwrap_or(Slots::ONE),
            inner: Arc::new(parking_lot::Mutex::new(key)),
            state: KeyStates::default(),
        }
    }

    /// The engine key, shared with the semaphores made from this Key.
    pub(crate) fn shared_key(&self) -> SharedKey {
        Arc::clone(&self.inner)
    }

    fn key(&self) -> PhpResult<parking_lot::MutexGuard<'_, Key>> {
        self.inner.try_lock().ok_or_else(crate::key::key_in_use)
    }
}

/// The resource of a `Deadbolt\Semaphore\Key` (what its `__toString()` answers), or `None` when
/// `value` is no such Key. Read from the copy the Key keeps, so it answers while a call holds the
/// engine key (a store written in PHP throwing about the Key it was handed).
pub(crate) fn key_resource(value: &Zval) -> Option<Vec<u8>> {
    let object = value.object()?;
    ext_php_rs::types::ZendClassObject::<PhpSemaphoreKey>::from_zend_obj(object)
        .map(|key| key.resource.clone())
}

#[php_impl]
impl PhpSemaphoreKey {
    #[php(defaults(weight = 1))]
    pub fn __construct(resource: Bytes<1>, limit: i64, weight: i64) -> PhpResult<Self> {
        let slots = Slots::new(limit, weight).map_err(semaphore_error)?;
        Ok(PhpSemaphoreKey::from_key(Key::with_slots(
            resource.0, slots,
        )))
    }

    #[php(name = "__toString")]
    pub fn to_string(&self) -> Binary<u8> {
        Binary::new(self.resource.clone())
    }

    pub fn get_limit(&self) -> i64 {
        i64::try_from(self.slots.limit()).unwrap_or(i64::MAX)
    }

    pub fn get_weight(&self) -> i64 {
        i64::try_from(self.slots.weight()).unwrap_or(i64::MAX)
    }

    pub fn has_state(&self, stateKey: Bytes<1>) -> bool {
        self.state.has(&stateKey.0)
    }

    /// Keeps `state` under `stateKey` (a store keeps its own data under its class name).
    pub fn set_state(&self, stateKey: Bytes<1>, state: &Zval) {
        self.state.set(stateKey.0, state);
    }

    pub fn remove_state(&self, stateKey: Bytes<1>) {
        self.state.remove(&stateKey.0);
    }

    /// The state kept under `stateKey`; null when there is none.
    pub fn get_state(&self, stateKey: Bytes<1>) -> Zval {
        self.state.get(&stateKey.0)
    }

    pub fn reset_lifetime(&self) -> PhpResult<()> {
        self.key()?.reset_lifetime();
        Ok(())
    }

    pub fn reduce_lifetime(&self, ttlInSeconds: Float<1>) -> PhpResult<()> {
        let ttl = semaphore_ttl(Some(ttlInSeconds.0))?;
        let mut key = self.key()?;
        match ttl {
            Some(ttl) => key.reduce_lifetime(ttl),
            None => key.expire_now(),
        }
        Ok(())
    }

    pub fn get_remaining_lifetime(&self) -> PhpResult<Option<f64>> {
        Ok(self.key()?.remaining_lifetime())
    }

    pub fn is_expired(&self) -> PhpResult<bool> {
        Ok(self.key()?.is_expired())
    }

    /// The key as data, so another process can release, refresh or check the slot it holds (on
    /// Redis): a lock Key's fields (`resource`, `token`, `expiringTime`, `state`) and `limit`,
    /// `weight`. Refused while it holds flock slots, which belong to this process.
    #[php(name = "__serialize")]
    pub fn serialize(&self) -> PhpResult<ZBox<ZendHashTable>> {
        let mut key = self.key()?;
        let token = exported_token(&mut key, false).map_err(semaphore_error)?;
        let mut data = ZendHashTable::new();
        write_parts(&mut data, &key, token, &self.state).map_err(semaphore_error)?;
        let failed = |e: ext_php_rs::error::Error| {
            semaphore_error(deadbolt_core::Error::InvalidArgument {
                message: e.to_string(),
            })
        };
        data.insert("limit", self.get_limit()).map_err(failed)?;
        data.insert("weight", self.get_weight()).map_err(failed)?;
        Ok(data)
    }

    /// Restores a key made by `__serialize` (here or in another process): string `resource` and
    /// `token`, integer `limit` and `weight` (checked as the constructor checks them), optionally
    /// `expiringTime` (Unix time) and `state`.
    #[php(name = "__unserialize")]
    pub fn unserialize(&mut self, data: &ZendHashTable) -> PhpResult<()> {
        const CLASS: &str = "Deadbolt\\Semaphore\\Key";
        let parts = read_parts(data, CLASS).map_err(semaphore_error)?;
        let int = |name: &str| data.get(name).and_then(Zval::long);
        let (Some(limit), Some(weight)) = (int("limit"), int("weight")) else {
            return Err(semaphore_error(deadbolt_core::Error::InvalidArgument {
                message: format!(
                    "A serialized {CLASS} needs integer \"limit\" and \"weight\" fields."
                ),
            }));
        };
        let slots = Slots::new(limit, weight).map_err(semaphore_error)?;
        let mut key =
            Key::import_with_slots(parts.resource, parts.token, slots).map_err(semaphore_error)?;
        parts.expiry.restore(&mut key).map_err(semaphore_error)?;
        *self = PhpSemaphoreKey {
            state: parts.state,
            ..PhpSemaphoreKey::from_key(key)
        };
        Ok(())
    }
}

/// `Deadbolt\Semaphore\Semaphore`: symfony/semaphore's Semaphore, plus waits with a deadline and a
/// hand-over in order of arrival, the background refresher, `isLost()`, fork safety and metrics.
#[php_class]
#[php(name = "Deadbolt\\Semaphore\\Semaphore")]
#[php(flags = ClassFlags::Final)]
#[php(implements(crate::interfaces::PhpInterfaceSemaphoreInterface))]
#[derive(Default)]
pub struct PhpSemaphore {
    lock: PhpLock,
}

impl HoldsLock for PhpSemaphore {
    fn php_lock(&self) -> &PhpLock {
        &self.lock
    }
}

impl PhpSemaphore {
    /// Releases a Semaphore that dies while held, as a Lock is (symfony/semaphore's destructor).
    pub fn hook_destructor() {
        hook_destructor::<PhpSemaphore>(crate::lock::destroy_holding::<PhpSemaphore>);
    }
}

#[php_impl]
impl PhpSemaphore {
    /// As symfony/semaphore's `new Semaphore($key, $store, $ttlInSecond, $autoRelease)`; usually
    /// made by SemaphoreFactory.
    #[php(defaults(ttlInSecond = DEFAULT_TTL, autoRelease = true))]
    pub fn __construct(
        key: &PhpSemaphoreKey,
        store: &mut ZendObject,
        ttlInSecond: OptionalFloat<3>,
        autoRelease: Bool<4>,
    ) -> PhpResult<Self> {
        let factory = PhpSemaphoreFactory::on(
            store,
            "Deadbolt\\Semaphore\\Semaphore::__construct(): Argument #2 ($store)",
        )?;
        factory.semaphore(
            Arc::clone(&key.inner),
            ttlInSecond.0,
            autoRelease.0,
            AutoRefresh::default(),
        )
    }

    /// Any PSR-3 logger: an object with `log($level, $message, array $context)`.
    pub fn set_logger(&mut self, logger: &mut ZendObject) -> PhpResult<()> {
        self.lock.set_logger(logger)
    }

    /// Takes the key's weight. `acquire()` alone answers at once, as symfony/semaphore's;
    /// `acquire(true)` waits until freed weight is handed to it (first come, first served),
    /// `$timeout` seconds at most (then false).
    #[php(defaults(blocking = false, timeout = None))]
    pub fn acquire(&mut self, blocking: Bool<1>, timeout: OptionalFloat<2>) -> PhpResult<bool> {
        self.lock
            .take_as(Family::Semaphore, Mode::Exclusive, blocking.0, timeout.0)
    }

    #[php(defaults(ttlInSecond = None))]
    pub fn refresh(&mut self, ttlInSecond: OptionalFloat<1>) -> PhpResult<()> {
        let ttl = semaphore_ttl(ttlInSecond.0)?;
        self.lock
            .run_as(Family::Semaphore, |lock, log| lock.refresh(ttl, log))
    }

    pub fn is_acquired(&mut self) -> PhpResult<bool> {
        self.lock
            .run_as(Family::Semaphore, |lock, _| lock.is_acquired())
    }

    pub fn release(&mut self) -> PhpResult<()> {
        self.lock
            .run_as(Family::Semaphore, |lock, log| lock.release(log))
    }

    /// True once the background refresher found the slot gone (no network call).
    pub fn is_lost(&self) -> PhpResult<bool> {
        self.lock.is_lost()
    }

    pub fn is_expired(&self) -> PhpResult<bool> {
        self.lock.is_expired()
    }

    pub fn get_remaining_lifetime(&self) -> PhpResult<Option<f64>> {
        self.lock.get_remaining_lifetime()
    }

    #[php(name = "__serialize")]
    pub fn serialize(&self) -> PhpResult<Vec<i64>> {
        Err(bad_method_call_exception(
            "Cannot serialize Deadbolt\\Semaphore\\Semaphore",
        ))
    }

    #[php(name = "__unserialize")]
    pub fn unserialize(&self, data: &ext_php_rs::types::ZendHashTable) -> PhpResult<()> {
        let _ = data;
        Err(bad_method_call_exception(
            "Cannot unserialize Deadbolt\\Semaphore\\Semaphore",
        ))
    }
}

/// `Deadbolt\Semaphore\SemaphoreFactory`: semaphores on one store (a FlockStore, InMemoryStore or
/// RedisStore: the same objects as for locks; or an object implementing
/// `Deadbolt\Semaphore\PersistingStoreInterface`, called through its methods), all reporting to
/// one logger.
#[php_class]
#[php(name = "Deadbolt\\Semaphore\\SemaphoreFactory")]
pub struct PhpSemaphoreFactory {
    store: StoreRef,
    logger: Option<Zval>,
}

impl PhpSemaphoreFactory {
    /// A factory on the semaphores of the store object `store` (`argument` names it in a refusal).
    fn on(store: &mut ZendObject, argument: &str) -> PhpResult<Self> {
        if let Some(semaphores) =
            ext_php_rs::types::ZendClassObject::<PhpSemaphoreStore>::from_zend_obj(store)
        {
            return Ok(PhpSemaphoreFactory {
                store: semaphores.store.clone(),
                logger: None,
            });
        }
        let store = match crate::user_store::UserStore::semaphores_of(store) {
            // It calls PHP: never from Drop (a Semaphore's end-of-request path releases it).
            Some(user) => StoreRef::Lent(Rc::new(user)),
            None => engine_store_arg(store, argument)?,
        };
        let semaphores = |inner: &Rc<dyn deadbolt_core::Store>| {
            deadbolt_core::semaphores(Rc::clone(inner)).map_err(semaphore_error)
        };
        let store = match &store {
            StoreRef::Owned(inner) => StoreRef::Owned(semaphores(inner)?),
            StoreRef::Lent(inner) => StoreRef::Lent(semaphores(inner)?),
        };
        Ok(PhpSemaphoreFactory {
            store,
            logger: None,
        })
    }

    fn semaphore(
        &self,
        key: SharedKey,
        ttl: Option<f64>,
        auto_release: bool,
        auto_refresh: AutoRefresh,
    ) -> PhpResult<PhpSemaphore> {
        let ttl = semaphore_ttl(ttl)?;
        crate::user_store::check_semaphore_ttl(&self.store, ttl).map_err(semaphore_error)?;
        let lock = Lock::new(key, self.store.clone(), ttl, auto_release)
            .with_auto_refresh(auto_refresh)
            .map_err(semaphore_error)?;
        let logger = self.logger.as_ref().map(Zval::shallow_clone);
        Ok(PhpSemaphore {
            lock: PhpLock::new(lock, logger),
        })
    }

    fn auto_refresh(enabled: bool, max_hold: Option<f64>) -> PhpResult<AutoRefresh> {
        Ok(AutoRefresh {
            enabled,
            max_hold: args::max_hold(max_hold)?,
        })
    }
}

#[php_impl]
impl PhpSemaphoreFactory {
    pub fn __construct(store: &mut ZendObject) -> PhpResult<Self> {
        Self::on(
            store,
            "Deadbolt\\Semaphore\\SemaphoreFactory::__construct(): Argument #1 ($store)",
        )
    }

    /// symfony/semaphore's `createSemaphore()`; `$autoRefresh` and `$maxHold` as for locks.
    #[php(defaults(weight = 1, ttlInSecond = DEFAULT_TTL, autoRelease = true, autoRefresh = false, maxHold = None))]
    // The PHP signature: symfony/semaphore's five parameters, then the refresher's two.
    #[allow(clippy::too_many_arguments)]
    pub fn create_semaphore(
        &self,
        resource: Bytes<1>,
        limit: i64,
        weight: i64,
        ttlInSecond: OptionalFloat<4>,
        autoRelease: Bool<5>,
        autoRefresh: Bool<6>,
        maxHold: OptionalFloat<7>,
    ) -> PhpResult<PhpSemaphore> {
        let slots = Slots::new(limit, weight).map_err(semaphore_error)?;
        let key = Arc::new(parking_lot::Mutex::new(Key::with_slots(resource.0, slots)));
        let auto_refresh = Self::auto_refresh(autoRefresh.0, maxHold.0)?;
        self.semaphore(key, ttlInSecond.0, autoRelease.0, auto_refresh)
    }

    #[php(defaults(ttlInSecond = DEFAULT_TTL, autoRelease = true, autoRefresh = false, maxHold = None))]
    pub fn create_semaphore_from_key(
        &self,
        key: &PhpSemaphoreKey,
        ttlInSecond: OptionalFloat<2>,
        autoRelease: Bool<3>,
        autoRefresh: Bool<4>,
        maxHold: OptionalFloat<5>,
    ) -> PhpResult<PhpSemaphore> {
        let auto_refresh = Self::auto_refresh(autoRefresh.0, maxHold.0)?;
        self.semaphore(
            Arc::clone(&key.inner),
            ttlInSecond.0,
            autoRelease.0,
            auto_refresh,
        )
    }

    /// Any PSR-3 logger: an object with `log($level, $message, array $context)`.
    pub fn set_logger(&mut self, logger: &mut ZendObject) -> PhpResult<()> {
        self.logger = Some(args::logger(
            logger,
            "Deadbolt\\Semaphore\\SemaphoreFactory::setLogger()",
        )?);
        Ok(())
    }
}

/// Its logger, and the object of a store written in PHP that only this factory holds.
impl GcChildren for PhpSemaphoreFactory {
    fn gc_children(&self, report: &mut dyn FnMut(&Zval)) {
        if let Some(logger) = &self.logger {
            report(logger);
        }
        crate::user_store::store_children(&self.store, report);
    }
}

/// The values kept in its state (`setState()`).
impl GcChildren for PhpSemaphoreKey {
    fn gc_children(&self, report: &mut dyn FnMut(&Zval)) {
        self.state.gc_children(report);
    }
}

/// Its logger.
impl GcChildren for PhpSemaphore {
    fn gc_children(&self, report: &mut dyn FnMut(&Zval)) {
        self.lock.gc_children(report);
    }
}

/// As a Lock shows itself.
impl crate::zend_object::DebugInfo for PhpSemaphore {
    fn debug_info(&self, table: &mut ext_php_rs::types::ZendHashTable) {
        self.lock.debug_info(table);
    }
}

/// `Deadbolt\Semaphore\SemaphoreStore`: a store's semaphores at symfony/semaphore's store level
/// (`save`, `putOffExpiration`, `delete`, `exists` on a Key), for code and tests written against
/// symfony/semaphore's `PersistingStoreInterface`; made from the same store objects as locks.
#[php_class]
#[php(name = "Deadbolt\\Semaphore\\SemaphoreStore")]
#[php(flags = ClassFlags::Final)]
#[php(implements(crate::interfaces::PhpInterfaceSemaphorePersistingStoreInterface))]
pub struct PhpSemaphoreStore {
    store: StoreRef,
}

impl PhpSemaphoreStore {
    /// The engine key of `key`, this process's own (a key inherited through fork() holds nothing).
    fn adopted(key: &PhpSemaphoreKey) -> PhpResult<parking_lot::MutexGuard<'_, Key>> {
        let mut key = key.key()?;
        key.adopt_if_inherited();
        Ok(key)
    }

    /// symfony/semaphore's check of a store call's TTL, with its message.
    fn ttl(secs: f64) -> PhpResult<deadbolt_core::Ttl> {
        deadbolt_core::Ttl::from_secs(secs).map_err(|_| {
            semaphore_error(deadbolt_core::Error::InvalidArgument {
                message: format!("The TTL should be greater than 0, '{secs}' given."),
            })
        })
    }

    fn call<T>(
        &self,
        call: impl FnOnce(&dyn deadbolt_core::Store) -> PhpResult<T>,
    ) -> PhpResult<T> {
        crate::php_call::method(|| call(self.store.store().as_ref()))
    }
}

/// symfony/semaphore's exceptions of a store call: `class` with its message about `key`, the
/// engine's error (if any) as the previous one.
fn store_exception(class: ExceptionClass, message: String) -> PhpException {
    let exception = PhpException::new(message.clone(), 0, class.entry());
    match crate::error_map::new_exception(class.entry(), &message, None) {
        Some(object) => exception.with_object(object),
        None => exception,
    }
}

#[php_impl]
impl PhpSemaphoreStore {
    /// `$store`: a Deadbolt\Store\RedisStore, FlockStore or InMemoryStore, or an object
    /// implementing `Deadbolt\Semaphore\PersistingStoreInterface`.
    pub fn __construct(store: &mut ZendObject) -> PhpResult<Self> {
        let factory = PhpSemaphoreFactory::on(
            store,
            "Deadbolt\\Semaphore\\SemaphoreStore::__construct(): Argument #1 ($store)",
        )?;
        Ok(PhpSemaphoreStore {
            store: factory.store,
        })
    }

    /// Takes `$key`'s weight for `$ttlInSecond`; `SemaphoreAcquiringException` when there is no
    /// room.
    pub fn save(&self, key: &PhpSemaphoreKey, ttlInSecond: Float<2>) -> PhpResult<()> {
        let ttl = Self::ttl(ttlInSecond.0)?;
        self.call(|store| {
            let mut engine = Self::adopted(key)?;
            match store.save(&mut engine, Mode::Exclusive, Some(ttl)) {
                Err(e) if e.is_conflict() => Err(store_exception(
                    ExceptionClass::SemaphoreAcquiring,
                    format!(
                        "The semaphore \"{}\" could not be acquired: the script return false.",
                        engine.display_resource()
                    ),
                )),
                other => other.map_err(semaphore_error),
            }
        })
    }

    /// Puts `$key`'s slot off; `SemaphoreExpiredException` when it holds none.
    pub fn put_off_expiration(
        &self,
        key: &PhpSemaphoreKey,
        ttlInSecond: Float<2>,
    ) -> PhpResult<()> {
        let ttl = Self::ttl(ttlInSecond.0)?;
        self.call(|store| {
            let mut engine = Self::adopted(key)?;
            match store.put_off_expiration(&mut engine, ttl) {
                Err(e) if e.is_conflict() => Err(store_exception(
                    ExceptionClass::SemaphoreExpired,
                    format!(
                        "The semaphore \"{}\" has expired: the script returns a positive number.",
                        engine.display_resource()
                    ),
                )),
                other => other.map_err(semaphore_error),
            }
        })
    }

    pub fn delete(&self, key: &PhpSemaphoreKey) -> PhpResult<()> {
        self.call(|store| {
            store
                .delete(&mut *Self::adopted(key)?)
                .map_err(semaphore_error)
        })
    }

    pub fn exists(&self, key: &PhpSemaphoreKey) -> PhpResult<bool> {
        self.call(|store| store.exists(&*Self::adopted(key)?).map_err(semaphore_error))
    }
}
