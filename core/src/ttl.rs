//! A validated time-to-live. Every TTL that enters the engine passes through [`Ttl::from_secs`],
//! so stores never see zero, negative, NaN or infinite durations.

use std::time::Duration;

use crate::{Error, Result};

/// Longest TTL accepted: about 31 years. Far beyond any lock's purpose, and small enough that
/// "now + ttl" fits every clock and Redis' millisecond scores.
const MAX_SECS: f64 = 1e9;

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
        if secs.is_finite() && secs > 0.0 && secs <= MAX_SECS {
            let duration = Duration::try_from_secs_f64(secs).map_err(|_| invalid(secs))?;
            if !duration.is_zero() {
                return Ok(Ttl(duration));
            }
        }
        Err(invalid(secs))
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

fn invalid(secs: f64) -> Error {
    Error::InvalidTtl {
        message: format!(
            "The TTL must be a positive, finite number of seconds (at most {MAX_SECS:e}), {secs} given."
        ),
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
}
