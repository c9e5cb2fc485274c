//! `Deadbolt\Store\FlockStore` and `InMemoryStore`, and the store contract every PHP store class exposes. Each method is the
//! store contract of symfony/lock (`save`, `saveRead`, `waitAndSave`, `waitAndSaveRead`,
//! `putOffExpiration`, `delete`, `exists`), so adapters to other frameworks can drive a store.
// PHP takes parameter names from the Rust names, and symfony/lock spells them in camelCase
// (`$autoRelease`, `$lockPath`): reflection and named arguments must match.
#![allow(non_snake_case)]

use std::rc::Rc;

use deadbolt_core::{FlockStore, InMemoryStore, Mode, Store, WaitReport};
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendClassObject, ZendObject};

use crate::args;
use crate::error_map::{invalid_argument, to_php, type_error};
use crate::key::PhpKey;
use crate::logger::report_store_warning;
use crate::redis_store::PhpRedisStore;

/// The store contract on any engine store, shared by every PHP store class.
pub(crate) struct Contract<'a>(pub(crate) &'a dyn Store);

impl Contract<'_> {
    pub(crate) fn save(&self, key: &PhpKey) -> PhpResult<()> {
        self.save_in(key, Mode::Exclusive)
    }

    pub(crate) fn save_read(&self, key: &PhpKey) -> PhpResult<()> {
        self.save_in(key, Mode::Shared)
    }

    pub(crate) fn wait_and_save(&self, key: &PhpKey) -> PhpResult<()> {
        self.wait_in(key, Mode::Exclusive)
    }

    pub(crate) fn wait_and_save_read(&self, key: &PhpKey) -> PhpResult<()> {
        self.wait_in(key, Mode::Shared)
    }

    fn save_in(&self, key: &PhpKey, mode: Mode) -> PhpResult<()> {
        self.0
            .save(&mut key.inner.lock(), mode, None)
            .map_err(to_php)
    }

    /// symfony/lock's `waitAndSave`: waits without a deadline.
    fn wait_in(&self, key: &PhpKey, mode: Mode) -> PhpResult<()> {
        let mut report = WaitReport::default();
        self.0
            .wait(&mut key.inner.lock(), mode, None, None, &mut report)
            .map(|_| ())
            .map_err(to_php)
    }

    pub(crate) fn put_off_expiration(&self, key: &PhpKey, ttl: f64) -> PhpResult<()> {
        let ttl = args::ttl(ttl)?;
        self.0
            .put_off_expiration(&mut key.inner.lock(), ttl)
            .map_err(to_php)
    }

    pub(crate) fn delete(&self, key: &PhpKey) -> PhpResult<()> {
        self.0.delete(&mut key.inner.lock()).map_err(to_php)
    }

    pub(crate) fn exists(&self, key: &PhpKey) -> PhpResult<bool> {
        self.0.exists(&key.inner.lock()).map_err(to_php)
    }
}

impl Contract<'_> {
    /// Runs one contract call on `store`, then passes on a setup warning the store noticed (an
    /// evicting Redis) to PHP's error log.
    pub(crate) fn checked<T>(
        store: &dyn Store,
        call: impl FnOnce(Contract<'_>) -> PhpResult<T>,
    ) -> PhpResult<T> {
        let result = call(Contract(store));
        report_store_warning(store, None, Vec::new);
        result
    }
}

