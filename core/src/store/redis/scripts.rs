//! The Lua scripts of the Redis store, our own, on symfony/lock's data model. Each one is a
//! generated header (`protocol.rs`'s constants and signals, then the names its [`Layout`] gives
//! KEYS and ARGV),
//! the common case of the operation where it has one (run before any helper function exists: Lua
//! makes each anew on every run), the shared prelude (plus the waiting side for the scripts that
//! take a lock, the hand-over for those that release) and the rest of the operation, sent by SHA
//! (EVALSHA) and loaded on NOSCRIPT.

use std::sync::LazyLock;

use super::protocol::lua_constants;
use crate::store::Mode;

const PRELUDE: &str = include_str!("scripts/prelude.lua");
/// The helpers of the scripts that name the queue (those that wait, those that hand over).
const QUEUE: &str = include_str!("scripts/queue.lua");

/// The names a script's Lua gives its KEYS and ARGV, in order.
pub struct Layout {
    pub keys: &'static [&'static str],
    pub args: &'static [&'static str],
}

/// SAVE and SAVE_READ: the lock, the keys a release may touch (named by every acquire so that a
/// Redis ACL that does not grant them fails the acquire, not the release after the work is done)
/// and, for a caller that waits, its grant list. ARGV: the owner token, the TTL in ms, "wait"
/// for a caller that waits when refused, how long (ms) it then waits on its grant list in the
/// same round trip (the script ends that wait with a signal of its own when there is nothing to
/// wait for), and "1" once the wait is older than the protocol's `TAKE_BACK_AFTER`. A caller that
/// does not wait names neither GRANT nor the last three (nil in Lua). HOLDERS keeps each holder's
/// RECORD (`holder::record`: pid, host, label), which a waiter leaves in WAITERS meanwhile.
pub const TAKE: Layout = Layout {
    keys: &["key", "QUEUE", "WAITERS", "HANDOVERS", "HOLDERS", "GRANT"],
    args: &["token", "TTL_MS", "RECORD", "WAIT", "PAUSE_MS", "OVERDUE"],
};
/// PUT_OFF: extend my lock (and the holders' records) to now + TTL_MS.
pub const EXTEND: Layout = Layout {
    keys: &["key", "HOLDERS"],
    args: &["token", "TTL_MS"],
};
/// DELETE: release, and hand the lock over to the longest waiter.
pub const RELEASE: Layout = Layout {
    keys: &["key", "QUEUE", "WAITERS", "HANDOVERS", "HOLDERS"],
    args: &["token", "RECORDED"],
};
/// INSPECT: the holders and the waiters, for an operator.
pub const READ_STATE: Layout = Layout {
    keys: &["key", "QUEUE", "WAITERS", "HOLDERS"],
    args: &[],
};
/// FORCE: an operator's release, whoever holds the lock (`token` is empty: nobody's own).
pub const FORCE_RELEASE: Layout = Layout {
    keys: &["key", "QUEUE", "WAITERS", "HANDOVERS", "HOLDERS"],
    args: &["token"],
};
/// EXISTS: do I hold a live lock?
pub const CHECK: Layout = Layout {
    keys: &["key"],
    args: &["token"],
};
/// FENCE: the next fencing token, from the resource's counter.
pub const DRAW: Layout = Layout {
    keys: &["key", "COUNTER"],
    args: &["token"],
};
/// CLAIM: a waiter handed the lock takes its hand-over record.
pub const ACCEPT: Layout = Layout {
    keys: &["key", "HANDOVERS"],
    args: &["token"],
};
/// LEAVE: a waiter gives up (and releases a lock handed over to it meanwhile).
pub const GIVE_UP: Layout = Layout {
    keys: &["key", "QUEUE", "WAITERS", "HANDOVERS", "HOLDERS", "GRANT"],
    args: &["token"],
};

