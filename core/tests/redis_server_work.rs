//! The work Redis does for each case of a lock's life: the commands Deadbolt's scripts call,
//! counted by `INFO commandstats` on a private redis-server. Server work per lock is what the
//! common cases were shaped by (bench/README.md, "Scripts or functions" and "The hand-over"): a
//! command added to one of them shows here, with the list to compare against.
#![allow(clippy::unwrap_used)] // tests: an unwrap failing is the test failing

mod support;

use std::collections::BTreeMap;

use deadbolt_core::{Key, Mode, NativeTransport, RedisStore, Store, Ttl};
use support::wait_keys::queue_by_hand;
use support::{unique, RedisServer};

/// Commands by name and how often they ran, without what a client sends to run a script or to
/// measure (EVALSHA, SCRIPT, CONFIG, INFO).
type Commands = BTreeMap<String, u64>;

/// A private server, a connection to count on, and a store whose scripts are loaded before
/// counting starts (a cycle on a name of its own). Keep it whole while the test runs: the server
/// stops when it is dropped.
struct Counting {
    _redis: RedisServer,
    con: redis::Connection,
    store: RedisStore<NativeTransport>,
}

impl Counting {
    fn start() -> Self {
        let redis = RedisServer::start();
        let con = redis.client();
        let store = RedisStore::connect(&redis.url(), Ttl::from_secs(300.0).unwrap()).unwrap();
        let mut key = Key::new(unique("warm-up"));
        store.save(&mut key, Mode::Exclusive, None).unwrap();
        store.delete(&mut key).unwrap();
        Counting {
            _redis: redis,
            con,
            store,
        }
    }

    /// A resource named after `name` (unique), and the key of the store's that holds it.
    fn held(&self, name: &str) -> (String, Key) {
        let resource = unique(name);
        let mut holder = Key::new(resource.clone());
        self.store.save(&mut holder, Mode::Exclusive, None).unwrap();
        (resource, holder)
    }

    /// What the server runs for `step`, counted from a fresh CONFIG RESETSTAT.
    fn counted(&mut self, step: impl FnOnce(&RedisStore<NativeTransport>)) -> Commands {
        redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .exec(&mut self.con)
            .unwrap();
        step(&self.store);
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut self.con)
            .unwrap();
        info.lines()
            .filter_map(|line| {
                let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
                let calls = rest.strip_prefix("calls=")?.split(',').next()?;
                Some((name.to_owned(), calls.parse().ok()?))
            })
            .filter(|(name, _)| {
                !["evalsha", "info"].contains(&name.as_str())
                    && !name.starts_with("config")
                    && !name.starts_with("script")
            })
            .collect()
    }
}

fn commands(list: &[(&str, u64)]) -> Commands {
    list.iter()
        .map(|(name, n)| ((*name).to_owned(), *n))
        .collect()
}

#[test]
fn a_free_lock_and_a_release_nobody_waits_for_run_ten_commands() {
    let mut server = Counting::start();
    let mut key = Key::new(unique("common"));

    let acquire = server.counted(|store| store.save(&mut key, Mode::Exclusive, None).unwrap());
    let release = server.counted(|store| store.delete(&mut key).unwrap());

    // The server's clock, the lock (ZADD, PEXPIREAT) and its holder's record (HSET, PEXPIREAT).
    assert_eq!(
        acquire,
        commands(&[
            ("type", 1),
            ("time", 1),
            ("zadd", 1),
            ("hset", 1),
            ("pexpireat", 2),
        ])
    );
    // Mine? Out; anyone waiting or a hand-over recorded? No: the record goes.
    assert_eq!(
        release,
        commands(&[("zscore", 1), ("zrem", 1), ("exists", 1), ("del", 1)])
    );
}

#[test]
fn a_refused_attempt_that_does_not_wait_asks_nothing_twice() {
    let mut server = Counting::start();
    let (resource, _holder) = server.held("refused");
    let mut other = Key::new(resource);

    let refused = server.counted(|store| {
        assert!(store.save(&mut other, Mode::Exclusive, None).is_err());
    });

    // Nothing expired (ZREMRANGEBYSCORE removed none), so the set is still there: no ZCARD.
    assert_eq!(
        refused,
        commands(&[
            ("type", 1),
            ("time", 1),
            ("zremrangebyscore", 1),
            ("zscore", 1),
            ("pttl", 1),
        ])
    );
}

#[test]
fn a_release_that_hands_the_lock_over_asks_nothing_twice() {
    let mut server = Counting::start();
    let (resource, mut holder) = server.held("hand-over");
    queue_by_hand(&mut server.con, &resource, "waiter-token", "x", 60_000);

    let release = server.counted(|store| store.delete(&mut holder).unwrap());

    // release_alone.lua's look (ZSCORE, ZREM, EXISTS) is not repeated by the hand-over; the
    // writer's release left no key to look at, and the queue is read once (ZRANGE).
    assert_eq!(
        release,
        commands(&[
            ("zscore", 1),
            ("zrem", 2),    // my token; the waiter from the queue
            ("exists", 1),  // anyone waiting, or a hand-over recorded
            ("del", 1),     // my record
            ("hdel", 2),    // a hand-over to me; the waiter's details
            ("zrange", 1),  // the queue's head
            ("time", 1),    // the waiter's expiry
            ("hget", 2),    // its details; the record it left
            ("zadd", 1),    // the lock, now its
            ("hset", 2),    // its holder record; the hand-over's record
            ("pexpire", 2), // the hand-over records; its grant list
            ("lpush", 1),   // the signal
            ("pexpireat", 2),
        ])
    );
}
