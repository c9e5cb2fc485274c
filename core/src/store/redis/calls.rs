//! One typed call per lock script. Each script declares the names its Lua gives KEYS and ARGV (a
//! [`super::scripts::Layout`], from which its header is generated), and each operation below
//! builds its script's KEYS and ARGV in exactly that order: no call site counts positions, and a
//! script never sees a key under another key's name.

use std::time::Duration;

use super::keys;
use super::protocol::WAITING;
use super::scripts::{
    LockScript, CLAIM, DELETE, EXISTS, FENCE, FORCE, INSPECT, LEAVE, PUT_OFF, SAVE, SAVE_READ,
    SEMAPHORE_CLAIM, SEMAPHORE_DELETE, SEMAPHORE_EXISTS, SEMAPHORE_LEAVE, SEMAPHORE_PUT_OFF,
    SEMAPHORE_SAVE,
};
use crate::store::Mode;
use crate::{Slots, Ttl};

/// What a wait is for: a lock in a mode, or a semaphore's slots. The wait loop (`wait.rs`) is one
/// for both; the calls of each round are the target's.
#[derive(Clone, Copy)]
pub enum Target {
    Lock(Mode),
    Semaphore(Slots),
}

impl Target {
    /// An attempt (`turn`: of a waiting caller).
    pub fn take(
        self,
        holder: Holder<'_>,
        ttl: Ttl,
        record: &str,
        turn: Option<Turn>,
    ) -> ScriptCall {
        match self {
            Target::Lock(mode) => ScriptCall::take(mode, holder, ttl, record, turn),
            Target::Semaphore(slots) => ScriptCall::take_slots(slots, holder, ttl, turn),
        }
    }

    /// A waiter handed the lock or slot takes its hand-over record.
    pub fn accept_hand_over(self, holder: Holder<'_>) -> ScriptCall {
        match self {
            Target::Lock(_) => ScriptCall::accept_hand_over(holder),
            Target::Semaphore(_) => ScriptCall::accept_slot(holder),
        }
    }

    /// A waiter gives up.
    pub fn give_up(self, holder: Holder<'_>) -> ScriptCall {
        match self {
            Target::Lock(_) => ScriptCall::give_up(holder),
            Target::Semaphore(_) => ScriptCall::give_up_slots(holder),
        }
    }

    /// The waiter's grant list.
    pub fn grant_list(self, holder: Holder<'_>) -> Vec<u8> {
        let queue = match self {
            Target::Lock(_) => keys::queue(holder.resource),
            Target::Semaphore(_) => keys::semaphore_queue(holder.resource),
        };
        keys::grant_list(&queue, holder.token)
    }
}

/// A script with its KEYS and ARGV, ready for a transport. Made only by the operations below.
#[derive(Clone)]
pub struct ScriptCall {
    script: &'static LockScript,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

/// Which lock a call is about: the resource and the owner's token.
#[derive(Clone, Copy)]
pub struct Holder<'a> {
    pub resource: &'a [u8],
    pub token: &'a str,
}

/// What a waiting caller's attempt adds: how long it then waits on its grant list in the same
/// round trip (`None`: not at all, a last attempt), and whether its wait is overdue (protocol.rs).
#[derive(Clone, Copy)]
pub struct Turn {
    pub pause: Option<Duration>,
    pub overdue: bool,
}

impl ScriptCall {
    fn new(script: &'static LockScript, keys: Vec<Vec<u8>>, args: Vec<Vec<u8>>) -> Self {
        let layout = script.layout();
        debug_assert!(keys.len() <= layout.keys.len() && args.len() <= layout.args.len());
        ScriptCall { script, keys, args }
    }

    /// Take the lock in `mode` for `ttl`, leaving `record` (`holder::record`); a waiting
    /// caller's attempt with its `turn`.
    pub fn take(
        mode: Mode,
        holder: Holder<'_>,
        ttl: Ttl,
        record: &str,
        turn: Option<Turn>,
    ) -> Self {
        let script = match mode {
            Mode::Exclusive => &SAVE,
            Mode::Shared => &SAVE_READ,
        };
        let mut keys = release_keys(holder.resource);
        let mut args = vec![
            holder.token.into(),
            ttl_millis(ttl).to_string().into_bytes(),
            record.into(),
        ];
        if let Some(turn) = turn {
            keys.push(grant_list(holder));
            args.extend(turn_args(turn));
        }
        Self::new(script, keys, args)
    }

    /// Extend the lock to now + `ttl`.
    pub fn extend(holder: Holder<'_>, ttl: Ttl) -> Self {
        let args = vec![
            holder.token.into(),
            ttl_millis(ttl).to_string().into_bytes(),
        ];
        let keys = vec![holder.resource.to_vec(), keys::holders(holder.resource)];
        Self::new(&PUT_OFF, keys, args)
    }

