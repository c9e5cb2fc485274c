//! The names of Deadbolt's own Redis keys beside a resource's lock key (its "companions").
//!
//! Each companion is the resource's name, then [`MARK`], then what it is:
//!
//! - `r#deadbolt:fence`, the fencing counter (made on the first getFencingToken());
//! - `r#deadbolt:queue`, the queue of waiters (token -> arrival), while someone waits;
//! - `r#deadbolt:waiters`, the waiters' details (token -> "alive-until mode ttl");
//! - `r#deadbolt:handovers`, recent hand-overs (token -> grant time), for taking back unread
//!   ones;
//! - `r#deadbolt:holders`, the holders' records (token -> when, pid, host, label), for an
//!   operator's `inspect`; it lives as long as the lock;
//! - `r#deadbolt:queue:TOKEN`, a waiter's grant list (the queue's name, then the token).
//!
//! A semaphore on `r` keeps symfony/semaphore's two sorted sets, `{r}:time` and `{r}:weight`
//! ([`semaphore_times`], [`semaphore_weights`]), and its waiters in companions of `{r}` (the name
//! both begin with): `{r}#deadbolt:squeue`, `{r}#deadbolt:swaiters` (token -> "alive-until weight
//! limit ttl"), `{r}#deadbolt:shandovers`, and the grant lists `{r}#deadbolt:squeue:TOKEN`. Their
//! kinds are not a lock's, so a lock named `{r}` and the semaphore `r` share nothing.
//!
//! Three rules shape the names:
//!
//! - **No resource is another's bookkeeping.** A resource name may be any string, so a companion
//!   can only be told apart by something no resource contains: [`MARK`] is reserved (the store
//!   refuses a resource whose name holds it, [`reserved`]). Because the mark has no border (no
//!   prefix of it is also a suffix), its first occurrence in a companion ends the resource's name:
//!   two resources never share a companion, and no companion is a resource.
//! - **The application's key pattern covers them.** Each companion begins with its resource, so a
//!   Redis ACL that grants the application's keys (`~myapp:*`) grants Deadbolt's too.
//! - **One Redis Cluster hash slot per resource**, so one script may touch them together. A
//!   resource with a hash tag (`user:{42}:cart`) keeps it first in every companion; one without
//!   becomes the tag, at the end (`orders:42#deadbolt:queue{orders:42}`).
//!
//! The queue, the details and the hand-over records vanish [`super::protocol::ALIVE_FOR`] after the
//! last waiter last asked; a grant list nobody reads lives up to
//! [`super::protocol::GRANT_LIST_LIFETIME`]; the fencing counter
//! [`super::protocol::FENCE_KEPT_FOR`] past the hold it fenced.

use super::protocol::GRANT_SEPARATOR;

/// What every companion key holds right after its resource's name, and no resource may hold.
pub const MARK: &str = "#deadbolt:";

/// The resource's fencing counter.
pub fn fence(resource: &[u8]) -> Vec<u8> {
    companion(resource, b"fence")
}

/// The queue of waiters (token -> arrival).
pub fn queue(resource: &[u8]) -> Vec<u8> {
    companion(resource, b"queue")
}

/// The waiters' details (token -> "alive-until mode ttl").
pub fn waiters(resource: &[u8]) -> Vec<u8> {
    companion(resource, b"waiters")
}

/// The holders' records (token -> "acquired-ms TAB pid TAB host TAB label").
pub fn holders(resource: &[u8]) -> Vec<u8> {
    companion(resource, b"holders")
}

/// The recent hand-overs (token -> grant time).
pub fn handovers(resource: &[u8]) -> Vec<u8> {
    companion(resource, b"handovers")
}

/// A semaphore's holders and their expiries (Unix seconds), symfony/semaphore's `{r}:time`.
pub fn semaphore_times(resource: &[u8]) -> Vec<u8> {
    [&semaphore_base(resource)[..], b":time"].concat()
}

/// A semaphore's holders and their weights, symfony/semaphore's `{r}:weight`.
pub fn semaphore_weights(resource: &[u8]) -> Vec<u8> {
    [&semaphore_base(resource)[..], b":weight"].concat()
}

