//! Tests of the DSN module.
use super::*;
use crate::{Error, Result};
use proptest::prelude::*;
use std::path::PathBuf;

fn parse(text: &str) -> Result<Dsn> {
    Dsn::parse_with_env(text, |name| {
        (name == "LOCK_PW").then(|| "s3cret".to_owned())
    })
}

#[test]
fn parses_host_port_db_and_credentials() {
    let dsn =
        parse("redis://app:p%40ss@cache.internal:6380/3?timeout=0.5&read_timeout=1.5").unwrap();
    assert!(
        matches!(&dsn.connection.endpoint, Endpoint::Tcp { host, port: 6380, tls: false } if host == "cache.internal")
    );
    assert_eq!(dsn.connection.db, 3);
    assert_eq!(dsn.connection.username.as_deref(), Some("app"));
    assert_eq!(dsn.connection.password.as_deref(), Some("p@ss"));
    assert_eq!(dsn.connection.connect_timeout, Duration::from_millis(500));
    assert_eq!(dsn.connection.read_timeout, Duration::from_millis(1500));
}

#[test]
fn release_is_sync_unless_deferred_and_shares_the_connection() {
    assert!(!parse("redis://localhost").unwrap().store.deferred_release);
    assert!(
        !parse("redis://localhost?release=sync")
            .unwrap()
            .store
            .deferred_release
    );
    let deferred = parse("redis://localhost?release=deferred").unwrap();
    assert!(deferred.store.deferred_release);
    assert_eq!(
        deferred.connection_identity(),
        parse("redis://localhost").unwrap().connection_identity()
    );
    let wrong = parse("redis://localhost?release=later")
        .unwrap_err()
        .to_string();
    assert!(
        wrong.contains("release must be \"sync\" or \"deferred\""),
        "{wrong}"
    );
}

#[test]
fn defaults_port_db_and_timeouts() {
    let dsn = parse("redis://localhost").unwrap();
    assert!(matches!(
        dsn.connection.endpoint,
        Endpoint::Tcp { port: 6379, .. }
    ));
    assert_eq!(dsn.connection.db, 0);
    assert_eq!(dsn.connection.connect_timeout, DEFAULT_CONNECT_TIMEOUT);
}

#[test]
fn a_connection_is_what_the_dsn_resolves_to_not_its_text() {
    let id = |text: &str, password: &str| {
        Dsn::parse_with_env(text, |_| Some(password.to_owned()))
            .unwrap()
            .connection_identity()
    };
    let env_dsn = "redis://u@127.0.0.1:6379/1?password_env=P";
    assert_eq!(id(env_dsn, "one"), id(env_dsn, "one"));
    assert_ne!(
        id(env_dsn, "one"),
        id(env_dsn, "two"),
        "the variable changed"
    );
    assert_eq!(
        id("redis://127.0.0.1/1", ""),
        id("redis://127.0.0.1:6379?db=1", ""),
        "two spellings of one connection"
    );
    assert_ne!(id("redis://127.0.0.1/1", ""), id("redis://127.0.0.1/2", ""));
    assert_ne!(
        id("redis://127.0.0.1/1", ""),
        id("redis://127.0.0.1/1?read_timeout=5", "")
    );
}

#[test]
fn parses_unix_sockets_and_tls() {
    let dsn = parse("redis:///var/run/redis/redis.sock?db=2").unwrap();
    assert!(
        matches!(&dsn.connection.endpoint, Endpoint::Unix(p) if p == &PathBuf::from("/var/run/redis/redis.sock"))
    );
    assert_eq!(dsn.connection.db, 2);
    let dsn = parse("rediss://h:6390?ca_file=/etc/ca.pem").unwrap();
    assert!(matches!(
        dsn.connection.endpoint,
        Endpoint::Tcp { tls: true, .. }
    ));
    assert_eq!(dsn.connection.ca_file, Some(PathBuf::from("/etc/ca.pem")));
}

#[test]
fn takes_the_password_from_the_named_environment_variable() {
    let dsn = parse("redis://h?password_env=LOCK_PW").unwrap();
    assert_eq!(dsn.connection.password.as_deref(), Some("s3cret"));
    let err = parse("redis://h?password_env=MISSING")
        .unwrap_err()
        .to_string();
    assert!(err.contains("MISSING"), "{err}");
}

/// Issue 25, item 17: an inline password and password_env were both taken, one silently ignored.
#[test]
fn refuses_an_inline_password_beside_password_env() {
    let err = parse("redis://app:hunter2@h?password_env=LOCK_PW")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("both a password") && err.contains("password_env"),
        "{err}"
    );
    assert!(!err.contains("hunter2") && !err.contains("s3cret"), "{err}");
    assert!(
        parse("redis://app@h?password_env=LOCK_PW").is_ok(),
        "a user alone is fine"
    );
}

