//! The engine behind a store class that runs either on a connection of Deadbolt's own or on the
//! application's PHP object (PdoStore, PostgreSqlStore): what each one may be called from.

use std::rc::Rc;

use deadbolt_core::{Member, RefusingStore, Store, StoreRef};

/// A store class's engine, by the connection it runs on.
pub(crate) enum Engine<N, P> {
    /// Deadbolt's own connection: callable from any thread (a combined store asks it alongside
    /// the others, the refresher extends its locks).
    Native(Rc<N>),
    /// The application's PHP object: called on PHP's thread only, never from `Drop`.
    Php(Rc<P>),
    /// Made from a setting it cannot work with (a DSN of another database): every call says so,
    /// as symfony/lock's stores do at their first connection rather than when made.
    Refused(Rc<RefusingStore>),
}

impl<N: Store + Sync + 'static, P: Store + 'static> Engine<N, P> {
    pub(crate) fn store(&self) -> &dyn Store {
        match self {
            Engine::Native(store) => store.as_ref(),
            Engine::Php(store) => store.as_ref(),
            Engine::Refused(store) => store.as_ref(),
        }
    }

    /// The store for a Lock.
    pub(crate) fn store_ref(&self) -> StoreRef {
        match self {
            Engine::Native(store) => StoreRef::Owned(store.clone()),
            Engine::Php(store) => StoreRef::Lent(store.clone()),
            Engine::Refused(store) => StoreRef::Owned(store.clone()),
        }
    }

    /// The store as a member of a combined store, and whether it calls PHP.
    pub(crate) fn member(&self) -> (Member, bool) {
        match self {
            Engine::Native(store) => (Member::Anywhere(store.clone()), false),
            Engine::Php(store) => (Member::Here(store.clone()), true),
            Engine::Refused(store) => (Member::Anywhere(store.clone()), false),
        }
    }
}
