//! Fixtures for the engine's integration tests: a real redis-server on a free loopback port.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test fixtures: a failure is a test failure
#![allow(dead_code)]

pub mod flock_child;
pub mod wait_keys;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A private redis-server: free port, own directory, no persistence; killed on drop.
pub struct RedisServer {
    pub port: u16,
    pub dir: tempfile::TempDir,
    child: Option<Child>,
    extra: Vec<String>,
}

impl RedisServer {
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Starts with extra `redis-server` arguments (e.g. `["--requirepass", "pw"]`).
    pub fn start_with(extra: &[&str]) -> Self {
        let port = free_port();
        let mut server = RedisServer {
            port,
            dir: tempfile::tempdir().unwrap(),
            child: None,
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let binary =
            std::env::var("DEADBOLT_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let child = Command::new(binary)
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args(["--appendonly", "no", "--unixsocket"])
            .arg(self.socket())
            .args(["--unixsocketperm", "700", "--dir"])
            .arg(self.dir.path())
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (make test installs it)");
        self.child = Some(child);
        // Ready when both listeners accept: the TCP port answering first does not mean the unix socket does (seen
        // with Redis 8.0 on a busy machine: "Connection refused" on the socket just after TCP accepted).
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err()
            || std::os::unix::net::UnixStream::connect(self.socket()).is_err()
        {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("redis.sock")
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stops the server (the port stays reserved for `restart`).
    pub fn stop(&mut self) {
        kill(&mut self.child);
    }

    /// Starts the server again on the same port, empty.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// A plain client for checking what the store wrote.
    pub fn client(&self) -> redis::Connection {
        let client = redis::Client::open(self.url()).unwrap();
        let mut con = client.get_connection().unwrap();
        if let Some(pos) = self.extra.iter().position(|a| a == "--requirepass") {
            redis::cmd("AUTH")
                .arg(&self.extra[pos + 1])
                .exec(&mut con)
                .unwrap();
        }
        con
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A private memcached: free loopback port, no UDP; killed on drop.
pub struct MemcachedServer {
    pub port: u16,
    child: Option<Child>,
}

impl MemcachedServer {
    pub fn start() -> Self {
        let mut server = MemcachedServer {
            port: free_port(),
            child: None,
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let binary =
            std::env::var("DEADBOLT_MEMCACHED_SERVER").unwrap_or_else(|_| "memcached".into());
        let child = Command::new(binary)
            .args(["-l", "127.0.0.1", "-U", "0", "-m", "16", "-p"])
            .arg(self.port.to_string())
            // memcached refuses to run as root unless told which user to be.
            .args(["-u", "root"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("memcached must be installed (make test installs it)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "memcached did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn dsn(&self) -> String {
        format!("memcached://127.0.0.1:{}", self.port)
    }

    /// Stops the server (the port stays reserved for `restart`).
    pub fn stop(&mut self) {
        kill(&mut self.child);
    }

    /// Starts the server again on the same port, empty.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

impl Drop for MemcachedServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Kills and reaps a server the tests started, if it runs.
fn kill(child: &mut Option<Child>) {
    if let Some(mut child) = child.take() {
        let _ = child.kill();
        let _ = child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A resource name no other test uses.
pub fn unique(name: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{name}:{}:{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A private PostgreSQL (scripts/postgres-start.sh): free port, own directory under /tmp (the
/// server runs as the postgres user when the tests run as root), stopped on drop.
pub struct PostgresServer {
    pub port: u16,
    dir: PathBuf,
}

impl PostgresServer {
    pub fn start() -> Self {
        let dir = std::env::temp_dir().join(unique("deadbolt-pg").replace(':', "-"));
        let port = Self::script("postgres-start.sh", &dir, None)
            .trim()
            .parse()
            .expect("postgres-start.sh prints the port");
        PostgresServer { port, dir }
    }

    fn script(name: &str, dir: &std::path::Path, arg: Option<&str>) -> String {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scripts")
            .join(name);
        let output = Command::new("bash")
            .arg(script)
            .arg(dir)
            .args(arg)
            .stderr(Stdio::inherit())
            .output()
            .expect("bash runs");
        assert!(
            output.status.success(),
            "{name} failed (make test installs PostgreSQL)"
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// PDO's form of the DSN (symfony/lock's), as the postgres user, without TLS.
    pub fn dsn(&self) -> String {
        format!(
            "pgsql:host=127.0.0.1;port={};dbname=postgres;user=postgres;sslmode=disable",
            self.port
        )
    }

    /// Stops the server at once (its sessions end as in a crash); `start_again` brings it back.
    pub fn stop(&self) {
        Self::script("postgres-stop.sh", &self.dir, Some("keep"));
    }

    /// Starts the stopped server again, on the same port, with no session.
    pub fn start_again(&self) {
        Self::script("postgres-start.sh", &self.dir, None);
    }

    /// What psql prints for `sql` (one value per line, unaligned), from a session of its own.
    pub fn psql(&self, sql: &str) -> String {
        let output = Command::new("psql")
            .args([
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-XtAq",
                "-p",
            ])
            .arg(self.port.to_string())
            .args(["-c", sql])
            .output()
            .expect("psql runs");
        assert!(
            output.status.success(),
            "psql: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    }

    /// Advisory locks on `key` as pg_locks shows them to anyone: `mode:granted` per session.
    pub fn advisory(&self, key: i64) -> Vec<String> {
        let rows = self.psql(&format!(
            "SELECT mode || ':' || granted FROM pg_locks WHERE locktype = 'advisory' \
             AND classid = 0 AND objid = {key} AND objsubid = 1 ORDER BY 1"
        ));
        rows.lines().map(str::to_owned).collect()
    }
}

/// A PdoStore's engine on `server`'s `lock_keys` table, on a session of its own.
#[allow(dead_code)]
pub fn table_store(
    server: &PostgresServer,
) -> deadbolt_core::TableStore<deadbolt_core::PostgresTable> {
    table_store_on(server, deadbolt_core::Table::default())
}

/// As [`table_store`], on `table`.
#[allow(dead_code)]
pub fn table_store_on(
    server: &PostgresServer,
    table: deadbolt_core::Table,
) -> deadbolt_core::TableStore<deadbolt_core::PostgresTable> {
    let name = format!("PdoStore(pgsql: {})", table.name);
    let dsn = deadbolt_core::PostgresServer::of_dsn_with(&server.dsn(), None, None).unwrap();
    let connection = deadbolt_core::PostgresTable::new(dsn, &name).unwrap();
    let settings = deadbolt_core::TableSettings {
        table,
        initial_ttl: deadbolt_core::Ttl::from_secs(300.0).unwrap(),
        gc_probability: 0.0,
    };
    deadbolt_core::TableStore::new(
        connection,
        deadbolt_core::Dialect::PostgreSql,
        settings,
        name,
    )
    .unwrap()
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/postgres-stop.sh"))
            .arg(&self.dir)
            .status();
    }
}
