//! redis-rs clients for a parsed DSN: address, database, credentials, and TLS (rustls, with the
//! DSN's CA file when it names one), and connections opened with every step bounded. A Sentinel
//! DSN has a client per sentinel, and one for each primary they name (`sentinel.rs`); a cluster
//! DSN a client per node, made as nodes are named (`native/router.rs`).

use std::path::Path;
use std::time::Duration;

use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisConnectionInfo};

use crate::store::redis::dsn::Dsn;
use crate::Error;

/// How long each step of connecting may wait: the connect and read timeouts, each capped by the
/// deadline.
pub struct Bounds<'a> {
    pub connect: Duration,
    pub read: Duration,
    pub capped: &'a dyn Fn(Duration) -> Duration,
    pub describe: &'a dyn Fn(&redis::RedisError) -> String,
}

/// A connection to `client`'s server, its connect and reads bounded (capped by the deadline).
pub fn open(client: &redis::Client, bounds: &Bounds<'_>) -> redis::RedisResult<redis::Connection> {
    let connection = client.get_connection_with_timeout((bounds.capped)(bounds.connect))?;
    let read = Some((bounds.capped)(bounds.read));
    connection.set_read_timeout(read)?;
    connection.set_write_timeout(read)?;
    Ok(connection)
}

/// `connection` with its socket timeouts set to the DSN's `read` timeout, not capped by the
/// deadline of the call that opened it: the connection outlives that call.
pub fn keep_open(
    connection: redis::Connection,
    read: Duration,
) -> redis::RedisResult<redis::Connection> {
    connection.set_read_timeout(Some(read))?;
    connection.set_write_timeout(Some(read))?;
    Ok(connection)
}

/// The PEM certificates of `path`, checked here so that a CA file that cannot serve is told at
/// once, by name, rather than as a failed connection later.
pub(crate) fn read_ca_file(path: &Path) -> Result<Vec<u8>, String> {
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
pub(crate) fn install_tls_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // Refused when a provider is installed already (by another user of rustls): that one serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Makes the clients of one DSN: every server it reaches gets the same TLS settings.
pub struct ClientFactory {
    /// The primary's database and credentials.
    primary: RedisConnectionInfo,
    tls: bool,
    /// The DSN's CA bundle, read once.
    root_cert: Option<Vec<u8>>,
}

impl ClientFactory {
    /// The factory for `dsn`'s servers. Connects nothing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a CA file that cannot serve.
    pub fn for_dsn(dsn: &Dsn) -> crate::Result<Self> {
        let connection = &dsn.connection;
        let root_cert = match &connection.ca_file {
            None => None,
            Some(ca_file) => Some(read_ca_file(ca_file).map_err(|why| Error::InvalidArgument {
                message: format!("Invalid Redis DSN for {}: {why}.", dsn.redacted()),
            })?),
        };
        let mut primary = RedisConnectionInfo::default()
            .set_db(connection.db)
            .set_skip_set_lib_name();
        if let Some(user) = &connection.username {
            primary = primary.set_username(user);
        }
        if let Some(password) = &connection.password {
            primary = primary.set_password(password);
        }
        Ok(ClientFactory {
            primary,
            tls: connection.endpoint.tls(),
            root_cert,
        })
    }

    /// A client for the server at the unix socket `path`.
    pub fn primary_at_socket(&self, path: &Path) -> redis::RedisResult<redis::Client> {
        self.open(ConnectionAddr::Unix(path.to_owned()), self.primary.clone())
    }

    /// A client for the primary (or the one server) at `host:port`.
    pub fn primary_at(&self, host: &str, port: u16) -> redis::RedisResult<redis::Client> {
        self.open(self.tcp(host, port), self.primary.clone())
    }

    /// A client for a sentinel at `host:port`, with the sentinels' own credentials.
    pub fn sentinel_at(
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
