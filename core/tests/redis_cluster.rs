//! The native Redis Cluster connection against three real redis-servers in cluster mode, joined
//! here with CLUSTER MEET and ADDSLOTSRANGE: each lock on the primary of its slot, a slot moved
//! under a held lock (MOVED) followed, a dead seed passed over, and names that cannot share their
//! slot with their companion keys refused before anything is sent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

mod support;

use std::time::{Duration, Instant};

use deadbolt_core::{Error, Key, Mode, NativeTransport, RedisStore, Store, Ttl};
use support::{unique, RedisServer};

/// Three primaries, each serving a third of the slots.
struct Cluster {
    nodes: Vec<RedisServer>,
}

impl Cluster {
    fn start() -> Self {
        let nodes: Vec<RedisServer> = (0..3)
            .map(|_| {
                RedisServer::start_with(&[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "5000",
                ])
            })
            .collect();
        let ranges = [(0, 5460), (5461, 10922), (10923, 16383)];
        for (node, (start, end)) in nodes.iter().zip(ranges) {
            let mut con = node.client();
            redis::cmd("CLUSTER")
                .arg("ADDSLOTSRANGE")
                .arg(start)
                .arg(end)
                .exec(&mut con)
                .unwrap();
            for other in nodes.iter().filter(|other| other.port != node.port) {
                redis::cmd("CLUSTER")
                    .arg("MEET")
                    .arg("127.0.0.1")
                    .arg(other.port)
                    .exec(&mut con)
                    .unwrap();
            }
        }
        let cluster = Cluster { nodes };
        cluster.until("every node sees the cluster ok", |c| {
            c.nodes.iter().all(|node| {
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query(&mut node.client())
                    .unwrap();
                info.contains("cluster_state:ok") && info.contains("cluster_known_nodes:3")
            })
        });
        cluster
    }

