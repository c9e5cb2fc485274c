//! An operator's view of the Redis store against a real redis-server: holder records beside
//! symfony/lock's data (read back by another connection, gone with the lock), waiters, and the
//! forced release (seen by the old holder as a lost lock, fencing tokens still growing, the
//! longest waiter served).
#![allow(clippy::unwrap_used)] // tests: an unwrap failing is the test failing

mod support;

use std::time::{Duration, Instant};

use deadbolt_core::{
    token_digest, BlockingStore, FencingStore, InspectingStore, Key, Mode, NativeTransport,
    RedisStore, Store, Ttl, WaitReport,
};
use support::{unique, RedisServer};

fn store_for(redis: &RedisServer) -> RedisStore<NativeTransport> {
    RedisStore::connect(&redis.url(), Ttl::from_secs(300.0).unwrap()).unwrap()
}

fn ttl(secs: f64) -> Option<Ttl> {
    Some(Ttl::from_secs(secs).unwrap())
}

#[test]
fn a_writer_is_shown_with_its_record_to_another_connection() {
    let redis = RedisServer::start();
    let resource = unique("report");
    let mut key = Key::new(resource.clone());
    key.set_label("nightly #7").unwrap();
    store_for(&redis)
        .save(&mut key, Mode::Exclusive, ttl(30.0))
        .unwrap();

    let state = store_for(&redis).inspect(resource.as_bytes()).unwrap();
    assert_eq!(state.holders.len(), 1, "{state:?}");
    let holder = &state.holders[0];
    assert_eq!(holder.mode, Mode::Exclusive);
    assert_eq!(
        holder.token_digest,
        token_digest(key.token().unwrap().as_str())
    );
    assert_eq!(holder.origin.pid, Some(std::process::id()));
    assert_eq!(holder.origin.label.as_deref(), Some("nightly #7"));
    let acquired = holder.acquired_at.unwrap();
    let expires = holder.expires_at.unwrap();
    let lifetime = expires.duration_since(acquired).unwrap();
    assert!(lifetime > Duration::from_secs(29) && lifetime <= Duration::from_secs(30));
    assert!(state.waiters.is_empty());
}

#[test]
fn records_go_with_the_lock_and_readers_are_listed_each() {
    let redis = RedisServer::start();
    let store = store_for(&redis);
    let resource = unique("readers");
    let (mut a, mut b) = (Key::new(resource.clone()), Key::new(resource.clone()));
    store.save(&mut a, Mode::Shared, ttl(30.0)).unwrap();
    store.save(&mut b, Mode::Shared, ttl(30.0)).unwrap();
    let state = store.inspect(resource.as_bytes()).unwrap();
    assert_eq!(state.holders.len(), 2);
    assert!(state.holders.iter().all(|h| h.mode == Mode::Shared));
    store.delete(&mut a).unwrap();
    assert_eq!(store.inspect(resource.as_bytes()).unwrap().holders.len(), 1);
    store.delete(&mut b).unwrap();
    assert!(store
        .inspect(resource.as_bytes())
        .unwrap()
        .holders
        .is_empty());
    let mut con = redis.client();
    let left: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{resource}*"))
        .query(&mut con)
        .unwrap();
    assert!(
        left.is_empty(),
        "nothing stays behind a released lock: {left:?}"
    );
}

#[test]
fn a_holder_without_a_record_is_shown_as_such() {
    let redis = RedisServer::start();
    let resource = unique("symfony");
    let mut con = redis.client();
    // What symfony/lock writes: a token and __write__, no record.
    let _: () = redis::cmd("ZADD")
        .arg(&resource)
        .arg(i64::MAX / 2)
        .arg("someone-elses-token")
        .arg(i64::MAX / 2)
        .arg("__write__")
        .query(&mut con)
        .unwrap();
    let state = store_for(&redis).inspect(resource.as_bytes()).unwrap();
    assert_eq!(state.holders.len(), 1);
    assert_eq!(
        state.holders[0].token_digest,
        token_digest("someone-elses-token")
    );
    assert_eq!(state.holders[0].origin.pid, None);
}

