//! `Deadbolt\Store\MemcachedStore`: locks in memcached, on symfony/lock's `MemcachedStore` items,
//! by DSN or from the application's `\Memcached` (whose server and key prefix it reads once, then
//! talks to that server on a connection of its own: the refresher's thread cannot call PHP).
// PHP takes parameter names from the Rust names, and symfony/lock spells them in camelCase.
#![allow(non_snake_case)]

use std::rc::Rc;

use deadbolt_core::{MemcachedServer, MemcachedStore};
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendObject, Zval};

use crate::error_map::{invalid_argument, to_php, type_error};
use crate::key::PhpKey;
use crate::php_call::guarded;
use crate::php_param::Float;
use crate::store_contract::{store_class_methods, Contract};

/// `\Memcached::OPT_PREFIX_KEY`.
const OPT_PREFIX_KEY: i64 = -1002;
/// symfony/lock's `$initialTtl` default.
pub(crate) const DEFAULT_INITIAL_TTL: f64 = 300.0;

#[php_class]
#[php(name = "Deadbolt\\Store\\MemcachedStore")]
#[php(flags = ClassFlags::Final)]
// Blocking as InMemoryStore is: waitAndSave() polls, in the engine (memcached tells no one of a release).
#[php(implements(crate::interfaces::PhpInterfaceBlockingStoreInterface))]
pub struct PhpMemcachedStore {
    pub(crate) inner: Rc<MemcachedStore>,
}

impl PhpMemcachedStore {
    fn engine(&self) -> &dyn deadbolt_core::Store {
        self.inner.as_ref()
    }

    /// A store on the server `connection` names (a `memcached://` DSN or a `\Memcached`).
    pub(crate) fn open(connection: &Zval, initial_ttl: f64) -> PhpResult<Self> {
        if initial_ttl < 1.0 {
            return Err(invalid_argument(format!(
                "A MemcachedStore's initial TTL is at least 1 second (memcached counts whole \
                 seconds); {} given.",
                deadbolt_core::shown_secs(initial_ttl)
            )));
        }
        let initial_ttl = crate::args::ttl(initial_ttl)?;
        let server = match connection.str() {
            Some(dsn) => MemcachedServer::of_dsn(dsn)
                .ok_or_else(|| {
                    invalid_argument("A memcached DSN starts with \"memcached://\".".into())
                })?
                .map_err(to_php)?,
            None => server_of_client(connection)?,
        };
        let store = MemcachedStore::new(server, initial_ttl).map_err(to_php)?;
        Ok(PhpMemcachedStore {
            inner: Rc::new(store),
        })
    }
}

/// The one server and the key prefix of the application's `\Memcached`.
fn server_of_client(connection: &Zval) -> PhpResult<MemcachedServer> {
    let object = connection
        .object()
        .filter(|object| crate::args::is_instance_of(object, "Memcached"))
        .ok_or_else(|| {
            type_error(format!(
                "Deadbolt\\Store\\MemcachedStore::__construct(): Argument #1 ($memcached) must be \
                 of type Memcached|string, {} given",
                crate::args::debug_type(connection)
            ))
        })?;
    let servers = call(object, "getServerList", vec![])?;
    let servers: Vec<&Zval> = servers
        .array()
        .map(|list| list.values().collect())
        .unwrap_or_default();
    let [server] = servers[..] else {
        return Err(invalid_argument(
            "The \\Memcached given to MemcachedStore must have exactly one server \
             (addServer()): Deadbolt keeps a lock on one server, and does not follow \
             libmemcached's key distribution over several."
                .into(),
        ));
    };
    let field = |name: &str| server.array().and_then(|s| s.get(name));
    let host = field("host").and_then(Zval::string).unwrap_or_default();
    let port = field("port").and_then(Zval::long).unwrap_or(0);
    let port = u16::try_from(port).ok().filter(|p| *p > 0).ok_or_else(|| {
        invalid_argument(
            "The \\Memcached given to MemcachedStore has a unix socket server: Deadbolt talks to \
             memcached over TCP (host and port)."
                .into(),
        )
    })?;
    let mut server = MemcachedServer::new(host, port);
    let prefix = call(object, "getOption", vec![&OPT_PREFIX_KEY])?;
    server.prefix = prefix.string().unwrap_or_default().into_bytes();
    Ok(server)
}

/// Whether `value` is a `\Memcached` (StoreFactory's choice between client objects).
pub(crate) fn is_memcached_client(value: &Zval) -> bool {
    value
        .object()
        .is_some_and(|object| crate::args::is_instance_of(object, "Memcached"))
}

/// `$memcached->METHOD(...)`; what it throws becomes an InvalidArgumentException.
fn call(
    object: &ZendObject,
    method: &str,
    params: Vec<&dyn ext_php_rs::convert::IntoZvalDyn>,
) -> PhpResult<Zval> {
    guarded(|| object.try_call_method(method, params))
        .ok()
        .and_then(Result::ok)
        .ok_or_else(|| invalid_argument(format!("\\Memcached::{method}() failed.")))
}

store_class_methods!(PhpMemcachedStore {
    /// `$memcached`: a `\Memcached` with one server, or `memcached://HOST[:PORT][?timeout=S&prefix_key=P]`.
    #[php(defaults(initialTtl = DEFAULT_INITIAL_TTL))]
    pub fn __construct(memcached: &Zval, initialTtl: Float<2>) -> PhpResult<Self> {
        Self::open(memcached, initialTtl.0)
    }
});

impl crate::zend_object::DebugInfo for PhpMemcachedStore {
    fn debug_info(&self, table: &mut ext_php_rs::types::ZendHashTable) {
        let _ = table.insert("store", self.engine().name());
    }
}