/// SEMAPHORE_TAKE: a semaphore's two sets (symfony/semaphore's), its queue's keys and, for a
/// caller that waits, its grant list; ARGV as TAKE's, with the key's LIMIT and WEIGHT.
pub const SEMAPHORE_TAKE: Layout = Layout {
    keys: &[
        "TIME_KEY",
        "WEIGHT_KEY",
        "QUEUE",
        "WAITERS",
        "HANDOVERS",
        "GRANT",
    ],
    args: &[
        "token", "TTL_MS", "LIMIT", "WEIGHT", "WAIT", "PAUSE_MS", "OVERDUE",
    ],
};
/// SEMAPHORE_EXTEND: put my slot off to now + TTL_MS.
pub const SEMAPHORE_EXTEND: Layout = Layout {
    keys: &["TIME_KEY", "WEIGHT_KEY"],
    args: &["token", "TTL_MS"],
};
/// SEMAPHORE_CHECK: do I hold a live slot?
pub const SEMAPHORE_CHECK: Layout = Layout {
    keys: &["TIME_KEY", "WEIGHT_KEY"],
    args: &["token"],
};
/// SEMAPHORE_RELEASE: give my weight back, to the waiters in order.
pub const SEMAPHORE_RELEASE: Layout = Layout {
    keys: &["TIME_KEY", "WEIGHT_KEY", "QUEUE", "WAITERS", "HANDOVERS"],
    args: &["token"],
};
/// SEMAPHORE_ACCEPT: a waiter handed a slot takes its hand-over record.
pub const SEMAPHORE_ACCEPT: Layout = Layout {
    keys: &["TIME_KEY", "HANDOVERS"],
    args: &["token"],
};
/// SEMAPHORE_GIVE_UP: a waiter gives up (and gives back a slot handed to it meanwhile).
pub const SEMAPHORE_GIVE_UP: Layout = Layout {
    keys: &[
        "TIME_KEY",
        "WEIGHT_KEY",
        "QUEUE",
        "WAITERS",
        "HANDOVERS",
        "GRANT",
    ],
    args: &["token"],
};

/// One lock script: its source (for EVAL/SCRIPT LOAD) and its SHA1 (for EVALSHA).
pub struct LockScript {
    script: redis::Script,
    code: String,
    layout: &'static Layout,
    /// A reply that [`super::protocol::took`] means the lock was written (taken, extended,
    /// handed over): what replicas acknowledge.
    writes_lock: bool,
}

impl LockScript {
    fn new(layout: &'static Layout, operation: &str) -> Self {
        Self::from_parts(layout, &[PRELUDE, operation])
    }

    /// A script that takes a lock: a free key for a caller that does not wait is taken before any
    /// helper is defined (free_key.lua); otherwise its caller may wait, and join the queue.
    fn taking(mode: Mode, operation: &str) -> Self {
        let exclusive = format!("local EXCLUSIVE = {}", mode == Mode::Exclusive);
        Self::from_parts(
            &TAKE,
            &[
                &exclusive,
                include_str!("scripts/free_key.lua"),
                PRELUDE,
                QUEUE,
                include_str!("scripts/waiting.lua"),
                operation,
            ],
        )
        .writing_lock()
    }

    /// A script that releases: it may hand the lock over to a waiter. `first` runs before any
    /// helper is defined (the common case of the operation, when it has one).
    fn releasing(layout: &'static Layout, first: Option<&str>, operation: &str) -> Self {
        let mut parts: Vec<&str> = first.into_iter().collect();
        parts.extend([
            PRELUDE,
            QUEUE,
            include_str!("scripts/handover.lua"),
            operation,
        ]);
        Self::from_parts(layout, &parts)
    }

    /// A semaphore script: its prelude, and the waiters' side when it takes or frees weight.
    fn semaphore(layout: &'static Layout, queue: bool, operation: &str) -> Self {
        let prelude = include_str!("scripts/semaphore/prelude.lua");
        if queue {
            let handover = include_str!("scripts/semaphore/handover.lua");
            Self::from_parts(layout, &[QUEUE, prelude, handover, operation])
        } else {
            Self::from_parts(layout, &[prelude, operation])
        }
    }

    fn from_parts(layout: &'static Layout, parts: &[&str]) -> Self {
        let header = [lua_constants(), names(layout)].concat();
        let code = std::iter::once(header.as_str())
            .chain(parts.iter().copied())
            .collect::<Vec<_>>()
            .join("\n");
        LockScript {
            script: redis::Script::new(&code),
            code,
            layout,
            writes_lock: false,
        }
    }

