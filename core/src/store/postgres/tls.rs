//! TLS for PostgreSQL connections: rustls (as for Redis), the server's certificate always checked,
//! against the DSN's `sslrootcert` or the system's CA certificates. (libpq's `require` encrypts
//! without checking; Deadbolt does not send locks over a connection it has not checked.)

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

use super::dsn::{PostgresServer, Tls};
use super::session::TlsConfig;
use crate::{Error, Result};

/// The TLS settings `server` needs, read once (`None`: TLS is off).
///
/// # Errors
/// [`Error::InvalidArgument`] for a CA file that cannot serve.
pub(super) fn client_config(server: &PostgresServer) -> Result<Option<TlsConfig>> {
    if server.tls == Tls::Disable {
        return Ok(None);
    }
    crate::store::redis::install_tls_provider();
    let mut roots = rustls::RootCertStore::empty();
    match &server.root_cert {
        Some(path) => {
            let pem = crate::store::redis::read_ca_file(path).map_err(|why| {
                Error::invalid_argument(format!("Invalid PostgreSQL DSN: {why}."))
            })?;
            for certificate in CertificateDer::pem_slice_iter(&pem).flatten() {
                roots.add(certificate).map_err(|e| {
                    Error::invalid_argument(format!(
                        "Invalid PostgreSQL DSN: a certificate of its sslrootcert cannot serve: {e}."
                    ))
                })?;
            }
        }
        None => {
            // Certificates the system has but rustls cannot read are left out, as libpq does.
            let native = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(native.certs);
        }
    }
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Some(Arc::new(config)))
}
