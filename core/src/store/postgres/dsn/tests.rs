use super::*;

fn parse(dsn: &str) -> Result<PostgresServer> {
    PostgresServer::of_dsn(dsn).expect("a PostgreSQL DSN")
}

fn message(dsn: &str) -> String {
    parse(dsn).expect_err("refused").to_string()
}

#[test]
fn reads_pdos_form_and_libpqs_url_alike() {
    let pdo =
        parse("pgsql:host=db.local;port=6543;dbname=app;user=locker;sslmode=disable").unwrap();
    let url = parse("postgresql://locker@db.local:6543/app?sslmode=disable").unwrap();
    for server in [&pdo, &url] {
        assert_eq!(server.shown(), "db.local:6543/app");
        assert_eq!(server.config.get_user(), Some("locker"));
        assert_eq!(server.config.get_dbname(), Some("app"));
        assert_eq!(server.tls, Tls::Disable);
        assert_eq!(server.timeout, DEFAULT_TIMEOUT);
    }
    assert!(PostgresServer::of_dsn("redis://h").is_none());
}

#[test]
fn defaults_as_libpq_does() {
    let server = parse("pgsql:").unwrap();
    assert_eq!(server.shown(), "localhost:5432/postgres");
    assert_eq!(server.tls, Tls::Prefer);
}

#[test]
fn takes_the_password_from_the_environment_and_never_shows_one() {
    std::env::set_var("DEADBOLT_PG_DSN_TEST_PW", "s3cret-env");
    let server = parse("pgsql:host=h;user=u;password_env=DEADBOLT_PG_DSN_TEST_PW").unwrap();
    assert_eq!(server.config.get_password(), Some(&b"s3cret-env"[..]));
    assert!(!format!("{server:?}").contains("s3cret"));
    let both = message("postgresql://u:s3cret-inline@h/db?password_env=DEADBOLT_PG_DSN_TEST_PW");
    assert!(both.contains("both a password and password_env"), "{both}");
    assert!(!both.contains("s3cret"), "{both}");
    let missing = message("pgsql:host=h;password_env=DEADBOLT_PG_DSN_UNSET");
    assert!(
        missing.contains("\"DEADBOLT_PG_DSN_UNSET\", which is not set"),
        "{missing}"
    );
}

#[test]
fn options_fill_in_what_the_dsn_leaves_out() {
    let server = PostgresServer::of_dsn_with("pgsql:host=h", Some("u"), Some("pw")).unwrap();
    assert_eq!(server.config.get_user(), Some("u"));
    assert_eq!(server.config.get_password(), Some(&b"pw"[..]));
    let own =
        PostgresServer::of_dsn_with("pgsql:host=h;user=me;password=mine", Some("u"), Some("pw"))
            .unwrap();
    assert_eq!(own.config.get_user(), Some("me"));
    assert_eq!(own.config.get_password(), Some(&b"mine"[..]));
}

#[test]
fn refuses_what_it_cannot_use_without_repeating_the_dsn() {
    for (dsn, says) in [
        (
            "pgsql:host=h;password=s3cret;colour=blue",
            "\"colour\" is not one Deadbolt knows",
        ),
        (
            "pgsql:host=h;password=s3cret;port=0",
            "port is not a number",
        ),
        (
            "pgsql:host=h;password=s3cret;sslmode=sometimes",
            "sslmode is not one of",
        ),
        (
            "pgsql:host=h;password=s3cret;timeout=-1",
            "timeout is not a number of seconds",
        ),
        ("pgsql:host=h;password=s3cret;junk", "not key=value"),
    ] {
        let error = message(dsn);
        assert!(error.contains(says), "{dsn}: {error}");
        assert!(!error.contains("s3cret"), "{error}");
    }
}

#[test]
fn a_socket_directory_is_a_host() {
    let server = parse("pgsql:host=/run/postgresql;dbname=app").unwrap();
    assert_eq!(server.shown(), "/run/postgresql:5432/app");
}

#[test]
fn a_dsn_of_another_database_names_its_driver_only_when_that_is_a_plain_name() {
    assert_eq!(
        PostgresServer::other_driver("sqlite:/tmp/locks.db"),
        Some("sqlite")
    );
    assert_eq!(
        PostgresServer::other_driver("mysql://u:pw@db/locks"),
        Some("mysql")
    );
    assert_eq!(PostgresServer::other_driver("pgsql:host=db"), None);
    assert_eq!(PostgresServer::other_driver("postgresql://db/locks"), None);
    // Nothing that could be a secret is shown: no name before the colon, or not a plain one.
    assert_eq!(PostgresServer::other_driver("s3cret@host:5432"), None);
    assert_eq!(PostgresServer::other_driver("no colon at all"), None);
    assert_eq!(
        PostgresServer::other_driver(&format!("{}:x", "a".repeat(33))),
        None
    );
}
