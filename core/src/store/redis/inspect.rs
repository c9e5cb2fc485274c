//! An operator's view of a Redis lock: the reply of `inspect.lua` (JSON: the key's type, the
//! server time, holders, waiters) read into a [`LockState`], and the forced release. The reply
//! comes from a shared server: it is read, never trusted (a field of the wrong shape is skipped,
//! text is bounded by `Origin::parse`).

use serde_json::Value;

use super::calls::ScriptCall;
use super::transport::Transport;
use super::RedisStore;
use crate::holder::{from_millis, Holder, LockState, Origin, Waiter};
use crate::store::{InspectingStore, Mode};
use crate::{Error, Result};

impl<T: Transport> InspectingStore for RedisStore<T> {
    fn inspect(&self, resource: &[u8]) -> Result<LockState> {
        self.check_lockable(resource)?;
        let reply = self
            .transport
            .fetch(&ScriptCall::inspect(resource), None)
            .map_err(|e| self.resource_error(resource, e))?;
        parse_state(&reply).ok_or_else(|| Error::Storage {
            message: format!(
                "The holders of \"{}\" in {} could not be read: the server's answer is not the \
                 inspect script's (is this server a Redis 7 or later, or Valkey?).",
                crate::key::display_resource(resource),
                self.name
            ),
            source: None,
        })
    }

    fn force_release(&self, resource: &[u8]) -> Result<usize> {
        self.check_lockable(resource)?;
        let count = self
            .transport
            .run(&ScriptCall::force_release(resource), None)
            .map_err(|e| self.resource_error(resource, e))?;
        crate::metrics::count(crate::metrics::Counter::ForceReleased, 1);
        Ok(usize::try_from(count).unwrap_or(0))
    }
}

/// `[kind, now, holders, waiters]` as `inspect.lua` encodes it; `None` for anything else.
fn parse_state(reply: &[u8]) -> Option<LockState> {
    let text = String::from_utf8_lossy(reply);
    let Value::Array(parts) = serde_json::from_str::<Value>(&text).ok()? else {
        return None;
    };
    let [Value::String(_kind), Value::String(_now), holders, waiters] = parts.as_slice() else {
        return None;
    };
    Some(LockState {
        holders: rows(holders).filter_map(holder).collect(),
        waiters: rows(waiters).filter_map(waiter).collect(),
    })
}

/// The rows of a list (cjson encodes an empty Lua table as `{}`).
fn rows(value: &Value) -> impl Iterator<Item = &[Value]> {
    let rows = match value {
        Value::Array(rows) => rows.as_slice(),
        _ => &[],
    };
    rows.iter()
        .filter_map(|row| row.as_array().map(Vec::as_slice))
}

/// `[digest, writes, expiry-ms, "acquired-ms TAB record"]`.
fn holder(row: &[Value]) -> Option<Holder> {
    let [Value::String(digest), Value::Bool(writes), Value::String(expiry), Value::String(record)] =
        row
    else {
        return None;
    };
    let (acquired, origin) = match record.split_once('\t') {
        Some((acquired, rest)) => (acquired.parse().ok(), Origin::parse(rest)),
        None => (None, Origin::default()),
    };
    Some(Holder {
        token_digest: digest.clone(),
        mode: if *writes {
            Mode::Exclusive
        } else {
            Mode::Shared
        },
        origin,
        acquired_at: acquired.map(from_millis),
        expires_at: expiry.parse().ok().map(from_millis),
    })
}

/// `[digest, "x" or "s", arrival-ms, record]`.
fn waiter(row: &[Value]) -> Option<Waiter> {
    let [Value::String(digest), Value::String(mode), Value::String(since), Value::String(record)] =
        row
    else {
        return None;
    };
    Some(Waiter {
        token_digest: digest.clone(),
        mode: if mode == "s" {
            Mode::Shared
        } else {
            Mode::Exclusive
        },
        origin: Origin::parse(record),
        since: since.parse().ok().map(from_millis),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_reads_into_holders_and_waiters() {
        let reply = br#"["zset","1000",[["abc",true,"5000","900\t42\thost-a\tjob 7"]],[["def","s","950","43\thost-b\t"]]]"#;
        let state = parse_state(reply).unwrap();
        let holder = &state.holders[0];
        assert_eq!(holder.mode, Mode::Exclusive);
        assert_eq!(holder.origin.pid, Some(42));
        assert_eq!(holder.origin.label.as_deref(), Some("job 7"));
        assert_eq!(holder.acquired_at, Some(from_millis(900)));
        assert_eq!(holder.expires_at, Some(from_millis(5000)));
        let waiter = &state.waiters[0];
        assert_eq!((waiter.mode, waiter.origin.pid), (Mode::Shared, Some(43)));
    }

    #[test]
    fn empty_lists_and_holders_without_records_read_too() {
        let state = parse_state(br#"["none","1000",{},{}]"#).unwrap();
        assert_eq!(state, LockState::default());
        let state = parse_state(br#"["zset","1",[["abc",false,"5",""]],{}]"#).unwrap();
        assert_eq!(state.holders[0].origin, Origin::default());
        assert_eq!(state.holders[0].acquired_at, None);
    }

    #[test]
    fn anything_else_is_no_state() {
        for reply in [&b"1"[..], b"", b"[1,2]", b"{\"a\":1}"] {
            assert!(parse_state(reply).is_none());
        }
    }
}
