//! One behaviour suite run against every store (flock on real files, in-memory, Redis on a real
//! redis-server by TCP and by unix socket, a quorum of the three, System V semaphores, memcached),
//! plus a suite
//! per capability:
//! shared locks where the store has them.
#![allow(clippy::unwrap_used)] // tests: an unwrap failing is the test failing

mod support;

use std::rc::Rc;
use std::sync::Arc;

use deadbolt_core::{
    wait, CombinedStore, Error, FlockStore, InMemoryStore, Key, KeyHash, Lock, Member,
    MemcachedStore, Mode, PostgreSqlStore, RedisStore, Silent, Store, StoreRef, Strategy,
    SysvSemaphoreStore, Ttl, Wait, WaitReport,
};
use support::{unique, MemcachedServer, PostgresServer, RedisServer};

fn ttl(secs: f64) -> Ttl {
    Ttl::from_secs(secs).unwrap()
}

/// Runs `check` against each store kind.
fn each_store(check: impl Fn(&dyn Store, &str)) {
    each_shared_store(&check);
    // Exclusive locks only: a set of System V semaphores has no readers.
    check(&SysvSemaphoreStore::new(KeyHash::Xxh128), "sysv");
    // Exclusive locks only: an item has one value.
    let memcached = MemcachedServer::start();
    check(
        &MemcachedStore::connect(&memcached.dsn(), ttl(30.0)).unwrap(),
        "memcached",
    );
    // Exclusive locks only: a row has one token.
    let postgres = PostgresServer::start();
    check(&support::table_store(&postgres), "table");
}

/// Runs `check` against each store kind that has shared (read) locks.
fn each_shared_store(check: impl Fn(&dyn Store, &str)) {
    let dir = tempfile::tempdir().unwrap();
    check(&FlockStore::new(dir.path()).unwrap(), "flock");
    check(&InMemoryStore::new(), "memory");
    let redis = RedisServer::start();
    check(
        &RedisStore::connect(&redis.url(), ttl(30.0)).unwrap(),
        "redis",
    );
    let postgres = PostgresServer::start();
    check(
        &PostgreSqlStore::connect(&postgres.dsn()).unwrap(),
        "postgres",
    );
    // The same server through its unix socket: another endpoint, connector and connection.
    let socket = format!("redis://{}", redis.socket().display());
    check(
        &RedisStore::connect(&socket, ttl(30.0)).unwrap(),
        "redis-socket",
    );
    // A quorum over one store of each kind: it keeps every promise its members keep.
    let members = vec![
        Member::Anywhere(Rc::new(
            FlockStore::new(dir.path().join("combined")).unwrap(),
        )),
        Member::Anywhere(Rc::new(InMemoryStore::new())),
        Member::Anywhere(Rc::new(
            RedisStore::connect(&format!("{}?timeout=3", redis.url()), ttl(30.0)).unwrap(),
        )),
    ];
    check(
        &CombinedStore::new(members, Strategy::Unanimous).unwrap(),
        "combined",
    );
}

#[test]
fn a_saved_key_exists_and_a_deleted_one_does_not() {
    each_store(|store, kind| {
        let mut key = Key::new(unique("save"));
        assert!(!store.exists(&key).unwrap(), "{kind}");
        store.save(&mut key, Mode::Exclusive, None).unwrap();
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
        store.save(&mut first, Mode::Exclusive, None).unwrap();
        let err = store.save(&mut second, Mode::Exclusive, None).unwrap_err();
        assert!(err.is_conflict(), "{kind}: {err}");
        assert!(!store.exists(&second).unwrap(), "{kind}");
        store.delete(&mut first).unwrap();
        store.save(&mut second, Mode::Exclusive, None).unwrap();
    });
}

#[test]
fn release_by_another_key_leaves_lock_held() {
    each_store(|store, kind| {
        let resource = unique("other-release");
        let mut owner = Key::new(resource.clone());
        let mut stranger = Key::new(resource);
        store.save(&mut owner, Mode::Exclusive, None).unwrap();
        store.delete(&mut stranger).unwrap();
        assert!(store.exists(&owner).unwrap(), "{kind}");
    });
}

