//! Tests of dsn.rs.
use super::*;
use proptest::prelude::*;

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
        matches!(&dsn.endpoint, Endpoint::Tcp { host, port: 6380, tls: false } if host == "cache.internal")
    );
    assert_eq!(dsn.db, 3);
    assert_eq!(dsn.username.as_deref(), Some("app"));
    assert_eq!(dsn.password.as_deref(), Some("p@ss"));
    assert_eq!(dsn.connect_timeout, Duration::from_millis(500));
    assert_eq!(dsn.read_timeout, Duration::from_millis(1500));
}

#[test]
fn release_is_sync_unless_deferred_and_shares_the_connection() {
    assert!(!parse("redis://localhost").unwrap().deferred_release);
    assert!(
        !parse("redis://localhost?release=sync")
            .unwrap()
            .deferred_release
    );
    let deferred = parse("redis://localhost?release=deferred").unwrap();
    assert!(deferred.deferred_release);
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
    assert!(matches!(dsn.endpoint, Endpoint::Tcp { port: 6379, .. }));
    assert_eq!(dsn.db, 0);
    assert_eq!(dsn.connect_timeout, DEFAULT_CONNECT_TIMEOUT);
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
        matches!(&dsn.endpoint, Endpoint::Unix(p) if p == &PathBuf::from("/var/run/redis/redis.sock"))
    );
    assert_eq!(dsn.db, 2);
    let dsn = parse("rediss://h:6390?ca_file=/etc/ca.pem").unwrap();
    assert!(matches!(dsn.endpoint, Endpoint::Tcp { tls: true, .. }));
    assert_eq!(dsn.ca_file, Some(PathBuf::from("/etc/ca.pem")));
}

#[test]
fn takes_the_password_from_the_named_environment_variable() {
    let dsn = parse("redis://h?password_env=LOCK_PW").unwrap();
    assert_eq!(dsn.password.as_deref(), Some("s3cret"));
    let err = parse("redis://h?password_env=MISSING")
        .unwrap_err()
        .to_string();
    assert!(err.contains("MISSING"), "{err}");
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
    assert_eq!(parse("redis://localhost").unwrap().replicas, None);
    assert_eq!(
        parse("redis://localhost?replicas=2").unwrap().replicas,
        Some(ReplicaAck {
            wanted: Wanted::Count(2),
            timeout: Duration::from_secs(1)
        })
    );
    let majority = parse("redis://localhost?replicas_timeout=0.25&replicas=majority").unwrap();
    assert_eq!(
        majority.replicas,
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
