//! How a waiter learns of a release in the Redis store against a real redis-server: the release
//! hands the lock over and signals the waiter's grant list, and the waiter's report counts that as
//! a wake-up, whether its wait read the signal or its next attempt found the lock already its own.
#![allow(clippy::unwrap_used)] // tests: an unwrap failing is the test failing

mod support;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use deadbolt_core::{
    BlockingStore, Key, Mode, NativeTransport, RedisStore, Store, Ttl, WaitReport,
};
use support::wait_keys::{queue_by_hand, until_queued};
use support::{unique, RedisServer};

fn ttl(secs: f64) -> Ttl {
    Ttl::from_secs(secs).unwrap()
}

/// A store on a connection of its own (the DSN text differs, as in another process).
fn store_at(url: &str, n: u32) -> RedisStore<NativeTransport> {
    RedisStore::connect(&format!("{url}?timeout={}", 5 + n), ttl(60.0)).unwrap()
}

fn wait_for(store: &RedisStore<NativeTransport>, key: &mut Key) -> (bool, WaitReport) {
    let mut report = WaitReport::default();
    let deadline = Instant::now() + Duration::from_secs(10);
    let taken = store
        .wait(key, Mode::Exclusive, None, Some(deadline), &mut report)
        .unwrap();
    (taken, report)
}

#[test]
fn a_release_wakes_a_waiter_through_the_signal_list() {
    let redis = RedisServer::start();
    let resource = unique("wake");
    let url = redis.url();
    let holder_resource = resource.clone();
    let (ready_tx, ready_rx) = mpsc::channel();
    // The holder runs on another thread with its own store (as another process would), and
    // releases once the waiter is queued: the release happens while the waiter waits, however
    // slowly the waiter got there.
    let holder = thread::spawn(move || {
        let store = store_at(&url, 1);
        let mut key = Key::new(holder_resource.clone());
        store.save(&mut key, Mode::Exclusive, None).unwrap();
        ready_tx.send(()).unwrap();
        let mut con = redis::Client::open(url.as_str())
            .unwrap()
            .get_connection()
            .unwrap();
        until_queued(&mut con, &holder_resource, 1);
        store.delete(&mut key).unwrap();
    });
    ready_rx.recv().unwrap();
    let store = store_at(&redis.url(), 2);
    let mut key = Key::new(resource);
    let (taken, report) = wait_for(&store, &mut key);
    holder.join().unwrap();
    assert!(taken);
    assert_eq!(report.wakeups, 1, "woken by the release: {report:?}");
}

/// A release that comes between two of the waiter's waits for the signal (after one ran out,
/// before the next attempt) hands the lock over all the same; the attempt then finds it already
/// the waiter's. Arranged here without timing: the waiter's place in the queue is made by hand
/// before it starts waiting, as its earlier refused attempt would have made it.
#[test]
fn a_hand_over_found_by_the_next_attempt_counts_as_a_wake_up() {
    let redis = RedisServer::start();
    let mut con = redis.client();
    let resource = unique("next-attempt");
    let holders = store_at(&redis.url(), 1);
    let mut holder = Key::new(resource.clone());
    holders.save(&mut holder, Mode::Exclusive, None).unwrap();
    let mut waiter = Key::new(resource.clone());
    let token = waiter.token().unwrap().as_str().to_owned();
    queue_by_hand(&mut con, &resource, &token, "x", 5_000);
    holders.delete(&mut holder).unwrap();
    let store = store_at(&redis.url(), 2);
    let (taken, report) = wait_for(&store, &mut waiter);
    assert!(taken);
    assert_eq!(
        (report.wakeups, report.polls),
        (1, 0),
        "handed over, not taken by polling: {report:?}"
    );
    // And it holds the lock: nobody else gets it.
    assert!(holders
        .save(&mut Key::new(resource), Mode::Exclusive, None)
        .is_err());
}
