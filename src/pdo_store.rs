//! `Deadbolt\Store\PdoStore`: locks as rows of symfony/lock's lock table (`lock_keys`), on
//! MySQL/MariaDB, PostgreSQL, SQLite (and SQL Server, Oracle) through PHP's `\PDO`: the
//! application's, or one made from a DSN with symfony/lock's options.
// PHP takes parameter names from the Rust names, and symfony/lock spells them in camelCase.
#![allow(non_snake_case)]

use std::rc::Rc;

use deadbolt_core::{
    Dialect, Member, PostgresServer, PostgresTable, StoreRef, Table, TableSettings, TableStore,
};
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendHashTable, Zval};

use crate::error_map::{invalid_argument, to_php};
use crate::key::PhpKey;
use crate::pdo_connection::{app_pdo_driver, ConnectionOptions, DsnSource, PdoConnection};
use crate::php_param::Float;
use crate::store_contract::{store_class_methods, Contract};
use crate::store_engine::Engine;

/// symfony/lock's defaults: `$gcProbability`, `$initialTtl`.
pub(crate) const DEFAULT_GC_PROBABILITY: f64 = 0.01;
pub(crate) const DEFAULT_INITIAL_TTL: f64 = 300.0;

#[php_class]
#[php(name = "Deadbolt\\Store\\PdoStore")]
#[php(flags = ClassFlags::Final)]
// Blocking as InMemoryStore is: waitAndSave() polls, in the engine (a table tells no one of a release).
#[php(implements(crate::interfaces::PhpInterfaceBlockingStoreInterface))]
pub struct PhpPdoStore {
    engine: Engine<TableStore<PostgresTable>, TableStore<PdoConnection>>,
}

impl PhpPdoStore {
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

    fn make_table(&self) -> deadbolt_core::Result<()> {
        match &self.engine {
            Engine::Native(store) => store.create_table(),
            Engine::Php(store) => store.create_table(),
            Engine::Refused(store) => Err(store.error()),
        }
    }

    pub(crate) fn open(
        connection: &Zval,
        options: Option<&ZendHashTable>,
        gc_probability: f64,
        initial_ttl: f64,
    ) -> PhpResult<Self> {
        // NaN is refused too.
        if initial_ttl.is_nan() || initial_ttl < 1.0 {
            return Err(to_php(deadbolt_core::Error::InvalidTtl {
                message: format!(
                    "PdoStore's initialTtl is at least 1 second (the table counts whole seconds), {} given.",
                    deadbolt_core::shown_secs(initial_ttl)
                ),
            }));
        }
        let options = Options::of(options)?;
        let (driver, source) = source_of(connection, &options)?;
        let dialect = Dialect::of_driver(&driver).ok_or_else(|| {
            invalid_argument(format!(
                "PdoStore keeps its locks in MySQL/MariaDB, PostgreSQL, SQLite, SQL Server or \
                 Oracle (PDO drivers mysql, pgsql, sqlite, sqlsrv, oci); the driver \"{}\" is \
                 none of them: its database's clock is not known, and every client must read one.",
                deadbolt_core::quoted_server_text(&driver)
            ))
        })?;
        let name = format!("PdoStore({driver}: {})", options.table.name);
        let settings = TableSettings {
            table: options.table,
            initial_ttl: crate::args::ttl(initial_ttl)?,
            gc_probability,
        };
        let engine = match source {
            Source::Native(server) => {
                let connection = PostgresTable::new(*server, &name).map_err(to_php)?;
                Engine::Native(Rc::new(
                    TableStore::new(connection, dialect, settings, name).map_err(to_php)?,
                ))
            }
            Source::App(pdo) => {
                let connection = PdoConnection::of_app(&pdo, name.clone());
                Engine::Php(Rc::new(
                    TableStore::new(connection, dialect, settings, name).map_err(to_php)?,
                ))
            }
            Source::Dsn(dsn) => {
                let connection = PdoConnection::of_dsn(dsn, name.clone());
                Engine::Php(Rc::new(
                    TableStore::new(connection, dialect, settings, name).map_err(to_php)?,
                ))
            }
        };
        Ok(PhpPdoStore { engine })
    }
}

enum Source {
    /// A `pgsql:` DSN Deadbolt's own PostgreSQL client takes.
    Native(Box<PostgresServer>),
    App(Zval),
    Dsn(DsnSource),
}

/// The driver and the source of the `\PDO` for `connection`: the application's `\PDO` (in
/// exception mode, as symfony/lock requires), or a PDO DSN.
fn source_of(connection: &Zval, options: &Options) -> PhpResult<(String, Source)> {
    if let Some(dsn) = connection.str() {
        if dsn.contains("://") {
            return Err(invalid_argument(
                "PdoStore takes PDO's DSN (\"mysql:host=HOST;dbname=DB\", \"pgsql:host=HOST;\
                 dbname=DB\", \"sqlite:/path/to/file\"): a URL is Doctrine DBAL's form, which \
                 Deadbolt does not take."
                    .into(),
            ));
        }
        let driver = dsn.split(':').next().unwrap_or_default().to_owned();
        if let Some(server) = native_postgres(dsn, options) {
            return Ok((driver, Source::Native(Box::new(server))));
        }
        return Ok((driver, Source::Dsn(options.connection.source(dsn))));
    }
    let driver = app_pdo_driver(connection, "Deadbolt\\Store\\PdoStore")?;
    Ok((driver, Source::App(connection.shallow_clone())))
}

