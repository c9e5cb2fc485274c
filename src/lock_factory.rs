//! `Deadbolt\LockFactory`: makes locks on one store, all reporting to one logger.
// PHP takes parameter names from the Rust names, and symfony/lock spells them in camelCase
// (`$autoRelease`, `$lockPath`): reflection and named arguments must match.
#![allow(non_snake_case)]

use deadbolt_core::{AutoRefresh, Lock, StoreRef};
use ext_php_rs::binary_slice::BinarySlice;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendObject, Zval};

use crate::args;
use crate::error_map::to_php;
use crate::key::PhpKey;
use crate::lock::PhpLock;
use crate::store_arg::engine_store_arg;

#[php_class]
#[php(name = "Deadbolt\\LockFactory")]
pub struct PhpLockFactory {
    store: StoreRef,
    logger: Option<Zval>,
}

impl PhpLockFactory {
    fn lock(
        &self,
        key: &PhpKey,
        ttl: Option<f64>,
        auto_release: bool,
        auto_refresh: bool,
        max_hold: Option<f64>,
    ) -> PhpResult<PhpLock> {
        let ttl = args::optional_ttl(ttl)?;
        let auto_refresh = AutoRefresh {
            enabled: auto_refresh,
            max_hold: args::max_hold(max_hold)?,
        };
        let lock = Lock::new(key.inner.clone(), self.store.clone(), ttl, auto_release)
            .with_auto_refresh(auto_refresh)
            .map_err(to_php)?;
        let logger = self.logger.as_ref().map(Zval::shallow_clone);
        Ok(PhpLock::new(lock, logger))
    }
}

#[php_impl]
impl PhpLockFactory {
    pub fn __construct(store: &ZendObject) -> PhpResult<Self> {
        let store = engine_store_arg(
            store,
            "Deadbolt\\LockFactory::__construct(): Argument #1 ($store)",
        )?;
        Ok(PhpLockFactory {
            store,
            logger: None,
        })
    }

    /// `$autoRefresh`: a background thread keeps the TTL topped up while the lock is held (Redis
    /// by DSN; flock and in-memory locks never expire anyway). `$maxHold`: seconds after which
    /// the refresher stops and the lock runs out by itself.
    #[php(defaults(ttl = 300.0, autoRelease = true, autoRefresh = false, maxHold = None))]
    pub fn create_lock(
        &self,
        resource: BinarySlice<u8>,
        ttl: Option<f64>,
        autoRelease: bool,
        autoRefresh: bool,
        maxHold: Option<f64>,
    ) -> PhpResult<PhpLock> {
        let key = PhpKey::for_resource(&resource);
        self.lock(&key, ttl, autoRelease, autoRefresh, maxHold)
    }

    #[php(defaults(ttl = 300.0, autoRelease = true, autoRefresh = false, maxHold = None))]
    pub fn create_lock_from_key(
        &self,
        key: &PhpKey,
        ttl: Option<f64>,
        autoRelease: bool,
        autoRefresh: bool,
        maxHold: Option<f64>,
    ) -> PhpResult<PhpLock> {
        self.lock(key, ttl, autoRelease, autoRefresh, maxHold)
    }

    /// Any PSR-3 logger: an object with `log($level, $message, array $context)`.
    pub fn set_logger(&mut self, logger: &mut ZendObject) -> PhpResult<()> {
        self.logger = Some(args::logger(logger, "Deadbolt\\LockFactory::setLogger()")?);
        Ok(())
    }
}

impl crate::zend_object::DebugInfo for PhpLockFactory {
    fn debug_info(&self, table: &mut ext_php_rs::types::ZendHashTable) {
        let _ = table.insert("store", self.store.store().name());
    }
}
