//! Locks in memcached, on the very items symfony/lock's `MemcachedStore` writes, so a Deadbolt
//! process and a symfony/lock process exclude each other on one server.
//!
//! One item per lock: its key is the resource (after the client's key prefix, as PHP's
//! `\Memcached` adds it), its value the holder's token, its expiry the lock's TTL in whole seconds
//! (rounded up, as symfony/lock does, plus one for memcached's clock: [`item_ttl`]). A lock is taken with `add`, extended with a compare-and-swap
//! on the item's CAS value, released by a delete that only applies to that CAS value (meta
//! protocol `md ... C<cas>`: symfony/lock's "extend to 2 s, then delete" in one step).
//!
//! What the backend gives: expiry (so the refresher works, and a killed holder's lock ends with
//! its TTL), reach across hosts. What it rules out: waits better than polling (memcached tells no
//! one of a release), shared locks (one value per item: a read lock is an exclusive one, as
//! symfony/lock's `Lock` does on a store without them), fencing tokens (an `incr` counter can be
//! evicted or lost in a restart, and would then go back), holder records beyond the token, and
//! any promise once the server evicts or loses an item: memcached is a cache, and an evicted lock
//! is a free lock. Deadbolt never revives a lock that is gone (symfony/lock's `putOffExpiration`
//! adds it again): a refresh of an expired or evicted lock reports it lost.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use memcache::exp::{GetStatus, MetaClient, MutationStatus, Ttl as ItemTtl};

use crate::holder::{self, Holder, LockState, Origin};
use crate::key::display_resource;
use crate::process::PerProcess;
use crate::store::{
    expired_on_refresh, expired_on_save, Capabilities, ExpiringStore, Extender, InspectingStore,
    Mode, Store,
};
use crate::{Error, Key, Result, Ttl};

/// memcached's limit on a key, in bytes (prefix included).
const MAX_KEY_BYTES: usize = 250;
/// The limit on a key sent in its binary form: its base64 must fit in [`MAX_KEY_BYTES`].
const MAX_BINARY_KEY_BYTES: usize = MAX_KEY_BYTES / 4 * 3;
/// The port memcached listens on unless told otherwise.
const DEFAULT_PORT: u16 = 11211;
/// How long connecting, and then one command's exchange, may take by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);
/// Compare-and-swap rounds an extension tries when its own item changed under it (another thread
/// of this process extending the same lock) before it gives up.
const CAS_ROUNDS: usize = 3;
/// The most untrusted server text a message quotes.
const SHOWN_SERVER_TEXT: usize = 200;

/// Where a memcached store keeps its locks: one server, a key prefix, a timeout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemcachedServer {
    pub host: String,
    pub port: u16,
    /// Prepended to every item's key (PHP's `\Memcached::OPT_PREFIX_KEY`).
    pub prefix: Vec<u8>,
    /// Connecting, and each command's exchange, give up after this long.
    pub timeout: Duration,
}

impl MemcachedServer {
    /// A server at `host:port`, no prefix, the default timeout.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        MemcachedServer {
            host: host.into(),
            port,
            prefix: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The server a DSN names: `memcached://HOST[:PORT][?timeout=SECONDS&prefix_key=PREFIX]` (the
    /// form symfony/lock's `StoreFactory` takes, for one server); `None` when `dsn` is not a
    /// memcached one.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for what this store cannot use, saying what to write instead.
    pub fn of_dsn(dsn: &str) -> Option<Result<Self>> {
        dsn.starts_with("memcached:").then(|| parse_dsn(dsn))
    }
}

fn parse_dsn(dsn: &str) -> Result<MemcachedServer> {
    let url = url::Url::parse(dsn).map_err(|_| dsn_error("it is not a URL"))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(dsn_error(
            "it has credentials, and SASL needs memcached's binary protocol, which Deadbolt does \
             not speak: keep the server on a private network instead",
        ));
    }
    let host = match url.host_str() {
        Some(host) if !host.is_empty() => host.trim_matches(['[', ']']).to_owned(),
        _ => {
            return Err(dsn_error(
                "it names no host (a unix socket, or several servers, is not supported: one \
                 server over TCP)",
            ))
        }
    };
    let mut server = MemcachedServer::new(host, url.port().unwrap_or(DEFAULT_PORT));
    for (name, value) in url.query_pairs() {
        match &*name {
            "timeout" => server.timeout = timeout_of(&value)?,
            "prefix_key" => server.prefix = value.as_bytes().to_vec(),
            other => {
                return Err(dsn_error(&format!(
                    "its option \"{}\" is unknown (timeout, prefix_key)",
                    other.chars().take(32).collect::<String>()
                )))
            }
        }
    }
    Ok(server)
}

