//! A Redis Cluster DSN's routing (`cluster.rs` reads the map and the redirects): this process's
//! slot map and one [`Cell`] per node, each like a single server's (so the deadline, the
//! reconnect-once rule, the eviction check and fork safety are the same). Every call goes to the
//! node serving its first key's hash slot (all of a lock's keys share it, `keys.rs`) and follows
//! the redirects the nodes answer with, sending `ASKING` itself after an `ASK`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::sync::Mutex;

use super::cell::{cell_named, Call, Cell, Failure, Owner};
use super::link::Link;
use crate::process::PerProcess;
use crate::store::redis::client::{keep_open, open, ClientFactory};
use crate::store::redis::cluster::{Node, Redirect, SlotMap, MAX_HOPS};
use crate::store::redis::dsn::host_port;
use crate::store::redis::keys;
use crate::store::redis::transport::{RunError, RunErrorKind};
use crate::store::redis::wording::node_name;

/// How often a call asks again a slot being migrated (`TRYAGAIN`), after 10, 20, 40, 80 and
/// 160 ms: a slot holding a few lock keys migrates in milliseconds.
const MAX_PAUSES: usize = 5;

/// The cluster of one DSN: its seed nodes, how to reach a node, and what this process knows.
pub(super) struct Router {
    seeds: Vec<Node>,
    factory: Arc<ClientFactory>,
    /// The owner and name of this transport's cells: each node's is this name and the node's
    /// address.
    cells_of: (Owner, String),
    /// Per process: a forked child reads the map anew and opens its own connections.
    state: PerProcess<Mutex<State>>,
}

#[derive(Default)]
struct State {
    map: SlotMap,
    /// Whether `map` was read from the cluster and nothing has said it changed since (a `MOVED`
    /// or a node that failed makes it stale: it is read again before the next use).
    current: bool,
    /// The cell of each node, by address.
    cells: HashMap<Node, Arc<Mutex<Cell>>>,
}

/// Where one call stands on its way to the node that serves its slot.
#[derive(Default)]
struct Journey {
    /// The node an `ASK` redirect named: the next try goes there, after `ASKING`.
    ask: Option<Node>,
    /// Whether the map was read again after a node failed (once per call).
    failed_over: bool,
    pauses: usize,
    hops: usize,
}

impl Router {
    pub(super) fn new(
        seeds: Vec<Node>,
        factory: Arc<ClientFactory>,
        cells_of: (Owner, String),
    ) -> Self {
        Router {
            seeds,
            factory,
            cells_of,
            state: PerProcess::new(),
        }
    }

    /// The name its nodes' cells are named after.
    pub(super) fn cell_name(&self) -> &str {
        &self.cells_of.1
    }

    /// The same cluster for a transport of its own (cells of the same owner named `cell_name`).
    pub(super) fn twin(&self, cell_name: String) -> Self {
        let cells_of = (self.cells_of.0, cell_name);
        Router::new(self.seeds.clone(), Arc::clone(&self.factory), cells_of)
    }

    fn state(&self) -> &Mutex<State> {
        self.state.get_or_init(Mutex::default)
    }

    /// This process's cells for the cluster's nodes, so far.
    pub(super) fn cells(&self) -> Vec<Arc<Mutex<Cell>>> {
        self.state().lock().cells.values().cloned().collect()
    }

    /// The cell for `node`. Looked up before anything is made: this runs on every call, the
    /// making once per node.
    fn cell(&self, node: &Node) -> Arc<Mutex<Cell>> {
        let mut state = self.state().lock();
        if let Some(cell) = state.cells.get(node) {
            return Arc::clone(cell);
        }
        let (owner, name) = &self.cells_of;
        let cell = cell_named(*owner, &format!("{name}@{}", host_port(&node.0, node.1)));
        state.cells.insert(node.clone(), Arc::clone(&cell));
        cell
    }