#[test]
fn refuses_bad_input_without_quoting_secrets() {
    for text in [
        "http://u:hunter2@h",
        "redis://u:hunter2@h/notadb",
        "redis://u:hunter2@h?bogus=1",
        "redis://u:hunter2@h?timeout=-1",
        "redis://u:hunter2@h?ca_file=/x",
        "rediss:///sock",
        "not a url hunter2",
    ] {
        let err = parse(text).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{text}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }
}

#[test]
fn redacted_forms_hide_user_and_password() {
    let dsn = parse("rediss://admin:hunter2@[::1]:7000/1").unwrap();
    assert_eq!(dsn.redacted(), "rediss://[::1]:7000/1");
    let shown = format!("{dsn:?}");
    assert!(
        !shown.contains("hunter2") && !shown.contains("admin"),
        "{shown}"
    );
}

proptest! {
    #[test]
    fn parsing_never_panics_and_never_echoes_a_password(text in ".{0,80}", pw in "[a-z]{12}") {
        let candidate = format!("redis://u:{pw}@{text}");
        match parse(&candidate) {
            Ok(dsn) => prop_assert!(!dsn.redacted().contains(&pw)),
            Err(e) => prop_assert!(!e.to_string().contains(&pw)),
        }
        let _ = parse(&text);
    }
}

#[test]
fn replicas_are_asked_for_by_count_or_share_with_a_timeout_of_their_own() {
    use super::super::replicas::{ReplicaAck, Wanted};
    assert_eq!(parse("redis://localhost").unwrap().store.replicas, None);
    assert_eq!(
        parse("redis://localhost?replicas=2")
            .unwrap()
            .store
            .replicas,
        Some(ReplicaAck {
            wanted: Wanted::Count(2),
            timeout: Duration::from_secs(1)
        })
    );
    let majority = parse("redis://localhost?replicas_timeout=0.25&replicas=majority").unwrap();
    assert_eq!(
        majority.store.replicas,
        Some(ReplicaAck {
            wanted: Wanted::Majority,
            timeout: Duration::from_millis(250)
        })
    );
    assert_eq!(
        majority.connection_identity(),
        parse("redis://localhost").unwrap().connection_identity()
    );
    let alone = parse("redis://localhost?replicas_timeout=1")
        .unwrap_err()
        .to_string();
    assert!(alone.contains("replicas_timeout needs replicas"), "{alone}");
    let zero = parse("redis://localhost?replicas=0")
        .unwrap_err()
        .to_string();
    assert!(
        zero.contains("replicas must be a positive number"),
        "{zero}"
    );
}

fn sentinels(dsn: &Dsn) -> &Sentinels {
    match &dsn.connection.endpoint {
        Endpoint::Sentinel(sentinels) => sentinels,
        _ => panic!("not a sentinel DSN"),
    }
}

#[test]
fn reads_symfonys_sentinel_forms() {
    let listed =
        parse("redis:?host[s1:26379]&host[[::1]:26380]&host[s3]&redis_sentinel=mymaster&db=2")
            .unwrap();
    let nodes = &sentinels(&listed).nodes;
    assert_eq!(
        nodes,
        &[
            ("s1".to_owned(), 26379),
            ("::1".to_owned(), 26380),
            ("s3".to_owned(), 6379)
        ]
    );
    assert_eq!(sentinels(&listed).service, "mymaster");
    assert_eq!(listed.connection.db, 2);
    assert_eq!(
        listed.redacted(),
        "redis:?host[s1:26379]&host[[::1]:26380]&host[s3:6379]&redis_sentinel=mymaster&db=2"
    );
    let authority =
        parse("rediss://app:pw@s1:26379/4?host[s2:26379]&sentinel_master=svc&sentinel_password_env=LOCK_PW")
            .unwrap();
    let found = sentinels(&authority);
    assert_eq!(found.nodes.len(), 2);
    assert!(found.tls);
    assert_eq!(found.password.as_deref(), Some("s3cret"));
    assert_eq!(
        authority.connection.password.as_deref(),
        Some("pw"),
        "the primary's own"
    );
    assert_eq!(authority.connection.db, 4);
    assert!(!authority.redacted().contains("s3cret") && !authority.redacted().contains("pw"));
}

#[test]
fn a_sentinel_service_is_its_own_connection() {
    let id = |text: &str| parse(text).unwrap().connection_identity();
    let base = id("redis:?host[s1:26379]&redis_sentinel=a");
    assert_ne!(base, id("redis:?host[s1:26379]&redis_sentinel=b"));
    assert_ne!(base, id("redis:?host[s1:26380]&redis_sentinel=a"));
    assert_ne!(base, id("redis://s1:26379"));
    assert_ne!(
        base,
        id("redis:?host[s1:26379]&redis_sentinel=a&sentinel_username=u")
    );
    assert_eq!(base, id("redis://s1:26379?redis_sentinel=a"));
}