fn timeout_of(value: &str) -> Result<Duration> {
    value
        .parse::<f64>()
        .ok()
        .filter(|secs| secs.is_finite() && *secs > 0.0 && *secs <= 3600.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| dsn_error("its timeout is not a number of seconds between 0 and 3600"))
}

/// A DSN this store cannot use; the DSN itself is not repeated (it may carry a password).
fn dsn_error(why: &str) -> Error {
    Error::invalid_argument(format!(
        "Invalid memcached DSN: {why}. Use memcached://HOST[:PORT][?timeout=SECONDS&prefix_key=PREFIX]."
    ))
}

/// The store's connection and settings, shared by the store and its refresher's extender.
struct Shared {
    address: SocketAddr,
    prefix: Vec<u8>,
    timeout: Duration,
    name: String,
    /// This process's client: a forked child makes its own (the parent's sockets are left alone).
    /// `None` only if the client library refused the address, which it does not for a resolved one.
    client: PerProcess<Option<MetaClient>>,
}

/// Locks in one memcached server, on symfony/lock's items.
pub struct MemcachedStore {
    shared: Arc<Shared>,
    initial_ttl: Ttl,
    extender: OnceLock<Arc<dyn Extender>>,
}

impl MemcachedStore {
    /// A store on `server`; `initial_ttl` is the lifetime a bare `save()` gives (symfony/lock's
    /// `$initialTtl`, 300 s there). Connects lazily: a server that is down fails the first call.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the host does not resolve, or the prefix is not one
    /// memcached takes.
    pub fn new(server: MemcachedServer, initial_ttl: Ttl) -> Result<Self> {
        check_prefix(&server.prefix)?;
        let address = resolve(&server.host, server.port)?;
        Ok(MemcachedStore {
            shared: Arc::new(Shared {
                address,
                prefix: server.prefix,
                timeout: server.timeout,
                name: format!("MemcachedStore({address})"),
                client: PerProcess::new(),
            }),
            initial_ttl,
            extender: OnceLock::new(),
        })
    }

    /// A store on the server `dsn` names (`memcached://...`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a DSN that is not a memcached one, or as [`Self::new`].
    pub fn connect(dsn: &str, initial_ttl: Ttl) -> Result<Self> {
        let server = MemcachedServer::of_dsn(dsn)
            .ok_or_else(|| dsn_error("it does not start with memcached://"))??;
        Self::new(server, initial_ttl)
    }

    fn not_held(&self, key: &Key) -> Error {
        Error::not_held(key.display_resource(), &self.shared.name)
    }
}

fn check_prefix(prefix: &[u8]) -> Result<()> {
    if prefix.len() > 128 || !legacy_safe(prefix) {
        return Err(Error::invalid_argument(
            "A memcached key prefix has at most 128 bytes, without spaces or control characters \
             (as \\Memcached::OPT_PREFIX_KEY).",
        ));
    }
    Ok(())
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr> {
    let shown: String = host.chars().take(64).collect();
    (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut found| found.next())
        .ok_or_else(|| {
            Error::invalid_argument(format!(
                "The memcached host \"{shown}\" does not resolve to an address."
            ))
        })
}

/// A key memcached's text protocol sends as it is (no space or control character).
fn legacy_safe(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b > 0x20 && b != 0x7f)
}

