//! Locks as MySQL/MariaDB user-level locks (`GET_LOCK`), on the names symfony/lock's `MysqlStore`
//! (8.2) takes, so a Deadbolt process and a symfony/lock process exclude each other on one server.
//!
//! A lock's name is the SHA-256 of the resource in hex (symfony/lock's: it fits the 64 characters
//! MySQL allows and sidesteps MariaDB's case-insensitive names), taken with `GET_LOCK(name, 0)` on
//! this process's session, and waited for in the server (`GET_LOCK(name, seconds)`). Every key of
//! one store in one process shares that session, and the server grants a session a name it holds
//! again (and counts it): so this module keeps which key holds what ([`Session::holds`]), takes a
//! name at most once per session, and releases it only for the key that took it.
//!
//! What the backend gives: no expiry (a lock lives until it is released or its session ends, so a
//! killed holder's locks are freed at once, and nothing needs refreshing), waits in the server.
//! What it rules out: shared locks (`GET_LOCK` is exclusive: a read lock is an exclusive one),
//! fencing tokens (nothing counts holds), a lock that outlives its connection (a dropped
//! connection, a server restart or a failover frees every lock of the session: its keys then find
//! them lost), sharing a lock between processes (a forked child has its own session), an
//! operator's view (`performance_schema.metadata_locks` and `KILL` are the operator's tools).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::process::PerProcess;
use crate::store::table::{key_id, statement_failed, Failure, SqlConnection};
use crate::store::{poll, poll_interval, BlockingStore, Capabilities, Mode, Store, WaitReport};
use crate::sync::Mutex;
use crate::token::Token;
use crate::{Error, Key, Result, Ttl};

/// Takes a free name at once; `-1` when this session holds it already (it would be granted again).
const TRY_TAKE: &str =
    "SELECT IF(IS_USED_LOCK(?) = CONNECTION_ID(), -1, GET_LOCK(?, 0)), CONNECTION_ID()";
/// Waits in the server for the name, up to the seconds given.
const WAIT: &str = "SELECT GET_LOCK(?, ?), CONNECTION_ID()";
/// The session that holds the name (NULL: none).
const HOLDER: &str = "SELECT IS_USED_LOCK(?), CONNECTION_ID()";
const RELEASE: &str = "SELECT RELEASE_LOCK(?), CONNECTION_ID()";

/// How long one wait in the server lasts while the application may need its turn (a signal
/// handler): then the wait asks, and waits again.
const INTERRUPT_SLICE: Duration = Duration::from_millis(100);
/// A wait the server ends this much before its limit ended early (it waited whole seconds).
const EARLY: Duration = Duration::from_millis(20);
/// How long one wait without a deadline lasts before it waits again (the server's wait has no
/// "forever" that MySQL and MariaDB both take).
const UNBOUNDED_SLICE: Duration = Duration::from_secs(60);

/// The lock name symfony/lock's `MysqlStore` derives from a resource: its SHA-256 in hex.
pub fn lock_name(resource: &[u8]) -> String {
    key_id(resource)
}

/// The state a key keeps while it holds a lock here: it binds the key to this process (a
/// session's lock cannot travel), as symfony/lock marks its key unserializable.
struct InSession;

/// This process's session, as far as this store knows it.
#[derive(Default)]
struct Session {
    /// `CONNECTION_ID()` of the session the holds were taken on.
    id: Option<String>,
    /// Lock name -> the token of the key holding it.
    holds: HashMap<String, Token>,
}

impl Session {
    /// Notes the session a statement ran on: another one than the holds were taken on (the
    /// connection was made again after a loss) holds none of them.
    fn ran_on(&mut self, id: &str) {
        if self.id.as_deref() != Some(id) {
            self.holds.clear();
            self.id = Some(id.to_owned());
        }
    }
}

/// What taking a name at once found.
#[derive(PartialEq, Eq)]
enum Take {
    Taken,
    /// Another session holds it.
    HeldElsewhere,
    /// This session holds it, for another key (or for the application): the server would grant
    /// it again, so only polling can wait for it.
    HeldHere,
}

/// Locks on one MySQL/MariaDB server, over a connection of kind `C`.
pub struct MysqlStore<C = Box<dyn SqlConnection>> {
    connection: C,
    name: String,
    session: PerProcess<Mutex<Session>>,
}

