//! Advisory locks on the application's own PostgreSQL session (its `\PDO`, through
//! [`SqlConnection`]), as symfony/lock's `PostgreSqlStore` takes them when given a `\PDO`.
//!
//! The session is the application's: Deadbolt never makes it again, so after a session ended (a
//! dropped connection, a restart, a terminated backend) its keys hold nothing (`exists()` is
//! false: the server freed their locks) and taking a lock fails until the application connects
//! again. A wait queues in the server with `lock_timeout` set for that statement only
//! (`set_config(..., true)` lasts to the end of the statement's own transaction), so the
//! application's settings are untouched; inside the application's transaction it polls instead: a
//! lock wait that timed out there would abort the application's transaction. A forked child must
//! not talk on its parent's connection (the parent's locks would answer as its own: PostgreSQL
//! grants a session a lock it holds again), so the store refuses to run in one.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::advisory::{Advisory, AdvisoryLocks, Hold, Sessions};
use super::session::{Op, Waited};
use crate::process::PerProcess;
use crate::store::table::{statement_failed, Failure, SqlConnection};
use crate::sync::Mutex;
use crate::{Error, Result};

/// The statements of each [`Op`] (`?` is the lock's key, bound as text), answering 1 or 0.
fn sql_of(op: Op) -> &'static str {
    match op {
        Op::TryLock => "SELECT pg_try_advisory_lock(?::bigint)::int",
        Op::TryLockShared => "SELECT pg_try_advisory_lock_shared(?::bigint)::int",
        Op::Unlock => "SELECT pg_advisory_unlock(?::bigint)::int",
        Op::UnlockShared => "SELECT pg_advisory_unlock_shared(?::bigint)::int",
        // The session lives (it answers): the locks it took are still its own.
        Op::Alive => "SELECT (?::bigint IS NOT NULL)::int",
    }
}

/// Waits for the lock at most the milliseconds given (0: without end), for this statement only.
const WAIT: &str = "SELECT set_config('lock_timeout', ?, true), pg_advisory_lock(?::bigint)";
const WAIT_SHARED: &str =
    "SELECT set_config('lock_timeout', ?, true), pg_advisory_lock_shared(?::bigint)";
/// SQLSTATE lock_not_available: `lock_timeout` ended the wait.
const LOCK_NOT_AVAILABLE: &str = "55P03";

/// Locks in one PostgreSQL database, on the application's session.
pub struct PdoPostgreSqlStore<C = Box<dyn SqlConnection>> {
    pub(super) locks: AdvisoryLocks<AppSession<C>>,
}

/// The application's session, and what this store's keys hold in it.
pub(super) struct AppSession<C> {
    connection: C,
    name: Arc<str>,
    /// The process the store was made in: the only one that may talk on the connection.
    pid: u32,
    /// A statement found the connection gone: what the keys held went with it.
    ended: Cell<bool>,
    holds: PerProcess<Mutex<HashMap<i64, Hold>>>,
}

impl<C: SqlConnection> PdoPostgreSqlStore<C> {
    /// A store on `connection`; `name` names it in messages (no secret).
    pub fn new(connection: C, name: String) -> Self {
        let name: Arc<str> = name.into();
        PdoPostgreSqlStore {
            locks: AdvisoryLocks {
                sessions: AppSession {
                    connection,
                    name: Arc::clone(&name),
                    pid: std::process::id(),
                    ended: Cell::new(false),
                    holds: PerProcess::new(),
                },
                name,
            },
        }
    }
}

impl<C: SqlConnection> Sessions for AppSession<C> {
    fn with<T>(
        &self,
        f: impl Fn(&dyn Advisory, &mut HashMap<i64, Hold>) -> Result<T>,
    ) -> Result<T> {
        if std::process::id() != self.pid {
            return Err(Error::Storage {
                message: format!(
                    "{} runs on the application's \\PDO, which process {} made: this forked \
                     child would talk on its parent's connection, where the parent's locks \
                     answer as its own. Make a \\PDO (and a store) in the child, or give \
                     PostgreSqlStore a DSN.",
                    self.name, self.pid
                ),
                source: None,
            });
        }
        let mut holds = self.holds.get_or_init(Mutex::default).lock();
        let outcome = f(self, &mut holds);
        if self.ended.replace(false) {
            holds.clear();
        }
        outcome
    }
}

impl<C: SqlConnection> AppSession<C> {
    /// Notes a failure that says the connection is gone; whether it did.
    fn note_end(&self, failure: &Failure) -> bool {
        let lost = matches!(failure, Failure::Sql(sql) if sql.connection_lost());
        if lost {
            self.ended.set(true);
        }
        lost
    }

    fn failed(&self, doing: &str, failure: Failure) -> Error {
        statement_failed(&self.name, doing, failure)
    }
}

impl<C: SqlConnection> Advisory for AppSession<C> {
    /// A session that is gone answers that it holds nothing: the server freed its locks when it
    /// ended. Taking or releasing on it fails.
    fn ask(&self, op: Op, key: i64) -> Result<bool> {
        let row = match self.connection.first_row(sql_of(op), &[&key.to_string()]) {
            Ok(row) => row,
            Err(failure) => {
                let lost = self.note_end(&failure);
                if lost && matches!(op, Op::Alive) {
                    return Ok(false);
                }
                return Err(self.failed("take, check or release a lock", failure));
            }
        };
        Ok(row
            .as_deref()
            .and_then(<[String]>::first)
            .map(String::as_str)
            == Some("1"))
    }

    fn wait(&self, key: i64, shared: bool, limit: Option<Duration>) -> Result<Waited> {
        // Whole milliseconds, at least 1 (0 means without end).
        let millis = limit.map_or(0, |limit| limit.as_millis().clamp(1, i32::MAX as u128));
        let sql = if shared { WAIT_SHARED } else { WAIT };
        match self
            .connection
            .first_row(sql, &[&millis.to_string(), &key.to_string()])
        {
            Ok(_) => Ok(Waited::Acquired),
            Err(Failure::Sql(sql)) if sql.sqlstate == LOCK_NOT_AVAILABLE => Ok(Waited::TimedOut),
            Err(failure) => {
                self.note_end(&failure);
                Err(self.failed("wait for a lock", failure))
            }
        }
    }

    fn waits_in_server(&self) -> bool {
        !self.connection.in_transaction()
    }
}

super::advisory_store!(PdoPostgreSqlStore<C>, C: SqlConnection);