/// The lifetime memcached gives an item: whole seconds, rounded up as symfony/lock rounds them, and
/// one more. memcached's clock ticks once a second and an item of N seconds ends at the N-th tick
/// from now, which can come up to a second early: without the extra second the server could drop
/// a lock before its holder's lifetime says it ends. With it, the item outlives the lifetime by up
/// to a second, in which no one can take the lock and its holder no longer counts as holding it
/// ([`Store::exists`]). Never zero (that would mean "never expires").
fn item_ttl(ttl: Ttl) -> ItemTtl {
    let secs = ttl.as_secs().ceil().clamp(1.0, f64::from(u32::MAX - 1)) + 1.0;
    // The clamp keeps it in u32's range.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    ItemTtl::secs(secs as u32)
}

/// Refuses a TTL under a second, as symfony/lock's MemcachedStore does: memcached counts whole
/// seconds.
fn check_ttl(store: &str, ttl: Ttl) -> Result<()> {
    if ttl.as_secs() < 1.0 {
        return Err(Error::InvalidTtl {
            message: format!(
                "{store} expects a TTL of at least 1 second (memcached counts whole seconds); {} \
                 given.",
                crate::ttl::shown(ttl.as_secs())
            ),
        });
    }
    Ok(())
}

/// What an extension found.
enum Extended {
    Yes,
    /// The item holds another token.
    Taken,
    /// There is no item.
    Gone,
}

impl Shared {
    /// This process's client (built on first use; it dials lazily).
    fn client(&self) -> Result<&MetaClient> {
        self.client
            .get_or_init(|| {
                MetaClient::builder()
                    .connect_timeout(Some(self.timeout))
                    .io_timeout(Some(self.timeout))
                    .max_idle(2)
                    .connect(self.address)
                    .ok()
            })
            .as_ref()
            .ok_or_else(|| {
                Error::invalid_argument(format!("{}: no client for this address.", self.name))
            })
    }

    /// The item key of `resource`: the prefix and the resource. A key with a space or a control
    /// character goes to memcached in its binary-key form (base64 on the wire, meta protocol `b`),
    /// which the client library does by itself; symfony/lock cannot lock such names at all.
    fn item(&self, resource: &[u8]) -> Result<Vec<u8>> {
        let mut item = self.prefix.clone();
        item.extend_from_slice(resource);
        let limit = if legacy_safe(&item) {
            MAX_KEY_BYTES
        } else {
            MAX_BINARY_KEY_BYTES
        };
        if item.len() > limit || resource.is_empty() {
            return Err(Error::invalid_argument(format!(
                "The resource name \"{}\" cannot be a memcached key: memcached keys have 1 to {} \
                 bytes with the key prefix ({} with a space or a control character); choose a \
                 shorter name, or hash it.",
                display_resource(resource),
                MAX_KEY_BYTES,
                MAX_BINARY_KEY_BYTES
            )));
        }
        Ok(item)
    }

    /// A failure of the server or the connection, naming what was being done.
    fn failed(&self, action: &str, resource: &[u8], e: memcache::exp::Error) -> Error {
        let said: String = e.to_string().chars().take(SHOWN_SERVER_TEXT).collect();
        Error::storage(
            format!(
                "{} failed to {action} the \"{}\" lock: {said}",
                self.name,
                display_resource(resource)
            ),
            e,
        )
    }

    /// `add`: true when the item was stored (the lock was free).
    fn add(&self, item: &[u8], token: &str, ttl: Ttl, resource: &[u8]) -> Result<bool> {
        let reply = self
            .client()?
            .set(item, token)
            .add()
            .ttl(item_ttl(ttl))
            .send()
            .map_err(|e| self.failed("take", resource, e))?;
        Ok(reply.status == MutationStatus::Applied)
    }

    /// The item's value and CAS value, if there is an item.
    fn read(&self, item: &[u8], resource: &[u8]) -> Result<Option<(Vec<u8>, u64)>> {
        let reply = self
            .client()?
            .get(item)
            .meta(memcache::exp::Meta::default().cas())
            .send()
            .map_err(|e| self.failed("read", resource, e))?;
        Ok(match (reply.status, reply.value, reply.item.cas) {
            (GetStatus::Hit, Some(value), Some(cas)) => Some((value, cas)),
            _ => None,
        })
    }