#[test]
fn saving_twice_with_one_key_succeeds() {
    each_store(|store, kind| {
        let mut key = Key::new(unique("twice"));
        store.save(&mut key, Mode::Exclusive, None).unwrap();
        store.save(&mut key, Mode::Exclusive, None).unwrap();
        assert!(store.exists(&key).unwrap(), "{kind}");
    });
}

#[test]
fn extending_a_lock_someone_else_holds_is_a_conflict() {
    each_store(|store, kind| {
        let resource = unique("putoff");
        let mut owner = Key::new(resource.clone());
        let mut stranger = Key::new(resource);
        store.save(&mut owner, Mode::Exclusive, None).unwrap();
        store.put_off_expiration(&mut owner, ttl(10.0)).unwrap();
        let err = store
            .put_off_expiration(&mut stranger, ttl(10.0))
            .unwrap_err();
        assert!(err.is_conflict(), "{kind}: {err}");
    });
}

#[test]
fn readers_share_and_writers_exclude() {
    each_shared_store(|store, kind| {
        let resource = unique("rw");
        let mut reader_a = Key::new(resource.clone());
        let mut reader_b = Key::new(resource.clone());
        let mut writer = Key::new(resource);
        store.save(&mut reader_a, Mode::Shared, None).unwrap();
        store.save(&mut reader_b, Mode::Shared, None).unwrap();
        assert!(
            store
                .save(&mut writer, Mode::Exclusive, None)
                .unwrap_err()
                .is_conflict(),
            "{kind}"
        );
        store.delete(&mut reader_a).unwrap();
        store.delete(&mut reader_b).unwrap();
        store.save(&mut writer, Mode::Exclusive, None).unwrap();
        assert!(
            store
                .save(&mut reader_a, Mode::Shared, None)
                .unwrap_err()
                .is_conflict(),
            "{kind}"
        );
    });
}

#[test]
fn a_sole_reader_is_promoted_and_a_writer_demoted() {
    each_shared_store(|store, kind| {
        let resource = unique("promote");
        let mut key = Key::new(resource.clone());
        let mut other = Key::new(resource);
        store.save(&mut key, Mode::Shared, None).unwrap();
        store.save(&mut key, Mode::Exclusive, None).unwrap();
        assert!(
            store
                .save(&mut other, Mode::Shared, None)
                .unwrap_err()
                .is_conflict(),
            "{kind}: promoted"
        );
        store.save(&mut key, Mode::Shared, None).unwrap();
        store.save(&mut other, Mode::Shared, None).unwrap();
        assert!(
            store
                .save(&mut key, Mode::Exclusive, None)
                .unwrap_err()
                .is_conflict(),
            "{kind}: two readers, no promotion"
        );
    });
}

#[test]
fn a_lock_acquires_refreshes_and_releases() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start();
    let memcached = MemcachedServer::start();
    let postgres = PostgresServer::start();
    let stores: Vec<Rc<dyn Store>> = vec![
        Rc::new(FlockStore::new(dir.path()).unwrap()),
        Rc::new(InMemoryStore::new()),
        Rc::new(RedisStore::connect(&redis.url(), ttl(30.0)).unwrap()),
        Rc::new(SysvSemaphoreStore::new(KeyHash::Xxh128)),
        Rc::new(MemcachedStore::connect(&memcached.dsn(), ttl(30.0)).unwrap()),
        Rc::new(PostgreSqlStore::connect(&postgres.dsn()).unwrap()),
        Rc::new(support::table_store(&postgres)),
    ];
    for store in stores {
        let resource = unique("lock");
        let key = Arc::new(parking_lot::Mutex::new(Key::new(resource.clone())));
        let mut lock = Lock::new(key, StoreRef::Owned(store.clone()), Some(ttl(5.0)), true);
        let rival_key = Arc::new(parking_lot::Mutex::new(Key::new(resource)));
        let mut rival = Lock::new(
            rival_key,
            StoreRef::Owned(store.clone()),
            Some(ttl(5.0)),
            true,
        );
        assert!(
            lock.acquire(Mode::Exclusive, Wait::No, &mut Silent)
                .unwrap(),
            "{}",
            store.name()
        );
        assert!(!rival
            .acquire(Mode::Exclusive, Wait::No, &mut Silent)
            .unwrap());
        lock.refresh(None, &mut Silent).unwrap();
        assert!(lock.is_acquired().unwrap());
        lock.release(&mut Silent).unwrap();
        assert!(!lock.is_acquired().unwrap());
        assert!(rival
            .acquire(Mode::Exclusive, Wait::No, &mut Silent)
            .unwrap());
        drop(rival);
        assert!(
            lock.acquire(Mode::Exclusive, Wait::No, &mut Silent)
                .unwrap(),
            "{}: dropping released",
            store.name()
        );
    }
}

