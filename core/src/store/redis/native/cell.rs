//! A cell holds one native connection of this process (to the server, or to one cluster node),
//! and runs one call on it (`Cell::call`): the connection opened when missing, the socket timeout
//! set (capped by the deadline), a kept connection that died replaced once, one that timed out
//! dropped, the eviction-policy check after the first success, and a Redis Cluster redirect told
//! apart from a failure.
//!
//! The process's cells, by name (a connection identity and a purpose): kept across lock factories
//! and FPM requests while a store uses them; of those no store uses any more, the [`IDLE_KEPT`]
//! most recent stay open for the next request and older ones are closed. Per process
//! ([`PerProcess`]): a forked child opens its own.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use crate::sync::Mutex;

use super::link::Link;
use crate::process::PerProcess;
use crate::store::redis::calls::ScriptCall;
use crate::store::redis::cluster::{Node, Redirect};
use crate::store::redis::eviction::eviction_warning;
use crate::store::redis::pending::{Describe, UnreadReplies};
use crate::store::redis::transport::{RunError, RunErrorKind};
use crate::store::PendingRelease;

/// This process's connection to one server (or cluster node) for one DSN.
#[derive(Default)]
pub struct Cell {
    pub connection: Option<redis::Connection>,
    /// The read timeout set on `connection`'s socket, so that a command sets it only when it
    /// changes (one `setsockopt` per command saved).
    pub read_timeout: Option<Duration>,
    /// The eviction-policy check runs once per process and DSN.
    pub policy_checked: bool,
    pub warning: Option<String>,
    /// Releases sent on `connection` whose replies are still to be read.
    pub unread: UnreadReplies,
}

impl Cell {
    /// Forgets the connection (broken, or out of step with the server); releases whose replies
    /// were still to come on it are settled as unconfirmed.
    pub fn drop_connection(&mut self, why: &str) {
        self.connection = None;
        self.read_timeout = None;
        self.unread.lost(why);
    }
}

/// How many connections no store uses any more stay open (the most recently made ones), so that
/// the next FPM request or the next factory finds its connection ready.
pub const IDLE_KEPT: usize = 8;

/// The PHP thread a cell serves, the one that made its transport: under a thread-safe PHP each
/// thread has its own connections, so that no socket is ever used by two PHP threads at once and
/// no request waits behind another thread's blocking wait; under NTS there is one PHP thread.
/// (Not the thread that happens to call: a CombinedStore asks its members from scoped threads of
/// its PHP thread, which use that thread's connections.)
pub type Owner = std::thread::ThreadId;

/// What a cell is found by: its owner and its name.
type CellKey = (Owner, String);

/// This process's cells by owner and name (a connection identity, and a purpose), each with the
/// order in which it was made.
#[derive(Default)]
struct Cells {
    by_name: HashMap<CellKey, (u64, Arc<Mutex<Cell>>)>,
    made: u64,
}

static CELLS: LazyLock<PerProcess<Mutex<Cells>>> = LazyLock::new(PerProcess::new);

/// This process's cell of `owner` named `name`, made on first use. Making one closes the oldest
/// idle connections beyond [`IDLE_KEPT`] (idle: no transport holds the cell but this table; a
/// PHP thread that ended leaves only idle ones).
/// Makes this process's table of cells now (`crate::threads`).
pub(crate) fn set_up() {
    drop(CELLS.get_or_init(Mutex::default).lock());
}

pub fn cell_named(owner: Owner, name: &str) -> Arc<Mutex<Cell>> {
    let mut cells = CELLS.get_or_init(Mutex::default).lock();
    let key = (owner, name.to_owned());
    if let Some((_, cell)) = cells.by_name.get(&key) {
        return Arc::clone(cell);
    }
    let mut idle: Vec<(u64, CellKey)> = cells
        .by_name
        .iter()
        .filter(|(_, (_, cell))| Arc::strong_count(cell) == 1)
        .map(|(key, (made, _))| (*made, key.clone()))
        .collect();
    if idle.len() > IDLE_KEPT {
        idle.sort_unstable_by_key(|(made, _)| *made);
        for (_, key) in &idle[..idle.len() - IDLE_KEPT] {
            cells.by_name.remove(key);
        }
    }
    cells.made += 1;
    let made = cells.made;
    let cell = Arc::new(Mutex::new(Cell::default()));
    cells.by_name.insert(key, (made, Arc::clone(&cell)));
    cell
}

/// Reads the replies of every release sent without waiting on the calling PHP thread's
/// connections (at the end of a request, and at exit), so each release is settled and no socket
/// closes with a reply unread.
pub fn read_unread_replies() {
    let Some(cells) = CELLS.get() else {
        return;
    };
    let me = std::thread::current().id();
    let cells: Vec<Arc<Mutex<Cell>>> = cells
        .lock()
        .by_name
        .iter()
        .filter(|((owner, _), _)| *owner == me)
        .map(|(_, (_, cell))| Arc::clone(cell))
        .collect();
    for cell in cells {
        cell.lock().read_unread(None, &|e| e.to_string());
    }
}

/// Why a call on one cell did not succeed: a node sent it elsewhere (Redis Cluster), or it failed.
pub(super) enum Failure {
    Redirect(Redirect),
    Run(RunError),
}

/// A call's hold on its cell's connection, with the replies still unread on it (`pending.rs`):
/// the call reads them first, or writes its command behind them.
pub(super) struct Session<'a> {
    pub connection: &'a mut redis::Connection,
    pub unread: &'a mut UnreadReplies,
    /// Under a Redis Cluster `ASK` redirect, each command must follow an `ASKING`.
    asking: bool,
}

