//! One behaviour suite run against every store (flock on real files, in-memory, Redis on a real
//! redis-server), plus a suite per capability: shared locks where the store has them.
#![allow(clippy::unwrap_used)] // tests: an unwrap failing is the test failing

mod support;

use std::rc::Rc;
use std::sync::Arc;

use deadbolt_core::store::redis::native::NativeRunner;
use deadbolt_core::{
    store, Error, FlockStore, InMemoryStore, Key, Lock, RedisStore, Silent, Store, Ttl,
};
use support::{unique, RedisServer};

fn ttl(secs: f64) -> Ttl {
    Ttl::from_secs(secs).unwrap()
}

/// Runs `check` against each store kind.
fn each_store(check: impl Fn(&dyn Store, &str)) {
    let dir = tempfile::tempdir().unwrap();
    check(&FlockStore::new(dir.path()).unwrap(), "flock");
    check(&InMemoryStore::new(), "memory");
    let redis = RedisServer::start();
    let runner = NativeRunner::new(&redis.url()).unwrap();
    check(&RedisStore::new(Box::new(runner), ttl(30.0)), "redis");
}

#[test]
fn a_saved_key_exists_and_a_deleted_one_does_not() {
    each_store(|store, kind| {
        let mut key = Key::new(unique("save"));
        assert!(!store.exists(&key).unwrap(), "{kind}");
        store.save(&mut key).unwrap();
        assert!(store.exists(&key).unwrap(), "{kind}");
        store.delete(&mut key).unwrap();
        assert!(!store.exists(&key).unwrap(), "{kind}");
    });
}

#[test]
fn two_keys_of_one_resource_exclude_each_other() {
    each_store(|store, kind| {
        let resource = unique("exclude");
        let mut first = Key::new(resource.clone());
        let mut second = Key::new(resource);
        store.save(&mut first).unwrap();
        let err = store.save(&mut second).unwrap_err();
        assert!(err.is_conflict(), "{kind}: {err}");
        assert!(!store.exists(&second).unwrap(), "{kind}");
        store.delete(&mut first).unwrap();
        store.save(&mut second).unwrap();
    });
}

#[test]
fn release_by_another_key_leaves_lock_held() {
    each_store(|store, kind| {
        let resource = unique("other-release");
        let mut owner = Key::new(resource.clone());
        let mut stranger = Key::new(resource);
        store.save(&mut owner).unwrap();
        store.delete(&mut stranger).unwrap();
        assert!(store.exists(&owner).unwrap(), "{kind}");
    });
}

#[test]
fn saving_twice_with_one_key_succeeds() {
    each_store(|store, kind| {
        let mut key = Key::new(unique("twice"));
        store.save(&mut key).unwrap();
        store.save(&mut key).unwrap();
        assert!(store.exists(&key).unwrap(), "{kind}");
    });
}

#[test]
fn extending_a_lock_someone_else_holds_is_a_conflict() {
    each_store(|store, kind| {
        let resource = unique("putoff");
        let mut owner = Key::new(resource.clone());
        let mut stranger = Key::new(resource);
        store.save(&mut owner).unwrap();
        store.put_off_expiration(&mut owner, ttl(10.0)).unwrap();
        let err = store
            .put_off_expiration(&mut stranger, ttl(10.0))
            .unwrap_err();
        assert!(err.is_conflict(), "{kind}: {err}");
    });
}

#[test]
fn readers_share_and_writers_exclude() {
    each_store(|store, kind| {
        let shared = store.as_shared().unwrap();
        let resource = unique("rw");
        let mut reader_a = Key::new(resource.clone());
        let mut reader_b = Key::new(resource.clone());
        let mut writer = Key::new(resource);
        shared.save_read(&mut reader_a).unwrap();
        shared.save_read(&mut reader_b).unwrap();
        assert!(store.save(&mut writer).unwrap_err().is_conflict(), "{kind}");
        store.delete(&mut reader_a).unwrap();
        store.delete(&mut reader_b).unwrap();
        store.save(&mut writer).unwrap();
        assert!(
            shared.save_read(&mut reader_a).unwrap_err().is_conflict(),
            "{kind}"
        );
    });
}

#[test]
fn a_sole_reader_is_promoted_and_a_writer_demoted() {
    each_store(|store, kind| {
        let shared = store.as_shared().unwrap();
        let resource = unique("promote");
        let mut key = Key::new(resource.clone());
        let mut other = Key::new(resource);
        shared.save_read(&mut key).unwrap();
        store.save(&mut key).unwrap();
        assert!(
            shared.save_read(&mut other).unwrap_err().is_conflict(),
            "{kind}: promoted"
        );
        shared.save_read(&mut key).unwrap();
        shared.save_read(&mut other).unwrap();
        assert!(
            store.save(&mut key).unwrap_err().is_conflict(),
            "{kind}: two readers, no promotion"
        );
    });
}

#[test]
fn a_lock_acquires_refreshes_and_releases() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start();
    let stores: Vec<Rc<dyn Store>> = vec![
        Rc::new(FlockStore::new(dir.path()).unwrap()),
        Rc::new(InMemoryStore::new()),
        Rc::new(RedisStore::new(
            Box::new(NativeRunner::new(&redis.url()).unwrap()),
            ttl(30.0),
        )),
    ];
    for store in stores {
        let resource = unique("lock");
        let key = Arc::new(parking_lot::Mutex::new(Key::new(resource.clone())));
        let mut lock = Lock::new(key, store.clone(), Some(ttl(5.0)), true);
        let rival_key = Arc::new(parking_lot::Mutex::new(Key::new(resource)));
        let mut rival = Lock::new(rival_key, store.clone(), Some(ttl(5.0)), true);
        assert!(
            lock.acquire(false, &mut Silent).unwrap(),
            "{}",
            store.name()
        );
        assert!(!rival.acquire(false, &mut Silent).unwrap());
        lock.refresh(None, &mut Silent).unwrap();
        assert!(lock.is_acquired().unwrap());
        lock.release(&mut Silent).unwrap();
        assert!(!lock.is_acquired().unwrap());
        assert!(rival.acquire(false, &mut Silent).unwrap());
        drop(rival);
        assert!(
            lock.acquire(false, &mut Silent).unwrap(),
            "{}: dropping released",
            store.name()
        );
    }
}

#[test]
fn refresh_without_any_ttl_is_an_invalid_argument() {
    let mut lock = Lock::new(
        Arc::new(parking_lot::Mutex::new(Key::new("no-ttl"))),
        Rc::new(InMemoryStore::new()),
        None,
        true,
    );
    lock.acquire(false, &mut Silent).unwrap();
    let err = lock.refresh(None, &mut Silent).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }));
    assert_eq!(
        err.to_string(),
        "You have to define an expiration duration."
    );
}

#[test]
fn blocking_waits_poll_on_stores_without_native_waits() {
    let store = InMemoryStore::new();
    let mut key = Key::new("poll");
    store::wait_and_save(&store, &mut key).unwrap();
    assert!(store.exists(&key).unwrap());
}
