//! Redis connection strings: parsing, and the redacted form used in every message.
//!
//! `redis://[user[:password]@]host[:port][/db][?options]`, `rediss://...` (TLS, certificates
//! verified, no way to turn that off) and `redis:///path/to/redis.sock` (unix socket).
//! Options: `timeout` (connect, seconds), `read_timeout` (seconds), `password_env` (the NAME of an
//! environment variable holding the password, so the secret stays out of configuration),
//! `ca_file` (PEM bundle for `rediss`), `db`.

use sha2::{Digest, Sha256};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::replicas::{ReplicaAck, Wanted, DEFAULT_TIMEOUT as DEFAULT_REPLICAS_TIMEOUT};
use crate::{Error, Result};

const DEFAULT_PORT: u16 = 6379;
/// Connect timeout when the DSN names none.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Read and write timeout when the DSN names none.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(2);

/// Where the server is.
#[derive(Clone, PartialEq, Eq)]
pub enum Endpoint {
    Tcp { host: String, port: u16, tls: bool },
    Unix(PathBuf),
}

/// A parsed DSN. `Debug` and `Display` never show the user name or the password.
#[derive(Clone, PartialEq)]
pub struct Dsn {
    pub endpoint: Endpoint,
    pub db: i64,
    pub username: Option<String>,
    pub password: Option<String>,
    pub connect_timeout: Duration,
    pub read_timeout: Duration,
    pub ca_file: Option<PathBuf>,
    /// `release=deferred`: a release is sent without waiting for its reply (`pending.rs`). Not
    /// part of the connection identity: stores that differ only here share their connection.
    pub deferred_release: bool,
    /// `replicas=N|majority|all` (and `replicas_timeout`): locks count once replicas have them.
    pub replicas: Option<ReplicaAck>,
}

impl Dsn {
    /// Parses `text`; the password may come from the environment variable named by `password_env`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming what is wrong, never quoting the DSN itself (it may hold a
    /// password).
    pub fn parse(text: &str) -> Result<Self> {
        Self::parse_with_env(text, |name| std::env::var(name).ok())
    }

    fn parse_with_env(text: &str, env: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let url = url::Url::parse(text).map_err(|e| bad(format!("it is not a valid URL ({e})")))?;
        let tls = match url.scheme() {
            "redis" => false,
            "rediss" => true,
            other => return Err(bad(format!("unsupported scheme \"{}\"", cut(other)))),
        };
        let decode = |part: &str| {
            percent_encoding::percent_decode_str(part)
                .decode_utf8()
                .map(|s| s.into_owned())
                .map_err(|_| bad("the user or password is not valid UTF-8 once decoded".into()))
        };
        let username = Some(url.username())
            .filter(|u| !u.is_empty())
            .map(decode)
            .transpose()?;
        let mut password = url.password().map(decode).transpose()?;
        let mut dsn = Dsn {
            endpoint: Endpoint::Unix(PathBuf::new()),
            db: 0,
            username,
            password: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            read_timeout: DEFAULT_READ_TIMEOUT,
            ca_file: None,
            deferred_release: false,
            replicas: None,
        };
        let mut replicas_timeout = None;
        let mut db_in_query = None;
        for (name, value) in url.query_pairs() {
            match name.as_ref() {
                "timeout" => dsn.connect_timeout = seconds(&name, &value)?,
                "read_timeout" => dsn.read_timeout = seconds(&name, &value)?,
                "db" => db_in_query = Some(database(&value)?),
                "ca_file" => dsn.ca_file = Some(PathBuf::from(value.as_ref())),
                "release" => {
                    dsn.deferred_release = match value.as_ref() {
                        "sync" => false,
                        "deferred" => true,
                        other => {
                            return Err(bad(format!(
                                "release must be \"sync\" or \"deferred\", not \"{}\"",
                                cut(other)
                            )))
                        }
                    }
                }
                "replicas" => {
                    let wanted = Wanted::parse(&value).map_err(bad)?;
                    dsn.replicas = Some(ReplicaAck {
                        wanted,
                        timeout: DEFAULT_REPLICAS_TIMEOUT,
                    });
                }
                "replicas_timeout" => replicas_timeout = Some(seconds(&name, &value)?),
                "password_env" => {
                    let secret = env(&value).ok_or_else(|| {
                        bad(format!(
                            "the environment variable \"{}\" named by password_env is not set",
                            cut(&value)
                        ))
                    })?;
                    password = Some(secret);
                }
                other => return Err(bad(format!("unknown option \"{}\"", cut(other)))),
            }
        }
        dsn.password = password;
        match url.host_str().filter(|h| !h.is_empty()) {
            Some(host) => {
                let host = host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_owned();
                let port = url.port().unwrap_or(DEFAULT_PORT);
                dsn.endpoint = Endpoint::Tcp { host, port, tls };
                let path = url.path().trim_start_matches('/');
                if !path.is_empty() {
                    dsn.db = database(path)?;
                }
            }
            None => {
                if tls {
                    return Err(bad("TLS needs a host name, not a unix socket".into()));
                }
                let path = percent_encoding::percent_decode_str(url.path())
                    .decode_utf8()
                    .map_err(|_| bad("the socket path is not valid UTF-8".into()))?;
                if path.is_empty() || path == "/" {
                    return Err(bad("it names neither a host nor a socket path".into()));
                }
                dsn.endpoint = Endpoint::Unix(PathBuf::from(path.as_ref()));
            }
        }
        if let Some(db) = db_in_query {
            dsn.db = db;
        }
        match (dsn.replicas.as_mut(), replicas_timeout) {
            (Some(ack), Some(timeout)) => ack.timeout = timeout,
            (None, Some(_)) => return Err(bad("replicas_timeout needs replicas".into())),
            _ => {}
        }
        if dsn.ca_file.is_some() && !tls {
            return Err(bad("ca_file only applies to rediss:// (TLS)".into()));
        }
        Ok(dsn)
    }

