//! The one wait loop of the Redis store (`protocol.rs` describes the protocol). Each round is an
//! attempt and a wait for a signal on the waiter's grant list, in one round trip where the
//! transport pipelines them: a release anywhere hands the lock over to the longest waiter and
//! signals its list, so the woken waiter needs no further round trip. Without a signal the waiter
//! tries again when the holder's TTL runs out, and at least every [`SIGNAL_POLL_CAP`] (a holder
//! that does not hand over, such as symfony/lock, or a lock that expired).

use std::time::{Duration, Instant};

use super::calls::{Holder, Target, Turn};
use super::protocol::{Signal, HANDED_OVER, SIGNAL_POLL_CAP, TAKE_BACK_AFTER};
use super::transport::{RunError, RunErrorKind, Transport};
use super::RedisStore;
use crate::store::{BlockingStore, Mode, WaitReport};
use crate::{Error, Key, Result, Ttl};

/// A failure inside a wait. A transport's keeps its kind, so that the wait decides on it (a
/// server that did not answer in time or is still loading is ridden out); it becomes the
/// engine's error once, when the wait ends with it ([`RedisStore::error`]).
enum Failure {
    Transport(RunError),
    Engine(Error),
}

impl From<RunError> for Failure {
    fn from(e: RunError) -> Self {
        Failure::Transport(e)
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Engine(e)
    }
}

impl Failure {
    fn is(&self, kind: RunErrorKind) -> bool {
        matches!(self, Failure::Transport(e) if e.kind() == kind)
    }
}

/// The waiting caller: its lock or slots (copied, as the key changes between rounds), its grant
/// list, and when its wait began.
struct Waiter {
    target: Target,
    resource: Vec<u8>,
    token: String,
    /// What its lock leaves in the store for an operator (`holder::record`).
    record: String,
    grant: Vec<u8>,
    since: Instant,
}

impl Waiter {
    fn new(target: Target, holder: Holder<'_>, record: String) -> Self {
        Waiter {
            target,
            resource: holder.resource.to_vec(),
            token: holder.token.to_owned(),
            record,
            grant: target.grant_list(holder),
            since: Instant::now(),
        }
    }

    fn holder(&self) -> Holder<'_> {
        Holder {
            resource: &self.resource,
            token: &self.token,
        }
    }

    /// An attempt that then waits up to `pause` for a signal (`None`: not at all); overdue once
    /// the wait has lasted long enough that an unread hand-over may be what holds it up (then the
    /// attempt takes such hand-overs back).
    fn turn(&self, pause: Option<Duration>) -> Turn {
        Turn {
            pause,
            overdue: self.since.elapsed() > TAKE_BACK_AFTER,
        }
    }
}

/// How one round went.
enum Round {
    /// The lock is ours: taken by the attempt, or handed over (`true`) by a release.
    Got { handed_over: bool },
    /// Held, with the holder's remaining time when the server told it.
    Held(Option<Duration>),
    /// Held by a holder whose time runs out before the round's wait would have ended: wait only
    /// that long (its remaining time) before trying again.
    Soon(Option<Duration>),
}

impl<T: Transport> RedisStore<T> {
    /// One attempt and a wait of up to `pause` for a hand-over.
    fn round(
        &self,
        key: &mut Key,
        ttl: Ttl,
        waiting: &Waiting,
        pause: Duration,
    ) -> std::result::Result<Round, Failure> {
        let asked = Instant::now();
        Self::prepare(key, ttl);
        let waiter = &waiting.waiter;
        let call = waiter.target.take(
            waiter.holder(),
            ttl,
            &waiter.record,
            Some(waiter.turn(Some(pause))),
        );
        let (reply, signal) =
            self.transport
                .run_then_wait(&call, &waiter.grant, pause, waiting.deadline)?;
        let refused = Self::refusal(reply);
        match (refused, signal) {
            (Some(_), Some(Signal::Granted)) => self.accept_hand_over(key, ttl, asked, waiting),
            (Some(left), Some(Signal::Soon)) => Ok(Round::Soon(left)),
            (Some(left), _) => Ok(Round::Held(left)),
            (None, _) => {
                self.check_not_expired(key)?;
                Ok(Round::Got {
                    handed_over: reply == HANDED_OVER,
                })
            }
        }
    }

