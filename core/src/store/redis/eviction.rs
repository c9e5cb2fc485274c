//! The check a new native connection makes once: an eviction policy that may drop live lock keys
//! is worth a warning, since it silently breaks mutual exclusion.

/// Eviction policies that may drop a live lock key.
const EVICTING_POLICIES: [&str; 2] = ["allkeys-", "volatile-"];

/// Warns when the server may evict lock keys. CONFIG may be refused (ACLs, managed services):
/// then nothing is said. `Err` when the connection failed on the way (it is then unusable).
pub fn eviction_warning(
    connection: &mut redis::Connection,
    name: &str,
) -> redis::RedisResult<Option<String>> {
    let reply: Vec<String> = match redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .query(connection)
    {
        Ok(reply) => reply,
        Err(e) if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() => return Err(e),
        Err(_) => return Ok(None),
    };
    let Some(policy) = reply.get(1) else {
        return Ok(None);
    };
    Ok(EVICTING_POLICIES
        .iter()
        .any(|prefix| policy.starts_with(prefix))
        .then(|| {
            format!(
                "Redis at {name} uses maxmemory-policy {policy}: under memory pressure it may evict live lock keys, which silently breaks mutual exclusion. Use noeviction for lock data."
            )
        }))
}
