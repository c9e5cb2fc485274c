//! Locks acknowledged by replicas: with `replicas=N|majority|all` on a DSN, a write that takes or
//! extends a lock counts only once that many replicas have it (`WAIT`, on the connection that
//! wrote, within `replicas_timeout`). Without it, a lock written to a primary that dies before its
//! replicas have it is lost at failover, and a second holder appears.

use std::fmt;
use std::time::Duration;

/// How long an acknowledgement may take by default: a replica on a healthy network answers in
/// well under a millisecond; one that lags by a second is one a failover would lose writes from.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);

/// How many replicas must have a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// This many.
    Count(u32),
    /// More than half of the replicas connected to the primary at the time.
    Majority,
    /// Every replica connected to the primary at the time.
    All,
}

impl Wanted {
    /// The DSN value: a positive number, `majority` or `all`.
    pub fn parse(value: &str) -> Result<Self, String> {
        match value {
            "majority" => Ok(Wanted::Majority),
            "all" => Ok(Wanted::All),
            _ => match value.parse::<u32>() {
                Ok(n) if n > 0 => Ok(Wanted::Count(n)),
                _ => Err(format!(
                    "replicas must be a positive number, \"majority\" or \"all\", not \"{}\"",
                    value.chars().take(40).collect::<String>()
                )),
            },
        }
    }

    /// The number to wait for, given how many replicas the primary has. A primary without any
    /// cannot acknowledge to "majority" or "all" either: at least one is always wanted, or a lost
    /// replica would silently turn the guarantee off.
    fn of(self, connected: usize) -> u32 {
        let connected = u32::try_from(connected).unwrap_or(u32::MAX);
        match self {
            Wanted::Count(n) => n,
            Wanted::Majority => connected / 2 + 1,
            Wanted::All => connected.max(1),
        }
    }
}

/// The acknowledgement a DSN asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaAck {
    pub wanted: Wanted,
    pub timeout: Duration,
}

/// Too few replicas had the write in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shortfall {
    pub acknowledged: i64,
    pub wanted: u32,
    pub timeout: Duration,
}

impl fmt::Display for Shortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the lock was written, but only {} of the {} replicas wanted acknowledged it within {} s \
             (replicas option)",
            self.acknowledged,
            self.wanted,
            self.timeout.as_secs_f64()
        )
    }
}

impl ReplicaAck {
    /// Waits until the writes of `connection` so far are on enough replicas (`None`), or the
    /// timeout passed (the shortfall). Runs on the connection that wrote: `WAIT` counts only the
    /// writes of its own client.
    ///
    /// # Errors
    /// The connection's error when a command fails.
    pub fn check(
        &self,
        connection: &mut redis::Connection,
    ) -> redis::RedisResult<Option<Shortfall>> {
        let wanted = match self.wanted {
            Wanted::Count(n) => n,
            relative => relative.of(connected_replicas(connection)?),
        };
        let millis = u64::try_from(self.timeout.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let acknowledged: i64 = redis::cmd("WAIT")
            .arg(wanted)
            .arg(millis)
            .query(connection)?;
        Ok((acknowledged < i64::from(wanted)).then_some(Shortfall {
            acknowledged,
            wanted,
            timeout: self.timeout,
        }))
    }
}

/// [`ReplicaAck::check`] when the DSN asks for an acknowledgement and the lock was written.
///
/// # Errors
/// The connection's error when a command fails.
pub fn check(
    ack: Option<ReplicaAck>,
    wrote: bool,
    connection: &mut redis::Connection,
) -> redis::RedisResult<Option<Shortfall>> {
    match ack {
        Some(ack) if wrote => ack.check(connection),
        _ => Ok(None),
    }
}

/// How many replicas the primary lists (`ROLE`: "master", its offset, one entry per replica).
fn connected_replicas(connection: &mut redis::Connection) -> redis::RedisResult<usize> {
    let role: redis::Value = redis::cmd("ROLE").query(connection)?;
    Ok(match role {
        redis::Value::Array(parts) => match parts.get(2) {
            Some(redis::Value::Array(replicas)) => replicas.len(),
            _ => 0,
        },
        _ => 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_is_a_positive_count_majority_or_all() {
        assert_eq!(Wanted::parse("2"), Ok(Wanted::Count(2)));
        assert_eq!(Wanted::parse("majority"), Ok(Wanted::Majority));
        assert_eq!(Wanted::parse("all"), Ok(Wanted::All));
        for bad in ["0", "-1", "some", ""] {
            assert!(Wanted::parse(bad).unwrap_err().contains("positive number"));
        }
    }

    #[test]
    fn relative_counts_follow_the_replicas_and_never_ask_for_none() {
        assert_eq!(Wanted::Majority.of(0), 1);
        assert_eq!(Wanted::Majority.of(2), 2);
        assert_eq!(Wanted::Majority.of(3), 2);
        assert_eq!(Wanted::All.of(0), 1);
        assert_eq!(Wanted::All.of(3), 3);
        assert_eq!(Wanted::Count(2).of(0), 2);
    }
}