impl<C: SqlConnection> MysqlStore<C> {
    /// A store on `connection`; `name` names it in messages (no secret).
    pub fn new(connection: C, name: String) -> Self {
        MysqlStore {
            connection,
            name,
            session: PerProcess::new(),
        }
    }

    fn session(&self) -> crate::sync::MutexGuard<'_, Session> {
        self.session.get_or_init(Mutex::default).lock()
    }

    /// Runs one of this module's statements: its value (empty for NULL) and the session it ran on.
    fn ask(&self, sql: &str, params: &[&str], action: &str, key: &Key) -> Result<(String, String)> {
        let row = self
            .connection
            .first_row(sql, params)
            .map_err(|failure| self.failed(action, key, failure))?;
        Self::value_and_session(row.as_deref()).ok_or_else(|| self.no_value(key, action))
    }

    /// A statement's row: its value and the session it ran on.
    fn value_and_session(row: Option<&[String]>) -> Option<(String, String)> {
        match row {
            Some([value, session]) => Some((value.clone(), session.clone())),
            _ => None,
        }
    }

    fn no_value(&self, key: &Key, action: &str) -> Error {
        Error::Storage {
            message: format!(
                "{} failed to {action} the \"{}\" lock: the server's answer has no value and \
                 session.",
                self.name,
                key.display_resource()
            ),
            source: None,
        }
    }

    /// A failure, naming what was being done; the server's text quoted and bounded.
    fn failed(&self, action: &str, key: &Key, failure: Failure) -> Error {
        let what = format!("{action} the \"{}\" lock", key.display_resource());
        statement_failed(&self.name, &what, failure)
    }

    /// `GET_LOCK` answered NULL: the server failed the call (the session was killed meanwhile,
    /// out of memory).
    fn no_answer(&self, key: &Key) -> Error {
        Error::Storage {
            message: format!(
                "{} failed to take the \"{}\" lock: GET_LOCK() answered NULL (the server failed \
                 the call).",
                self.name,
                key.display_resource()
            ),
            source: None,
        }
    }

    /// Takes `name` for `token` at once, as far as this process's other keys allow.
    fn try_take(
        &self,
        session: &mut Session,
        name: &str,
        token: &Token,
        key: &Key,
    ) -> Result<Take> {
        let holder = session.holds.get(name).map(|holder| holder == token);
        match holder {
            Some(false) => return Ok(Take::HeldHere),
            // This key's again (a second save): taken while the session still holds it.
            Some(true) if self.holds(session, name, key)? => return Ok(Take::Taken),
            _ => {}
        }
        let (value, id) = self.ask(TRY_TAKE, &[name, name], "take", key)?;
        session.ran_on(&id);
        match value.as_str() {
            "1" => {
                session.holds.insert(name.to_owned(), token.clone());
                Ok(Take::Taken)
            }
            "0" => Ok(Take::HeldElsewhere),
            "-1" => Ok(Take::HeldHere),
            _ => Err(self.no_answer(key)),
        }
    }

    /// Whether this session still holds `name` (for the key the holds say): false once the
    /// connection was made again, or the server no longer counts it as this session's, or the
    /// connection is gone (the application's `\PDO`, which nobody makes again: the server freed
    /// the session's locks when it ended).
    fn holds(&self, session: &mut Session, name: &str, key: &Key) -> Result<bool> {
        let row = match self.connection.first_row(HOLDER, &[name]) {
            Err(Failure::Sql(sql)) if sql.connection_lost() => {
                session.holds.clear();
                session.id = None;
                return Ok(false);
            }
            row => row.map_err(|failure| self.failed("read", key, failure))?,
        };
        let (holder, id) =
            Self::value_and_session(row.as_deref()).ok_or_else(|| self.no_value(key, "read"))?;
        session.ran_on(&id);
        let held = holder == id && session.holds.contains_key(name);
        if !held {
            session.holds.remove(name);
        }
        Ok(held)
    }

    /// One wait in the server for `name`, up to `limit`: whether it was taken.
    fn wait_once(&self, name: &str, token: &Token, limit: Duration, key: &Key) -> Result<bool> {
        let seconds = format!("{:.3}", limit.as_secs_f64());
        let (value, id) = self.ask(WAIT, &[name, &seconds], "wait for", key)?;
        let mut session = self.session();
        session.ran_on(&id);
        match value.as_str() {
            "1" => {
                session.holds.insert(name.to_owned(), token.clone());
                Ok(true)
            }
            "0" => Ok(false),
            _ => Err(self.no_answer(key)),
        }
    }

    fn conflict(&self, key: &Key) -> Error {
        Error::conflict(key.display_resource(), &self.name)
    }
}

