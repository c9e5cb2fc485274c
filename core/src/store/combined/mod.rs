//! A lock held by a quorum of independent stores (symfony/lock's `CombinedStore`): typically
//! three or five Redis masters that do not replicate each other, so that losing a minority of
//! them loses no lock. Every member is asked at once (parallel.rs), the strategy counts the
//! answers (strategy.rs), and a lock whose acquisition took longer than its TTL is not held
//! (symfony/lock's rule). Each member writes its own data format, so a symfony/lock
//! `CombinedStore` over the same servers and strategy agrees on every lock.
//!
//! Each member gets a key of its own with the combined key's resource and token (a member may
//! keep state in it, as the flock store keeps its open file); those keys live in the combined
//! key's state only while some member keeps state, so a key over Redis members alone can still
//! travel to another process.

mod extender;
mod parallel;
mod strategy;

use std::sync::Arc;

pub use parallel::Member;
pub use strategy::Strategy;

use crate::holder::LockState;
use crate::store::InspectingStore;
use crate::store::{expired_on_refresh, expired_on_save, Capabilities, ExpiringStore, Extender};
use crate::store::{Mode, Store};
use crate::{Error, Key, Result, Ttl};

/// The member keys of a combined key, kept in its state while a member keeps state of its own.
struct MemberKeys(Vec<Key>);

/// Locks that count as held when the strategy's share of the members hold them.
pub struct CombinedStore {
    members: Vec<Member>,
    strategy: Strategy,
    name: String,
}

impl CombinedStore {
    /// A combined store over `members` (at least one).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] without members.
    pub fn new(members: Vec<Member>, strategy: Strategy) -> Result<Self> {
        if members.is_empty() {
            return Err(Error::invalid_argument(
                "A combined store needs at least one store.",
            ));
        }
        let names: Vec<&str> = members.iter().map(|m| m.store().name()).collect();
        let name = format!("CombinedStore({}: {})", strategy.name(), names.join(", "));
        Ok(CombinedStore {
            members,
            strategy,
            name,
        })
    }

    /// Whether every member can be asked from any thread (then so can this store).
    pub fn callable_anywhere(&self) -> bool {
        self.members
            .iter()
            .all(|m| matches!(m, Member::Anywhere(_)))
    }

    /// The members' keys for `key`: those it keeps, or new ones with its resource and token, each
    /// with no expiry yet (each member sets the one it gives).
    fn member_keys(&self, key: &mut Key) -> Result<Vec<Key>> {
        let mut keys = match key.take_state::<MemberKeys>() {
            Some(MemberKeys(keys)) if keys.len() == self.members.len() => keys,
            _ => {
                let token = key.token()?.as_str().to_owned();
                self.members
                    .iter()
                    .map(|_| Key::import(key.resource().to_vec(), token.clone()))
                    .collect::<Result<_>>()?
            }
        };
        keys.iter_mut().for_each(Key::reset_lifetime);
        Ok(keys)
    }

    /// Puts the members' keys back into `key` when a member keeps state in one, and gives `key`
    /// the soonest expiry among them (each member's lock lives that long at least).
    fn keep(key: &mut Key, keys: Vec<Key>) {
        key.reset_lifetime();
        for member_key in &keys {
            if let Some(left) = member_key.remaining_lifetime() {
                match Ttl::from_secs(left) {
                    Ok(left) => key.reduce_lifetime(left),
                    Err(_) => key.expire_now(),
                }
            }
        }
        if keys.iter().any(Key::is_process_bound) {
            key.set_state(MemberKeys(keys));
        }
    }

    /// Runs `op` on every member with its key, at once.
    fn ask<T: Send>(
        &self,
        key: &mut Key,
        op: &(dyn Fn(&dyn Store, &mut Key) -> Result<T> + Sync),
    ) -> Result<Vec<Result<T>>> {
        let mut keys = self.member_keys(key)?;
        let outcomes = parallel::ask_all(&self.members, &mut keys, op);
        Self::keep(key, keys);
        Ok(outcomes)
    }

