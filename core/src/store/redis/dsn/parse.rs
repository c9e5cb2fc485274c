//! Reading a DSN: the URL's parts, then its query options into [`Query`] (each value checked for
//! its form, in the DSN's order), then what they mean together (which endpoint, which database).

use std::path::PathBuf;
use std::time::Duration;

use url::Url;

use super::{Connection, Dsn, Endpoint, Sentinels, StoreOptions};
use super::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT};
use crate::store::redis::replicas::{ReplicaAck, Wanted, DEFAULT_TIMEOUT as REPLICAS_TIMEOUT};
use crate::{Error, Result};

const DEFAULT_PORT: u16 = 6379;

/// The query options of a DSN, each read once and typed.
#[derive(Default)]
struct Query {
    /// `host[...]`: sentinels, seed nodes, or one server.
    hosts: Vec<(String, u16)>,
    /// `redis_sentinel` / `sentinel_master`: the Sentinel service.
    service: Option<String>,
    sentinel_username: Option<String>,
    /// Read from the variable `sentinel_password_env` names.
    sentinel_password: Option<String>,
    cluster: Option<bool>,
    connect_timeout: Option<Duration>,
    read_timeout: Option<Duration>,
    db: Option<i64>,
    ca_file: Option<PathBuf>,
    deferred_release: bool,
    /// `records=off`: locks leave no holder record (`holder.rs`).
    no_records: bool,
    replicas: Option<Wanted>,
    replicas_timeout: Option<Duration>,
    /// Read from the variable `password_env` names.
    password: Option<String>,
}

impl Dsn {
    pub(super) fn parse_with_env(text: &str, env: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let url = Url::parse(text).map_err(|e| bad(format!("it is not a valid URL ({e})")))?;
        let tls = match url.scheme() {
            "redis" => false,
            "rediss" => true,
            other => return Err(bad(format!("unsupported scheme \"{}\"", cut(other)))),
        };
        let username = Some(url.username())
            .filter(|u| !u.is_empty())
            .map(decoded)
            .transpose()?;
        let inline_password = url.password().map(decoded).transpose()?;
        let mut query = Query::read(&url, &env)?;
        let (endpoint, path_db) = endpoint(&url, tls, &mut query)?;
        if query.deferred_release && matches!(endpoint, Endpoint::Cluster { .. }) {
            return Err(bad(
                "release=deferred is not supported on a Redis Cluster".into()
            ));
        }
        let store = store_options(&query)?;
        if query.ca_file.is_some() && !tls {
            return Err(bad("ca_file only applies to rediss:// (TLS)".into()));
        }
        let connection = Connection {
            endpoint,
            db: query.db.unwrap_or(path_db),
            username,
            password: query.password.or(inline_password),
            connect_timeout: query.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT),
            read_timeout: query.read_timeout.unwrap_or(DEFAULT_READ_TIMEOUT),
            ca_file: query.ca_file,
        };
        Ok(Dsn { connection, store })
    }
}

impl Query {
    fn read(url: &Url, env: &impl Fn(&str) -> Option<String>) -> Result<Self> {
        let mut query = Query::default();
        for (name, value) in url.query_pairs() {
            query.set(&name, &value, url.password().is_some(), env)?;
        }
        Ok(query)
    }

