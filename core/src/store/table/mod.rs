//! Locks as rows of symfony/lock's lock table (`PdoStore`, `DoctrineDbalStore`): one row per held
//! lock, `key_id` the SHA-256 (hex) of the resource, `key_token` the holder's token,
//! `key_expiration` when it ends in Unix seconds of the database's clock. A Deadbolt process and a
//! symfony/lock process on one table exclude each other.
//!
//! The statements run on a [`SqlConnection`]: the host's database client (PHP's `\PDO`, which
//! speaks MySQL/MariaDB, PostgreSQL, SQLite and more). This module decides what to run and what
//! the answers mean.
//!
//! What the backend gives: expiry (a killed holder's lock ends with its TTL), reach across hosts,
//! the database's own clock for every client. What it rules out: waits better than polling (a
//! table tells no one of a release), shared locks (one row per lock: a read lock is an exclusive
//! one, as symfony/lock's `Lock` does on a store without them), holder records beyond the token,
//! and fencing tokens (the shared table has no column for them, and another column would break
//! symfony/lock's `createTable()` schema).
//!
//! Where Deadbolt differs from symfony/lock on the same rows, for its holders' sake:
//! - a row lasts whole seconds, rounded up, plus one ([`row_seconds`]): the database's clock
//!   counts whole seconds (PostgreSQL's rounds), so without it a row could end before its
//!   holder's lifetime says;
//! - a refresh never revives an expired lock (symfony/lock's takes the row back if no one did):
//!   someone may have held it meanwhile, so it reports the lock lost;
//! - taking a lock is one statement where the database upserts (PostgreSQL, SQLite), and a failed
//!   insert never aborts the caller's transaction there;
//! - the table is created on first use only outside a transaction (a DDL statement would commit
//!   or abort the application's).

mod sql;

use std::sync::Arc;

use sha2::{Digest, Sha256};

pub use sql::{Dialect, SqlFailure, Statements, Table};

use std::time::{Duration, SystemTime};

use crate::holder::{self, Holder, LockState, Origin};
use crate::store::{
    expired_on_refresh, expired_on_save, Capabilities, ExpiringStore, InspectingStore, Mode, Store,
};
use crate::{Error, Key, Result, Ttl};

/// How a statement failed.
#[derive(Debug)]
pub enum Failure {
    /// The database refused it.
    Sql(SqlFailure),
    /// The client failed otherwise (already a Deadbolt error: a closed connection, an exception
    /// of another kind).
    Client(Error),
}

/// A database session the table's statements run on. Parameters are bound as text, in order.
pub trait SqlConnection {
    /// Runs a statement that changes rows; how many it changed.
    ///
    /// # Errors
    /// [`Failure`] when the statement failed.
    fn execute(&self, sql: &str, params: &[&str]) -> std::result::Result<u64, Failure>;

    /// Runs a query; its first row's values as text (`None`: no row; a NULL is empty).
    ///
    /// # Errors
    /// [`Failure`] when the query failed.
    fn first_row(
        &self,
        sql: &str,
        params: &[&str],
    ) -> std::result::Result<Option<Vec<String>>, Failure>;

    /// Runs a query; whether it returned a row.
    ///
    /// # Errors
    /// [`Failure`] when the query failed.
    fn returns_row(&self, sql: &str, params: &[&str]) -> std::result::Result<bool, Failure> {
        self.first_row(sql, params).map(|row| row.is_some())
    }

    /// Whether the session is inside a transaction (the table is then never created).
    fn in_transaction(&self) -> bool;

    /// A connection the background refresher can use from its thread (one that needs no PHP);
    /// `None` when there is none.
    fn background(&self) -> Option<Arc<dyn SqlConnection + Send + Sync>> {
        None
    }
}

impl<C: SqlConnection + ?Sized> SqlConnection for Box<C> {
    fn execute(&self, sql: &str, params: &[&str]) -> std::result::Result<u64, Failure> {
        (**self).execute(sql, params)
    }

    fn first_row(
        &self,
        sql: &str,
        params: &[&str],
    ) -> std::result::Result<Option<Vec<String>>, Failure> {
        (**self).first_row(sql, params)
    }

    fn in_transaction(&self) -> bool {
        (**self).in_transaction()
    }

    fn background(&self) -> Option<Arc<dyn SqlConnection + Send + Sync>> {
        (**self).background()
    }
}

/// The error for a statement `store` ran to `what` ("take the \"r\" lock"): the database's
/// refusal worded with its text quoted and bounded; a client's failure as it is.
pub(crate) fn statement_failed(store: &str, what: &str, failure: Failure) -> Error {
    match failure {
        Failure::Client(error) => error,
        Failure::Sql(sql) => Error::storage(
            format!(
                "{store} failed to {what}: {}",
                crate::error::quoted(&sql.message)
            ),
            sql,
        ),
    }
}

