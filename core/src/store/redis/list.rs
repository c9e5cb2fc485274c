//! An operator's listing of a Redis store's locks (`deadbolt list`): the sorted sets whose names
//! begin with a prefix (SCAN with `TYPE zset`), Deadbolt's companion keys left out (they hold
//! [`keys::MARK`]), each inspected; those with neither holder nor waiter are not listed. Another
//! application's sorted sets under the same prefix show as resources without holders and are
//! therefore left out too. A Redis Cluster is scanned on every primary its slot map names.

use super::keys;
use super::native::NativeTransport;
use super::transport::Transport;
use super::RedisStore;
use crate::holder::LockState;
use crate::store::InspectingStore;
use crate::{Error, Result};

impl RedisStore<NativeTransport> {
    /// The resources whose names begin with `prefix` that someone holds or waits for now, in name
    /// order, with their holders and waiters; on a Redis Cluster, every primary's.
    ///
    /// # Errors
    /// Storage when a server fails.
    pub fn list(&self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, LockState)>> {
        let names = self
            .transport
            .scan_sorted_sets(&glob_prefix(prefix))
            .map_err(|e| {
                Error::storage(
                    format!("The locks in {} could not be listed: {e}.", self.name),
                    e,
                )
            })?;
        // On a cluster, a name whose companions could not share its slot is no lock of ours
        // (the store refuses to lock it).
        let cluster = self.transport.cluster();
        let mut names: Vec<Vec<u8>> = names
            .into_iter()
            .filter(|name| !keys::reserved(name) && (!cluster || keys::co_slotted(name)))
            .collect();
        names.sort();
        names.dedup();
        let mut listed = Vec::new();
        for name in names {
            let state = self.inspect(&name)?;
            if !state.holders.is_empty() || !state.waiters.is_empty() {
                listed.push((name, state));
            }
        }
        Ok(listed)
    }
}

/// A SCAN pattern for the names that begin with `prefix`: its glob characters escaped, then `*`.
pub(crate) fn glob_prefix(prefix: &[u8]) -> Vec<u8> {
    let mut pattern = Vec::with_capacity(prefix.len() + 1);
    for &byte in prefix {
        if matches!(byte, b'*' | b'?' | b'[' | b']' | b'\\' | b'^' | b'-') {
            pattern.push(b'\\');
        }
        pattern.push(byte);
    }
    pattern.push(b'*');
    pattern
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_matches_itself_only() {
        assert_eq!(glob_prefix(b""), b"*");
        assert_eq!(glob_prefix(b"orders:"), b"orders:*");
        assert_eq!(glob_prefix(br"a*b?[c]\"), br"a\*b\?\[c\]\\*");
    }
}