impl Session<'_> {
    /// Adds `command` to a pipeline of the call, behind an `ASKING` under an `ASK` redirect (the
    /// cell sends one before the call; a pipeline's later commands need their own).
    pub fn push(&self, pipe: &mut redis::Pipeline, command: redis::Cmd) {
        if self.asking {
            pipe.cmd("ASKING").ignore();
        }
        pipe.add_command(command);
    }
}

/// The call a cell runs.
pub(super) type Call<'a, T> = dyn FnMut(&mut Session<'_>) -> redis::RedisResult<T> + 'a;

/// How a cell opens its connection when it has none.
pub(super) type Open<'a> = dyn Fn() -> Result<redis::Connection, RunError> + 'a;

impl Cell {
    /// Runs `call` on this cell's connection (to `node`, for a cluster), opened by `open` when
    /// missing, with a socket read timeout of `wait` capped by the call's deadline; `asking` (an
    /// `ASK` redirect) sends `ASKING` first. A kept connection may have died since its last use
    /// (server restart, idle timeout): on a connection error it is replaced once and the call made
    /// again. Every lock script is idempotent for its token; after a lost reply a second run at
    /// most skips a fencing number or repeats a wake-up signal, which no one can tell from a real
    /// one.
    pub(super) fn call<T>(
        &mut self,
        link: &Link<'_>,
        node: Option<&Node>,
        open: &Open<'_>,
        (wait, asking): (Duration, bool),
        call: &mut Call<'_, T>,
    ) -> Result<T, Failure> {
        let reused = self.connection.is_some();
        match self.attempt(link, node, open, (wait, asking), call) {
            Err(Failure::Run(error)) if reused && error.kind() == RunErrorKind::Connection => {
                self.attempt(link, node, open, (wait, asking), call)
            }
            done => done,
        }
    }

    fn attempt<T>(
        &mut self,
        link: &Link<'_>,
        node: Option<&Node>,
        open: &Open<'_>,
        (wait, asking): (Duration, bool),
        call: &mut Call<'_, T>,
    ) -> Result<T, Failure> {
        let Cell {
            connection,
            read_timeout,
            unread,
            ..
        } = self;
        let connection = match connection {
            Some(connection) => connection,
            None => {
                let opened = open().map_err(Failure::Run)?;
                *read_timeout = Some(link.read_timeout);
                connection.insert(opened)
            }
        };
        let reply = set_read_timeout(connection, read_timeout, link.capped(wait))
            .and_then(|()| {
                if asking {
                    redis::cmd("ASKING").exec(connection)
                } else {
                    Ok(())
                }
            })
            .and_then(|()| {
                call(&mut Session {
                    connection,
                    unread,
                    asking,
                })
            });
        match reply {
            Ok(reply) => {
                // After the call, so that the check never delays it (nor its deadline).
                self.check_policy(link);
                Ok(reply)
            }
            Err(e) => Err(self.failed(link, node, &e)),
        }
    }

    /// `e` as the call's failure; a connection that broke or timed out (out of step with the
    /// server: a reply may still come) is dropped, never reused.
    fn failed(&mut self, link: &Link<'_>, node: Option<&Node>, e: &redis::RedisError) -> Failure {
        if let Some(redirect) = Redirect::of(e) {
            return Failure::Redirect(redirect);
        }
        let error = link.error_at(e, node);
        if matches!(
            error.kind(),
            RunErrorKind::TimedOut | RunErrorKind::Connection
        ) {
            self.drop_connection(&error.to_string());
        }
        Failure::Run(error)
    }

    /// The eviction-policy check, once per cell, after its first successful call.
    fn check_policy(&mut self, link: &Link<'_>) {
        let Some(connection) = self.connection.as_mut().filter(|_| !self.policy_checked) else {
            return;
        };
        let timeout = link.capped(link.read_timeout);
        let _ = set_read_timeout(connection, &mut self.read_timeout, timeout);
        match eviction_warning(connection, link.name) {
            Ok(warning) => {
                self.warning = warning;
                self.policy_checked = true;
            }
            Err(_) => self.drop_connection("connection lost"),
        }
    }

    /// Writes `call` behind the replies still unread, without reading its own (`pending.rs`);
    /// `None` when there is no connection to write to (none yet, or the write broke it).
    pub(super) fn send(&mut self, call: &ScriptCall, link: &Link<'_>) -> Option<PendingRelease> {
        let connection = self.connection.as_mut()?;
        match self.unread.send(connection, call) {
            Ok(pending) => Some(pending),
            Err(e) => {
                self.drop_connection(&link.error(&e).to_string());
                None
            }
        }
    }

    /// Reads the replies of releases sent earlier on this cell's connection (they come before any
    /// later command's), with the socket's read timeout set to `timeout` first when given. A
    /// connection that breaks meanwhile is dropped; the next call opens a new one.
    pub fn read_unread(&mut self, timeout: Option<Duration>, describe: Describe<'_>) {
        let Some(connection) = self.connection.as_mut() else {
            return;
        };
        if self.unread.is_empty() {
            return;
        }
        if let Some(timeout) = timeout {
            let _ = set_read_timeout(connection, &mut self.read_timeout, timeout);
        }
        if self.unread.read_all(connection, describe).is_err() {
            self.drop_connection("connection lost");
        }
    }
}

/// Sets the socket's read timeout to `timeout` unless `current` says it is that already.
fn set_read_timeout(
    connection: &redis::Connection,
    current: &mut Option<Duration>,
    timeout: Duration,
) -> redis::RedisResult<()> {
    if *current != Some(timeout) {
        *current = None;
        connection.set_read_timeout(Some(timeout))?;
        *current = Some(timeout);
    }
    Ok(())
}
