//! The SQL of symfony/lock's lock table, per database: its names (validated, since they go into
//! the SQL text), the database's clock in Unix seconds, and each statement a lock needs.
//!
//! Parameters are positional (`?`) and bound as text; their order is given with each statement.

use crate::{Error, Result};

/// What a database speaks, by its PDO driver name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    MySql,
    PostgreSql,
    Sqlite,
    SqlServer,
    Oracle,
}

impl Dialect {
    /// The dialect of PDO's driver `name` (`PDO::ATTR_DRIVER_NAME`); `None` for a database whose
    /// clock symfony/lock does not read either (it would use each client's own, which can drift).
    pub fn of_driver(name: &str) -> Option<Self> {
        Some(match name {
            "mysql" => Dialect::MySql,
            "pgsql" => Dialect::PostgreSql,
            "sqlite" => Dialect::Sqlite,
            "sqlsrv" => Dialect::SqlServer,
            "oci" => Dialect::Oracle,
            _ => return None,
        })
    }

    /// The database's clock in whole Unix seconds, as symfony/lock reads it (the expiry rule of a
    /// shared table must be the same for both libraries).
    fn now(self) -> &'static str {
        match self {
            Dialect::MySql => "UNIX_TIMESTAMP()",
            Dialect::PostgreSql => "CAST(EXTRACT(epoch FROM NOW()) AS INT)",
            Dialect::Sqlite => "strftime('%s','now')",
            Dialect::SqlServer => "DATEDIFF(s, '1970-01-01', GETUTCDATE())",
            Dialect::Oracle => {
                "(SYSDATE - TO_DATE('19700101','yyyymmdd'))*86400 - \
                 TO_NUMBER(SUBSTR(TZ_OFFSET(sessiontimezone), 1, 3))*3600"
            }
        }
    }

    /// Whether `INSERT ... ON CONFLICT (id) DO UPDATE ... WHERE` takes a free or expired row in one
    /// statement (PostgreSQL 9.5+, SQLite 3.24+).
    fn upserts(self) -> bool {
        matches!(self, Dialect::PostgreSql | Dialect::Sqlite)
    }

    /// Whether a failure says the table does not exist (symfony/lock's test, per database).
    pub fn is_table_missing(self, failure: &SqlFailure) -> bool {
        match self {
            Dialect::PostgreSql => failure.sqlstate == "42P01",
            Dialect::Sqlite => failure.message.contains("no such table:"),
            Dialect::MySql => failure.code == 1146,
            Dialect::SqlServer => failure.code == 208,
            Dialect::Oracle => failure.code == 942,
        }
    }
}

/// A statement that failed in the database: its SQLSTATE, the driver's own code, its message
/// (untrusted server text: shown only through `crate::error::quoted`). The source of the
/// [`crate::Error::Storage`] a store reports it as: the extension throws a `\PDOException` for
/// it, as symfony/lock's SQL stores, all on PDO, let PDO's through.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SqlFailure {
    pub sqlstate: String,
    pub code: i64,
    pub message: String,
}

impl std::fmt::Display for SqlFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SQLSTATE {}: {}",
            self.sqlstate,
            crate::error::quoted(&self.message)
        )
    }
}

impl std::error::Error for SqlFailure {}

impl SqlFailure {
    /// Whether it says the connection is gone (with it, the session and every lock it held):
    /// SQLSTATE class 08, PostgreSQL's shutdown codes (57P01-57P03), MySQL's "server has gone
    /// away" and "lost connection" (2006, 2013), and libpq's words for a closed connection, which
    /// pdo_pgsql reports as a general error (HY000, code 7).
    pub fn connection_lost(&self) -> bool {
        const LIBPQ_CLOSED: [&str; 3] = [
            "no connection to the server",
            "server closed the connection unexpectedly",
            "terminating connection",
        ];
        self.sqlstate.starts_with("08")
            || matches!(self.sqlstate.as_str(), "57P01" | "57P02" | "57P03")
            || matches!(self.code, 2006 | 2013)
            || (self.sqlstate == "HY000"
                && LIBPQ_CLOSED
                    .iter()
                    .any(|words| self.message.contains(words)))
    }
}

/// The table's names: symfony/lock's options `db_table`, `db_id_col`, `db_token_col`,
/// `db_expiration_col`, with its defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub name: String,
    pub id: String,
    pub token: String,
    pub expiration: String,
}

impl Default for Table {
    fn default() -> Self {
        Table {
            name: "lock_keys".into(),
            id: "key_id".into(),
            token: "key_token".into(),
            expiration: "key_expiration".into(),
        }
    }
}

impl Table {
    /// Checks every name: they are written into the SQL text, so only plain identifiers (a table
    /// may be schema-qualified) are taken; symfony/lock takes anything.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the option and what it may hold.
    pub fn checked(self) -> Result<Self> {
        check_identifier("db_table", &self.name, true)?;
        check_identifier("db_id_col", &self.id, false)?;
        check_identifier("db_token_col", &self.token, false)?;
        check_identifier("db_expiration_col", &self.expiration, false)?;
        Ok(self)
    }
}

fn check_identifier(option: &str, value: &str, qualified: bool) -> Result<()> {
    let plain = |part: &str| {
        let mut chars = part.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            && part.len() <= 63
    };
    let parts: Vec<&str> = value.split('.').collect();
    if parts.iter().all(|part| plain(part)) && (parts.len() == 1 || qualified && parts.len() == 2) {
        return Ok(());
    }
    Err(Error::invalid_argument(format!(
        "The PdoStore option \"{option}\" must be a plain SQL identifier (letters, digits and \
         underscores, not starting with a digit, at most 63 characters{}); \"{}\" given.",
        if qualified {
            "; SCHEMA.TABLE allowed"
        } else {
            ""
        },
        crate::error::quoted(value)
    )))
}