    /// A release handed the lock over to this waiter: it holds it with `ttl` since some moment
    /// after `asked` (when it started to wait for the signal), so its lifetime counts from there.
    fn accept_hand_over(
        &self,
        key: &mut Key,
        ttl: Ttl,
        asked: Instant,
        waiting: &Waiting,
    ) -> std::result::Result<Round, Failure> {
        if self.transport.acknowledges() {
            // The releaser's connection wrote this lock, and WAIT counts a connection's own
            // writes only: the claim (the hand-over record goes) is this connection's write after
            // it, so its acknowledgement covers the hand-over.
            let claim = waiting
                .waiter
                .target
                .accept_hand_over(waiting.waiter.holder());
            if self.transport.run(&claim, waiting.deadline)? != 1 {
                return Err(self.not_held(key).into());
            }
        }
        key.reset_lifetime();
        key.reduce_lifetime_from(asked, ttl);
        self.check_not_expired(key)?;
        Ok(Round::Got { handed_over: true })
    }

    /// Past the deadline: one last attempt, then leave the queue (releasing the lock should a
    /// release have handed it over meanwhile; should this fail, the entry expires within the
    /// protocol's ALIVE_FOR). A server still loading its data refuses it too; one that has not
    /// answered at all during the wait is an error, else the wait just ends.
    fn last_attempt(
        &self,
        key: &mut Key,
        ttl: Ttl,
        waiting: &Waiting,
    ) -> std::result::Result<bool, Failure> {
        // The deadline has passed, so its bound on socket waits would leave this attempt 1 ms: a
        // server a moment slow (busy, a loaded machine) would turn a wait that simply ran out into
        // a storage error, and the round before may have lost a reply that came just after the
        // deadline. This one round trip (and leaving the queue) gets LAST_ATTEMPT_GRACE (or the
        // DSN's read_timeout if shorter): a deadline still bounds a wait on a silent server.
        let grace = Some(Instant::now() + LAST_ATTEMPT_GRACE);
        Self::prepare(key, ttl);
        let waiter = &waiting.waiter;
        let call = waiter.target.take(
            waiter.holder(),
            ttl,
            &waiter.record,
            Some(waiter.turn(None)),
        );
        match self.transport.run(&call, grace).map_err(Failure::from) {
            Ok(reply) if Self::refusal(reply).is_none() => {
                self.check_not_expired(key)?;
                return Ok(true);
            }
            Err(e) if e.is(RunErrorKind::TimedOut) && !waiting.answered => return Err(e),
            Err(e) if !e.is(RunErrorKind::Loading) && !e.is(RunErrorKind::TimedOut) => {
                return Err(e)
            }
            _ => {}
        }
        self.leave(waiter, grace);
        Ok(false)
    }

    /// Leaves the queue, releasing a lock handed over meanwhile (best effort: the entry expires
    /// within the protocol's ALIVE_FOR anyway).
    fn leave(&self, waiter: &Waiter, deadline: Option<Instant>) {
        let _ = self
            .transport
            .run(&waiter.target.give_up(waiter.holder()), deadline);
    }
}

/// How long past its deadline a wait's last attempt may wait for the server's answer.
const LAST_ATTEMPT_GRACE: Duration = Duration::from_secs(1);

/// One wait's state between its rounds.
struct Waiting {
    waiter: Waiter,
    /// No socket wait of the wait's calls lasts past it.
    deadline: Option<Instant>,
    /// The holder's remaining time, as the last refusal told it.
    hint: Option<Duration>,
    /// Whether the server answered any attempt of this wait.
    answered: bool,
}

impl<T: Transport> BlockingStore for RedisStore<T> {
    fn wait(
        &self,
        key: &mut Key,
        mode: Mode,
        ttl: Option<Ttl>,
        deadline: Option<Instant>,
        report: &mut WaitReport,
    ) -> Result<bool> {
        let target = Target::Lock(mode);
        self.wait_for(target, key, ttl, deadline, report)
    }
}

impl<T: Transport> RedisStore<T> {
    /// The wait for a lock or a semaphore's slots.
    pub(super) fn wait_for(
        &self,
        target: Target,
        key: &mut Key,
        ttl: Option<Ttl>,
        deadline: Option<Instant>,
        report: &mut WaitReport,
    ) -> Result<bool> {
        let ttl = ttl.unwrap_or(self.initial_ttl);
        let (holder, record) = match target {
            Target::Lock(_) => (self.holder(key)?, self.record_of(key)),
            Target::Semaphore(_) => (self.slot_holder(key)?, String::new()),
        };
        let mut waiting = Waiting {
            waiter: Waiter::new(target, holder, record),
            deadline,
            hint: None,
            answered: false,
        };
        self.rounds(key, ttl, &mut waiting, report)
            .map_err(|failure| match failure {
                Failure::Transport(e) => self.error(key, e),
                Failure::Engine(e) => e,
            })
    }
}

