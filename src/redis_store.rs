// PHP takes parameter names from the Rust names; symfony/lock spells them in camelCase.
#![allow(non_snake_case)]

//! `Deadbolt\Store\RedisStore`: Redis by DSN (native connection) or through a PHP client object.

use std::rc::Rc;

use deadbolt_core::store::redis::runner::ScriptRunner;
use deadbolt_core::{RedisStore, Store};
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::Zval;

use crate::args;
use crate::error_map::{to_php, type_error};
use crate::key::PhpKey;
use crate::logger::report_store_warning;
use crate::php_redis_client::PhpClientRunner;
use crate::stores::Contract;

#[php_class]
#[php(name = "Deadbolt\\Store\\RedisStore")]
#[php(flags = ClassFlags::Final)]
pub struct PhpRedisStore {
    pub(crate) inner: Rc<RedisStore>,
}

impl PhpRedisStore {
    /// A store on `connection`: a DSN string, or a `\Redis`, `\RedisCluster` or Predis client.
    pub(crate) fn connect(connection: &Zval, initial_ttl: f64) -> PhpResult<Self> {
        let initial_ttl = args::ttl(initial_ttl)?;
        if let Some(dsn) = connection.str() {
            let store = RedisStore::connect(dsn, initial_ttl).map_err(to_php)?;
            return Ok(PhpRedisStore {
                inner: Rc::new(store),
            });
        }
        let runner: Box<dyn ScriptRunner> = {
            let not_a_client = |given: String| {
                type_error(format!(
                    "Deadbolt\\Store\\RedisStore::__construct(): Argument #1 ($connection) must be a DSN string, \\Redis, \\RedisCluster or \\Predis\\ClientInterface, {given} given"
                ))
            };
            let Some(object) = connection.object() else {
                return Err(not_a_client(connection.get_type().to_string()));
            };
            let class = args::class_name(object);
            Box::new(PhpClientRunner::new(connection).ok_or_else(|| not_a_client(class))?)
        };
        Ok(PhpRedisStore {
            inner: Rc::new(RedisStore::new(runner, initial_ttl)),
        })
    }

    fn contract(&self) -> Contract<'_> {
        Contract(self.inner.as_ref())
    }

    /// Runs one contract call, then passes on a setup warning the store noticed (to PHP's log).
    fn checked<T>(&self, call: impl FnOnce(Contract<'_>) -> PhpResult<T>) -> PhpResult<T> {
        let result = call(self.contract());
        report_store_warning(self.inner.as_ref() as &dyn Store, None, Vec::new);
        result
    }
}

#[php_impl]
impl PhpRedisStore {
    /// `$connection`: `redis://…`, `rediss://…`, `redis:///path.sock` (see the DSN options in the
    /// stub), or a connected `\Redis`, `\RedisCluster`, `\Predis\ClientInterface`.
    #[php(defaults(initialTtl = 300.0))]
    pub fn __construct(connection: &Zval, initialTtl: f64) -> PhpResult<Self> {
        Self::connect(connection, initialTtl)
    }

    pub fn save(&self, key: &PhpKey) -> PhpResult<()> {
        self.checked(|c| c.save(key))
    }

    pub fn save_read(&self, key: &PhpKey) -> PhpResult<()> {
        self.checked(|c| c.save_read(key))
    }

    pub fn wait_and_save(&self, key: &PhpKey) -> PhpResult<()> {
        self.checked(|c| c.wait_and_save(key))
    }

    pub fn wait_and_save_read(&self, key: &PhpKey) -> PhpResult<()> {
        self.checked(|c| c.wait_and_save_read(key))
    }

    pub fn put_off_expiration(&self, key: &PhpKey, ttl: f64) -> PhpResult<()> {
        self.checked(|c| c.put_off_expiration(key, ttl))
    }

    pub fn delete(&self, key: &PhpKey) -> PhpResult<()> {
        self.checked(|c| c.delete(key))
    }

    pub fn exists(&self, key: &PhpKey) -> PhpResult<bool> {
        self.checked(|c| c.exists(key))
    }
}
