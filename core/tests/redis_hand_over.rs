//! Hand-over in the Redis store against a real redis-server: a release that leaves the lock free
//! gives it to the longest live waiter (all waiting readers together), skips waiters not seen
//! alive, and a waiter that gives up leaves the queue.
#![allow(clippy::unwrap_used)] // tests: an unwrap failing is the test failing

mod support;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use deadbolt_core::{
    BlockingStore, Key, Mode, NativeTransport, RedisStore, Store, Ttl, WaitReport,
};
use support::wait_keys::{
    details, grant, handovers, queue, queue_by_hand, server_ms, until_queued,
};
use support::{unique, RedisServer};

fn ttl(secs: f64) -> Ttl {
    Ttl::from_secs(secs).unwrap()
}

/// A store on a connection of its own: the DSN text differs, so the per-process connection
/// slot does too (as in another process).
fn own_store(redis: &RedisServer, n: u32) -> RedisStore<NativeTransport> {
    store_at(&redis.url(), n)
}

fn store_at(url: &str, n: u32) -> RedisStore<NativeTransport> {
    RedisStore::connect(&format!("{url}?timeout={}", 5 + n), ttl(300.0)).unwrap()
}

/// A fresh server, a connection to inspect it, and a store whose `holder` holds `name` (unique).
/// Keep it whole while the test runs: the server stops when `redis` is dropped.
struct Held {
    redis: RedisServer,
    con: redis::Connection,
    store: RedisStore<NativeTransport>,
    resource: String,
    holder: Key,
}

fn held(name: &str, holder_ttl: Option<Ttl>) -> Held {
    let redis = RedisServer::start();
    let con = redis.client();
    let store = own_store(&redis, 0);
    let resource = unique(name);
    let mut holder = Key::new(resource.clone());
    store
        .save(&mut holder, Mode::Exclusive, holder_ttl)
        .unwrap();
    Held {
        redis,
        con,
        store,
        resource,
        holder,
    }
}

/// How many of `keys` exist.
fn existing(con: &mut redis::Connection, keys: &[String]) -> usize {
    redis::cmd("EXISTS").arg(keys).query(con).unwrap()
}

fn members(con: &mut redis::Connection, resource: &str) -> Vec<String> {
    let mut members: Vec<String> = redis::cmd("ZRANGE")
        .arg(resource)
        .arg(0)
        .arg(-1)
        .query(con)
        .unwrap();
    members.sort();
    members
}

/// A waiting thread: where its outcome (token, taken, report) arrives, how to tell it to release,
/// and the thread.
type Waiter = (
    mpsc::Receiver<(String, bool, WaitReport)>,
    mpsc::Sender<()>,
    thread::JoinHandle<()>,
);

