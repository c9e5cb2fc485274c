//! The background refresher's view of a combined store: every member's extender, asked at once and
//! counted by the strategy, on the refresher's threads (no PHP, no key object).

use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;

use super::Strategy;
use crate::store::Extender;
use crate::sync::AtomicBool;
use crate::threads;
use crate::{Error, Result, Ttl};

/// Extends a lock in every member; held while the strategy's share of them still hold it. A
/// member without an extender keeps its locks until they are released: it still holds it.
///
/// Members are asked on threads of their own, and the answer comes as soon as the strategy is
/// decided: a member that stopped answering delays neither the others nor the verdict (a quorum
/// lock survives one stalled master). Its call goes on until its own timeout; until then that
/// member is not asked again (it counts as failed), so stalled calls never pile up.
pub struct CombinedExtender {
    members: Vec<Option<MemberExtender>>,
    strategy: Strategy,
}

struct MemberExtender {
    extender: Arc<dyn Extender>,
    /// An extension through this member is still on its way.
    busy: Arc<AtomicBool>,
}

/// How far the members' answers got.
#[derive(Default)]
struct Tally {
    held: usize,
    lost: usize,
    reasons: Vec<String>,
}

impl CombinedExtender {
    pub fn new(extenders: Vec<Option<Arc<dyn Extender>>>, strategy: Strategy) -> Self {
        let members = extenders
            .into_iter()
            .map(|e| {
                e.map(|extender| MemberExtender {
                    extender,
                    busy: Arc::default(),
                })
            })
            .collect();
        CombinedExtender { members, strategy }
    }

    /// Starts every member's extension; what could not start is counted at once. Never inlined:
    /// its frame names these detached threads in scripts/valgrind.supp.
    #[inline(never)]
    fn start_all(
        &self,
        resource: &[u8],
        token: &str,
        ttl: Ttl,
        tally: &mut Tally,
    ) -> mpsc::Receiver<Result<bool>> {
        let (sender, receiver) = mpsc::channel();
        for member in &self.members {
            let Some(member) = member else {
                tally.held += 1;
                continue;
            };
            if member.busy.swap(true, Ordering::AcqRel) {
                tally
                    .reasons
                    .push("a member is still busy with the previous extension".into());
                continue;
            }
            let (extender, busy, sender) = (
                Arc::clone(&member.extender),
                Arc::clone(&member.busy),
                sender.clone(),
            );
            let (resource, token) = (resource.to_vec(), token.to_owned());
            let started = threads::without_signals(|| {
                std::thread::Builder::new()
                    .name("deadbolt-combined".into())
                    .spawn(move || {
                        let outcome = extender.extend(&resource, &token, ttl);
                        busy.store(false, Ordering::Release);
                        // The verdict may have come without this answer: nobody listens then.
                        let _ = sender.send(outcome);
                    })
            });
            if let Err(e) = started {
                member.busy.store(false, Ordering::Release);
                tally
                    .reasons
                    .push(format!("no thread could be started: {e}"));
            }
        }
        receiver
    }
}

impl Extender for CombinedExtender {
    fn extend(&self, resource: &[u8], token: &str, ttl: Ttl) -> Result<bool> {
        let members = self.members.len();
        let mut tally = Tally::default();
        let answers = self.start_all(resource, token, ttl, &mut tally);
        loop {
            if self.strategy.is_met(tally.held, members) {
                return Ok(true);
            }
            let failed = tally.lost + tally.reasons.len();
            if !self.strategy.can_be_met(failed, members) {
                break;
            }
            match answers.recv() {
                Ok(Ok(true)) => tally.held += 1,
                Ok(Ok(false)) => tally.lost += 1,
                Ok(Err(e)) => tally.reasons.push(e.to_string()),
                // Every started member answered.
                Err(mpsc::RecvError) => break,
            }
        }
        if !self.strategy.can_be_met(tally.lost, members) {
            return Ok(false);
        }
        Err(Error::storage(
            format!(
                "Refreshing a lock in a combined store failed: {} of {members} stores extended it ({}).",
                tally.held,
                tally.reasons.join("; ")
            ),
            "quorum not met",
        ))
    }
}
