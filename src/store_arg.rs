//! The engine store behind a PHP store argument (`new Lock($key, $store)`, `new LockFactory($store)`).

use std::rc::Rc;

use deadbolt_core::StoreRef;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendClassObject, ZendObject};

use crate::combined_store::PhpCombinedStore;
use crate::error_map::type_error;
use crate::redis_store::PhpRedisStore;
use crate::user_store::UserStore;

/// The engine store behind a store argument: a Deadbolt store class, or any PHP object that
/// implements `Deadbolt\Store\PersistingStoreInterface` (called through its methods,
/// user_store.rs); a `\TypeError` naming `argument` otherwise.
pub fn engine_store_arg(object: &mut ZendObject, argument: &str) -> PhpResult<StoreRef> {
    if let Some(store) = native_store(object) {
        return Ok(store);
    }
    if let Some(store) = UserStore::of(object) {
        // It calls PHP: never from Drop (the Lock's end-of-request path releases it).
        return Ok(StoreRef::Lent(Rc::new(store)));
    }
    Err(type_error(format!(
        "{argument} must be a Deadbolt store or implement {}, {} given",
        crate::user_store::INTERFACE,
        crate::args::class_name(object)
    )))
}

/// The engine store behind one of Deadbolt's store classes.
fn native_store(object: &ZendObject) -> Option<StoreRef> {
    if let Some(store) = crate::stores::plain_store(object) {
        return Some(StoreRef::Owned(store));
    }
    if let Some(redis) = ZendClassObject::<PhpRedisStore>::from_zend_obj(object) {
        return Some(redis.store_ref());
    }
    if let Some(combined) = ZendClassObject::<PhpCombinedStore>::from_zend_obj(object) {
        return Some(combined.store_ref());
    }
    if let Some(pdo) = ZendClassObject::<crate::pdo_store::PhpPdoStore>::from_zend_obj(object) {
        return Some(pdo.store_ref());
    }
    if let Some(mysql) = ZendClassObject::<crate::mysql_store::PhpMysqlStore>::from_zend_obj(object)
    {
        return Some(mysql.store_ref());
    }
    if let Some(postgres) =
        ZendClassObject::<crate::postgres_store::PhpPostgreSqlStore>::from_zend_obj(object)
    {
        return Some(postgres.store_ref());
    }
    None
}
