//! Deadbolt: Symfony-Lock-shaped locks for PHP. This crate is the PHP glue only: argument checks,
//! the PHP classes, exception mapping and PSR-3 calls. The lock engine is `deadbolt-core`.
#![cfg_attr(windows, feature(abi_vectorcall))]

mod args;
mod error_map;
mod exceptions;
mod key;
mod lock;
mod lock_factory;
mod logger;
mod metrics;
mod php_redis_client;
mod redis_store;
mod shutdown;
mod store_factory;
mod stores;

use ext_php_rs::prelude::*;
use ext_php_rs::zend::ModuleEntry;
use ext_php_rs::{info_table_end, info_table_row, info_table_start};

/// MINIT: the exception hierarchy goes first, so every other class can throw it.
fn startup(_ty: i32, _module_number: i32) -> i32 {
    match exceptions::register() {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// RINIT. ext-php-rs marks every Rust-backed class not serializable, and PHP then throws a generic
/// `Exception` before looking at the class. symfony/lock answers `serialize($lock)` with a
/// `BadMethodCallException`, which `Lock::__serialize` throws once the flag is off; a Key of a
/// store not bound to a process must travel, which `Key::__serialize` does. The classes are
/// registered after our MINIT hook runs, so the flag is cleared here (a no-op after the first time).
extern "C" fn request_startup(_ty: i32, _module_number: i32) -> i32 {
    lock::let_serialize_reach::<lock::PhpLock>();
    lock::let_serialize_reach::<key::PhpKey>();
    lock::install_destructor();
    shutdown::reset();
    0
}

/// Releases every lock of this request still held through a PHP Redis client (`\Redis`,
/// Predis), silently. Deadbolt registers it as a shutdown function when such a lock is taken.
#[php_function]
#[php(name = "Deadbolt\\release_client_locks")]
pub fn release_client_locks() {
    shutdown::release_tracked();
}

/// The `deadbolt` section of `phpinfo()`.
extern "C" fn info(_module: *mut ModuleEntry) {
    info_table_start!();
    info_table_row!("deadbolt support", "enabled");
    info_table_row!("version", env!("CARGO_PKG_VERSION"));
    info_table_row!(
        "stores",
        "flock, in-memory, redis (native or \\Redis, \\RedisCluster, Predis)"
    );
    for (counter, value) in deadbolt_core::metrics::snapshot().counters {
        info_table_row!(counter.name(), value.to_string());
    }
    info_table_end!();
}

#[php_module]
#[php(startup = startup)]
pub fn get_module(module: ModuleBuilder) -> ModuleBuilder {
    module
        .info_function(info)
        .request_startup_function(request_startup)
        .class::<key::PhpKey>()
        .class::<lock::PhpLock>()
        .class::<lock_factory::PhpLockFactory>()
        .class::<stores::PhpFlockStore>()
        .class::<stores::PhpInMemoryStore>()
        .class::<redis_store::PhpRedisStore>()
        .class::<store_factory::PhpStoreFactory>()
        .class::<metrics::PhpMetrics>()
        .function(wrap_function!(release_client_locks))
}
