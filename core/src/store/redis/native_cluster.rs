//! A Redis Cluster DSN's native connections (`native.rs`): this process's slot map and one
//! connection per node, each a [`Slot`] of the process's table like a single server's (so the
//! deadline, the reconnect-once rule, the eviction check and fork safety are the same). Every call
//! goes to the node serving its first key's hash slot (all of a lock's keys share it, `keys.rs`)
//! and follows the redirects the nodes answer with (`cluster.rs`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::{Call, Failure, NativeTransport};
use crate::process::PerProcess;
use crate::store::redis::cluster::{Node, Redirect, SlotMap, MAX_HOPS};
use crate::store::redis::connections::{slot_for, Slot};
use crate::store::redis::dsn::{host_port, Dsn, Endpoint};
use crate::store::redis::keys;
use crate::store::redis::transport::{RunError, RunErrorKind};
use crate::store::redis::wording::node_name;

/// How often a call asks again a slot being migrated (`TRYAGAIN`), after 10, 20, 40, 80 and
/// 160 ms: a slot holding a few lock keys migrates in milliseconds.
const MAX_PAUSES: usize = 5;

/// The cluster of one DSN: its seed nodes, and what this process knows of it.
pub(super) struct ClusterLinks {
    seeds: Vec<Node>,
    /// Per process: a forked child reads the map anew and opens its own connections.
    state: PerProcess<Mutex<State>>,
}

#[derive(Default)]
struct State {
    map: SlotMap,
    /// Whether `map` was read from the cluster and nothing has said it changed since (a `MOVED`
    /// or a node that failed makes it stale: it is read again before the next use).
    current: bool,
    /// The connection to each node, by address.
    links: HashMap<Node, Arc<Mutex<Slot>>>,
}

impl ClusterLinks {
    /// The cluster of `dsn`, or `None` when it names a single server or a Sentinel service.
    pub(super) fn for_dsn(dsn: &Dsn) -> Option<Self> {
        match &dsn.endpoint {
            Endpoint::Cluster { seeds, .. } => Some(ClusterLinks {
                seeds: seeds.clone(),
                state: PerProcess::new(),
            }),
            _ => None,
        }
    }

    fn state(&self) -> &Mutex<State> {
        self.state.get_or_init(Mutex::default)
    }

    /// The connection slot for `node`, named after the transport's own (`slot_name`).
    /// Looked up before anything is made: this runs on every call, the making once per node.
    fn link(&self, node: &Node, slot_name: &str) -> Arc<Mutex<Slot>> {
        let mut state = self.state().lock();
        if let Some(link) = state.links.get(node) {
            return Arc::clone(link);
        }
        let link = slot_for(&format!("{slot_name}@{}", host_port(&node.0, node.1)));
        state.links.insert(node.clone(), Arc::clone(&link));
        link
    }

    /// A warning one of the nodes gave while connecting (an evicting policy), once.
    pub(super) fn take_warning(&self) -> Option<String> {
        let links: Vec<_> = self.state().lock().links.values().cloned().collect();
        links.iter().find_map(|link| link.lock().warning.take())
    }
}

