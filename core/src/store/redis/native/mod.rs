//! The native connection: one per process per connection identity (what the DSN resolves to:
//! endpoint, credentials, database, TLS, timeouts), shared by every store on it (`cell.rs` keeps
//! the process's table of them). Never across fork(): cells are [`PerProcess`] values, so a
//! child that inherits one keeps its copy untouched (a TLS close would write to the parent's
//! socket) and opens its own. How the server is reached is decided once, from the DSN's endpoint
//! ([`Topology`]): one address, the primary a Sentinel service names, or a Redis Cluster whose
//! calls a [`Router`] sends to the node of their first key's hash slot.

mod cell;
mod link;
mod router;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::sync::Mutex;

use crate::process::PerProcess;
use crate::store::redis::calls::ScriptCall;
use crate::store::redis::client::{keep_open, open, ClientFactory};
use crate::store::redis::dsn::{Dsn, Endpoint};
use crate::store::redis::pending::evalsha;
use crate::store::redis::protocol::{self, Signal};
use crate::store::redis::replicas::{self, ReplicaAck};
use crate::store::redis::scripts::LockScript;
use crate::store::redis::sentinel::Discovery;
use crate::store::redis::transport::{RanThenWaited, RunError, RunErrorKind, Transport};
use crate::store::redis::wording::node_name;
use crate::store::PendingRelease;
pub use cell::read_unread_replies;
pub(crate) use cell::set_up;
use cell::{cell_named, Call, Cell, Failure, Open, Owner};
use link::{first_failure, Link};
use router::Router;

/// Keys a SCAN step looks at (SCAN's COUNT).
const SCAN_COUNT: u64 = 1000;

/// BLPOP's reply: the list and the item popped, or nothing by the timeout.
type Popped = Option<(Vec<u8>, Vec<u8>)>;

/// How a DSN reaches its server, decided once from its endpoint.
enum Topology {
    /// One address (a host or a unix socket).
    Direct(Arc<redis::Client>, OwnCell),
    /// Whatever primary the sentinels name at the time of connecting.
    Sentinel(Arc<Discovery>, OwnCell),
    /// The nodes of a Redis Cluster, each connected as it is named.
    Cluster(Router),
}

/// The one cell of a single-server transport: its owner's, named in the process's table, looked
/// up once per process.
struct OwnCell {
    owner: Owner,
    name: String,
    cell: PerProcess<Arc<Mutex<Cell>>>,
}

impl OwnCell {
    fn new(owner: Owner, name: String) -> Self {
        OwnCell {
            owner,
            name,
            cell: PerProcess::new(),
        }
    }

    fn get(&self) -> &Arc<Mutex<Cell>> {
        self.cell.get_or_init(|| cell_named(self.owner, &self.name))
    }

    /// A cell of the same owner under another name.
    fn twin(&self, name: String) -> Self {
        OwnCell::new(self.owner, name)
    }
}

/// A transport on the process's native connection for one DSN.
pub struct NativeTransport {
    dsn: Dsn,
    name: String,
    topology: Topology,
}

impl NativeTransport {
    /// A transport for `dsn_text`. Does not connect: the first script does.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for a malformed DSN or an unreadable CA file.
    pub fn new(dsn_text: &str) -> crate::Result<Self> {
        let dsn = Dsn::parse(dsn_text)?;
        let factory = ClientFactory::for_dsn(&dsn)?;
        let cell_name = dsn.connection_identity();
        // The PHP thread making the transport owns its connections (`cell::Owner`).
        let owner = std::thread::current().id();
        let invalid = |e: redis::RedisError| crate::Error::InvalidArgument {
            message: format!("Invalid Redis DSN for {}: {e}.", dsn.redacted()),
        };
        let topology = match &dsn.connection.endpoint {
            Endpoint::Tcp { host, port, .. } => Topology::Direct(
                Arc::new(factory.primary_at(host, *port).map_err(invalid)?),
                OwnCell::new(owner, cell_name),
            ),
            Endpoint::Unix(path) => Topology::Direct(
                Arc::new(factory.primary_at_socket(path).map_err(invalid)?),
                OwnCell::new(owner, cell_name),
            ),
            Endpoint::Sentinel(sentinels) => Topology::Sentinel(
                Arc::new(Discovery::new(sentinels, factory).map_err(invalid)?),
                OwnCell::new(owner, cell_name),
            ),
            Endpoint::Cluster { seeds, .. } => Topology::Cluster(Router::new(
                seeds.clone(),
                Arc::new(factory),
                (owner, cell_name),
            )),
        };
        Ok(NativeTransport {
            name: dsn.redacted(),
            dsn,
            topology,
        })
    }

