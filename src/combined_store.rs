// PHP takes parameter names from the Rust names; symfony/lock spells them in camelCase.
#![allow(non_snake_case)]

//! `Deadbolt\Store\CombinedStore` and its strategies (`Deadbolt\Strategy\ConsensusStrategy`,
//! `UnanimousStrategy`): symfony/lock's quorum store over Deadbolt's engine (core's
//! `store::combined`), whose members are asked at once.

use std::rc::Rc;

use deadbolt_core::{CombinedStore, Member, Store, StoreRef, Strategy};
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendClassObject, ZendHashTable, Zval};
use ext_php_rs::zend::ClassEntry;

use crate::error_map::{invalid_argument, to_php, type_error};
use crate::key::PhpKey;
use crate::redis_store::PhpRedisStore;
use crate::store_contract::{store_class_methods, Contract};
use crate::user_store::UserStore;

#[php_class]
#[php(name = "Deadbolt\\Store\\CombinedStore")]
#[php(flags = ClassFlags::Final)]
#[php(implements(crate::interfaces::PhpInterfaceSharedLockStoreInterface))]
pub struct PhpCombinedStore {
    inner: Rc<CombinedStore>,
    /// A member talks through a PHP object: the store may then be called only inside PHP's calls.
    lent: bool,
}

impl PhpCombinedStore {
    /// The store as a lock (or another combined store) holds it.
    pub(crate) fn store_ref(&self) -> StoreRef {
        let store: Rc<dyn Store> = self.inner.clone();
        if self.lent {
            StoreRef::Lent(store)
        } else {
            StoreRef::Owned(store)
        }
    }

    fn engine(&self) -> &dyn Store {
        self.inner.as_ref()
    }
}

store_class_methods!(PhpCombinedStore {
    /// `$stores`: Deadbolt stores (or objects implementing `Deadbolt\Store\PersistingStoreInterface`),
    /// typically one RedisStore per independent master; `$strategy`: a ConsensusStrategy or an
    /// UnanimousStrategy (Deadbolt's or symfony/lock's).
    pub fn __construct(stores: &ZendHashTable, strategy: &Zval) -> PhpResult<Self> {
        let strategy = strategy_arg(strategy)?;
        let mut members = Vec::with_capacity(stores.len());
        let mut lent = false;
        for store in stores.values() {
            let (member, calls_php) = member_arg(&mut store.shallow_clone())?;
            lent |= calls_php;
            members.push(member);
        }
        let inner = CombinedStore::new(members, strategy).map_err(to_php)?;
        Ok(PhpCombinedStore {
            inner: Rc::new(inner),
            lent,
        })
    }
});

/// The strategy a `$strategy` argument stands for: Deadbolt's two classes, or symfony/lock's
/// two (and their subclasses: the same arithmetic). Any other value is a `\TypeError`: a strategy
/// of its own would be PHP code run for every count, from every member's thread.
fn strategy_arg(strategy: &Zval) -> PhpResult<Strategy> {
    const KNOWN: [(&str, Strategy); 4] = [
        ("Deadbolt\\Strategy\\ConsensusStrategy", Strategy::Consensus),
        ("Deadbolt\\Strategy\\UnanimousStrategy", Strategy::Unanimous),
        (
            "Symfony\\Component\\Lock\\Strategy\\ConsensusStrategy",
            Strategy::Consensus,
        ),
        (
            "Symfony\\Component\\Lock\\Strategy\\UnanimousStrategy",
            Strategy::Unanimous,
        ),
    ];
    let known = strategy.object().and_then(|object| {
        KNOWN.iter().find_map(|(class, known)| {
            ClassEntry::try_find(class)
                .is_some_and(|ce| object.instance_of(ce))
                .then_some(*known)
        })
    });
    known.ok_or_else(|| {
        type_error(format!(
            "Deadbolt\\Store\\CombinedStore::__construct(): Argument #2 ($strategy) must be a Deadbolt\\Strategy\\ConsensusStrategy or UnanimousStrategy (or symfony/lock's), {} given",
            crate::args::debug_type(strategy)
        ))
    })
}

