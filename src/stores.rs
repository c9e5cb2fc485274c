//! The one-host stores, `Deadbolt\Store\FlockStore`, `Deadbolt\Store\SemaphoreStore` (System V)
//! and `Deadbolt\Store\InMemoryStore`, with the store contract of `store_contract.rs`.
// PHP takes parameter names from the Rust names, and symfony/lock spells them in camelCase
// (`$autoRelease`, `$lockPath`): reflection and named arguments must match.
#![allow(non_snake_case)]

use std::rc::Rc;

use deadbolt_core::{FlockStore, InMemoryStore, KeyHash, SysvSemaphoreStore};
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;

use crate::error_map::{invalid_argument, to_php};
use crate::key::PhpKey;
use crate::php_param::OptionalBytes;
use crate::store_contract::{store_class_methods, Contract};

#[php_class]
#[php(name = "Deadbolt\\Store\\FlockStore")]
#[php(flags = ClassFlags::Final)]
#[php(implements(crate::interfaces::PhpInterfaceBlockingStoreInterface))]
#[php(implements(crate::interfaces::PhpInterfaceBlockingSharedLockStoreInterface))]
pub struct PhpFlockStore {
    pub(crate) inner: Rc<FlockStore>,
}

impl PhpFlockStore {
    fn engine(&self) -> &dyn deadbolt_core::Store {
        self.inner.as_ref()
    }

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
    pub fn __construct(lockPath: OptionalBytes<1>) -> PhpResult<Self> {
        let dir = match lockPath.0 {
            Some(dir) => String::from_utf8(dir).map_err(|_| {
                invalid_argument("The lock directory's path is not valid UTF-8.".into())
            })?,
            None => system_temp_dir()?,
        };
        Self::open(dir)
    }
});

#[php_class]
#[php(name = "Deadbolt\\Store\\SemaphoreStore")]
#[php(flags = ClassFlags::Final)]
#[php(implements(crate::interfaces::PhpInterfaceBlockingStoreInterface))]
pub struct PhpSemaphoreStore {
    pub(crate) inner: Rc<SysvSemaphoreStore>,
}

impl PhpSemaphoreStore {
    fn engine(&self) -> &dyn deadbolt_core::Store {
        self.inner.as_ref()
    }

    /// The store whose IPC keys are derived as `key_hash` says: `xxh128` (symfony/lock 6.0 and
    /// later) or `md5` (symfony/lock 5.4).
    pub(crate) fn with_key_hash(key_hash: &str) -> PhpResult<Self> {
        Ok(Self::with(KeyHash::named(key_hash).map_err(to_php)?))
    }

    pub(crate) fn with(hash: KeyHash) -> Self {
        PhpSemaphoreStore {
            inner: Rc::new(SysvSemaphoreStore::new(hash)),
        }
    }
}

store_class_methods!(PhpSemaphoreStore {
    #[php(defaults(keyHash = "xxh128".to_owned()))]
    pub fn __construct(keyHash: String) -> PhpResult<Self> {
        Self::with_key_hash(&keyHash)
    }
});

#[php_class]
#[php(name = "Deadbolt\\Store\\InMemoryStore")]
#[php(flags = ClassFlags::Final)]
#[php(implements(crate::interfaces::PhpInterfaceBlockingStoreInterface))]
#[php(implements(crate::interfaces::PhpInterfaceBlockingSharedLockStoreInterface))]
pub struct PhpInMemoryStore {
    pub(crate) inner: Rc<InMemoryStore>,
}

impl PhpInMemoryStore {
    fn engine(&self) -> &dyn deadbolt_core::Store {
        self.inner.as_ref()
    }
}

store_class_methods!(PhpInMemoryStore {
    pub fn __construct() -> Self {
        PhpInMemoryStore {
            inner: Rc::new(InMemoryStore::new()),
        }
    }
});

/// PHP's `sys_get_temp_dir()`, which honours the `sys_temp_dir` ini setting as symfony/lock does.
pub(crate) fn system_temp_dir() -> PhpResult<String> {
    ext_php_rs::types::ZendCallable::try_from_name("sys_get_temp_dir")
        .ok()
        .and_then(|f| crate::php_call::guarded(|| f.try_call(vec![])).ok())
        .and_then(Result::ok)
        .and_then(|dir| dir.string())
        .ok_or_else(|| invalid_argument("Cannot determine the system temp directory.".into()))
}

impl crate::zend_object::DebugInfo for PhpFlockStore {
    fn debug_info(&self, table: &mut ext_php_rs::types::ZendHashTable) {
        let _ = table.insert("store", self.engine().name());
    }
}

impl crate::zend_object::DebugInfo for PhpSemaphoreStore {
    fn debug_info(&self, table: &mut ext_php_rs::types::ZendHashTable) {
        let _ = table.insert("store", self.engine().name());
    }
}

impl crate::zend_object::DebugInfo for PhpInMemoryStore {
    fn debug_info(&self, table: &mut ext_php_rs::types::ZendHashTable) {
        let _ = table.insert("store", self.engine().name());
    }
}

/// The engine store behind one of the store classes that wrap one engine store each, callable from
/// any thread (a combined store asks it alongside the others): the one-host stores above,
/// `Deadbolt\Store\MemcachedStore`.
pub(crate) fn plain_store(
    object: &ext_php_rs::types::ZendObject,
) -> Option<Rc<dyn deadbolt_core::Store + Sync>> {
    use ext_php_rs::types::ZendClassObject;
    if let Some(flock) = ZendClassObject::<PhpFlockStore>::from_zend_obj(object) {
        return Some(flock.inner.clone());
    }
    if let Some(semaphore) = ZendClassObject::<PhpSemaphoreStore>::from_zend_obj(object) {
        return Some(semaphore.inner.clone());
    }
    if let Some(memory) = ZendClassObject::<PhpInMemoryStore>::from_zend_obj(object) {
        return Some(memory.inner.clone());
    }
    if let Some(memcached) =
        ZendClassObject::<crate::memcached_store::PhpMemcachedStore>::from_zend_obj(object)
    {
        return Some(memcached.inner.clone());
    }
    None
}