#[test]
fn one_listed_host_without_sentinel_is_a_plain_server() {
    let dsn = parse("redis:?host[cache:6380]&db=1").unwrap();
    assert!(
        matches!(&dsn.connection.endpoint, Endpoint::Tcp { host, port: 6380, .. } if host == "cache")
    );
    assert_eq!(dsn.connection.db, 1);
}

#[test]
fn refuses_what_sentinel_cannot_mean() {
    for (text, wanted) in [
        (
            "redis:?host[a:1]&host[b:2]&redis_cluster=0",
            "several hosts need redis_sentinel=<service> or redis_cluster=1",
        ),
        ("redis:?redis_sentinel=x", "redis_sentinel needs a sentinel"),
        ("redis:?host[a:1]&redis_sentinel=", "names no service"),
        ("redis:///tmp/r.sock?redis_sentinel=x", "not a socket path"),
        (
            "redis:?host[a:99999]&redis_sentinel=x",
            "host[a:99999] is not host:port",
        ),
        ("redis:?host[/tmp/s]&redis_sentinel=x", "is not host:port"),
        (
            "redis:?host[a:1]=w&redis_sentinel=x",
            "host[...] takes no value",
        ),
        ("redis://a?sentinel_username=u", "need redis_sentinel"),
        (
            "redis:?host[a:1]&redis_sentinel=x&sentinel_password_env=NOPE",
            "\"NOPE\" named by sentinel_password_env is not set",
        ),
        (
            "redis:?host[a:1]&redis_sentinel=x&redis_cluster=1",
            "exclude each other",
        ),
    ] {
        let message = parse(text).unwrap_err().to_string();
        assert!(message.contains(wanted), "{text}: {message}");
    }
}

fn seeds(dsn: &Dsn) -> Vec<(String, u16)> {
    match &dsn.connection.endpoint {
        Endpoint::Cluster { seeds, .. } => seeds.clone(),
        _ => panic!("not a cluster DSN"),
    }
}

#[test]
fn reads_symfonys_cluster_forms_and_several_hosts_as_seed_nodes() {
    let wanted = vec![("a".to_owned(), 7000), ("b".to_owned(), 7001)];
    for text in [
        "redis:?host[a:7000]&host[b:7001]&redis_cluster=1",
        "redis:?host[a:7000]&host[b:7001]&redis_cluster=true",
        "redis://a:7000?host[b:7001]&redis_cluster=yes",
        "redis:?host[a:7000]&host[b:7001]",
        "redis://a:7000?host[b:7001]",
    ] {
        let dsn = parse(text).unwrap();
        assert_eq!(seeds(&dsn), wanted, "{text}");
        assert_eq!(dsn.connection.db, 0);
    }
    let one = parse("rediss://u:secret@a:7000?redis_cluster=1&password_env=").unwrap_err();
    assert!(!one.to_string().contains("secret"));
    let tls = parse("rediss://u:pw@a:7000?redis_cluster=1&replicas=1").unwrap();
    assert!(tls.connection.endpoint.tls());
    assert_eq!(seeds(&tls), vec![("a".to_owned(), 7000)]);
    assert!(tls.store.replicas.is_some());
    assert_eq!(tls.redacted(), "rediss:?host[a:7000]&redis_cluster=1");
    assert!(!format!("{tls:?}").contains("pw"));
}

#[test]
fn a_cluster_is_its_own_connection_whatever_the_seeds_order() {
    let one = parse("redis:?host[a:7000]&host[b:7001]&redis_cluster=1").unwrap();
    let same = parse("redis://a:7000?host[b:7001]").unwrap();
    let other = parse("redis:?host[b:7001]&host[a:7000]&redis_cluster=1").unwrap();
    let plain = parse("redis://a:7000").unwrap();
    assert_eq!(one.connection_identity(), same.connection_identity());
    assert_ne!(one.connection_identity(), plain.connection_identity());
    // The seeds are asked in the DSN's order, so another order is another connection.
    assert_ne!(one.connection_identity(), other.connection_identity());
}

#[test]
fn refuses_what_a_cluster_cannot_mean() {
    for (text, wanted) in [
        ("redis:?host[a:1]&host[b:1]&db=1", "database 0 only"),
        ("redis://a:1/2?host[b:1]", "database 0 only"),
        (
            "redis:?host[a:1]&redis_cluster=1&release=deferred",
            "release=deferred is not supported on a Redis Cluster",
        ),
        ("redis:?redis_cluster=1", "redis_cluster needs a seed node"),
        ("redis:///tmp/r.sock?redis_cluster=1", "not a socket path"),
        (
            "redis:?host[a:1]&redis_cluster=maybe",
            "redis_cluster must be 1 or 0",
        ),
    ] {
        let message = parse(text).unwrap_err().to_string();
        assert!(message.contains(wanted), "{text}: {message}");
    }
}
