//! Redis Cluster for the native connection: which node serves a hash slot, and the redirects a
//! node answers with when it does not (`MOVED`: the slot lives elsewhere now; `ASK`: this one
//! key is being moved, ask that node once).
//!
//! The routing is ours and the connections are the same bounded single-server connections as
//! everywhere else (`native/router.rs` keeps one per node), not redis-rs's `ClusterConnection`: its
//! blocking client retries a command that timed out, immediately and up to its retry count, so
//! one call could outlast a deadline several times over, and it sends `WAIT` to every primary,
//! where an acknowledgement must be asked on the connection that wrote the lock. redis-rs still
//! reads the redirects (`RedisError::redirect_node`) and speaks the protocol.

use crate::store::redis::keys::SLOTS;

/// A node, as `(host, port)`.
pub type Node = (String, u16);

/// How many redirects one call follows before it gives up: a migration answers `ASK` once, a
/// failover or a resharding `MOVED` once; more means the nodes disagree on who serves the slot.
pub const MAX_HOPS: usize = 5;

/// Which primary serves each hash slot, as last learned.
pub struct SlotMap {
    /// Distinct primaries, in the order first seen.
    nodes: Vec<Node>,
    /// For each slot, an index into `nodes`, or [`UNKNOWN`].
    owner: Vec<u16>,
}

const UNKNOWN: u16 = u16::MAX;

impl Default for SlotMap {
    fn default() -> Self {
        SlotMap {
            nodes: Vec::new(),
            owner: vec![UNKNOWN; usize::from(SLOTS)],
        }
    }
}

impl SlotMap {
    /// The map in a `CLUSTER SLOTS` reply (ranges of slots, each with its primary first), asked
    /// of `asked`: a primary listed without a host (`""` or `"?"`, a node that does not know its
    /// own address) is the node asked. `None` when the reply is not such a list, or when its
    /// ranges cover more than the cluster's slots (they overlap: no cluster answers that, and a
    /// hostile node's 2,000 ranges of every slot each would cost 32 million writes): reading a
    /// map costs time linear in the reply.
    pub fn from_reply(reply: &redis::Value, asked: &Node) -> Option<SlotMap> {
        let redis::Value::Array(ranges) = reply else {
            return None;
        };
        let mut map = SlotMap::default();
        let mut indexes: rustc_hash::FxHashMap<Node, u16> = rustc_hash::FxHashMap::default();
        let mut covered = 0usize;
        for range in ranges {
            let redis::Value::Array(parts) = range else {
                return None;
            };
            let (start, end) = (slot_number(parts.first()?)?, slot_number(parts.get(1)?)?);
            covered += usize::from(end.checked_sub(start)?) + 1;
            if covered > usize::from(SLOTS) {
                return None;
            }
            let primary = node(parts.get(2)?, asked)?;
            let index = match indexes.get(&primary) {
                Some(index) => *index,
                None => {
                    // New to this reply, so new to the map being built: no search.
                    let index = u16::try_from(map.nodes.len()).ok()?;
                    map.nodes.push(primary.clone());
                    indexes.insert(primary, index);
                    index
                }
            };
            map.owner[usize::from(start)..=usize::from(end)].fill(index);
        }
        Some(map)
    }

    /// The primary that serves `slot`, when known.
    pub fn node_for(&self, slot: u16) -> Option<&Node> {
        let index = *self.owner.get(usize::from(slot))?;
        self.nodes.get(usize::from(index))
    }

    /// Records that `node` serves `slot` (a `MOVED` redirect).
    pub fn point(&mut self, slot: u16, node: Node) {
        if let (Some(index), true) = (self.index_of(node), usize::from(slot) < self.owner.len()) {
            self.owner[usize::from(slot)] = index;
        }
    }

    /// `node`'s index in `nodes`, added when new; `None` once the index would be [`UNKNOWN`].
    fn index_of(&mut self, node: Node) -> Option<u16> {
        let index = match self.nodes.iter().position(|known| *known == node) {
            Some(index) => index,
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        };
        u16::try_from(index).ok().filter(|index| *index != UNKNOWN)
    }

    /// The primaries this map names, in the order first seen.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }
}

fn slot_number(value: &redis::Value) -> Option<u16> {
    match value {
        redis::Value::Int(n) => u16::try_from(*n).ok().filter(|n| *n < SLOTS),
        _ => None,
    }
}

/// A node entry of `CLUSTER SLOTS`: host, port, then the node id and more.
fn node(value: &redis::Value, asked: &Node) -> Option<Node> {
    let redis::Value::Array(parts) = value else {
        return None;
    };
    let host = match parts.first()? {
        redis::Value::BulkString(host) => String::from_utf8(host.clone()).ok()?,
        redis::Value::SimpleString(host) => host.clone(),
        _ => return None,
    };
    let port = match parts.get(1)? {
        redis::Value::Int(port) => u16::try_from(*port).ok()?,
        _ => return None,
    };
    if host.is_empty() || host == "?" {
        return Some((asked.0.clone(), port));
    }
    Some((host, port))
}

/// Where a node sent a command instead of running it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redirect {
    /// The slot is served by `node` now: remember it and ask there.
    Moved { slot: u16, node: Node },
    /// This key is being migrated to `node`: ask there once, after `ASKING`.
    Ask { node: Node },
}

