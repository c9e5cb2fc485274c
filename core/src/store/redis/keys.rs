//! The names of Deadbolt's own Redis keys beside a resource's lock key (its "companions"), all in
//! the resource's Redis Cluster hash slot so that one script may touch them together:
//!
//! - `deadbolt:fence:{r}`, the fencing counter (made on the first getFencingToken());
//! - `deadbolt:waiters:{r}`, the queue of waiters (token -> arrival), while someone waits;
//! - `deadbolt:waiting:{r}`, the waiters' details (token -> "alive-until mode ttl");
//! - `deadbolt:handovers:{r}`, recent hand-overs (token -> grant time), for taking back unread
//!   ones;
//! - `deadbolt:waiters:{r}:TOKEN`, a waiter's grant list (the queue's name, then the token).
//!
//! The queue, the details and the hand-over records vanish [`super::protocol::ALIVE_FOR`] after the
//! last waiter last asked; a grant list nobody reads lives up to
//! [`super::protocol::GRANT_LIST_LIFETIME`].

use super::protocol::GRANT_SEPARATOR;

/// The resource's fencing counter.
pub fn fence(resource: &[u8]) -> Vec<u8> {
    companion(b"deadbolt:fence:", resource)
}

/// The queue of waiters (token -> arrival).
pub fn queue(resource: &[u8]) -> Vec<u8> {
    companion(b"deadbolt:waiters:", resource)
}

/// The waiters' details (token -> "alive-until mode ttl").
pub fn waiters(resource: &[u8]) -> Vec<u8> {
    companion(b"deadbolt:waiting:", resource)
}

/// The recent hand-overs (token -> grant time).
pub fn handovers(resource: &[u8]) -> Vec<u8> {
    companion(b"deadbolt:handovers:", resource)
}

/// The grant list of the waiter with `token`, named after the resource's queue (as the release
/// scripts name it: a client-side key prefix then applies to both alike).
pub fn grant_list(queue: &[u8], token: &str) -> Vec<u8> {
    [queue, GRANT_SEPARATOR.as_bytes(), token.as_bytes()].concat()
}

/// A key of Deadbolt's own for `resource`, in the resource's Redis Cluster hash slot. The resource
/// becomes the hash tag (`prefix{resource}`), unless it has a hash tag of its own, which must stay
/// the first one: then `prefix=resource`. The two shapes never collide (`{` or `=` right after
/// the prefix).
fn companion(prefix: &[u8], resource: &[u8]) -> Vec<u8> {
    let mut name = Vec::with_capacity(prefix.len() + resource.len() + 2);
    name.extend_from_slice(prefix);
    if hash_tag(resource).is_some() {
        name.push(b'=');
        name.extend_from_slice(resource);
    } else {
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

    /// Redis Cluster's slot of `key` (CRC16/XMODEM of its hash tag, mod 16384).
    fn slot(key: &[u8]) -> u16 {
        let hashed = hash_tag(key).unwrap_or(key);
        crc16::State::<crc16::XMODEM>::calculate(hashed) % 16384
    }

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

    #[test]
    fn the_slot_function_agrees_with_redis() {
        // Values from `CLUSTER KEYSLOT`.
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
    }

    #[test]
    fn every_companion_shares_its_resource_slot() {
        for resource in [
            &b"orders:42"[..],
            b"user:{42}:cart",
            b"{x}",
            b"\xff\x00{",
            b"{{x}",
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

    /// Resources without a hash tag whose name contains `}`, and the empty name, cannot share a
    /// slot with any other key: their slot hashes the whole name, which no other key's hash tag
    /// can equal. Only Redis Cluster cares (a cluster must refuse them).
    #[test]
    fn some_resources_cannot_be_co_slotted() {
        for resource in [&b""[..], b"a}b{", b"a{}b"] {
            assert_ne!(slot(&queue(resource)), slot(resource));
        }
    }

    #[test]
    fn names_are_what_symfony_lock_fleets_and_older_deadbolts_saw() {
        assert_eq!(fence(b"orders:42"), b"deadbolt:fence:{orders:42}");
        assert_eq!(queue(b""), b"deadbolt:waiters:{}");
        assert_eq!(
            grant_list(&queue(b"r"), "T0k+/="),
            b"deadbolt:waiters:{r}:T0k+/="
        );
        assert_eq!(fence(b"user:{42}:cart"), b"deadbolt:fence:=user:{42}:cart");
        assert_eq!(queue(b"{x}"), b"deadbolt:waiters:={x}");
        assert_ne!(queue(b"{x}"), queue(b"x"));
        // No tag: an empty pair of braces, or a closing brace first.
        assert_eq!(queue(b"a{}b"), b"deadbolt:waiters:{a{}b}");
        assert_eq!(queue(b"a}b{"), b"deadbolt:waiters:{a}b{}");
    }
}
