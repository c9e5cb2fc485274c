//! A store written in PHP: any object implementing `Deadbolt\Store\PersistingStoreInterface`
//! works as a store through its own methods, as any store does under symfony/lock's Lock; one
//! implementing `Deadbolt\Semaphore\PersistingStoreInterface` keeps semaphores the same way (its
//! `save($key, $ttl)` takes the slot with its TTL, as under symfony/semaphore's Semaphore; a
//! waiting acquire polls it as below; `SemaphoreAcquiringException` is no room,
//! `SemaphoreExpiredException` a slot that is gone).
//!
//! What a Lock asks of it, and how:
//! - acquire: `save($key)` (`saveRead($key)` for a read lock when the object implements
//!   `SharedLockStoreInterface`, else `save()`, as symfony/lock falls back), then, for a Lock with
//!   a TTL, `putOffExpiration($key, $ttl)`, as symfony/lock's Lock calls `refresh()`;
//! - a blocking acquire polls `save()` (every 90-110 ms, with the deadline, signals and
//!   `max_execution_time` honoured): the object's own `waitAndSave()` could honour none of them;
//! - refresh: `putOffExpiration()`; release: `delete()`, then `exists()`; `isAcquired()`: `exists()`.
//!
//! The object is handed one `Deadbolt\Key` (a `Deadbolt\Semaphore\Key` for semaphores) per lock
//! owner (by token), kept for as long as the owner holds the lock, so state the store keeps in it
//! (`setState()`) lasts as in symfony/lock.
//! That Key carries the lock's resource, token and lifetime; the lifetime goes back to the Lock
//! after each call. The calls go through the boundary of `php_call.rs`; the exceptions they throw
//! become Deadbolt's (a `LockConflictedException` of Deadbolt's or symfony/lock's is a conflict),
//! and any other one is the previous exception of the one Deadbolt throws ([`thrown_for`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use deadbolt_core::{
    Capabilities, Error, ExpiringStore, Extender, Key, Mode, Result, SemaphoreStore, SharedKey,
    Store, StoreRef, Ttl,
};
use ext_php_rs::convert::{IntoZval, IntoZvalDyn};
use ext_php_rs::types::{ZendClassObject, ZendObject, Zval};
use parking_lot::MutexGuard;

use crate::key::PhpKey;
use crate::php_call::guarded;
use crate::semaphore::PhpSemaphoreKey;
use crate::zend_object::gc::GcChildren;
use crate::zend_object::{take_pending_exception, ParkedException};

/// The interface an object implements to be taken as a store.
pub const INTERFACE: &str = "Deadbolt\\Store\\PersistingStoreInterface";
const SHARED: &str = "Deadbolt\\Store\\SharedLockStoreInterface";
/// The interface an object implements to be taken as a store of semaphores.
pub const SEMAPHORE_INTERFACE: &str = "Deadbolt\\Semaphore\\PersistingStoreInterface";

/// What a store object keeps, so which Key class it is handed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// Locks (`Deadbolt\Key`); `shared`: it implements `SharedLockStoreInterface`.
    Locks { shared: bool },
    /// Semaphores (`Deadbolt\Semaphore\Key`).
    Semaphores,
}

thread_local! {
    /// The exception a store object threw that became an engine error, with that error's message,
    /// until the error is thrown to PHP ([`thrown_for`]) or the request ends.
    static THROWN: RefCell<Option<(String, Zval)>> = const { RefCell::new(None) };
}

/// The exception a store written in PHP threw that became the engine error whose message is
/// `message`: the previous exception of the one Deadbolt throws for it.
pub fn thrown_for(message: &str) -> Option<Zval> {
    THROWN.with(|thrown| {
        let mut thrown = thrown.try_borrow_mut().ok()?;
        match thrown.take() {
            Some((kept, exception)) if kept == message => Some(exception),
            other => {
                *thrown = other;
                None
            }
        }
    })
}

/// Lets go of an exception no error was thrown for (RSHUTDOWN: PHP's objects still exist).
pub fn forget_thrown() {
    THROWN.with(|thrown| {
        if let Ok(mut thrown) = thrown.try_borrow_mut() {
            thrown.take();
        }
    });
}

/// A PHP store object, called through its methods.
pub struct UserStore {
    object: Zval,
    side: Side,
    name: String,
    /// The Key object handed to the store for each owner (token) while it may hold the lock.
    keys: RefCell<HashMap<String, Zval>>,
}

