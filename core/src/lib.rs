//! The Deadbolt lock engine: Symfony-Lock semantics in plain Rust, with no PHP symbols, so that
//! `cargo test` reaches every rule without an interpreter.
//!
//! # Layout
//!
//! - [`error`]: the one error type; its variants follow symfony/lock's exception table.
//! - [`ttl`]: a validated time-to-live (positive, finite seconds).
//! - [`lifetime`]: a key's expiry on the monotonic clock.
//! - [`token`]: owner tokens, in symfony/lock's format.
//! - [`process`]: the current pid, which makes state inherited through `fork()` inert.
//! - [`key`]: resource, token, lifetime and the store's per-key state.
//! - [`store`]: the `Store` trait, its capability traits, and the flock, in-memory and Redis stores.
//! - [`lock`]: the rules for acquire, refresh and release, and the log events they emit.
//! - [`refresher`]: the background thread that keeps auto-refreshed locks alive.
//! - [`metrics`]: per-process counters and histograms, and their Prometheus rendering.
//! - [`event`]: what a lock reports to a logger (PSR-3 in the extension).

pub mod error;
pub mod event;
pub mod key;
pub mod lifetime;
pub mod lock;
pub mod metrics;
pub mod process;
pub mod refresher;
pub mod store;
pub mod token;
pub mod ttl;

pub use error::{Error, ErrorKind, Result};
pub use event::{Event, EventSink, Level, Silent};
pub use key::Key;
pub use lock::{AutoRefresh, Lock, SharedKey, Wait};
pub use store::flock::FlockStore;
pub use store::flock_path::lock_file_name;
pub use store::memory::InMemoryStore;
pub use store::redis::RedisStore;
pub use store::{Extender, Mode, Store, WaitReport};
pub use ttl::Ttl;
