//! Redis connection strings: parsing, and the redacted form used in every message.
//!
//! `redis://[user[:password]@]host[:port][/db][?options]`, `rediss://...` (TLS, certificates
//! verified, no way to turn that off) and `redis:///path/to/redis.sock` (unix socket).
//! Options: `timeout` (connect, seconds), `read_timeout` (seconds), `password_env` (the NAME of an
//! environment variable holding the password, so the secret stays out of configuration),
//! `ca_file` (PEM bundle for `rediss`), `db`.
//!
//! Sentinel, in Symfony's forms: `redis:?host[h1:26379]&host[h2:26379]&redis_sentinel=mymaster`
//! or `redis://h1:26379?redis_sentinel=mymaster` (the hosts are sentinels; `sentinel_master` is
//! the same option). The user and password are the primary's; `sentinel_username` and
//! `sentinel_password_env` are the sentinels' own, when they have some.
//!
//! Redis Cluster, in Symfony's form: `redis:?host[h1:7000]&host[h2:7001]&redis_cluster=1` or
//! `redis://h1:7000?host[h2:7001]&redis_cluster=1` (the hosts are seed nodes); several hosts without
//! `redis_sentinel` mean a cluster too. A cluster has database 0 only, and no `release=deferred`.

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
    Tcp {
        host: String,
        port: u16,
        tls: bool,
    },
    Unix(PathBuf),
    /// The primary of a Sentinel service, asked of its sentinels at each connection.
    Sentinel(Sentinels),
    /// A Redis Cluster, reached through its seed nodes (in the DSN's order).
    Cluster {
        seeds: Vec<(String, u16)>,
        tls: bool,
    },
}

impl Endpoint {
    pub fn tls(&self) -> bool {
        match self {
            Endpoint::Tcp { tls, .. } => *tls,
            Endpoint::Unix(_) => false,
            Endpoint::Sentinel(sentinels) => sentinels.tls,
            Endpoint::Cluster { tls, .. } => *tls,
        }
    }
}

/// A Sentinel service: its name, the sentinels to ask (in the DSN's order), and their own
/// credentials (the DSN's user and password are the primary's).
#[derive(Clone, PartialEq, Eq)]
pub struct Sentinels {
    pub service: String,
    pub nodes: Vec<(String, u16)>,
    pub tls: bool,
    pub username: Option<String>,
    pub password: Option<String>,
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
        let mut hosts = Vec::new();
        let mut service = None;
        let mut cluster = None;
        let (mut sentinel_username, mut sentinel_password) = (None, None);
        let secret_from = |value: &str, option: &str| {
            env(value).ok_or_else(|| {
                bad(format!(
                    "the environment variable \"{}\" named by {option} is not set",
                    cut(value)
                ))
            })
        };
        for (name, value) in url.query_pairs() {
            match name.as_ref() {
                host if host.starts_with("host[") && host.ends_with(']') => {
                    if !value.is_empty() {
                        return Err(bad("host[...] takes no value".into()));
                    }
                    hosts.push(host_and_port(&host[5..host.len() - 1])?);
                }
                "redis_sentinel" | "sentinel_master" => service = Some(value.into_owned()),
                "sentinel_username" => sentinel_username = Some(value.into_owned()),
                "sentinel_password_env" => {
                    sentinel_password = Some(secret_from(&value, "sentinel_password_env")?);
                }
                "redis_cluster" => cluster = Some(flag(&name, &value)?),
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
                "password_env" if url.password().is_some() => {
                    // Two sources for one secret: whichever won, the other would be silently ignored.
                    return Err(bad("the DSN has both a password (user:password@) and password_env; keep one of them (password_env keeps the password out of the configuration)".into()));
                }
                "password_env" => password = Some(secret_from(&value, "password_env")?),
                other => return Err(bad(format!("unknown option \"{}\"", cut(other)))),
            }
        }
        dsn.password = password;
        let authority = url.host_str().filter(|h| !h.is_empty()).map(|host| {
            let host = host.trim_start_matches('[').trim_end_matches(']');
            (host.to_owned(), url.port().unwrap_or(DEFAULT_PORT))
        });
        if service.is_none() && (sentinel_username.is_some() || sentinel_password.is_some()) {
            return Err(bad(
                "sentinel_username and sentinel_password_env need redis_sentinel".into(),
            ));
        }
        dsn.endpoint = match (service, authority) {
            (Some(service), authority) => {
                if cluster == Some(true) {
                    return Err(bad(
                        "redis_sentinel and redis_cluster exclude each other".into()
                    ));
                }
                if service.is_empty() {
                    return Err(bad("redis_sentinel names no service".into()));
                }
                let nodes = listed_nodes(&url, authority, hosts, "redis_sentinel", "sentinel")?;
                dsn.db = path_database(&url)?;
                Endpoint::Sentinel(Sentinels {
                    service,
                    nodes,
                    tls,
                    username: sentinel_username,
                    password: sentinel_password,
                })
            }
            (None, authority)
                if cluster == Some(true)
                    || (cluster.is_none()
                        && hosts.len() + usize::from(authority.is_some()) > 1) =>
            {
                let seeds = listed_nodes(&url, authority, hosts, "redis_cluster", "seed node")?;
                if path_database(&url)? != 0 || db_in_query.is_some_and(|db| db != 0) {
                    return Err(bad("a Redis Cluster has database 0 only".into()));
                }
                if dsn.deferred_release {
                    return Err(bad(
                        "release=deferred is not supported on a Redis Cluster".into()
                    ));
                }
                Endpoint::Cluster { seeds, tls }
            }
            (None, authority) if hosts.len() + usize::from(authority.is_some()) > 1 => {
                return Err(bad(
                    "several hosts need redis_sentinel=<service> or redis_cluster=1".into(),
                ));
            }
            (None, Some((host, port))) => {
                dsn.db = path_database(&url)?;
                Endpoint::Tcp { host, port, tls }
            }
            (None, None) => match hosts.pop() {
                Some((host, port)) => Endpoint::Tcp { host, port, tls },
                None => socket_endpoint(&url, tls)?,
            },
        };
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
}