    /// A transport on connections of its own for the same DSN (the background refresher's, so
    /// that it never waits behind a blocked wait of the PHP thread).
    fn twin(&self, purpose: &str) -> Self {
        let name_for = |own: &str| format!("{own}#{purpose}");
        let topology = match &self.topology {
            Topology::Direct(client, own) => {
                Topology::Direct(Arc::clone(client), own.twin(name_for(&own.name)))
            }
            Topology::Sentinel(discovery, own) => {
                Topology::Sentinel(Arc::clone(discovery), own.twin(name_for(&own.name)))
            }
            Topology::Cluster(router) => {
                Topology::Cluster(router.twin(name_for(router.cell_name())))
            }
        };
        NativeTransport {
            dsn: self.dsn.clone(),
            name: self.name.clone(),
            topology,
        }
    }

    /// A call's view of the transport: no socket wait of it lasts past `deadline`.
    fn link(&self, deadline: Option<Instant>) -> Link<'_> {
        let connection = &self.dsn.connection;
        Link {
            name: &self.name,
            connect_timeout: connection.connect_timeout,
            read_timeout: connection.read_timeout,
            tls: connection.endpoint.tls(),
            deadline,
        }
    }

    /// Runs `call` on this process's connection (for a cluster, the one to the node serving
    /// `route`'s hash slot), with a socket read timeout of `wait` (capped by the deadline).
    fn with_connection<T>(
        &self,
        link: &Link<'_>,
        route: &[u8],
        wait: Duration,
        call: &mut Call<'_, T>,
    ) -> Result<T, RunError> {
        let (own, open_cell): (&OwnCell, &Open<'_>) = match &self.topology {
            Topology::Cluster(router) => return router.call(link, route, wait, call),
            Topology::Direct(client, own) => (own, &|| direct_connect(client, link)),
            Topology::Sentinel(discovery, own) => (own, &|| sentinel_connect(discovery, link)),
        };
        let outcome = own
            .get()
            .lock()
            .call(link, None, &open_cell, (wait, false), call);
        outcome.map_err(|failure| match failure {
            Failure::Run(error) => error,
            Failure::Redirect(redirect) => RunError::new(
                RunErrorKind::Server,
                format!(
                    "Redis at {} is a Redis Cluster node (it redirected to {}): use \
                     redis_cluster=1 and the nodes as host[...] in the DSN",
                    link.name,
                    node_name(&redirect.node().0, redirect.node().1)
                ),
            ),
        })
    }

    /// The names of the sorted sets whose names match the glob `pattern`, by SCAN with `TYPE
    /// zset` on this process's connection; for a cluster, on every primary in turn (an
    /// operator's listing; keys come and go meanwhile, so a key may be missed or named twice, as
    /// SCAN promises).
    ///
    /// # Errors
    /// [`RunError`] when a server cannot be reached or refuses SCAN.
    pub(crate) fn scan_sorted_sets(&self, pattern: &[u8]) -> Result<Vec<Vec<u8>>, RunError> {
        let link = self.link(None);
        let describe = |e: &redis::RedisError| link.error(e).to_string();
        let mut scan = |session: &mut cell::Session<'_>| {
            // Replies a deferred release left unread come first on the stream.
            session.unread.read_all(session.connection, &describe)?;
            let mut names = Vec::new();
            let mut cursor = 0u64;
            loop {
                let (next, batch): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(pattern)
                    .arg("COUNT")
                    .arg(SCAN_COUNT)
                    .arg("TYPE")
                    .arg("zset")
                    .query(session.connection)?;
                names.extend(batch);
                if next == 0 {
                    return Ok(names);
                }
                cursor = next;
            }
        };
        match &self.topology {
            Topology::Cluster(router) => Ok(router
                .call_on_every_primary(&link, link.read_timeout, &mut scan)?
                .concat()),
            _ => self.with_connection(&link, b"", link.read_timeout, &mut scan),
        }
    }

    /// This transport's cells in this process, so far.
    fn cells(&self) -> Vec<Arc<Mutex<Cell>>> {
        match &self.topology {
            Topology::Direct(_, own) | Topology::Sentinel(_, own) => vec![Arc::clone(own.get())],
            Topology::Cluster(router) => router.cells(),
        }
    }

    /// The DSN's acknowledgement, its WAIT bounded by half the time left to the deadline: its
    /// reply must come before the socket's timeout (capped by the same deadline), or a wait
    /// would take the lock, lose the reply, and leave the lock behind.
    fn replicas(&self, link: &Link<'_>) -> Option<ReplicaAck> {
        let mut ack = self.dsn.store.replicas?;
        if let Some(deadline) = link.deadline {
            let half_left = deadline.saturating_duration_since(Instant::now()) / 2;
            ack.timeout = ack.timeout.min(half_left).max(Duration::from_millis(1));
        }
        Some(ack)
    }

    /// Runs a call that blocks in the server for up to `timeout` (handed over as BLPOP's
    /// seconds, decimals since Redis 6), with a socket timeout that outwaits it.
    fn blocking<T>(
        &self,
        link: &Link<'_>,
        route: &[u8],
        timeout: Duration,
        mut call: impl FnMut(&mut cell::Session<'_>, &str) -> redis::RedisResult<T>,
    ) -> Result<T, RunError> {
        let seconds = format!("{:.3}", timeout.as_secs_f64().max(0.001));
        let describe = |e: &redis::RedisError| link.error(e).to_string();
        let ack = self
            .dsn
            .store
            .replicas
            .map_or(Duration::ZERO, |ack| ack.timeout);
        let wait = timeout + link.read_timeout + ack;
        self.with_connection(link, route, wait, &mut |session| {
            session.unread.read_all(session.connection, &describe)?;
            call(session, &seconds)
        })
    }
}