    fn until(&self, what: &str, done: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done(self) {
            assert!(Instant::now() < deadline, "gave up waiting until {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn dsn(&self) -> String {
        format!(
            "redis:?host[127.0.0.1:{}]&redis_cluster=1",
            self.nodes[0].port
        )
    }

    fn slot(&self, key: &str) -> u16 {
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut self.nodes[0].client())
            .unwrap()
    }

    fn id(&self, node: usize) -> String {
        redis::cmd("CLUSTER")
            .arg("MYID")
            .query(&mut self.nodes[node].client())
            .unwrap()
    }

    /// The node serving `slot`, as the cluster says (CLUSTER SLOTS).
    fn owner(&self, slot: u16) -> usize {
        // Each range: start, end, then the primary as [host, port, id, ...].
        let ranges: Vec<(u16, u16, u16)> = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query::<Vec<Vec<redis::Value>>>(&mut self.nodes[0].client())
            .unwrap()
            .into_iter()
            .map(|range| {
                let number = |value: &redis::Value| -> u16 {
                    redis::from_redis_value(value.clone()).unwrap()
                };
                let redis::Value::Array(primary) = &range[2] else {
                    panic!("not a node: {:?}", range[2]);
                };
                (number(&range[0]), number(&range[1]), number(&primary[1]))
            })
            .collect();
        let (_, _, port) = ranges
            .iter()
            .find(|(start, end, _)| (*start..=*end).contains(&slot))
            .unwrap();
        self.nodes.iter().position(|n| n.port == *port).unwrap()
    }

    /// Whether the node serving `key`'s slot has it.
    fn held(&self, key: &str) -> bool {
        self.exists(self.owner(self.slot(key)), key)
    }

    fn exists(&self, node: usize, key: &str) -> bool {
        redis::cmd("EXISTS")
            .arg(key)
            .query::<i64>(&mut self.nodes[node].client())
            .unwrap()
            == 1
    }

    /// Moves `slot` and its keys from node `from` to node `to`, as `redis-cli --cluster reshard`.
    fn move_slot(&self, slot: u16, from: usize, to: usize) {
        let (from_id, to_id) = (self.id(from), self.id(to));
        let setslot = |node: usize, how: &str, id: &str| {
            redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg(how)
                .arg(id)
                .exec(&mut self.nodes[node].client())
                .unwrap();
        };
        setslot(to, "IMPORTING", &from_id);
        setslot(from, "MIGRATING", &to_id);
        let mut source = self.nodes[from].client();
        let keys: Vec<String> = redis::cmd("CLUSTER")
            .arg("GETKEYSINSLOT")
            .arg(slot)
            .arg(100)
            .query(&mut source)
            .unwrap();
        for key in keys {
            redis::cmd("MIGRATE")
                .arg("127.0.0.1")
                .arg(self.nodes[to].port)
                .arg(key)
                .arg(0)
                .arg(5000)
                .exec(&mut source)
                .unwrap();
        }
        for node in 0..self.nodes.len() {
            setslot(node, "NODE", &to_id);
        }
    }
}

fn ttl(secs: f64) -> Ttl {
    Ttl::from_secs(secs).unwrap()
}

fn store(dsn: &str) -> RedisStore<NativeTransport> {
    RedisStore::connect(dsn, ttl(30.0)).unwrap()
}

#[test]
fn each_lock_lives_on_the_primary_of_its_slot_and_follows_a_moved_slot() {
    let cluster = Cluster::start();
    let store = store(&cluster.dsn());
    let mut used = [false; 3];
    for i in 0..20 {
        let resource = unique(&format!("spread-{i}"));
        let mut key = Key::new(resource.clone());
        store.save(&mut key, Mode::Exclusive, None).unwrap();
        let owner = cluster.owner(cluster.slot(&resource));
        assert!(
            cluster.exists(owner, &resource),
            "{resource} on its slot's primary"
        );
        used[owner] = true;
        store.delete(&mut key).unwrap();
        assert!(!cluster.exists(owner, &resource));
    }
    assert!(
        used.iter().filter(|u| **u).count() >= 2,
        "several nodes used"
    );

    let resource = unique("moving");
    let mut key = Key::new(resource.clone());
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    let slot = cluster.slot(&resource);
    let from = cluster.owner(slot);
    let to = (from + 1) % 3;
    cluster.move_slot(slot, from, to);
    assert!(store.exists(&key).unwrap(), "found on the new primary");
    store.put_off_expiration(&mut key, ttl(60.0)).unwrap();
    let rival = self::store(&cluster.dsn());
    let mut theirs = Key::new(resource.clone());
    assert!(matches!(
        rival.save(&mut theirs, Mode::Exclusive, None),
        Err(Error::Conflict { .. })
    ));
    store.delete(&mut key).unwrap();
    assert_eq!(cluster.owner(slot), to, "the cluster says the slot moved");
    assert!(!cluster.held(&resource), "released on the new primary");
    rival.save(&mut theirs, Mode::Exclusive, None).unwrap();
    assert!(
        cluster.exists(to, &resource),
        "taken again on the new primary"
    );
}

#[test]
fn a_seed_that_is_down_is_passed_over() {
    let cluster = Cluster::start();
    let mut dead = RedisServer::start();
    let dead_port = dead.port;
    dead.stop();
    let dsn = format!(
        "redis:?host[127.0.0.1:{dead_port}]&host[127.0.0.1:{}]&redis_cluster=1&timeout=1",
        cluster.nodes[1].port
    );
    let store = store(&dsn);
    let mut key = Key::new(unique("seeded"));
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    assert!(store.exists(&key).unwrap());
    store.delete(&mut key).unwrap();
}

#[test]
fn names_that_cannot_share_their_slot_are_refused_before_anything_is_sent() {
    let cluster = Cluster::start();
    let store = store(&cluster.dsn());
    for resource in ["a{b", "a}b", "a{}b", ""] {
        let mut key = Key::new(resource.to_owned());
        match store.save(&mut key, Mode::Exclusive, None) {
            Err(Error::InvalidArgument { message }) => {
                assert!(message.contains("Redis Cluster"), "{message}")
            }
            other => panic!("{resource:?}: {other:?}"),
        }
        assert!(!cluster.held(resource), "{resource:?} written");
    }
    let mut tagged = Key::new("{x}a{b".to_owned());
    store.save(&mut tagged, Mode::Exclusive, None).unwrap();
    store.delete(&mut tagged).unwrap();
}

/// Issue 25, item 13: a node the slot map names that refuses connections was reported as the
/// seed's failure ("Redis at <seed>: the connection was refused"), never naming the node.
#[test]
fn a_node_of_the_slot_map_that_refuses_connections_is_named() {
    let mut cluster = Cluster::start();
    let seed = cluster.nodes[0].port;
    let store = store(&format!(
        "redis:?host[127.0.0.1:{seed}]&redis_cluster=1&timeout=1"
    ));
    // A resource whose slot lives on another node than the seed.
    let resource = (0..)
        .map(|i| unique(&format!("elsewhere-{i}")))
        .find(|r| cluster.owner(cluster.slot(r)) == 2)
        .unwrap();
    let mut warm = Key::new(unique("warm"));
    store.save(&mut warm, Mode::Exclusive, None).unwrap();
    store.delete(&mut warm).unwrap();
    let dead = cluster.nodes[2].port;
    cluster.nodes[2].stop();

    let mut key = Key::new(resource);
    let error = store
        .save(&mut key, Mode::Exclusive, None)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(&format!("node 127.0.0.1:{dead}")),
        "the failed node is named: {error}"
    );
}

#[test]
fn an_operators_listing_scans_every_primary() {
    let cluster = Cluster::start();
    let store = store(&cluster.dsn());
    let prefix = unique("listed");
    let mut keys = Vec::new();
    let mut nodes = [false; 3];
    for i in 0..12 {
        let resource = format!("{prefix}:{i}");
        nodes[cluster.owner(cluster.slot(&resource))] = true;
        let mut key = Key::new(resource);
        store.save(&mut key, Mode::Exclusive, None).unwrap();
        keys.push(key);
    }
    assert!(nodes.iter().all(|n| *n), "the locks live on every primary");
    let listed = store.list(format!("{prefix}:").as_bytes()).unwrap();
    assert_eq!(listed.len(), 12, "{listed:?}");
    assert!(listed
        .iter()
        .all(|(_, state)| state.holders[0].origin.pid == Some(std::process::id())));
}
