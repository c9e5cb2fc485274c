//! The lock table's store (PdoStore's engine) on a real PostgreSQL, through its native session:
//! symfony/lock's rows (read back with psql), a row's lifetime, expired rows taken over but never
//! revived by a refresh, the table made on first use and by createTable(), the refresher's
//! extender, a server restart that keeps a committed row, a row the database lost.
#![allow(clippy::unwrap_used)] // tests: an unwrap failing is the test failing

mod support;

use std::time::SystemTime;

use deadbolt_core::{
    table_key_id, Error, ExpiringStore, InspectingStore, Key, Mode, Store, Table, Ttl,
};
use support::{table_store, table_store_on, unique, PostgresServer};

fn ttl(secs: f64) -> Ttl {
    Ttl::from_secs(secs).unwrap()
}

/// The row of `resource` as "token|seconds left by the database's clock", or "".
fn row(server: &PostgresServer, resource: &str) -> String {
    server.psql(&format!(
        "SELECT key_token || '|' || (key_expiration - CAST(EXTRACT(epoch FROM NOW()) AS INT)) \
         FROM lock_keys WHERE key_id = '{}'",
        table_key_id(resource.as_bytes())
    ))
}

#[test]
fn a_lock_is_symfony_locks_row_and_outlives_its_lifetime_by_a_second_or_two() {
    let server = PostgresServer::start();
    let store = table_store(&server);
    let resource = unique("invoice");
    let mut key = Key::new(resource.clone());
    store
        .save(&mut key, Mode::Exclusive, Some(ttl(30.0)))
        .unwrap();

    let row = row(&server, &resource);
    let (token, left) = row.trim().split_once('|').unwrap();
    assert_eq!(token, key.token().unwrap().as_str());
    let left: i64 = left.parse().unwrap();
    assert!(
        (30..=31).contains(&left),
        "31 s, less a second that may tick: {left}"
    );
    store.delete(&mut key).unwrap();
    assert_eq!(row_count(&server), "0");
}

fn row_count(server: &PostgresServer) -> String {
    server
        .psql("SELECT COUNT(*) FROM lock_keys")
        .trim()
        .to_owned()
}

#[test]
fn an_expired_row_is_taken_over_but_never_revived_by_its_holders_refresh() {
    let server = PostgresServer::start();
    let store = table_store(&server);
    let resource = unique("expired");
    let mut holder = Key::new(resource.clone());
    store.save(&mut holder, Mode::Exclusive, None).unwrap();
    // The row expires (as if its holder had stalled past its TTL).
    server.psql("UPDATE lock_keys SET key_expiration = 0");

    let refused = store
        .put_off_expiration(&mut holder, ttl(30.0))
        .unwrap_err();
    assert!(refused.is_conflict(), "{refused}");
    assert!(!store.exists(&holder).unwrap());
    let mut rival = Key::new(resource);
    store.save(&mut rival, Mode::Exclusive, None).unwrap();
    assert!(store.exists(&rival).unwrap());
    assert!(!store.exists(&holder).unwrap());
}

#[test]
fn a_save_of_a_key_that_holds_renews_it_and_another_key_conflicts() {
    let server = PostgresServer::start();
    let store = table_store(&server);
    let resource = unique("again");
    let mut key = Key::new(resource.clone());
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    store.save(&mut key, Mode::Shared, None).unwrap();
    let error = store
        .save(&mut Key::new(resource), Mode::Shared, None)
        .unwrap_err();
    assert!(
        error.is_conflict(),
        "a read lock is an exclusive one here: {error}"
    );
}

#[test]
fn the_table_is_made_on_first_use_and_create_table_refuses_a_second_time() {
    let server = PostgresServer::start();
    let table = Table {
        name: "app_locks".into(),
        ..Table::default()
    };
    let store = table_store_on(&server, table.clone());
    let mut key = Key::new(unique("first"));
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    assert_eq!(server.psql("SELECT COUNT(*) FROM app_locks").trim(), "1");

    let error = store.create_table().unwrap_err();
    assert!(matches!(error, Error::Storage { .. }), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("PdoStore(pgsql: app_locks) failed to create"),
        "{error}"
    );
    let other = table_store_on(
        &server,
        Table {
            name: "made_by_hand".into(),
            ..table
        },
    );
    other.create_table().unwrap();
    assert_eq!(server.psql("SELECT COUNT(*) FROM made_by_hand").trim(), "0");
}