/// A new connection to the one server, kept open for later calls.
fn direct_connect(client: &redis::Client, link: &Link<'_>) -> Result<redis::Connection, RunError> {
    link.bounds(|bounds| open(client, bounds))
        .and_then(|connection| keep_open(connection, link.read_timeout))
        .map_err(|e| link.error(&e))
}

/// A new connection to the primary the sentinels name now, kept open for later calls; when none
/// led to one, each sentinel's reason.
fn sentinel_connect(discovery: &Discovery, link: &Link<'_>) -> Result<redis::Connection, RunError> {
    let connection = link
        .bounds(|bounds| discovery.connect(bounds))
        .map_err(|why| link.failure(RunErrorKind::Connection, why))?;
    keep_open(connection, link.read_timeout).map_err(|e| link.error(&e))
}

impl Transport for NativeTransport {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&self, call: &ScriptCall, deadline: Option<Instant>) -> Result<i64, RunError> {
        let link = self.link(deadline);
        let describe = |e: &redis::RedisError| link.error(e).to_string();
        let ack = self.replicas(&link).filter(|_| call.script().writes_lock());
        let wait = link.read_timeout + ack.map_or(Duration::ZERO, |ack| ack.timeout);
        let (reply, shortfall) =
            self.with_connection(&link, call.route(), wait, &mut |session| {
                let reply = session
                    .unread
                    .run_behind(session.connection, call, &describe)?;
                let took = protocol::took(reply);
                Ok((reply, replicas::check(ack, took, session.connection)?))
            })?;
        link.acknowledged(shortfall)?;
        Ok(reply)
    }

    fn fetch(&self, call: &ScriptCall, deadline: Option<Instant>) -> Result<Vec<u8>, RunError> {
        let link = self.link(deadline);
        let describe = |e: &redis::RedisError| link.error(e).to_string();
        self.with_connection(&link, call.route(), link.read_timeout, &mut |session| {
            session
                .unread
                .run_behind(session.connection, call, &describe)
        })
    }

    fn wait_signal(
        &self,
        list: &[u8],
        timeout: Duration,
        deadline: Option<Instant>,
    ) -> Result<Option<Signal>, RunError> {
        self.blocking(&self.link(deadline), list, timeout, |session, seconds| {
            let popped: Popped = redis::cmd("BLPOP")
                .arg(list)
                .arg(seconds)
                .query(session.connection)?;
            Ok(popped.and_then(|(_, item)| Signal::parse(&item)))
        })
    }

    fn run_then_wait(
        &self,
        call: &ScriptCall,
        list: &[u8],
        timeout: Duration,
        deadline: Option<Instant>,
    ) -> Result<RanThenWaited, RunError> {
        let link = self.link(deadline);
        let (ran, shortfall) =
            self.blocking(&link, call.route(), timeout, |session, seconds| {
                let mut pipe = redis::pipe();
                session.push(&mut pipe, evalsha(call));
                let mut blpop = redis::cmd("BLPOP");
                blpop.arg(list).arg(seconds);
                session.push(&mut pipe, blpop);
                let (reply, popped) =
                    query_loading_script(&pipe, call.script(), session.connection)?;
                let signal = popped.and_then(|(_, item)| Signal::parse(&item));
                // Taken by the attempt (a hand-over is acknowledged through its claim, wait.rs). The
                // WAIT is bounded by the time left now, after the pop.
                let ack = self.replicas(&link);
                let shortfall = replicas::check(ack, protocol::took(reply), session.connection)?;
                Ok(((reply, signal), shortfall))
            })?;
        link.acknowledged(shortfall)?;
        Ok(ran)
    }

    fn take_warning(&self) -> Option<String> {
        self.cells()
            .iter()
            .find_map(|cell| cell.lock().warning.take())
    }

    fn cluster(&self) -> bool {
        matches!(self.topology, Topology::Cluster(_))
    }

    fn defers_release(&self) -> bool {
        self.dsn.store.deferred_release
    }

    fn records(&self) -> bool {
        !self.dsn.store.no_records
    }

    fn acknowledges(&self) -> bool {
        self.dsn.store.replicas.is_some()
    }

    fn read_unread(&self) {
        let link = self.link(None);
        let describe = |e: &redis::RedisError| link.error(e).to_string();
        let timeout = link.capped(link.read_timeout);
        for cell in self.cells() {
            cell.lock().read_unread(Some(timeout), &describe);
        }
    }

    fn send(&self, call: &ScriptCall) -> Result<PendingRelease, RunError> {
        // A cluster never defers a release (the DSN refuses it): it runs now.
        let (Topology::Direct(_, own) | Topology::Sentinel(_, own)) = &self.topology else {
            self.run(call, None)?;
            return Ok(PendingRelease::done());
        };
        if let Some(pending) = own.get().lock().send(call, &self.link(None)) {
            return Ok(pending);
        }
        // No connection to write to (a first command, or it just broke): run it now, on a new one.
        self.run(call, None)?;
        Ok(PendingRelease::done())
    }

    fn for_background(&self) -> Option<Box<dyn Transport + Send + Sync>> {
        Some(Box::new(self.twin("refresher")))
    }
}

/// The pipeline's two replies (the script's, then BLPOP's). A server that lost its scripts
/// (restart, SCRIPT FLUSH) has the script loaded and both sent again: the wait ran its course
/// without the attempt.
fn query_loading_script(
    pipe: &redis::Pipeline,
    script: &LockScript,
    connection: &mut redis::Connection,
) -> redis::RedisResult<(i64, Popped)> {
    match pipe.query(connection) {
        Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
            redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(script.code())
                .exec(connection)?;
            pipe.query(connection)
        }
        other => other,
    }
    .map_err(first_failure)
}
