//! Replies a native connection has not read yet: releases sent with `release=deferred`.
//!
//! A release is written to the socket and the caller goes on; the server runs it (and hands the
//! lock over to the next waiter) as soon as the bytes arrive, so only reading its reply is put
//! off. Replies come back in the order the commands went out: the connection's next script is
//! written behind them and its reply read after theirs ([`UnreadReplies::run_behind`], so a lock
//! cycle costs one round trip); anything else reads them first; the end of the request reads them
//! too. No reply is ever taken for another's. A release whose reply says it failed, or whose reply
//! was lost with the connection, settles its [`PendingRelease`] with the error for its lock to
//! report; one the server did not know the script of (NOSCRIPT) runs again once the stream is read.

use std::collections::VecDeque;

use redis::Value;

use crate::store::redis::calls::ScriptCall;
use crate::store::PendingRelease;

/// Words a redis-rs error as the connection's other errors are worded.
pub type Describe<'a> = &'a dyn Fn(&redis::RedisError) -> String;

/// One command sent whose reply is unread.
pub struct Unread {
    pending: PendingRelease,
    call: ScriptCall,
}

/// Unread replies of one connection, oldest first.
#[derive(Default)]
pub struct UnreadReplies(VecDeque<Unread>);

impl UnreadReplies {
    /// Sends `call` by EVALSHA on `connection` without reading its reply.
    ///
    /// # Errors
    /// The write's error; nothing was queued then.
    pub fn send(
        &mut self,
        connection: &mut redis::Connection,
        call: &ScriptCall,
    ) -> redis::RedisResult<PendingRelease> {
        connection.send_packed_command(&evalsha(call).get_packed_command())?;
        let pending = PendingRelease::default();
        self.0.push_back(Unread {
            pending: pending.clone(),
            call: call.clone(),
        });
        Ok(pending)
    }

    /// Whether a reply is still to be read.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Reads every unread reply, in order, and settles each release.
    ///
    /// # Errors
    /// The read's error when the connection broke or timed out: the connection is then out of
    /// step and must not be used again; every release still unread is settled as unconfirmed.
    pub fn read_all(
        &mut self,
        connection: &mut redis::Connection,
        describe: Describe<'_>,
    ) -> redis::RedisResult<()> {
        let again = self.read_replies(connection, describe)?;
        run_again(again, connection, describe);
        Ok(())
    }

    /// Runs `call` (EVALSHA, loaded on NOSCRIPT) written behind the unread replies, so one round
    /// trip serves them all: their replies are read first, in order, then its own.
    ///
    /// # Errors
    /// The script's error, or the read's when the connection broke (then as in [`Self::read_all`]).
    pub fn run_behind<R: redis::FromRedisValue>(
        &mut self,
        connection: &mut redis::Connection,
        call: &ScriptCall,
        describe: Describe<'_>,
    ) -> redis::RedisResult<R> {
        let invocation = invocation(call);
        if self.is_empty() {
            return invocation.invoke(connection);
        }
        if let Err(e) = connection.send_packed_command(&evalsha(call).get_packed_command()) {
            self.lost(&describe(&e));
            return Err(e);
        }
        let again = self.read_replies(connection, describe)?;
        let own = connection.recv_response().and_then(Value::extract_error);
        // The stream is read up to here: what needs a second run can have it now.
        run_again(again, connection, describe);
        match own {
            Err(e) if is_noscript(&e) => invocation.invoke(connection),
            own => Ok(redis::from_redis_value(own?)?),
        }
    }

    /// The connection is gone: every release still unread is settled as unconfirmed.
    pub fn lost(&mut self, why: &str) {
        for unread in self.0.drain(..) {
            unread.pending.settle(Err(unconfirmed(why)));
        }
    }

    /// Reads the unread replies in order and settles each release, except those whose script the
    /// server did not know: returned, to run again once nothing is left to read.
    fn read_replies(
        &mut self,
        connection: &mut redis::Connection,
        describe: Describe<'_>,
    ) -> redis::RedisResult<Vec<Unread>> {
        let mut again = Vec::new();
        while let Some(unread) = self.0.pop_front() {
            match connection.recv_response().and_then(Value::extract_error) {
                Ok(_) => unread.pending.settle(Ok(())),
                Err(e) if is_noscript(&e) => again.push(unread),
                Err(e) if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() => {
                    let why = describe(&e);
                    self.lost(&why);
                    for unread in std::iter::once(unread).chain(again) {
                        unread.pending.settle(Err(unconfirmed(&why)));
                    }
                    return Err(e);
                }
                Err(e) => unread.pending.settle(Err(describe(&e))),
            }
        }
        Ok(again)
    }
}

/// Runs again, one by one, the releases whose script the server did not know (the invocation
/// loads it), and settles them.
fn run_again(again: Vec<Unread>, connection: &mut redis::Connection, describe: Describe<'_>) {
    for unread in again {
        let outcome = invocation(&unread.call).invoke::<i64>(connection);
        unread
            .pending
            .settle(outcome.map(|_| ()).map_err(|e| describe(&e)));
    }
}

fn is_noscript(e: &redis::RedisError) -> bool {
    e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
}

/// `call` by redis-rs (EVALSHA; SCRIPT LOAD and again on NOSCRIPT).
fn invocation(call: &ScriptCall) -> redis::ScriptInvocation<'static> {
    let mut invocation = call.script().script().prepare_invoke();
    for key in call.keys() {
        invocation.key(key.as_slice());
    }
    for arg in call.args() {
        invocation.arg(arg.as_slice());
    }
    invocation
}

/// The EVALSHA command of `call`, packed for the socket.
pub fn evalsha(call: &ScriptCall) -> redis::Cmd {
    let mut command = redis::cmd("EVALSHA");
    command
        .arg(call.script().sha1())
        .arg(call.keys().len())
        .arg(call.keys())
        .arg(call.args());
    command
}

fn unconfirmed(why: &str) -> String {
    format!("{why} (before the release's reply came: the lock may still be held until its TTL runs out)")
}
