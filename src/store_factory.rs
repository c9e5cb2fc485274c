//! `Deadbolt\Store\StoreFactory`: a store from a connection string or a client object, as
//! symfony/lock's `StoreFactory::createStore()`.

use ext_php_rs::boxed::ZBox;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendClassObject, ZendObject, Zval};

use crate::error_map::invalid_argument;
use crate::memcached_store::{PhpMemcachedStore, DEFAULT_INITIAL_TTL};
use crate::pdo_store::{
    PhpPdoStore, DEFAULT_GC_PROBABILITY, DEFAULT_INITIAL_TTL as PDO_INITIAL_TTL,
};
use crate::postgres_store::PhpPostgreSqlStore;
use crate::redis_store::{Connection, PhpRedisStore};
use crate::stores::{PhpFlockStore, PhpInMemoryStore, PhpSemaphoreStore};

#[php_class]
#[php(name = "Deadbolt\\Store\\StoreFactory")]
#[php(flags = ClassFlags::Final)]
pub struct PhpStoreFactory;

#[php_impl]
impl PhpStoreFactory {
    /// Builds a store from a connection string (`flock`, `flock:///abs/path`, `in-memory`,
    /// `semaphore`, `semaphore?hash=md5`, `redis://…`, `rediss://…`, `memcached://…`, a PDO DSN `pgsql:…` / `mysql:…` / `sqlite:…` / `sqlsrv:…` / `oci:…`
    /// (PdoStore, as symfony/lock), `pgsql+advisory:…` / `postgresql+advisory://…` (PostgreSqlStore),
    /// `mysql+advisory:…` (MysqlStore))
    /// or a client object (`\Redis`, `\RedisCluster`, Predis, `\Memcached`, `\PDO`).
    pub fn create_store(connection: &Zval) -> PhpResult<ZBox<ZendObject>> {
        let Some(dsn) = connection.str() else {
            if crate::pdo_connection::is_pdo(connection) {
                let store =
                    PhpPdoStore::open(connection, None, DEFAULT_GC_PROBABILITY, PDO_INITIAL_TTL)?;
                return Ok(ZendClassObject::new(store).into());
            }
            if crate::memcached_store::is_memcached_client(connection) {
                let store = PhpMemcachedStore::open(connection, DEFAULT_INITIAL_TTL)?;
                return Ok(ZendClassObject::new(store).into());
            }
            let store = PhpRedisStore::connect(
                Connection::Client(connection),
                deadbolt_core::DEFAULT_TTL_SECS,
            )?;
            return Ok(ZendClassObject::new(store).into());
        };
        if let Some(dsn) = crate::postgres_store::advisory_dsn(dsn) {
            let mut plain = Zval::new();
            plain.set_string(&dsn, false)?;
            let store = PhpPostgreSqlStore::open(&plain, None)?;
            return Ok(ZendClassObject::new(store).into());
        }
        if dsn.starts_with("mysql+advisory:") {
            let store = crate::mysql_store::PhpMysqlStore::open(connection, None)?;
            return Ok(ZendClassObject::new(store).into());
        }
        if let Some(refusal) = crate::pdo_store::refuse_dbal_url(dsn) {
            return Err(refusal);
        }
        if crate::pdo_store::is_pdo_dsn(dsn) {
            let store =
                PhpPdoStore::open(connection, None, DEFAULT_GC_PROBABILITY, PDO_INITIAL_TTL)?;
            return Ok(ZendClassObject::new(store).into());
        }
        if dsn.starts_with("memcached:") {
            let store = PhpMemcachedStore::open(connection, DEFAULT_INITIAL_TTL)?;
            return Ok(ZendClassObject::new(store).into());
        }
        let connection = dsn;
        if connection.starts_with("redis:") || connection.starts_with("rediss:") {
            let store = PhpRedisStore::connect(
                Connection::Dsn(connection),
                deadbolt_core::DEFAULT_TTL_SECS,
            )?;
            return Ok(ZendClassObject::new(store).into());
        }
        if connection == "in-memory" {
            return Ok(ZendClassObject::new(PhpInMemoryStore::__construct()).into());
        }
        if connection == "flock" {
            let store = PhpFlockStore::__construct(None.into())?;
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
        if let Some(hash) = deadbolt_core::KeyHash::of_dsn(connection) {
            let store = PhpSemaphoreStore::with(hash.map_err(crate::error_map::to_php)?);
            return Ok(ZendClassObject::new(store).into());
        }
        let scheme = connection.split_once(':').map_or("", |(scheme, _)| scheme);
        Err(invalid_argument(format!(
            "Unsupported store connection (scheme \"{}\"): use \"flock\", \"flock:///path\", \"in-memory\", \"semaphore\", \"redis://…\", \"rediss://…\", \"memcached://…\", a PDO DSN (\"pgsql:…\", \"mysql:…\", \"sqlite:…\", \"sqlsrv:…\", \"oci:…\") , \"pgsql+advisory:…\" / \"postgresql+advisory://…\" or \"mysql+advisory:…\".",
            scheme.chars().take(32).collect::<String>()
        )))
    }
}