/// A waiter on a thread of its own, with store number `n`: reports (token, taken, wakeups) once
/// its wait ends, then holds the lock until told to release it.
fn spawn_waiter(redis: &RedisServer, n: u32, resource: String, patience: Duration) -> Waiter {
    let (report_tx, report_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let url = redis.url();
    let handle = thread::spawn(move || {
        let store = store_at(&url, n);
        let mut key = Key::new(resource);
        let mut report = WaitReport::default();
        let deadline = Instant::now() + patience;
        let taken = store
            .wait(&mut key, Mode::Exclusive, None, Some(deadline), &mut report)
            .unwrap();
        let token = key.token().unwrap().as_str().to_owned();
        report_tx.send((token, taken, report)).unwrap();
        if taken {
            release_rx.recv().unwrap();
            store.delete(&mut key).unwrap();
        }
    });
    (report_rx, release_tx, handle)
}

#[test]
fn a_release_hands_the_lock_to_the_longest_waiter_then_to_the_next() {
    let mut h = held("hand-over", None);
    let (first, release_first, first_thread) =
        spawn_waiter(&h.redis, 1, h.resource.clone(), Duration::from_secs(20));
    until_queued(&mut h.con, &h.resource, 1);
    let (second, release_second, second_thread) =
        spawn_waiter(&h.redis, 2, h.resource.clone(), Duration::from_secs(20));
    until_queued(&mut h.con, &h.resource, 2);

    h.store.delete(&mut h.holder).unwrap();
    let (first_token, taken, report) = first.recv().unwrap();
    assert!(taken, "the first waiter got the lock");
    assert_eq!(
        report.wakeups, 1,
        "handed over, not found by polling: {report:?}"
    );
    let mut expected = vec![first_token.clone(), "__write__".to_owned()];
    expected.sort();
    assert_eq!(members(&mut h.con, &h.resource), expected);
    assert!(
        second.try_recv().is_err(),
        "the second waiter still waits while the first holds the lock"
    );
    let mut newcomer = Key::new(h.resource.clone());
    assert!(
        h.store.save(&mut newcomer, Mode::Exclusive, None).is_err(),
        "nobody can take the lock while the first waiter holds it"
    );

    release_first.send(()).unwrap();
    let (second_token, taken, report) = second.recv().unwrap();
    assert!(taken, "the second waiter got the lock next");
    assert_eq!(report.wakeups, 1, "{report:?}");
    assert!(members(&mut h.con, &h.resource).contains(&second_token));
    release_second.send(()).unwrap();
    first_thread.join().unwrap();
    second_thread.join().unwrap();

    let leftovers = [
        h.resource.clone(),
        queue(&h.resource),
        grant(&h.resource, &first_token),
        grant(&h.resource, &second_token),
    ];
    assert_eq!(
        existing(&mut h.con, &leftovers),
        0,
        "the lock and the queue are gone after the last release"
    );
    // The record of the hand-overs lasts at most a second more.
    let pttl: i64 = redis::cmd("PTTL")
        .arg(details(&h.resource))
        .query(&mut h.con)
        .unwrap();
    assert!(pttl == -2 || (1..=1000).contains(&pttl), "{pttl}");
}

#[test]
fn a_release_gives_a_free_lock_to_a_live_queued_writer_with_its_ttl() {
    let mut h = held("grant", None);
    queue_by_hand(&mut h.con, &h.resource, "waiter-token", "x", 60_000);

    let before = server_ms(&mut h.con);
    h.store.delete(&mut h.holder).unwrap();

    assert_eq!(
        members(&mut h.con, &h.resource),
        vec!["__write__".to_owned(), "waiter-token".to_owned()]
    );
    let score: f64 = redis::cmd("ZSCORE")
        .arg(&h.resource)
        .arg("waiter-token")
        .query(&mut h.con)
        .unwrap();
    let expiry = score as i64 - before;
    assert!(
        (29_000..=31_000).contains(&expiry),
        "granted with the waiter's TTL (30 s), got {expiry} ms"
    );
    let signal: Vec<String> = redis::cmd("LRANGE")
        .arg(grant(&h.resource, "waiter-token"))
        .arg(0)
        .arg(-1)
        .query(&mut h.con)
        .unwrap();
    assert_eq!(signal, vec!["granted".to_owned()]);
    assert_eq!(
        existing(&mut h.con, &[queue(&h.resource)]),
        0,
        "the granted waiter left the queue"
    );
}

#[test]
fn waiting_readers_are_handed_the_lock_together_and_a_waiting_writer_keeps_its_place() {
    let mut h = held("readers", None);
    queue_by_hand(&mut h.con, &h.resource, "reader-1", "s", 60_000);
    queue_by_hand(&mut h.con, &h.resource, "writer", "x", 60_000);
    queue_by_hand(&mut h.con, &h.resource, "reader-2", "s", 60_000);

    h.store.delete(&mut h.holder).unwrap();

    assert_eq!(
        members(&mut h.con, &h.resource),
        vec!["reader-1".to_owned(), "reader-2".to_owned()],
        "readers are not blocked by a waiting writer"
    );
    assert_eq!(
        members(&mut h.con, &queue(&h.resource)),
        vec!["writer".to_owned()]
    );
}

#[test]
fn a_release_skips_waiters_not_seen_alive() {
    let mut h = held("ghost", None);
    queue_by_hand(&mut h.con, &h.resource, "ghost", "x", -1);

    h.store.delete(&mut h.holder).unwrap();

    let leftovers = [
        h.resource.clone(),
        queue(&h.resource),
        details(&h.resource),
        grant(&h.resource, "ghost"),
    ];
    assert_eq!(
        existing(&mut h.con, &leftovers),
        0,
        "the lock is free and the dead waiter forgotten"
    );
    let mut newcomer = Key::new(h.resource);
    h.store.save(&mut newcomer, Mode::Exclusive, None).unwrap();
}

#[test]
fn a_waiter_that_gives_up_leaves_the_queue_and_the_next_release_frees_the_lock() {
    let mut h = held("give-up", None);
    let (outcome, _release, waiter) =
        spawn_waiter(&h.redis, 1, h.resource.clone(), Duration::from_millis(300));
    let (_, taken, _) = outcome.recv().unwrap();
    waiter.join().unwrap();
    assert!(!taken, "the deadline passed while the lock was held");
    assert_eq!(
        members(&mut h.con, &queue(&h.resource)),
        Vec::<String>::new(),
        "the waiter left the queue"
    );

    h.store.delete(&mut h.holder).unwrap();
    assert_eq!(
        existing(&mut h.con, &[h.resource]),
        0,
        "nobody was handed the lock"
    );
}

#[test]
fn a_holder_that_expires_without_releasing_is_followed_by_its_waiter() {
    let h = held("expires", Some(ttl(0.3)));
    let (outcome, release, waiter) = spawn_waiter(&h.redis, 1, h.resource, Duration::from_secs(10));
    let (_, taken, report) = outcome.recv().unwrap();
    assert!(
        taken,
        "the waiter took the lock once the holder's TTL ran out"
    );
    assert_eq!(
        report.wakeups, 0,
        "nobody released, nobody handed over: {report:?}"
    );
    assert!(report.polls >= 1, "{report:?}");
    assert!(
        h.store.exists(&h.holder).is_ok_and(|held| !held),
        "the old holder no longer holds it"
    );
    release.send(()).unwrap();
    waiter.join().unwrap();
}

#[test]
fn a_hand_over_that_its_waiter_never_reads_is_taken_back() {
    let mut h = held("unread", None);
    // A waiter that asked a moment ago and died since: the release hands it the lock (30 s TTL).
    queue_by_hand(&mut h.con, &h.resource, "dead-waiter", "x", 60_000);
    h.store.delete(&mut h.holder).unwrap();
    assert!(members(&mut h.con, &h.resource).contains(&"dead-waiter".to_owned()));

    let (outcome, release, waiter) =
        spawn_waiter(&h.redis, 1, h.resource.clone(), Duration::from_secs(10));
    let (token, taken, report) = outcome.recv().unwrap();
    assert!(
        taken,
        "a live waiter took the unread hand-over back long before its 30 s TTL ({report:?})"
    );
    let mut expected = vec![token, "__write__".to_owned()];
    expected.sort();
    assert_eq!(members(&mut h.con, &h.resource), expected);
    assert_eq!(
        existing(&mut h.con, &[grant(&h.resource, "dead-waiter")]),
        0,
        "the unread signal is gone"
    );
    release.send(()).unwrap();
    waiter.join().unwrap();
}

#[test]
fn hand_over_records_go_with_the_locks_they_gave() {
    let mut h = held("records", None);
    // Twenty hand-overs in a row, each to a waiter with a token of its own (as every Lock has),
    // each released by its waiter in turn.
    for n in 0..20 {
        let waiter = format!("waiter-{n}");
        queue_by_hand(&mut h.con, &h.resource, &waiter, "x", 60_000);
        h.store.delete(&mut h.holder).unwrap();
        assert!(
            members(&mut h.con, &h.resource).contains(&waiter),
            "{waiter}"
        );
        h.holder = Key::import(h.resource.clone(), waiter).unwrap();
    }
    let records = handovers(&h.resource);
    let recorded = |con: &mut redis::Connection| -> usize {
        redis::cmd("HLEN").arg(&records).query(con).unwrap()
    };
    assert_eq!(
        recorded(&mut h.con),
        1,
        "only the current holder's hand-over"
    );
    // The last one released while nobody waits.
    h.store.delete(&mut h.holder).unwrap();
    assert_eq!(recorded(&mut h.con), 0);
}
