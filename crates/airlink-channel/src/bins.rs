//! The uniform time grid of channel bins (slots), in exact integer time.
//!
//! Bin n covers [start(n), start(n + 1)) with start(n) = ⌈n·10⁹/B⌉ ns for B bins per second, so
//! a bin lasts exactly 1/B s on average even when 10⁹/B is not an integer (WIPEMU: B = 1500,
//! 666 666.67 ns), and [`BinGrid::index_at`] (⌊t·B/10⁹⌋) is its exact inverse:
//! `index_at(start(n)) == n`. The fading is evaluated at the bin centre (n + ½)/B s (f64).

use airlink_engine::Instant;

const NS_PER_S: u128 = 1_000_000_000;

/// A grid of `bins_per_second` bins per second starting at time 0.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct BinGrid {
    bins_per_second: u64,
}

impl BinGrid {
    /// A grid of `bins_per_second` (> 0) bins per second; `None` for 0.
    pub fn new(bins_per_second: u64) -> Option<Self> {
        (bins_per_second > 0).then_some(BinGrid { bins_per_second })
    }

    /// Bins per second B.
    pub fn bins_per_second(&self) -> u64 {
        self.bins_per_second
    }

    /// First nanosecond of bin `n`: ⌈n·10⁹/B⌉ (saturates at the end of time).
    pub fn start(&self, n: u64) -> Instant {
        let ns = (n as u128 * NS_PER_S).div_ceil(self.bins_per_second as u128);
        Instant::from_nanos(ns.min(u64::MAX as u128) as u64)
    }

    /// The bin containing instant `t`: ⌊t·B/10⁹⌋.
    pub fn index_at(&self, t: Instant) -> u64 {
        (t.as_nanos() as u128 * self.bins_per_second as u128 / NS_PER_S) as u64
    }

    /// The first bin starting at or after instant `t`.
    pub fn first_at_or_after(&self, t: Instant) -> u64 {
        let n = self.index_at(t);
        if self.start(n) < t {
            n + 1
        } else {
            n
        }
    }

    /// Centre of bin `n` in seconds, (n + ½)/B: where the fading is evaluated.
    pub fn centre_s(&self, n: u64) -> f64 {
        (n as f64 + 0.5) / self.bins_per_second as f64
    }

    /// Bin duration 1/B in seconds.
    pub fn duration_s(&self) -> f64 {
        1.0 / self.bins_per_second as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wipemu_bins_are_exact() {
        let g = BinGrid::new(1500).unwrap();
        assert_eq!(g.start(0), Instant::ZERO);
        assert_eq!(g.start(1).as_nanos(), 666_667);
        assert_eq!(g.start(3).as_nanos(), 2_000_000);
        assert_eq!(g.start(1500).as_nanos(), 1_000_000_000);
        for n in [0u64, 1, 2, 3, 1499, 1500, 123_456_789] {
            assert_eq!(g.index_at(g.start(n)), n);
            assert_eq!(
                g.index_at(Instant::from_nanos(g.start(n + 1).as_nanos() - 1)),
                n
            );
        }
        assert_eq!(g.first_at_or_after(Instant::ZERO), 0);
        assert_eq!(g.first_at_or_after(Instant::from_nanos(1)), 1);
        assert_eq!(g.first_at_or_after(g.start(7)), 7);
        assert!((g.centre_s(0) - 1.0 / 3000.0).abs() < 1e-18);
        assert_eq!(BinGrid::new(0), None);
    }
}