    /// What a take or an extension that the strategy did not accept fails with: a storage error
    /// naming each member that failed only when those failures alone defeat the strategy (the
    /// stores, not a rival, decided it); otherwise some member refused because someone else holds
    /// or contends for the lock, and the answer is symfony/lock's: a conflict ("not now"), or for
    /// an extension, not held.
    fn not_met(&self, key: &Key, outcomes: &[Result<()>], not_held: bool) -> Error {
        let failed = outcomes
            .iter()
            .filter(|o| o.as_ref().is_err_and(|e| !e.is_conflict()))
            .count();
        if self.strategy.can_be_met(failed, self.members.len()) {
            return if not_held {
                Error::not_held(key.display_resource(), &self.name)
            } else {
                Error::conflict(key.display_resource(), &self.name)
            };
        }
        let held = outcomes.iter().filter(|o| o.is_ok()).count();
        let reasons: Vec<String> = self
            .members
            .iter()
            .zip(outcomes)
            .filter_map(|(m, o)| {
                o.as_ref()
                    .err()
                    .map(|e| format!("{}: {e}", m.store().name()))
            })
            .collect();
        Error::storage(
            format!(
                "The \"{}\" lock is not held in {}: {held} of {} stores took it, which {} does not accept ({}).",
                key.display_resource(),
                self.name,
                self.members.len(),
                self.strategy.name(),
                reasons.join("; ")
            ),
            "quorum not met",
        )
    }

    /// Counts `outcomes`; when the strategy is not met, releases what was taken (symfony/lock's
    /// clean-up) and fails.
    fn settle(&self, key: &mut Key, outcomes: &[Result<()>], not_held: bool) -> Result<()> {
        let successes = outcomes.iter().filter(|o| o.is_ok()).count();
        if self.strategy.is_met(successes, self.members.len()) {
            return Ok(());
        }
        let error = self.not_met(key, outcomes, not_held);
        let _ = self.delete(key);
        Err(error)
    }
}

impl Store for CombinedStore {
    fn name(&self) -> &str {
        &self.name
    }

    fn save(&self, key: &mut Key, mode: Mode, ttl: Option<Ttl>) -> Result<()> {
        let outcomes = self.ask(key, &|store, key| store.save(key, mode, ttl))?;
        // The remaining-TTL rule: a lock that expired on the way (in any member) is not held.
        if key.is_expired() {
            return Err(expired_on_save(self, key));
        }
        self.settle(key, &outcomes, false)
    }

    fn put_off_expiration(&self, key: &mut Key, ttl: Ttl) -> Result<()> {
        let outcomes = self.ask(key, &|store, key| store.put_off_expiration(key, ttl))?;
        if key.is_expired() {
            let _ = self.delete(key);
            return Err(expired_on_refresh(self, key));
        }
        self.settle(key, &outcomes, true)
    }

    /// Releases the lock in every member. Fails only when the members that could not be asked
    /// are enough that the strategy may still count the lock as held.
    fn delete(&self, key: &mut Key) -> Result<()> {
        let outcomes = self.ask(key, &|store, key| store.delete(key))?;
        let failed: Vec<String> = self
            .members
            .iter()
            .zip(&outcomes)
            .filter_map(|(m, o)| {
                o.as_ref()
                    .err()
                    .map(|e| format!("{}: {e}", m.store().name()))
            })
            .collect();
        if failed.is_empty() || !self.strategy.is_met(failed.len(), self.members.len()) {
            return Ok(());
        }
        Err(Error::storage(
            format!(
                "Releasing the \"{}\" lock in {} failed: {}",
                key.display_resource(),
                self.name,
                failed.join("; ")
            ),
            "release not confirmed",
        ))
    }

