//! Deadbolt: Symfony-Lock-shaped locks for PHP. This crate is the PHP glue only: argument checks,
//! the PHP classes, exception mapping and PSR-3 calls. The lock engine is `deadbolt-core`.
#![cfg_attr(windows, feature(abi_vectorcall))]

mod args;
mod combined_store;
mod end_of_request;
mod error_map;
mod exceptions;
mod interfaces;
mod interrupts;
mod key;
mod key_data;
mod lock;
mod lock_factory;
mod lock_state;
mod logger;
mod memcached_store;
mod metrics;
mod mysql_store;
mod pdo_connection;
mod pdo_exception;
mod pdo_store;
mod php_call;
mod php_param;
mod php_redis_client;
mod postgres_store;
mod redis_store;
mod semaphore;
mod store_arg;
mod store_contract;
mod store_engine;
mod store_factory;
mod stores;
mod user_store;
mod worker;
mod zend_object;

use ext_php_rs::prelude::*;
use ext_php_rs::zend::ModuleEntry;
use ext_php_rs::{info_table_end, info_table_row, info_table_start};

/// MINIT: waits learn how to give PHP its turn (signal handlers), and the exception hierarchy goes
/// first among the classes, so every other class can throw it.
fn startup(_ty: i32, module_number: i32) -> i32 {
    // Before a thread-safe PHP starts its threads: what the engine makes once is made here, on one thread.
    deadbolt_core::set_up_before_threads();
    interrupts::install();
    metrics::register_settings(module_number);
    match exceptions::register() {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// RINIT: the engine hooks go in once per process (the classes are registered after MINIT, and
/// no object of theirs exists yet), and each request starts with no lock to release at its end.
extern "C" fn request_startup(_ty: i32, _module_number: i32) -> i32 {
    static HOOKED: std::sync::Once = std::sync::Once::new();
    HOOKED.call_once(install_engine_hooks);
    end_of_request::reset();
    php_call::reset();
    metrics::tell_setting_failure();
    0
}

/// MSHUTDOWN: the process's totals go into its metrics textfile (`deadbolt.metrics_textfile`);
/// here, not at RSHUTDOWN, so that locks released as PHP frees the last objects are counted.
extern "C" fn module_shutdown(_ty: i32, _module_number: i32) -> i32 {
    metrics::write_textfile();
    0
}

/// RSHUTDOWN: PHP's objects still exist; references Deadbolt kept for the request go now, and
/// the replies of releases sent without waiting (`release=deferred`) are read, so each request
/// ends with its releases confirmed (or counted as failed) and no reply left for the next one.
extern "C" fn request_shutdown(_ty: i32, _module_number: i32) -> i32 {
    end_of_request::drop_tracked();
    user_store::forget_thrown();
    deadbolt_core::read_unread_replies();
    0
}

/// Every change to the engine's classes, in one place (`zend_object/` does each):
/// - `serialize()` reaches `Lock::__serialize` (symfony/lock's `BadMethodCallException`) and
///   `Key::__serialize` (a Key of a store not bound to a process travels);
/// - a Lock dying while held is released in PHP's destructor phase;
/// - a LockFactory subclass that skipped `parent::__construct()` is told so;
/// - two distinct Keys are not `==`;
/// - PHP's cycle collector sees the values a Lock, a LockFactory and a Key hold (`zend_object/gc.rs`);
/// - `var_dump()`/`print_r()` show each object's safe state, `var_export()` a Key's resource;
/// - an exception a signal handler throws during a client's call is told apart from the client's;
/// - the parameters that may carry a password (a DSN, or a client holding one) are
///   `#[\SensitiveParameter]`, as symfony/lock's and PDO's are.
fn install_engine_hooks() {
    zend_object::let_serialize_reach::<lock::PhpLock>();
    zend_object::let_serialize_reach::<key::PhpKey>();
    lock::PhpLock::hook_destructor();
    semaphore::PhpSemaphore::hook_destructor();
    zend_object::let_serialize_reach::<semaphore::PhpSemaphore>();
    zend_object::let_serialize_reach::<semaphore::PhpSemaphoreKey>();
    zend_object::gc::hook_gc::<semaphore::PhpSemaphoreKey>();
    zend_object::gc::hook_gc::<semaphore::PhpSemaphore>();
    zend_object::gc::hook_gc::<semaphore::PhpSemaphoreFactory>();
    zend_object::hook_debug_info::<semaphore::PhpSemaphore>();
    lock_factory::PhpLockFactory::require_construction();
    key::PhpKey::hook_compare();
    zend_object::hook_debug_info::<key::PhpKey>();
    zend_object::hook_var_export::<key::PhpKey>();
    zend_object::gc::hook_gc::<key::PhpKey>();
    zend_object::gc::hook_gc::<lock::PhpLock>();
    zend_object::gc::hook_gc::<lock_factory::PhpLockFactory>();
    zend_object::hook_debug_info::<lock::PhpLock>();
    zend_object::hook_debug_info::<lock_factory::PhpLockFactory>();
    zend_object::hook_debug_info::<stores::PhpFlockStore>();
    zend_object::hook_debug_info::<stores::PhpInMemoryStore>();
    zend_object::hook_debug_info::<stores::PhpSemaphoreStore>();
    zend_object::hook_debug_info::<memcached_store::PhpMemcachedStore>();
    zend_object::hook_debug_info::<postgres_store::PhpPostgreSqlStore>();
    zend_object::hook_debug_info::<pdo_store::PhpPdoStore>();
    zend_object::hook_debug_info::<mysql_store::PhpMysqlStore>();
    zend_object::hook_debug_info::<redis_store::PhpRedisStore>();
    zend_object::hook_debug_info::<combined_store::PhpCombinedStore>();
    zend_object::mark_sensitive_parameter::<redis_store::PhpRedisStore>("__construct", 0);
    zend_object::mark_sensitive_parameter::<memcached_store::PhpMemcachedStore>("__construct", 0);
    zend_object::mark_sensitive_parameter::<postgres_store::PhpPostgreSqlStore>("__construct", 0);
    zend_object::mark_sensitive_parameter::<postgres_store::PhpPostgreSqlStore>("__construct", 1);
    zend_object::mark_sensitive_parameter::<pdo_store::PhpPdoStore>("__construct", 0);
    zend_object::mark_sensitive_parameter::<pdo_store::PhpPdoStore>("__construct", 1);
    zend_object::mark_sensitive_parameter::<mysql_store::PhpMysqlStore>("__construct", 0);
    zend_object::mark_sensitive_parameter::<mysql_store::PhpMysqlStore>("__construct", 1);
    zend_object::mark_sensitive_parameter::<store_factory::PhpStoreFactory>("createstore", 0);
    interrupts::watch_handlers();
}

/// The `deadbolt` section of `phpinfo()`.
extern "C" fn info(_module: *mut ModuleEntry) {
    info_table_start!();
    info_table_row!("deadbolt support", "enabled");
    info_table_row!("version", env!("CARGO_PKG_VERSION"));
    info_table_row!(
        "stores",
        "flock, semaphore (System V), in-memory, redis (native or \\Redis, \\RedisCluster, \
         Predis), memcached, postgresql (advisory), pdo (lock table), mysql (GET_LOCK), combined"
    );
    for (counter, value) in deadbolt_core::snapshot().counters {
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
        .request_shutdown_function(request_shutdown)
        .shutdown_function(module_shutdown)
        .interface::<interfaces::PhpInterfaceLockInterface>()
        .interface::<interfaces::PhpInterfaceSharedLockInterface>()
        .interface::<interfaces::PhpInterfaceDeadlineLockInterface>()
        .interface::<interfaces::PhpInterfaceFencedLockInterface>()
        .interface::<interfaces::PhpInterfacePersistingStoreInterface>()
        .interface::<interfaces::PhpInterfaceBlockingStoreInterface>()
        .interface::<interfaces::PhpInterfaceSharedLockStoreInterface>()
        .interface::<interfaces::PhpInterfaceBlockingSharedLockStoreInterface>()
        .interface::<interfaces::PhpInterfaceStrategyInterface>()
        .interface::<interfaces::PhpInterfaceSemaphoreInterface>()
        .interface::<interfaces::PhpInterfaceSemaphorePersistingStoreInterface>()
        .class::<key::PhpKey>()
        .class::<lock::PhpLock>()
        .class::<lock_factory::PhpLockFactory>()
        .class::<stores::PhpFlockStore>()
        .class::<stores::PhpInMemoryStore>()
        .class::<stores::PhpSemaphoreStore>()
        .class::<memcached_store::PhpMemcachedStore>()
        .class::<pdo_store::PhpPdoStore>()
        .class::<mysql_store::PhpMysqlStore>()
        .class::<postgres_store::PhpPostgreSqlStore>()
        .class::<redis_store::PhpRedisStore>()
        .class::<combined_store::PhpCombinedStore>()
        .class::<combined_store::PhpConsensusStrategy>()
        .class::<combined_store::PhpUnanimousStrategy>()
        .class::<worker::PhpWorker>()
        .class::<store_factory::PhpStoreFactory>()
        .class::<metrics::PhpMetrics>()
        .class::<lock_state::PhpHolder>()
        .class::<lock_state::PhpWaiter>()
        .class::<lock_state::PhpLockState>()
        .class::<end_of_request::PhpEndOfRequest>()
        .class::<semaphore::PhpSemaphoreKey>()
        .class::<semaphore::PhpSemaphore>()
        .class::<semaphore::PhpSemaphoreFactory>()
        .class::<semaphore::PhpSemaphoreStore>()
}
