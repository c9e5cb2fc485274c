//! redis-rs clients for a parsed DSN: address, database, credentials, and TLS (rustls, with the
//! DSN's CA file when it names one). A Sentinel DSN has a client per sentinel, and one for each
//! primary they name (`sentinel.rs`); a cluster DSN a client per node, made as nodes are named
//! (`cluster.rs`).

use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisConnectionInfo};

use crate::store::redis::dsn::{Dsn, Endpoint};
use crate::store::redis::sentinel::{self, Bounds, Discovery};
use crate::Error;

/// The PEM certificates of `path`, checked here so that a CA file that cannot serve is told at
/// once, by name, rather than as a failed connection later.
fn read_ca_file(path: &std::path::Path) -> Result<Vec<u8>, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let shown = path.display();
    let pem =
        std::fs::read(path).map_err(|e| format!("cannot read the CA file \"{shown}\": {e}"))?;
    let mut certificates = 0;
    for certificate in CertificateDer::pem_slice_iter(&pem) {
        certificate.map_err(|e| format!("the CA file \"{shown}\" is not valid PEM: {e}"))?;
        certificates += 1;
    }
    if certificates == 0 {
        return Err(format!(
            "the CA file \"{shown}\" holds no PEM certificate (-----BEGIN CERTIFICATE-----): give \
             the CA's certificate in PEM form"
        ));
    }
    Ok(pem)
}

/// TLS is rustls (with the ring provider): its handshake runs on the connection's first read or
/// write, so it falls under the socket timeouts like every command (`timeout` while connecting
/// and authenticating, `read_timeout` after), and a stalled server, or `rediss://` pointed at a
/// plain port, ends in an error instead of a wait without end.
fn install_tls_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // Refused when a provider is installed already (by another user of rustls): that one serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// How a transport reaches its server.
pub(super) enum Connector {
    /// One address.
    Direct(redis::Client),
    /// Whatever primary the sentinels name at the time of connecting.
    Sentinel(Discovery),
    /// The nodes of a Redis Cluster, each connected as it is named (seeds, `CLUSTER SLOTS`,
    /// redirects): every one with the DSN's credentials and TLS.
    Cluster(ClientFactory),
}

impl Connector {
    /// The connector for `dsn`. Connects nothing yet.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an address redis-rs refuses or an unreadable CA file.
    pub(super) fn for_dsn(dsn: &Dsn) -> crate::Result<Self> {
        let invalid = |why: String| Error::InvalidArgument {
            message: format!("Invalid Redis DSN for {}: {why}.", dsn.redacted()),
        };
        let root_cert = match &dsn.ca_file {
            None => None,
            Some(ca_file) => Some(read_ca_file(ca_file).map_err(invalid)?),
        };
        let mut primary = RedisConnectionInfo::default()
            .set_db(dsn.db)
            .set_skip_set_lib_name();
        if let Some(user) = &dsn.username {
            primary = primary.set_username(user);
        }
        if let Some(password) = &dsn.password {
            primary = primary.set_password(password);
        }
        let factory = ClientFactory {
            primary,
            tls: dsn.endpoint.tls(),
            root_cert,
        };
        let opened = match &dsn.endpoint {
            Endpoint::Tcp { host, port, .. } => {
                factory.primary_at(host, *port).map(Connector::Direct)
            }
            Endpoint::Unix(path) => factory
                .open(ConnectionAddr::Unix(path.clone()), factory.primary.clone())
                .map(Connector::Direct),
            Endpoint::Sentinel(sentinels) => {
                Discovery::new(sentinels, factory).map(Connector::Sentinel)
            }
            Endpoint::Cluster { .. } => Ok(Connector::Cluster(factory)),
        };
        opened.map_err(|e| invalid(e.to_string()))
    }
}

/// Why no connection was made.
pub(super) enum ConnectError {
    Redis(redis::RedisError),
    /// No sentinel led to a primary (each one's reason).
    NoPrimary(String),
}

impl Connector {
    /// A new connection to the server (for a cluster, to the cluster `node`), its socket
    /// timeouts then set to the DSN's read timeout (not capped by the deadline: the connection
    /// outlives this call).
    pub(super) fn connect(
        &self,
        node: Option<&(String, u16)>,
        bounds: &Bounds<'_>,
    ) -> Result<redis::Connection, ConnectError> {
        let connection = match (self, node) {
            (Connector::Direct(client), _) => {
                sentinel::open(client, bounds).map_err(ConnectError::Redis)
            }
            (Connector::Sentinel(discovery), _) => {
                discovery.connect(bounds).map_err(ConnectError::NoPrimary)
            }
            (Connector::Cluster(factory), Some((host, port))) => factory
                .primary_at(host, *port)
                .and_then(|client| sentinel::open(&client, bounds))
                .map_err(ConnectError::Redis),
            (Connector::Cluster(_), None) => Err(ConnectError::NoPrimary(
                "no cluster node serves this key".to_owned(),
            )),
        }?;
        let read = Some(bounds.read);
        connection
            .set_read_timeout(read)
            .and_then(|()| connection.set_write_timeout(read))
            .map_err(ConnectError::Redis)?;
        Ok(connection)
    }
}

/// Makes the clients of one DSN: every server it reaches gets the same TLS settings.
pub(super) struct ClientFactory {
    /// The primary's database and credentials.
    primary: RedisConnectionInfo,
    tls: bool,
    /// The DSN's CA bundle, read once.
    root_cert: Option<Vec<u8>>,
}

impl ClientFactory {
    /// A client for the primary (or the one server) at `host:port`.
    pub(super) fn primary_at(&self, host: &str, port: u16) -> redis::RedisResult<redis::Client> {
        self.open(self.tcp(host, port), self.primary.clone())
    }

    /// A client for a sentinel at `host:port`, with the sentinels' own credentials.
    pub(super) fn sentinel_at(
        &self,
        host: &str,
        port: u16,
        username: Option<&str>,
        password: Option<&str>,
    ) -> redis::RedisResult<redis::Client> {
        let mut settings = RedisConnectionInfo::default().set_skip_set_lib_name();
        if let Some(user) = username {
            settings = settings.set_username(user);
        }
        if let Some(password) = password {
            settings = settings.set_password(password);
        }
        self.open(self.tcp(host, port), settings)
    }

    fn tcp(&self, host: &str, port: u16) -> ConnectionAddr {
        if self.tls {
            install_tls_provider();
            ConnectionAddr::TcpTls {
                host: host.to_owned(),
                port,
                insecure: false,
                tls_params: None,
            }
        } else {
            ConnectionAddr::Tcp(host.to_owned(), port)
        }
    }

    fn open(
        &self,
        addr: ConnectionAddr,
        settings: RedisConnectionInfo,
    ) -> redis::RedisResult<redis::Client> {
        let info: ConnectionInfo = addr
            .into_connection_info()?
            .set_redis_settings(settings)
            // No Nagle: a command written behind a release whose reply is unread
            // (`release=deferred`) would otherwise wait for that reply's ACK, one round trip.
            .set_tcp_settings(redis::io::tcp::TcpSettings::default().set_nodelay(true));
        match &self.root_cert {
            None => redis::Client::open(info),
            Some(pem) => {
                let certificates = redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem.clone()),
                };
                redis::Client::build_with_tls(info, certificates)
            }
        }
    }
}
