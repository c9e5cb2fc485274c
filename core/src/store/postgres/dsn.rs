//! Where a PostgreSQL store connects: PDO's DSN (`pgsql:host=H;port=P;dbname=D`, what symfony/lock's
//! `PostgreSqlStore` takes) or libpq's URL (`postgresql://USER:PASSWORD@HOST:PORT/DB`, what its
//! `StoreFactory` takes for Doctrine), with the same keys in both: libpq's `host`, `port`, `dbname`,
//! `user`, `password`, `sslmode`, `sslrootcert`, `connect_timeout`, `application_name`, and
//! Deadbolt's `password_env` (the password from an environment variable, so it stays out of the
//! DSN) and `timeout` (how long one command may take). Messages never repeat a value: a DSN may
//! carry a password.

use std::path::PathBuf;
use std::time::Duration;

use tokio_postgres::config::SslMode;

use crate::{Error, Result};

/// How long connecting, and then one command, may take unless the DSN says otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
const DEFAULT_PORT: u16 = 5432;
/// The keys a DSN may use, for the message about one it may not.
const KEYS: &str = "host, port, dbname, user, password, password_env, sslmode, sslrootcert, \
                    connect_timeout, timeout, application_name";

/// A PostgreSQL server and how to reach it.
#[derive(Clone)]
pub struct PostgresServer {
    pub(super) config: tokio_postgres::Config,
    /// TLS: off, offered (used when the server has it), or required (and the certificate checked).
    pub(super) tls: Tls,
    /// The CA certificates that sign the server's (PEM); the system's when `None`.
    pub(super) root_cert: Option<PathBuf>,
    /// One command's limit (connecting has its own: `connect_timeout`, this by default).
    pub(super) timeout: Duration,
    /// `host:port/dbname`, for messages.
    pub(super) shown: String,
}

/// How a connection uses TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tls {
    Disable,
    /// libpq's `prefer`: TLS when the server offers it; then its certificate is checked.
    Prefer,
    /// `require` or `verify-full`: TLS or no connection, the certificate checked.
    Require,
}

impl std::fmt::Debug for PostgresServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the config itself: it holds the password.
        write!(f, "PostgresServer({})", self.shown)
    }
}

impl PostgresServer {
    /// The server a DSN names; `None` when `dsn` is not a PostgreSQL one.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for what this store cannot use, saying what to write instead.
    pub fn of_dsn(dsn: &str) -> Option<Result<Self>> {
        pairs_of(dsn).map(|pairs| pairs.and_then(|pairs| build(pairs, None, None)))
    }

    /// As [`Self::of_dsn`], with a user and a password given apart from the DSN (symfony/lock's
    /// `db_username` and `db_password` options); a DSN's own are kept over them.
    ///
    /// # Errors
    /// As [`Self::of_dsn`], and for a DSN that is not a PostgreSQL one.
    pub fn of_dsn_with(dsn: &str, user: Option<&str>, password: Option<&str>) -> Result<Self> {
        let pairs = pairs_of(dsn)
            .ok_or_else(|| dsn_error("it starts with neither pgsql: nor postgresql://"))??;
        build(pairs, user, password)
    }

    /// The driver a DSN of another database names (`sqlite` of `sqlite:/tmp/locks.db`, `mysql`
    /// of `mysql://...`), which symfony/lock's store refuses at its first connection rather than
    /// when made. `None` for a PostgreSQL DSN, and for a string with no driver name to show: a
    /// plain identifier of at most 32 characters before the first `:` (anything else may be a
    /// secret, and is refused at once as an invalid DSN, unshown).
    pub fn other_driver(dsn: &str) -> Option<&str> {
        let (driver, _) = dsn.split_once(':')?;
        let named = driver.len() <= 32
            && driver.starts_with(|c: char| c.is_ascii_alphabetic())
            && driver
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.' | '_'));
        (named && !names_postgres(dsn)).then_some(driver)
    }

    /// `host:port/dbname`, as messages name the server.
    pub fn shown(&self) -> &str {
        &self.shown
    }
}

/// Whether `dsn` is in one of the forms this store reads (`pgsql:`, `postgres://`,
/// `postgresql://`), whatever its content; the rest name another database.
fn names_postgres(dsn: &str) -> bool {
    dsn.starts_with("pgsql:") || dsn.starts_with("postgres://") || dsn.starts_with("postgresql://")
}

/// The DSN's keys and values, in either form; `None` when it is not a PostgreSQL DSN.
fn pairs_of(dsn: &str) -> Option<Result<Vec<(String, String)>>> {
    if !names_postgres(dsn) {
        return None;
    }
    Some(match dsn.strip_prefix("pgsql:") {
        Some(pairs) => key_values(pairs),
        None => url_pairs(dsn),
    })
}

/// PDO's form: `key=value` pairs apart by `;` (PDO turns them into spaces for libpq) or spaces.
fn key_values(text: &str) -> Result<Vec<(String, String)>> {
    text.split([';', ' '])
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| dsn_error("one of its parts is not key=value"))?;
            Ok((key.trim().to_owned(), value.trim().to_owned()))
        })
        .collect()
}

