//! What makes two DSNs one connection (dsn.rs).

use sha2::{Digest, Sha256};

use super::{Dsn, Endpoint};

impl Dsn {
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
            Endpoint::Cluster { seeds, tls } => {
                part(b"cluster");
                for (host, port) in seeds {
                    part(host.as_bytes());
                    part(&port.to_le_bytes());
                }
                part(&[u8::from(*tls)]);
            }
            Endpoint::Sentinel(sentinels) => {
                part(b"sentinel");
                part(sentinels.service.as_bytes());
                for (host, port) in &sentinels.nodes {
                    part(host.as_bytes());
                    part(&port.to_le_bytes());
                }
                part(&[u8::from(sentinels.tls)]);
                for secret in [&sentinels.username, &sentinels.password] {
                    match secret {
                        Some(value) => part(&[&[1u8], value.as_bytes()].concat()),
                        None => part(&[0]),
                    }
                }
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
