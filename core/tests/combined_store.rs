//! The combined store (a quorum of independent stores) against three real redis-servers: what
//! the strategies accept, losing one master and then two, symfony/lock's remaining-TTL rule, and
//! the clean-up that leaves nothing held when the quorum is not met.
#![allow(clippy::unwrap_used)] // tests: an unwrap failing is the test failing

mod support;

use std::rc::Rc;

use deadbolt_core::{
    CombinedStore, Error, FlockStore, Key, Member, Mode, NativeTransport, RedisStore, Store,
    Strategy, Ttl,
};
use support::{unique, RedisServer};

fn ttl(secs: f64) -> Ttl {
    Ttl::from_secs(secs).unwrap()
}

fn redis_store(redis: &RedisServer) -> RedisStore<NativeTransport> {
    RedisStore::connect(&format!("{}?timeout=2", redis.url()), ttl(30.0)).unwrap()
}

/// Three masters that know nothing of each other, and a combined store over them.
struct Masters {
    servers: Vec<RedisServer>,
}

impl Masters {
    fn start() -> Self {
        Masters {
            servers: (0..3).map(|_| RedisServer::start()).collect(),
        }
    }

    fn combined(&self, strategy: Strategy) -> CombinedStore {
        let members = self
            .servers
            .iter()
            .map(|s| Member::Anywhere(Rc::new(redis_store(s))))
            .collect();
        CombinedStore::new(members, strategy).unwrap()
    }

    /// How many masters have a lock on `resource` (those still running).
    fn holding(&self, resource: &str) -> usize {
        self.servers
            .iter()
            .filter(|s| {
                let mut con = s.client();
                redis::cmd("EXISTS")
                    .arg(resource)
                    .query::<i64>(&mut con)
                    .unwrap()
                    == 1
            })
            .count()
    }
}

/// Whether `server` has a lock on `resource`.
fn exists(server: &RedisServer, resource: &str) -> bool {
    redis::cmd("EXISTS")
        .arg(resource)
        .query::<i64>(&mut server.client())
        .unwrap()
        == 1
}

#[test]
fn a_consensus_of_three_keeps_working_with_one_master_down() {
    let mut masters = Masters::start();
    masters.servers[0].stop();
    let store = masters.combined(Strategy::Consensus);
    let resource = unique("one-down");
    let mut key = Key::new(resource.clone());
    store
        .save(&mut key, Mode::Exclusive, Some(ttl(30.0)))
        .unwrap();
    assert!(store.exists(&key).unwrap());
    let mut other = Key::new(resource.clone());
    let err = store.save(&mut other, Mode::Exclusive, None).unwrap_err();
    assert!(err.is_conflict(), "{err}");
    store.put_off_expiration(&mut key, ttl(60.0)).unwrap();
    store.delete(&mut key).unwrap();
    assert!(!store.exists(&key).unwrap());
    store.save(&mut other, Mode::Exclusive, None).unwrap();
}

