//! The lock table's statements run through PHP's `\PDO` (deadbolt_core's `SqlConnection`): the
//! application's own object, or one made from a DSN in each process that uses it (a forked child
//! makes its own, never talking on its parent's connection). Only ever used on PHP's thread,
//! inside a PHP call: a store on it is `StoreRef::Lent`.
//!
//! Statements are prepared once per `\PDO` and kept; one that failed is prepared again next time
//! (the table may have been created or altered since). A `\PDOException` becomes a
//! [`Failure::Sql`] with its SQLSTATE, the driver's code and its message, which the core
//! classifies (a missing table) and words.

use std::cell::RefCell;
use std::collections::HashMap;

use deadbolt_core::{Error, Failure, SqlConnection, SqlFailure};
use ext_php_rs::convert::IntoZvalDyn;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendHashTable, ZendObject, Zval};
use ext_php_rs::zend::ClassEntry;

use crate::error_map::{invalid_argument, type_error};
use crate::php_call::guarded;
use crate::zend_object::{take_pending_exception, ParkedException};

/// `\PDO::ATTR_ERRMODE`, `\PDO::ERRMODE_EXCEPTION`, `\PDO::ATTR_DRIVER_NAME`.
pub(crate) const ATTR_ERRMODE: i64 = 3;
pub(crate) const ERRMODE_EXCEPTION: i64 = 2;
pub(crate) const ATTR_DRIVER_NAME: i64 = 16;
/// `\PDO::FETCH_NUM`.
const FETCH_NUM: i64 = 3;

/// How to make a `\PDO` from a DSN (symfony/lock's `db_username`, `db_password`,
/// `db_connection_options`).
pub(crate) struct DsnSource {
    pub dsn: String,
    pub username: Option<String>,
    pub password: Option<String>,
    /// An array, or null.
    pub options: Zval,
}

/// symfony/lock's options for the `\PDO` a DSN makes: `db_username`, `db_password`,
/// `db_connection_options` (the `\PDO` constructor's `$options`).
pub(crate) struct ConnectionOptions {
    pub username: Option<String>,
    pub password: Option<String>,
    /// An array, or null.
    pub options: Zval,
}

impl ConnectionOptions {
    pub(crate) fn new() -> Self {
        ConnectionOptions {
            username: None,
            password: None,
            options: Zval::new(),
        }
    }

