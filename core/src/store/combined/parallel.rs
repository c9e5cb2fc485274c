//! Asking every member of a combined store: members that need nothing from the caller's thread (a
//! native Redis connection, a lock directory, this process's memory) are each asked on a scoped
//! thread of their own, at once, so the wall-clock time of one call is that of the slowest of them,
//! not the sum. Members that call PHP are asked first, on the caller's thread, while no member
//! thread exists (PHP code may fork).

use std::rc::Rc;

use crate::store::Store;
use crate::threads;
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

/// Runs `op` for every member with its own key (`keys[i]` for `members[i]`) and returns the
/// outcomes in the members' order: first the members that call PHP, one after another on the
/// caller's thread, then the others at once. A member whose call panicked, or that no thread could
/// be started for, answers a storage error.
///
/// No member thread runs while PHP code does: PHP code may `fork()`, and a child has none of its
/// parent's threads, so a scope still waiting for them would wait in the child for ever (and its
/// parent for the child). The price is that PHP members' time adds to the slowest native
/// member's instead of overlapping it; a quorum of native members is asked all at once as before.
pub fn ask_all<T: Send>(
    members: &[Member],
    keys: &mut [Key],
    op: &(dyn Fn(&dyn Store, &mut Key) -> Result<T> + Sync),
) -> Vec<Result<T>> {
    let mut outcomes: Vec<Option<Result<T>>> = members.iter().map(|_| None).collect();
    let mut anywhere = Vec::new();
    for (i, (member, key)) in members.iter().zip(keys.iter_mut()).enumerate() {
        match member {
            Member::Here(store) => outcomes[i] = Some(op(store.as_ref(), key)),
            Member::Anywhere(store) => anywhere.push((i, store.as_ref(), key)),
        }
    }
    for (i, outcome) in ask_at_once(anywhere, op) {
        outcomes[i] = Some(outcome);
    }
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

/// Asks members that may run anywhere, each on a scoped thread of its own but the last, which
/// runs on the caller's (one thread fewer to start). No PHP runs meanwhile.
fn ask_at_once<'a, T: Send>(
    members: Vec<(usize, &'a (dyn Store + Sync), &'a mut Key)>,
    op: &(dyn Fn(&dyn Store, &mut Key) -> Result<T> + Sync),
) -> Vec<(usize, Result<T>)> {
    std::thread::scope(|scope| {
        let mut members = members;
        let last = members.pop();
        let mut spawned = Vec::new();
        let mut outcomes = Vec::new();
        for (i, store, key) in members {
            let started = threads::without_signals(|| {
                std::thread::Builder::new()
                    .name("deadbolt-combined".into())
                    .spawn_scoped(scope, move || op(store, key))
            });
            match started {
                Ok(handle) => spawned.push((i, store, handle)),
                Err(e) => outcomes.push((
                    i,
                    Err(Error::storage(
                        format!("No thread could be started for {}", store.name()),
                        e,
                    )),
                )),
            }
        }
        if let Some((i, store, key)) = last {
            outcomes.push((i, op(store, key)));
        }
        for (i, store, handle) in spawned {
            let outcome = handle.join().unwrap_or_else(|_| {
                Err(Error::storage(
                    format!("Asking {} failed unexpectedly", store.name()),
                    "the call panicked",
                ))
            });
            outcomes.push((i, outcome));
        }
        outcomes
    })
}