/// Every statement a lock needs, written once for a table and a database.
#[derive(Debug, Clone)]
pub struct Statements {
    /// Takes the lock where it is free (no row) and, with an upsert, where its row expired or
    /// already carries this token; `id, token, seconds`. Changes one row when taken.
    pub take: String,
    /// Whether `take` also takes an expired or own row (else `take_over` follows a failed insert).
    pub take_upserts: bool,
    /// Takes an expired row or renews this token's: `seconds, token, id, token`.
    pub take_over: String,
    /// Renews this token's row while it has not expired: `seconds, id, token`. A lock that expired
    /// is never revived (someone may have held it meanwhile).
    pub extend: String,
    /// Removes this token's row: `id, token`.
    pub delete: String,
    /// One row when this token holds an unexpired row: `id, token`.
    pub exists: String,
    /// The holder's token and the seconds its row has left, by the database's clock: `id`.
    pub holder: String,
    /// Removes the row whoever holds it (an operator's release): `id`.
    pub force_delete: String,
    /// Removes every expired row (symfony/lock's random prune).
    pub prune: String,
    /// The table, as symfony/lock's `createTable()` makes it.
    pub create: String,
}

impl Statements {
    pub fn new(table: &Table, dialect: Dialect) -> Self {
        let Table {
            name,
            id,
            token,
            expiration,
        } = table;
        let now = dialect.now();
        let insert =
            format!("INSERT INTO {name} ({id}, {token}, {expiration}) VALUES (?, ?, {now} + ?)");
        let take = if dialect.upserts() {
            // The existing row is the unqualified name (PostgreSQL and SQLite both read it so in
            // DO UPDATE), the proposed one `excluded`.
            let bare = name.rsplit('.').next().unwrap_or(name);
            format!(
                "{insert} ON CONFLICT ({id}) DO UPDATE SET {token} = excluded.{token}, \
                 {expiration} = excluded.{expiration} WHERE {bare}.{token} = excluded.{token} \
                 OR {bare}.{expiration} <= {now}"
            )
        } else {
            insert
        };
        Statements {
            take,
            take_upserts: dialect.upserts(),
            take_over: format!(
                "UPDATE {name} SET {expiration} = {now} + ?, {token} = ? WHERE {id} = ? AND \
                 ({token} = ? OR {expiration} <= {now})"
            ),
            extend: format!(
                "UPDATE {name} SET {expiration} = {now} + ? WHERE {id} = ? AND {token} = ? AND \
                 {expiration} > {now}"
            ),
            delete: format!("DELETE FROM {name} WHERE {id} = ? AND {token} = ?"),
            exists: format!(
                "SELECT 1 FROM {name} WHERE {id} = ? AND {token} = ? AND {expiration} > {now}"
            ),
            holder: format!(
                "SELECT {token}, {expiration} - {now} FROM {name} WHERE {id} = ? AND \
                 {expiration} > {now}"
            ),
            force_delete: format!("DELETE FROM {name} WHERE {id} = ? AND {expiration} > {now}"),
            prune: format!("DELETE FROM {name} WHERE {expiration} <= {now}"),
            create: create_table(table, dialect),
        }
    }
}

/// symfony/lock's `createTable()` DDL for each database.
fn create_table(table: &Table, dialect: Dialect) -> String {
    let Table {
        name,
        id,
        token,
        expiration,
    } = table;
    match dialect {
        Dialect::MySql => format!(
            "CREATE TABLE {name} ({id} VARCHAR(64) NOT NULL PRIMARY KEY, {token} VARCHAR(44) NOT \
             NULL, {expiration} INTEGER UNSIGNED NOT NULL) COLLATE utf8mb4_bin, ENGINE = InnoDB"
        ),
        Dialect::Sqlite => format!(
            "CREATE TABLE {name} ({id} TEXT NOT NULL PRIMARY KEY, {token} TEXT NOT NULL, \
             {expiration} INTEGER)"
        ),
        Dialect::PostgreSql | Dialect::SqlServer => format!(
            "CREATE TABLE {name} ({id} VARCHAR(64) NOT NULL PRIMARY KEY, {token} VARCHAR(64) NOT \
             NULL, {expiration} INTEGER)"
        ),
        Dialect::Oracle => format!(
            "CREATE TABLE {name} ({id} VARCHAR2(64) NOT NULL PRIMARY KEY, {token} VARCHAR2(64) \
             NOT NULL, {expiration} INTEGER)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_are_not_plain_identifiers_are_refused_by_option() {
        let bad = Table {
            name: "lock_keys; DROP TABLE users".into(),
            ..Table::default()
        };
        let message = bad.checked().unwrap_err().to_string();
        assert!(message.contains("\"db_table\""), "{message}");
        let qualified = Table {
            name: "app.lock_keys".into(),
            ..Table::default()
        };
        assert!(qualified.checked().is_ok());
        let column = Table {
            id: "a.b".into(),
            ..Table::default()
        };
        assert!(column
            .checked()
            .unwrap_err()
            .to_string()
            .contains("db_id_col"));
        assert!(Table {
            token: "1x".into(),
            ..Table::default()
        }
        .checked()
        .is_err());
    }

    #[test]
    fn a_database_upserts_only_where_it_can() {
        let pg = Statements::new(&Table::default(), Dialect::PostgreSql);
        assert!(pg.take.contains("ON CONFLICT (key_id) DO UPDATE"));
        let mysql = Statements::new(&Table::default(), Dialect::MySql);
        assert!(!mysql.take.contains("ON CONFLICT"));
        assert!(mysql.take.contains("UNIX_TIMESTAMP() + ?"));
    }
}