impl NativeTransport {
    /// Runs `call` on the node serving `route`'s hash slot: a `MOVED` points the slot elsewhere
    /// and the call goes there, an `ASK` sends it once to the node named, after `ASKING`; a node
    /// that cannot be reached (killed, paused, failed over) has the map read again from the
    /// others, and the call goes to the slot's new primary if there is one.
    pub(super) fn routed<T>(
        &self,
        cluster: &ClusterLinks,
        route: &[u8],
        wait: Duration,
        call: &mut Call<'_, T>,
    ) -> Result<T, RunError> {
        let slot = keys::slot(route);
        let mut ask: Option<Node> = None;
        let mut failed_over = false;
        let mut pauses = 0;
        let mut hops = 0;
        while hops <= MAX_HOPS {
            let asking = ask.is_some();
            let node = match ask.take() {
                Some(node) => node,
                None => self.node_for(cluster, slot, None)?,
            };
            let link = cluster.link(&node, &self.slot_name);
            match self.on_slot(&link, Some(&node), wait, asking, call) {
                Ok(reply) => return Ok(reply),
                Err(Failure::Redirect(Redirect::Moved { slot, node })) => {
                    let mut state = cluster.state().lock();
                    state.map.point(slot, node);
                    state.current = false;
                    hops += 1;
                }
                Err(Failure::Redirect(Redirect::Ask { node })) => {
                    ask = Some(node);
                    hops += 1;
                }
                // The slot is being migrated (TRYAGAIN: the script's keys are not all on one
                // node yet) or has no primary for a moment: ask again shortly, as long as the
                // deadline allows; after that a wait rides it out like a server still loading.
                Err(Failure::Run(error)) if error.kind() == RunErrorKind::Loading => {
                    let pause = Duration::from_millis(10 << pauses);
                    if pauses == MAX_PAUSES || self.capped(pause) < pause {
                        return Err(error);
                    }
                    pauses += 1;
                    hops = 0;
                    std::thread::sleep(pause);
                }
                Err(Failure::Run(error)) => {
                    let unreachable = matches!(
                        error.kind(),
                        RunErrorKind::Connection | RunErrorKind::TimedOut
                    );
                    if !unreachable || failed_over {
                        return Err(error);
                    }
                    // Once per call: a lock script runs again only on another node, where
                    // it is new (and idempotent for its token in any case).
                    failed_over = true;
                    cluster.state().lock().current = false;
                    match self.node_for(cluster, slot, Some(&node)) {
                        Ok(next) if next != node => {}
                        // The others answered and still name that node: its replica has not
                        // been promoted yet. Like a server still loading, a wait rides this out
                        // until its deadline; a caller that does not wait is told why.
                        Ok(_) if error.kind() == RunErrorKind::Connection => {
                            return Err(RunError::new(
                                RunErrorKind::Loading,
                                format!(
                                    "{error} (no other node serves its hash slot yet: a \
                                     failover may be under way)"
                                ),
                            ))
                        }
                        _ => return Err(error),
                    }
                }
            }
        }
        Err(RunError::new(
            RunErrorKind::Server,
            format!(
                "Redis at {}: more than {MAX_HOPS} redirects for one command: the cluster's \
                 nodes do not agree on who serves hash slot {slot}",
                self.name
            ),
        ))
    }

    /// The primary serving `slot`, from the map, read again first when it is not current.
    /// `failed` is asked last (it just failed to answer).
    fn node_for(
        &self,
        cluster: &ClusterLinks,
        slot: u16,
        failed: Option<&Node>,
    ) -> Result<Node, RunError> {
        let (current, known) = {
            let state = cluster.state().lock();
            (state.current, state.map.node_for(slot).cloned())
        };
        if let (true, Some(node)) = (current, &known) {
            return Ok(node.clone());
        }
        match self.read_slot_map(cluster, failed) {
            Ok(()) => cluster
                .state()
                .lock()
                .map
                .node_for(slot)
                .cloned()
                .ok_or_else(|| {
                    RunError::new(
                        RunErrorKind::Connection,
                        format!(
                            "Redis at {}: no node of the cluster serves hash slot {slot} \
                             (CLUSTER SLOTS)",
                            self.name
                        ),
                    )
                }),
            // The map as it was still names a node: let the call find out.
            Err(error) => known.ok_or(error),
        }
    }

    /// Reads the slot map (`CLUSTER SLOTS`) from the first node that answers: the primaries
    /// known, then the seeds, `failed` last.
    fn read_slot_map(&self, cluster: &ClusterLinks, failed: Option<&Node>) -> Result<(), RunError> {
        let known = cluster.state().lock().map.nodes().to_vec();
        let mut candidates: Vec<Node> = Vec::new();
        for node in known.iter().chain(&cluster.seeds) {
            if Some(node) != failed && !candidates.contains(node) {
                candidates.push(node.clone());
            }
        }
        candidates.extend(failed.cloned());
        let mut reasons = Vec::new();
        for node in &candidates {
            let link = cluster.link(node, &self.slot_name);
            let reply = self.on_slot(
                &link,
                Some(node),
                self.dsn.read_timeout,
                false,
                &mut |connection, _, _| redis::cmd("CLUSTER").arg("SLOTS").query(connection),
            );
            let node_said = |what: &str| format!("{}: {what}", node_name(&node.0, node.1));
            let reason = match reply {
                Ok(reply) => match SlotMap::from_reply(&reply, node) {
                    Some(map) => {
                        let mut state = cluster.state().lock();
                        state.map = map;
                        state.current = true;
                        return Ok(());
                    }
                    None => node_said("its CLUSTER SLOTS reply is not a slot list"),
                },
                // The call's own error names the node already.
                Err(Failure::Run(error)) => error.to_string(),
                Err(Failure::Redirect(_)) => node_said("it redirected CLUSTER SLOTS"),
            };
            reasons.push(reason);
        }
        Err(RunError::new(
            RunErrorKind::Connection,
            format!(
                "Redis Cluster at {}: no node told which node serves which slot ({})",
                self.name,
                reasons.join("; ")
            ),
        ))
    }
}
