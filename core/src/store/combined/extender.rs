//! The background refresher's view of a combined store: every member's extender, counted by the
//! strategy, on the refresher's thread (no PHP, no key object).

use std::sync::Arc;

use super::Strategy;
use crate::store::Extender;
use crate::{Error, Result, Ttl};

/// Extends a lock in every member; held while the strategy's share of them still hold it. A
/// member without an extender keeps its locks until they are released: it still holds it.
pub struct CombinedExtender {
    extenders: Vec<Option<Arc<dyn Extender>>>,
    strategy: Strategy,
}

impl CombinedExtender {
    pub fn new(extenders: Vec<Option<Arc<dyn Extender>>>, strategy: Strategy) -> Self {
        CombinedExtender {
            extenders,
            strategy,
        }
    }
}

impl Extender for CombinedExtender {
    fn extend(&self, resource: &[u8], token: &str, ttl: Ttl) -> Result<bool> {
        let outcomes: Vec<Result<bool>> = self
            .extenders
            .iter()
            .map(|e| {
                e.as_ref()
                    .map_or(Ok(true), |e| e.extend(resource, token, ttl))
            })
            .collect();
        let members = outcomes.len();
        let held = outcomes.iter().filter(|o| matches!(o, Ok(true))).count();
        let lost = outcomes.iter().filter(|o| matches!(o, Ok(false))).count();
        if self.strategy.is_met(held, members) {
            return Ok(true);
        }
        if !self.strategy.can_be_met(lost, members) {
            return Ok(false);
        }
        let reasons: Vec<String> = outcomes
            .iter()
            .filter_map(|o| o.as_ref().err().map(ToString::to_string))
            .collect();
        Err(Error::storage(
            format!(
                "Refreshing a lock in a combined store failed: {held} of {members} stores extended it ({}).",
                reasons.join("; ")
            ),
            "quorum not met",
        ))
    }
}