    /// Runs `call` on `node`'s cell, connecting to it when needed.
    fn call_on<T>(
        &self,
        link: &Link<'_>,
        node: &Node,
        (wait, asking): (Duration, bool),
        call: &mut Call<'_, T>,
    ) -> Result<T, Failure> {
        let open_node = || {
            self.factory
                .primary_at(&node.0, node.1)
                .and_then(|client| link.bounds(|bounds| open(&client, bounds)))
                .and_then(|connection| keep_open(connection, link.read_timeout))
                .map_err(|e| link.error_at(&e, Some(node)))
        };
        self.cell(node)
            .lock()
            .call(link, Some(node), &open_node, (wait, asking), call)
    }

    /// Runs `call` on the node serving `route`'s hash slot: a `MOVED` points the slot elsewhere
    /// and the call goes there, an `ASK` sends it once to the node named, after `ASKING`; a node
    /// that cannot be reached (killed, paused, failed over) has the map read again from the
    /// others, and the call goes to the slot's new primary if there is one.
    pub(super) fn call<T>(
        &self,
        link: &Link<'_>,
        route: &[u8],
        wait: Duration,
        call: &mut Call<'_, T>,
    ) -> Result<T, RunError> {
        let slot = keys::slot(route);
        let mut journey = Journey::default();
        while journey.hops <= MAX_HOPS {
            let (node, asking) = match journey.ask.take() {
                Some(node) => (node, true),
                None => (self.node_for(link, slot, None)?, false),
            };
            match self.call_on(link, &node, (wait, asking), call) {
                Ok(reply) => return Ok(reply),
                Err(failure) => self.on_failure(link, &mut journey, (slot, &node), failure)?,
            }
        }
        Err(link.failure(
            RunErrorKind::Server,
            format!(
                "more than {MAX_HOPS} redirects for one command: the cluster's nodes do not \
                 agree on who serves hash slot {slot}"
            ),
        ))
    }

    /// Runs `call` on every primary of the map read afresh, in turn (an operator's scan of the
    /// whole keyspace: each node answers for its own keys). A primary that fails ends it.
    pub(super) fn call_on_every_primary<T>(
        &self,
        link: &Link<'_>,
        wait: Duration,
        call: &mut Call<'_, T>,
    ) -> Result<Vec<T>, RunError> {
        self.read_slot_map(link, None)?;
        let primaries = self.state().lock().map.nodes().to_vec();
        primaries
            .iter()
            .map(|node| {
                self.call_on(link, node, (wait, false), call)
                    .map_err(|failure| match failure {
                        Failure::Run(error) => error,
                        Failure::Redirect(redirect) => link.failure(
                            RunErrorKind::Server,
                            format!(
                                "{} redirected a keyspace scan to {}: the cluster changed \
                                 meanwhile, try again",
                                node_name(&node.0, node.1),
                                node_name(&redirect.node().0, redirect.node().1)
                            ),
                        ),
                    })
            })
            .collect()
    }

    /// What a failed try on `node` means for the call: go on (`Ok`: the journey says where), or
    /// end with the error.
    fn on_failure(
        &self,
        link: &Link<'_>,
        journey: &mut Journey,
        (slot, node): (u16, &Node),
        failure: Failure,
    ) -> Result<(), RunError> {
        match failure {
            Failure::Redirect(Redirect::Moved { slot, node }) => {
                let mut state = self.state().lock();
                state.map.point(slot, node);
                state.current = false;
                journey.hops += 1;
            }
            Failure::Redirect(Redirect::Ask { node }) => {
                journey.ask = Some(node);
                journey.hops += 1;
            }
            // The slot is being migrated (TRYAGAIN: the script's keys are not all on one node
            // yet) or has no primary for a moment: ask again shortly, as long as the deadline
            // allows; after that a wait rides it out like a server still loading.
            Failure::Run(error) if error.kind() == RunErrorKind::Loading => {
                let pause = Duration::from_millis(10 << journey.pauses);
                if journey.pauses == MAX_PAUSES || link.capped(pause) < pause {
                    return Err(error);
                }
                journey.pauses += 1;
                journey.hops = 0;
                std::thread::sleep(pause);
            }
            Failure::Run(error) => self.fail_over(link, journey, (slot, node), error)?,
        }
        Ok(())
    }

