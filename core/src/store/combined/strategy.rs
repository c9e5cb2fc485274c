//! When a combined store's answers make a lock held: symfony/lock's two strategies, with its
//! arithmetic, so that a fleet mixing Deadbolt and symfony/lock agrees on who holds what.

/// How many of a combined store's members must agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// More than half of them (symfony/lock's `ConsensusStrategy`).
    Consensus,
    /// Every one (symfony/lock's `UnanimousStrategy`).
    Unanimous,
}

impl Strategy {
    /// Whether `successes` of `members` answers are enough.
    pub fn is_met(self, successes: usize, members: usize) -> bool {
        match self {
            Strategy::Consensus => successes > members / 2,
            Strategy::Unanimous => successes == members,
        }
    }

    /// Whether the strategy can still be met after `failures` of `members` answers failed.
    pub fn can_be_met(self, failures: usize, members: usize) -> bool {
        match self {
            Strategy::Consensus => 2 * failures < members,
            Strategy::Unanimous => failures == 0,
        }
    }

    /// The strategy's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Consensus => "consensus",
            Strategy::Unanimous => "unanimous",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Strategy::{Consensus, Unanimous};

    #[test]
    fn consensus_needs_more_than_half() {
        assert!(Consensus.is_met(2, 3));
        assert!(!Consensus.is_met(1, 3));
        assert!(!Consensus.is_met(2, 4));
        assert!(Consensus.is_met(3, 4));
        assert!(Consensus.can_be_met(1, 3));
        assert!(!Consensus.can_be_met(2, 3));
        assert!(!Consensus.can_be_met(2, 4));
        assert!(Consensus.can_be_met(1, 4));
    }

    #[test]
    fn unanimous_needs_everyone() {
        assert!(Unanimous.is_met(3, 3));
        assert!(!Unanimous.is_met(2, 3));
        assert!(Unanimous.can_be_met(0, 3));
        assert!(!Unanimous.can_be_met(1, 3));
    }
}