/// What a store is made of beside its connection.
#[derive(Debug, Clone)]
pub struct TableSettings {
    pub table: Table,
    /// The lifetime a bare `save()` gives (symfony/lock's `$initialTtl`, 300 s).
    pub initial_ttl: Ttl,
    /// The chance that a save also removes every expired row (symfony/lock's `$gcProbability`).
    pub gc_probability: f64,
}

/// Locks in a lock table, on symfony/lock's rows, over a connection of kind `C`.
pub struct TableStore<C = Box<dyn SqlConnection>> {
    connection: C,
    dialect: Dialect,
    sql: Statements,
    settings: TableSettings,
    name: String,
}

impl<C: SqlConnection> TableStore<C> {
    /// A store on `connection`, a `dialect` database; `name` names it in messages (no secret).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a table name that is not a plain identifier, or a
    /// probability outside 0..=1.
    pub fn new(
        connection: C,
        dialect: Dialect,
        settings: TableSettings,
        name: String,
    ) -> Result<Self> {
        let table = settings.table.clone().checked()?;
        if !(0.0..=1.0).contains(&settings.gc_probability) {
            return Err(Error::invalid_argument(format!(
                "\"{}\" requires gcProbability between 0 and 1, {} given.",
                name, settings.gc_probability
            )));
        }
        Ok(TableStore {
            connection,
            dialect,
            sql: Statements::new(&table, dialect),
            settings,
            name,
        })
    }

    /// Creates the table, as symfony/lock's `createTable()`.
    ///
    /// # Errors
    /// [`Error::Storage`] when the database refuses (it exists already, no right to).
    pub fn create_table(&self) -> Result<()> {
        self.connection
            .execute(&self.sql.create, &[])
            .map(|_| ())
            .map_err(|failure| self.failed("create the table for", None, failure))
    }

    /// The statements this store runs (for a look from outside: tests, docs).
    pub fn statements(&self) -> &Statements {
        &self.sql
    }

    /// A failure, naming what was being done; the server's text quoted and bounded.
    fn failed(&self, action: &str, resource: Option<&Key>, failure: Failure) -> Error {
        let lock = resource.map_or_else(
            || "its locks".to_owned(),
            |key| format!("the \"{}\" lock", key.display_resource()),
        );
        statement_failed(&self.name, &format!("{action} {lock}"), failure)
    }

    fn table_missing(&self, failure: &Failure) -> bool {
        matches!(failure, Failure::Sql(sql) if self.dialect.is_table_missing(sql))
    }

    /// Runs a statement that changes rows; a missing table changes none.
    fn change(&self, sql: &str, params: &[&str], action: &str, key: &Key) -> Result<u64> {
        match self.connection.execute(sql, params) {
            Ok(changed) => Ok(changed),
            Err(failure) if self.table_missing(&failure) => Ok(0),
            Err(failure) => Err(self.failed(action, Some(key), failure)),
        }
    }

    /// Whether `token` holds an unexpired row for `id`; a missing table holds none.
    fn holds(&self, id: &str, token: &str, key: &Key) -> Result<bool> {
        match self.connection.returns_row(&self.sql.exists, &[id, token]) {
            Ok(found) => Ok(found),
            Err(failure) if self.table_missing(&failure) => Ok(false),
            Err(failure) => Err(self.failed("read", Some(key), failure)),
        }
    }

    /// Takes the row of `id` for `token` for `seconds`: true when taken (or renewed).
    fn take(&self, id: &str, token: &str, seconds: &str, key: &Key) -> Result<bool> {
        let inserted = match self
            .connection
            .execute(&self.sql.take, &[id, token, seconds])
        {
            Err(failure) if self.table_missing(&failure) => {
                if self.connection.in_transaction() {
                    return Err(self.no_table_in_transaction(key));
                }
                self.create_table_if_missing(key)?;
                self.connection
                    .execute(&self.sql.take, &[id, token, seconds])
            }
            other => other,
        };
        if self.sql.take_upserts {
            return inserted
                .map(|changed| changed > 0)
                .map_err(|failure| self.failed("take", Some(key), failure));
        }
        match inserted {
            Ok(changed) if changed > 0 => Ok(true),
            // A failed insert is most often the row existing (any other failure of the database
            // fails the update too, and that one is reported).
            Ok(_) | Err(Failure::Sql(_)) => self.take_over(id, token, seconds, key),
            Err(failure) => Err(self.failed("take", Some(key), failure)),
        }
    }