    /// Takes the option `name` when it is one of the three (`Ok(false)` for any other); `store`
    /// names the store in messages.
    pub(crate) fn take(&mut self, name: &str, value: &Zval, store: &str) -> PhpResult<bool> {
        let text = || {
            value.string().ok_or_else(|| {
                invalid_argument(format!("The {store} option \"{name}\" must be a string."))
            })
        };
        match name {
            "db_username" => self.username = Some(text()?),
            "db_password" => self.password = Some(text()?),
            "db_connection_options" if value.is_array() => self.options = value.shallow_clone(),
            "db_connection_options" => {
                return Err(invalid_argument(format!(
                    "The {store} option \"db_connection_options\" must be an array (the \\PDO \
                     constructor's $options)."
                )))
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// How to make the `\PDO` of `dsn` with these options.
    pub(crate) fn source(&self, dsn: &str) -> DsnSource {
        DsnSource {
            dsn: dsn.to_owned(),
            username: self.username.clone(),
            password: self.password.clone(),
            options: self.options.shallow_clone(),
        }
    }
}

/// The driver of the application's `\PDO` given as `$connOrDsn` to `class`'s constructor; it must
/// throw exceptions, as symfony/lock requires (else InvalidArgumentException saying what to set).
/// Anything but a `\PDO` (or a subclass) is PHP's TypeError for `PDO|string`.
pub(crate) fn app_pdo_driver(connection: &Zval, class: &str) -> PhpResult<String> {
    let pdo = connection
        .object()
        .filter(|object| is_pdo_object(object))
        .ok_or_else(|| {
            type_error(format!(
                "{class}::__construct(): Argument #1 ($connOrDsn) must be of type PDO|string, {} \
                 given",
                crate::args::debug_type(connection)
            ))
        })?;
    let attribute = |which: i64| {
        guarded(|| pdo.try_call_method("getAttribute", vec![&which]))
            .ok()
            .and_then(Result::ok)
    };
    if attribute(ATTR_ERRMODE).and_then(|mode| mode.long()) != Some(ERRMODE_EXCEPTION) {
        let store = class.rsplit('\\').next().unwrap_or(class);
        return Err(invalid_argument(format!(
            "{store} requires the \\PDO's error mode to throw exceptions: \
             $pdo->setAttribute(\\PDO::ATTR_ERRMODE, \\PDO::ERRMODE_EXCEPTION) (PHP 8's default)."
        )));
    }
    Ok(attribute(ATTR_DRIVER_NAME)
        .and_then(|name| name.string())
        .unwrap_or_default())
}

fn is_pdo_object(object: &ZendObject) -> bool {
    crate::args::is_instance_of(object, "PDO")
}

/// Whether `value` is a `\PDO` (StoreFactory's choice between client objects).
pub(crate) fn is_pdo(value: &Zval) -> bool {
    value.object().is_some_and(is_pdo_object)
}

/// Where the `\PDO` comes from.
enum Source {
    /// The application's, as it is.
    App(Zval),
    /// Made from a DSN, once per process.
    Dsn(DsnSource, RefCell<Option<Made>>),
}

/// A `\PDO` made from the DSN.
struct Made {
    /// The process it was made in.
    pid: u32,
    pdo: Zval,
    /// Its sockets, out of forked children's reach (deadbolt_core::blind_in_children): a child
    /// frees its copy of this `\PDO` when it ends, and must not end the parent's session then.
    /// Dropped after `pdo` (field order), once the socket is closed.
    _blinded: deadbolt_core::Blinded,
}

/// A session through a `\PDO`.
pub(crate) struct PdoConnection {
    source: Source,
    /// Prepared statements by their SQL, on the current `\PDO`.
    prepared: RefCell<HashMap<String, Zval>>,
    /// `PdoStore(DRIVER: TABLE)`, for messages.
    name: String,
}

impl PdoConnection {
    pub(crate) fn of_app(pdo: &Zval, name: String) -> Self {
        Self::new(Source::App(pdo.shallow_clone()), name)
    }

    pub(crate) fn of_dsn(source: DsnSource, name: String) -> Self {
        Self::new(Source::Dsn(source, RefCell::new(None)), name)
    }

    fn new(source: Source, name: String) -> Self {
        PdoConnection {
            source,
            prepared: RefCell::default(),
            name,
        }
    }

    /// The `\PDO` of this process.
    fn pdo(&self) -> Result<Zval, Failure> {
        let (source, current) = match &self.source {
            Source::App(pdo) => return Ok(pdo.shallow_clone()),
            Source::Dsn(source, current) => (source, current),
        };
        let pid = std::process::id();
        if let Some(made) = &*current.borrow() {
            if made.pid == pid {
                return Ok(made.pdo.shallow_clone());
            }
        }
        // First use here, or a forked child: a \PDO of its own, and statements of its own.
        self.prepared.borrow_mut().clear();
        current.borrow_mut().take();
        let before = deadbolt_core::process_sockets();
        let pdo = self.connect(source)?;
        let opened = deadbolt_core::process_sockets()
            .difference(&before)
            .copied()
            .collect::<Vec<_>>();
        *current.borrow_mut() = Some(Made {
            pid,
            pdo: pdo.shallow_clone(),
            _blinded: deadbolt_core::blind_in_children(opened),
        });
        Ok(pdo)
    }

    /// `new \PDO($dsn, $username, $password, $options)`, in exception mode.
    fn connect(&self, source: &DsnSource) -> Result<Zval, Failure> {
        let class = ClassEntry::try_find("PDO").ok_or_else(|| {
            Failure::Client(Error::Storage {
                message: format!("{}: PHP's pdo extension is not loaded.", self.name),
                source: None,
            })
        })?;
        let object = ZendObject::new(class);
        let mut pdo = Zval::new();
        ext_php_rs::convert::IntoZval::set_zval(object, &mut pdo, false)
            .map_err(|e| self.client_error("make a \\PDO", &e.to_string()))?;
        let username = source.username.as_deref().map_or_else(Zval::new, text);
        let password = source.password.as_deref().map_or_else(Zval::new, text);
        let dsn = text(&source.dsn);
        self.call(
            &pdo,
            "__construct",
            vec![&dsn, &username, &password, &source.options.shallow_clone()],
        )
        .map_err(|failure| self.connect_failure(failure))?;
        self.call(
            &pdo,
            "setAttribute",
            vec![&ATTR_ERRMODE, &ERRMODE_EXCEPTION],
        )?;
        Ok(pdo)
    }

    /// A failed connection, worded without the DSN (it may hold a password): PDO's own messages
    /// do not repeat it.
    fn connect_failure(&self, failure: Failure) -> Failure {
        match failure {
            Failure::Sql(sql) => Failure::Client(Error::Storage {
                message: format!(
                    "{} cannot connect: {}",
                    self.name,
                    deadbolt_core::quoted_server_text(&sql.message)
                ),
                source: None,
            }),
            other => other,
        }
    }

    /// Runs `sql` with `params`; the statement, to read its outcome from. A `\PDO` made from a
    /// DSN whose connection is gone (a server restart, a failover, a connection the server ended)
    /// is made again and the statement run once more on it: every statement of the table is
    /// idempotent for its token, so one the old connection may have run is harmless to run again.
    fn run(&self, sql: &str, params: &[&str]) -> Result<Zval, Failure> {
        match self.run_once(sql, params) {
            Err(Failure::Sql(failure))
                if matches!(self.source, Source::Dsn(..)) && failure.connection_lost() =>
            {
                // Its statements first: they keep the \PDO (and its socket) alive.
                self.prepared.borrow_mut().clear();
                if let Source::Dsn(_, current) = &self.source {
                    current.borrow_mut().take();
                }
                self.run_once(sql, params)
            }
            other => other,
        }
    }

    fn run_once(&self, sql: &str, params: &[&str]) -> Result<Zval, Failure> {
        let pdo = self.pdo()?;
        let kept = self.prepared.borrow().get(sql).map(Zval::shallow_clone);
        let statement = match kept {
            Some(statement) => statement,
            None => {
                let statement = self.call(&pdo, "prepare", vec![&text(sql)])?;
                self.prepared
                    .borrow_mut()
                    .insert(sql.to_owned(), statement.shallow_clone());
                statement
            }
        };
        let params: Vec<String> = params.iter().map(|p| (*p).to_owned()).collect();
        let mut bound = ZendHashTable::new();
        for param in params {
            bound
                .push(param)
                .map_err(|e| self.client_error("bind a parameter", &e.to_string()))?;
        }
        let executed = self.call(&statement, "execute", vec![&bound]);
        if executed.is_err() {
            // Prepared again next time: the table may change meanwhile (created, altered).
            self.prepared.borrow_mut().remove(sql);
        }
        executed.map(|_| statement)
    }

    /// `$object->method(...$params)`; a `\PDOException` it throws is a [`Failure::Sql`].
    fn call(
        &self,
        object: &Zval,
        method: &str,
        params: Vec<&dyn IntoZvalDyn>,
    ) -> Result<Zval, Failure> {
        // An exception already in flight (a signal handler's) is not PDO's: set aside for the
        // call, and put back after it.
        let _parked = crate::php_call::exception_in_flight()
            .then(ParkedException::park)
            .flatten();
        let result = guarded(|| object.try_call_method(method, params))
            .map_err(|ended| self.client_error(method, &ended.to_string()))?;
        if let Some(exception) = take_pending_exception() {
            return Err(self.failure_of(&exception));
        }
        result.map_err(|e| self.client_error(method, &e.to_string()))
    }

    /// What an exception thrown by PDO says: a `\PDOException`'s SQLSTATE, code and message.
    fn failure_of(&self, exception: &ZendObject) -> Failure {
        let message = crate::args::message_of(exception).unwrap_or_default();
        if !crate::args::is_instance_of(exception, "PDOException") {
            let class = crate::args::class_name(exception);
            return Failure::Client(Error::Storage {
                message: format!(
                    "{}: {class}: {}",
                    self.name,
                    deadbolt_core::quoted_server_text(&message)
                ),
                source: None,
            });
        }
        let info = exception.get_property::<&Zval>("errorInfo").ok();
        let field = |index: i64| info.and_then(Zval::array).and_then(|a| a.get_index(index));
        Failure::Sql(SqlFailure {
            sqlstate: field(0).and_then(Zval::string).unwrap_or_default(),
            code: field(1).and_then(Zval::long).unwrap_or(0),
            message,
        })
    }

    fn client_error(&self, what: &str, why: &str) -> Failure {
        Failure::Client(Error::Storage {
            message: format!("{}: \\PDO's {what} failed: {why}", self.name),
            source: None,
        })
    }
}

fn text(value: &str) -> Zval {
    let mut zval = Zval::new();
    let _ = zval.set_string(value, false);
    zval
}

impl SqlConnection for PdoConnection {
    fn execute(&self, sql: &str, params: &[&str]) -> Result<u64, Failure> {
        let statement = self.run(sql, params)?;
        let count = self.call(&statement, "rowCount", vec![])?;
        Ok(count
            .long()
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(0))
    }

    fn first_row(&self, sql: &str, params: &[&str]) -> Result<Option<Vec<String>>, Failure> {
        let statement = self.run(sql, params)?;
        let row = self.call(&statement, "fetch", vec![&FETCH_NUM]);
        // The cursor closed whatever came back: SQLite keeps its read lock on the table until then.
        let _ = self.call(&statement, "closeCursor", vec![]);
        let row = row?;
        Ok(row.array().map(|values| {
            values
                .values()
                .map(|value| {
                    value
                        .string()
                        .or_else(|| value.long().map(|n| n.to_string()))
                        .unwrap_or_default()
                })
                .collect()
        }))
    }

    fn in_transaction(&self) -> bool {
        self.pdo()
            .ok()
            .and_then(|pdo| self.call(&pdo, "inTransaction", vec![]).ok())
            .and_then(|answer| answer.bool())
            .unwrap_or(false)
    }
}
