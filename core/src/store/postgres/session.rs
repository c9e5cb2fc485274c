//! One PostgreSQL session of this process: its connection, driven on a current-thread tokio runtime
//! of the calling thread (no thread of its own), and its statements, prepared once. Advisory locks
//! belong to the session: when the connection ends the server frees them, so a session that ended
//! (or an exchange that timed out, which ends it) is dropped with everything it held.

use std::cell::Cell;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use super::dsn::PostgresServer;
use super::wording::{failure, statement_failure, timed_out};
use crate::Result;

/// A TLS client's settings (the CA roots), made once per store.
pub(super) type TlsConfig = Arc<rustls::ClientConfig>;

/// The SQL of each statement a lock needs; `$1` is the lock's key (a `bigint`).
mod sql {
    pub const TRY_LOCK: &str = "SELECT pg_try_advisory_lock($1)";
    pub const TRY_LOCK_SHARED: &str = "SELECT pg_try_advisory_lock_shared($1)";
    pub const LOCK: &str = "SELECT pg_advisory_lock($1)";
    pub const LOCK_SHARED: &str = "SELECT pg_advisory_lock_shared($1)";
    pub const UNLOCK: &str = "SELECT pg_advisory_unlock($1)";
    pub const UNLOCK_SHARED: &str = "SELECT pg_advisory_unlock_shared($1)";
    /// Answers true while the session lives, which is the proof that the locks it took are still
    /// held: only the session itself releases its advisory locks (nobody else can), and an ended
    /// session has released them all. Unlike a look into pg_locks, it costs the server nothing
    /// however many locks it holds. (`$1` only so that every statement takes the same argument.)
    pub const ALIVE: &str = "SELECT $1::bigint IS NOT NULL";
    /// How long the next blocking lock may wait, in milliseconds (0: without end).
    pub const LOCK_TIMEOUT: &str = "SELECT set_config('lock_timeout', $1, false)";
}

/// What a statement that answers at once does.
#[derive(Debug, Clone, Copy)]
pub(super) enum Op {
    TryLock,
    TryLockShared,
    Unlock,
    UnlockShared,
    Alive,
}

/// The session's statements, prepared once when it connects.
struct Statements {
    try_lock: Statement,
    try_lock_shared: Statement,
    unlock: Statement,
    unlock_shared: Statement,
    alive: Statement,
    lock: Statement,
    lock_shared: Statement,
    set_lock_timeout: Statement,
}

impl Statements {
    fn of(&self, op: Op) -> &Statement {
        match op {
            Op::TryLock => &self.try_lock,
            Op::TryLockShared => &self.try_lock_shared,
            Op::Unlock => &self.unlock,
            Op::UnlockShared => &self.unlock_shared,
            Op::Alive => &self.alive,
        }
    }
}

/// A connected session.
pub(super) struct Session {
    runtime: Runtime,
    client: Client,
    statements: Statements,
    timeout: Duration,
    name: Arc<str>,
    /// An exchange timed out: its answer may still come, so nothing more can be read reliably.
    in_doubt: Cell<bool>,
    /// An exchange learnt that the session ended.
    ended: Cell<bool>,
}

/// How a wait in the server ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Waited {
    Acquired,
    /// Its time ran out in the server's queue (`lock_timeout`); it holds nothing.
    TimedOut,
}