impl UserStore {
    /// `object` as a store of locks, when it implements [`INTERFACE`].
    pub fn of(object: &mut ZendObject) -> Option<Self> {
        if !implements(object, INTERFACE) {
            return None;
        }
        let shared = implements(object, SHARED);
        Some(Self::on(object, Side::Locks { shared }))
    }

    /// `object` as a store of semaphores, when it implements [`SEMAPHORE_INTERFACE`].
    pub fn semaphores_of(object: &mut ZendObject) -> Option<Self> {
        implements(object, SEMAPHORE_INTERFACE).then(|| Self::on(object, Side::Semaphores))
    }

    fn on(object: &mut ZendObject, side: Side) -> Self {
        let name = format!("UserStore({})", crate::args::class_name(object));
        let mut zval = Zval::new();
        zval.set_object(object);
        UserStore {
            object: zval,
            side,
            name,
            keys: RefCell::default(),
        }
    }

    /// The Key object for `key`'s owner, with `key`'s lifetime.
    fn php_key(&self, key: &Key) -> Result<Zval> {
        let token = key.token()?.as_str().to_owned();
        let existing = self.keys.borrow().get(&token).map(Zval::shallow_clone);
        let zval = match existing {
            Some(zval) => zval,
            None => {
                let zval = self
                    .fresh_key(key, token.clone())?
                    .map_err(|e| self.failure(format!("cannot make its Key: {e}")))?;
                self.keys.borrow_mut().insert(token, zval.shallow_clone());
                zval
            }
        };
        if let Some(inner) = inner_key(&zval) {
            if let Some(mut handed) = self.handed(key, &inner)? {
                copy_lifetime(key, &mut handed);
            }
        }
        Ok(zval)
    }

    /// A new Key object of the store's side for `key`'s resource (and slots) and `token`.
    fn fresh_key(
        &self,
        key: &Key,
        token: String,
    ) -> Result<std::result::Result<Zval, ext_php_rs::error::Error>> {
        let resource = key.resource().to_vec();
        Ok(match (self.side, key.slots()) {
            (Side::Semaphores, Some(slots)) => {
                let engine = Key::import_with_slots(resource, token, slots)?;
                PhpSemaphoreKey::from_key(engine).into_zval(false)
            }
            _ => PhpKey::from_key(Key::import(resource, token)?).into_zval(false),
        })
    }

    /// The Key object handed to the store (`inner`), locked, to copy a lifetime to or from the
    /// engine's `key`. `None` when they are one key (a Lock made from that Key object, used by
    /// the store's own PHP code): nothing to copy. When that Key object is in use by a call still
    /// running (the store's code used it with a Lock or another store), waiting for it would
    /// wait for ever: the call fails instead.
    fn handed<'a>(&self, key: &Key, inner: &'a SharedKey) -> Result<Option<MutexGuard<'a, Key>>> {
        if std::ptr::eq(inner.data_ptr(), key) {
            return Ok(None);
        }
        inner.try_lock().map(Some).ok_or_else(|| {
            self.failure(
                "its Key is in use by a call still running (the store's code called a Lock or \
                 a store with the Key it was handed, from inside this call)"
                    .into(),
            )
        })
    }

    /// Calls `$store->method($key, ...)` and gives `key` the lifetime the store left in its Key.
    fn call(&self, method: &str, key: &mut Key, extra: Option<f64>) -> Result<Zval> {
        let php_key = self.php_key(key)?;
        let result = match extra {
            Some(ttl) => self.call_method(method, vec![&php_key, &ttl]),
            None => self.call_method(method, vec![&php_key]),
        };
        if let Some(inner) = inner_key(&php_key) {
            if let Some(handed) = self.handed(key, &inner)? {
                copy_lifetime(&handed, key);
            }
        }
        result.map_err(|e| self.mapped(e, key))
    }

    /// `$store->method(...$params)` through the boundary: a bailout or exit is handed back to
    /// PHP later; an exception the store threw is taken from the engine and returned.
    fn call_method(
        &self,
        method: &str,
        params: Vec<&dyn IntoZvalDyn>,
    ) -> std::result::Result<Zval, Thrown> {
        forget_thrown();
        let _parked = crate::php_call::exception_in_flight()
            .then(ParkedException::park)
            .flatten();
        crate::interrupts::forget_handlers();
        let result = guarded(|| self.object.try_call_method(method, params))
            .map_err(|ended| Thrown::Other(format!("{method}(): {ended}")))?;
        if crate::interrupts::exception_is_a_handlers() {
            return Err(Thrown::Other(format!(
                "{method}() was interrupted by an exception of the application"
            )));
        }
        if let Some(exception) = take_pending_exception() {
            return Err(Thrown::Exception(Caught::of(exception)));
        }
        result.map_err(|e| Thrown::Other(format!("{method}() could not be called: {e}")))
    }

    fn mapped(&self, thrown: Thrown, key: &Key) -> Error {
        match thrown {
            Thrown::Exception(caught) if caught.conflict => {
                Error::conflict(key.display_resource(), &self.name)
            }
            Thrown::Exception(caught) if caught.gone => {
                Error::not_held(key.display_resource(), &self.name)
            }
            Thrown::Exception(caught) if caught.expired => Error::Expired {
                message: caught.message,
            },
            Thrown::Exception(caught) => {
                let error = self.failure(format!("{}: {}", caught.class, caught.message));
                // Kept for the exception Deadbolt throws, as its previous one.
                THROWN.with(|thrown| {
                    if let Ok(mut thrown) = thrown.try_borrow_mut() {
                        *thrown = Some((error.to_string(), caught.exception));
                    }
                });
                error
            }
            Thrown::Other(message) => self.failure(message),
        }
    }

    fn failure(&self, what: String) -> Error {
        Error::Storage {
            message: format!("{} failed: {what}", self.name),
            source: None,
        }
    }

    /// The owner of `key` no longer holds the lock: its Key object goes.
    fn forget(&self, key: &Key) {
        if let Some(token) = key.drawn_token() {
            self.keys.borrow_mut().remove(token.as_str());
        }
    }
}