impl<T: Transport> RedisStore<T> {
    /// Rounds until the lock is ours, the deadline passes or the host interrupts the wait.
    fn rounds(
        &self,
        key: &mut Key,
        ttl: Ttl,
        waiting: &mut Waiting,
        report: &mut WaitReport,
    ) -> std::result::Result<bool, Failure> {
        let mut rounds = 0u64;
        loop {
            // The host's turn after every pause (a signal handler); when it says stop, the
            // waiter leaves the queue as at a deadline.
            if rounds > 0 && crate::interrupt::requested() {
                report.interrupted = true;
                self.leave(&waiting.waiter, waiting.deadline);
                return Ok(false);
            }
            rounds += 1;
            let left = waiting
                .deadline
                .map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                return self.last_attempt(key, ttl, waiting);
            }
            let pause = [Some(SIGNAL_POLL_CAP), waiting.hint, left]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(SIGNAL_POLL_CAP)
                .max(Duration::from_millis(1));
            if let Some(got) = self.next_round(key, ttl, waiting, pause, report)? {
                return Ok(got);
            }
        }
    }

    /// One round of a wait and what it means: `Some(true)` when the lock is ours, `None` to go on.
    fn next_round(
        &self,
        key: &mut Key,
        ttl: Ttl,
        waiting: &mut Waiting,
        pause: Duration,
        report: &mut WaitReport,
    ) -> std::result::Result<Option<bool>, Failure> {
        let round = match self.round(key, ttl, waiting, pause) {
            // Redis restarted and is loading its data: the lock may well be held there; wait as
            // for a holder that does not hand over, and ask again.
            Err(e) if e.is(RunErrorKind::Loading) => {
                std::thread::sleep(pause);
                report.polls += 1;
                return Ok(None);
            }
            Err(e) => return self.failed(waiting, e, report),
            Ok(round) => round,
        };
        waiting.answered = true;
        match round {
            Round::Got { handed_over } => {
                report.wakeups += u64::from(handed_over);
                Ok(Some(true))
            }
            Round::Held(holder_left) => {
                report.polls += 1;
                waiting.hint = holder_left;
                Ok(None)
            }
            Round::Soon(holder_left) => {
                waiting.hint = None;
                // The holder expires before the pause would have ended: wait that long only.
                let pause = holder_left.unwrap_or(pause).min(pause);
                self.until_holder_expires(key, ttl, waiting, pause, report)
            }
        }
    }

    /// Waits up to `pause` (the holder's remaining time) for a hand-over: `Some(true)` when one
    /// came, `None` to try again.
    fn until_holder_expires(
        &self,
        key: &mut Key,
        ttl: Ttl,
        waiting: &Waiting,
        pause: Duration,
        report: &mut WaitReport,
    ) -> std::result::Result<Option<bool>, Failure> {
        let asked = Instant::now();
        let pause = pause.max(Duration::from_millis(1));
        let signal =
            match self
                .transport
                .wait_signal(&waiting.waiter.grant, pause, waiting.deadline)
            {
                Err(e) => return self.failed(waiting, e.into(), report),
                Ok(signal) => signal,
            };
        if signal == Some(Signal::Granted) {
            report.wakeups += 1;
            self.accept_hand_over(key, ttl, asked, waiting)?;
            return Ok(Some(true));
        }
        report.polls += 1;
        Ok(None)
    }

    /// A call of the wait failed. No answer in time (a paused or busy server): a wait with a
    /// deadline rides it out on a new connection until the deadline, which bounds every socket
    /// wait (`None`: go on). Any other failure (or the host interrupting a client's call) ends
    /// the wait: the waiter leaves the queue, so no release hands the lock to it.
    fn failed(
        &self,
        waiting: &Waiting,
        e: Failure,
        report: &mut WaitReport,
    ) -> std::result::Result<Option<bool>, Failure> {
        if e.is(RunErrorKind::TimedOut) && waiting.deadline.is_some() {
            report.polls += 1;
            return Ok(None);
        }
        self.leave(&waiting.waiter, waiting.deadline);
        Err(e)
    }
}