impl<C: SqlConnection> Store for MysqlStore<C> {
    fn name(&self) -> &str {
        &self.name
    }

    /// Takes the name now. A read lock is an exclusive one: `GET_LOCK` has no shared mode.
    fn save(&self, key: &mut Key, _mode: Mode, _ttl: Option<Ttl>) -> Result<()> {
        let token = key.token()?.clone();
        let name = lock_name(key.resource());
        let taken = self.try_take(&mut self.session(), &name, &token, key)?;
        if taken != Take::Taken {
            return Err(self.conflict(key));
        }
        key.set_state(InSession);
        Ok(())
    }

    fn put_off_expiration(&self, key: &mut Key, _ttl: Ttl) -> Result<()> {
        // User-level locks never expire.
        crate::store::check_ownership(self, key)
    }

    /// Releases the name, only for the key that took it (another key of this session may hold it).
    fn delete(&self, key: &mut Key) -> Result<()> {
        let Some(token) = key.drawn_token().cloned() else {
            return Ok(());
        };
        let name = lock_name(key.resource());
        let mut session = self.session();
        if session.holds.get(&name) == Some(&token) {
            session.holds.remove(&name);
            let (_, id) = self.ask(RELEASE, &[&name], "release", key)?;
            session.ran_on(&id);
        }
        drop(session);
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
        let name = lock_name(key.resource());
        let mut session = self.session();
        if session.holds.get(&name) != Some(token) {
            return Ok(false);
        }
        self.holds(&mut session, &name, key)
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities {
            blocking: Some(self),
            ..Capabilities::default()
        }
    }
}

impl<C: SqlConnection> BlockingStore for MysqlStore<C> {
    /// Waits in the server. A name this session holds (for another key, or the application)
    /// cannot be waited for there (the server would grant it again): that wait polls.
    fn wait(
        &self,
        key: &mut Key,
        mode: Mode,
        ttl: Option<Ttl>,
        deadline: Option<Instant>,
        report: &mut WaitReport,
    ) -> Result<bool> {
        let token = key.token()?.clone();
        let name = lock_name(key.resource());
        loop {
            // The session's guard ends with this statement: a poll below saves, which takes it.
            let take = self.try_take(&mut self.session(), &name, &token, key)?;
            match take {
                Take::Taken => break,
                Take::HeldHere => {
                    return poll(deadline, report, poll_interval, || {
                        self.save(key, mode, ttl)
                    });
                }
                Take::HeldElsewhere => {}
            }
            let watched = crate::interrupt::watched();
            let left = deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
            if left.is_some_and(|left| left.is_zero()) {
                return Ok(false);
            }
            let slice = if watched {
                INTERRUPT_SLICE
            } else {
                UNBOUNDED_SLICE
            };
            let limit = left.map_or(slice, |left| left.min(slice));
            let started = Instant::now();
            if self.wait_once(&name, &token, limit, key)? {
                report.wakeups += 1;
                break;
            }
            // MySQL waits whole seconds (MariaDB the fraction too): a wait it ended early is slept
            // out, so that the loop never spins on the server.
            let rest = limit.saturating_sub(started.elapsed());
            if rest > EARLY {
                std::thread::sleep(rest.min(poll_interval()));
            }
            report.polls += 1;
            if watched && crate::interrupt::requested() {
                report.interrupted = true;
                return Ok(false);
            }
        }
        key.set_state(InSession);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::lock_name;

    /// symfony/lock's name: `hash('sha256', $resource)`.
    #[test]
    fn the_name_is_the_resources_sha256_in_hex() {
        // php -r 'echo hash("sha256", "invoice:42");'
        assert_eq!(
            lock_name(b"invoice:42"),
            "5cd23eb33b1a25492f939a39561ff8c718e84f89b0d64ad09c000769b39d929c"
        );
        assert_eq!(lock_name(b"").len(), 64);
    }
}
