//! The lock table's statements on a PostgreSQL session of Deadbolt's own ([`PostgresTable`]), for a
//! PdoStore given a `pgsql:` DSN: no PHP in the way, so the background refresher can extend its
//! locks and a combined store can ask it from any thread. One session per process (a forked child
//! connects on its own), shared by the store and its refresher; a session that ended (a server
//! restart, a failover, a terminated backend) is replaced, and the statement run once more on the
//! new one (each of the table's statements is idempotent for its token).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Statement};

use super::dsn::PostgresServer;
use super::session::{connect, within, TlsConfig};
use super::tls;
use super::wording::{failure, timed_out};
use crate::process::PerProcess;
use crate::store::table::{Failure, SqlConnection, SqlFailure};
use crate::sync::Mutex;
use crate::{Error, Result};

/// A lock table's connection to PostgreSQL; clones share it.
#[derive(Clone)]
pub struct PostgresTable {
    inner: Arc<Inner>,
}

struct Inner {
    server: PostgresServer,
    tls: Option<TlsConfig>,
    name: Arc<str>,
    session: PerProcess<Mutex<Option<TableSession>>>,
}

struct TableSession {
    runtime: Runtime,
    client: Client,
    /// Prepared statements by their SQL (`$n` placeholders).
    prepared: HashMap<String, Statement>,
    /// An exchange timed out: its answer may still come, so the session is dropped, and the
    /// statement not run again (the server may be hung).
    in_doubt: bool,
}

impl PostgresTable {
    /// A connection to `server`, named `name` in messages. Connects lazily.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a CA file that cannot serve.
    pub fn new(server: PostgresServer, name: &str) -> Result<Self> {
        Ok(PostgresTable {
            inner: Arc::new(Inner {
                tls: tls::client_config(&server)?,
                server,
                name: name.into(),
                session: PerProcess::new(),
            }),
        })
    }
}

impl Inner {
    /// Runs `exchange` on this process's session, connecting first when there is none; once more
    /// on a new session when the connection turned out closed.
    fn with<T>(
        &self,
        exchange: impl Fn(&mut TableSession, Duration) -> std::result::Result<T, Failure>,
    ) -> std::result::Result<T, Failure> {
        let mut session = self.session.get_or_init(Mutex::default).lock();
        for attempt in 0..2 {
            if session.is_none() {
                *session = Some(self.open().map_err(Failure::Client)?);
            }
            let Some(current) = session.as_mut() else {
                continue;
            };
            match exchange(current, self.server.timeout) {
                Err(failure) if current.in_doubt || current.client.is_closed() => {
                    let in_doubt = current.in_doubt;
                    *session = None;
                    if attempt == 1 || in_doubt {
                        return Err(failure);
                    }
                }
                outcome => return outcome,
            }
        }
        Err(Failure::Client(Error::Storage {
            message: format!("{} lost its connection twice in a row.", self.name),
            source: None,
        }))
    }

    fn open(&self) -> Result<TableSession> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| failure(&self.name, "cannot start its I/O runtime", e))?;
        let limit = self
            .server
            .config
            .get_connect_timeout()
            .copied()
            .unwrap_or(self.server.timeout);
        let client = match within(&runtime, limit, connect(&self.server, self.tls.as_ref())) {
            Some(Ok(client)) => client,
            Some(Err(e)) => return Err(failure(&self.name, "cannot connect", e)),
            None => return Err(timed_out(&self.name, "connecting", limit)),
        };
        Ok(TableSession {
            runtime,
            client,
            prepared: HashMap::new(),
            in_doubt: false,
        })
    }

    fn failed(&self, error: tokio_postgres::Error) -> Failure {
        match error.as_db_error() {
            Some(db) => Failure::Sql(SqlFailure {
                sqlstate: db.code().code().to_owned(),
                code: 0,
                message: format!("{}: {}", db.severity(), db.message()),
            }),
            None => Failure::Client(failure(&self.name, "failed", error)),
        }
    }

    /// An exchange past `limit`: the session is in doubt from then on.
    fn late(&self, session: &mut TableSession, limit: Duration) -> Failure {
        session.in_doubt = true;
        Failure::Client(timed_out(&self.name, "running a statement", limit))
    }
}