#[test]
fn a_forced_release_frees_the_lock_the_old_holder_finds_it_gone_and_fencing_grows() {
    let redis = RedisServer::start();
    let store = store_for(&redis);
    let resource = unique("stuck");
    let mut old = Key::new(resource.clone());
    store.save(&mut old, Mode::Exclusive, ttl(300.0)).unwrap();
    let first = store.draw_fencing_token(&mut old).unwrap().unwrap();

    assert_eq!(
        store_for(&redis)
            .force_release(resource.as_bytes())
            .unwrap(),
        1
    );

    assert!(!store.exists(&old).unwrap());
    assert!(store
        .put_off_expiration(&mut old, Ttl::from_secs(30.0).unwrap())
        .is_err());
    let mut new = Key::new(resource.clone());
    store.save(&mut new, Mode::Exclusive, ttl(30.0)).unwrap();
    let next = store.draw_fencing_token(&mut new).unwrap().unwrap();
    assert!(next > first, "{next} > {first}");
    assert_eq!(store.force_release(b"nobody-holds-this").unwrap(), 0);
}

#[test]
fn a_waiter_is_listed_and_gets_the_lock_an_operator_frees() {
    let redis = RedisServer::start();
    let resource = unique("queue");
    let mut holder = Key::new(resource.clone());
    store_for(&redis)
        .save(&mut holder, Mode::Exclusive, ttl(300.0))
        .unwrap();
    let waiting = {
        let (redis_url, resource) = (redis.url(), resource.clone());
        std::thread::spawn(move || {
            let store = RedisStore::connect(&redis_url, Ttl::from_secs(30.0).unwrap()).unwrap();
            let mut key = Key::new(resource);
            key.set_label("waiter").unwrap();
            let deadline = Some(Instant::now() + Duration::from_secs(60));
            let mut report = WaitReport::default();
            let got = store
                .wait(&mut key, Mode::Exclusive, ttl(30.0), deadline, &mut report)
                .unwrap();
            (got, store.exists(&key).unwrap())
        })
    };
    let operator = store_for(&redis);
    // The waiter is in the queue once inspection lists it (no sleep: we ask until it is there).
    let waiter = loop {
        let state = operator.inspect(resource.as_bytes()).unwrap();
        if let Some(waiter) = state.waiters.first() {
            break waiter.clone();
        }
        std::thread::yield_now();
    };
    assert_eq!(waiter.origin.label.as_deref(), Some("waiter"));
    assert_eq!(waiter.mode, Mode::Exclusive);

    assert_eq!(operator.force_release(resource.as_bytes()).unwrap(), 1);
    assert_eq!(waiting.join().unwrap(), (true, true));
    let state = operator.inspect(resource.as_bytes()).unwrap();
    assert_eq!(state.holders.len(), 1);
    assert_eq!(
        state.holders[0].origin.label.as_deref(),
        Some("waiter"),
        "the record moved with the hand-over"
    );
}

#[test]
fn records_off_leaves_no_record_and_the_lock_is_still_shown() {
    let redis = RedisServer::start();
    let quiet = RedisStore::connect(
        &format!("{}?records=off", redis.url()),
        Ttl::from_secs(30.0).unwrap(),
    )
    .unwrap();
    let resource = unique("quiet");
    let mut key = Key::new(resource.clone());
    quiet.save(&mut key, Mode::Exclusive, ttl(30.0)).unwrap();
    let state = store_for(&redis).inspect(resource.as_bytes()).unwrap();
    assert_eq!(state.holders.len(), 1);
    assert_eq!(state.holders[0].origin.pid, None);
    assert!(state.holders[0].expires_at.is_some());
    let mut con = redis.client();
    let left: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{resource}#*"))
        .query(&mut con)
        .unwrap();
    assert!(left.is_empty(), "no companion key: {left:?}");
    quiet.delete(&mut key).unwrap();
    assert!(!quiet.exists(&key).unwrap());
}
