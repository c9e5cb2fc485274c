//! The engine store behind a PHP store argument (`new Lock($key, $store)`, `new LockFactory($store)`).

use deadbolt_core::StoreRef;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendClassObject, ZendObject};

use crate::error_map::type_error;
use crate::redis_store::PhpRedisStore;
use crate::stores::{PhpFlockStore, PhpInMemoryStore};

/// The engine store behind a PHP store object, or `None` when the object is not a Deadbolt store.
pub fn engine_store(object: &ZendObject) -> Option<StoreRef> {
    if let Some(flock) = ZendClassObject::<PhpFlockStore>::from_zend_obj(object) {
        return Some(StoreRef::Owned(flock.inner.clone()));
    }
    if let Some(memory) = ZendClassObject::<PhpInMemoryStore>::from_zend_obj(object) {
        return Some(StoreRef::Owned(memory.inner.clone()));
    }
    if let Some(redis) = ZendClassObject::<PhpRedisStore>::from_zend_obj(object) {
        return Some(redis.store_ref());
    }
    None
}

/// The engine store behind a store argument; a `\\TypeError` naming `argument` otherwise.
pub fn engine_store_arg(object: &ZendObject, argument: &str) -> PhpResult<StoreRef> {
    engine_store(object).ok_or_else(|| {
        type_error(format!(
            "{argument} must be a Deadbolt store, {} given",
            crate::args::class_name(object)
        ))
    })
}
