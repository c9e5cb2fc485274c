//! A key's expiry, on the monotonic clock: wall-clock jumps (NTP, a VM resumed) never make a lock
//! look longer- or shorter-lived than it is.

use std::time::Instant;

use crate::Ttl;

/// When a key stops being valid, if ever.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lifetime {
    expires_at: Option<Instant>,
}

impl Lifetime {
    /// Forgets the expiry (symfony/lock's `resetLifetime`).
    pub fn reset(&mut self) {
        self.expires_at = None;
    }

    /// Moves the expiry to `now + ttl` unless it is already sooner (symfony/lock's `reduceLifetime`).
    pub fn reduce(&mut self, ttl: Ttl) {
        self.reduce_from(Instant::now(), ttl);
    }

    /// As [`Lifetime::reduce`], counting the TTL from `now`: a lock given at some unknown moment
    /// after `now` (a hand-over to a waiter) then never looks longer-lived than it is.
    pub fn reduce_from(&mut self, now: Instant, ttl: Ttl) {
        // Ttl caps at ~31 years, so this cannot overflow a monotonic clock; if it ever did,
        // keeping the current expiry is the conservative choice.
        if let Some(candidate) = now.checked_add(ttl.duration()) {
            if self.expires_at.is_none_or(|current| candidate < current) {
                self.expires_at = Some(candidate);
            }
        }
    }

    /// Seconds until expiry (negative once past), or `None` when the key does not expire.
    pub fn remaining_secs(&self) -> Option<f64> {
        self.remaining_secs_at(Instant::now())
    }

    fn remaining_secs_at(&self, now: Instant) -> Option<f64> {
        self.expires_at.map(|at| {
            if at >= now {
                at.duration_since(now).as_secs_f64()
            } else {
                -now.duration_since(at).as_secs_f64()
            }
        })
    }

    /// True once the expiry has passed.
    pub fn is_expired(&self) -> bool {
        self.expires_at.is_some_and(|at| at <= Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ttl(secs: f64) -> Ttl {
        Ttl::from_secs(secs).unwrap()
    }

    #[test]
    fn a_fresh_lifetime_never_expires() {
        let life = Lifetime::default();
        assert_eq!(life.remaining_secs(), None);
        assert!(!life.is_expired());
    }

    #[test]
    fn reduce_only_ever_shortens() {
        let now = Instant::now();
        let mut life = Lifetime::default();
        life.reduce_from(now, ttl(10.0));
        life.reduce_from(now, ttl(100.0));
        let left = life.remaining_secs_at(now).unwrap();
        assert!((left - 10.0).abs() < 1e-9, "{left}");
        life.reduce_from(now, ttl(1.0));
        let left = life.remaining_secs_at(now).unwrap();
        assert!((left - 1.0).abs() < 1e-9, "{left}");
    }

    #[test]
    fn remaining_goes_negative_after_expiry() {
        let now = Instant::now();
        let mut life = Lifetime::default();
        life.reduce_from(now, ttl(1.0));
        let later = now + Duration::from_secs(3);
        let left = life.remaining_secs_at(later).unwrap();
        assert!((left + 2.0).abs() < 1e-9, "{left}");
    }

    #[test]
    fn reset_forgets_the_expiry() {
        let mut life = Lifetime::default();
        life.reduce(ttl(1.0));
        life.reset();
        assert_eq!(life.remaining_secs(), None);
    }
}