/// A semaphore's queue of waiters (token -> arrival).
pub fn semaphore_queue(resource: &[u8]) -> Vec<u8> {
    companion(&semaphore_base(resource), b"squeue")
}

/// A semaphore's waiters' details (token -> "alive-until weight limit ttl").
pub fn semaphore_waiters(resource: &[u8]) -> Vec<u8> {
    companion(&semaphore_base(resource), b"swaiters")
}

/// A semaphore's recent hand-overs (token -> grant time).
pub fn semaphore_handovers(resource: &[u8]) -> Vec<u8> {
    companion(&semaphore_base(resource), b"shandovers")
}

/// `{r}`: how symfony/semaphore names a semaphore's keys (the resource as their hash tag).
fn semaphore_base(resource: &[u8]) -> Vec<u8> {
    [&b"{"[..], resource, b"}"].concat()
}

/// Whether a semaphore on `resource` can keep all its keys in one Redis Cluster hash slot: every
/// one begins with `{r}`, so they share its hash tag unless that is empty (an empty resource, or
/// one that begins with `}`), as symfony/semaphore's own two keys do.
pub fn semaphore_co_slotted(resource: &[u8]) -> bool {
    hash_tag(&semaphore_base(resource)).is_some()
}

/// The grant list of the waiter with `token`, named after the resource's queue (as the release
/// scripts name it: a client-side key prefix then applies to both alike).
pub fn grant_list(queue: &[u8], token: &str) -> Vec<u8> {
    [queue, GRANT_SEPARATOR.as_bytes(), token.as_bytes()].concat()
}

/// Whether `resource` holds [`MARK`], which only Deadbolt's own keys may hold.
pub fn reserved(resource: &[u8]) -> bool {
    resource
        .windows(MARK.len())
        .any(|window| window == MARK.as_bytes())
}

/// Whether every companion of `resource` can share its Redis Cluster hash slot: a resource with
/// a hash tag of its own, or one without braces that is not empty. Any other brace opens or
/// closes the companions' tag in the wrong place, and an empty tag hashes the whole name (the
/// tests check this rule against [`slot`]).
pub fn co_slotted(resource: &[u8]) -> bool {
    hash_tag(resource).is_some()
        || (!resource.is_empty() && !resource.iter().any(|b| matches!(b, b'{' | b'}')))
}

/// Redis Cluster's hash slot of `key`: CRC16/XMODEM of its hash tag (or of the whole key), mod
/// 16384.
pub fn slot(key: &[u8]) -> u16 {
    let hashed = hash_tag(key).unwrap_or(key);
    crc16::State::<crc16::XMODEM>::calculate(hashed) % SLOTS
}

/// How many hash slots a Redis Cluster has.
pub const SLOTS: u16 = 16384;

/// `resource`, the mark, `kind`, and the resource as hash tag unless it has one of its own.
/// The kinds are prefix-free (none begins another), and none holds a brace.
fn companion(resource: &[u8], kind: &[u8]) -> Vec<u8> {
    let mut name = Vec::with_capacity(2 * resource.len() + MARK.len() + kind.len() + 2);
    name.extend_from_slice(resource);
    name.extend_from_slice(MARK.as_bytes());
    name.extend_from_slice(kind);
    if hash_tag(resource).is_none() {
        name.push(b'{');
        name.extend_from_slice(resource);
        name.push(b'}');
    }
    name
}

