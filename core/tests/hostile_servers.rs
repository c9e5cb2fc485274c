//! Servers that answer what no honest Redis does: their text must reach a message bounded, named
//! for where it came from. Each is a real socket peer on loopback speaking RESP, standing for a
//! broken or hostile sentinel.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use deadbolt_core::{Key, Mode, NativeTransport, RedisStore, Store, Ttl};

/// Reads one RESP command (an array of bulk strings).
fn command(reader: &mut BufReader<TcpStream>) -> Option<Vec<String>> {
    let mut line = String::new();
    reader.read_line(&mut line).ok().filter(|n| *n > 0)?;
    let count: usize = line.trim().strip_prefix('*')?.parse().ok()?;
    let mut parts = Vec::with_capacity(count);
    for _ in 0..count {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let len: usize = line.trim().strip_prefix('$')?.parse().ok()?;
        let mut data = vec![0; len + 2];
        reader.read_exact(&mut data).ok()?;
        data.truncate(len);
        parts.push(String::from_utf8_lossy(&data).into_owned());
    }
    Some(parts)
}

/// A "sentinel" on a free port that names `host` as the primary of every service, and answers
/// anything else with OK.
fn sentinel_naming(host: String) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let host = host.clone();
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                while let Some(parts) = command(&mut reader) {
                    let reply = if parts.iter().any(|p| p == "get-master-addr-by-name") {
                        format!("*2\r\n${}\r\n{host}\r\n$4\r\n6379\r\n", host.len())
                    } else {
                        "+OK\r\n".to_owned()
                    };
                    if writer.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// Issue 25, item 12: a sentinel naming a 1 MiB host made a 1,048,999-byte message ending "check
/// the host in the DSN", though the DSN did not name it.
#[test]
fn a_sentinels_huge_host_is_quoted_bounded_and_blamed_on_the_sentinel() {
    let port = sentinel_naming("h".repeat(1 << 20));
    let dsn = format!("redis:?host[127.0.0.1:{port}]&redis_sentinel=svc&timeout=1&read_timeout=1");
    let store: RedisStore<NativeTransport> =
        RedisStore::connect(&dsn, Ttl::from_secs(30.0).unwrap()).unwrap();
    let mut key = Key::new("hostile-sentinel");
    let error = store
        .save(&mut key, Mode::Exclusive, None)
        .unwrap_err()
        .to_string();
    assert!(
        error.len() < 2000,
        "{} bytes: {}",
        error.len(),
        &error[..300]
    );
    assert!(error.contains("(1048576 bytes in all, cut)"), "{error}");
    assert!(
        error.contains(&format!("sentinel 127.0.0.1:{port} names the primary")),
        "{error}"
    );
    assert!(!error.contains("check the host in the DSN"), "{error}");
}
