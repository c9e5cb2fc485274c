//! `Deadbolt\Key`: a resource and its owner token, shared with the locks made from it.
// PHP takes parameter names from the Rust names, and symfony/lock spells them in camelCase
// (`$stateKey`): reflection and named arguments must match.
#![allow(non_snake_case)]

use std::cell::Cell;
use std::sync::Arc;

use deadbolt_core::{Key, SharedKey};
use ext_php_rs::binary::Binary;
use ext_php_rs::boxed::ZBox;
use ext_php_rs::exception::PhpException;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendHashTable, Zval};
use parking_lot::MutexGuard;

use crate::args;
use crate::error_map::{bad_method_call_exception, invalid_argument, to_php};
use crate::key_data::{exported_token, read_parts, write_parts, KeyStates};
use crate::php_param::{Bytes, Float};

#[php_class]
#[php(name = "Deadbolt\\Key")]
#[php(flags = ClassFlags::Final)]
pub struct PhpKey {
    pub(crate) inner: SharedKey,
    /// The engine key's resource, which never changes: `__toString()` answers without the key,
    /// so a store's code can name the Key it is handed even while a Lock made from it is calling
    /// that store.
    resource: Vec<u8>,
    /// What stores and applications keep in the Key by name (symfony/lock's `setState()`).
    state: KeyStates,
    /// Set by `markUnserializable()`: `serialize()` then refuses the Key.
    unserializable: Cell<bool>,
}

/// What `unserialize()` starts from before `__unserialize` fills it in.
impl Default for PhpKey {
    fn default() -> Self {
        Self::for_resource(b"")
    }
}

impl PhpKey {
    /// Wraps an engine key.
    pub fn from_key(key: Key) -> Self {
        PhpKey {
            resource: key.resource().to_vec(),
            inner: Arc::new(parking_lot::Mutex::new(key)),
            state: KeyStates::default(),
            unserializable: Cell::new(false),
        }
    }

    /// A new key for `resource`.
    pub fn for_resource(resource: &[u8]) -> Self {
        Self::from_key(Key::new(resource))
    }

    /// The engine key, unless a call made with this Key is still running: only PHP's thread ever
    /// locks a Key, so a Key found locked is used from inside that call (its store's PHP code, a
    /// logger, a signal handler during a wait), where waiting for it would wait for ever.
    pub(crate) fn engine(&self) -> PhpResult<MutexGuard<'_, Key>> {
        self.inner.try_lock().ok_or_else(key_in_use)
    }
}

/// A Key used from inside a call made with it.
pub(crate) fn key_in_use() -> PhpException {
    bad_method_call_exception(
        "This Deadbolt\\Key is in use by a call in progress (a Lock or store call made with it; \
         its store's PHP code, a logger or a signal handler runs inside that call); use it once \
         that call has returned.",
    )
}

#[php_impl]
impl PhpKey {
    pub fn __construct(resource: Bytes<1>) -> Self {
        Self::for_resource(&resource.0)
    }

    /// What `var_export()` writes: a new Key for the exported resource (a new owner: the token is
    /// never exported, so the code cannot carry a lock; `serialize()` can).
    #[php(name = "__set_state")]
    pub fn from_var_export(properties: &ZendHashTable) -> PhpResult<Self> {
        match properties.get("resource").and_then(|resource| resource.binary::<u8>()) {
            Some(resource) => Ok(Self::for_resource(&resource)),
            None => Err(invalid_argument(
                "Deadbolt\\Key::__set_state() needs a string \"resource\", as var_export() writes it."
                    .into(),
            )),
        }
    }

    #[php(name = "__toString")]
    pub fn to_string(&self) -> Binary<u8> {
        Binary::new(self.resource.clone())
    }

    /// The short one-way digest of this Key's owner token under which `inspect()` and the
    /// `deadbolt` command show its locks; null before the Key was ever used to lock.
    pub fn get_token_digest(&self) -> PhpResult<Option<String>> {
        let key = self.engine()?;
        Ok(key
            .drawn_token()
            .map(|token| deadbolt_core::token_digest(token.as_str())))
    }

    pub fn get_remaining_lifetime(&self) -> PhpResult<Option<f64>> {
        Ok(self.engine()?.remaining_lifetime())
    }

    pub fn is_expired(&self) -> PhpResult<bool> {
        Ok(self.engine()?.is_expired())
    }

    /// As symfony/lock: only ever shortens; a TTL of 0 or less expires the Key at once.
    pub fn reduce_lifetime(&self, ttl: Float<1>) -> PhpResult<()> {
        if ttl.0 <= 0.0 {
            self.engine()?.expire_now();
            return Ok(());
        }
        let ttl = args::ttl(ttl.0)?;
        self.engine()?.reduce_lifetime(ttl);
        Ok(())
    }