#[test]
fn the_refreshers_extender_extends_the_holders_row_only() {
    let server = PostgresServer::start();
    let store = table_store(&server);
    let resource = unique("refreshed");
    let mut key = Key::new(resource.clone());
    store
        .save(&mut key, Mode::Exclusive, Some(ttl(5.0)))
        .unwrap();
    let extender = store.extender().unwrap();
    let token = key.token().unwrap().as_str().to_owned();

    // From another thread, as the refresher runs it.
    let (extended, stranger) = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                (
                    extender
                        .extend(resource.as_bytes(), &token, ttl(60.0))
                        .unwrap(),
                    extender
                        .extend(resource.as_bytes(), "not-the-token", ttl(60.0))
                        .unwrap(),
                )
            })
            .join()
            .unwrap()
    });
    assert!(extended);
    assert!(!stranger);
    let left: i64 = row(&server, &resource)
        .trim()
        .split_once('|')
        .unwrap()
        .1
        .parse()
        .unwrap();
    assert!(left >= 60, "{left}");
}

#[test]
fn a_restart_keeps_a_committed_row_and_a_lost_row_is_a_lost_lock() {
    let server = PostgresServer::start();
    // The private server commits asynchronously; this database as production's default does.
    server.psql("ALTER DATABASE postgres SET synchronous_commit = on");
    let store = table_store(&server);
    let mut key = Key::new(unique("restart"));
    store
        .save(&mut key, Mode::Exclusive, Some(ttl(60.0)))
        .unwrap();

    server.stop();
    let error = store.exists(&key).unwrap_err();
    assert!(error.to_string().contains("cannot connect"), "{error}");
    server.start_again();
    assert!(store.exists(&key).unwrap(), "the row outlived the restart");
    store.put_off_expiration(&mut key, ttl(60.0)).unwrap();

    server.psql("DELETE FROM lock_keys");
    assert!(!store.exists(&key).unwrap());
    assert!(store
        .put_off_expiration(&mut key, ttl(60.0))
        .unwrap_err()
        .is_conflict());
}

#[test]
fn an_operator_sees_the_unexpired_rows_holder_and_can_release_it() {
    let server = PostgresServer::start();
    let store = table_store(&server);
    let resource = unique("inspected");
    let mut key = Key::new(resource.clone());
    store
        .save(&mut key, Mode::Exclusive, Some(ttl(60.0)))
        .unwrap();

    let state = store.inspect(resource.as_bytes()).unwrap();
    assert_eq!(state.holders.len(), 1);
    let holder = &state.holders[0];
    assert_eq!(holder.token_digest, digest_of(&key));
    let left = holder
        .expires_at
        .unwrap()
        .duration_since(SystemTime::now())
        .unwrap();
    assert!(left.as_secs() >= 59, "{left:?}");
    assert_eq!(store.force_release(resource.as_bytes()).unwrap(), 1);
    assert!(!store.exists(&key).unwrap());
    assert!(store
        .inspect(resource.as_bytes())
        .unwrap()
        .holders
        .is_empty());
    assert_eq!(store.force_release(resource.as_bytes()).unwrap(), 0);
}

fn digest_of(key: &Key) -> String {
    deadbolt_core::token_digest(key.token().unwrap().as_str())
}

#[test]
fn a_ttl_under_a_second_is_refused_as_symfony_lock_does() {
    let server = PostgresServer::start();
    let store = table_store(&server);
    let mut key = Key::new(unique("short"));
    let error = store
        .save(&mut key, Mode::Exclusive, Some(ttl(0.5)))
        .unwrap_err();
    assert!(matches!(error, Error::InvalidTtl { .. }), "{error}");
}
