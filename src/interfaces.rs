//! The interfaces the extension registers: symfony/lock's own, under `Deadbolt\`, so code can
//! type against them (and PHPUnit can double them), and Deadbolt's additions as interfaces of
//! their own. The classes name them with `#[php(implements(...))]`; their methods stay in the
//! classes' own `#[php_impl]` blocks, where they may take more optional parameters than the
//! interface declares (`Lock::acquire()`'s `$timeout`), as PHP allows.
// Only the signatures count: nothing implements these traits in Rust.
#![allow(non_snake_case, dead_code)]

use ext_php_rs::prelude::*;

use crate::key::PhpKey;

/// symfony/lock's `LockInterface`.
#[php_interface]
#[php(name = "Deadbolt\\LockInterface")]
pub trait LockInterface {
    #[php(defaults(blocking = false))]
    fn acquire(&mut self, blocking: bool) -> bool;

    #[php(defaults(ttl = None))]
    fn refresh(&mut self, ttl: Option<f64>);

    fn is_acquired(&mut self) -> bool;

    fn release(&mut self);

    fn is_expired(&self) -> bool;

    fn get_remaining_lifetime(&self) -> Option<f64>;
}

/// symfony/lock's `SharedLockInterface`.
#[php_interface]
#[php(name = "Deadbolt\\SharedLockInterface")]
pub trait SharedLockInterface: LockInterface {
    #[php(defaults(blocking = false))]
    fn acquire_read(&mut self, blocking: bool) -> bool;
}

/// Deadbolt's: an acquire that waits at most `$timeout` seconds.
#[php_interface]
#[php(name = "Deadbolt\\DeadlineLockInterface")]
pub trait DeadlineLockInterface: SharedLockInterface {
    #[php(defaults(blocking = false, timeout = None))]
    fn acquire(&mut self, blocking: bool, timeout: Option<f64>) -> bool;

    #[php(defaults(blocking = false, timeout = None))]
    fn acquire_read(&mut self, blocking: bool, timeout: Option<f64>) -> bool;
}

/// Deadbolt's: fencing tokens that strictly increase in hold order.
#[php_interface]
#[php(name = "Deadbolt\\FencedLockInterface")]
pub trait FencedLockInterface {
    fn get_fencing_token(&mut self) -> Option<i64>;
}

/// symfony/lock's `PersistingStoreInterface`.
#[php_interface]
#[php(name = "Deadbolt\\Store\\PersistingStoreInterface")]
pub trait PersistingStoreInterface {
    fn save(&self, key: &PhpKey);

    fn delete(&self, key: &PhpKey);

    fn exists(&self, key: &PhpKey) -> bool;

    fn put_off_expiration(&self, key: &PhpKey, ttl: f64);
}

/// symfony/lock's `BlockingStoreInterface`.
#[php_interface]
#[php(name = "Deadbolt\\Store\\BlockingStoreInterface")]
pub trait BlockingStoreInterface: PersistingStoreInterface {
    fn wait_and_save(&self, key: &PhpKey);
}

/// symfony/lock's `SharedLockStoreInterface`.
#[php_interface]
#[php(name = "Deadbolt\\Store\\SharedLockStoreInterface")]
pub trait SharedLockStoreInterface: PersistingStoreInterface {
    fn save_read(&self, key: &PhpKey);
}

/// symfony/lock's `BlockingSharedLockStoreInterface`.
#[php_interface]
#[php(name = "Deadbolt\\Store\\BlockingSharedLockStoreInterface")]
pub trait BlockingSharedLockStoreInterface: SharedLockStoreInterface {
    fn wait_and_save_read(&self, key: &PhpKey);
}

/// symfony/semaphore's `SemaphoreInterface`.
#[php_interface]
#[php(name = "Deadbolt\\Semaphore\\SemaphoreInterface")]
pub trait SemaphoreInterface {
    fn acquire(&mut self) -> bool;

    #[php(defaults(ttlInSecond = None))]
    fn refresh(&mut self, ttlInSecond: Option<f64>);

    fn is_acquired(&mut self) -> bool;

    fn release(&mut self);

    fn is_expired(&self) -> bool;

    fn get_remaining_lifetime(&self) -> Option<f64>;
}

/// symfony/semaphore's `PersistingStoreInterface`.
#[php_interface]
#[php(name = "Deadbolt\\Semaphore\\PersistingStoreInterface")]
pub trait SemaphorePersistingStoreInterface {
    fn save(&self, key: &crate::semaphore::PhpSemaphoreKey, ttlInSecond: f64);

    fn delete(&self, key: &crate::semaphore::PhpSemaphoreKey);

    fn exists(&self, key: &crate::semaphore::PhpSemaphoreKey) -> bool;

    fn put_off_expiration(&self, key: &crate::semaphore::PhpSemaphoreKey, ttlInSecond: f64);
}

/// symfony/lock's `StrategyInterface`: when a combined store's answers make a lock held.
#[php_interface]
#[php(name = "Deadbolt\\Strategy\\StrategyInterface")]
pub trait StrategyInterface {
    fn is_met(&self, numberOfSuccess: i64, numberOfItems: i64) -> bool;

    fn can_be_met(&self, numberOfFailure: i64, numberOfItems: i64) -> bool;
}
