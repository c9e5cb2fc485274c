//! `Deadbolt\Store\*`: the PHP faces of the engine's stores, and `StoreFactory`. Each method is the
//! store contract of symfony/lock (`save`, `saveRead`, `waitAndSave`, `waitAndSaveRead`,
//! `putOffExpiration`, `delete`, `exists`), so adapters to other frameworks can drive a store.
// PHP takes parameter names from the Rust names, and symfony/lock spells them in camelCase
// (`$autoRelease`, `$lockPath`): reflection and named arguments must match.
#![allow(non_snake_case)]

use std::sync::Arc;

use deadbolt_core::{store, FlockStore, InMemoryStore, Store};
use ext_php_rs::boxed::ZBox;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendClassObject, ZendObject};

use crate::args;
use crate::error_map::{invalid_argument, to_php, type_error};
use crate::key::PhpKey;

/// The store contract on any engine store, shared by every PHP store class.
struct Contract<'a>(&'a dyn Store);

impl Contract<'_> {
    fn save(&self, key: &PhpKey) -> PhpResult<()> {
        self.0.save(&mut key.inner.lock()).map_err(to_php)
    }

    fn save_read(&self, key: &PhpKey) -> PhpResult<()> {
        store::save_read(self.0, &mut key.inner.lock()).map_err(to_php)
    }

    fn wait_and_save(&self, key: &PhpKey) -> PhpResult<()> {
        store::wait_and_save(self.0, &mut key.inner.lock()).map_err(to_php)
    }

    fn wait_and_save_read(&self, key: &PhpKey) -> PhpResult<()> {
        store::wait_and_save_read(self.0, &mut key.inner.lock()).map_err(to_php)
    }

    fn put_off_expiration(&self, key: &PhpKey, ttl: f64) -> PhpResult<()> {
        let ttl = args::ttl(ttl)?;
        self.0
            .put_off_expiration(&mut key.inner.lock(), ttl)
            .map_err(to_php)
    }

    fn delete(&self, key: &PhpKey) -> PhpResult<()> {
        self.0.delete(&mut key.inner.lock()).map_err(to_php)
    }

    fn exists(&self, key: &PhpKey) -> PhpResult<bool> {
        self.0.exists(&key.inner.lock()).map_err(to_php)
    }
}

#[php_class]
#[php(name = "Deadbolt\\Store\\FlockStore")]
#[php(flags = ClassFlags::Final)]
pub struct PhpFlockStore {
    inner: Arc<FlockStore>,
}

impl PhpFlockStore {
    fn open(dir: String) -> PhpResult<Self> {
        FlockStore::new(dir)
            .map(|store| PhpFlockStore {
                inner: Arc::new(store),
            })
            .map_err(to_php)
    }
}

#[php_impl]
impl PhpFlockStore {
    #[php(defaults(lockPath = None))]
    pub fn __construct(lockPath: Option<String>) -> PhpResult<Self> {
        let dir = match lockPath {
            Some(dir) => dir,
            None => system_temp_dir()?,
        };
        Self::open(dir)
    }

    pub fn save(&self, key: &PhpKey) -> PhpResult<()> {
        Contract(self.inner.as_ref()).save(key)
    }

    pub fn save_read(&self, key: &PhpKey) -> PhpResult<()> {
        Contract(self.inner.as_ref()).save_read(key)
    }

    pub fn wait_and_save(&self, key: &PhpKey) -> PhpResult<()> {
        Contract(self.inner.as_ref()).wait_and_save(key)
    }

    pub fn wait_and_save_read(&self, key: &PhpKey) -> PhpResult<()> {
        Contract(self.inner.as_ref()).wait_and_save_read(key)
    }

    pub fn put_off_expiration(&self, key: &PhpKey, ttl: f64) -> PhpResult<()> {
        Contract(self.inner.as_ref()).put_off_expiration(key, ttl)
    }

    pub fn delete(&self, key: &PhpKey) -> PhpResult<()> {
        Contract(self.inner.as_ref()).delete(key)
    }

    pub fn exists(&self, key: &PhpKey) -> PhpResult<bool> {
        Contract(self.inner.as_ref()).exists(key)
    }
}

