//! An operator's listing of a store's held locks (`deadbolt list`), against a real redis-server
//! and real lock files: only what someone holds or waits for, under the prefix, Deadbolt's own
//! keys and other data left out; glob characters in a prefix taken literally (a cluster's listing:
//! redis_cluster.rs).
#![allow(clippy::unwrap_used)] // tests: an unwrap failing is the test failing

mod support;

use deadbolt_core::{FlockStore, Key, Mode, NativeTransport, RedisStore, Store, Ttl};
use support::{unique, RedisServer};

fn redis_store(redis: &RedisServer) -> RedisStore<NativeTransport> {
    RedisStore::connect(
        &format!("{}?timeout=2", redis.url()),
        Ttl::from_secs(30.0).unwrap(),
    )
    .unwrap()
}

#[test]
fn redis_lists_the_held_resources_under_a_prefix_with_their_holders() {
    let redis = RedisServer::start();
    let store = redis_store(&redis);
    let prefix = unique("orders");
    let mut a = Key::new(format!("{prefix}:1"));
    a.set_label("job 1").unwrap();
    let mut b = Key::new(format!("{prefix}:2"));
    let mut other = Key::new(unique("invoices"));
    store.save(&mut a, Mode::Exclusive, None).unwrap();
    store.save(&mut b, Mode::Shared, None).unwrap();
    store.save(&mut other, Mode::Exclusive, None).unwrap();
    // A fencing counter (a companion key) and someone else's sorted set under the prefix.
    let mut con = redis.client();
    redis::cmd("INCR")
        .arg(format!("{prefix}:1#deadbolt:fence{{{prefix}:1}}"))
        .exec(&mut con)
        .unwrap();
    redis::cmd("ZADD")
        .arg(format!("{prefix}:leaderboard"))
        .arg(1)
        .arg("x")
        .exec(&mut con)
        .unwrap();

    let listed = store.list(format!("{prefix}:").as_bytes()).unwrap();
    let names: Vec<String> = listed
        .iter()
        .map(|(name, _)| String::from_utf8(name.clone()).unwrap())
        .collect();
    assert_eq!(names, [format!("{prefix}:1"), format!("{prefix}:2")]);
    let holder = &listed[0].1.holders[0];
    assert_eq!(holder.mode, Mode::Exclusive);
    assert_eq!(holder.origin.pid, Some(std::process::id()));
    assert_eq!(holder.origin.label.as_deref(), Some("job 1"));
    assert_eq!(listed[1].1.holders[0].mode, Mode::Shared);

    let everything = store.list(b"").unwrap();
    assert_eq!(everything.len(), 3, "{everything:?}");

    store.delete(&mut a).unwrap();
    let listed = store.list(format!("{prefix}:").as_bytes()).unwrap();
    assert_eq!(listed.len(), 1);
}

#[test]
fn a_redis_prefix_is_literal_not_a_glob() {
    let redis = RedisServer::start();
    let store = redis_store(&redis);
    let mut plain = Key::new("ab:1");
    store.save(&mut plain, Mode::Exclusive, None).unwrap();
    assert!(store.list(b"a?").unwrap().is_empty());
    assert!(store.list(b"a*").unwrap().is_empty());
    assert!(store.list(b"[a]b").unwrap().is_empty());
    let mut globby = Key::new("a*b:1");
    store.save(&mut globby, Mode::Exclusive, None).unwrap();
    let listed = store.list(b"a*").unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].0, b"a*b:1");
}

#[test]
fn flock_lists_held_lock_files_by_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = FlockStore::new(dir.path()).unwrap();
    let mut held = Key::new("report:nightly");
    let mut released = Key::new("report:weekly");
    let mut elsewhere = Key::new("billing");
    store.save(&mut held, Mode::Exclusive, None).unwrap();
    store.save(&mut released, Mode::Exclusive, None).unwrap();
    store.save(&mut elsewhere, Mode::Shared, None).unwrap();
    store.delete(&mut released).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a lock").unwrap();

    let listed = store.list(b"report:").unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let file = store.path_for(&held);
    assert_eq!(
        listed[0].0,
        file.file_name().unwrap().to_str().unwrap().to_owned()
    );
    assert_eq!(listed[0].1.holders[0].origin.pid, Some(std::process::id()));
    assert_eq!(store.list(b"").unwrap().len(), 2);
}
