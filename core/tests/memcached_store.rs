//! The memcached store against a real memcached: symfony/lock's item layout (read back with the
//! text protocol, as PHP's `\Memcached` reads it), expiry, refreshes that never revive a lost lock,
//! a server restart, names memcached cannot take, a server that is gone.
#![allow(clippy::unwrap_used)] // tests: an unwrap failing is the test failing

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use deadbolt_core::{
    Error, ExpiringStore, InspectingStore, Key, MemcachedServer as Server, MemcachedStore, Mode,
    Store, Ttl,
};
use support::{unique, MemcachedServer};

fn ttl(secs: f64) -> Ttl {
    Ttl::from_secs(secs).unwrap()
}

/// `gets KEY` over the text protocol: the value and flags, as PHP's `\Memcached` sees the item.
fn text_get(port: u16, key: &str) -> Option<(String, u32)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "gets {key}\r\n").unwrap();
    let mut reader = BufReader::new(stream);
    let mut header = String::new();
    reader.read_line(&mut header).unwrap();
    if header.starts_with("END") {
        return None;
    }
    // VALUE <key> <flags> <bytes> <cas>
    let fields: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(fields[0], "VALUE", "{header}");
    let mut value = String::new();
    reader.read_line(&mut value).unwrap();
    Some((value.trim_end().to_owned(), fields[2].parse().unwrap()))
}

/// `set KEY 0 TTL` of another client's token (a symfony/lock process holding the lock).
fn text_set(port: u16, key: &str, value: &str, ttl: u32) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "set {key} 0 {ttl} {}\r\n{value}\r\n", value.len()).unwrap();
    let mut reply = String::new();
    BufReader::new(stream).read_line(&mut reply).unwrap();
    assert_eq!(reply, "STORED\r\n");
}

#[test]
fn a_lock_is_symfony_locks_item_the_resource_holding_the_token() {
    let server = MemcachedServer::start();
    let store = MemcachedStore::connect(&server.dsn(), ttl(30.0)).unwrap();
    let resource = unique("item");
    let mut key = Key::new(resource.clone());
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    let (value, flags) = text_get(server.port, &resource).unwrap();
    assert_eq!(value, key.token().unwrap().as_str());
    assert_eq!(flags, 0, "a string, as PHP's \\Memcached stores one");
    store.delete(&mut key).unwrap();
    assert_eq!(text_get(server.port, &resource), None);
}

#[test]
fn an_item_another_client_holds_is_a_conflict_and_is_left_alone() {
    let server = MemcachedServer::start();
    let store = MemcachedStore::connect(&server.dsn(), ttl(30.0)).unwrap();
    let resource = unique("theirs");
    text_set(server.port, &resource, "their-token", 60);
    let mut key = Key::new(resource.clone());
    let err = store.save(&mut key, Mode::Exclusive, None).unwrap_err();
    assert!(err.is_conflict(), "{err}");
    store.delete(&mut key).unwrap();
    assert_eq!(
        text_get(server.port, &resource).unwrap().0,
        "their-token",
        "a release by a key that does not hold the lock removes nothing"
    );
}

#[test]
fn the_key_prefix_is_prepended_as_memcached_prepends_it() {
    let server = MemcachedServer::start();
    let store =
        MemcachedStore::connect(&format!("{}?prefix_key=app:", server.dsn()), ttl(30.0)).unwrap();
    let resource = unique("prefixed");
    let mut key = Key::new(resource.clone());
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    assert!(text_get(server.port, &format!("app:{resource}")).is_some());
    assert_eq!(text_get(server.port, &resource), None);
}

#[test]
fn an_expired_lock_is_free_and_its_refresh_reports_it_lost() {
    let server = MemcachedServer::start();
    let store = MemcachedStore::connect(&server.dsn(), ttl(30.0)).unwrap();
    let resource = unique("expiry");
    let mut holder = Key::new(resource.clone());
    store
        .save(&mut holder, Mode::Exclusive, Some(ttl(1.0)))
        .unwrap();
    // memcached counts whole seconds: an item of 1 s (kept 2 s: one more for memcached's clock) is gone once three
    // have passed.
    std::thread::sleep(Duration::from_millis(3100));
    assert!(!store.exists(&holder).unwrap());
    let err = store
        .put_off_expiration(&mut holder, ttl(30.0))
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert_eq!(
        text_get(server.port, &resource),
        None,
        "a refresh never takes a lost lock again"
    );
    let mut rival = Key::new(resource);
    store.save(&mut rival, Mode::Exclusive, None).unwrap();
}