    /// The names its Lua gives KEYS and ARGV.
    pub fn layout(&self) -> &'static Layout {
        self.layout
    }

    /// This script, marked as one whose reply that [`super::protocol::took`] means the lock was
    /// written.
    fn writing_lock(self) -> Self {
        LockScript {
            writes_lock: true,
            ..self
        }
    }

    /// Whether a reply that [`super::protocol::took`] means the lock was written.
    pub fn writes_lock(&self) -> bool {
        self.writes_lock
    }

    /// The Lua source.
    pub fn code(&self) -> &str {
        &self.code
    }

    /// The SHA1 of the source, hex, as EVALSHA wants it.
    pub fn sha1(&self) -> &str {
        self.script.get_hash()
    }

    /// The redis-rs script, which runs by EVALSHA and loads itself on NOSCRIPT.
    pub fn script(&self) -> &redis::Script {
        &self.script
    }
}

/// Exclusive lock (and promotion of a sole reader), [`TAKE`]. Returns 1 (2 when a waiter
/// found it handed over), or 0 / minus the holder's remaining ms when held.
pub static SAVE: LazyLock<LockScript> =
    LazyLock::new(|| LockScript::taking(Mode::Exclusive, include_str!("scripts/save.lua")));
/// Shared lock (and demotion of a writer), as `SAVE`.
pub static SAVE_READ: LazyLock<LockScript> =
    LazyLock::new(|| LockScript::taking(Mode::Shared, include_str!("scripts/save_read.lua")));
/// Extend, [`EXTEND`]. Returns 1, or 0 when not held.
pub static PUT_OFF: LazyLock<LockScript> =
    LazyLock::new(|| LockScript::new(&EXTEND, include_str!("scripts/put_off.lua")).writing_lock());
/// Release, and hand the lock over to the longest waiter, [`RELEASE`]. Returns 1, or 0
/// when not held.
pub static DELETE: LazyLock<LockScript> = LazyLock::new(|| {
    LockScript::releasing(
        &RELEASE,
        Some(include_str!("scripts/release_alone.lua")),
        include_str!("scripts/delete.lua"),
    )
});
/// Ownership check, [`CHECK`]. Returns 1 or 0.
pub static EXISTS: LazyLock<LockScript> =
    LazyLock::new(|| LockScript::new(&CHECK, include_str!("scripts/exists.lua")));

/// The next fencing token, for the current writer only, [`DRAW`]. Returns the token
/// (>= 1), or 0 when not the writer.
pub static FENCE: LazyLock<LockScript> =
    LazyLock::new(|| LockScript::new(&DRAW, include_str!("scripts/fence.lua")));

/// A waiter handed the lock takes its hand-over record (so that nobody takes the lock back) and
/// confirms it holds the lock: a write of its own after the releaser's, for replicas to
/// acknowledge, [`ACCEPT`]. Returns 1, or 0 when not held.
pub static CLAIM: LazyLock<LockScript> =
    LazyLock::new(|| LockScript::new(&ACCEPT, include_str!("scripts/claim.lua")).writing_lock());

/// A waiter gives up (and releases a lock handed over to it meanwhile), [`GIVE_UP`].
/// Returns 1.
pub static LEAVE: LazyLock<LockScript> =
    LazyLock::new(|| LockScript::releasing(&GIVE_UP, None, include_str!("scripts/leave.lua")));

/// The holders and waiters as one JSON text, [`READ_STATE`] (`inspect.lua` says its shape).
pub static INSPECT: LazyLock<LockScript> =
    LazyLock::new(|| LockScript::new(&READ_STATE, include_str!("scripts/inspect.lua")));

/// An operator's release whoever holds the lock, then the hand-over to the longest waiter,
/// [`FORCE_RELEASE`]. Returns how many holders it had.
pub static FORCE: LazyLock<LockScript> = LazyLock::new(|| {
    LockScript::releasing(&FORCE_RELEASE, None, include_str!("scripts/force.lua"))
});