/// The PHP methods of a store class: its constructor as given, then the seven methods of the store
/// contract, each a call into [`Contract`] on the class's `inner` store. ext-php-rs takes one
/// `#[php_impl]` block per class, so the contract is stamped here rather than written per class.
macro_rules! store_class_methods {
    ($class:ident { $($constructor:tt)* }) => {
        #[php_impl]
        impl $class {
            $($constructor)*

            pub fn save(&self, key: &PhpKey) -> PhpResult<()> {
                Contract::checked(self.inner.as_ref(), |c| c.save(key))
            }

            pub fn save_read(&self, key: &PhpKey) -> PhpResult<()> {
                Contract::checked(self.inner.as_ref(), |c| c.save_read(key))
            }

            pub fn wait_and_save(&self, key: &PhpKey) -> PhpResult<()> {
                Contract::checked(self.inner.as_ref(), |c| c.wait_and_save(key))
            }

            pub fn wait_and_save_read(&self, key: &PhpKey) -> PhpResult<()> {
                Contract::checked(self.inner.as_ref(), |c| c.wait_and_save_read(key))
            }

            pub fn put_off_expiration(&self, key: &PhpKey, ttl: f64) -> PhpResult<()> {
                Contract::checked(self.inner.as_ref(), |c| c.put_off_expiration(key, ttl))
            }

            pub fn delete(&self, key: &PhpKey) -> PhpResult<()> {
                Contract::checked(self.inner.as_ref(), |c| c.delete(key))
            }

            pub fn exists(&self, key: &PhpKey) -> PhpResult<bool> {
                Contract::checked(self.inner.as_ref(), |c| c.exists(key))
            }
        }
    };
}
pub(crate) use store_class_methods;

#[php_class]
#[php(name = "Deadbolt\\Store\\FlockStore")]
#[php(flags = ClassFlags::Final)]
pub struct PhpFlockStore {
    inner: Rc<FlockStore>,
}

impl PhpFlockStore {
    pub(crate) fn open(dir: String) -> PhpResult<Self> {
        FlockStore::new(dir)
            .map(|store| PhpFlockStore {
                inner: Rc::new(store),
            })
            .map_err(to_php)
    }
}

store_class_methods!(PhpFlockStore {
    #[php(defaults(lockPath = None))]
    pub fn __construct(lockPath: Option<String>) -> PhpResult<Self> {
        let dir = match lockPath {
            Some(dir) => dir,
            None => system_temp_dir()?,
        };
        Self::open(dir)
    }
});

#[php_class]
#[php(name = "Deadbolt\\Store\\InMemoryStore")]
#[php(flags = ClassFlags::Final)]
pub struct PhpInMemoryStore {
    inner: Rc<InMemoryStore>,
}

store_class_methods!(PhpInMemoryStore {
    pub fn __construct() -> Self {
        PhpInMemoryStore {
            inner: Rc::new(InMemoryStore::new()),
        }
    }
});

/// The engine store behind a PHP store object, or `None` when the object is not a Deadbolt store.
pub fn engine_store(object: &ZendObject) -> Option<Rc<dyn Store>> {
    if let Some(flock) = ZendClassObject::<PhpFlockStore>::from_zend_obj(object) {
        return Some(flock.inner.clone());
    }
    if let Some(memory) = ZendClassObject::<PhpInMemoryStore>::from_zend_obj(object) {
        return Some(memory.inner.clone());
    }
    if let Some(redis) = ZendClassObject::<PhpRedisStore>::from_zend_obj(object) {
        return Some(redis.inner.clone());
    }
    None
}

/// The engine store behind a store argument; a `\\TypeError` naming `argument` otherwise.
pub fn engine_store_arg(object: &ZendObject, argument: &str) -> PhpResult<Rc<dyn Store>> {
    engine_store(object).ok_or_else(|| {
        type_error(format!(
            "{argument} must be a Deadbolt store, {} given",
            crate::args::class_name(object)
        ))
    })
}

/// PHP's `sys_get_temp_dir()`, which honours the `sys_temp_dir` ini setting as symfony/lock does.
pub(crate) fn system_temp_dir() -> PhpResult<String> {
    ext_php_rs::types::ZendCallable::try_from_name("sys_get_temp_dir")
        .and_then(|f| f.try_call(vec![]))
        .ok()
        .and_then(|dir| dir.string())
        .ok_or_else(|| invalid_argument("Cannot determine the system temp directory.".into()))
}
