//! The wait and hand-over protocol between Deadbolt processes on one Redis: the timings that must
//! agree and the signals. The Lua scripts get all of it from here (a generated header,
//! [`lua_constants`]; the names of each script's KEYS and ARGV come from `calls.rs`), so nothing is
//! written down twice.
//!
//! A refused waiter joins the resource's queue (`QUEUE`: token -> arrival, server ms) and leaves
//! its details in `WAITERS` (token -> "alive-until mode ttl-ms": a release hands the lock over to
//! it with its own mode and TTL, so the TTL travels this way, as text, to another process). It
//! then waits on a list of its own, `GRANT` (BLPOP), in the same round trip as its attempt where
//! the transport can pipeline. A release that frees the lock makes the longest waiter alive the
//! holder, records that in `HANDOVERS` (token -> grant time) and pushes [`Signal::Granted`] to
//! its grant list. A hand-over nobody reads within [`TAKE_BACK_AFTER`] (the waiter died) is taken
//! back by an overdue waiter.

use std::time::Duration;

/// Longest a waiter waits for a signal before it tries again: bounds the cost of a lost signal
/// or of a holder that never sends one (symfony/lock, an expired lock), as symfony/lock's poll.
pub const SIGNAL_POLL_CAP: Duration = Duration::from_millis(100);

/// How long a waiter counts as alive after its last attempt; a hand-over skips waiters not seen
/// for this long (died, lost their connection). Waiters attempt at least every
/// [`SIGNAL_POLL_CAP`], so this leaves room for three missed attempts' worth of round trips.
pub const ALIVE_FOR: Duration = Duration::from_millis(400);

/// How long a hand-over may stay unread before waiters take it back: a live waiter reads it at
/// once (the release itself serves its BLPOP) or at its next attempt; one that died never does,
/// and must not hold the lock for its whole TTL. A wait shorter than this never looks for unread
/// hand-overs (one cannot be what holds it up yet), which keeps the common attempt cheap.
pub const TAKE_BACK_AFTER: Duration = Duration::from_millis(250);

/// How long an unread grant list lives at most. Only a waiter that died leaves one (a live one
/// pops it, and a take-back deletes it), so this only bounds litter; it must outlast any wait for
/// it, which [`TAKE_BACK_AFTER`] ends long before.
pub const GRANT_LIST_LIFETIME: Duration = Duration::from_secs(60);

/// How long a fencing counter outlives the hold that last drew from it. Tokens are drawn from the
/// server clock (microseconds) when that is ahead of the counter, so they keep increasing after
/// the counter is gone; while it lives, it also keeps them increasing across a clock that steps
/// back by less than this.
pub const FENCE_KEPT_FOR: Duration = Duration::from_secs(60);

const _: () = assert!(ALIVE_FOR.as_millis() > 3 * SIGNAL_POLL_CAP.as_millis());
const _: () = assert!(TAKE_BACK_AFTER.as_millis() > 2 * SIGNAL_POLL_CAP.as_millis());
const _: () = assert!(GRANT_LIST_LIFETIME.as_millis() > 10 * TAKE_BACK_AFTER.as_millis());

/// What a waiter finds on its grant list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// A release handed the lock over: the waiter holds it already.
    Granted,
    /// The holder's TTL runs out before the wait would end: wait only that long, then try again.
    Soon,
    /// The attempt sent with this wait took the lock itself: the wait ends at once.
    Taken,
}

impl Signal {
    const ALL: [Signal; 3] = [Signal::Granted, Signal::Soon, Signal::Taken];

    /// The text on the list.
    pub fn text(self) -> &'static str {
        match self {
            Signal::Granted => "granted",
            Signal::Soon => "soon",
            Signal::Taken => "taken",
        }
    }

    /// The signal a list item stands for; `None` for anything else (which nobody writes).
    pub fn parse(item: &[u8]) -> Option<Signal> {
        Signal::ALL
            .into_iter()
            .find(|signal| signal.text().as_bytes() == item)
    }

    fn lua_name(self) -> &'static str {
        match self {
            Signal::Granted => "SIGNAL_GRANTED",
            Signal::Soon => "SIGNAL_SOON",
            Signal::Taken => "SIGNAL_TAKEN",
        }
    }
}

/// `WAIT`'s value for a caller that waits.
pub const WAITING: &[u8] = b"wait";

/// Separates the queue's name from a waiter's token in the waiter's grant list's name
/// ([`super::keys::grant_list`]). A release names the lists of waiters it did not know in
/// advance, so this name is built in Lua too (the one undeclared key, in the queue's hash slot).
pub const GRANT_SEPARATOR: &str = ":";

/// What a lock script replies when the caller now holds the lock: it took the lock.
pub const TAKEN: i64 = 1;

/// What a waiter's attempt replies when it found the lock already handed over to it: a release
/// came between two of its waits for the signal, and the attempt, not the wait, read it.
pub const HANDED_OVER: i64 = 2;

/// Whether a lock script's reply says the caller holds the lock (taken, extended, handed over).
pub fn took(reply: i64) -> bool {
    reply == TAKEN || reply == HANDED_OVER
}

/// The error code the scripts reply with for a key that holds something other than a lock.
pub const NOT_A_LOCK: &str = "DEADBOLT_WRONGTYPE";

/// The head of every script's header: the constants above and the signals (`scripts.rs` adds the
/// names of the script's own KEYS and ARGV).
pub fn lua_constants() -> String {
    let mut lua = String::from("-- Generated from protocol.rs.\n");
    for (name, value) in [
        ("ALIVE_MS", ALIVE_FOR),
        ("CLAIM_MS", TAKE_BACK_AFTER),
        ("GRANT_LIST_MS", GRANT_LIST_LIFETIME),
        ("FENCE_KEEP_MS", FENCE_KEPT_FOR),
    ] {
        lua.push_str(&format!("local {name} = {}\n", value.as_millis()));
    }
    for signal in Signal::ALL {
        lua.push_str(&format!(
            "local {} = \"{}\"\n",
            signal.lua_name(),
            signal.text()
        ));
    }
    lua.push_str(&format!("local GRANT_SEPARATOR = \"{GRANT_SEPARATOR}\"\n"));
    lua.push_str(&format!("local NOT_A_LOCK = \"{NOT_A_LOCK}\"\n"));
    lua.push_str(&format!(
        "local DIGEST_HEX = {}\n",
        crate::holder::DIGEST_HEX
    ));
    lua.push_str(&format!(
        "local TAKEN = {TAKEN}\nlocal HANDED_OVER = {HANDED_OVER}\n"
    ));
    let waiting = String::from_utf8_lossy(WAITING);
    lua.push_str(&format!("local WAITING = \"{waiting}\"\n"));
    lua
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_read_back_as_written() {
        for signal in Signal::ALL {
            assert_eq!(Signal::parse(signal.text().as_bytes()), Some(signal));
        }
        assert_eq!(Signal::parse(b"other"), None);
    }

    #[test]
    fn the_header_holds_the_constants_and_signals() {
        let header = lua_constants();
        assert!(header.contains("local ALIVE_MS = 400\n"));
        assert!(header.contains("local SIGNAL_GRANTED = \"granted\"\n"));
        assert!(header.contains("local WAITING = \"wait\"\n"));
    }
}