    pub fn has_state(&self, stateKey: Bytes<1>) -> bool {
        self.state.has(&stateKey.0)
    }

    /// Keeps `state` under `stateKey` (a store keeps its own data under its class name).
    pub fn set_state(&self, stateKey: Bytes<1>, state: &Zval) {
        self.state.set(stateKey.0, state);
    }

    pub fn remove_state(&self, stateKey: Bytes<1>) {
        self.state.remove(&stateKey.0);
    }

    /// The state kept under `stateKey`; null when there is none (symfony/lock returns null
    /// with PHP's "Undefined array key" warning).
    pub fn get_state(&self, stateKey: Bytes<1>) -> Zval {
        self.state.get(&stateKey.0)
    }

    /// From now on `serialize()` refuses this Key (a store whose lock cannot leave the process).
    pub fn mark_unserializable(&self) {
        self.unserializable.set(true);
    }

    pub fn reset_lifetime(&self) -> PhpResult<()> {
        self.engine()?.reset_lifetime();
        Ok(())
    }

    /// The key as data, so it can move to another process and release or refresh the lock there:
    /// `['resource' => string, 'token' => string]`. Refused for a key holding a flock lock, which
    /// belongs to this process.
    #[php(name = "__serialize")]
    pub fn serialize(&self) -> PhpResult<ZBox<ZendHashTable>> {
        let mut key = self.engine()?;
        let token = exported_token(&mut key, self.unserializable.get()).map_err(to_php)?;
        let mut data = ZendHashTable::new();
        write_parts(&mut data, &key, token, &self.state).map_err(to_php)?;
        Ok(data)
    }

    /// Restores a key made by `__serialize` (here or in another process), or imports one from its
    /// parts: `['resource' => string, 'token' => string]`, optionally `'expiringTime' => ?float`
    /// (Unix time) and `'state' => array`.
    #[php(name = "__unserialize")]
    pub fn unserialize(&mut self, data: &ZendHashTable) -> PhpResult<()> {
        let parts = read_parts(data, "Deadbolt\\Key").map_err(to_php)?;
        let mut key = Key::import(parts.resource, parts.token).map_err(to_php)?;
        parts.expiry.restore(&mut key).map_err(to_php)?;
        self.resource = key.resource().to_vec();
        self.inner = Arc::new(parking_lot::Mutex::new(key));
        self.state.replace(parts.state);
        Ok(())
    }
}

impl PhpKey {
    /// Two Key objects are `==` only when they are one key (the same object, or objects sharing
    /// one engine key): a Key is an ownership, not a value, and two keys of one resource exclude
    /// each other.
    pub fn hook_compare() {
        crate::zend_object::hook_compare::<PhpKey>(compare_keys);
    }
}

unsafe extern "C" fn compare_keys(
    left: *mut ext_php_rs::ffi::zval,
    right: *mut ext_php_rs::ffi::zval,
) -> i32 {
    let key = |zval: *mut ext_php_rs::ffi::zval| {
        // SAFETY: PHP hands two live zvals; a zval is ext-php-rs' `Zval`.
        unsafe { zval.cast::<ext_php_rs::types::Zval>().as_ref() }
            .and_then(|zval| zval.object())
            .and_then(ext_php_rs::types::ZendClassObject::<PhpKey>::from_zend_obj)
            .map(|key| Arc::clone(&key.inner))
    };
    match (key(left), key(right)) {
        (Some(a), Some(b)) => i32::from(!Arc::ptr_eq(&a, &b)),
        // SAFETY: the zvals PHP handed this hook.
        _ => unsafe { crate::zend_object::standard_compare(left, right) },
    }
}

/// The values kept in its state (`setState()`), each one counted reference of this Key's.
impl crate::zend_object::gc::GcChildren for PhpKey {
    fn gc_children(&self, report: &mut dyn FnMut(&Zval)) {
        self.state.gc_children(report);
    }
}

/// What `var_export()` shows of a Key: its resource, never its token.
impl crate::zend_object::ExportedProperties for PhpKey {
    fn exported(&self, table: &mut ZendHashTable) {
        let _ = table.insert("resource", Binary::new(self.resource.clone()));
    }
}

impl crate::zend_object::DebugInfo for PhpKey {
    fn debug_info(&self, table: &mut ZendHashTable) {
        // Dumped from inside a call made with it (a signal handler): nothing to show, no wait.
        let Some(key) = self.inner.try_lock() else {
            return;
        };
        let _ = table.insert("resource", Binary::new(key.resource().to_vec()));
        let _ = table.insert("remainingLifetime", key.remaining_lifetime());
    }
}