/// The PHP object and the Key objects it was handed, each one counted reference of this store's.
impl GcChildren for UserStore {
    fn gc_children(&self, report: &mut dyn FnMut(&Zval)) {
        report(&self.object);
        // Borrowed (a Key being handed over right now): not reported, which is only ever safe.
        if let Ok(keys) = self.keys.try_borrow() {
            keys.values().for_each(report);
        }
    }
}

/// What a store method threw.
enum Thrown {
    Exception(Caught),
    Other(String),
}

/// The facts kept of an exception the store threw, and the exception.
struct Caught {
    class: String,
    message: String,
    /// No room: a lock held by someone else, a semaphore full.
    conflict: bool,
    /// A semaphore's slot that is gone (`SemaphoreExpiredException`).
    gone: bool,
    expired: bool,
    exception: Zval,
}

impl Caught {
    fn of(mut exception: ext_php_rs::boxed::ZBox<ZendObject>) -> Caught {
        let is = |names: [&str; 2]| {
            names
                .iter()
                .any(|name| crate::args::is_instance_of(&exception, name))
        };
        Caught {
            class: crate::args::class_name(&exception),
            message: crate::args::message_of(&exception).unwrap_or_default(),
            conflict: is([
                "Deadbolt\\Exception\\LockConflictedException",
                "Symfony\\Component\\Lock\\Exception\\LockConflictedException",
            ]) || is([
                "Deadbolt\\Semaphore\\Exception\\SemaphoreAcquiringException",
                "Symfony\\Component\\Semaphore\\Exception\\SemaphoreAcquiringException",
            ]),
            gone: is([
                "Deadbolt\\Semaphore\\Exception\\SemaphoreExpiredException",
                "Symfony\\Component\\Semaphore\\Exception\\SemaphoreExpiredException",
            ]),
            expired: is([
                "Deadbolt\\Exception\\LockExpiredException",
                "Symfony\\Component\\Lock\\Exception\\LockExpiredException",
            ]),
            exception: {
                let mut zval = Zval::new();
                zval.set_object(&mut exception);
                zval
            },
        }
    }
}

/// Whether `object` implements the interface `name`.
fn implements(object: &ZendObject, name: &str) -> bool {
    crate::args::is_instance_of(object, name)
}

/// The engine key inside a `Deadbolt\Key` or `Deadbolt\Semaphore\Key` object.
fn inner_key(zval: &Zval) -> Option<deadbolt_core::SharedKey> {
    let object = zval.object()?;
    ZendClassObject::<PhpKey>::from_zend_obj(object)
        .map(|key| key.inner.clone())
        .or_else(|| {
            ZendClassObject::<PhpSemaphoreKey>::from_zend_obj(object).map(|key| key.shared_key())
        })
}

/// Gives `to` the lifetime of `from`.
pub(crate) fn copy_lifetime(from: &Key, to: &mut Key) {
    to.reset_lifetime();
    match from.remaining_lifetime() {
        None => {}
        Some(left) => match Ttl::from_secs(left) {
            Ok(ttl) => to.reduce_lifetime(ttl),
            Err(_) => to.expire_now(),
        },
    }
}

