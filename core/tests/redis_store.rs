//! The Redis store against a real redis-server: symfony/lock's data model on the wire, the
//! failures a production Redis produces, and the round trips an acquire and a release cost.
#![allow(clippy::unwrap_used)] // tests: an unwrap failing is the test failing

mod support;

use std::collections::HashMap;

use deadbolt_core::{
    BlockingStore, ExpiringStore, Key, Mode, NativeTransport, RedisStore, Store, Ttl,
};
use support::{unique, RedisServer};

fn ttl(secs: f64) -> Ttl {
    Ttl::from_secs(secs).unwrap()
}

fn store_for(dsn: &str) -> RedisStore<NativeTransport> {
    RedisStore::connect(dsn, ttl(300.0)).unwrap()
}

fn server_ms(con: &mut redis::Connection) -> f64 {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query(con).unwrap();
    (secs * 1000 + micros / 1000) as f64
}

#[test]
fn a_write_lock_is_symfonys_sorted_set_with_write_marker_and_expiry() {
    let redis = RedisServer::start();
    let store = store_for(&redis.url());
    let resource = unique("model");
    let mut key = Key::new(resource.clone());
    store
        .save(&mut key, Mode::Exclusive, Some(ttl(10.0)))
        .unwrap();

    let mut con = redis.client();
    let kind: String = redis::cmd("TYPE").arg(&resource).query(&mut con).unwrap();
    assert_eq!(kind, "zset");
    let members: HashMap<String, f64> = redis::cmd("ZRANGE")
        .arg(&resource)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(&mut con)
        .unwrap();
    let token = key.token().unwrap().as_str().to_owned();
    assert_eq!(members.len(), 2, "{members:?}");
    let now = server_ms(&mut con);
    for member in [token.as_str(), "__write__"] {
        let score = members[member];
        assert!(
            score > now + 9_000.0 && score <= now + 10_000.0,
            "{member}: {score} vs {now}"
        );
    }
    let pttl: i64 = redis::cmd("PTTL").arg(&resource).query(&mut con).unwrap();
    assert!(pttl > 9_000 && pttl <= 10_000, "{pttl}");

    store.delete(&mut key).unwrap();
    let exists: i64 = redis::cmd("EXISTS").arg(&resource).query(&mut con).unwrap();
    assert_eq!(exists, 0, "the last member gone, the key is gone");
}

#[test]
fn readers_are_members_without_the_write_marker() {
    let redis = RedisServer::start();
    let store = store_for(&redis.url());
    let resource = unique("readers");
    let mut a = Key::new(resource.clone());
    let mut b = Key::new(resource.clone());
    store.save(&mut a, Mode::Shared, Some(ttl(5.0))).unwrap();
    store.save(&mut b, Mode::Shared, Some(ttl(20.0))).unwrap();
    let mut con = redis.client();
    let count: i64 = redis::cmd("ZCARD").arg(&resource).query(&mut con).unwrap();
    let marker: Option<f64> = redis::cmd("ZSCORE")
        .arg(&resource)
        .arg("__write__")
        .query(&mut con)
        .unwrap();
    assert_eq!(count, 2);
    assert_eq!(marker, None);
    let pttl: i64 = redis::cmd("PTTL").arg(&resource).query(&mut con).unwrap();
    assert!(
        pttl > 19_000,
        "the key lives as long as its longest reader: {pttl}"
    );
}

#[test]
fn a_legacy_string_lock_counts_as_held_by_someone_else() {
    let redis = RedisServer::start();
    let store = store_for(&redis.url());
    let resource = unique("legacy");
    let mut con = redis.client();
    redis::cmd("SET")
        .arg(&resource)
        .arg("old-token")
        .arg("PX")
        .arg(60_000)
        .exec(&mut con)
        .unwrap();
    let mut key = Key::new(resource.clone());
    assert!(store
        .save(&mut key, Mode::Exclusive, None)
        .unwrap_err()
        .is_conflict());
    assert!(!store.exists(&key).unwrap());
    store.delete(&mut key).unwrap();
    let value: String = redis::cmd("GET").arg(&resource).query(&mut con).unwrap();
    assert_eq!(
        value, "old-token",
        "a release never touches someone else's legacy lock"
    );
}

#[test]
fn a_key_of_another_type_is_a_storage_error_naming_the_type() {
    let redis = RedisServer::start();
    let store = store_for(&redis.url());
    let resource = unique("hash");
    let mut con = redis.client();
    redis::cmd("HSET")
        .arg(&resource)
        .arg("f")
        .arg("v")
        .exec(&mut con)
        .unwrap();
    let err = store
        .save(&mut Key::new(resource.clone()), Mode::Exclusive, None)
        .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, deadbolt_core::Error::Storage { .. }),
        "{text}"
    );
    assert!(text.contains("hash") && text.contains(&resource), "{text}");
}

