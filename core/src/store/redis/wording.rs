//! redis-rs errors in Deadbolt's words. redis-rs describes failures in its own terms
//! ("AuthenticationFailed", "Resource temporarily unavailable (os error 11)" for a read that timed
//! out): a message says what went wrong and what to check, and never carries a secret (redis-rs's
//! errors carry none; nothing is added here that could).

use std::time::Duration;

use redis::{ErrorKind, RedisError};

use crate::ttl::shown;

/// What the connection was, for the hints.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context {
    /// `rediss://`.
    pub tls: bool,
    /// The socket timeout of the call.
    pub timeout: Duration,
}

pub(crate) use crate::error::quoted;

/// A node's address as a server named it, for a message (`quoted` host).
pub(crate) fn node_name(host: &str, port: u16) -> String {
    let host = quoted(host);
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `e` in Deadbolt's words.
pub(crate) fn describe(e: &RedisError, context: Context) -> String {
    if e.kind() == ErrorKind::AuthenticationFailed {
        return "the server refused the credentials: wrong password or user (with password_env, check the variable it names)".into();
    }
    if e.is_timeout() {
        let hint = if context.tls {
            "; a rediss:// DSN pointed at a port that speaks plain Redis gets no answer to its TLS handshake: check the port"
        } else {
            ""
        };
        return format!(
            "no answer within {} s (read_timeout; a server that is down, paused or busy){hint}",
            shown(context.timeout.as_secs_f64())
        );
    }
    if e.is_connection_refusal() {
        return "the connection was refused: nothing listens at that address (is redis-server running, is the port right?)".into();
    }
    if e.is_connection_dropped() {
        let hint = if context.tls {
            ""
        } else {
            "; a port that expects TLS closes plain connections: use rediss://"
        };
        return format!("the server closed the connection{hint}");
    }
    if e.to_string().contains("failed to lookup address") {
        return "the host name does not resolve (check the host name where it came from: the DSN, \
                or the sentinels' or the cluster's configuration)"
            .into();
    }
    if let Some(code) = e.code() {
        let code = quoted(code);
        let answered = match e.detail() {
            Some(detail) => format!("the server answered {code} {}", quoted(detail)),
            None => format!("the server answered {code}"),
        };
        return match code.as_str() {
            "TRYAGAIN" => format!(
                "{answered} (the key's hash slot is being migrated between cluster nodes: it was \
                 asked again for up to 310 ms; a blocking acquire waits it out)"
            ),
            "CLUSTERDOWN" => format!(
                "{answered} (the cluster has no primary for some slots: a failover under way, or \
                 too few nodes)"
            ),
            _ => answered,
        };
    }
    if let Some(tls) = tls_failure(e) {
        return tls;
    }
    if e.kind() == ErrorKind::Io {
        return match e.detail() {
            Some(detail) => format!("the connection failed: {}", quoted(detail)),
            None => "the connection failed".into(),
        };
    }
    quoted(&e.to_string())
}

/// A TLS handshake that failed on the server's certificate, in words that say what to check:
/// found as rustls's own error among the error's sources (never by matching text). redis-rs keeps
/// an I/O error behind an `Arc<dyn Error>`, which is itself the source it gives: looked through.
fn tls_failure(e: &RedisError) -> Option<String> {
    type Shared = std::sync::Arc<dyn std::error::Error + Send + Sync>;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(error) = source {
        let error = match error.downcast_ref::<Shared>() {
            Some(shared) => shared.as_ref() as &(dyn std::error::Error + 'static),
            None => error,
        };
        let tls = error.downcast_ref::<rustls::Error>().or_else(|| {
            error
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::get_ref)
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if let Some(tls) = tls {
            return Some(tls_words(tls));
        }
        source = error.source();
    }
    None
}

fn tls_words(error: &rustls::Error) -> String {
    use rustls::CertificateError as Cert;
    let rustls::Error::InvalidCertificate(cert) = error else {
        return format!("the TLS handshake failed: {}", quoted(&error.to_string()));
    };
    match cert {
        Cert::UnknownIssuer => "the server's TLS certificate is signed by a CA this client does not \
            trust (the system's CAs, or ca_file's): for a private CA, set ca_file=/path/to/ca.pem in \
            the DSN"
            .into(),
        Cert::NotValidForName => "the server's TLS certificate is not valid for the host name in \
            the DSN: connect by a name the certificate lists (its subjectAltName)"
            .into(),
        Cert::NotValidForNameContext {
            expected,
            presented,
        } => format!(
            "the server's TLS certificate is not valid for \"{}\", the host checked; it lists {}: \
             connect by one of those names, or give the server a certificate for this one",
            quoted(&expected.to_str()),
            match presented.as_slice() {
                [] => "no names".to_owned(),
                names => quoted(&names.join(", ")),
            }
        ),
        Cert::Expired | Cert::ExpiredContext { .. } => {
            "the server's TLS certificate has expired: renew it (or check this host's clock)".into()
        }
        Cert::NotValidYet | Cert::NotValidYetContext { .. } => {
            "the server's TLS certificate is not valid yet: check this host's clock".into()
        }
        other => format!(
            "the server's TLS certificate was refused: {}",
            quoted(&other.to_string())
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;

    const PLAIN: Context = Context {
        tls: false,
        timeout: Duration::from_millis(500),
    };
    const TLS: Context = Context {
        tls: true,
        timeout: Duration::from_secs(1),
    };

    fn io_error(kind: io::ErrorKind) -> RedisError {
        RedisError::from(io::Error::new(kind, "from the OS"))
    }

    #[test]
    fn failures_are_named_in_our_words_with_what_to_check() {
        let auth = RedisError::from((
            ErrorKind::AuthenticationFailed,
            "Password authentication failed",
        ));
        assert!(describe(&auth, PLAIN).starts_with("the server refused the credentials"));
        let timed_out = io_error(io::ErrorKind::WouldBlock);
        assert_eq!(
            describe(&timed_out, PLAIN),
            "no answer within 0.5 s (read_timeout; a server that is down, paused or busy)"
        );
        assert!(describe(&timed_out, TLS).ends_with("TLS handshake: check the port"));
        let refused = io_error(io::ErrorKind::ConnectionRefused);
        assert!(describe(&refused, PLAIN).starts_with("the connection was refused"));
        let dropped = io_error(io::ErrorKind::ConnectionReset);
        assert!(describe(&dropped, PLAIN).ends_with("use rediss://"));
        assert_eq!(describe(&dropped, TLS), "the server closed the connection");
    }

    /// An error reply as the server sends it.
    fn reply(text: &str) -> RedisError {
        match redis::parse_redis_value(format!("-{text}\r\n").as_bytes()) {
            Ok(value) => value
                .extract_error()
                .err()
                .unwrap_or_else(|| io_error(io::ErrorKind::Other)),
            Err(e) => e,
        }
    }

    /// Issue 25, item 12: a 1 MiB error reply (or host) went whole into the message.
    #[test]
    fn a_servers_text_is_quoted_bounded_and_escaped() {
        let flood = format!("ERR {}", "a".repeat(1 << 20));
        let text = describe(&reply(&flood), PLAIN);
        assert!(text.len() < 400, "{} bytes", text.len());
        assert!(text.ends_with("(1048576 bytes in all, cut)"), "{text}");
        assert_eq!(quoted("a\r\n\u{1b}[31m"), "a\\r\\n\\u{1b}[31m");
        assert_eq!(node_name("::1", 7000), "[::1]:7000");
        assert!(node_name(&"h".repeat(5000), 1).ends_with("cut):1"));
    }

    #[test]
    fn cluster_replies_say_what_is_going_on() {
        let migrating = describe(
            &reply("TRYAGAIN Multiple keys request during rehashing of slot"),
            PLAIN,
        );
        assert!(
            migrating.starts_with("the server answered TRYAGAIN Multiple keys"),
            "{migrating}"
        );
        assert!(migrating.contains("being migrated"), "{migrating}");
        let down = describe(&reply("CLUSTERDOWN The cluster is down"), PLAIN);
        assert!(down.contains("no primary for some slots"), "{down}");
    }

    #[test]
    fn no_redis_rs_vocabulary_reaches_a_message() {
        let errors = [
            RedisError::from((
                ErrorKind::AuthenticationFailed,
                "Password authentication failed",
            )),
            io_error(io::ErrorKind::WouldBlock),
            io_error(io::ErrorKind::TimedOut),
            io_error(io::ErrorKind::ConnectionRefused),
            io_error(io::ErrorKind::ConnectionReset),
            io_error(io::ErrorKind::BrokenPipe),
        ];
        for e in &errors {
            for context in [PLAIN, TLS] {
                let text = describe(e, context);
                for word in [
                    "AuthenticationFailed",
                    "os error",
                    "ResponseError",
                    "IoError",
                    "Server(",
                ] {
                    assert!(!text.contains(word), "{text}");
                }
            }
        }
    }
}