    /// Gives `token`'s item a new TTL, if `token` holds it.
    fn extend(&self, item: &[u8], token: &str, ttl: Ttl, resource: &[u8]) -> Result<Extended> {
        for _ in 0..CAS_ROUNDS {
            let Some((value, cas)) = self.read(item, resource)? else {
                return Ok(Extended::Gone);
            };
            if value != token.as_bytes() {
                return Ok(Extended::Taken);
            }
            let reply = self
                .client()?
                .set(item, token)
                .compare_cas(cas)
                .ttl(item_ttl(ttl))
                .send()
                .map_err(|e| self.failed("extend", resource, e))?;
            match reply.status {
                MutationStatus::Applied => return Ok(Extended::Yes),
                MutationStatus::NotFound => return Ok(Extended::Gone),
                // Changed since it was read: read it again.
                _ => continue,
            }
        }
        Ok(Extended::Taken)
    }

    /// Deletes `token`'s item, if `token` holds it.
    fn release(&self, item: &[u8], token: &str, resource: &[u8]) -> Result<()> {
        let Some((value, cas)) = self.read(item, resource)? else {
            return Ok(());
        };
        if value != token.as_bytes() {
            return Ok(());
        }
        // Only this very item: a lock taken since by someone else has another CAS value.
        self.client()?
            .delete(item)
            .compare_cas(cas)
            .send()
            .map(|_| ())
            .map_err(|e| self.failed("release", resource, e))
    }
}

impl Store for MemcachedStore {
    fn name(&self) -> &str {
        &self.shared.name
    }

    /// symfony/lock's save: `add`, and when the item exists, an extension (it may be this key's).
    /// A read lock is an exclusive one: an item has one value.
    fn save(&self, key: &mut Key, _mode: Mode, ttl: Option<Ttl>) -> Result<()> {
        let ttl = ttl.unwrap_or(self.initial_ttl);
        check_ttl(&self.shared.name, ttl)?;
        let item = self.shared.item(key.resource())?;
        let token = key.token()?.as_str().to_owned();
        key.reduce_lifetime(ttl);
        if key.is_expired() {
            return Err(expired_on_save(self, key));
        }
        let resource = key.resource().to_vec();
        let mut taken = self.shared.add(&item, &token, ttl, &resource)?;
        if !taken {
            taken = match self.shared.extend(&item, &token, ttl, &resource)? {
                Extended::Yes => true,
                // Released between the two calls: free again.
                Extended::Gone => self.shared.add(&item, &token, ttl, &resource)?,
                Extended::Taken => false,
            };
        }
        if !taken {
            return Err(Error::conflict(key.display_resource(), &self.shared.name));
        }
        if key.is_expired() {
            return Err(expired_on_save(self, key));
        }
        Ok(())
    }

    fn put_off_expiration(&self, key: &mut Key, ttl: Ttl) -> Result<()> {
        check_ttl(&self.shared.name, ttl)?;
        let item = self.shared.item(key.resource())?;
        let Some(token) = key.drawn_token().map(|t| t.as_str().to_owned()) else {
            return Err(self.not_held(key));
        };
        key.reduce_lifetime(ttl);
        match self.shared.extend(&item, &token, ttl, key.resource())? {
            Extended::Yes => {}
            Extended::Taken | Extended::Gone => return Err(self.not_held(key)),
        }
        if key.is_expired() {
            let _ = Store::delete(self, key);
            return Err(expired_on_refresh(self, key));
        }
        Ok(())
    }

    fn delete(&self, key: &mut Key) -> Result<()> {
        let Some(token) = key.drawn_token() else {
            return Ok(());
        };
        let item = self.shared.item(key.resource())?;
        self.shared.release(&item, token.as_str(), key.resource())
    }

    /// Whether `key` holds the lock: its item holds `key`'s token, and `key`'s lifetime has not run
    /// out (the item outlives it by up to a second, [`item_ttl`], and holds no one after it).
    fn exists(&self, key: &Key) -> Result<bool> {
        let Some(token) = key.drawn_token() else {
            return Ok(false);
        };
        if key.is_expired() {
            return Ok(false);
        }
        let item = self.shared.item(key.resource())?;
        Ok(self
            .shared
            .read(&item, key.resource())?
            .is_some_and(|(value, _)| value == token.as_str().as_bytes()))
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities {
            expiring: Some(self),
            inspecting: Some(self),
            ..Capabilities::default()
        }
    }
}

