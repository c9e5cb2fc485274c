//! `Deadbolt\Store\MysqlStore`: locks as MySQL/MariaDB user-level locks (`GET_LOCK`), on the names
//! symfony/lock's `MysqlStore` (8.2) takes, through PHP's `\PDO`: the application's, or one made
//! from a `mysql:` DSN in each process with symfony/lock's options. PHP's class names are
//! case-insensitive, so `MySqlStore` names it too.
// PHP takes parameter names from the Rust names, and symfony/lock spells them in camelCase.
#![allow(non_snake_case)]

use std::rc::Rc;

use deadbolt_core::{Member, MysqlStore, StoreRef};
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendHashTable, Zval};

use crate::error_map::invalid_argument;
use crate::key::PhpKey;
use crate::pdo_connection::{app_pdo_driver, ConnectionOptions, PdoConnection};
use crate::store_contract::{store_class_methods, Contract};

const CLASS: &str = "Deadbolt\\Store\\MysqlStore";

#[php_class]
#[php(name = "Deadbolt\\Store\\MysqlStore")]
#[php(flags = ClassFlags::Final)]
#[php(implements(crate::interfaces::PhpInterfaceBlockingStoreInterface))]
pub struct PhpMysqlStore {
    inner: Rc<MysqlStore<PdoConnection>>,
}

impl PhpMysqlStore {
    fn engine(&self) -> &dyn deadbolt_core::Store {
        self.inner.as_ref()
    }

    /// The store for a Lock: PHP's `\PDO`, called on PHP's thread only, never from `Drop`.
    pub(crate) fn store_ref(&self) -> StoreRef {
        StoreRef::Lent(self.inner.clone())
    }

    /// The store as a member of a combined store (it calls PHP).
    pub(crate) fn member(&self) -> (Member, bool) {
        (Member::Here(self.inner.clone()), true)
    }

    pub(crate) fn open(connection: &Zval, options: Option<&ZendHashTable>) -> PhpResult<Self> {
        let options = options_of(options)?;
        let (shown, connection) = match connection.str() {
            Some(dsn) => {
                let dsn = mysql_dsn(dsn)?;
                let shown = format!("MysqlStore({})", shown_server(&dsn));
                let source = options.source(&dsn);
                (shown.clone(), PdoConnection::of_dsn(source, shown))
            }
            None => {
                let driver = app_pdo_driver(connection, CLASS)?;
                if driver != "mysql" {
                    return Err(invalid_argument(format!(
                        "MysqlStore takes locks on a MySQL or MariaDB server: a \\PDO of the \
                         \"mysql\" driver, not \"{}\".",
                        deadbolt_core::quoted_server_text(&driver)
                    )));
                }
                let shown = "MysqlStore(the application's \\PDO)".to_owned();
                (shown.clone(), PdoConnection::of_app(connection, shown))
            }
        };
        Ok(PhpMysqlStore {
            inner: Rc::new(MysqlStore::new(connection, shown)),
        })
    }
}

/// The PDO DSN of `dsn`: `mysql:...`, or symfony/lock's StoreFactory form `mysql+advisory:...`.
fn mysql_dsn(dsn: &str) -> PhpResult<String> {
    if let Some(rest) = dsn.strip_prefix("mysql+advisory:") {
        if !rest.starts_with("//") {
            return Ok(format!("mysql:{rest}"));
        }
    } else if dsn.starts_with("mysql:") && !dsn.starts_with("mysql://") {
        return Ok(dsn.to_owned());
    }
    Err(invalid_argument(
        "MysqlStore takes PDO's MySQL DSN (\"mysql:host=HOST;port=PORT;dbname=DB\", or \
         \"mysql+advisory:host=...\" as symfony/lock's StoreFactory writes it) or a \\PDO of the \
         \"mysql\" driver."
            .into(),
    ))
}

/// The server a DSN names, for messages: its host (or socket) and port, never its other keys (a
/// password may be one).
fn shown_server(dsn: &str) -> String {
    let value = |name: &str| {
        dsn["mysql:".len()..]
            .split(';')
            .filter_map(|pair| pair.split_once('='))
            .find(|(key, _)| key.trim() == name)
            .map(|(_, value)| deadbolt_core::quoted_server_text(value.trim()))
    };
    match (value("unix_socket"), value("host"), value("port")) {
        (Some(socket), _, _) => socket,
        (None, host, port) => format!(
            "{}:{}",
            host.unwrap_or_else(|| "localhost".into()),
            port.unwrap_or_else(|| "3306".into())
        ),
    }
}

/// symfony/lock's options: `db_username`, `db_password`, `db_connection_options`; any other is
/// refused by name.
fn options_of(options: Option<&ZendHashTable>) -> PhpResult<ConnectionOptions> {
    let mut parsed = ConnectionOptions::new();
    for (name, value) in options.into_iter().flat_map(ZendHashTable::iter) {
        let name = name.to_string();
        if !parsed.take(&name, value, "MysqlStore")? {
            return Err(invalid_argument(format!(
                "Unknown MysqlStore option \"{}\": db_username, db_password and \
                 db_connection_options are known.",
                name.chars().take(32).collect::<String>()
            )));
        }
    }
    Ok(parsed)
}

store_class_methods!(PhpMysqlStore {
    /// `$connOrDsn`: a `\PDO` of the mysql driver (in exception mode) or a `mysql:` DSN;
    /// `$options`: `db_username`, `db_password`, `db_connection_options`.
    pub fn __construct(connOrDsn: &Zval, options: Option<&ZendHashTable>) -> PhpResult<Self> {
        Self::open(connOrDsn, options)
    }
});

impl crate::zend_object::DebugInfo for PhpMysqlStore {
    fn debug_info(&self, table: &mut ext_php_rs::types::ZendHashTable) {
        let _ = table.insert("store", self.engine().name());
    }
}