impl Store for UserStore {
    fn name(&self) -> &str {
        &self.name
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn save(&self, key: &mut Key, mode: Mode, ttl: Option<Ttl>) -> Result<()> {
        let method = if mode == Mode::Shared && self.side == (Side::Locks { shared: true }) {
            "saveRead"
        } else {
            "save"
        };
        self.call(method, key, None)?;
        if let Some(ttl) = ttl {
            self.call("putOffExpiration", key, Some(ttl.duration().as_secs_f64()))?;
        }
        Ok(())
    }

    fn put_off_expiration(&self, key: &mut Key, ttl: Ttl) -> Result<()> {
        self.call("putOffExpiration", key, Some(ttl.duration().as_secs_f64()))
            .map(|_| ())
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        if key.drawn_token().is_none() {
            return Ok(());
        }
        self.call("delete", key, None)?;
        self.forget(key);
        Ok(())
    }

    fn exists(&self, key: &Key) -> Result<bool> {
        if key.drawn_token().is_none() {
            return Ok(false);
        }
        let php_key = self.php_key(key)?;
        let answer = self
            .call_method("exists", vec![&php_key])
            .map_err(|e| self.mapped(e, key))?;
        answer.bool().ok_or_else(|| {
            self.failure(format!(
                "exists() returned {}, not a bool",
                answer.get_type()
            ))
        })
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities {
            blocking: None,
            expiring: Some(self),
            semaphores: (self.side == Side::Semaphores).then_some(self as &dyn SemaphoreStore),
            ..Capabilities::default()
        }
    }
}

/// symfony/semaphore's `PersistingStoreInterface` on the object: `save($key, $ttl)` takes the slot
/// with its TTL; a waiting acquire polls it every 90-110 ms (the trait's default), with the
/// deadline and interrupts honoured as a lock's poll is; the object decides when slots expire.
impl SemaphoreStore for UserStore {
    fn save(&self, key: &mut Key, ttl: Option<Ttl>) -> Result<()> {
        // Refused when the semaphore is made (check_semaphore_ttl); kept for any other way in.
        let ttl = ttl.ok_or_else(|| no_ttl(&self.name))?;
        self.call("save", key, Some(ttl.duration().as_secs_f64()))
            .map(|_| ())
    }

    fn put_off_expiration(&self, key: &mut Key, ttl: Ttl) -> Result<()> {
        Store::put_off_expiration(self, key, ttl)
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        Store::delete(self, key)
    }

    fn exists(&self, key: &Key) -> Result<bool> {
        Store::exists(self, key)
    }

    fn expires(&self) -> bool {
        true
    }
}

/// Its locks may expire (the store decides), but nothing refreshes them in the background: the
/// refresher thread cannot call PHP.
impl ExpiringStore for UserStore {
    fn extender(&self) -> Option<std::sync::Arc<dyn Extender>> {
        None
    }
}

/// Refuses a semaphore without a TTL on a store written in PHP, when it is made rather than at
/// its first acquire: symfony/semaphore's `save($key, $ttlInSecond)` has no way to say "none".
///
/// # Errors
/// [`Error::InvalidArgument`] naming the store and what to do.
pub fn check_semaphore_ttl(store: &StoreRef, ttl: Option<Ttl>) -> Result<()> {
    let (StoreRef::Owned(inner) | StoreRef::Lent(inner)) = store;
    let user = inner
        .as_any()
        .and_then(|any| any.downcast_ref::<UserStore>());
    match (user, ttl) {
        (Some(user), None) => Err(no_ttl(&user.name)),
        _ => Ok(()),
    }
}

fn no_ttl(store: &str) -> Error {
    Error::InvalidArgument {
        message: format!(
            "{store} needs a TTL for a semaphore: symfony/semaphore's save() takes one. Give the \
             semaphore a TTL (createSemaphore()'s $ttlInSecond, or the Semaphore's)."
        ),
    }
}

/// The values a store holds when `owner` is its sole holder: the object and Keys of a store
/// written in PHP. Other stores hold no PHP value a cycle could pass through.
pub fn store_children(store: &StoreRef, report: &mut dyn FnMut(&Zval)) {
    let (StoreRef::Owned(store) | StoreRef::Lent(store)) = store;
    if Rc::strong_count(store) != 1 {
        return;
    }
    let store: &dyn Store = store.as_ref();
    if let Some(user) = store
        .as_any()
        .and_then(|any| any.downcast_ref::<UserStore>())
    {
        user.gc_children(report);
    }
}