#[test]
fn with_two_of_three_masters_down_an_acquire_fails_as_a_storage_error_and_nothing_is_held() {
    let mut masters = Masters::start();
    masters.servers[0].stop();
    masters.servers[1].stop();
    let store = masters.combined(Strategy::Consensus);
    let resource = unique("two-down");
    let mut key = Key::new(resource.clone());
    let err = store.save(&mut key, Mode::Exclusive, None).unwrap_err();
    assert!(matches!(err, Error::Storage { .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains("1 of 3 stores took it"), "{message}");
    assert!(message.contains("consensus"), "{message}");
    // The survivor took it, and the clean-up released it there.
    assert!(!exists(&masters.servers[2], &resource));
    assert!(!store.exists(&key).unwrap());
}

#[test]
fn a_lock_held_elsewhere_in_one_master_is_a_minority_for_consensus_and_a_veto_for_unanimous() {
    let masters = Masters::start();
    let resource = unique("minority");
    let mut stranger = Key::new(resource.clone());
    redis_store(&masters.servers[0])
        .save(&mut stranger, Mode::Exclusive, None)
        .unwrap();
    let mut key = Key::new(resource.clone());
    let err = masters
        .combined(Strategy::Unanimous)
        .save(&mut key, Mode::Exclusive, None)
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    // Only the stranger's lock is left: the two masters that took it for `key` released it.
    assert_eq!(masters.holding(&resource), 1);
    let consensus = masters.combined(Strategy::Consensus);
    consensus.save(&mut key, Mode::Exclusive, None).unwrap();
    assert_eq!(masters.holding(&resource), 3);
    assert!(consensus.exists(&key).unwrap());
}

#[test]
fn a_lock_held_elsewhere_in_two_masters_is_a_conflict_and_the_third_is_left_free() {
    let masters = Masters::start();
    let resource = unique("majority");
    let mut stranger = Key::new(resource.clone());
    for server in &masters.servers[..2] {
        redis_store(server)
            .save(&mut stranger, Mode::Exclusive, None)
            .unwrap();
    }
    let store = masters.combined(Strategy::Consensus);
    let mut key = Key::new(resource.clone());
    let err = store.save(&mut key, Mode::Exclusive, None).unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert!(!exists(&masters.servers[2], &resource));
}

#[test]
fn a_lock_whose_acquisition_took_longer_than_its_ttl_is_not_held_anywhere() {
    let masters = Masters::start();
    let store = masters.combined(Strategy::Consensus);
    let resource = unique("expired");
    let mut key = Key::new(resource.clone());
    let err = store
        .save(&mut key, Mode::Exclusive, Some(ttl(0.000_001)))
        .unwrap_err();
    assert!(matches!(err, Error::Expired { .. }), "{err}");
    assert!(err.to_string().contains("CombinedStore(consensus"), "{err}");
    assert_eq!(masters.holding(&resource), 0);
}

#[test]
fn a_refresh_the_masters_refuse_is_not_held_and_releases_what_is_left() {
    let masters = Masters::start();
    let store = masters.combined(Strategy::Consensus);
    let resource = unique("refresh");
    let mut key = Key::new(resource.clone());
    store
        .save(&mut key, Mode::Exclusive, Some(ttl(30.0)))
        .unwrap();
    // Two masters lose the lock (flushed, as by a restart without persistence).
    for server in &masters.servers[..2] {
        redis::cmd("FLUSHALL").exec(&mut server.client()).unwrap();
    }
    let err = store.put_off_expiration(&mut key, ttl(30.0)).unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert_eq!(masters.holding(&resource), 0);
}

#[test]
fn a_key_travels_over_redis_members_but_not_once_a_member_keeps_a_lock_file() {
    let masters = Masters::start();
    let mut key = Key::new(unique("travel"));
    masters
        .combined(Strategy::Consensus)
        .save(&mut key, Mode::Exclusive, None)
        .unwrap();
    assert!(!key.is_process_bound());
    let dir = tempfile::tempdir().unwrap();
    let with_file = CombinedStore::new(
        vec![
            Member::Anywhere(Rc::new(FlockStore::new(dir.path()).unwrap())),
            Member::Anywhere(Rc::new(redis_store(&masters.servers[0]))),
        ],
        Strategy::Unanimous,
    )
    .unwrap();
    let mut key = Key::new(unique("file"));
    with_file.save(&mut key, Mode::Exclusive, None).unwrap();
    assert!(key.is_process_bound());
    let mut other = Key::new(key.resource().to_vec());
    assert!(with_file
        .save(&mut other, Mode::Exclusive, None)
        .unwrap_err()
        .is_conflict());
    with_file.delete(&mut key).unwrap();
    with_file.save(&mut other, Mode::Exclusive, None).unwrap();
}

/// The refresher extends a lock through every member: a lock file needs no extension (it is held
/// until released), so a flock and Redis pair still gets one, and it extends in Redis.
#[test]
fn the_refresher_extends_through_the_members_whose_locks_expire() {
    let masters = Masters::start();
    let dir = tempfile::tempdir().unwrap();
    let store = CombinedStore::new(
        vec![
            Member::Anywhere(Rc::new(FlockStore::new(dir.path()).unwrap())),
            Member::Anywhere(Rc::new(redis_store(&masters.servers[0]))),
        ],
        Strategy::Unanimous,
    )
    .unwrap();
    let mut key = Key::new(unique("extend"));
    store
        .save(&mut key, Mode::Exclusive, Some(ttl(5.0)))
        .unwrap();
    let extender = store.capabilities().expiring.unwrap().extender().unwrap();
    let token = key.token().unwrap().as_str().to_owned();
    assert!(extender.extend(key.resource(), &token, ttl(600.0)).unwrap());
    let pttl: i64 = redis::cmd("PTTL")
        .arg(key.resource())
        .query(&mut masters.servers[0].client())
        .unwrap();
    assert!(pttl > 5_000, "PTTL {pttl}");
    assert!(!extender
        .extend(key.resource(), "not-the-token", ttl(600.0))
        .unwrap());
}
