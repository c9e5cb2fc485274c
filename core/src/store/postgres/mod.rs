//! Locks as PostgreSQL session-level advisory locks, on the keys symfony/lock's `PostgreSqlStore`
//! takes, so a Deadbolt process and a symfony/lock process exclude each other on one database.
//!
//! A lock's key is `crc32(resource)` as a `bigint` (symfony/lock's), taken with
//! `pg_try_advisory_lock` (`_shared` for a read lock) on this process's session, and waited for in
//! the server's own queue (`pg_advisory_lock`, limited by `lock_timeout`). The session is
//! Deadbolt's own connection ([`PostgreSqlStore`]) or the application's `\PDO`
//! ([`PdoPostgreSqlStore`]); [`advisory`] keeps which key holds what in it.
//!
//! What the backend gives: no expiry (a lock lives until it is released or its session ends, so
//! a killed holder's locks are freed at once, and nothing needs refreshing), shared locks, waits
//! in the server. What it rules out: fencing tokens (nothing counts holds), a lock that outlives
//! its connection (a dropped connection, a server restart or a failover frees every lock of the
//! session: its keys then find them lost), sharing a lock between processes (a forked child has
//! its own session). Two resources whose crc32 is the same are one lock, for symfony/lock too.

mod advisory;
mod dsn;
mod over_pdo;
mod session;
mod table;
mod tls;
mod wording;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use advisory::{Advisory, AdvisoryLocks, Hold, Sessions};
pub use dsn::PostgresServer;
pub use over_pdo::PdoPostgreSqlStore;
use session::{Op, Session, TlsConfig, Waited};
pub use table::PostgresTable;

use crate::process::PerProcess;
use crate::sync::Mutex;
use crate::Result;

/// The lock key symfony/lock's `PostgreSqlStore` derives from a resource: PHP's `crc32()`.
pub fn advisory_key(resource: &[u8]) -> i64 {
    i64::from(crc32fast::hash(resource))
}

/// This process's session and what its keys hold in it.
#[derive(Default)]
struct Connection {
    session: Option<Session>,
    holds: HashMap<i64, Hold>,
    /// The last run ended its session by a timeout.
    timed_out: bool,
}

/// Deadbolt's own connections to one server: one per process, made again when it ended.
struct Native {
    server: PostgresServer,
    tls: Option<TlsConfig>,
    name: Arc<str>,
    connection: PerProcess<Mutex<Connection>>,
}

/// Locks in one PostgreSQL database, on a session of Deadbolt's own per process.
pub struct PostgreSqlStore {
    locks: AdvisoryLocks<Native>,
}

impl PostgreSqlStore {
    /// A store on `server`. Connects lazily: a server that is down fails the first call.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a CA file that cannot serve.
    pub fn new(server: PostgresServer) -> Result<Self> {
        let tls = tls::client_config(&server)?;
        let name: Arc<str> = format!("PostgreSqlStore({})", server.shown()).into();
        Ok(PostgreSqlStore {
            locks: AdvisoryLocks {
                sessions: Native {
                    server,
                    tls,
                    name: Arc::clone(&name),
                    connection: PerProcess::new(),
                },
                name,
            },
        })
    }

    /// A store on the server `dsn` names (`pgsql:...` or `postgresql://...`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a DSN that is not a
    /// PostgreSQL one, or as [`Self::new`].
    pub fn connect(dsn: &str) -> Result<Self> {
        Self::new(PostgresServer::of_dsn_with(dsn, None, None)?)
    }
}