impl Redirect {
    /// The redirect in `error`, if it is one (also inside a pipeline's error).
    pub fn of(error: &redis::RedisError) -> Option<Redirect> {
        let (address, slot) = error.redirect_node()?;
        let node = split_address(address)?;
        match error.kind() {
            redis::ErrorKind::Server(redis::ServerErrorKind::Ask) => Some(Redirect::Ask { node }),
            _ => Some(Redirect::Moved { slot, node }),
        }
    }

    /// The node to ask next.
    pub fn node(&self) -> &Node {
        match self {
            Redirect::Moved { node, .. } | Redirect::Ask { node } => node,
        }
    }
}

/// `host:port` (an IPv6 host in brackets or not) as a node.
fn split_address(address: &str) -> Option<Node> {
    let (host, port) = address.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Some((host.to_owned(), port.parse().ok().filter(|p| *p > 0)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value;

    fn node_entry(host: &str, port: i64) -> Value {
        Value::Array(vec![
            Value::BulkString(host.as_bytes().to_vec()),
            Value::Int(port),
            Value::BulkString(b"0123abcd".to_vec()),
        ])
    }

    fn range(start: i64, end: i64, primary: Value, replicas: Vec<Value>) -> Value {
        let mut parts = vec![Value::Int(start), Value::Int(end), primary];
        parts.extend(replicas);
        Value::Array(parts)
    }

    fn asked() -> Node {
        ("10.0.0.9".to_owned(), 7000)
    }

    #[test]
    fn a_cluster_slots_reply_names_the_primary_of_every_slot() {
        let reply = Value::Array(vec![
            range(
                0,
                5460,
                node_entry("10.0.0.1", 7000),
                vec![node_entry("10.0.0.4", 7003)],
            ),
            range(5461, 10922, node_entry("10.0.0.2", 7001), vec![]),
            range(10923, 16383, node_entry("", 7002), vec![]),
        ]);
        let map = SlotMap::from_reply(&reply, &asked()).unwrap();
        assert_eq!(map.node_for(0), Some(&("10.0.0.1".to_owned(), 7000)));
        assert_eq!(map.node_for(5460), Some(&("10.0.0.1".to_owned(), 7000)));
        assert_eq!(map.node_for(5461), Some(&("10.0.0.2".to_owned(), 7001)));
        assert_eq!(
            map.node_for(16383),
            Some(&("10.0.0.9".to_owned(), 7002)),
            "a primary without a host is the node asked"
        );
        assert_eq!(map.nodes().len(), 3, "replicas are not routed to");
    }

    #[test]
    fn slots_nobody_serves_are_unknown_and_a_moved_slot_is_pointed_elsewhere() {
        let reply = Value::Array(vec![range(0, 99, node_entry("a", 1), vec![])]);
        let mut map = SlotMap::from_reply(&reply, &asked()).unwrap();
        assert_eq!(map.node_for(100), None);
        map.point(50, ("b".to_owned(), 2));
        assert_eq!(map.node_for(50), Some(&("b".to_owned(), 2)));
        assert_eq!(map.node_for(49), Some(&("a".to_owned(), 1)));
    }

    #[test]
    fn replies_that_are_no_slot_list_are_refused() {
        assert!(SlotMap::from_reply(&Value::Okay, &asked()).is_none());
        let out_of_range = Value::Array(vec![range(0, 70000, node_entry("a", 1), vec![])]);
        assert!(SlotMap::from_reply(&out_of_range, &asked()).is_none());
    }

    /// Issue 25, item 7: a node answering 2,000 ranges of every slot each made a map read take
    /// 32 million slot writes (seconds; 10,000 ranges over a minute). Overlapping ranges are
    /// refused, and a map of one-slot ranges on distinct nodes is read in time linear in it.
    #[test]
    fn overlapping_ranges_are_refused_and_a_map_costs_time_linear_in_its_size() {
        let hostile = Value::Array(
            (0..2000)
                .map(|i| range(0, 16383, node_entry(&format!("h{i}"), 1), vec![]))
                .collect(),
        );
        assert!(SlotMap::from_reply(&hostile, &asked()).is_none());
        let fine_grained = Value::Array(
            (0..16384)
                .map(|slot| range(slot, slot, node_entry(&format!("h{slot}"), 1), vec![]))
                .collect(),
        );
        let map = SlotMap::from_reply(&fine_grained, &asked()).unwrap();
        assert_eq!(map.node_for(16383), Some(&("h16383".to_owned(), 1)));
        assert_eq!(map.nodes().len(), 16384);
        let backwards = Value::Array(vec![range(10, 5, node_entry("a", 1), vec![])]);
        assert!(SlotMap::from_reply(&backwards, &asked()).is_none());
    }

    #[test]
    fn addresses_split_into_host_and_port() {
        assert_eq!(
            split_address("127.0.0.1:7001"),
            Some(("127.0.0.1".to_owned(), 7001))
        );
        assert_eq!(split_address("[::1]:7001"), Some(("::1".to_owned(), 7001)));
        assert_eq!(split_address("::1:7001"), Some(("::1".to_owned(), 7001)));
        assert_eq!(split_address("host"), None);
        assert_eq!(split_address("host:0"), None);
    }
}
