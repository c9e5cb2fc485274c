//! `Deadbolt\LockFactory`: makes locks on one store, all reporting to one logger.
// PHP takes parameter names from the Rust names, and symfony/lock spells them in camelCase
// (`$autoRelease`, `$lockPath`): reflection and named arguments must match.
#![allow(non_snake_case)]

use std::sync::OnceLock;

use deadbolt_core::{AutoRefresh, Lock, StoreRef};
use ext_php_rs::ffi::{zend_execute_data, zval};
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendClassObject, ZendObject, ZendStr, Zval};

use crate::args;
use crate::error_map::to_php;
use crate::key::PhpKey;
use crate::lock::PhpLock;
use crate::php_param::{Bool, Bytes, OptionalFloat};
use crate::store_arg::engine_store_arg;
use crate::zend_object::{swap_method_handler, Handler};

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
    pub fn __construct(store: &mut ZendObject) -> PhpResult<Self> {
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
    #[php(defaults(ttl = deadbolt_core::DEFAULT_TTL_SECS, autoRelease = true, autoRefresh = false, maxHold = None))]
    pub fn create_lock(
        &self,
        resource: Bytes<1>,
        ttl: OptionalFloat<2>,
        autoRelease: Bool<3>,
        autoRefresh: Bool<4>,
        maxHold: OptionalFloat<5>,
    ) -> PhpResult<PhpLock> {
        let key = PhpKey::for_resource(&resource.0);
        self.lock(&key, ttl.0, autoRelease.0, autoRefresh.0, maxHold.0)
    }

    #[php(defaults(ttl = deadbolt_core::DEFAULT_TTL_SECS, autoRelease = true, autoRefresh = false, maxHold = None))]
    pub fn create_lock_from_key(
        &self,
        key: &PhpKey,
        ttl: OptionalFloat<2>,
        autoRelease: Bool<3>,
        autoRefresh: Bool<4>,
        maxHold: OptionalFloat<5>,
    ) -> PhpResult<PhpLock> {
        self.lock(key, ttl.0, autoRelease.0, autoRefresh.0, maxHold.0)
    }

    /// `var_export()` output cannot rebuild a factory.
    #[php(name = "__set_state")]
    pub fn from_var_export(properties: &ext_php_rs::types::ZendHashTable) -> PhpResult<Self> {
        let _ = properties;
        Err(crate::error_map::not_rebuildable(
            "Deadbolt\\LockFactory",
            "Construct it again with its store.",
        ))
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

/// The methods that need a constructed factory, with the handlers they had before
/// [`PhpLockFactory::require_construction`].
static NEED_CONSTRUCTION: OnceLock<Vec<(&'static str, Handler)>> = OnceLock::new();

impl PhpLockFactory {
    /// A subclass (LockFactory is not final, as symfony/lock's is not) whose constructor does
    /// not call `parent::__construct($store)` has no store: its methods say so in our words
    /// instead of ext-php-rs's "Failed to retrieve reference to `$this`". Call once per process,
    /// as the other engine hooks (`install_engine_hooks` in lib.rs).
    pub fn require_construction() {
        let originals = ["createlock", "createlockfromkey", "setlogger"]
            .into_iter()
            .filter_map(|method| {
                swap_method_handler::<PhpLockFactory>(method, constructed_only)
                    .map(|original| (method, original))
            })
            .collect();
        let _ = NEED_CONSTRUCTION.set(originals);
    }
}

/// Runs the method's own handler on a constructed factory; throws an `\Error` on one whose
/// constructor never called `parent::__construct()`.
unsafe extern "C" fn constructed_only(ex: *mut zend_execute_data, retval: *mut zval) {
    // SAFETY: the engine calls a handler with its own frame, whose function is this method (an
    // internal function with a name) and whose `$this` is the object it runs on.
    let (original, unconstructed) = unsafe {
        let Some(data) = ex.as_mut() else { return };
        let name = data
            .func
            .as_ref()
            .and_then(|function| function.common.function_name.cast::<ZendStr>().as_ref())
            .and_then(|name| name.as_str().ok())
            .unwrap_or_default();
        let original = NEED_CONSTRUCTION.get().and_then(|originals| {
            originals
                .iter()
                .find(|(method, _)| method.eq_ignore_ascii_case(name))
                .map(|(_, original)| *original)
        });
        let unconstructed = data.get_self().and_then(|this| {
            let class = crate::args::class_name(this);
            ZendClassObject::<PhpLockFactory>::from_zend_obj_mut(this)
                .is_none()
                .then(|| (class, name.to_owned()))
        });
        (original, unconstructed)
    };
    if let Some((class, method)) = unconstructed {
        ext_php_rs::exception::PhpException::new(
            format!(
                "{class} extends Deadbolt\\LockFactory, but its constructor did not call \
                 parent::__construct($store): there is no store to {method}() with. Call it first \
                 in {class}::__construct()."
            ),
            0,
            ext_php_rs::zend::ce::error(),
        )
        .throw();
        return;
    }
    if let Some(original) = original {
        // SAFETY: the method's own handler, with the frame the engine gave this one.
        unsafe { original(ex, retval) };
    }
}

/// Its logger, and the object of a store written in PHP that only this factory holds.
impl crate::zend_object::gc::GcChildren for PhpLockFactory {
    fn gc_children(&self, report: &mut dyn FnMut(&Zval)) {
        if let Some(logger) = &self.logger {
            report(logger);
        }
        crate::user_store::store_children(&self.store, report);
    }
}
