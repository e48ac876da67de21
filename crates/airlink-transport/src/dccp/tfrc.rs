//! TFRC arithmetic (RFC 5348): the throughput equation, its inverse, the initial window and
//! the loss interval history.

/// RFC 5348 §4.5: t_mbi, the longest inter-packet interval under TFRC, seconds.
pub const T_MBI: f64 = 64.0;

/// Loss interval weights w_0..w_7 (RFC 5348 §5.4).
pub const WEIGHTS: [f64; 8] = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];

/// Closed intervals kept (I_1..I_8).
pub const HISTORY: usize = 8;

/// The TFRC throughput equation, bytes/s, with b = 1 and t_RTO = 4R:
/// X = s / (R·√(2bp/3) + t_RTO·3·√(3bp/8)·p·(1 + 32p²)). `s` bytes, `r` seconds.
/// Infinite for p = 0.
pub fn throughput(s: f64, r: f64, p: f64) -> f64 {
    let b = 1.0;
    let t_rto = 4.0 * r;
    let den = r * (2.0 * b * p / 3.0).sqrt()
        + t_rto * 3.0 * (3.0 * b * p / 8.0).sqrt() * p * (1.0 + 32.0 * p * p);
    s / den
}

/// The loss event rate p for which [`throughput`] equals `x` (bisection on log p, 60 steps),
/// clamped to [1e-8, 1].
pub fn inverse(s: f64, r: f64, x: f64) -> f64 {
    let (mut lo, mut hi) = (1e-8f64, 1.0f64);
    if throughput(s, r, lo) <= x {
        return lo;
    }
    if throughput(s, r, hi) >= x {
        return hi;
    }
    for _ in 0..60 {
        let mid = (lo * hi).sqrt();
        if throughput(s, r, mid) > x {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo * hi).sqrt()
}

/// RFC 5348 §4.2 initial window W_init = min(4s, max(2s, 4380 B)), bytes.
pub fn initial_window(s: f64) -> f64 {
    (4.0 * s).min((2.0 * s).max(4380.0))
}

/// Loss intervals in packets: the open interval I_0 and up to [`HISTORY`] closed ones, newest
/// first.
#[derive(Clone, Debug, Default)]
pub struct LossIntervals {
    closed: std::collections::VecDeque<f64>,
}

impl LossIntervals {
    pub fn new() -> Self {
        Self::default()
    }

    /// Closes an interval of `len` packets (it becomes I_1).
    pub fn push(&mut self, len: f64) {
        self.closed.push_front(len);
        self.closed.truncate(HISTORY);
    }

    /// Closed intervals, newest first.
    pub fn closed(&self) -> impl Iterator<Item = f64> + '_ {
        self.closed.iter().copied()
    }

    /// (I_tot0, I_tot1, W_tot) for the open interval `i0`: with k closed intervals,
    /// I_tot0 = Σ_{i<k} w_i·I_i, I_tot1 = Σ_{1≤i≤k} w_{i−1}·I_i, W_tot = Σ_{i<k} w_i.
    pub fn totals(&self, i0: f64) -> (f64, f64, f64) {
        let k = self.closed.len();
        let (mut t0, mut t1, mut w) = (0.0, 0.0, 0.0);
        for i in 0..=k {
            let ii = if i == 0 { i0 } else { self.closed[i - 1] };
            if i < k {
                t0 += ii * WEIGHTS[i];
                w += WEIGHTS[i];
            }
            if i > 0 {
                t1 += ii * WEIGHTS[i - 1];
            }
        }
        (t0, t1, w)
    }

    /// I_mean = max(I_tot0, I_tot1)/W_tot; `None` before the first loss event.
    pub fn mean(&self, i0: f64) -> Option<f64> {
        if self.closed.is_empty() {
            return None;
        }
        let (t0, t1, w) = self.totals(i0);
        Some(t0.max(t1) / w)
    }

    /// p = 1/I_mean, 0 before the first loss event.
    pub fn p(&self, i0: f64) -> f64 {
        self.mean(i0).map_or(0.0, |m| 1.0 / m.max(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equation_vectors() {
        assert!((throughput(1460.0, 0.1, 0.01) - 164_005.0).abs() < 1.0);
        assert!((throughput(1000.0, 0.2, 0.001) - 191_922.0).abs() < 1.0);
        assert!((throughput(512.0, 0.1, 0.1) - 9_062.9).abs() < 0.05);
        for p in [1e-5, 1e-3, 0.01, 0.2] {
            let x = throughput(1000.0, 0.05, p);
            assert!((inverse(1000.0, 0.05, x) / p - 1.0).abs() < 1e-9);
        }
    }

    #[test]
    fn loss_interval_vectors() {
        let mut h = LossIntervals::new();
        assert_eq!(h.p(50.0), 0.0);
        for i in [105.0, 95.0, 100.0, 120.0, 80.0, 110.0, 90.0, 100.0] {
            h.push(i);
        }
        let (t0, t1, w) = h.totals(20.0);
        assert!((t0 - 515.0).abs() < 1e-9 && (t1 - 595.0).abs() < 1e-9 && w == 6.0);
        assert!((h.mean(20.0).unwrap() - 99.1667).abs() < 1e-4);
        assert!((h.p(20.0) - 0.010084).abs() < 1e-6);
        assert_eq!(h.totals(300.0).0, 795.0);
        assert!((h.mean(300.0).unwrap() - 132.5).abs() < 1e-9);
        h.push(7.0);
        assert_eq!(h.closed().count(), HISTORY, "I_9 falls out");
    }

    #[test]
    fn initial_window_vectors() {
        assert_eq!(initial_window(512.0), 2048.0);
        assert_eq!(initial_window(1424.0), 4380.0);
        assert_eq!(initial_window(3000.0), 6000.0);
    }
}