    /// Takes an expired row, or renews `token`'s own (a second save of one key).
    fn take_over(&self, id: &str, token: &str, seconds: &str, key: &Key) -> Result<bool> {
        let changed = self.change(
            &self.sql.take_over,
            &[seconds, token, id, token],
            "take",
            key,
        )?;
        // MySQL counts a row written with the values it had as unchanged (a renewal within the
        // same second): ask.
        Ok(changed > 0 || self.holds(id, token, key)?)
    }

    /// The table is missing, and creating it would end the application's transaction (MySQL
    /// commits it; PostgreSQL has aborted it already).
    fn no_table_in_transaction(&self, key: &Key) -> Error {
        Error::Storage {
            message: format!(
                "{} cannot take the \"{}\" lock: its table \"{}\" does not exist, and is not \
                 created inside the application's transaction. Call createTable() once (or take \
                 a first lock outside a transaction).",
                self.name,
                key.display_resource(),
                self.settings.table.name
            ),
            source: None,
        }
    }

    /// Creates the table after an insert found none; another process creating it meanwhile is
    /// fine.
    fn create_table_if_missing(&self, key: &Key) -> Result<()> {
        match self.connection.execute(&self.sql.create, &[]) {
            Ok(_) => Ok(()),
            Err(failure) => match self.connection.returns_row(&self.sql.exists, &["", ""]) {
                Ok(_) => Ok(()),
                Err(_) => Err(self.failed("create the table for", Some(key), failure)),
            },
        }
    }

    /// Refuses a TTL under a second, as symfony/lock's PdoStore does: the table counts whole
    /// seconds.
    fn check_ttl(&self, ttl: Ttl) -> Result<()> {
        if ttl.as_secs() < 1.0 {
            return Err(Error::InvalidTtl {
                message: format!(
                    "{} expects a TTL of at least 1 second (the table counts whole seconds); {} \
                     given.",
                    self.name,
                    crate::ttl::shown(ttl.as_secs())
                ),
            });
        }
        Ok(())
    }

    /// symfony/lock's random prune of expired rows, after a save. Housekeeping: a failure is
    /// left for the next one (the lock is taken by then, and must not be reported as not).
    fn maybe_prune(&self) {
        let draw = getrandom::u32().map_or(1.0, |r| f64::from(r) / f64::from(u32::MAX));
        if draw < self.settings.gc_probability && !self.connection.in_transaction() {
            let _ = self.connection.execute(&self.sql.prune, &[]);
        }
    }
}

/// The seconds a row is given for a lifetime of `ttl`: whole seconds rounded up, and one more.
/// The row ends when the database's clock, in whole seconds, reaches its expiry; that clock can
/// be up to a second ahead of the moment the row was written (MySQL and SQLite cut the fraction,
/// PostgreSQL's rounds it), so a row of exactly `ceil(ttl)` seconds could end before its
/// holder's lifetime. With the extra second it outlives the lifetime by up to two, in which no
/// one can take it and its holder no longer counts as holding it ([`Store::exists`]).
pub fn row_seconds(ttl: Ttl) -> u64 {
    // ceil of a positive finite number of seconds, bounded well inside u64.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let whole = ttl.as_secs().ceil().clamp(1.0, 1e12) as u64;
    whole + 1
}