    /// After `node` could not be reached: the map is read again from the others, once per call
    /// (a lock script runs again only on another node, where it is new, and idempotent for its
    /// token in any case), and the call goes on if another node serves the slot now.
    fn fail_over(
        &self,
        link: &Link<'_>,
        journey: &mut Journey,
        (slot, node): (u16, &Node),
        error: RunError,
    ) -> Result<(), RunError> {
        let unreachable = matches!(
            error.kind(),
            RunErrorKind::Connection | RunErrorKind::TimedOut
        );
        if !unreachable || journey.failed_over {
            return Err(error);
        }
        journey.failed_over = true;
        self.state().lock().current = false;
        match self.node_for(link, slot, Some(node)) {
            Ok(next) if &next != node => Ok(()),
            // The others answered and still name that node: its replica has not been promoted
            // yet. Like a server still loading, a wait rides this out until its deadline; a
            // caller that does not wait is told why.
            Ok(_) if error.kind() == RunErrorKind::Connection => Err(RunError::new(
                RunErrorKind::Loading,
                format!(
                    "{error} (no other node serves its hash slot yet: a failover may be under way)"
                ),
            )),
            _ => Err(error),
        }
    }

    /// The primary serving `slot`, from the map, read again first when it is not current.
    /// `failed` is asked last (it just failed to answer).
    fn node_for(
        &self,
        link: &Link<'_>,
        slot: u16,
        failed: Option<&Node>,
    ) -> Result<Node, RunError> {
        let (current, known) = {
            let state = self.state().lock();
            (state.current, state.map.node_for(slot).cloned())
        };
        if let (true, Some(node)) = (current, &known) {
            return Ok(node.clone());
        }
        match self.read_slot_map(link, failed) {
            Ok(()) => self
                .state()
                .lock()
                .map
                .node_for(slot)
                .cloned()
                .ok_or_else(|| {
                    link.failure(
                        RunErrorKind::Connection,
                        format!("no node of the cluster serves hash slot {slot} (CLUSTER SLOTS)"),
                    )
                }),
            // The map as it was still names a node: let the call find out.
            Err(error) => known.ok_or(error),
        }
    }

    /// Reads the slot map (`CLUSTER SLOTS`) from the first node that answers: the primaries
    /// known, then the seeds, `failed` last.
    fn read_slot_map(&self, link: &Link<'_>, failed: Option<&Node>) -> Result<(), RunError> {
        let known = self.state().lock().map.nodes().to_vec();
        let mut candidates: Vec<Node> = Vec::new();
        for node in known.iter().chain(&self.seeds) {
            if Some(node) != failed && !candidates.contains(node) {
                candidates.push(node.clone());
            }
        }
        candidates.extend(failed.cloned());
        let mut reasons = Vec::new();
        for node in &candidates {
            match self.slot_map_of(link, node) {
                Ok(map) => {
                    let mut state = self.state().lock();
                    state.map = map;
                    state.current = true;
                    return Ok(());
                }
                Err(reason) => reasons.push(reason),
            }
        }
        Err(RunError::new(
            RunErrorKind::Connection,
            format!(
                "Redis Cluster at {}: no node told which node serves which slot ({})",
                link.name,
                reasons.join("; ")
            ),
        ))
    }

    /// The slot map as `node` tells it, or why not.
    fn slot_map_of(&self, link: &Link<'_>, node: &Node) -> Result<SlotMap, String> {
        let reply = self.call_on(link, node, (link.read_timeout, false), &mut |session| {
            redis::cmd("CLUSTER").arg("SLOTS").query(session.connection)
        });
        let node_said = |what: &str| format!("{}: {what}", node_name(&node.0, node.1));
        match reply {
            Ok(reply) => SlotMap::from_reply(&reply, node)
                .ok_or_else(|| node_said("its CLUSTER SLOTS reply is not a slot list")),
            // The call's own error names the node already.
            Err(Failure::Run(error)) => Err(error.to_string()),
            Err(Failure::Redirect(_)) => Err(node_said("it redirected CLUSTER SLOTS")),
        }
    }
}
