//! One call on one native connection (`native.rs`): the connection opened when missing, the socket
//! timeout set (capped by the deadline), a kept connection that died replaced once, one that
//! timed out dropped, the eviction-policy check after the first success, and a Redis Cluster
//! redirect told apart from a failure; for a cluster DSN the call is first routed to its node
//! (`native_cluster.rs`).

use std::time::Duration;

use parking_lot::Mutex;

use super::NativeTransport;
use crate::store::redis::cluster::{Node, Redirect};
use crate::store::redis::connections::Slot;
use crate::store::redis::eviction::eviction_warning;
use crate::store::redis::pending::UnreadReplies;
use crate::store::redis::transport::{RunError, RunErrorKind};
use crate::store::redis::wording::node_name;

/// Why a call on one connection did not succeed: a node sent it elsewhere (Redis Cluster), or it
/// failed.
pub(super) enum Failure {
    Redirect(Redirect),
    Run(RunError),
}

/// The call a connection runs: its replies still unread come with it (`pending.rs`), and whether
/// its commands must each follow an `ASKING` (a Redis Cluster `ASK` redirect).
pub(super) type Call<'a, T> =
    dyn FnMut(&mut redis::Connection, &mut UnreadReplies, bool) -> redis::RedisResult<T> + 'a;

/// Sets the socket's read timeout to `timeout` unless `current` says it is that already.
pub(super) fn set_read_timeout(
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

impl NativeTransport {
    /// Runs `call` on this process's connection (for a cluster, the one to the node serving
    /// `route`'s hash slot), with a socket read timeout of `wait` (capped by the deadline).
    pub(super) fn with_connection<T>(
        &self,
        route: &[u8],
        wait: Duration,
        call: &mut Call<'_, T>,
    ) -> Result<T, RunError> {
        match &self.cluster {
            Some(cluster) => self.routed(cluster, route, wait, call),
            None => self
                .on_slot(self.slot(), None, wait, false, call)
                .map_err(|failure| match failure {
                    Failure::Run(error) => error,
                    Failure::Redirect(redirect) => RunError::new(
                        RunErrorKind::Server,
                        format!(
                            "Redis at {} is a Redis Cluster node (it redirected to {}): use \
                             redis_cluster=1 and the nodes as host[...] in the DSN",
                            self.name,
                            node_name(&redirect.node().0, redirect.node().1)
                        ),
                    ),
                }),
        }
    }

    /// Runs `call` on the connection of `slot` (to `node`, for a cluster), opening it first when
    /// needed, with a socket read timeout of `wait` (capped by the deadline). `call` gets the
    /// replies still unread on it: it reads them first, or writes its command behind them
    /// (`pending.rs`).
    pub(super) fn on_slot<T>(
        &self,
        slot: &Mutex<Slot>,
        node: Option<&Node>,
        wait: Duration,
        asking: bool,
        call: &mut Call<'_, T>,
    ) -> Result<T, Failure> {
        let mut slot = slot.lock();
        // A kept connection may have died since its last use (server restart, idle timeout): on a
        // connection error it is replaced once and the call made again. Every lock script is
        // idempotent for its token; after a lost reply a second run at most skips a fencing
        // number or repeats a wake-up signal, which no one can tell from a real one.
        let reused = slot.connection.is_some();
        for attempt in 0..2 {
            let slot = &mut *slot;
            let connection = match slot.connection.as_mut() {
                Some(connection) => connection,
                None => {
                    slot.read_timeout = Some(self.dsn.read_timeout);
                    slot.connection
                        .insert(self.connect(node).map_err(Failure::Run)?)
                }
            };
            let reply = set_read_timeout(connection, &mut slot.read_timeout, self.capped(wait))
                .and_then(|()| call(connection, &mut slot.unread, asking));
            match reply {
                Ok(reply) => {
                    // After the call, so that the check never delays it (nor its deadline).
                    if !slot.policy_checked {
                        let _ = set_read_timeout(
                            connection,
                            &mut slot.read_timeout,
                            self.capped(self.dsn.read_timeout),
                        );
                        match eviction_warning(connection, &self.name) {
                            Ok(warning) => {
                                slot.warning = warning;
                                slot.policy_checked = true;
                            }
                            Err(_) => slot.drop_connection("connection lost"),
                        }
                    }
                    return Ok(reply);
                }
                Err(e) => {
                    if let Some(redirect) = Redirect::of(&e) {
                        return Err(Failure::Redirect(redirect));
                    }
                    let error = self.error_at(&e, node);
                    match error.kind() {
                        // Out of step with the server (a reply may still come): never reused.
                        RunErrorKind::TimedOut => slot.drop_connection(&error.to_string()),
                        RunErrorKind::Connection => {
                            slot.drop_connection(&error.to_string());
                            if reused && attempt == 0 {
                                continue;
                            }
                        }
                        _ => {}
                    }
                    return Err(Failure::Run(error));
                }
            }
        }
        Err(Failure::Run(RunError::new(
            RunErrorKind::Connection,
            format!("Redis at {}: connection lost", self.name),
        )))
    }
}