/// symfony/lock's `key_id`: the SHA-256 of the resource, in lower-case hex.
pub fn key_id(resource: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(resource) {
        // Writing into a String cannot fail.
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

impl<C: SqlConnection> Store for TableStore<C> {
    fn name(&self) -> &str {
        &self.name
    }

    /// Takes the row: a free one, an expired one, or this key's own. A read lock is an exclusive
    /// one: a row has one token.
    fn save(&self, key: &mut Key, _mode: Mode, ttl: Option<Ttl>) -> Result<()> {
        let ttl = ttl.unwrap_or(self.settings.initial_ttl);
        self.check_ttl(ttl)?;
        let since = std::time::Instant::now();
        let id = key_id(key.resource());
        let token = key.token()?.as_str().to_owned();
        let seconds = row_seconds(ttl).to_string();
        if !self.take(&id, &token, &seconds, key)? {
            return Err(Error::conflict(key.display_resource(), &self.name));
        }
        key.reduce_lifetime_from(since, ttl);
        self.maybe_prune();
        if key.is_expired() {
            return Err(expired_on_save(self, key));
        }
        Ok(())
    }

    fn put_off_expiration(&self, key: &mut Key, ttl: Ttl) -> Result<()> {
        self.check_ttl(ttl)?;
        let Some(token) = key.drawn_token().map(|t| t.as_str().to_owned()) else {
            return Err(Error::not_held(key.display_resource(), &self.name));
        };
        let since = std::time::Instant::now();
        let id = key_id(key.resource());
        let seconds = row_seconds(ttl).to_string();
        let changed = self.change(&self.sql.extend, &[&seconds, &id, &token], "extend", key)?;
        if changed == 0 && !self.holds(&id, &token, key)? {
            return Err(Error::not_held(key.display_resource(), &self.name));
        }
        key.reduce_lifetime_from(since, ttl);
        if key.is_expired() {
            let _ = Store::delete(self, key);
            return Err(expired_on_refresh(self, key));
        }
        Ok(())
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        let Some(token) = key.drawn_token().map(|t| t.as_str().to_owned()) else {
            return Ok(());
        };
        let id = key_id(key.resource());
        self.change(&self.sql.delete, &[&id, &token], "release", key)
            .map(|_| ())
    }

    /// Whether `key` holds an unexpired row, and its own lifetime has not run out (the row
    /// outlives it, [`row_seconds`]).
    fn exists(&self, key: &Key) -> Result<bool> {
        let Some(token) = key.drawn_token() else {
            return Ok(false);
        };
        if key.is_expired() {
            return Ok(false);
        }
        self.holds(&key_id(key.resource()), token.as_str(), key)
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities {
            expiring: Some(self),
            inspecting: Some(self),
            ..Capabilities::default()
        }
    }
}

/// The holder of a resource is its unexpired row: its token's digest and when it expires (the
/// table records nothing else of who); no one waits in a table.
impl<C: SqlConnection> InspectingStore for TableStore<C> {
    fn inspect(&self, resource: &[u8]) -> Result<LockState> {
        let key = Key::new(resource.to_vec());
        let row = match self
            .connection
            .first_row(&self.sql.holder, &[&key_id(resource)])
        {
            Ok(row) => row,
            Err(failure) if self.table_missing(&failure) => None,
            Err(failure) => return Err(self.failed("read", Some(&key), failure)),
        };
        let Some([token, left]) = row.as_deref() else {
            return Ok(LockState::default());
        };
        let left = left.trim().parse::<u64>().unwrap_or(0);
        Ok(LockState {
            holders: vec![Holder {
                token_digest: holder::digest(token),
                mode: Mode::Exclusive,
                origin: Origin::default(),
                acquired_at: None,
                expires_at: Some(SystemTime::now() + Duration::from_secs(left)),
            }],
            waiters: Vec::new(),
        })
    }

    fn force_release(&self, resource: &[u8]) -> Result<usize> {
        let key = Key::new(resource.to_vec());
        let removed = self.change(
            &self.sql.force_delete,
            &[&key_id(resource)],
            "release",
            &key,
        )?;
        Ok(usize::try_from(removed).unwrap_or(usize::MAX))
    }
}

/// Its locks expire; the refresher extends them where the connection has a side that needs no PHP
/// (a native PostgreSQL session).
impl<C: SqlConnection> ExpiringStore for TableStore<C> {
    fn extender(&self) -> Option<Arc<dyn crate::Extender>> {
        let connection = self.connection.background()?;
        Some(Arc::new(TableExtender {
            connection,
            extend: self.sql.extend.clone(),
            exists: self.sql.exists.clone(),
        }))
    }
}

/// Extends a table's locks from the refresher thread, as [`Store::put_off_expiration`] does.
struct TableExtender {
    connection: Arc<dyn SqlConnection + Send + Sync>,
    extend: String,
    exists: String,
}

impl crate::Extender for TableExtender {
    fn extend(&self, resource: &[u8], token: &str, ttl: Ttl) -> Result<bool> {
        let id = key_id(resource);
        let seconds = row_seconds(ttl).to_string();
        let outcome = self
            .connection
            .execute(&self.extend, &[&seconds, &id, token])
            .and_then(|changed| match changed {
                0 => self.connection.returns_row(&self.exists, &[&id, token]),
                _ => Ok(true),
            });
        outcome.map_err(|failure| match failure {
            Failure::Client(error) => error,
            Failure::Sql(sql) => Error::Storage {
                message: format!(
                    "The refresher failed to extend a lock: {}",
                    crate::error::quoted(&sql.message)
                ),
                source: None,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_id_is_symfony_locks_sha256_hex() {
        // PHP: hash('sha256', 'report')
        assert_eq!(
            key_id(b"report"),
            "845e91831319e89c4d656bdb80c278ac09a7230d61e5dfd2e1b1fbb436ac8917"
        );
    }

    #[test]
    fn a_row_outlives_its_lifetime_by_one_to_two_seconds() {
        let ttl = |secs: f64| Ttl::from_secs(secs).unwrap();
        assert_eq!(row_seconds(ttl(0.2)), 2);
        assert_eq!(row_seconds(ttl(1.0)), 2);
        assert_eq!(row_seconds(ttl(1.5)), 3);
        assert_eq!(row_seconds(ttl(300.0)), 301);
    }
}
