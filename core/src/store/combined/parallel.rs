//! Asking every member of a combined store at once: members that need nothing from the caller's
//! thread (a native Redis connection, a lock directory, this process's memory) are each asked on
//! a scoped thread of their own, the others (which call PHP) on the caller's thread meanwhile.
//! The wall-clock time of one call is then that of the slowest member, not the sum of them.

use std::rc::Rc;

use crate::store::Store;
use crate::{Error, Key, Result};

/// One store of a combined store, by where it may be called.
pub enum Member {
    /// Callable from any thread: asked alongside the others.
    Anywhere(Rc<dyn Store + Sync>),
    /// Callable only on the caller's thread (it talks through a PHP object).
    Here(Rc<dyn Store>),
}

impl Member {
    /// The store.
    pub fn store(&self) -> &dyn Store {
        match self {
            Member::Anywhere(store) => store.as_ref(),
            Member::Here(store) => store.as_ref(),
        }
    }
}

/// Runs `op` for every member with its own key (`keys[i]` for `members[i]`), at once, and
/// returns the outcomes in the members' order. A member whose call panicked, or that no thread
/// could be started for, answers a storage error.
pub fn ask_all<T: Send>(
    members: &[Member],
    keys: &mut [Key],
    op: &(dyn Fn(&dyn Store, &mut Key) -> Result<T> + Sync),
) -> Vec<Result<T>> {
    let mut outcomes: Vec<Option<Result<T>>> = members.iter().map(|_| None).collect();
    std::thread::scope(|scope| {
        let mut here = Vec::new();
        let mut spawned = Vec::new();
        // The last member that may run anywhere runs here instead: one thread fewer to start.
        let last_anywhere = members
            .iter()
            .rposition(|m| matches!(m, Member::Anywhere(_)));
        for (i, (member, key)) in members.iter().zip(keys.iter_mut()).enumerate() {
            match member {
                Member::Anywhere(store) if Some(i) != last_anywhere => {
                    let store: &(dyn Store + Sync) = store.as_ref();
                    let started = std::thread::Builder::new()
                        .name("deadbolt-combined".into())
                        .spawn_scoped(scope, move || op(store, key));
                    match started {
                        Ok(handle) => spawned.push((i, handle)),
                        Err(e) => {
                            outcomes[i] = Some(Err(Error::storage(
                                format!("No thread could be started for {}", store.name()),
                                e,
                            )))
                        }
                    }
                }
                member => here.push((i, member.store(), key)),
            }
        }
        for (i, store, key) in here {
            outcomes[i] = Some(op(store, key));
        }
        for (i, handle) in spawned {
            outcomes[i] = Some(handle.join().unwrap_or_else(|_| {
                Err(Error::storage(
                    format!("Asking {} failed unexpectedly", members[i].store().name()),
                    "the call panicked",
                ))
            }));
        }
    });
    outcomes
        .into_iter()
        .map(|outcome| {
            outcome.unwrap_or_else(|| {
                Err(Error::storage(
                    "A member of a combined store was not asked",
                    "no outcome",
                ))
            })
        })
        .collect()
}