impl fmt::Display for Dsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.endpoint {
            Endpoint::Tcp { host, port, tls } => {
                let scheme = if *tls { "rediss" } else { "redis" };
                write!(f, "{scheme}://{}/{}", host_port(host, *port), self.db)
            }
            Endpoint::Unix(path) => write!(f, "redis://{}?db={}", path.display(), self.db),
            Endpoint::Sentinel(sentinels) => {
                f.write_str(if sentinels.tls { "rediss:?" } else { "redis:?" })?;
                for (host, port) in &sentinels.nodes {
                    write!(f, "host[{}]&", host_port(host, *port))?;
                }
                write!(f, "redis_sentinel={}&db={}", sentinels.service, self.db)
            }
            Endpoint::Cluster { seeds, tls } => {
                f.write_str(if *tls { "rediss:?" } else { "redis:?" })?;
                for (host, port) in seeds {
                    write!(f, "host[{}]&", host_port(host, *port))?;
                }
                f.write_str("redis_cluster=1")
            }
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

/// `host:port`, an IPv6 address in brackets.
pub fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
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

/// A unix socket DSN's endpoint: `redis:///path/to/redis.sock`.
fn socket_endpoint(url: &url::Url, tls: bool) -> Result<Endpoint> {
    if tls {
        return Err(bad("TLS needs a host name, not a unix socket".into()));
    }
    let path = percent_encoding::percent_decode_str(url.path())
        .decode_utf8()
        .map_err(|_| bad("the socket path is not valid UTF-8".into()))?;
    if path.is_empty() || path == "/" {
        return Err(bad("it names neither a host nor a socket path".into()));
    }
    Ok(Endpoint::Unix(PathBuf::from(path.as_ref())))
}

/// The database in a host DSN's path (`redis://host/3`), 0 without one.
fn path_database(url: &url::Url) -> Result<i64> {
    match url.path().trim_start_matches('/') {
        "" => Ok(0),
        path => database(path),
    }
}

/// `h:26379`, `[::1]:26379` or `h` (port 6379, as Symfony reads it) from a `host[...]` option.
fn host_and_port(text: &str) -> Result<(String, u16)> {
    let invalid = || bad(format!("host[{}] is not host:port", cut(text)));
    let (host, port) = match text.strip_prefix('[') {
        Some(rest) => {
            let (host, after) = rest.split_once(']').ok_or_else(invalid)?;
            (host, after.strip_prefix(':'))
        }
        None => match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        },
    };
    if host.is_empty() || host.starts_with('/') || host.contains(['/', '[', ']', '@']) {
        return Err(invalid());
    }
    let port = match port {
        Some(port) => port
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(invalid)?,
        None => DEFAULT_PORT,
    };
    Ok((host.to_owned(), port))
}

/// The DSN's host, then its `host[...]` entries: the sentinels of `redis_sentinel`, or the seed
/// nodes of `redis_cluster` (`option`), each a `node` at host:port.
fn listed_nodes(
    url: &url::Url,
    authority: Option<(String, u16)>,
    hosts: Vec<(String, u16)>,
    option: &str,
    node: &str,
) -> Result<Vec<(String, u16)>> {
    if authority.is_none() && !url.path().is_empty() {
        return Err(bad(format!("a {node} is host:port, not a socket path")));
    }
    let nodes: Vec<_> = authority.into_iter().chain(hosts).collect();
    if nodes.is_empty() {
        return Err(bad(format!(
            "{option} needs a {node}: host[h:port], or the DSN's host"
        )));
    }
    Ok(nodes)
}

/// A yes/no option as Symfony reads one (`1`, `true`, `yes`, `on`; `0`, `false`, `no`, `off`).
fn flag(name: &str, value: &str) -> Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" | "" => Ok(false),
        _ => Err(bad(format!(
            "{name} must be 1 or 0, not \"{}\"",
            cut(value)
        ))),
    }
}

fn database(value: &str) -> Result<i64> {
    value
        .parse::<i64>()
        .ok()
        .filter(|db| (0..=65535).contains(db))
        .ok_or_else(|| bad("the database (db) must be a number from 0 to 65535".into()))
}

#[path = "dsn_identity.rs"]
mod identity;

#[cfg(test)]
#[path = "dsn_tests.rs"]
mod tests;