impl Sessions for Native {
    /// Runs `f` on this process's session, connecting first when there is none (or the last one
    /// ended: its locks were freed with it, so what its keys held is forgotten). When `f` finds the
    /// connection closed (the server ended the session, restarted, failed over), it runs once more
    /// on a new session: nothing the old one did outlives it, so the second run answers for the
    /// server as it is now (a key of the old session holds nothing). A timeout ends the session
    /// too, but is not run again: the server may be hung.
    fn with<T>(
        &self,
        f: impl Fn(&dyn Advisory, &mut HashMap<i64, Hold>) -> Result<T>,
    ) -> Result<T> {
        let mut connection = self.connection.get_or_init(Mutex::default).lock();
        let connection = &mut *connection;
        let had_session = connection.session.is_some();
        let mut outcome = self.run(connection, &f);
        if outcome.is_err() && had_session && connection.session.is_none() && !connection.timed_out
        {
            outcome = self.run(connection, &f);
        }
        outcome
    }
}

impl Native {
    /// One run of `f` (see [`Sessions::with`]); a session that failed it is dropped.
    fn run<T>(
        &self,
        connection: &mut Connection,
        f: &impl Fn(&dyn Advisory, &mut HashMap<i64, Hold>) -> Result<T>,
    ) -> Result<T> {
        connection.timed_out = false;
        if connection.session.as_ref().is_some_and(Session::is_closed) {
            connection.session = None;
        }
        let session = match &connection.session {
            Some(session) => session,
            None => {
                connection.holds.clear();
                connection.session.insert(Session::open(
                    &self.server,
                    self.tls.as_ref(),
                    &self.name,
                )?)
            }
        };
        let outcome = f(session, &mut connection.holds);
        if outcome.is_err() && (session.is_closed() || session.in_doubt()) {
            connection.timed_out = session.in_doubt();
            connection.session = None;
            connection.holds.clear();
        }
        outcome
    }
}

/// The store operations of a store on advisory locks, given its [`AdvisoryLocks`].
macro_rules! advisory_store {
    ($store:ty $(, $generic:ident: $bound:path)?) => {
        impl$(<$generic: $bound>)? $crate::store::Store for $store {
            fn name(&self) -> &str {
                &self.locks.name
            }

            fn save(&self, key: &mut $crate::Key, mode: $crate::store::Mode, _ttl: Option<$crate::Ttl>) -> $crate::Result<()> {
                self.locks.save(key, mode)
            }

            fn put_off_expiration(&self, key: &mut $crate::Key, _ttl: $crate::Ttl) -> $crate::Result<()> {
                // Advisory locks never expire.
                crate::store::check_ownership(self, key)
            }

            fn delete(&self, key: &mut $crate::Key) -> $crate::Result<()> {
                self.locks.delete(key)
            }

            fn exists(&self, key: &$crate::Key) -> $crate::Result<bool> {
                self.locks.exists(key)
            }

            fn capabilities(&self) -> $crate::store::Capabilities<'_> {
                $crate::store::Capabilities {
                    blocking: Some(self),
                    ..$crate::store::Capabilities::default()
                }
            }
        }

        impl$(<$generic: $bound>)? $crate::store::BlockingStore for $store {
            fn wait(
                &self,
                key: &mut $crate::Key,
                mode: $crate::store::Mode,
                _ttl: Option<$crate::Ttl>,
                deadline: Option<std::time::Instant>,
                report: &mut $crate::store::WaitReport,
            ) -> $crate::Result<bool> {
                self.locks.wait(key, mode, deadline, report)
            }
        }
    };
}
use advisory_store;

advisory_store!(PostgreSqlStore);

impl Advisory for Session {
    fn ask(&self, op: Op, key: i64) -> Result<bool> {
        Session::ask(self, op, key)
    }

    fn wait(&self, key: i64, shared: bool, limit: Option<Duration>) -> Result<Waited> {
        Session::wait(self, key, shared, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::advisory_key;

    /// PHP's `crc32()` (IEEE), as symfony/lock computes the key.
    #[test]
    fn the_key_is_phps_crc32() {
        // php -r 'var_dump(crc32("invoice:42"), crc32(""));'
        assert_eq!(
            advisory_key(b"The quick brown fox jumped over the lazy dog."),
            2191738434
        );
        assert_eq!(advisory_key(b""), 0);
    }
}
