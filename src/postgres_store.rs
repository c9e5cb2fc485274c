//! `Deadbolt\Store\PostgreSqlStore`: locks as PostgreSQL advisory locks, on symfony/lock's
//! `PostgreSqlStore` keys, by DSN (PDO's `pgsql:` form or libpq's URL, with symfony/lock's
//! `db_username` and `db_password` options: each process connects once, on its first lock), or
//! on the application's `\PDO` of the `pgsql` driver.
// PHP takes parameter names from the Rust names, and symfony/lock spells them in camelCase.
#![allow(non_snake_case)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use deadbolt_core::{
    Member, PdoPostgreSqlStore, PostgreSqlStore, PostgresServer, RefusingStore, StoreRef,
};
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendHashTable, Zval};

use crate::error_map::{invalid_argument, to_php};
use crate::key::PhpKey;
use crate::pdo_connection::{app_pdo_driver, PdoConnection};
use crate::store_contract::{store_class_methods, Contract};
use crate::store_engine::Engine;

thread_local! {
    /// The store on each of the application's `\PDO`s, by object handle (unique while the store
    /// keeps its `\PDO`): every store object on one `\PDO` is one session, whose locks
    /// PostgreSQL grants again to it, so they share what its keys hold and exclude each other.
    static ON_APP_PDO: RefCell<HashMap<u32, Weak<PdoPostgreSqlStore<PdoConnection>>>> =
        RefCell::default();
}

const CLASS: &str = "Deadbolt\\Store\\PostgreSqlStore";

#[php_class]
#[php(name = "Deadbolt\\Store\\PostgreSqlStore")]
#[php(flags = ClassFlags::Final)]
#[php(implements(crate::interfaces::PhpInterfaceBlockingStoreInterface))]
#[php(implements(crate::interfaces::PhpInterfaceBlockingSharedLockStoreInterface))]
pub struct PhpPostgreSqlStore {
    engine: Engine<PostgreSqlStore, PdoPostgreSqlStore<PdoConnection>>,
}

impl PhpPostgreSqlStore {
    fn engine(&self) -> &dyn deadbolt_core::Store {
        self.engine.store()
    }

    /// The store for a Lock.
    pub(crate) fn store_ref(&self) -> StoreRef {
        self.engine.store_ref()
    }

    /// The store as a member of a combined store, and whether it calls PHP.
    pub(crate) fn member(&self) -> (Member, bool) {
        self.engine.member()
    }

    /// A store on the server `connection` names, or on the application's `\PDO`, with
    /// symfony/lock's options.
    pub(crate) fn open(connection: &Zval, options: Option<&ZendHashTable>) -> PhpResult<Self> {
        let (user, password) = credentials(options)?;
        let Some(dsn) = connection.str() else {
            return Self::on_app_pdo(connection);
        };
        if let Some(driver) = PostgresServer::other_driver(dsn) {
            return Ok(Self::refusing_driver(driver));
        }
        let server = PostgresServer::of_dsn_with(dsn, user.as_deref(), password.as_deref())
            .map_err(to_php)?;
        let store = PostgreSqlStore::new(server).map_err(to_php)?;
        Ok(PhpPostgreSqlStore {
            engine: Engine::Native(Rc::new(store)),
        })
    }

    /// A store on the application's `\PDO` (a subclass too: PHP 8.4's `Pdo\Pgsql`, the
    /// application's own), which must be of the `pgsql` driver.
    fn on_app_pdo(connection: &Zval) -> PhpResult<Self> {
        let driver = app_pdo_driver(connection, CLASS)?;
        if driver != "pgsql" {
            return Err(invalid_argument(unsupported_driver(&driver)));
        }
        let handle = connection.object().map_or(0, |object| object.handle);
        let store = ON_APP_PDO.with(|stores| {
            let mut stores = stores.borrow_mut();
            stores.retain(|_, store| store.strong_count() > 0);
            if let Some(store) = stores.get(&handle).and_then(Weak::upgrade) {
                return store;
            }
            let shown = "PostgreSqlStore(the application's \\PDO)".to_owned();
            let connection = PdoConnection::of_app(connection, shown.clone());
            let store = Rc::new(PdoPostgreSqlStore::new(connection, shown));
            stores.insert(handle, Rc::downgrade(&store));
            store
        });
        Ok(PhpPostgreSqlStore {
            engine: Engine::Php(store),
        })
    }

    /// A store on a DSN of another database, which refuses every call (symfony/lock's store
    /// checks the driver when it first connects, not when it is made).
    fn refusing_driver(driver: &str) -> Self {
        let name = format!(
            "PostgreSqlStore(a \"{}\" DSN)",
            deadbolt_core::quoted_server_text(driver)
        );
        PhpPostgreSqlStore {
            engine: Engine::Refused(Rc::new(RefusingStore::new(
                name,
                unsupported_driver(driver),
            ))),
        }
    }
}

/// The refusal of a DSN or `\PDO` of another database than PostgreSQL, in symfony/lock's words.
fn unsupported_driver(driver: &str) -> String {
    format!(
        "The adapter \"{CLASS}\" does not support the \"{}\" driver: it takes PostgreSQL's \
         advisory locks, by a DSN (pgsql:host=HOST;port=PORT;dbname=DB or \
         postgresql://USER@HOST:PORT/DB) or on a \\PDO of the \"pgsql\" driver.",
        deadbolt_core::quoted_server_text(driver)
    )
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
    /// `postgresql://USER@HOST:PORT/DB[?...]`, or a `\PDO` of the pgsql driver (in exception
    /// mode); `$options`: `db_username`, `db_password`.
    pub fn __construct(connOrDsn: &Zval, options: Option<&ZendHashTable>) -> PhpResult<Self> {
        Self::open(connOrDsn, options)
    }
});

impl crate::zend_object::DebugInfo for PhpPostgreSqlStore {
    fn debug_info(&self, table: &mut ext_php_rs::types::ZendHashTable) {
        let _ = table.insert("store", self.engine().name());
    }
}
