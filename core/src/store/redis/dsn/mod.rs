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
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::replicas::ReplicaAck;

mod parse;
#[cfg(test)]
mod tests;

/// Connect timeout when the DSN names none.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Read and write timeout when the DSN names none.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(2);

/// Where the server is.
#[derive(Clone, PartialEq, Eq, Hash)]
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
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Sentinels {
    pub service: String,
    pub nodes: Vec<(String, u16)>,
    pub tls: bool,
    pub username: Option<String>,
    pub password: Option<String>,
}

/// Where and how to connect: every field makes two DSNs two connections, and nothing else is here.
/// `Debug` and `Display` never show the user name or the password.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Connection {
    pub endpoint: Endpoint,
    pub db: i64,
    pub username: Option<String>,
    /// As resolved: a `password_env` variable is read when the DSN is parsed.
    pub password: Option<String>,
    pub connect_timeout: Duration,
    pub read_timeout: Duration,
    pub ca_file: Option<PathBuf>,
}

/// How the store behaves on its connection: stores that differ only here share the connection.
#[derive(Clone, Default, PartialEq)]
pub struct StoreOptions {
    /// `release=deferred`: a release is sent without waiting for its reply (`pending.rs`).
    pub deferred_release: bool,
    /// `records=off`: locks leave no holder record beside them (`holder.rs`); inspection then shows
    /// a digest and an expiry only. Saves three commands a cycle (bench/README.md).
    pub no_records: bool,
    /// `replicas=N|majority|all` (and `replicas_timeout`): locks count once replicas have them.
    pub replicas: Option<ReplicaAck>,
}

/// A parsed DSN: the connection, and the store's options on it.
#[derive(Clone, PartialEq)]
pub struct Dsn {
    pub connection: Connection,
    pub store: StoreOptions,
}

impl Dsn {
    /// Parses `text`; the password may come from the environment variable named by `password_env`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] naming what is wrong, never quoting the DSN itself (it may
    /// hold a password).
    pub fn parse(text: &str) -> crate::Result<Self> {
        Self::parse_with_env(text, |name| std::env::var(name).ok())
    }

    /// The redacted form, safe for messages: scheme, host, port, database; no user, no password.
    pub fn redacted(&self) -> String {
        self.connection.to_string()
    }

    /// See [`Connection::identity`].
    pub fn connection_identity(&self) -> String {
        self.connection.identity()
    }
}

impl Connection {
    /// What makes two DSNs the same connection: every field, as resolved. Not the DSN text: two
    /// spellings of one connection share it, and one text whose password variable changed does
    /// not. A SHA-256 digest of the derived `Hash`, so that a new field counts without a list to
    /// keep, and the credentials are not kept once more in the clear.
    pub fn identity(&self) -> String {
        let mut digest = DigestHasher(Sha256::new());
        self.hash(&mut digest);
        digest
            .0
            .finalize()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

/// Feeds what `Hash` writes into SHA-256: a digest wide enough to name a connection, where
/// `std`'s 64-bit hashers are not.
struct DigestHasher(Sha256);

impl Hasher for DigestHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// Unused by `identity` (which reads the whole digest); the digest's first 8 bytes.
    fn finish(&self) -> u64 {
        let digest = self.0.clone().finalize();
        u64::from_le_bytes(digest[..8].try_into().unwrap_or_default())
    }
}

impl fmt::Display for Connection {
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

impl fmt::Display for Dsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.connection.fmt(f)
    }
}

impl fmt::Debug for Dsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let connection = &self.connection;
        f.debug_struct("Dsn")
            .field("endpoint", &connection.to_string())
            .field(
                "username",
                &connection.username.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "password",
                &connection.password.as_ref().map(|_| "<redacted>"),
            )
            .field("connect_timeout", &connection.connect_timeout)
            .field("read_timeout", &connection.read_timeout)
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