    /// One option; an unknown name, a malformed value or a variable not set is an error here.
    fn set(
        &mut self,
        name: &str,
        value: &str,
        inline_password: bool,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<()> {
        let secret = |option: &str| {
            env(value).ok_or_else(|| {
                bad(format!(
                    "the environment variable \"{}\" named by {option} is not set",
                    cut(value)
                ))
            })
        };
        match name {
            host if host.starts_with("host[") && host.ends_with(']') => {
                if !value.is_empty() {
                    return Err(bad("host[...] takes no value".into()));
                }
                self.hosts.push(host_and_port(&host[5..host.len() - 1])?);
            }
            "redis_sentinel" | "sentinel_master" => self.service = Some(value.to_owned()),
            "sentinel_username" => self.sentinel_username = Some(value.to_owned()),
            "sentinel_password_env" => {
                self.sentinel_password = Some(secret("sentinel_password_env")?);
            }
            "redis_cluster" => self.cluster = Some(flag(name, value)?),
            "timeout" => self.connect_timeout = Some(seconds(name, value)?),
            "read_timeout" => self.read_timeout = Some(seconds(name, value)?),
            "db" => self.db = Some(database(value)?),
            "ca_file" => self.ca_file = Some(PathBuf::from(value)),
            "release" => self.deferred_release = release_is_deferred(value)?,
            "records" => self.no_records = records_off(value)?,
            "replicas" => self.replicas = Some(Wanted::parse(value).map_err(bad)?),
            "replicas_timeout" => self.replicas_timeout = Some(seconds(name, value)?),
            // Two sources for one secret: whichever won, the other would be silently ignored.
            "password_env" if inline_password => return Err(bad("the DSN has both a password (user:password@) and password_env; keep one of them (password_env keeps the password out of the configuration)".into())),
            "password_env" => self.password = Some(secret("password_env")?),
            other => return Err(bad(format!("unknown option \"{}\"", cut(other)))),
        }
        Ok(())
    }

    /// How many servers the DSN lists: its host, and its `host[...]` entries.
    fn listed(&self, authority: &Option<(String, u16)>) -> usize {
        self.hosts.len() + usize::from(authority.is_some())
    }
}

/// The endpoint the options mean together, and the database the URL's path names (0 if none).
fn endpoint(url: &Url, tls: bool, query: &mut Query) -> Result<(Endpoint, i64)> {
    let authority = url.host_str().filter(|h| !h.is_empty()).map(|host| {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        (host.to_owned(), url.port().unwrap_or(DEFAULT_PORT))
    });
    if query.service.is_none()
        && (query.sentinel_username.is_some() || query.sentinel_password.is_some())
    {
        return Err(bad(
            "sentinel_username and sentinel_password_env need redis_sentinel".into(),
        ));
    }
    let several = query.listed(&authority) > 1;
    if query.service.is_some() {
        return sentinel_endpoint(url, tls, authority, query);
    }
    if query.cluster == Some(true) || (query.cluster.is_none() && several) {
        return cluster_endpoint(url, tls, authority, query);
    }
    if several {
        return Err(bad(
            "several hosts need redis_sentinel=<service> or redis_cluster=1".into(),
        ));
    }
    match (authority, query.hosts.pop()) {
        (Some((host, port)), _) => Ok((Endpoint::Tcp { host, port, tls }, path_database(url)?)),
        (None, Some((host, port))) => Ok((Endpoint::Tcp { host, port, tls }, 0)),
        (None, None) => Ok((socket_endpoint(url, tls)?, 0)),
    }
}

fn sentinel_endpoint(
    url: &Url,
    tls: bool,
    authority: Option<(String, u16)>,
    query: &mut Query,
) -> Result<(Endpoint, i64)> {
    if query.cluster == Some(true) {
        return Err(bad(
            "redis_sentinel and redis_cluster exclude each other".into()
        ));
    }
    let service = query.service.take().unwrap_or_default();
    if service.is_empty() {
        return Err(bad("redis_sentinel names no service".into()));
    }
    let hosts = std::mem::take(&mut query.hosts);
    let nodes = listed_nodes(url, authority, hosts, "redis_sentinel", "sentinel")?;
    let sentinels = Sentinels {
        service,
        nodes,
        tls,
        username: query.sentinel_username.take(),
        password: query.sentinel_password.take(),
    };
    Ok((Endpoint::Sentinel(sentinels), path_database(url)?))
}

fn cluster_endpoint(
    url: &Url,
    tls: bool,
    authority: Option<(String, u16)>,
    query: &mut Query,
) -> Result<(Endpoint, i64)> {
    let hosts = std::mem::take(&mut query.hosts);
    let seeds = listed_nodes(url, authority, hosts, "redis_cluster", "seed node")?;
    if path_database(url)? != 0 || query.db.is_some_and(|db| db != 0) {
        return Err(bad("a Redis Cluster has database 0 only".into()));
    }
    Ok((Endpoint::Cluster { seeds, tls }, 0))
}

fn store_options(query: &Query) -> Result<StoreOptions> {
    let replicas = match (query.replicas, query.replicas_timeout) {
        (Some(wanted), timeout) => Some(ReplicaAck {
            wanted,
            timeout: timeout.unwrap_or(REPLICAS_TIMEOUT),
        }),
        (None, Some(_)) => return Err(bad("replicas_timeout needs replicas".into())),
        (None, None) => None,
    };
    Ok(StoreOptions {
        deferred_release: query.deferred_release,
        no_records: query.no_records,
        replicas,
    })
}

fn records_off(value: &str) -> Result<bool> {
    match value {
        "on" => Ok(false),
        "off" => Ok(true),
        other => Err(bad(format!(
            "records must be \"on\" or \"off\", not \"{}\"",
            cut(other)
        ))),
    }
}

fn release_is_deferred(value: &str) -> Result<bool> {
    match value {
        "sync" => Ok(false),
        "deferred" => Ok(true),
        other => Err(bad(format!(
            "release must be \"sync\" or \"deferred\", not \"{}\"",
            cut(other)
        ))),
    }
}

/// The user or password of the URL, percent-decoded.
fn decoded(part: &str) -> Result<String> {
    percent_encoding::percent_decode_str(part)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| bad("the user or password is not valid UTF-8 once decoded".into()))
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
fn socket_endpoint(url: &Url, tls: bool) -> Result<Endpoint> {
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
fn path_database(url: &Url) -> Result<i64> {
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
    url: &Url,
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
