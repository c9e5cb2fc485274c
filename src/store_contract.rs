//! The store contract every PHP store class exposes: symfony/lock's `save`, `saveRead`,
//! `waitAndSave`, `waitAndSaveRead`, `putOffExpiration`, `delete`, `exists`, so adapters to other
//! frameworks can drive a store.

use deadbolt_core::{wait, Key, Mode, Store, WaitReport};
use ext_php_rs::prelude::*;

use crate::args;
use crate::error_map::to_php;
use crate::key::PhpKey;
use crate::logger::{report_store_warning, take_store_warning};

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
        self.0.save(&mut *adopted(key)?, mode, None).map_err(to_php)
    }

    /// symfony/lock's `waitAndSave`: waits without a deadline.
    fn wait_in(&self, key: &PhpKey, mode: Mode) -> PhpResult<()> {
        let mut report = WaitReport::default();
        wait(self.0, &mut *adopted(key)?, mode, None, None, &mut report)
            .map(|_| ())
            .map_err(to_php)
    }

    pub(crate) fn put_off_expiration(&self, key: &PhpKey, ttl: f64) -> PhpResult<()> {
        let ttl = args::ttl(ttl)?;
        self.0
            .put_off_expiration(&mut *adopted(key)?, ttl)
            .map_err(to_php)
    }

    pub(crate) fn delete(&self, key: &PhpKey) -> PhpResult<()> {
        self.0.delete(&mut *adopted(key)?).map_err(to_php)
    }

    pub(crate) fn exists(&self, key: &PhpKey) -> PhpResult<bool> {
        self.0.exists(&*adopted(key)?).map_err(to_php)
    }
}

/// The engine key of `key`, made this process's own first when it came through fork(): the
/// parent's token and open files are never used here (a new token is drawn, so a store call
/// finds nothing held, and a wait queues under the token it will hold the lock with).
fn adopted(key: &PhpKey) -> PhpResult<parking_lot::MutexGuard<'_, Key>> {
    let mut key = key.engine()?;
    key.adopt_if_inherited();
    Ok(key)
}

impl Contract<'_> {
    /// Runs one contract call on `store`, then passes on a setup warning the store noticed (an
    /// evicting Redis) to PHP's error log; a fatal error in a call into PHP (a client's) is
    /// re-raised once the call has dropped everything it held.
    pub(crate) fn checked<T>(
        store: &dyn Store,
        call: impl FnOnce(Contract<'_>) -> PhpResult<T>,
    ) -> PhpResult<T> {
        crate::php_call::method(|| {
            let result = call(Contract(store));
            if let Some(warning) = take_store_warning(store) {
                report_store_warning(&warning, None, Vec::new);
            }
            result
        })
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

            /// `var_export()` output cannot rebuild a store.
            #[php(name = "__set_state")]
            pub fn from_var_export(properties: &ext_php_rs::types::ZendHashTable) -> PhpResult<Self> {
                let _ = properties;
                Err($crate::error_map::not_rebuildable(
                    <Self as ext_php_rs::class::RegisteredClass>::CLASS_NAME,
                    "Construct it again (or with Deadbolt\\Store\\StoreFactory::createStore()).",
                ))
            }

            pub fn save(&self, key: &PhpKey) -> PhpResult<()> {
                Contract::checked(self.engine(), |c| c.save(key))
            }

            pub fn save_read(&self, key: &PhpKey) -> PhpResult<()> {
                Contract::checked(self.engine(), |c| c.save_read(key))
            }

            pub fn wait_and_save(&self, key: &PhpKey) -> PhpResult<()> {
                Contract::checked(self.engine(), |c| c.wait_and_save(key))
            }

            pub fn wait_and_save_read(&self, key: &PhpKey) -> PhpResult<()> {
                Contract::checked(self.engine(), |c| c.wait_and_save_read(key))
            }

            pub fn put_off_expiration(&self, key: &PhpKey, ttl: $crate::php_param::Float<2>) -> PhpResult<()> {
                Contract::checked(self.engine(), |c| c.put_off_expiration(key, ttl.0))
            }

            pub fn delete(&self, key: &PhpKey) -> PhpResult<()> {
                Contract::checked(self.engine(), |c| c.delete(key))
            }

            pub fn exists(&self, key: &PhpKey) -> PhpResult<bool> {
                Contract::checked(self.engine(), |c| c.exists(key))
            }

            /// Who holds `$resource` and who waits for it (an operator's view).
            pub fn inspect(&self, resource: $crate::php_param::Bytes<1>) -> PhpResult<$crate::lock_state::PhpLockState> {
                Contract::checked(self.engine(), |c| $crate::lock_state::inspect(c.0, &resource.0))
            }

            /// Releases `$resource` whoever holds it (an operator's action); the number of
            /// holders it had. They find the lock lost at their next call.
            pub fn force_release(&self, resource: $crate::php_param::Bytes<1>) -> PhpResult<i64> {
                Contract::checked(self.engine(), |c| $crate::lock_state::force_release(c.0, &resource.0))
            }
        }
    };
}
pub(crate) use store_class_methods;
