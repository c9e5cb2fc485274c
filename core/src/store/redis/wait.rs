//! The one wait loop of the Redis store (`protocol.rs` describes the protocol). Each round is an
//! attempt and a wait for a signal on the waiter's grant list, in one round trip where the
//! transport pipelines them: a release anywhere hands the lock over to the longest waiter and
//! signals its list, so the woken waiter needs no further round trip. Without a signal the waiter
//! tries again when the holder's TTL runs out, and at least every [`SIGNAL_POLL_CAP`] (a holder
//! that does not hand over, such as symfony/lock, or a lock that expired).

use std::time::{Duration, Instant};

use super::protocol::{Signal, HANDED_OVER, SIGNAL_POLL_CAP, TAKE_BACK_AFTER, WAITING};
use super::scripts::{CLAIM, LEAVE};
use super::transport::{RunErrorKind, Transport};
use super::{is_loading, keys, run_error_kind, ttl_millis, RedisStore};
use crate::store::{BlockingStore, Mode, WaitReport};
use crate::{Error, Key, Result, Ttl};

/// The keys a waiting caller names besides the resource, in the protocol's order (QUEUE, WAITERS,
/// HANDOVERS, GRANT), and when its wait began.
struct WaitKeys {
    queue: Vec<u8>,
    waiters: Vec<u8>,
    handovers: Vec<u8>,
    grant: Vec<u8>,
    since: Instant,
}

impl WaitKeys {
    fn new(resource: &[u8], token: &str) -> Self {
        let queue = keys::queue(resource);
        WaitKeys {
            grant: keys::grant_list(&queue, token),
            queue,
            waiters: keys::waiters(resource),
            handovers: keys::handovers(resource),
            since: Instant::now(),
        }
    }

    /// The protocol's OVERDUE: "1" once the wait has lasted long enough that an unread hand-over
    /// may be what holds it up (then the attempt takes such hand-overs back).
    fn overdue(&self) -> &'static [u8] {
        if self.since.elapsed() > TAKE_BACK_AFTER {
            b"1"
        } else {
            b""
        }
    }

    fn all(&self) -> [&[u8]; 4] {
        [&self.queue, &self.waiters, &self.handovers, &self.grant]
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
        mode: Mode,
        ttl: Ttl,
        queue: &WaitKeys,
        pause: Duration,
    ) -> Result<Round> {
        let asked = Instant::now();
        let script = Self::prepare(key, mode, ttl);
        let ttl_ms = ttl_millis(ttl).to_string();
        let pause_ms = pause.as_millis().to_string();
        let args = [
            ttl_ms.as_bytes(),
            WAITING,
            pause_ms.as_bytes(),
            queue.overdue(),
        ];
        let (reply, signal) = self.call(key, &queue.all(), &args, |keys, argv| {
            self.transport
                .run_then_wait(script, keys, argv, &queue.grant, pause)
        })?;
        let refused = Self::refusal(reply);
        match (refused, signal) {
            (Some(_), Some(Signal::Granted)) => self.accept_hand_over(key, ttl, asked, queue),
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

    /// Waits up to `pause` for a hand-over signal on a waiter's grant list.
    fn wait_for_signal(&self, grant: &[u8], pause: Duration) -> Result<Option<Signal>> {
        self.transport
            .wait_signal(grant, pause.max(Duration::from_millis(1)))
            .map_err(|e| {
                Error::storage(
                    format!("Waiting for the lock in {} failed: {e}", self.name),
                    e,
                )
            })
    }

    /// A release handed the lock over to this waiter: it holds it with `ttl` since some moment
    /// after `asked` (when it started to wait for the signal), so its lifetime counts from there.
    fn accept_hand_over(
        &self,
        key: &mut Key,
        ttl: Ttl,
        asked: Instant,
        queue: &WaitKeys,
    ) -> Result<Round> {
        if self.transport.acknowledges() {
            // The releaser's connection wrote this lock, and WAIT counts a connection's own
            // writes only: the claim (the hand-over record goes) is this connection's write after
            // it, so its acknowledgement covers the hand-over.
            if self.run(&CLAIM, key, &[&queue.handovers], &[])? != 1 {
                return Err(self.not_held(key));
            }
        }
        key.reset_lifetime();
        key.reduce_lifetime_from(asked, ttl);
        self.check_not_expired(key)?;
        Ok(Round::Got { handed_over: true })
    }

    /// Past the deadline: one last attempt (given up to LAST_ATTEMPT_GRACE), then leave the queue (releasing the lock should a
    /// release have handed it over meanwhile; should this fail, the entry expires within the
    /// protocol's ALIVE_FOR). A server still loading its data refuses it too; one that has not
    /// answered at all during the wait (`answered` false) is an error, else the wait just ends.
    fn last_attempt(
        &self,
        key: &mut Key,
        mode: Mode,
        ttl: Ttl,
        queue: &WaitKeys,
        answered: bool,
    ) -> Result<bool> {
        // The deadline has passed, so its bound on socket waits would leave this attempt 1 ms: a
        // server a moment slow (busy, a loaded machine) would turn a wait that simply ran out into
        // a storage error, and the round before may have lost a reply that came just after the
        // deadline. This one round trip (and leaving the queue) gets LAST_ATTEMPT_GRACE (or the
        // DSN's read_timeout if shorter): a deadline still bounds a wait on a silent server.
        self.transport
            .set_deadline(Some(Instant::now() + LAST_ATTEMPT_GRACE));
        let script = Self::prepare(key, mode, ttl);
        let ttl_ms = ttl_millis(ttl).to_string();
        let args = [ttl_ms.as_bytes(), WAITING, b"", queue.overdue()];
        match self.run(script, key, &queue.all(), &args) {
            Ok(reply) if Self::refusal(reply).is_none() => {
                self.check_not_expired(key)?;
                return Ok(true);
            }
            Err(e) if is_timed_out(&e) && !answered => return Err(e),
            Err(e) if !is_loading(&e) && !is_timed_out(&e) => return Err(e),
            _ => {}
        }
        self.leave(key, queue);
        Ok(false)
    }
}

impl<T: Transport> RedisStore<T> {
    /// Leaves the queue, releasing a lock handed over meanwhile (best effort: the entry expires
    /// within the protocol's ALIVE_FOR anyway).
    fn leave(&self, key: &mut Key, queue: &WaitKeys) {
        let _ = self.run(&LEAVE, key, &queue.all(), &[]);
    }
}

/// How long past its deadline a wait's last attempt may wait for the server's answer.
const LAST_ATTEMPT_GRACE: Duration = Duration::from_secs(1);

/// Whether `e` is a socket wait that ran out (the server did not answer in time).
fn is_timed_out(e: &Error) -> bool {
    run_error_kind(e) == Some(RunErrorKind::TimedOut)
}

/// Bounds every socket wait of a transport by a deadline while it lives.
struct DeadlineGuard<'a, T: Transport>(&'a T);

