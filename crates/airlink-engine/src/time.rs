//! Integer-nanosecond time. `Instant` is a point on the run's clock (0 = start of the run);
//! `Duration` is a non-negative span. Both are plain `u64` nanoseconds.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in time, in nanoseconds since the start of the run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

/// A non-negative span of time in nanoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(u64);

impl Instant {
    pub const ZERO: Instant = Instant(0);
    /// Later than any instant a run reaches (about 584 years).
    pub const FAR_FUTURE: Instant = Instant(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Self {
        Instant(ns)
    }
    pub const fn from_micros(us: u64) -> Self {
        Instant(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        Instant(ms * 1_000_000)
    }
    pub fn from_secs_f64(s: f64) -> Self {
        Instant((s * 1e9).round() as u64)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// Time elapsed since `earlier`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
    pub fn checked_sub(self, d: Duration) -> Option<Instant> {
        self.0.checked_sub(d.0).map(Instant)
    }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);
    pub const MAX: Duration = Duration(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    pub const fn from_micros(us: u64) -> Self {
        Duration(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000_000)
    }
    /// Rounds to the nearest nanosecond; negative or NaN inputs give zero.
    pub fn from_secs_f64(s: f64) -> Self {
        if s.is_nan() || s <= 0.0 {
            Duration(0)
        } else {
            Duration((s * 1e9).round().min(u64::MAX as f64) as u64)
        }
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    /// Transmission time of `bits` at `rate_bps` bit/s, rounded up to whole nanoseconds so a
    /// link never runs faster than its rate.
    pub fn for_bits(bits: u64, rate_bps: u64) -> Self {
        assert!(rate_bps > 0, "rate must be positive");
        let ns = (bits as u128 * 1_000_000_000u128).div_ceil(rate_bps as u128);
        Duration(ns.min(u64::MAX as u128) as u64)
    }
    pub fn saturating_mul(self, k: u64) -> Self {
        Duration(self.0.saturating_mul(k))
    }
    pub fn saturating_sub(self, other: Duration) -> Self {
        Duration(self.0.saturating_sub(other.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}
impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Panics (in debug) if `rhs` is later; use [`Instant::saturating_since`] when unsure.
    fn sub(self, rhs: Instant) -> Duration {
        debug_assert!(self.0 >= rhs.0, "instant subtraction went negative");
        Duration(self.0.saturating_sub(rhs.0))
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}
impl AddAssign for Duration {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9} s", self.as_secs_f64())
    }
}
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns >= 1_000_000_000 {
            write!(f, "{} s", ns as f64 / 1e9)
        } else if ns >= 1_000_000 {
            write!(f, "{} ms", ns as f64 / 1e6)
        } else if ns >= 1_000 {
            write!(f, "{} us", ns as f64 / 1e3)
        } else {
            write!(f, "{ns} ns")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transmission_time_rounds_up() {
        // 1500 B at 9.6 kbit/s = 1.25 s exactly (spec F).
        assert_eq!(
            Duration::for_bits(12_000, 9_600),
            Duration::from_millis(1250)
        );
        // 100 B at 9.6 kbit/s = 83.333... ms, rounded up to the next nanosecond.
        assert_eq!(Duration::for_bits(800, 9_600).as_nanos(), 83_333_334);
    }

    #[test]
    fn arithmetic_saturates_instead_of_wrapping() {
        assert_eq!(
            Instant::FAR_FUTURE + Duration::from_secs(1),
            Instant::FAR_FUTURE
        );
        assert_eq!(
            Instant::ZERO.saturating_since(Instant::from_millis(5)),
            Duration::ZERO
        );
    }
}