impl Session {
    /// Connects to `server` and prepares the statements, within its connect timeout.
    pub fn open(server: &PostgresServer, tls: Option<&TlsConfig>, name: &Arc<str>) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| failure(name, "cannot start its I/O runtime", e))?;
        let limit = server
            .config
            .get_connect_timeout()
            .copied()
            .unwrap_or(server.timeout);
        // Connecting and preparing the statements are one step, within the connect timeout.
        let opened = within(&runtime, limit, async {
            let client = connect(server, tls).await?;
            let statements = prepare(&client).await?;
            Ok::<_, tokio_postgres::Error>((client, statements))
        });
        let (client, statements) = match opened {
            Some(Ok(opened)) => opened,
            Some(Err(e)) => return Err(failure(name, "cannot connect", e)),
            None => return Err(timed_out(name, "connecting", limit)),
        };
        let session = Session {
            runtime,
            client,
            statements,
            timeout: server.timeout,
            name: Arc::clone(name),
            in_doubt: Cell::new(false),
            ended: Cell::new(false),
        };
        Ok(session)
    }

    /// Whether an exchange timed out (the session must be dropped: [`super::PostgreSqlStore`]).
    pub fn in_doubt(&self) -> bool {
        self.in_doubt.get()
    }

    /// Whether the connection has ended (the server went away, or ended the session).
    pub fn is_closed(&self) -> bool {
        self.ended.get() || self.client.is_closed()
    }

    /// Notes an error that ends the session: the connection closed, or the server said it ends
    /// it (class 57P: an administrator's pg_terminate_backend, a shutdown, a crash), which it says
    /// before it closes the connection.
    fn note_end(&self, error: &tokio_postgres::Error) {
        let ending = error
            .code()
            .is_some_and(|code| code.code().starts_with("57P"));
        if ending || error.is_closed() {
            self.ended.set(true);
        }
    }

    /// Runs `op` on `key`; its boolean answer.
    pub fn ask(&self, op: Op, key: i64) -> Result<bool> {
        let statement = self.statements.of(op);
        let row = self.run("answering", self.client.query_one(statement, &[&key]))?;
        Ok(row.get::<_, bool>(0))
    }

    /// Waits in the server's queue for `key` (shared or not) at most `limit` (`None`: without
    /// end). The limit is the server's `lock_timeout`, set in the same round trip: the server
    /// ends the wait, so no cancel request can ever reach a later command.
    pub fn wait(&self, key: i64, shared: bool, limit: Option<Duration>) -> Result<Waited> {
        let statement = if shared {
            &self.statements.lock_shared
        } else {
            &self.statements.lock
        };
        // Whole milliseconds, at least 1 (0 would mean without end).
        let millis = limit.map_or(0, |limit| limit.as_millis().clamp(1, i32::MAX as u128));
        let setting = millis.to_string();
        let (set_params, lock_params): ([&(dyn ToSql + Sync); 1], [&(dyn ToSql + Sync); 1]) =
            ([&setting], [&key]);
        let set = self
            .client
            .query_one(&self.statements.set_lock_timeout, &set_params);
        let lock = self.client.query_one(statement, &lock_params);
        // Both sent at once (the client pipelines them), read in order.
        let exchange = futures_util::future::join(set, lock);
        let allowed = limit.map_or(Duration::MAX, |limit| limit.saturating_add(self.timeout));
        let (set, lock) = match within(&self.runtime, allowed, exchange) {
            Some(answers) => answers,
            None => {
                self.in_doubt.set(true);
                return Err(timed_out(&self.name, "waiting for a lock", allowed));
            }
        };
        set.map_err(|e| {
            self.note_end(&e);
            statement_failure(&self.name, "cannot set lock_timeout", e)
        })?;
        match lock {
            Ok(_) => Ok(Waited::Acquired),
            Err(e) if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => Ok(Waited::TimedOut),
            Err(e) => {
                self.note_end(&e);
                Err(statement_failure(
                    &self.name,
                    "failed while waiting for a lock",
                    e,
                ))
            }
        }
    }

    /// Runs one exchange within the session's timeout. A timeout leaves the connection in an
    /// unknown state: the caller drops the session ([`Self::in_doubt`]).
    fn run<T>(
        &self,
        doing: &str,
        exchange: impl Future<Output = std::result::Result<T, tokio_postgres::Error>>,
    ) -> Result<T> {
        match within(&self.runtime, self.timeout, exchange) {
            Some(Ok(value)) => Ok(value),
            Some(Err(e)) => {
                self.note_end(&e);
                Err(statement_failure(&self.name, &format!("failed {doing}"), e))
            }
            None => {
                self.in_doubt.set(true);
                Err(timed_out(&self.name, doing, self.timeout))
            }
        }
    }
}

/// Prepares every statement a session runs.
async fn prepare(client: &Client) -> std::result::Result<Statements, tokio_postgres::Error> {
    Ok(Statements {
        try_lock: client.prepare(sql::TRY_LOCK).await?,
        try_lock_shared: client.prepare(sql::TRY_LOCK_SHARED).await?,
        unlock: client.prepare(sql::UNLOCK).await?,
        unlock_shared: client.prepare(sql::UNLOCK_SHARED).await?,
        alive: client.prepare(sql::ALIVE).await?,
        lock: client.prepare(sql::LOCK).await?,
        lock_shared: client.prepare(sql::LOCK_SHARED).await?,
        set_lock_timeout: client.prepare(sql::LOCK_TIMEOUT).await?,
    })
}

/// Runs `future` on `runtime` for at most `limit`; `None` when the time ran out first.
pub(super) fn within<F: Future>(
    runtime: &Runtime,
    limit: Duration,
    future: F,
) -> Option<F::Output> {
    runtime.block_on(async { tokio::time::timeout(limit, future).await.ok() })
}

/// Connects (TLS as the DSN says) and starts the connection's task on the current runtime.
pub(super) async fn connect(
    server: &PostgresServer,
    tls: Option<&TlsConfig>,
) -> std::result::Result<Client, tokio_postgres::Error> {
    let mut config = server.config.clone();
    // A server that vanishes without closing the connection is noticed within ~25 s, even by a
    // wait without end.
    config
        .keepalives_idle(Duration::from_secs(10))
        .keepalives_interval(Duration::from_secs(5))
        .keepalives_retries(3);
    let Some(tls) = tls else {
        let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
        tokio::spawn(connection);
        return Ok(client);
    };
    let tls = tokio_postgres_rustls::MakeRustlsConnect::new((**tls).clone());
    let (client, connection) = config.connect(tls).await?;
    tokio::spawn(connection);
    Ok(client)
}
