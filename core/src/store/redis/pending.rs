//! Replies a native connection has not read yet: releases sent with `release=deferred`.
//!
//! A release is written to the socket and the caller goes on; the server runs it (and hands the
//! lock over to the next waiter) as soon as the bytes arrive, so only reading its reply is put
//! off. Replies come back in the order the commands went out, so every unread one is read, in
//! order, before the connection's next command, at the end of the request and at exit: no reply
//! is ever taken for another's. A release whose reply says it failed, or whose reply was lost with
//! the connection, settles its [`PendingRelease`] with the error for its lock to report.

use std::collections::VecDeque;

use redis::Value;

use crate::store::redis::scripts::LockScript;
use crate::store::PendingRelease;

/// One command sent whose reply is unread.
pub struct Unread {
    pending: PendingRelease,
    script: &'static LockScript,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

/// Unread replies of one connection, oldest first.
#[derive(Default)]
pub struct UnreadReplies(VecDeque<Unread>);

impl UnreadReplies {
    /// Sends `script` by EVALSHA on `connection` without reading its reply.
    ///
    /// # Errors
    /// The write's error; nothing was queued then.
    pub fn send(
        &mut self,
        connection: &mut redis::Connection,
        script: &'static LockScript,
        keys: &[&[u8]],
        args: &[&[u8]],
    ) -> redis::RedisResult<PendingRelease> {
        let packed = redis::cmd("EVALSHA")
            .arg(script.sha1())
            .arg(keys.len())
            .arg(keys)
            .arg(args)
            .get_packed_command();
        connection.send_packed_command(&packed)?;
        let pending = PendingRelease::default();
        self.0.push_back(Unread {
            pending: pending.clone(),
            script,
            keys: keys.iter().map(|k| k.to_vec()).collect(),
            args: args.iter().map(|a| a.to_vec()).collect(),
        });
        Ok(pending)
    }

    /// Whether a reply is still to be read.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Reads every unread reply, in order, and settles each release. A server that lost its
    /// scripts (NOSCRIPT) gets the script and the release again, now. `describe` words an error
    /// as the connection's other errors are worded.
    ///
    /// # Errors
    /// The read's error when the connection broke or timed out: the connection is then out of
    /// step and must not be used again; every release still unread is settled as unconfirmed.
    pub fn read_all(
        &mut self,
        connection: &mut redis::Connection,
        describe: &dyn Fn(&redis::RedisError) -> String,
    ) -> redis::RedisResult<()> {
        while let Some(unread) = self.0.pop_front() {
            match connection.recv_response().and_then(Value::extract_error) {
                Ok(_) => unread.pending.settle(Ok(())),
                Err(e)
                    if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
                {
                    let outcome = unread.run_now(connection);
                    unread.pending.settle(outcome.map_err(|e| describe(&e)));
                }
                Err(e) if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() => {
                    self.lost(&describe(&e));
                    unread.pending.settle(Err(unconfirmed(&describe(&e))));
                    return Err(e);
                }
                Err(e) => unread.pending.settle(Err(describe(&e))),
            }
        }
        Ok(())
    }

    /// The connection is gone: every release still unread is settled as unconfirmed.
    pub fn lost(&mut self, why: &str) {
        for unread in self.0.drain(..) {
            unread.pending.settle(Err(unconfirmed(why)));
        }
    }
}

impl Unread {
    /// Runs the release again, by the script's own invocation (which loads it on NOSCRIPT).
    fn run_now(&self, connection: &mut redis::Connection) -> redis::RedisResult<()> {
        let mut invocation = self.script.script().prepare_invoke();
        for key in &self.keys {
            invocation.key(key.as_slice());
        }
        for arg in &self.args {
            invocation.arg(arg.as_slice());
        }
        invocation.invoke::<i64>(connection).map(|_| ())
    }
}

fn unconfirmed(why: &str) -> String {
    format!("{why} (before the release's reply came: the lock may still be held until its TTL runs out)")
}
