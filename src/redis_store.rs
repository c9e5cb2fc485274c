// PHP takes parameter names from the Rust names; symfony/lock spells them in camelCase.
#![allow(non_snake_case)]

//! `Deadbolt\Store\RedisStore`: Redis by DSN (a native connection) or through a PHP client object
//! the application lends (its `\Redis`, `\RedisCluster` or Predis client).

use std::rc::Rc;

use deadbolt_core::{Member, NativeTransport, RedisStore, Store, StoreRef, Ttl};
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::Zval;

use crate::args;
use crate::error_map::{to_php, type_error};
use crate::key::PhpKey;
use crate::php_param::Float;
use crate::php_redis_client::PhpClientTransport;
use crate::store_contract::{store_class_methods, Contract};

/// The two transports, as two types: only a native one may be used outside PHP's own calls.
enum Transported {
    Native(Rc<RedisStore<NativeTransport>>),
    Lent(Rc<RedisStore<PhpClientTransport>>),
}

/// Where a Redis store's connection comes from.
pub(crate) enum Connection<'a> {
    /// A DSN: Deadbolt's own connection.
    Dsn(&'a str),
    /// A client object the application lends (`\Redis`, `\RedisCluster`, Predis).
    Client(&'a Zval),
}

#[php_class]
#[php(name = "Deadbolt\\Store\\RedisStore")]
#[php(flags = ClassFlags::Final)]
#[php(implements(crate::interfaces::PhpInterfaceBlockingStoreInterface))]
#[php(implements(crate::interfaces::PhpInterfaceBlockingSharedLockStoreInterface))]
pub struct PhpRedisStore {
    inner: Transported,
}

impl PhpRedisStore {
    /// A store on `connection`, locks given `initial_ttl` seconds by a bare `save()`.
    pub(crate) fn connect(connection: Connection<'_>, initial_ttl: f64) -> PhpResult<Self> {
        let initial_ttl: Ttl = args::ttl(initial_ttl)?;
        let inner = match connection {
            Connection::Dsn(dsn) => Transported::Native(Rc::new(
                RedisStore::connect(dsn, initial_ttl).map_err(to_php)?,
            )),
            Connection::Client(client) => {
                Transported::Lent(Rc::new(RedisStore::new(lent_client(client)?, initial_ttl)))
            }
        };
        Ok(PhpRedisStore { inner })
    }

    /// The store as a lock holds it.
    pub(crate) fn store_ref(&self) -> StoreRef {
        match &self.inner {
            Transported::Native(store) => StoreRef::Owned(store.clone()),
            Transported::Lent(store) => StoreRef::Lent(store.clone()),
        }
    }

    /// The store as a member of a combined store, and whether it calls PHP.
    pub(crate) fn member(&self) -> (Member, bool) {
        match &self.inner {
            Transported::Native(store) => (Member::Anywhere(store.clone()), false),
            Transported::Lent(store) => (Member::Here(store.clone()), true),
        }
    }

    fn engine(&self) -> &dyn Store {
        match &self.inner {
            Transported::Native(store) => store.as_ref(),
            Transported::Lent(store) => store.as_ref(),
        }
    }
}

/// A transport over the client object in `client`; a `\TypeError` for anything else.
fn lent_client(client: &Zval) -> PhpResult<PhpClientTransport> {
    let not_a_client = |given: String| {
        type_error(format!(
            "Deadbolt\\Store\\RedisStore::__construct(): Argument #1 ($connection) must be a DSN string, \\Redis, \\RedisCluster or \\Predis\\ClientInterface, {given} given"
        ))
    };
    let Some(object) = client.object() else {
        return Err(not_a_client(args::debug_type(client)));
    };
    PhpClientTransport::new(client).ok_or_else(|| not_a_client(args::class_name(object)))
}

store_class_methods!(PhpRedisStore {
    /// `$connection`: `redis://…`, `rediss://…`, `redis:///path.sock` (see the DSN options in the
    /// stub), or a connected `\Redis`, `\RedisCluster`, `\Predis\ClientInterface`.
    #[php(defaults(initialTtl = deadbolt_core::DEFAULT_TTL_SECS))]
    pub fn __construct(connection: &Zval, initialTtl: Float<2>) -> PhpResult<Self> {
        let connection = match connection.str() {
            Some(dsn) => Connection::Dsn(dsn),
            None => Connection::Client(connection),
        };
        Self::connect(connection, initialTtl.0)
    }
});

impl crate::zend_object::DebugInfo for PhpRedisStore {
    fn debug_info(&self, table: &mut ext_php_rs::types::ZendHashTable) {
        // The redacted endpoint ("RedisStore(redis://host:port/db)"): never a user or a password.
        let _ = table.insert("store", self.engine().name());
    }
}