impl ExpiringStore for MemcachedStore {
    fn extender(&self) -> Option<Arc<dyn Extender>> {
        Some(
            self.extender
                .get_or_init(|| {
                    Arc::new(MemcachedExtender {
                        shared: Arc::clone(&self.shared),
                    })
                })
                .clone(),
        )
    }
}

/// Extends memcached locks from the refresher thread, on the store's client (it is thread-safe).
struct MemcachedExtender {
    shared: Arc<Shared>,
}

impl Extender for MemcachedExtender {
    fn extend(&self, resource: &[u8], token: &str, ttl: Ttl) -> Result<bool> {
        let item = self.shared.item(resource)?;
        Ok(matches!(
            self.shared.extend(&item, token, ttl, resource)?,
            Extended::Yes
        ))
    }
}

impl InspectingStore for MemcachedStore {
    /// The holder's token digest and when its item expires; memcached keeps no record of who.
    fn inspect(&self, resource: &[u8]) -> Result<LockState> {
        let item = self.shared.item(resource)?;
        let reply = self
            .shared
            .client()?
            .get(&item)
            .meta(memcache::exp::Meta::default().ttl())
            .send()
            .map_err(|e| self.shared.failed("inspect", resource, e))?;
        let (GetStatus::Hit, Some(value)) = (reply.status, reply.value) else {
            return Ok(LockState::default());
        };
        let expires_at = reply
            .item
            .ttl
            .and_then(|secs| u64::try_from(secs).ok())
            .map(|secs| SystemTime::now() + Duration::from_secs(secs));
        Ok(LockState {
            holders: vec![Holder {
                token_digest: holder::digest(&String::from_utf8_lossy(&value)),
                mode: Mode::Exclusive,
                origin: Origin::default(),
                acquired_at: None,
                expires_at,
            }],
            waiters: Vec::new(),
        })
    }

    fn force_release(&self, resource: &[u8]) -> Result<usize> {
        let item = self.shared.item(resource)?;
        let reply = self
            .shared
            .client()?
            .delete(&item)
            .send()
            .map_err(|e| self.shared.failed("release", resource, e))?;
        Ok(usize::from(reply.status == MutationStatus::Applied))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn dsns_name_one_server() {
        let server =
            MemcachedServer::of_dsn("memcached://127.0.0.1:11311?timeout=2.5&prefix_key=app:")
                .unwrap()
                .unwrap();
        assert_eq!(server.host, "127.0.0.1");
        assert_eq!(server.port, 11311);
        assert_eq!(server.prefix, b"app:");
        assert_eq!(server.timeout, Duration::from_millis(2500));
        assert_eq!(
            MemcachedServer::of_dsn("memcached://cache")
                .unwrap()
                .unwrap()
                .port,
            DEFAULT_PORT
        );
        assert!(MemcachedServer::of_dsn("redis://cache").is_none());
    }

    #[test]
    fn dsns_it_cannot_use_are_refused_without_their_secrets() {
        for dsn in [
            "memcached://user:s3cret@cache",
            "memcached:///var/run/memcached.sock",
            "memcached://cache?weight=3",
            "memcached://cache?timeout=0",
        ] {
            let message = MemcachedServer::of_dsn(dsn)
                .unwrap()
                .unwrap_err()
                .to_string();
            assert!(message.starts_with("Invalid memcached DSN"), "{message}");
            assert!(!message.contains("s3cret"), "{message}");
        }
    }

    #[test]
    fn ttls_become_whole_seconds_rounded_up_and_one_more() {
        assert_eq!(item_ttl(Ttl::from_secs(0.2).unwrap()), ItemTtl::secs(2));
        assert_eq!(item_ttl(Ttl::from_secs(2.01).unwrap()), ItemTtl::secs(4));
        assert_eq!(item_ttl(Ttl::from_secs(300.0).unwrap()), ItemTtl::secs(301));
    }
}