    /// The redacted form, safe for messages: scheme, host, port, database; no user, no password.
    pub fn redacted(&self) -> String {
        self.to_string()
    }

    /// What makes two DSNs the same connection: endpoint, TLS and CA, database, credentials as
    /// resolved (a `password_env` variable read now), timeouts. Not the DSN text: two spellings
    /// of one connection share it, and one text whose password variable changed does not. A
    /// digest, so the credentials are not kept once more in the clear.
    pub fn connection_identity(&self) -> String {
        let mut hasher = Sha256::new();
        let mut part = |bytes: &[u8]| {
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        };
        match &self.endpoint {
            Endpoint::Tcp { host, port, tls } => {
                part(b"tcp");
                part(host.as_bytes());
                part(&port.to_le_bytes());
                part(&[u8::from(*tls)]);
            }
            Endpoint::Unix(path) => {
                part(b"unix");
                part(path.as_os_str().as_encoded_bytes());
            }
        }
        part(&self.db.to_le_bytes());
        for secret in [&self.username, &self.password] {
            match secret {
                Some(value) => part(&[&[1u8], value.as_bytes()].concat()),
                None => part(&[0]),
            }
        }
        part(&self.connect_timeout.as_nanos().to_le_bytes());
        part(&self.read_timeout.as_nanos().to_le_bytes());
        match &self.ca_file {
            Some(path) => part(&[&[1u8], path.as_os_str().as_encoded_bytes()].concat()),
            None => part(&[0]),
        }
        hasher
            .finalize()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

impl fmt::Display for Dsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.endpoint {
            Endpoint::Tcp { host, port, tls } => {
                let scheme = if *tls { "rediss" } else { "redis" };
                if host.contains(':') {
                    write!(f, "{scheme}://[{host}]:{port}/{}", self.db)
                } else {
                    write!(f, "{scheme}://{host}:{port}/{}", self.db)
                }
            }
            Endpoint::Unix(path) => write!(f, "redis://{}?db={}", path.display(), self.db),
        }
    }
}

impl fmt::Debug for Dsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dsn")
            .field("endpoint", &self.to_string())
            .field("username", &self.username.as_ref().map(|_| "<redacted>"))
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("read_timeout", &self.read_timeout)
            .finish()
    }
}

fn bad(why: String) -> Error {
    Error::InvalidArgument {
        message: format!("Invalid Redis DSN: {why}."),
    }
}

/// Option names and values quoted in messages are cut short: they come from user input.
fn cut(text: &str) -> String {
    text.chars().take(40).collect()
}

fn seconds(name: &str, value: &str) -> Result<Duration> {
    value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 3600.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| bad(format!("{name} must be a number of seconds in (0, 3600]")))
}

fn database(value: &str) -> Result<i64> {
    value
        .parse::<i64>()
        .ok()
        .filter(|db| (0..=65535).contains(db))
        .ok_or_else(|| bad("the database (db) must be a number from 0 to 65535".into()))
}

#[cfg(test)]
#[path = "dsn_tests.rs"]
mod tests;
