//! The PostgreSQL store against a real server: symfony/lock's advisory keys (seen from a session of
//! psql's own), exclusion between sessions, the session's keys kept apart, waits in the server's
//! queue (with a deadline, and granted on a release), a killed session and a server restart seen
//! as lost locks, a server that is gone.
#![allow(clippy::unwrap_used)] // tests: an unwrap failing is the test failing

mod support;

use std::time::{Duration, Instant};

use deadbolt_core::{advisory_key, wait, Error, Key, Mode, PostgreSqlStore, Store, WaitReport};
use support::{unique, PostgresServer};

fn store(server: &PostgresServer) -> PostgreSqlStore {
    PostgreSqlStore::connect(&server.dsn()).unwrap()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_lock_is_symfony_locks_advisory_key_in_the_holders_session() {
    let server = PostgresServer::start();
    let resource = unique("invoice");
    let id = advisory_key(resource.as_bytes());
    let store = store(&server);
    let mut key = Key::new(resource.clone());
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    assert_eq!(server.advisory(id), ["ExclusiveLock:true"]);
    // A session of its own (symfony/lock's, say) cannot take it.
    let taken = server.psql(&format!("SELECT pg_try_advisory_lock({id})"));
    assert_eq!(taken, "f");
    store.delete(&mut key).unwrap();
    assert!(server.advisory(id).is_empty());
    store.save(&mut key, Mode::Shared, None).unwrap();
    assert_eq!(server.advisory(id), ["ShareLock:true"]);
    store.delete(&mut key).unwrap();
}

#[test]
fn keys_of_one_process_exclude_each_other_on_its_one_session() {
    let server = PostgresServer::start();
    let store = store(&server);
    let resource = unique("report");
    let id = advisory_key(resource.as_bytes());
    let (mut a, mut b) = (Key::new(resource.clone()), Key::new(resource.clone()));
    store.save(&mut a, Mode::Shared, None).unwrap();
    store.save(&mut b, Mode::Shared, None).unwrap();
    // The session asked the server once: one reader there, two here.
    assert_eq!(server.advisory(id), ["ShareLock:true"]);
    assert!(store
        .save(&mut a, Mode::Exclusive, None)
        .unwrap_err()
        .is_conflict());
    store.delete(&mut b).unwrap();
    assert_eq!(server.advisory(id), ["ShareLock:true"], "a still reads");
    store.save(&mut a, Mode::Exclusive, None).unwrap();
    assert_eq!(
        server.advisory(id),
        ["ExclusiveLock:true"],
        "promoted, the read lock given up"
    );
    assert!(store
        .save(&mut b, Mode::Shared, None)
        .unwrap_err()
        .is_conflict());
    assert!(!store.exists(&b).unwrap());
    store.delete(&mut b).unwrap();
    assert!(
        store.exists(&a).unwrap(),
        "another key's release leaves the lock"
    );
    store.save(&mut a, Mode::Shared, None).unwrap();
    assert_eq!(server.advisory(id), ["ShareLock:true"], "demoted");
    store.delete(&mut a).unwrap();
    assert!(server.advisory(id).is_empty());
}

#[test]
fn a_wait_queues_in_the_server_and_gets_the_lock_when_it_is_released() {
    let server = PostgresServer::start();
    let resource = unique("queue");
    let id = advisory_key(resource.as_bytes());
    let holder = store(&server);
    let mut held = Key::new(resource.clone());
    holder.save(&mut held, Mode::Exclusive, None).unwrap();
    let dsn = server.dsn();
    let waiter = std::thread::spawn(move || {
        let store = PostgreSqlStore::connect(&dsn).unwrap();
        let mut key = Key::new(resource);
        let mut report = WaitReport::default();
        let got = wait(&store, &mut key, Mode::Exclusive, None, None, &mut report).unwrap();
        (got, store.exists(&key).unwrap(), report)
    });
    wait_until("the waiter queues in the server", || {
        server.advisory(id).len() == 2
    });
    assert_eq!(
        server.advisory(id),
        ["ExclusiveLock:false", "ExclusiveLock:true"]
    );
    holder.delete(&mut held).unwrap();
    let (got, exists, report) = waiter.join().unwrap();
    assert!(got && exists);
    assert_eq!(report.wakeups, 1, "{report:?}");
}

#[test]
fn a_wait_with_a_deadline_leaves_the_queue_holding_nothing() {
    let server = PostgresServer::start();
    let resource = unique("deadline");
    let id = advisory_key(resource.as_bytes());
    let holder = store(&server);
    let mut held = Key::new(resource.clone());
    holder.save(&mut held, Mode::Shared, None).unwrap();
    let waiter = store(&server);
    let mut key = Key::new(resource.clone());
    let deadline = Some(Instant::now() + Duration::from_millis(300));
    let mut report = WaitReport::default();
    assert!(!wait(
        &waiter,
        &mut key,
        Mode::Exclusive,
        None,
        deadline,
        &mut report
    )
    .unwrap());
    assert_eq!(
        server.advisory(id),
        ["ShareLock:true"],
        "no waiter is left behind"
    );
    // The session is fine after its lock_timeout: a shared lock is taken at once, and the
    // next wait is not limited by the last one's time.
    let mut reader = Key::new(resource.clone());
    assert!(wait(&waiter, &mut reader, Mode::Shared, None, None, &mut report).unwrap());
    waiter.delete(&mut reader).unwrap();
    holder.delete(&mut held).unwrap();
}

#[test]
fn a_wait_for_a_lock_this_process_holds_polls_to_its_deadline() {
    let server = PostgresServer::start();
    let store = store(&server);
    let resource = unique("self");
    let (mut a, mut b) = (Key::new(resource.clone()), Key::new(resource));
    store.save(&mut a, Mode::Exclusive, None).unwrap();
    let deadline = Some(Instant::now() + Duration::from_millis(250));
    let mut report = WaitReport::default();
    // The server would grant the session its own lock again: this must not.
    assert!(!wait(&store, &mut b, Mode::Exclusive, None, deadline, &mut report).unwrap());
    assert!(store.exists(&a).unwrap() && !store.exists(&b).unwrap());
}

#[test]
fn a_session_the_server_ends_is_seen_as_a_lost_lock() {
    let server = PostgresServer::start();
    let store = store(&server);
    let resource = unique("terminated");
    let mut key = Key::new(resource.clone());
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    // An operator (or a failover, or an idle timeout) ends the holder's session.
    server.psql(
        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND pid <> pg_backend_pid()",
    );
    wait_until("the session ended", || {
        server
            .advisory(advisory_key(resource.as_bytes()))
            .is_empty()
    });
    // The call finds the connection closed, and answers on a new session: not held.
    assert!(!store.exists(&key).unwrap());
    assert!(store
        .put_off_expiration(&mut key, deadbolt_core::Ttl::from_secs(1.0).unwrap())
        .unwrap_err()
        .is_conflict());
    // A new session takes locks again.
    let mut again = Key::new(resource);
    store.save(&mut again, Mode::Exclusive, None).unwrap();
    assert!(store.exists(&again).unwrap());
}

#[test]
fn a_server_restart_is_a_lost_lock_and_a_stopped_server_a_storage_error() {
    let server = PostgresServer::start();
    let store = store(&server);
    let mut key = Key::new(unique("restart"));
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    server.stop();
    let error = store.exists(&key).unwrap_err();
    assert!(matches!(error, Error::Storage { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains("PostgreSqlStore(127.0.0.1:"), "{message}");
    let mut other = Key::new(unique("down"));
    let message = store
        .save(&mut other, Mode::Exclusive, None)
        .unwrap_err()
        .to_string();
    assert!(message.contains("cannot connect"), "{message}");
    server.start_again();
    assert!(!store.exists(&key).unwrap(), "the restart freed it");
    store.save(&mut other, Mode::Exclusive, None).unwrap();
}
