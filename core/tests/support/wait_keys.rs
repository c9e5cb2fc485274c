//! Deadbolt's wait keys on the wire, as another process sees them (keys.rs lays them out), and
//! the steps of a waiter done by hand: for tests that arrange a queue without a waiting thread.

use std::thread;
use std::time::{Duration, Instant};

/// The key of a resource without a hash tag with the companion `what` (its tag at the end).
fn companion(resource: &str, what: &str) -> String {
    format!("{resource}#deadbolt:{what}{{{resource}}}")
}

/// The queue of waiters (token -> arrival).
pub fn queue(resource: &str) -> String {
    companion(resource, "queue")
}

/// The waiters' details (token -> "alive-until mode ttl-ms").
pub fn details(resource: &str) -> String {
    companion(resource, "waiters")
}

/// The records of recent hand-overs (token -> grant time).
pub fn handovers(resource: &str) -> String {
    companion(resource, "handovers")
}

/// The grant list of the waiter with `token`.
pub fn grant(resource: &str, token: &str) -> String {
    format!("{}:{token}", queue(resource))
}

/// The server's clock, ms.
pub fn server_ms(con: &mut redis::Connection) -> i64 {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query(con).unwrap();
    secs * 1000 + micros / 1000
}

/// Blocks until `count` waiters are queued on `resource`.
pub fn until_queued(con: &mut redis::Connection, resource: &str, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let queued: usize = redis::cmd("ZCARD").arg(queue(resource)).query(con).unwrap();
        if queued == count {
            return;
        }
        assert!(Instant::now() < deadline, "{count} waiters never queued");
        thread::sleep(Duration::from_millis(5));
    }
}

/// Queues a waiter by hand, as a waiting process's attempt would, alive for `alive_ms` more.
pub fn queue_by_hand(
    con: &mut redis::Connection,
    resource: &str,
    token: &str,
    mode: &str,
    alive_ms: i64,
) {
    let now = server_ms(con);
    let arrival: i64 = redis::cmd("ZCARD").arg(queue(resource)).query(con).unwrap();
    redis::cmd("ZADD")
        .arg(queue(resource))
        .arg(arrival)
        .arg(token)
        .exec(con)
        .unwrap();
    redis::cmd("HSET")
        .arg(details(resource))
        .arg(token)
        .arg(format!("{} {mode} 30000", now + alive_ms))
        .exec(con)
        .unwrap();
}