#[test]
fn an_acquire_and_a_release_cost_one_script_call_each() {
    let redis = RedisServer::start();
    let store = store_for(&redis.url());
    let mut warm = Key::new(unique("warm"));
    store
        .save(&mut warm, Mode::Exclusive, Some(ttl(5.0)))
        .unwrap();
    store.delete(&mut warm).unwrap();
    let mut con = redis.client();
    redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .exec(&mut con)
        .unwrap();
    for _ in 0..10 {
        let mut key = Key::new(unique("cycle"));
        store
            .save(&mut key, Mode::Exclusive, Some(ttl(5.0)))
            .unwrap();
        store.delete(&mut key).unwrap();
    }
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut con)
        .unwrap();
    let calls = |name: &str| -> u64 {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("cmdstat_{name}:calls=")))
            .and_then(|rest| rest.split(',').next())
            .map_or(0, |n| n.parse().unwrap())
    };
    assert_eq!(calls("evalsha"), 20, "{info}");
    assert_eq!(
        calls("incr"),
        0,
        "fencing numbers are drawn on request only: {info}"
    );
    assert_eq!(calls("lpush"), 0, "nobody waits, nobody is woken: {info}");
    assert_eq!(calls("eval"), 0, "{info}");
}

#[test]
fn a_stopped_server_is_a_storage_error_and_a_restarted_one_just_works() {
    let mut redis = RedisServer::start();
    let store = store_for(&redis.url());
    let mut key = Key::new(unique("restart"));
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    redis.stop();
    let err = store.exists(&key).unwrap_err().to_string();
    assert!(err.contains(&format!("127.0.0.1:{}", redis.port)), "{err}");
    redis.restart();
    // Same store object, same key: the lock data died with the server, the connection is renewed.
    assert!(!store.exists(&key).unwrap());
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    assert!(store.exists(&key).unwrap());
}

#[test]
fn a_kept_connection_survives_a_restart_between_calls() {
    let mut redis = RedisServer::start();
    let store = store_for(&redis.url());
    let mut key = Key::new(unique("kept"));
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    redis.restart();
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    assert!(store.exists(&key).unwrap());
}

#[test]
fn a_wrong_password_is_reported_without_the_password() {
    let redis = RedisServer::start_with(&["--requirepass", "right-horse-battery"]);
    let store = store_for(&format!(
        "redis://:wrong-staple-guess@127.0.0.1:{}",
        redis.port
    ));
    let err = store
        .save(&mut Key::new(unique("auth")), Mode::Exclusive, None)
        .unwrap_err();
    let text = format!("{err} {err:?}");
    assert!(!text.contains("wrong-staple-guess"), "{text}");
    assert!(
        text.contains(&format!("127.0.0.1:{}", redis.port)),
        "{text}"
    );
    let good = store_for(&format!(
        "redis://:right-horse-battery@127.0.0.1:{}",
        redis.port
    ));
    good.save(&mut Key::new(unique("auth")), Mode::Exclusive, None)
        .unwrap();
}

#[test]
fn the_password_can_come_from_a_named_environment_variable() {
    let redis = RedisServer::start_with(&["--requirepass", "from-the-env"]);
    std::env::set_var("DEADBOLT_TEST_REDIS_PW", "from-the-env");
    let store = store_for(&format!(
        "redis://127.0.0.1:{}?password_env=DEADBOLT_TEST_REDIS_PW",
        redis.port
    ));
    store
        .save(&mut Key::new(unique("env")), Mode::Exclusive, None)
        .unwrap();
}

#[test]
fn unix_sockets_work() {
    let redis = RedisServer::start();
    let store = store_for(&format!("redis://{}", redis.socket().display()));
    let mut key = Key::new(unique("unix"));
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    assert!(store.exists(&key).unwrap());
    assert!(store.name().contains("redis.sock"), "{}", store.name());
}

#[test]
fn an_evicting_memory_policy_is_warned_about_once() {
    let redis = RedisServer::start_with(&["--maxmemory-policy", "allkeys-lru"]);
    let store = store_for(&redis.url());
    store
        .save(&mut Key::new(unique("evict")), Mode::Exclusive, None)
        .unwrap();
    let warning = store.take_warning().expect("a warning");
    assert!(warning.contains("allkeys-lru"), "{warning}");
    assert_eq!(store.take_warning(), None);
    let safe = RedisServer::start();
    let store = store_for(&safe.url());
    store
        .save(&mut Key::new(unique("noevict")), Mode::Exclusive, None)
        .unwrap();
    assert_eq!(store.take_warning(), None);
}