    fn exists(&self, key: &Key) -> Result<bool> {
        if let Some(MemberKeys(keys)) = key.state::<MemberKeys>() {
            // Members that keep state answer from it (a lock file's handle): ask with those keys.
            let held = self
                .members
                .iter()
                .zip(keys)
                .filter(|(m, k)| m.store().exists(k).unwrap_or(false))
                .count();
            return Ok(self.strategy.is_met(held, self.members.len()));
        }
        let mut asked = Key::import(key.resource().to_vec(), key.token()?.as_str().to_owned())?;
        let outcomes = self.ask(&mut asked, &|store, key| store.exists(key))?;
        let held = outcomes.iter().filter(|o| matches!(o, Ok(true))).count();
        Ok(self.strategy.is_met(held, self.members.len()))
    }

    fn capabilities(&self) -> Capabilities<'_> {
        let expires = self
            .members
            .iter()
            .any(|m| m.store().capabilities().expiring.is_some());
        let inspects = self
            .members
            .iter()
            .all(|m| m.store().capabilities().inspecting.is_some());
        Capabilities {
            expiring: expires.then_some(self as &dyn ExpiringStore),
            inspecting: inspects.then_some(self as &dyn InspectingStore),
            ..Capabilities::default()
        }
    }
}

impl ExpiringStore for CombinedStore {
    /// A refresher's extender when every member whose locks expire has one (none when such a
    /// member cannot be reached without PHP). A member whose locks never expire needs none.
    fn extender(&self) -> Option<Arc<dyn Extender>> {
        let extenders = self
            .members
            .iter()
            .map(|m| match m.store().capabilities().expiring {
                None => Some(None),
                Some(expiring) => expiring.extender().map(Some),
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Arc::new(extender::CombinedExtender::new(
            extenders,
            self.strategy,
        )))
    }

    fn take_warning(&self) -> Option<String> {
        self.members
            .iter()
            .find_map(|m| m.store().capabilities().expiring?.take_warning())
    }
}

/// An operator's view over the members, one after another (no quorum to reach quickly): a holder
/// or waiter is listed once however many members it holds or waits on; a forced release goes to
/// every member, even past a failing one, whose error is then the answer.
impl InspectingStore for CombinedStore {
    fn inspect(&self, resource: &[u8]) -> Result<LockState> {
        let mut state = LockState::default();
        for member in &self.members {
            let Some(inspecting) = member.store().capabilities().inspecting else {
                continue;
            };
            let found = inspecting.inspect(resource)?;
            for holder in found.holders {
                if !state.holders.iter().any(|h| {
                    same_one(
                        &h.token_digest,
                        &h.origin,
                        &holder.token_digest,
                        &holder.origin,
                    )
                }) {
                    state.holders.push(holder);
                }
            }
            for waiter in found.waiters {
                if !state.waiters.iter().any(|w| {
                    same_one(
                        &w.token_digest,
                        &w.origin,
                        &waiter.token_digest,
                        &waiter.origin,
                    )
                }) {
                    state.waiters.push(waiter);
                }
            }
        }
        Ok(state)
    }

    fn force_release(&self, resource: &[u8]) -> Result<usize> {
        let mut most = 0;
        let mut failure = None;
        for member in &self.members {
            let Some(inspecting) = member.store().capabilities().inspecting else {
                continue;
            };
            match inspecting.force_release(resource) {
                Ok(count) => most = most.max(count),
                Err(e) => failure = failure.or(Some(e)),
            }
        }
        failure.map_or(Ok(most), Err)
    }
}

/// One holder seen on two members: the same token (by digest), or, where a store shows no token
/// (flock), the same process.
fn same_one(
    digest: &str,
    origin: &crate::holder::Origin,
    other_digest: &str,
    other: &crate::holder::Origin,
) -> bool {
    if digest.is_empty() || other_digest.is_empty() {
        return origin.pid.is_some() && origin == other;
    }
    digest == other_digest
}