    /// Release the lock (handing it over to the longest waiter); `recorded`: whether the lock left
    /// a holder record (`records=off` leaves none, and saves its removal too).
    pub fn release(holder: Holder<'_>, recorded: bool) -> Self {
        let recorded = if recorded { b"1".to_vec() } else { Vec::new() };
        Self::new(
            &DELETE,
            release_keys(holder.resource),
            vec![holder.token.into(), recorded],
        )
    }

    /// Whether the holder holds a live lock.
    pub fn check(holder: Holder<'_>) -> Self {
        Self::new(
            &EXISTS,
            vec![holder.resource.to_vec()],
            vec![holder.token.into()],
        )
    }

    /// Draw the next fencing token (the live writer only).
    pub fn draw_fencing_token(holder: Holder<'_>) -> Self {
        let keys = vec![holder.resource.to_vec(), keys::fence(holder.resource)];
        Self::new(&FENCE, keys, vec![holder.token.into()])
    }

    /// A waiter handed the lock takes its hand-over record.
    pub fn accept_hand_over(holder: Holder<'_>) -> Self {
        let keys = vec![holder.resource.to_vec(), keys::handovers(holder.resource)];
        Self::new(&CLAIM, keys, vec![holder.token.into()])
    }

    /// A waiter leaves the queue.
    pub fn give_up(holder: Holder<'_>) -> Self {
        let mut keys = release_keys(holder.resource);
        keys.push(grant_list(holder));
        Self::new(&LEAVE, keys, vec![holder.token.into()])
    }

    /// Read who holds `resource` and who waits (JSON, `inspect.lua`).
    pub fn inspect(resource: &[u8]) -> Self {
        let mut keys = release_keys(resource);
        keys.remove(3);
        Self::new(&INSPECT, keys, Vec::new())
    }

    /// Release `resource` whoever holds it.
    pub fn force_release(resource: &[u8]) -> Self {
        Self::new(&FORCE, release_keys(resource), vec![Vec::new()])
    }

    /// A semaphore's attempt: `slots.weight()` of `slots.limit()` for the holder's token, as
    /// [`Self::take`] (`holder.resource` is the semaphore's name; its keys are symfony/semaphore's).
    pub fn take_slots(slots: Slots, holder: Holder<'_>, ttl: Ttl, turn: Option<Turn>) -> Self {
        let mut keys = semaphore_keys(holder.resource);
        let mut args = vec![
            holder.token.into(),
            ttl_millis(ttl).to_string().into_bytes(),
            slots.limit().to_string().into_bytes(),
            slots.weight().to_string().into_bytes(),
        ];
        if let Some(turn) = turn {
            keys.push(Target::Semaphore(slots).grant_list(holder));
            args.extend(turn_args(turn));
        }
        Self::new(&SEMAPHORE_SAVE, keys, args)
    }

    /// Put off a semaphore's slot.
    pub fn extend_slot(holder: Holder<'_>, ttl: Ttl) -> Self {
        let mut keys = semaphore_keys(holder.resource);
        keys.truncate(2);
        let args = vec![
            holder.token.into(),
            ttl_millis(ttl).to_string().into_bytes(),
        ];
        Self::new(&SEMAPHORE_PUT_OFF, keys, args)
    }

    /// Give a semaphore's slot back.
    pub fn release_slot(holder: Holder<'_>) -> Self {
        Self::new(
            &SEMAPHORE_DELETE,
            semaphore_keys(holder.resource),
            vec![holder.token.into()],
        )
    }

    /// Whether the holder has a live slot.
    pub fn check_slot(holder: Holder<'_>) -> Self {
        let mut keys = semaphore_keys(holder.resource);
        keys.truncate(2);
        Self::new(&SEMAPHORE_EXISTS, keys, vec![holder.token.into()])
    }

    /// A waiter handed a slot takes its hand-over record.
    pub fn accept_slot(holder: Holder<'_>) -> Self {
        let keys = vec![
            keys::semaphore_times(holder.resource),
            keys::semaphore_handovers(holder.resource),
        ];
        Self::new(&SEMAPHORE_CLAIM, keys, vec![holder.token.into()])
    }

    /// A semaphore's waiter gives up.
    pub fn give_up_slots(holder: Holder<'_>) -> Self {
        let mut keys = semaphore_keys(holder.resource);
        keys.push(keys::grant_list(
            &keys::semaphore_queue(holder.resource),
            holder.token,
        ));
        Self::new(&SEMAPHORE_LEAVE, keys, vec![holder.token.into()])
    }

