//! STORE on the command line: the connection strings `Deadbolt\Store\StoreFactory` accepts
//! (`flock`, `flock:///DIR`, `semaphore`, `semaphore?hash=md5`, `redis://`, `rediss://`,
//! `memcached://`), and a bare directory path.

use std::path::PathBuf;

use deadbolt_core::{
    FlockStore, InspectingStore, KeyHash, LockState, MemcachedServer, MemcachedStore,
    NativeTransport, RedisStore, Store, SysvSemaphoreStore, Ttl, DEFAULT_TTL_SECS,
};

use crate::Failure;

/// The engine's store a STORE names.
pub enum OpenStore {
    Flock(FlockStore),
    Semaphore(SysvSemaphoreStore),
    Redis(Box<RedisStore<NativeTransport>>),
    Memcached(MemcachedStore),
}

impl OpenStore {
    /// Opens the store `text` names. A flock directory must exist (asking never creates one); a
    /// Redis DSN is parsed here and connected by the first call.
    pub fn open(text: &str) -> Result<Self, Failure> {
        if text.starts_with("redis:") || text.starts_with("rediss:") {
            let ttl = Ttl::from_secs(DEFAULT_TTL_SECS).map_err(|e| Failure::engine(&e))?;
            let store = RedisStore::connect(text, ttl).map_err(|e| Failure::engine(&e))?;
            return Ok(OpenStore::Redis(Box::new(store)));
        }
        if let Some(server) = MemcachedServer::of_dsn(text) {
            let ttl = Ttl::from_secs(DEFAULT_TTL_SECS).map_err(|e| Failure::engine(&e))?;
            let store = server
                .and_then(|server| MemcachedStore::new(server, ttl))
                .map_err(|e| Failure::engine(&e))?;
            return Ok(OpenStore::Memcached(store));
        }
        if let Some(hash) = KeyHash::of_dsn(text) {
            let hash = hash.map_err(|e| Failure::engine(&e))?;
            return Ok(OpenStore::Semaphore(SysvSemaphoreStore::new(hash)));
        }
        let dir = if text == "flock" {
            std::env::temp_dir()
        } else if let Some(path) = text.strip_prefix("flock://") {
            if !path.starts_with('/') {
                return Err(Failure::usage(
                    "A flock DSN needs an absolute path: \"flock:///path/to/dir\".",
                ));
            }
            PathBuf::from(path)
        } else if text == "in-memory" {
            return Err(Failure::usage(
                "An in-memory store lives inside one PHP process: no other process can see its \
                 locks. Use the application's flock directory or Redis DSN.",
            ));
        } else if text.contains("://") || text.is_empty() {
            let scheme = text.split_once(':').map_or("", |(scheme, _)| scheme);
            return Err(Failure::usage(format!(
                "Unsupported store connection (scheme \"{}\"): use \"flock\", \"flock:///path\", \
                 a directory, \"semaphore\", \"redis://…\", \"rediss://…\" or \"memcached://…\".",
                scheme.chars().take(32).collect::<String>()
            )));
        } else {
            PathBuf::from(text)
        };
        if !dir.is_dir() {
            return Err(Failure {
                message: format!(
                    "The FlockStore directory \"{}\" does not exist (or is not a directory): no \
                     lock was taken there.",
                    dir.display()
                ),
                code: crate::exit::FAILURE,
            });
        }
        // The directory exists: what the store refuses now is the permission the application's user has.
        FlockStore::new(dir)
            .map(OpenStore::Flock)
            .map_err(|e| Failure {
                message: format!(
                    "{e} Run deadbolt as the user the application runs as, or as root."
                ),
                code: crate::exit::FAILURE,
            })
    }

    /// The store's name for messages (never a password).
    pub fn name(&self) -> &str {
        match self {
            OpenStore::Flock(store) => store.name(),
            OpenStore::Semaphore(store) => store.name(),
            OpenStore::Redis(store) => store.name(),
            OpenStore::Memcached(store) => store.name(),
        }
    }

    pub fn inspecting(&self) -> &dyn InspectingStore {
        match self {
            OpenStore::Flock(store) => store,
            OpenStore::Semaphore(store) => store,
            OpenStore::Redis(store) => store.as_ref(),
            OpenStore::Memcached(store) => store,
        }
    }

    /// Whether a listing names lock files (flock) rather than resources.
    pub fn lists_files(&self) -> bool {
        matches!(self, OpenStore::Flock(_))
    }

    /// The locks held or waited for whose names begin with `prefix`, by name.
    pub fn list(&self, prefix: &[u8]) -> Result<Vec<(String, LockState)>, Failure> {
        match self {
            OpenStore::Flock(store) => store.list(prefix).map_err(|e| Failure::engine(&e)),
            OpenStore::Semaphore(_) => Err(Failure::usage(
                "System V semaphores are found by a hash of their resource's name, which cannot \
                 be turned back into it: `list` cannot name them. Ask `status` about a resource \
                 by name (`ipcs -s` shows the sets).",
            )),
            OpenStore::Memcached(_) => Err(Failure::usage(
                "memcached cannot list its keys: `list` cannot name its locks. Ask `status` about \
                 a resource by name.",
            )),
            OpenStore::Redis(store) => Ok(store
                .list(prefix)
                .map_err(|e| Failure::engine(&e))?
                .into_iter()
                .map(|(name, state)| (String::from_utf8_lossy(&name).into_owned(), state))
                .collect()),
        }
    }
}