#[test]
fn the_refresher_extends_only_the_token_that_holds_the_lock() {
    let server = MemcachedServer::start();
    let store = MemcachedStore::connect(&server.dsn(), ttl(30.0)).unwrap();
    let extender = store.extender().unwrap();
    let resource = unique("extend");
    let mut key = Key::new(resource.clone());
    store
        .save(&mut key, Mode::Exclusive, Some(ttl(5.0)))
        .unwrap();
    let token = key.token().unwrap().as_str().to_owned();
    assert!(extender
        .extend(resource.as_bytes(), &token, ttl(60.0))
        .unwrap());
    let expires = store.inspect(resource.as_bytes()).unwrap().holders[0].expires_at;
    let left = expires
        .unwrap()
        .duration_since(std::time::SystemTime::now());
    assert!(left.unwrap() > Duration::from_secs(30), "extended to 60 s");
    assert!(!extender
        .extend(resource.as_bytes(), "another-token", ttl(60.0))
        .unwrap());
}

#[test]
fn a_server_restart_loses_the_lock_and_the_holder_sees_it() {
    let mut server = MemcachedServer::start();
    let store = MemcachedStore::connect(&server.dsn(), ttl(30.0)).unwrap();
    let mut key = Key::new(unique("restart"));
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    server.restart();
    // The first call after the restart may meet the old, dead connection: a storage failure,
    // never a "still held".
    match store.exists(&key) {
        Ok(held) => assert!(!held),
        Err(e) => assert!(matches!(e, Error::Storage { .. }), "{e}"),
    }
    assert!(!store.exists(&key).unwrap());
    assert!(store.put_off_expiration(&mut key, ttl(30.0)).is_err());
}

#[test]
fn names_memcached_cannot_take_are_refused_clearly() {
    let server = MemcachedServer::start();
    let store = MemcachedStore::connect(&server.dsn(), ttl(30.0)).unwrap();
    for resource in ["x".repeat(251), " ".repeat(188), String::new()] {
        let mut key = Key::new(resource);
        let err = store.save(&mut key, Mode::Exclusive, None).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
        assert!(
            err.to_string().contains("cannot be a memcached key"),
            "{err}"
        );
    }
}

#[test]
fn a_name_with_spaces_is_a_binary_key_and_a_lock_like_any_other() {
    let server = MemcachedServer::start();
    let store = MemcachedStore::connect(&server.dsn(), ttl(30.0)).unwrap();
    let resource = unique("with space\n");
    let mut key = Key::new(resource.clone());
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    let mut rival = Key::new(resource);
    assert!(store
        .save(&mut rival, Mode::Exclusive, None)
        .unwrap_err()
        .is_conflict());
    store.delete(&mut key).unwrap();
    store.save(&mut rival, Mode::Exclusive, None).unwrap();
}

#[test]
fn a_server_that_is_gone_is_a_storage_failure_naming_the_store() {
    let mut server = MemcachedServer::start();
    let port = server.port;
    server.stop();
    let store = MemcachedStore::new(Server::new("127.0.0.1", port), ttl(30.0)).unwrap();
    let mut key = Key::new(unique("gone"));
    let err = store.save(&mut key, Mode::Exclusive, None).unwrap_err();
    assert!(matches!(err, Error::Storage { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with(&format!("MemcachedStore(127.0.0.1:{port}) failed to take")),
        "{err}"
    );
}

#[test]
fn an_operator_sees_the_holder_and_can_release_it() {
    let server = MemcachedServer::start();
    let store = MemcachedStore::connect(&server.dsn(), ttl(30.0)).unwrap();
    let resource = unique("operator");
    let mut key = Key::new(resource.clone());
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    let state = store.inspect(resource.as_bytes()).unwrap();
    assert_eq!(state.holders.len(), 1);
    assert_eq!(
        state.holders[0].token_digest,
        deadbolt_core::token_digest(key.token().unwrap().as_str())
    );
    assert_eq!(store.force_release(resource.as_bytes()).unwrap(), 1);
    assert!(!store.exists(&key).unwrap());
    assert_eq!(store.force_release(resource.as_bytes()).unwrap(), 0);
}

#[test]
fn a_ttl_under_a_second_is_refused_as_memcached_counts_whole_seconds() {
    let server = MemcachedServer::start();
    let store = MemcachedStore::connect(&server.dsn(), ttl(30.0)).unwrap();
    let mut key = Key::new(unique("short"));
    let err = store
        .save(&mut key, Mode::Exclusive, Some(ttl(0.5)))
        .unwrap_err();
    assert!(matches!(err, Error::InvalidTtl { .. }), "{err}");
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    let err = store.put_off_expiration(&mut key, ttl(0.1)).unwrap_err();
    assert!(matches!(err, Error::InvalidTtl { .. }), "{err}");
    assert!(
        store.exists(&key).unwrap(),
        "a refused refresh leaves the lock"
    );
}