#[php_class]
#[php(name = "Deadbolt\\Store\\InMemoryStore")]
#[php(flags = ClassFlags::Final)]
pub struct PhpInMemoryStore {
    inner: Arc<InMemoryStore>,
}

#[php_impl]
impl PhpInMemoryStore {
    pub fn __construct() -> Self {
        PhpInMemoryStore {
            inner: Arc::new(InMemoryStore::new()),
        }
    }

    pub fn save(&self, key: &PhpKey) -> PhpResult<()> {
        Contract(self.inner.as_ref()).save(key)
    }

    pub fn save_read(&self, key: &PhpKey) -> PhpResult<()> {
        Contract(self.inner.as_ref()).save_read(key)
    }

    pub fn wait_and_save(&self, key: &PhpKey) -> PhpResult<()> {
        Contract(self.inner.as_ref()).wait_and_save(key)
    }

    pub fn wait_and_save_read(&self, key: &PhpKey) -> PhpResult<()> {
        Contract(self.inner.as_ref()).wait_and_save_read(key)
    }

    pub fn put_off_expiration(&self, key: &PhpKey, ttl: f64) -> PhpResult<()> {
        Contract(self.inner.as_ref()).put_off_expiration(key, ttl)
    }

    pub fn delete(&self, key: &PhpKey) -> PhpResult<()> {
        Contract(self.inner.as_ref()).delete(key)
    }

    pub fn exists(&self, key: &PhpKey) -> PhpResult<bool> {
        Contract(self.inner.as_ref()).exists(key)
    }
}

/// The engine store behind a PHP store object, or `None` when the object is not a Deadbolt store.
pub fn engine_store(object: &ZendObject) -> Option<Arc<dyn Store>> {
    if let Some(flock) = ZendClassObject::<PhpFlockStore>::from_zend_obj(object) {
        return Some(flock.inner.clone());
    }
    if let Some(memory) = ZendClassObject::<PhpInMemoryStore>::from_zend_obj(object) {
        return Some(memory.inner.clone());
    }
    None
}

/// The engine store behind a store argument; a `\\TypeError` naming `argument` otherwise.
pub fn engine_store_arg(object: &ZendObject, argument: &str) -> PhpResult<Arc<dyn Store>> {
    engine_store(object).ok_or_else(|| {
        type_error(format!(
            "{argument} must be a Deadbolt store, {} given",
            object.get_class_name().unwrap_or_default()
        ))
    })
}

/// PHP's `sys_get_temp_dir()`, which honours the `sys_temp_dir` ini setting as symfony/lock does.
fn system_temp_dir() -> PhpResult<String> {
    ext_php_rs::types::ZendCallable::try_from_name("sys_get_temp_dir")
        .and_then(|f| f.try_call(vec![]))
        .ok()
        .and_then(|dir| dir.string())
        .ok_or_else(|| invalid_argument("Cannot determine the system temp directory.".into()))
}

#[php_class]
#[php(name = "Deadbolt\\Store\\StoreFactory")]
#[php(flags = ClassFlags::Final)]
pub struct PhpStoreFactory;

#[php_impl]
impl PhpStoreFactory {
    /// Builds a store from a connection string: `flock`, `flock:///abs/path`, `in-memory`.
    pub fn create_store(connection: String) -> PhpResult<ZBox<ZendObject>> {
        if connection == "in-memory" {
            return Ok(ZendClassObject::new(PhpInMemoryStore::__construct()).into());
        }
        if connection == "flock" {
            let store = PhpFlockStore::__construct(None)?;
            return Ok(ZendClassObject::new(store).into());
        }
        if let Some(path) = connection.strip_prefix("flock://") {
            if !path.starts_with('/') {
                return Err(invalid_argument(
                    "A flock DSN needs an absolute path: \"flock:///path/to/dir\".".into(),
                ));
            }
            return Ok(ZendClassObject::new(PhpFlockStore::open(path.to_owned())?).into());
        }
        let scheme = connection.split_once(':').map_or("", |(scheme, _)| scheme);
        Err(invalid_argument(format!(
            "Unsupported store connection (scheme \"{}\"): use \"flock\", \"flock:///path\" or \"in-memory\".",
            scheme.chars().take(32).collect::<String>()
        )))
    }
}