#[test]
fn refresh_without_any_ttl_is_an_invalid_argument() {
    let mut lock = Lock::new(
        Arc::new(parking_lot::Mutex::new(Key::new("no-ttl"))),
        StoreRef::Owned(Rc::new(InMemoryStore::new())),
        None,
        true,
    );
    lock.acquire(Mode::Exclusive, Wait::No, &mut Silent)
        .unwrap();
    let err = lock.refresh(None, &mut Silent).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }));
    assert_eq!(
        err.to_string(),
        "You have to define an expiration duration."
    );
}

#[test]
fn a_wait_with_a_deadline_gives_up_and_a_free_lock_is_taken_at_once() {
    each_store(|store, kind| {
        let resource = unique("deadline");
        let mut holder = Key::new(resource.clone());
        let mut waiter = Key::new(resource);
        store.save(&mut holder, Mode::Exclusive, None).unwrap();
        let mut report = WaitReport::default();
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(150);
        let taken = wait(
            store,
            &mut waiter,
            Mode::Exclusive,
            None,
            Some(deadline),
            &mut report,
        )
        .unwrap();
        assert!(!taken, "{kind}: the holder never let go");
        assert!(
            std::time::Instant::now() >= deadline,
            "{kind}: gave up before the deadline"
        );
        store.delete(&mut holder).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let taken = wait(
            store,
            &mut waiter,
            Mode::Exclusive,
            None,
            Some(deadline),
            &mut report,
        )
        .unwrap();
        assert!(taken, "{kind}: released, so the waiter gets it");
    });
}

/// Stores draw a new token per call; a `Lock` draws one per hold (the only way PHP reaches them).
#[test]
fn exclusive_holds_get_growing_fencing_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start();
    let stores: Vec<(Rc<dyn Store>, &str)> = vec![
        (Rc::new(FlockStore::new(dir.path()).unwrap()), "flock"),
        (Rc::new(InMemoryStore::new()), "memory"),
        (
            Rc::new(RedisStore::connect(&redis.url(), ttl(30.0)).unwrap()),
            "redis",
        ),
    ];
    for (store, kind) in stores {
        let resource = unique("fence");
        let lock_on = |resource: &str| {
            let key = Arc::new(parking_lot::Mutex::new(Key::new(resource)));
            Lock::new(key, StoreRef::Owned(store.clone()), None, true)
        };
        let mut last = 0;
        for _ in 0..5 {
            let mut lock = lock_on(&resource);
            assert!(lock
                .acquire(Mode::Exclusive, Wait::No, &mut Silent)
                .unwrap());
            let token = lock.fencing_token().unwrap().unwrap();
            assert!(token > last, "{kind}: {token} after {last}");
            assert_eq!(lock.fencing_token().unwrap(), Some(token), "{kind}: stable");
            last = token;
            lock.release(&mut Silent).unwrap();
            assert_eq!(lock.fencing_token().unwrap(), None, "{kind}: released");
        }
        let mut reader = lock_on(&resource);
        assert!(reader.acquire(Mode::Shared, Wait::No, &mut Silent).unwrap());
        assert_eq!(reader.fencing_token().unwrap(), None, "{kind}: readers");
    }
}