#[test]
fn a_lock_that_expires_on_the_way_is_removed_and_reported() {
    let redis = RedisServer::start();
    let store = store_for(&redis.url());
    let resource = unique("expired");
    let mut key = Key::new(resource.clone());
    let err = store
        .save(&mut key, Mode::Exclusive, Some(ttl(0.000_001)))
        .unwrap_err();
    assert!(matches!(err, deadbolt_core::Error::Expired { .. }), "{err}");
    let mut other = Key::new(resource);
    store.save(&mut other, Mode::Exclusive, None).unwrap();
}

#[test]
fn a_wait_outlasts_a_restarted_server_that_is_still_loading_its_data() {
    use std::time::{Duration, Instant};
    let mut redis = RedisServer::start_with(&["--enable-debug-command", "yes"]);
    let mut con = redis.client();
    // Enough data that loading it back takes a while (seconds), saved where the restart reads it.
    redis::cmd("DEBUG")
        .arg("POPULATE")
        .arg(4_000_000)
        .exec(&mut con)
        .unwrap();
    redis::cmd("SAVE").exec(&mut con).unwrap();
    drop(con);
    redis.restart();

    let store = store_for(&redis.url());
    let mut key = Key::new(unique("loading"));
    let err = store.save(&mut key, Mode::Exclusive, None).unwrap_err();
    assert!(
        err.to_string().contains("loading the dataset"),
        "a non-blocking acquire fails at once while Redis loads: {err}"
    );
    let mut report = deadbolt_core::WaitReport::default();
    let deadline = Instant::now() + Duration::from_secs(120);
    let taken = store
        .wait(&mut key, Mode::Exclusive, None, Some(deadline), &mut report)
        .unwrap();
    assert!(taken, "the wait took the lock once Redis had loaded");
    assert!(
        report.polls >= 1,
        "it waited through the loading: {report:?}"
    );
}

/// A wait whose deadline passes while the server is busy (a slow command, a loaded machine) ends
/// as "not taken" once the server answers its last attempt, never as a storage error. Before,
/// the round that ran into the deadline gave its socket exactly the time the server would block
/// (so a reply a moment late was lost), and the last attempt was given 1 ms: the wait failed
/// with "no answer within 2 s", after waiting 1 ms for an answer that came 0.3 s later.
#[test]
fn a_wait_whose_deadline_passes_while_the_server_is_busy_ends_not_taken() {
    use std::time::{Duration, Instant};
    let redis = RedisServer::start_with(&["--enable-debug-command", "yes"]);
    let store = store_for(&redis.url());
    let resource = unique("busy-at-deadline");
    let mut holder = Key::new(resource.clone());
    store.save(&mut holder, Mode::Exclusive, None).unwrap();
    // The server is asleep from before the deadline until well after it: the waiter's first
    // round is sent, then nothing answers until the sleep ends.
    let mut con = redis.client();
    let sleeper = std::thread::spawn(move || {
        redis::cmd("DEBUG")
            .arg("SLEEP")
            .arg(0.6)
            .exec(&mut con)
            .unwrap();
    });
    let asleep = Instant::now() + Duration::from_millis(100);
    while redis_is_answering(&redis) && Instant::now() < asleep {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut waiter = Key::new(resource);
    let mut report = deadbolt_core::WaitReport::default();
    let deadline = Instant::now() + Duration::from_millis(150);
    let taken = store.wait(
        &mut waiter,
        Mode::Exclusive,
        None,
        Some(deadline),
        &mut report,
    );
    sleeper.join().unwrap();
    assert!(
        matches!(taken, Ok(false)),
        "the holder kept the lock: the wait ends not taken, got {taken:?}"
    );
    assert!(store.exists(&holder).unwrap(), "the holder still holds it");
}

/// Whether the server answers a PING within 20 ms (false while DEBUG SLEEP holds it).
fn redis_is_answering(redis: &RedisServer) -> bool {
    let client = redis::Client::open(redis.url()).unwrap();
    match client.get_connection_with_timeout(std::time::Duration::from_millis(20)) {
        Ok(mut con) => {
            let _ = con.set_read_timeout(Some(std::time::Duration::from_millis(20)));
            redis::cmd("PING").query::<String>(&mut con).is_ok()
        }
        Err(_) => false,
    }
}
