//! Advisory locks on one session, whatever connects it: which key of this process holds what
//! ([`Hold`]), and the store's operations on top ([`AdvisoryLocks`]). Every key of one store in one
//! process shares a session, and PostgreSQL counts a session's locks, not its keys: so the server's
//! count is kept at one per mode (a second reader of the session joins without asking the server),
//! and a lock is released only for the key that took it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::advisory_key;
use super::session::{Op, Waited};
use crate::store::{poll, poll_interval, Mode, WaitReport};
use crate::token::Token;
use crate::{Error, Key, Result};

/// How long one wait in the server's queue lasts while the application may need its turn (a
/// signal handler): then the wait asks, and queues again.
const INTERRUPT_SLICE: Duration = Duration::from_millis(100);

/// A session advisory locks are taken on.
pub(super) trait Advisory {
    /// Runs `op` on `key`; its boolean answer.
    fn ask(&self, op: Op, key: i64) -> Result<bool>;

    /// Waits in the server's queue for `key` (shared or not) at most `limit` (`None`: without
    /// end).
    fn wait(&self, key: i64, shared: bool, limit: Option<Duration>) -> Result<Waited>;

    /// Whether a wait may queue in the server now (else it polls).
    fn waits_in_server(&self) -> bool {
        true
    }
}

/// Where a store's session comes from.
pub(super) trait Sessions {
    /// Runs `f` on this process's session and what its keys hold in it.
    fn with<T>(&self, f: impl Fn(&dyn Advisory, &mut HashMap<i64, Hold>) -> Result<T>)
        -> Result<T>;
}

/// Who holds one advisory key in this process's session.
#[derive(Debug)]
pub(super) enum Hold {
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

/// The state a key keeps while it holds a lock here: it binds the key to this process (a
/// session's lock cannot travel), as symfony/lock marks its key unserializable.
struct InSession;

/// A store's advisory locks on the sessions `S` gives.
pub(super) struct AdvisoryLocks<S> {
    pub sessions: S,
    pub name: Arc<str>,
}

impl<S: Sessions> AdvisoryLocks<S> {
    fn conflict(&self, key: &Key) -> Error {
        Error::conflict(key.display_resource(), &self.name)
    }

    pub fn save(&self, key: &mut Key, mode: Mode) -> Result<()> {
        let token = key.token()?.clone();
        let id = advisory_key(key.resource());
        if !self
            .sessions
            .with(|session, holds| take(session, holds, id, &token, mode))?
        {
            return Err(self.conflict(key));
        }
        key.set_state(InSession);
        Ok(())
    }

    pub fn delete(&self, key: &mut Key) -> Result<()> {
        let Some(token) = key.drawn_token().cloned() else {
            return Ok(());
        };
        let id = advisory_key(key.resource());
        self.sessions.with(|session, holds| {
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

    pub fn exists(&self, key: &Key) -> Result<bool> {
        let Some(token) = key.drawn_token() else {
            return Ok(false);
        };
        if key.state::<InSession>().is_none() {
            return Ok(false);
        }
        let id = advisory_key(key.resource());
        self.sessions.with(|session, holds| {
            Ok(holds.get(&id).is_some_and(|hold| hold.holds(token))
                && session.ask(Op::Alive, id)?)
        })
    }

    /// Waits in the server's queue. A lock another key of this process holds cannot be waited
    /// for there (the session would be granted it again), nor one on a session that must not
    /// queue now: those waits poll, as symfony/lock's in-process store cannot wait either.
    pub fn wait(
        &self,
        key: &mut Key,
        mode: Mode,
        deadline: Option<Instant>,
        report: &mut WaitReport,
    ) -> Result<bool> {
        let token = key.token()?.clone();
        let id = advisory_key(key.resource());
        loop {
            match self.save(key, mode) {
                Ok(()) => return Ok(true),
                Err(e) if e.is_conflict() => {}
                Err(e) => return Err(e),
            }
            let must_poll = self.sessions.with(|session, holds| {
                Ok(!session.waits_in_server()
                    || holds
                        .get(&id)
                        .is_some_and(|hold| hold.held_by_another(&token)))
            })?;
            if must_poll {
                return poll(deadline, report, poll_interval, || self.save(key, mode));
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
            if self.wait_once(id, &token, mode, limit)? == Waited::Acquired {
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

    /// One wait in the server's queue, up to `limit`.
    fn wait_once(
        &self,
        id: i64,
        token: &Token,
        mode: Mode,
        limit: Option<Duration>,
    ) -> Result<Waited> {
        self.sessions.with(|session, holds| {
            let waited = session.wait(id, mode == Mode::Shared, limit)?;
            if waited == Waited::Acquired {
                // A promotion leaves the session's read lock, which this key held alone.
                if mode == Mode::Exclusive && holds.contains_key(&id) {
                    session.ask(Op::UnlockShared, id)?;
                }
                record(holds, id, token, mode);
            }
            Ok(waited)
        })
    }
}

/// Takes `mode` on `id` for `token` in the session now, as far as the session's other keys allow:
/// `Ok(false)` when someone (another session, or another key of this one) holds it.
fn take(
    session: &dyn Advisory,
    holds: &mut HashMap<i64, Hold>,
    id: i64,
    token: &Token,
    mode: Mode,
) -> Result<bool> {
    let taken = match (mode, holds.get_mut(&id)) {
        // This key's again (a second save): held while the session lives.
        (_, Some(hold))
            if hold.holds(token)
                && matches!((mode, &*hold), (Mode::Exclusive, Hold::Exclusive(_))) =>
        {
            session.ask(Op::Alive, id)?
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
