//! Locks as PostgreSQL session-level advisory locks, on the keys symfony/lock's `PostgreSqlStore`
//! takes, so a Deadbolt process and a symfony/lock process exclude each other on one database.
//!
//! A lock's key is `crc32(resource)` as a `bigint` (symfony/lock's), taken with
//! `pg_try_advisory_lock` (`_shared` for a read lock) on this process's session, and waited for in
//! the server's own queue (`pg_advisory_lock`, limited by `lock_timeout`). Every key of one store
//! in one process shares that session, and PostgreSQL counts a session's locks, not its keys: so
//! this module keeps which key holds what ([`Hold`]), and keeps the server's count at one per mode
//! (a second reader of the session joins without asking the server).
//!
//! What the backend gives: no expiry (a lock lives until it is released or its session ends, so
//! a killed holder's locks are freed at once, and nothing needs refreshing), shared locks, waits
//! in the server. What it rules out: fencing tokens (nothing counts holds), a lock that outlives
//! its connection (a dropped connection, a server restart or a failover frees every lock of the
//! session: its keys then find them lost), sharing a lock between processes (a forked child has
//! its own session). Two resources whose crc32 is the same are one lock, for symfony/lock too.

mod dsn;
mod session;
mod table;
mod tls;
mod wording;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use dsn::PostgresServer;
use session::{Op, Session, TlsConfig, Waited};
pub use table::PostgresTable;

use crate::process::PerProcess;
use crate::store::{poll, poll_interval, BlockingStore, Capabilities, Mode, Store, WaitReport};
use crate::sync::Mutex;
use crate::token::Token;
use crate::{Error, Key, Result, Ttl};

/// How long one wait in the server's queue lasts while the application may need its turn (a
/// signal handler): then the wait asks, and queues again.
const INTERRUPT_SLICE: Duration = Duration::from_millis(100);

/// The lock key symfony/lock's `PostgreSqlStore` derives from a resource: PHP's `crc32()`.
pub fn advisory_key(resource: &[u8]) -> i64 {
    i64::from(crc32fast::hash(resource))
}

/// Who holds one advisory key in this process's session.
#[derive(Debug)]
enum Hold {
    Exclusive(Token),
    Shared(HashSet<Token>),
}

impl Hold {
    fn holds(&self, token: &Token) -> bool {
        match self {
            Hold::Exclusive(writer) => writer == token,
            Hold::Shared(readers) => readers.contains(token),
        }
    }

    /// Whether a key other than `token`'s holds it (the session's lock is then no help to
    /// `token`: the server would grant it again).
    fn held_by_another(&self, token: &Token) -> bool {
        match self {
            Hold::Exclusive(writer) => writer != token,
            Hold::Shared(readers) => readers.iter().any(|reader| reader != token),
        }
    }
}

/// This process's session and what its keys hold in it.
#[derive(Default)]
struct Connection {
    session: Option<Session>,
    holds: HashMap<i64, Hold>,
    /// The last run ended its session by a timeout.
    timed_out: bool,
}

/// The state a key keeps while it holds a lock here: it binds the key to this process (a
/// session's lock cannot travel), as symfony/lock marks its key unserializable.
struct InSession;

/// Locks in one PostgreSQL database.
pub struct PostgreSqlStore {
    server: PostgresServer,
    tls: Option<TlsConfig>,
    name: Arc<str>,
    connection: PerProcess<Mutex<Connection>>,
}

impl PostgreSqlStore {
    /// A store on `server`. Connects lazily: a server that is down fails the first call.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a CA file that cannot serve.
    pub fn new(server: PostgresServer) -> Result<Self> {
        let tls = tls::client_config(&server)?;
        Ok(PostgreSqlStore {
            name: format!("PostgreSqlStore({})", server.shown()).into(),
            server,
            tls,
            connection: PerProcess::new(),
        })
    }

    /// A store on the server `dsn` names (`pgsql:...` or `postgresql://...`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a DSN that is not a PostgreSQL one, or as [`Self::new`].
    pub fn connect(dsn: &str) -> Result<Self> {
        Self::new(PostgresServer::of_dsn_with(dsn, None, None)?)
    }