/// The server of a `pgsql:` DSN that Deadbolt's own client can reach (its keys, no PDO
/// attributes): a session without PHP, which the refresher can use. Any other goes through `\PDO`,
/// which passes every key to libpq.
fn native_postgres(dsn: &str, options: &Options) -> Option<PostgresServer> {
    let connection = &options.connection;
    if !dsn.starts_with("pgsql:") || !connection.options.is_null() {
        return None;
    }
    PostgresServer::of_dsn_with(
        dsn,
        connection.username.as_deref(),
        connection.password.as_deref(),
    )
    .ok()
}

/// symfony/lock's options; any other is refused by name.
struct Options {
    table: Table,
    connection: ConnectionOptions,
}

impl Options {
    fn of(options: Option<&ZendHashTable>) -> PhpResult<Self> {
        let mut parsed = Options {
            table: Table::default(),
            connection: ConnectionOptions::new(),
        };
        for (name, value) in options.into_iter().flat_map(ZendHashTable::iter) {
            let name = name.to_string();
            if parsed.connection.take(&name, value, "PdoStore")? {
                continue;
            }
            let text = || {
                value.string().ok_or_else(|| {
                    invalid_argument(format!("The PdoStore option \"{name}\" must be a string."))
                })
            };
            match name.as_str() {
                "db_table" => parsed.table.name = text()?,
                "db_id_col" => parsed.table.id = text()?,
                "db_token_col" => parsed.table.token = text()?,
                "db_expiration_col" => parsed.table.expiration = text()?,
                other => {
                    return Err(invalid_argument(format!(
                        "Unknown PdoStore option \"{}\": db_table, db_id_col, db_token_col, \
                         db_expiration_col, db_username, db_password and db_connection_options \
                         are known.",
                        other.chars().take(32).collect::<String>()
                    )))
                }
            }
        }
        Ok(parsed)
    }
}

/// Whether `dsn` is a PDO DSN, which symfony/lock's StoreFactory gives to its PdoStore.
pub(crate) fn is_pdo_dsn(dsn: &str) -> bool {
    ["mysql:", "pgsql:", "sqlite:", "sqlsrv:", "oci:"]
        .iter()
        .any(|prefix| dsn.starts_with(prefix))
}

/// The URLs symfony/lock's StoreFactory gives to its DoctrineDbalStore (the same table, through
/// Doctrine DBAL), refused with what to write instead: taking them for another store would lock
/// elsewhere than a symfony/lock process given the same DSN.
const DBAL_SCHEMES: [&str; 10] = [
    "mssql",
    "mysql",
    "mysql2",
    "oci8",
    "pdo_oci",
    "pgsql",
    "postgres",
    "postgresql",
    "sqlite",
    "sqlite3",
];

pub(crate) fn refuse_dbal_url(dsn: &str) -> Option<PhpException> {
    let (scheme, _) = dsn.split_once("://")?;
    DBAL_SCHEMES.contains(&scheme).then(|| {
        invalid_argument(format!(
            "symfony/lock gives \"{scheme}://\" URLs to its DoctrineDbalStore (the lock_keys table \
             through Doctrine DBAL), which Deadbolt does not take: use PDO's DSN for the same table \
             (PdoStore: \"pgsql:host=HOST;dbname=DB\", \"mysql:host=HOST;dbname=DB\", \
             \"sqlite:/path\"), or \"postgresql+advisory://...\" for PostgreSQL advisory locks \
             (PostgreSqlStore)."
        ))
    })
}

store_class_methods!(PhpPdoStore {
    /// `$connOrDsn`: a `\PDO` (in exception mode) or a PDO DSN; `$options`: symfony/lock's
    /// `db_table`, `db_id_col`, `db_token_col`, `db_expiration_col`, `db_username`,
    /// `db_password`, `db_connection_options`.
    #[php(defaults(gcProbability = DEFAULT_GC_PROBABILITY, initialTtl = DEFAULT_INITIAL_TTL))]
    pub fn __construct(
        connOrDsn: &Zval,
        options: Option<&ZendHashTable>,
        gcProbability: Float<3>,
        initialTtl: Float<4>,
    ) -> PhpResult<Self> {
        Self::open(connOrDsn, options, gcProbability.0, initialTtl.0)
    }

    /// Creates the lock table, as symfony/lock's `createTable()` (save() creates it on first use
    /// outside a transaction).
    pub fn create_table(&self) -> PhpResult<()> {
        crate::php_call::method(|| self.make_table().map_err(to_php))
    }
});

impl crate::zend_object::DebugInfo for PhpPdoStore {
    fn debug_info(&self, table: &mut ext_php_rs::types::ZendHashTable) {
        let _ = table.insert("store", self.engine().name());
    }
}