/// libpq's URL form: the user, password, host, port and database from the URL, the rest from
/// its query.
fn url_pairs(dsn: &str) -> Result<Vec<(String, String)>> {
    let url = url::Url::parse(dsn).map_err(|_| dsn_error("it is not a URL"))?;
    let mut pairs = Vec::new();
    let decoded = |text: &str| {
        percent_encoding::percent_decode_str(text)
            .decode_utf8_lossy()
            .into_owned()
    };
    if let Some(host) = url.host_str().filter(|host| !host.is_empty()) {
        pairs.push(("host".to_owned(), host.trim_matches(['[', ']']).to_owned()));
    }
    if let Some(port) = url.port() {
        pairs.push(("port".to_owned(), port.to_string()));
    }
    if !url.username().is_empty() {
        pairs.push(("user".to_owned(), decoded(url.username())));
    }
    if let Some(password) = url.password() {
        pairs.push(("password".to_owned(), decoded(password)));
    }
    let dbname = url.path().trim_start_matches('/');
    if !dbname.is_empty() {
        pairs.push(("dbname".to_owned(), decoded(dbname)));
    }
    pairs.extend(
        url.query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned())),
    );
    Ok(pairs)
}

fn build(
    pairs: Vec<(String, String)>,
    user: Option<&str>,
    password: Option<&str>,
) -> Result<PostgresServer> {
    let mut config = tokio_postgres::Config::new();
    let mut server = Settings::default();
    for (key, value) in &pairs {
        apply(&mut config, &mut server, key, value)?;
    }
    if config.get_user().is_none() {
        if let Some(user) = user {
            config.user(user);
        }
    }
    let password = match (server.password_env.take(), server.password_set) {
        (Some(_), true) => {
            return Err(dsn_error(
                "it has both a password and password_env: keep one (password_env keeps the \
                 password out of the DSN)",
            ))
        }
        (Some(variable), false) => Some(std::env::var(&variable).map_err(|_| {
            dsn_error(&format!(
                "its password_env names the environment variable \"{}\", which is not set",
                variable.chars().take(64).collect::<String>()
            ))
        })?),
        (None, _) => password.filter(|_| !server.password_set).map(str::to_owned),
    };
    if let Some(password) = password {
        config.password(password);
    }
    let host = server.host.unwrap_or_else(|| "localhost".to_owned());
    if host.starts_with('/') {
        config.host_path(&host);
    } else {
        config.host(&host);
    }
    config.port(server.port);
    let timeout = server.timeout.unwrap_or(DEFAULT_TIMEOUT);
    config.connect_timeout(server.connect_timeout.unwrap_or(timeout));
    config.ssl_mode(match server.tls {
        Tls::Disable => SslMode::Disable,
        Tls::Prefer => SslMode::Prefer,
        Tls::Require => SslMode::Require,
    });
    let dbname = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres")
        .chars()
        .take(64)
        .collect::<String>();
    Ok(PostgresServer {
        shown: format!(
            "{}:{}/{dbname}",
            host.chars().take(64).collect::<String>(),
            server.port
        ),
        config,
        tls: server.tls,
        root_cert: server.root_cert,
        timeout,
    })
}

/// What a DSN sets beside libpq's config.
struct Settings {
    host: Option<String>,
    port: u16,
    password_env: Option<String>,
    password_set: bool,
    tls: Tls,
    root_cert: Option<PathBuf>,
    timeout: Option<Duration>,
    connect_timeout: Option<Duration>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            host: None,
            port: DEFAULT_PORT,
            password_env: None,
            password_set: false,
            // libpq's default.
            tls: Tls::Prefer,
            root_cert: None,
            timeout: None,
            connect_timeout: None,
        }
    }
}

fn apply(
    config: &mut tokio_postgres::Config,
    server: &mut Settings,
    key: &str,
    value: &str,
) -> Result<()> {
    match key {
        "host" => server.host = Some(value.to_owned()),
        "port" => {
            server.port = value
                .parse()
                .ok()
                .filter(|port| *port > 0)
                .ok_or_else(|| dsn_error("its port is not a number from 1 to 65535"))?;
        }
        "dbname" => {
            config.dbname(value);
        }
        "user" => {
            config.user(value);
        }
        "password" => {
            config.password(value);
            server.password_set = true;
        }
        "password_env" => server.password_env = Some(value.to_owned()),
        "application_name" => {
            config.application_name(value);
        }
        "sslmode" => server.tls = tls_of(value)?,
        "sslrootcert" => server.root_cert = Some(PathBuf::from(value)),
        "timeout" => server.timeout = Some(seconds(value, "timeout")?),
        "connect_timeout" => server.connect_timeout = Some(seconds(value, "connect_timeout")?),
        other => {
            return Err(dsn_error(&format!(
                "its key \"{}\" is not one Deadbolt knows ({KEYS})",
                other.chars().take(32).collect::<String>()
            )))
        }
    }
    Ok(())
}

fn tls_of(mode: &str) -> Result<Tls> {
    match mode {
        "disable" => Ok(Tls::Disable),
        "prefer" | "allow" => Ok(Tls::Prefer),
        "require" | "verify-ca" | "verify-full" => Ok(Tls::Require),
        _ => Err(dsn_error(
            "its sslmode is not one of disable, allow, prefer, require, verify-ca, verify-full",
        )),
    }
}

fn seconds(value: &str, key: &str) -> Result<Duration> {
    value
        .parse::<f64>()
        .ok()
        .filter(|secs| secs.is_finite() && *secs > 0.0 && *secs <= 3600.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| {
            dsn_error(&format!(
                "its {key} is not a number of seconds between 0 and 3600"
            ))
        })
}

/// A DSN this store cannot use; the DSN itself is not repeated (it may carry a password).
fn dsn_error(why: &str) -> Error {
    Error::invalid_argument(format!(
        "Invalid PostgreSQL DSN: {why}. Use pgsql:host=HOST;port=PORT;dbname=DB (PDO's form) or \
         postgresql://USER@HOST:PORT/DB, with password_env=VARIABLE for the password."
    ))
}

#[cfg(test)]
mod tests;