impl TableSession {
    /// The statement for `sql` (`?` placeholders), prepared once.
    fn statement(
        &mut self,
        sql: &str,
        limit: Duration,
    ) -> Option<std::result::Result<Statement, tokio_postgres::Error>> {
        let numbered = numbered(sql);
        if let Some(statement) = self.prepared.get(&numbered) {
            return Some(Ok(statement.clone()));
        }
        let prepared = within(&self.runtime, limit, self.client.prepare(&numbered))?;
        if let Ok(statement) = &prepared {
            self.prepared.insert(numbered, statement.clone());
        }
        Some(prepared)
    }
}

/// `sql` with its `?` placeholders numbered (`$1`, `$2`...), as PostgreSQL's protocol takes them.
/// The table's SQL has no `?` inside a quoted string.
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(c);
        }
    }
    out
}

/// `params` as the statement's parameter types want them: the seconds are integers.
fn typed(statement: &Statement, params: &[&str]) -> Vec<Box<dyn ToSql + Sync + Send>> {
    statement
        .params()
        .iter()
        .zip(params)
        .map(|(kind, value)| -> Box<dyn ToSql + Sync + Send> {
            match *kind {
                Type::INT4 => Box::new(value.parse::<i32>().unwrap_or(i32::MAX)),
                Type::INT8 => Box::new(value.parse::<i64>().unwrap_or(i64::MAX)),
                _ => Box::new((*value).to_owned()),
            }
        })
        .collect()
}

/// The values of a statement's parameters, as `tokio_postgres` takes them.
type Params<'a> = [&'a (dyn ToSql + Sync)];
/// What one call of the client gives.
type PgResult<T> = std::result::Result<T, tokio_postgres::Error>;

impl Inner {
    /// Runs `exchange` (one call of the client) with the statement of `sql`, prepared once, and
    /// `params` typed for it, on the session and within its timeout.
    fn run<T>(
        &self,
        sql: &str,
        params: &[&str],
        exchange: impl Fn(&TableSession, &Statement, &Params<'_>, Duration) -> Option<PgResult<T>>,
    ) -> std::result::Result<T, Failure> {
        self.with(|session, limit| {
            let statement = match session.statement(sql, limit) {
                Some(prepared) => prepared.map_err(|e| self.failed(e))?,
                None => return Err(self.late(session, limit)),
            };
            let values = typed(&statement, params);
            let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| &**v as _).collect();
            match exchange(session, &statement, &refs, limit) {
                Some(result) => result.map_err(|e| self.failed(e)),
                None => Err(self.late(session, limit)),
            }
        })
    }
}

impl SqlConnection for Inner {
    fn execute(&self, sql: &str, params: &[&str]) -> std::result::Result<u64, Failure> {
        self.run(sql, params, |session, statement, params, limit| {
            within(
                &session.runtime,
                limit,
                session.client.execute(statement, params),
            )
        })
    }

    fn first_row(
        &self,
        sql: &str,
        params: &[&str],
    ) -> std::result::Result<Option<Vec<String>>, Failure> {
        self.run(sql, params, |session, statement, params, limit| {
            within(
                &session.runtime,
                limit,
                session.client.query_opt(statement, params),
            )
        })
        .map(|row| row.map(|row| texts(&row)))
    }

    /// A session of Deadbolt's own never runs the application's transactions.
    fn in_transaction(&self) -> bool {
        false
    }
}

/// A row's values as text: the lock table's are text and integers.
fn texts(row: &tokio_postgres::Row) -> Vec<String> {
    (0..row.len())
        .map(|i| {
            match *row.columns()[i].type_() {
                Type::INT4 => row.get::<_, Option<i32>>(i).map(|n| n.to_string()),
                Type::INT8 => row.get::<_, Option<i64>>(i).map(|n| n.to_string()),
                _ => row.get::<_, Option<String>>(i),
            }
            .unwrap_or_default()
        })
        .collect()
}

impl SqlConnection for PostgresTable {
    fn execute(&self, sql: &str, params: &[&str]) -> std::result::Result<u64, Failure> {
        self.inner.execute(sql, params)
    }

    fn first_row(
        &self,
        sql: &str,
        params: &[&str],
    ) -> std::result::Result<Option<Vec<String>>, Failure> {
        self.inner.first_row(sql, params)
    }

    fn in_transaction(&self) -> bool {
        false
    }

    fn background(&self) -> Option<Arc<dyn SqlConnection + Send + Sync>> {
        Some(self.inner.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::numbered;

    #[test]
    fn placeholders_are_numbered_in_order() {
        assert_eq!(
            numbered("UPDATE t SET e = n + ? WHERE id = ? AND token = ?"),
            "UPDATE t SET e = n + $1 WHERE id = $2 AND token = $3"
        );
    }
}