/// The part of `key` Redis Cluster hashes when it is not the whole key: what lies between the
/// first `{` and the first `}` after it, when that is not empty.
fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|b| *b == b'{')?;
    let len = key[open + 1..].iter().position(|b| *b == b'}')?;
    (len > 0).then(|| &key[open + 1..open + 1 + len])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_companions(resource: &[u8]) -> Vec<Vec<u8>> {
        let queue = queue(resource);
        vec![
            fence(resource),
            waiters(resource),
            handovers(resource),
            grant_list(&queue, "T0k+/="),
            queue,
        ]
    }

    /// Names chosen to trip a naive scheme: hash tags, stray braces, the old companion names,
    /// names that end like the mark begins, one resource that is another plus a tag.
    const AWKWARD: [&[u8]; 14] = [
        b"orders:42",
        b"user:{42}:cart",
        b"{x}",
        b"x",
        b"x{x}",
        b"\xff\x00{",
        b"{{x}",
        b"a{}b",
        b"a}b{",
        b"",
        b"r#",
        b"r#deadbolt",
        b"deadbolt:waiters:{x}",
        b"x#deadbolt{x}",
    ];

    #[test]
    fn the_slot_function_agrees_with_redis() {
        // Values from `CLUSTER KEYSLOT`.
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
    }

    #[test]
    fn the_mark_has_no_border() {
        let mark = MARK.as_bytes();
        for len in 1..mark.len() {
            assert_ne!(mark[..len], mark[mark.len() - len..], "border of {len}");
        }
    }

    #[test]
    fn every_companion_shares_its_resource_slot() {
        for resource in [
            &b"orders:42"[..],
            b"user:{42}:cart",
            b"{x}",
            b"\xff\x00",
            b"{{x}",
            b"x{x}",
        ] {
            for companion in all_companions(resource) {
                assert_eq!(
                    slot(&companion),
                    slot(resource),
                    "{:?} for {:?}",
                    String::from_utf8_lossy(&companion),
                    String::from_utf8_lossy(resource)
                );
            }
        }
    }

    /// Resources without a hash tag whose name holds a brace, and the empty name, cannot share a
    /// slot with a key that begins with them: the resource's `{` opens the companion's tag too, or
    /// its `}` closes the tag the companion opens, or an empty tag hashes the whole name. Only Redis Cluster cares (a cluster must
    /// refuse them).
    #[test]
    fn some_resources_cannot_be_co_slotted() {
        for resource in [&b""[..], b"a}b{", b"a{}b", b"\xff\x00{", b"a}b"] {
            assert_ne!(slot(&queue(resource)), slot(resource));
        }
    }

    /// The rule a cluster store refuses names by agrees with the slots themselves.
    #[test]
    fn co_slotted_names_are_exactly_those_whose_companions_share_the_slot() {
        for resource in AWKWARD.iter().chain(&[&b"a{b"[..], b"a}b", b"{}", b"}{x}"]) {
            let shared = all_companions(resource)
                .iter()
                .all(|companion| slot(companion) == slot(resource));
            assert_eq!(
                co_slotted(resource),
                shared,
                "{:?}",
                String::from_utf8_lossy(resource)
            );
        }
    }

    #[test]
    fn every_companion_begins_with_its_resource() {
        for resource in AWKWARD {
            for companion in all_companions(resource) {
                assert!(companion.starts_with(resource));
            }
        }
    }

    #[test]
    fn no_companion_is_a_resource_or_another_resources_companion() {
        let mut seen = std::collections::HashMap::new();
        for resource in AWKWARD.into_iter().filter(|r| !reserved(r)) {
            for companion in all_companions(resource) {
                assert!(reserved(&companion));
                if let Some(other) = seen.insert(companion.clone(), resource) {
                    panic!(
                        "{:?} belongs to {:?} and {:?}",
                        String::from_utf8_lossy(&companion),
                        String::from_utf8_lossy(other),
                        String::from_utf8_lossy(resource)
                    );
                }
            }
        }
    }

    #[test]
    fn only_names_holding_the_mark_are_reserved() {
        assert!(reserved(b"x#deadbolt:queue{x}"));
        assert!(reserved(b"#deadbolt:"));
        assert!(!reserved(b"deadbolt:fence:{x}"));
        assert!(!reserved(b"x#deadbolt"));
        assert!(!reserved(b""));
    }

    #[test]
    fn names_read_as_documented() {
        assert_eq!(fence(b"orders:42"), b"orders:42#deadbolt:fence{orders:42}");
        assert_eq!(queue(b""), b"#deadbolt:queue{}");
        assert_eq!(
            grant_list(&queue(b"r"), "T0k+/="),
            b"r#deadbolt:queue{r}:T0k+/="
        );
        assert_eq!(fence(b"user:{42}:cart"), b"user:{42}:cart#deadbolt:fence");
        assert_eq!(waiters(b"{x}"), b"{x}#deadbolt:waiters");
        // No tag: an empty pair of braces, or a closing brace first.
        assert_eq!(handovers(b"a{}b"), b"a{}b#deadbolt:handovers{a{}b}");
    }
}
