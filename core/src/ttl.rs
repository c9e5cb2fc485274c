//! A validated time-to-live. Every TTL that enters the engine passes through [`Ttl::from_secs`],
//! so stores never see zero, negative, NaN or infinite durations.

use std::time::Duration;

use crate::{Error, Result};

/// Longest TTL accepted: about 31 years. Far beyond any lock's purpose, and small enough that
/// "now + ttl" fits every clock and Redis' millisecond scores.
const MAX_SECS: f64 = 1e9;

/// The TTL a lock gets when its caller names none, and a Redis store's initial TTL: symfony/lock's
/// (`LockFactory::createLock`, `RedisStore::__construct`), the one number the extension's default
/// arguments are written with.
pub const DEFAULT_TTL_SECS: f64 = 300.0;

/// A positive, finite lock duration.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Ttl(Duration);

impl Ttl {
    /// Validates a TTL given in seconds.
    ///
    /// # Errors
    /// [`Error::InvalidTtl`] when `secs` is NaN, infinite, zero, negative or above ~31 years.
    /// Zero is refused on purpose: symfony/lock silently reads 0 as "no expiry".
    pub fn from_secs(secs: f64) -> Result<Self> {
        Self::named(secs, "The TTL")
    }

    /// As [`Ttl::from_secs`], for a duration with another name in messages (`maxHold`).
    ///
    /// # Errors
    /// [`Error::InvalidTtl`] naming `what` and why.
    pub fn named(secs: f64, what: &str) -> Result<Self> {
        let why = if secs.is_nan() {
            "not a number"
        } else if secs.is_infinite() {
            "not finite"
        } else if secs <= 0.0 {
            "not positive"
        } else if secs > MAX_SECS {
            "above the maximum of 1e9 seconds (about 31 years)"
        } else {
            match Duration::try_from_secs_f64(secs) {
                Ok(duration) if !duration.is_zero() => return Ok(Ttl(duration)),
                _ => "below the resolution of 1 nanosecond",
            }
        };
        Err(Error::InvalidTtl {
            message: format!(
                "{what} must be a positive, finite number of seconds: {} is {why}.",
                shown(secs)
            ),
        })
    }

    /// A TTL from the duration of one (as kept in an atomic); `None` for zero.
    pub(crate) fn from_duration(duration: Duration) -> Option<Self> {
        (!duration.is_zero()).then_some(Ttl(duration))
    }

    /// The TTL as a duration.
    pub fn duration(self) -> Duration {
        self.0
    }

    /// The TTL in seconds, as given.
    pub fn as_secs(self) -> f64 {
        self.0.as_secs_f64()
    }
}

/// A number of seconds as a message shows it: short (`5e-324`, not 325 digits), as PHP prints it.
pub fn shown(secs: f64) -> String {
    let plain = format!("{secs}");
    if plain.len() <= 20 {
        plain
    } else {
        format!("{secs:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_positive_finite_seconds() {
        assert_eq!(Ttl::from_secs(0.25).map(Ttl::as_secs).ok(), Some(0.25));
        assert!(Ttl::from_secs(300.0).is_ok());
    }

    #[test]
    fn refuses_zero_negative_nan_infinite_and_huge() {
        for bad in [
            0.0,
            -0.0,
            -1.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e12,
            1e-12,
        ] {
            let err = Ttl::from_secs(bad).err();
            assert!(
                matches!(err, Some(Error::InvalidTtl { .. })),
                "{bad} should be refused"
            );
        }
    }

    #[test]
    fn a_refusal_says_what_and_why_in_a_short_number() {
        let message = |secs: f64, what: &str| Ttl::named(secs, what).unwrap_err().to_string();
        assert_eq!(
            message(5e-324, "The TTL"),
            "The TTL must be a positive, finite number of seconds: 5e-324 is below the resolution of 1 nanosecond."
        );
        assert_eq!(
            message(-2.5, "maxHold"),
            "maxHold must be a positive, finite number of seconds: -2.5 is not positive."
        );
        assert!(message(f64::INFINITY, "The TTL").contains("inf is not finite"));
        assert!(message(1e12, "The TTL").contains("above the maximum"));
    }
}