/// A semaphore's slot taken (or put off, when held), [`SEMAPHORE_TAKE`]: as `SAVE`'s replies.
pub static SEMAPHORE_SAVE: LazyLock<LockScript> = LazyLock::new(|| {
    LockScript::semaphore(
        &SEMAPHORE_TAKE,
        true,
        include_str!("scripts/semaphore/save.lua"),
    )
    .writing_lock()
});
/// A semaphore's slot put off, [`SEMAPHORE_EXTEND`]. Returns 1, or 0 when not held.
pub static SEMAPHORE_PUT_OFF: LazyLock<LockScript> = LazyLock::new(|| {
    LockScript::semaphore(
        &SEMAPHORE_EXTEND,
        false,
        include_str!("scripts/semaphore/put_off.lua"),
    )
    .writing_lock()
});
/// A semaphore's slot given back, [`SEMAPHORE_RELEASE`]. Returns 1, or 0 when not held.
pub static SEMAPHORE_DELETE: LazyLock<LockScript> = LazyLock::new(|| {
    LockScript::semaphore(
        &SEMAPHORE_RELEASE,
        true,
        include_str!("scripts/semaphore/delete.lua"),
    )
});
/// Whether a key holds a live slot, [`SEMAPHORE_CHECK`]. Returns 1 or 0.
pub static SEMAPHORE_EXISTS: LazyLock<LockScript> = LazyLock::new(|| {
    LockScript::semaphore(
        &SEMAPHORE_CHECK,
        false,
        include_str!("scripts/semaphore/exists.lua"),
    )
});
/// A waiter handed a slot takes its record, [`SEMAPHORE_ACCEPT`]. Returns 1, or 0 when not held.
pub static SEMAPHORE_CLAIM: LazyLock<LockScript> = LazyLock::new(|| {
    LockScript::semaphore(
        &SEMAPHORE_ACCEPT,
        false,
        include_str!("scripts/semaphore/claim.lua"),
    )
    .writing_lock()
});
/// A waiter gives up, [`SEMAPHORE_GIVE_UP`]. Returns 1.
pub static SEMAPHORE_LEAVE: LazyLock<LockScript> = LazyLock::new(|| {
    LockScript::semaphore(
        &SEMAPHORE_GIVE_UP,
        true,
        include_str!("scripts/semaphore/leave.lua"),
    )
});

/// `local NAME = KEYS[i]` and `local NAME = ARGV[i]` for each name of `layout`.
fn names(layout: &Layout) -> String {
    let mut lua = String::new();
    for (i, name) in layout.keys.iter().enumerate() {
        lua.push_str(&format!("local {name} = KEYS[{}]\n", i + 1));
    }
    for (i, name) in layout.args.iter().enumerate() {
        lua.push_str(&format!("local {name} = ARGV[{}]\n", i + 1));
    }
    lua
}

/// Makes every script and its digest now (`crate::threads`).
pub(crate) fn set_up() {
    for script in [
        &SAVE,
        &SAVE_READ,
        &PUT_OFF,
        &DELETE,
        &EXISTS,
        &FENCE,
        &CLAIM,
        &LEAVE,
        &INSPECT,
        &FORCE,
        &SEMAPHORE_SAVE,
        &SEMAPHORE_PUT_OFF,
        &SEMAPHORE_DELETE,
        &SEMAPHORE_EXISTS,
        &SEMAPHORE_CLAIM,
        &SEMAPHORE_LEAVE,
    ] {
        LazyLock::force(script);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_script_names_its_own_keys() {
        assert!(FENCE.code().contains("local COUNTER = KEYS[2]\n"));
        assert!(!FENCE.code().contains("QUEUE"));
        assert!(CLAIM.code().contains("local HANDOVERS = KEYS[2]\n"));
        assert!(SAVE.code().contains("local GRANT = KEYS[6]\n"));
        assert!(SAVE.code().contains("local OVERDUE = ARGV[6]\n"));
        assert!(PUT_OFF.code().contains("local TTL_MS = ARGV[2]\n"));
        assert!(!EXISTS.code().contains("TTL_MS"));
    }
}
