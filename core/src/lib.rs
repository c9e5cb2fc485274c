//! The Deadbolt lock engine: Symfony-Lock semantics in plain Rust, with no PHP symbols, so that
//! `cargo test` reaches every rule without an interpreter. The public surface is the `pub use`
//! list below; modules are private.
//!
//! # Layout
//!
//! - `error`: the one error type; its variants follow symfony/lock's exception table.
//! - `ttl`: a validated time-to-live (positive, finite seconds).
//! - `lifetime`: a key's expiry on the monotonic clock.
//! - `token`: owner tokens, in symfony/lock's format.
//! - `process`: the fork epoch and `PerProcess`, the one rule for state a `fork()` leaves behind.
//! - `fork_share`: whether a lent client's connection is still shared with the parent process
//!   (connected before `fork()`), asked of `/proc`.
//! - `key`: resource, token, lifetime, and the state stores keep in a key.
//! - `store`: the `Store` trait, its capability traits, and the flock, in-memory and Redis stores.
//! - `lock`: the rules for acquire, refresh and release, and the log events they emit.
//! - `refresher`: the background thread that keeps auto-refreshed locks alive.
//! - `semaphore`: a store's semaphores as a store the lock engine runs on (a semaphore is a lock on a
//!   key with slots).
//! - `metrics`: per-process counters and histograms, and their Prometheus rendering; `metrics/shared.rs`: a
//!   metrics file a php-fpm pool's processes add up in; `metrics/textfile.rs`: a job's totals for node_exporter.
//! - `holder`: who holds and who waits (an operator's view), and the records locks leave for it.
//! - `event`: what a lock reports to a logger (PSR-3 in the extension).
//! - `interrupt`: the host's turn between the pauses of a wait (PHP's signal handlers).

mod error;
mod event;
mod fork_blind;
mod fork_share;
mod holder;
mod interrupt;
mod key;
mod lifetime;
mod lock;
mod metrics;
mod process;
mod refresher;
mod semaphore;
mod store;
mod sync;
mod threads;
mod token;
mod ttl;

pub use error::{quoted as quoted_server_text, Error, ErrorKind, Result};
pub use event::{Event, EventSink, Level, Silent};
pub use fork_blind::{blind_in_children, sockets as process_sockets, Blinded};
pub use fork_share::{sharing as fork_sharing, Peer, Sharing};
pub use holder::{
    checked_label, digest as token_digest, unix_secs, Holder, LockState, Origin, Waiter,
    MAX_LABEL_BYTES,
};
pub use interrupt::{set_interrupts, Interrupts};
pub use key::{Key, Slots};
pub use lock::{AutoRefresh, Lock, SharedKey, StoreRef, Wait};
pub use metrics::shared::{
    metrics_file_prometheus, metrics_file_snapshot, shared_snapshot, take_metrics_file_warning,
    use_metrics_file, FORMAT as METRICS_FILE_FORMAT,
};
pub use metrics::textfile::{use_textfile, write_textfile};
pub use metrics::{
    prometheus, render as render_prometheus, reset as reset_metrics, snapshot, Counter,
    HistogramSnapshot, Snapshot, Timing, BUCKETS,
};
pub use semaphore::semaphores;
pub use store::combined::{CombinedStore, Member, Strategy};
pub use store::flock::FlockStore;
pub use store::flock_path::lock_file_name;
pub use store::memcached::{MemcachedServer, MemcachedStore};
pub use store::memory::InMemoryStore;
pub use store::mysql::{lock_name as mysql_lock_name, MysqlStore};
pub use store::postgres::{
    advisory_key, PdoPostgreSqlStore, PostgreSqlStore, PostgresServer, PostgresTable,
};
pub use store::redis::calls::ScriptCall;
pub use store::redis::native::read_unread_replies;
pub use store::redis::native::NativeTransport;
pub use store::redis::scripts::LockScript;
pub use store::redis::transport::{RanThenWaited, RunError, RunErrorKind, Transport};
pub use store::redis::{protocol::Signal, RedisStore};
pub use store::refusing::RefusingStore;
pub use store::sysv::{KeyHash, SysvSemaphoreStore};
pub use store::table::{
    key_id as table_key_id, Dialect, Failure, SqlConnection, SqlFailure, Table, TableSettings,
    TableStore,
};
pub use store::{
    inspecting, wait, BlockingStore, Capabilities, DeferringStore, ExpiringStore, Extender,
    FencingStore, InspectingStore, Mode, PendingRelease, SemaphoreStore, Store, WaitReport,
};
pub use threads::set_up_before_threads;
pub use ttl::{shown as shown_secs, Ttl, DEFAULT_TTL_SECS};
