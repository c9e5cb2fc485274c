//! Finding a Sentinel service's primary, as the Sentinel client protocol asks: each sentinel in
//! turn is asked for the service's primary (`SENTINEL get-master-addr-by-name`); the address it
//! names is connected to and kept only if that server says it is a primary (`ROLE`), since a
//! sentinel may not have seen a failover yet. The sentinel that answered is asked first next time.
//!
//! Not redis-rs's `sentinel` module: its blocking client connects to sentinels and primaries and
//! reads their replies without any timeout, so one frozen server would hang the PHP process. Here
//! every connect and read is bounded (the DSN's `timeout` and `read_timeout`, capped by the
//! caller's deadline).

use std::sync::atomic::Ordering;

use crate::store::redis::client::{open, Bounds, ClientFactory};
use crate::store::redis::dsn::{host_port, Sentinels};
use crate::store::redis::wording::{node_name, quoted};
use crate::sync::AtomicUsize;

/// The primary of one Sentinel service, found anew at each connection.
pub struct Discovery {
    service: String,
    /// Each sentinel as `host:port` (for messages) and its client.
    sentinels: Vec<(String, redis::Client)>,
    factory: ClientFactory,
    /// The sentinel to ask first: the last one that named a primary.
    first: AtomicUsize,
}

impl Discovery {
    pub fn new(sentinels: &Sentinels, factory: ClientFactory) -> redis::RedisResult<Self> {
        let clients = sentinels
            .nodes
            .iter()
            .map(|(host, port)| {
                let client = factory.sentinel_at(
                    host,
                    *port,
                    sentinels.username.as_deref(),
                    sentinels.password.as_deref(),
                )?;
                Ok((host_port(host, *port), client))
            })
            .collect::<redis::RedisResult<_>>()?;
        Ok(Discovery {
            service: sentinels.service.clone(),
            sentinels: clients,
            factory,
            first: AtomicUsize::new(0),
        })
    }

    /// A connection to the service's primary, or why none of the sentinels led to one (each
    /// sentinel's reason, in the order asked).
    pub fn connect(&self, bounds: &Bounds<'_>) -> Result<redis::Connection, String> {
        let count = self.sentinels.len();
        let first = self.first.load(Ordering::Relaxed);
        let mut failures = Vec::with_capacity(count);
        for index in (0..count).map(|i| (first + i) % count) {
            let (sentinel, client) = &self.sentinels[index];
            let named = open(client, bounds).and_then(|mut connection| {
                redis::cmd("SENTINEL")
                    .arg("get-master-addr-by-name")
                    .arg(&self.service)
                    .query::<Option<(String, u16)>>(&mut connection)
            });
            let failure = match named {
                Err(e) => (bounds.describe)(&e),
                Ok(None) => format!("knows no service \"{}\"", self.service),
                Ok(Some((host, port))) => match self.primary(&host, port, bounds) {
                    Ok(connection) => {
                        self.first.store(index, Ordering::Relaxed);
                        return Ok(connection);
                    }
                    Err(why) => format!(
                        "names the primary {}, which {why} (check the sentinels' view of the service)",
                        node_name(&host, port)
                    ),
                },
            };
            failures.push(format!("sentinel {sentinel} {failure}"));
        }
        Err(format!(
            "no sentinel led to a primary for \"{}\": {}",
            self.service,
            failures.join("; ")
        ))
    }

    /// A connection to `host:port` if the server there says it is a primary.
    fn primary(
        &self,
        host: &str,
        port: u16,
        bounds: &Bounds<'_>,
    ) -> Result<redis::Connection, String> {
        let describe = |e: redis::RedisError| format!("failed: {}", (bounds.describe)(&e));
        let client = self.factory.primary_at(host, port).map_err(describe)?;
        let mut connection = open(&client, bounds).map_err(describe)?;
        let role: Vec<redis::Value> = redis::cmd("ROLE")
            .query(&mut connection)
            .map_err(describe)?;
        match role.first() {
            Some(redis::Value::BulkString(role)) if role == b"master" => Ok(connection),
            Some(redis::Value::BulkString(role)) => Err(format!(
                "says it is a {} (a failover not seen by this sentinel yet?)",
                quoted(&String::from_utf8_lossy(role))
            )),
            _ => Err("gave no role".to_owned()),
        }
    }
}