impl<'a, T: Transport> DeadlineGuard<'a, T> {
    fn new(transport: &'a T, deadline: Option<Instant>) -> Self {
        transport.set_deadline(deadline);
        DeadlineGuard(transport)
    }
}

impl<T: Transport> Drop for DeadlineGuard<'_, T> {
    fn drop(&mut self) {
        self.0.set_deadline(None);
    }
}

/// One wait's state between its rounds.
struct Waiting {
    queue: WaitKeys,
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
        let ttl = ttl.unwrap_or(self.initial_ttl);
        let mut waiting = Waiting {
            queue: WaitKeys::new(key.resource(), key.token()?.as_str()),
            deadline,
            hint: None,
            answered: false,
        };
        let _bounded = DeadlineGuard::new(&self.transport, deadline);
        let mut rounds = 0u64;
        loop {
            // The host's turn after every pause (a signal handler); when it says stop, the
            // waiter leaves the queue as at a deadline.
            if rounds > 0 && crate::interrupt::requested() {
                report.interrupted = true;
                self.leave(key, &waiting.queue);
                return Ok(false);
            }
            rounds += 1;
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                return self.last_attempt(key, mode, ttl, &waiting.queue, waiting.answered);
            }
            let pause = [Some(SIGNAL_POLL_CAP), waiting.hint, left]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(SIGNAL_POLL_CAP)
                .max(Duration::from_millis(1));
            if let Some(got) = self.next_round(key, (mode, ttl), &mut waiting, pause, report)? {
                return Ok(got);
            }
        }
    }
}

impl<T: Transport> RedisStore<T> {
    /// One round of a wait and what it means: `Some(true)` when the lock is ours, `None` to go on.
    fn next_round(
        &self,
        key: &mut Key,
        (mode, ttl): (Mode, Ttl),
        waiting: &mut Waiting,
        pause: Duration,
        report: &mut WaitReport,
    ) -> Result<Option<bool>> {
        let round = match self.round(key, mode, ttl, &waiting.queue, pause) {
            // Redis restarted and is loading its data: the lock may well be held there; wait as
            // for a holder that does not hand over, and ask again.
            Err(e) if is_loading(&e) => {
                std::thread::sleep(pause);
                report.polls += 1;
                return Ok(None);
            }
            Err(e) => return self.failed(key, waiting, e, report),
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
    ) -> Result<Option<bool>> {
        let asked = Instant::now();
        let signal = match self.wait_for_signal(&waiting.queue.grant, pause) {
            Err(e) => return self.failed(key, waiting, e, report),
            Ok(signal) => signal,
        };
        if signal == Some(Signal::Granted) {
            report.wakeups += 1;
            self.accept_hand_over(key, ttl, asked, &waiting.queue)?;
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
        key: &mut Key,
        waiting: &Waiting,
        e: Error,
        report: &mut WaitReport,
    ) -> Result<Option<bool>> {
        if is_timed_out(&e) && waiting.deadline.is_some() {
            report.polls += 1;
            return Ok(None);
        }
        self.leave(key, &waiting.queue);
        Err(e)
    }
}
