//! `Deadbolt\Store\PostgreSqlStore`: locks as PostgreSQL advisory locks, on symfony/lock's
//! `PostgreSqlStore` keys, by DSN (PDO's `pgsql:` form or libpq's URL), with symfony/lock's
//! `db_username` and `db_password` options. Each process connects once, on its first lock.
// PHP takes parameter names from the Rust names, and symfony/lock spells them in camelCase.
#![allow(non_snake_case)]

use std::rc::Rc;

use deadbolt_core::{PostgreSqlStore, PostgresServer};
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendHashTable, Zval};
use ext_php_rs::zend::ClassEntry;

use crate::error_map::{invalid_argument, to_php, type_error};
use crate::key::PhpKey;
use crate::store_contract::{store_class_methods, Contract};

#[php_class]
#[php(name = "Deadbolt\\Store\\PostgreSqlStore")]
#[php(flags = ClassFlags::Final)]
#[php(implements(crate::interfaces::PhpInterfaceBlockingStoreInterface))]
#[php(implements(crate::interfaces::PhpInterfaceBlockingSharedLockStoreInterface))]
pub struct PhpPostgreSqlStore {
    pub(crate) inner: Rc<PostgreSqlStore>,
}

impl PhpPostgreSqlStore {
    fn engine(&self) -> &dyn deadbolt_core::Store {
        self.inner.as_ref()
    }

    /// A store on the server `connection` names, with symfony/lock's options.
    pub(crate) fn open(connection: &Zval, options: Option<&ZendHashTable>) -> PhpResult<Self> {
        let Some(dsn) = connection.str() else {
            // A \PDO or a subclass (PHP 8.4's Pdo\Pgsql, an application's own).
            let pdo = ClassEntry::try_find("PDO");
            if connection
                .object()
                .zip(pdo)
                .is_some_and(|(o, pdo)| o.instance_of(pdo))
            {
                return Err(invalid_argument(
                    "Deadbolt's PostgreSqlStore connects by itself (a session of its own per \
                     process, which its waits and its lost-lock checks need): give it the DSN \
                     your \\PDO was made with, e.g. \"pgsql:host=HOST;dbname=DB\", with \
                     ['db_username' => ..., 'db_password' => ...] or password_env=VARIABLE."
                        .into(),
                ));
            }
            return Err(type_error(format!(
                "Deadbolt\\Store\\PostgreSqlStore::__construct(): Argument #1 ($connOrDsn) must \
                 be of type string, {} given",
                crate::args::debug_type(connection)
            )));
        };
        let (user, password) = credentials(options)?;
        let server = PostgresServer::of_dsn_with(dsn, user.as_deref(), password.as_deref())
            .map_err(to_php)?;
        let store = PostgreSqlStore::new(server).map_err(to_php)?;
        Ok(PhpPostgreSqlStore {
            inner: Rc::new(store),
        })
    }
}

/// symfony/lock's `db_username` and `db_password` options; any other is refused by name.
fn credentials(options: Option<&ZendHashTable>) -> PhpResult<(Option<String>, Option<String>)> {
    let (mut user, mut password) = (None, None);
    for (name, value) in options.into_iter().flat_map(ZendHashTable::iter) {
        let name = name.to_string();
        let text = || {
            value.string().ok_or_else(|| {
                invalid_argument(format!(
                    "The PostgreSqlStore option \"{name}\" must be a string."
                ))
            })
        };
        match name.as_str() {
            "db_username" => user = Some(text()?),
            "db_password" => password = Some(text()?),
            other => {
                return Err(invalid_argument(format!(
                    "Unknown PostgreSqlStore option \"{}\": db_username and db_password are \
                     known (the rest goes in the DSN: sslmode, sslrootcert, connect_timeout, \
                     timeout, application_name, password_env).",
                    other.chars().take(32).collect::<String>()
                )))
            }
        }
    }
    Ok((user, password))
}

/// The DSN of this store in symfony/lock's StoreFactory forms for advisory locks
/// (`pgsql+advisory:...`, and `postgres+advisory://`, `postgresql+advisory://`,
/// `pgsql+advisory://` URLs, which symfony/lock gives to DBAL's advisory store), without
/// `+advisory`; `None` for any other DSN (a bare `pgsql:` DSN is PdoStore's, as in symfony/lock).
pub(crate) fn advisory_dsn(dsn: &str) -> Option<String> {
    let (scheme, rest) = dsn.split_once("+advisory:")?;
    match (scheme, rest.starts_with("//")) {
        ("pgsql", false) => Some(format!("pgsql:{rest}")),
        ("pgsql" | "postgres" | "postgresql", true) => Some(format!("postgresql:{rest}")),
        _ => None,
    }
}

store_class_methods!(PhpPostgreSqlStore {
    /// `$connOrDsn`: `pgsql:host=HOST;port=PORT;dbname=DB[;user=U;sslmode=M;...]` or
    /// `postgresql://USER@HOST:PORT/DB[?...]`; `$options`: `db_username`, `db_password`.
    pub fn __construct(connOrDsn: &Zval, options: Option<&ZendHashTable>) -> PhpResult<Self> {
        Self::open(connOrDsn, options)
    }
});

impl crate::zend_object::DebugInfo for PhpPostgreSqlStore {
    fn debug_info(&self, table: &mut ext_php_rs::types::ZendHashTable) {
        let _ = table.insert("store", self.engine().name());
    }
}
