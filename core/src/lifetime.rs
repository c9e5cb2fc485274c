//! A key's expiry, on the monotonic clock: wall-clock jumps (NTP, a VM resumed) never make a lock
//! look longer- or shorter-lived than it is.

use std::sync::atomic::Ordering;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use crate::sync::AtomicU64;
use crate::Ttl;

/// When a key stops being valid, if ever.
#[derive(Debug, Clone, Default)]
pub struct Lifetime {
    expires_at: Option<Instant>,
    /// While the background refresher keeps the lock alive, the expiry it last gave: it moves
    /// without this key being told, and counts over `expires_at`.
    follows: Option<Expiry>,
}

/// An expiry that another thread moves (the refresher's last extension of a lock), shared.
/// Lock-free: a `fork()` at any instant leaves it readable.
#[derive(Debug, Clone, Default)]
pub struct Expiry(Arc<AtomicU64>);

/// The origin of [`Expiry`]'s clock (an `Instant` cannot live in an atomic).
static ORIGIN: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Fixes the origin now (`crate::threads`).
pub(crate) fn set_up() {
    LazyLock::force(&ORIGIN);
}

impl Expiry {
    /// Moves the expiry to `at`.
    pub fn set(&self, at: Instant) {
        let nanos = at.saturating_duration_since(*ORIGIN).as_nanos();
        // 0 means "not set"; an expiry at the very origin is one nanosecond later.
        let nanos = u64::try_from(nanos).unwrap_or(u64::MAX).max(1);
        self.0.store(nanos, Ordering::Release);
    }

    /// The expiry, once set.
    pub fn get(&self) -> Option<Instant> {
        match self.0.load(Ordering::Acquire) {
            0 => None,
            nanos => ORIGIN.checked_add(std::time::Duration::from_nanos(nanos)),
        }
    }
}

impl Lifetime {
    /// Forgets the expiry, and stops following one (symfony/lock's `resetLifetime`).
    pub fn reset(&mut self) {
        self.expires_at = None;
        self.follows = None;
    }

    /// From now on the expiry is what `expiry` says, once it says anything.
    pub fn follow(&mut self, expiry: Expiry) {
        self.follows = Some(expiry);
    }

    /// Stops following; the expiry last given stays.
    pub fn unfollow(&mut self) {
        if let Some(at) = self.follows.take().and_then(|expiry| expiry.get()) {
            self.expires_at = Some(at);
        }
    }

    fn current(&self) -> Option<Instant> {
        self.follows
            .as_ref()
            .and_then(Expiry::get)
            .or(self.expires_at)
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

    /// Expires the key now unless it already has (symfony/lock's `reduceLifetime(0)`, or of a
    /// negative TTL). It no longer follows the refresher's expiry: that would move it again.
    pub fn expire_now(&mut self) {
        let now = Instant::now();
        let current = self.current();
        self.follows = None;
        self.expires_at = Some(current.map_or(now, |at| at.min(now)));
    }

    /// Expired `ago`: a key restored from another process that expired there that long ago keeps
    /// saying so (symfony/lock's Key does). The monotonic clock cannot go back further than the
    /// host's uptime; an expiry older than that is kept as the oldest instant it can name.
    pub fn expired_ago(&mut self, ago: Duration) {
        let now = Instant::now();
        let mut back = ago;
        let at = loop {
            if let Some(at) = now.checked_sub(back) {
                break at;
            }
            back /= 2;
        };
        self.follows = None;
        self.expires_at = Some(at);
    }

    /// Seconds until expiry (negative once past), or `None` when the key does not expire.
    pub fn remaining_secs(&self) -> Option<f64> {
        self.remaining_secs_at(Instant::now())
    }

    fn remaining_secs_at(&self, now: Instant) -> Option<f64> {
        self.current().map(|at| {
            if at >= now {
                at.duration_since(now).as_secs_f64()
            } else {
                -now.duration_since(at).as_secs_f64()
            }
        })
    }

    /// True once the expiry has passed.
    pub fn is_expired(&self) -> bool {
        self.current().is_some_and(|at| at <= Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn expiring_now_never_lengthens() {
        let mut life = Lifetime::default();
        life.expire_now();
        assert!(life.is_expired());
        let before = life.current();
        life.expire_now();
        assert_eq!(life.current(), before, "an earlier expiry stays");
        let mut followed = Lifetime::default();
        let expiry = Expiry::default();
        expiry.set(Instant::now() + Duration::from_secs(60));
        followed.follow(expiry.clone());
        followed.expire_now();
        expiry.set(Instant::now() + Duration::from_secs(120));
        assert!(followed.is_expired(), "the refresher no longer moves it");
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
    fn an_expiry_in_the_past_keeps_how_long_ago() {
        let mut life = Lifetime::default();
        life.expired_ago(Duration::from_secs(30));
        let left = life.remaining_secs().unwrap();
        assert!((-31.0..=-30.0).contains(&left), "{left}");
        life.expired_ago(Duration::from_secs(u64::MAX / 4));
        assert!(
            life.is_expired(),
            "beyond the clock's reach: as old as it goes"
        );
    }

    #[test]
    fn reset_forgets_the_expiry() {
        let mut life = Lifetime::default();
        life.reduce(ttl(1.0));
        life.reset();
        assert_eq!(life.remaining_secs(), None);
    }
}