    /// Runs `f` on this process's session, connecting first when there is none (or the last one
    /// ended: its locks were freed with it, so what its keys held is forgotten). When `f` finds the
    /// connection closed (the server ended the session, restarted, failed over), it runs once more
    /// on a new session: nothing the old one did outlives it, so the second run answers for the
    /// server as it is now (a key of the old session holds nothing). A timeout ends the session
    /// too, but is not run again: the server may be hung.
    fn with<T>(&self, f: impl Fn(&Session, &mut HashMap<i64, Hold>) -> Result<T>) -> Result<T> {
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

    /// One run of `f` (see [`Self::with`]); a session that failed it is dropped.
    fn run<T>(
        &self,
        connection: &mut Connection,
        f: &impl Fn(&Session, &mut HashMap<i64, Hold>) -> Result<T>,
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

    fn conflict(&self, key: &Key) -> Error {
        Error::conflict(key.display_resource(), &self.name)
    }
}

/// Takes `mode` on `id` for `token` in the session now, as far as the session's other keys allow:
/// `Ok(false)` when someone (another session, or another key of this one) holds it.
fn take(
    session: &Session,
    holds: &mut HashMap<i64, Hold>,
    id: i64,
    token: &Token,
    mode: Mode,
) -> Result<bool> {
    let taken = match (mode, holds.get_mut(&id)) {
        (_, Some(hold))
            if hold.holds(token)
                && matches!((mode, &*hold), (Mode::Exclusive, Hold::Exclusive(_))) =>
        {
            true
        }
        (Mode::Exclusive, Some(hold)) if hold.held_by_another(token) => false,
        // Promotion of this key's read lock, the session's only one.
        (Mode::Exclusive, Some(_)) => {
            session.ask(Op::TryLock, id)? && session.ask(Op::UnlockShared, id)?
        }
        (Mode::Exclusive, None) => session.ask(Op::TryLock, id)?,
        (Mode::Shared, Some(Hold::Exclusive(writer))) if writer != token => false,
        // Demotion: the session may always share a lock it holds, then gives the exclusive one up.
        (Mode::Shared, Some(Hold::Exclusive(_))) => {
            session.ask(Op::TryLockShared, id)? && session.ask(Op::Unlock, id)?
        }
        // The session holds it shared for another key: this key joins (if the session still lives).
        (Mode::Shared, Some(Hold::Shared(_))) => session.ask(Op::Alive, id)?,
        (Mode::Shared, None) => session.ask(Op::TryLockShared, id)?,
    };
    if taken {
        record(holds, id, token, mode);
    }
    Ok(taken)
}

/// Notes that `token` holds `id` in `mode` (a promotion or demotion replaces its other mode).
fn record(holds: &mut HashMap<i64, Hold>, id: i64, token: &Token, mode: Mode) {
    match (mode, holds.get_mut(&id)) {
        (Mode::Shared, Some(Hold::Shared(readers))) => {
            readers.insert(token.clone());
        }
        (Mode::Shared, _) => {
            holds.insert(id, Hold::Shared(HashSet::from([token.clone()])));
        }
        (Mode::Exclusive, _) => {
            holds.insert(id, Hold::Exclusive(token.clone()));
        }
    }
}

impl Store for PostgreSqlStore {
    fn name(&self) -> &str {
        &self.name
    }

    fn save(&self, key: &mut Key, mode: Mode, _ttl: Option<Ttl>) -> Result<()> {
        let token = key.token()?.clone();
        let id = advisory_key(key.resource());
        if !self.with(|session, holds| take(session, holds, id, &token, mode))? {
            return Err(self.conflict(key));
        }
        key.set_state(InSession);
        Ok(())
    }

    fn put_off_expiration(&self, key: &mut Key, _ttl: Ttl) -> Result<()> {
        // Advisory locks never expire.
        crate::store::check_ownership(self, key)
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        let Some(token) = key.drawn_token().cloned() else {
            return Ok(());
        };
        let id = advisory_key(key.resource());
        self.with(|session, holds| {
            match holds.get_mut(&id) {
                Some(Hold::Exclusive(writer)) if *writer == token => {
                    holds.remove(&id);
                    session.ask(Op::Unlock, id)?;
                }
                Some(Hold::Shared(readers)) if readers.contains(&token) => {
                    readers.remove(&token);
                    if readers.is_empty() {
                        holds.remove(&id);
                        session.ask(Op::UnlockShared, id)?;
                    }
                }
                _ => {}
            }
            Ok(())
        })?;
        key.take_state::<InSession>();
        Ok(())
    }

    fn exists(&self, key: &Key) -> Result<bool> {
        let Some(token) = key.drawn_token() else {
            return Ok(false);
        };
        if key.state::<InSession>().is_none() {
            return Ok(false);
        }
        let id = advisory_key(key.resource());
        self.with(|session, holds| {
            Ok(holds.get(&id).is_some_and(|hold| hold.holds(token))
                && session.ask(Op::Alive, id)?)
        })
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities {
            blocking: Some(self),
            ..Capabilities::default()
        }
    }
}

impl BlockingStore for PostgreSqlStore {
    /// Waits in the server's queue. A lock another key of this process holds cannot be waited
    /// for there (the session would be granted it again): that wait polls, as symfony/lock's
    /// in-process store cannot wait either.
    fn wait(
        &self,
        key: &mut Key,
        mode: Mode,
        ttl: Option<Ttl>,
        deadline: Option<Instant>,
        report: &mut WaitReport,
    ) -> Result<bool> {
        let token = key.token()?.clone();
        let id = advisory_key(key.resource());
        loop {
            match self.save(key, mode, ttl) {
                Ok(()) => return Ok(true),
                Err(e) if e.is_conflict() => {}
                Err(e) => return Err(e),
            }
            let ours = self.with(|_, holds| {
                Ok(holds
                    .get(&id)
                    .is_some_and(|hold| hold.held_by_another(&token)))
            })?;
            if ours {
                return poll(deadline, report, poll_interval, || {
                    self.save(key, mode, ttl)
                });
            }
            let watched = crate::interrupt::watched();
            let left = deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
            if left.is_some_and(|left| left.is_zero()) {
                return Ok(false);
            }
            let limit = match (left, watched) {
                (left, true) => {
                    Some(left.map_or(INTERRUPT_SLICE, |left| left.min(INTERRUPT_SLICE)))
                }
                (left, false) => left,
            };
            let waited = self.with(|session, holds| {
                let waited = session.wait(id, mode == Mode::Shared, limit)?;
                if waited == Waited::Acquired {
                    // A promotion leaves the session's read lock, which this key held alone.
                    if mode == Mode::Exclusive && holds.contains_key(&id) {
                        session.ask(Op::UnlockShared, id)?;
                    }
                    record(holds, id, &token, mode);
                }
                Ok(waited)
            })?;
            if waited == Waited::Acquired {
                key.set_state(InSession);
                report.wakeups += 1;
                return Ok(true);
            }
            report.polls += 1;
            if watched && crate::interrupt::requested() {
                report.interrupted = true;
                return Ok(false);
            }
        }
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
