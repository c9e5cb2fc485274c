//! The redis-rs client for a parsed DSN: address, database, credentials, and TLS (rustls, with
//! the DSN's CA file when it names one).

use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisConnectionInfo};

use crate::store::redis::dsn::{Dsn, Endpoint};
use crate::Error;

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

/// A client for `dsn`. Connects nothing yet.
///
/// # Errors
/// [`Error::InvalidArgument`] for an address redis-rs refuses or an unreadable CA file.
pub(super) fn client_for(dsn: &Dsn) -> crate::Result<redis::Client> {
    let invalid = |why: String| Error::InvalidArgument {
        message: format!("Invalid Redis DSN for {}: {why}.", dsn.redacted()),
    };
    let addr = match &dsn.endpoint {
        Endpoint::Tcp {
            host,
            port,
            tls: false,
        } => ConnectionAddr::Tcp(host.clone(), *port),
        Endpoint::Tcp {
            host,
            port,
            tls: true,
        } => {
            install_tls_provider();
            ConnectionAddr::TcpTls {
                host: host.clone(),
                port: *port,
                insecure: false,
                tls_params: None,
            }
        }
        Endpoint::Unix(path) => ConnectionAddr::Unix(path.clone()),
    };
    let mut redis_info = RedisConnectionInfo::default()
        .set_db(dsn.db)
        .set_skip_set_lib_name();
    if let Some(user) = &dsn.username {
        redis_info = redis_info.set_username(user);
    }
    if let Some(password) = &dsn.password {
        redis_info = redis_info.set_password(password);
    }
    let info: ConnectionInfo = addr
        .into_connection_info()
        .map_err(|e| invalid(e.to_string()))?
        .set_redis_settings(redis_info)
        // No Nagle: a command written behind a release whose reply is unread
        // (`release=deferred`) would otherwise wait for that reply's ACK, one round trip.
        .set_tcp_settings(redis::io::tcp::TcpSettings::default().set_nodelay(true));
    match &dsn.ca_file {
        None => redis::Client::open(info).map_err(|e| invalid(e.to_string())),
        Some(ca_file) => {
            let pem = std::fs::read(ca_file).map_err(|e| {
                invalid(format!(
                    "cannot read the CA file \"{}\": {e}",
                    ca_file.display()
                ))
            })?;
            let certificates = redis::TlsCertificates {
                client_tls: None,
                root_cert: Some(pem),
            };
            redis::Client::build_with_tls(info, certificates).map_err(|e| invalid(e.to_string()))
        }
    }
}