    /// The script.
    pub fn script(&self) -> &'static LockScript {
        self.script
    }

    /// KEYS, in the script's order.
    pub fn keys(&self) -> &[Vec<u8>] {
        &self.keys
    }

    /// ARGV, in the script's order.
    pub fn args(&self) -> &[Vec<u8>] {
        &self.args
    }

    /// The key that routes the call (its hash slot, on a Redis Cluster): the lock's.
    pub fn route(&self) -> &[u8] {
        &self.keys[0]
    }
}

/// The lock and the keys a release may touch (QUEUE, WAITERS, HANDOVERS, HOLDERS).
/// A semaphore's two sets and its queue's keys, in the layouts' order.
fn semaphore_keys(resource: &[u8]) -> Vec<Vec<u8>> {
    vec![
        keys::semaphore_times(resource),
        keys::semaphore_weights(resource),
        keys::semaphore_queue(resource),
        keys::semaphore_waiters(resource),
        keys::semaphore_handovers(resource),
    ]
}

/// WAIT, PAUSE_MS and OVERDUE of a waiting caller's attempt.
fn turn_args(turn: Turn) -> [Vec<u8>; 3] {
    let pause = turn.pause.map(|p| p.as_millis().to_string());
    [
        WAITING.to_vec(),
        pause.unwrap_or_default().into_bytes(),
        if turn.overdue {
            b"1".to_vec()
        } else {
            Vec::new()
        },
    ]
}

fn release_keys(resource: &[u8]) -> Vec<Vec<u8>> {
    vec![
        resource.to_vec(),
        keys::queue(resource),
        keys::waiters(resource),
        keys::handovers(resource),
        keys::holders(resource),
    ]
}

/// The holder's grant list, where a release signals a hand-over.
pub fn grant_list(holder: Holder<'_>) -> Vec<u8> {
    keys::grant_list(&keys::queue(holder.resource), holder.token)
}

/// Milliseconds for Redis, rounded up so a tiny TTL never becomes 0.
pub fn ttl_millis(ttl: Ttl) -> u64 {
    let millis = ttl.duration().as_nanos().div_ceil(1_000_000);
    u64::try_from(millis).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOLDER: Holder<'static> = Holder {
        resource: b"orders",
        token: "t0k3n",
    };

    /// Every operation names what its script's layout names, key for key.
    #[test]
    fn each_call_fills_its_scripts_layout() {
        let ttl = Ttl::from_secs(1.0).unwrap();
        let turn = Turn {
            pause: Some(Duration::from_millis(100)),
            overdue: true,
        };
        let full = [
            ScriptCall::take(Mode::Exclusive, HOLDER, ttl, "1\th\t", Some(turn)),
            ScriptCall::take(Mode::Shared, HOLDER, ttl, "1\th\t", Some(turn)),
            ScriptCall::extend(HOLDER, ttl),
            ScriptCall::release(HOLDER, true),
            ScriptCall::check(HOLDER),
            ScriptCall::draw_fencing_token(HOLDER),
            ScriptCall::accept_hand_over(HOLDER),
            ScriptCall::give_up(HOLDER),
            ScriptCall::force_release(HOLDER.resource),
        ];
        for call in &full {
            let layout = call.script().layout();
            assert_eq!(call.keys().len(), layout.keys.len());
            assert_eq!(call.args().len(), layout.args.len());
            assert_eq!(call.route(), b"orders");
        }
        let inspect = ScriptCall::inspect(HOLDER.resource);
        assert_eq!(inspect.keys().len(), inspect.script().layout().keys.len());
        assert_eq!(inspect.keys()[3], keys::holders(b"orders"));
        let alone = ScriptCall::take(Mode::Exclusive, HOLDER, ttl, "1\th\t", None);
        assert_eq!(alone.keys().len(), 5);
        assert_eq!(
            alone.args(),
            [b"t0k3n".to_vec(), b"1000".to_vec(), b"1\th\t".to_vec()]
        );
    }

    #[test]
    fn the_counter_and_the_hand_overs_are_named_as_such() {
        let fence = ScriptCall::draw_fencing_token(HOLDER);
        assert_eq!(fence.keys()[1], keys::fence(b"orders"));
        let claim = ScriptCall::accept_hand_over(HOLDER);
        assert_eq!(claim.keys()[1], keys::handovers(b"orders"));
    }

    #[test]
    fn ttl_in_milliseconds_rounds_up() {
        assert_eq!(ttl_millis(Ttl::from_secs(0.0001).unwrap()), 1);
        assert_eq!(ttl_millis(Ttl::from_secs(1.5).unwrap()), 1500);
    }
}
