// PHP takes parameter names from the Rust names; symfony/lock spells them in camelCase.
#![allow(non_snake_case)]

//! `Deadbolt\Store\RedisStore`: Redis by DSN (native connection) or through a PHP client object.

use std::rc::Rc;

use deadbolt_core::store::redis::runner::ScriptRunner;
use deadbolt_core::RedisStore;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::Zval;

use crate::args;
use crate::error_map::{to_php, type_error};
use crate::key::PhpKey;
use crate::php_redis_client::PhpClientRunner;
use crate::stores::{store_class_methods, Contract};

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
}

store_class_methods!(PhpRedisStore {
    /// `$connection`: `redis://…`, `rediss://…`, `redis:///path.sock` (see the DSN options in the
    /// stub), or a connected `\Redis`, `\RedisCluster`, `\Predis\ClientInterface`.
    #[php(defaults(initialTtl = 300.0))]
    pub fn __construct(connection: &Zval, initialTtl: f64) -> PhpResult<Self> {
        Self::connect(connection, initialTtl)
    }
});
