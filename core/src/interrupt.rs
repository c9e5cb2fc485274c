//! Waits give the application its turn between pauses. A host runtime can have work that must run
//! while a caller waits for a lock (PHP: a signal handler under `pcntl_async_signals(true)`, which
//! a worker needs to stop gracefully); the host installs [`Interrupts`] once, and every wait asks
//! [`requested`] after each pause of at most [`crate::store`]'s poll interval or the Redis
//! protocol's signal cap. When the host answers that the caller must stop (its handler threw or
//! ended the script), the wait gives up its place, as at a deadline, and reports no lock.
//! Without a host hook nothing is ever interrupted.

use std::sync::OnceLock;

/// The host's answers.
#[derive(Debug, Clone, Copy)]
pub struct Interrupts {
    /// Whether anything could interrupt a wait now. A wait that would otherwise block in the
    /// kernel with no way back (flock(2) without a deadline) polls instead while this is true.
    pub watched: fn() -> bool,
    /// Runs what is pending; true when the waiting caller must stop.
    pub requested: fn() -> bool,
}

static HOOK: OnceLock<Interrupts> = OnceLock::new();

/// Installs the host's hook (the first one installed stays).
pub fn set_interrupts(hook: Interrupts) {
    let _ = HOOK.set(hook);
}

/// See [`Interrupts::watched`].
pub(crate) fn watched() -> bool {
    HOOK.get().is_some_and(|hook| (hook.watched)())
}

/// See [`Interrupts::requested`].
pub(crate) fn requested() -> bool {
    HOOK.get().is_some_and(|hook| (hook.requested)())
}