/// More than half of the stores (symfony/lock's `ConsensusStrategy`).
#[php_class]
#[php(name = "Deadbolt\\Strategy\\ConsensusStrategy")]
#[php(flags = ClassFlags::Final)]
#[php(implements(crate::interfaces::PhpInterfaceStrategyInterface))]
pub struct PhpConsensusStrategy;

#[php_impl]
impl PhpConsensusStrategy {
    pub fn __construct() -> Self {
        PhpConsensusStrategy
    }

    pub fn is_met(&self, numberOfSuccess: i64, numberOfItems: i64) -> bool {
        counted(
            Strategy::Consensus,
            numberOfSuccess,
            numberOfItems,
            Strategy::is_met,
        )
    }

    pub fn can_be_met(&self, numberOfFailure: i64, numberOfItems: i64) -> bool {
        counted(
            Strategy::Consensus,
            numberOfFailure,
            numberOfItems,
            Strategy::can_be_met,
        )
    }
}

/// Every store (symfony/lock's `UnanimousStrategy`).
#[php_class]
#[php(name = "Deadbolt\\Strategy\\UnanimousStrategy")]
#[php(flags = ClassFlags::Final)]
#[php(implements(crate::interfaces::PhpInterfaceStrategyInterface))]
pub struct PhpUnanimousStrategy;

#[php_impl]
impl PhpUnanimousStrategy {
    pub fn __construct() -> Self {
        PhpUnanimousStrategy
    }

    pub fn is_met(&self, numberOfSuccess: i64, numberOfItems: i64) -> bool {
        counted(
            Strategy::Unanimous,
            numberOfSuccess,
            numberOfItems,
            Strategy::is_met,
        )
    }

    pub fn can_be_met(&self, numberOfFailure: i64, numberOfItems: i64) -> bool {
        counted(
            Strategy::Unanimous,
            numberOfFailure,
            numberOfItems,
            Strategy::can_be_met,
        )
    }
}

/// `rule` of `strategy` on PHP's integers (negative counts count as none).
fn counted(
    strategy: Strategy,
    count: i64,
    items: i64,
    rule: fn(Strategy, usize, usize) -> bool,
) -> bool {
    let count = usize::try_from(count).unwrap_or(0);
    let items = usize::try_from(items).unwrap_or(0);
    rule(strategy, count, items)
}

impl crate::zend_object::DebugInfo for PhpCombinedStore {
    fn debug_info(&self, table: &mut ZendHashTable) {
        // The members' names: redacted endpoints, never a user or a password.
        let _ = table.insert("store", self.engine().name());
    }
}

/// A member of a combined store: where it may be called, and whether it calls PHP (then so does
/// the combined store). A value that is no store is symfony/lock's InvalidArgumentException.
fn member_arg(value: &mut Zval) -> PhpResult<(Member, bool)> {
    let given = crate::args::debug_type(value);
    let not_a_store = || {
        invalid_argument(format!(
            "The store must implement \"{}\". Got \"{given}\".",
            crate::user_store::INTERFACE
        ))
    };
    let object = value.object_mut().ok_or_else(not_a_store)?;
    if let Some(store) = crate::stores::plain_store(object) {
        return Ok((Member::Anywhere(store), false));
    }
    if let Some(redis) = ZendClassObject::<PhpRedisStore>::from_zend_obj(object) {
        return Ok(redis.member());
    }
    if let Some(pdo) = ZendClassObject::<crate::pdo_store::PhpPdoStore>::from_zend_obj(object) {
        return Ok(pdo.member());
    }
    if let Some(mysql) = ZendClassObject::<crate::mysql_store::PhpMysqlStore>::from_zend_obj(object)
    {
        return Ok(mysql.member());
    }
    if let Some(postgres) =
        ZendClassObject::<crate::postgres_store::PhpPostgreSqlStore>::from_zend_obj(object)
    {
        return Ok(postgres.member());
    }
    let store = match ZendClassObject::<PhpCombinedStore>::from_zend_obj(object) {
        Some(combined) => combined.store_ref(),
        // It calls PHP: never from Drop (the Lock's end-of-request path releases it).
        None => StoreRef::Lent(Rc::new(UserStore::of(object).ok_or_else(not_a_store)?)),
    };
    Ok(match store {
        StoreRef::Owned(store) => (Member::Here(store), false),
        StoreRef::Lent(store) => (Member::Here(store), true),
    })
}
