//! Proportional fair (\[S2\] eq. 1–2, spec C.2): serve the eligible user with the largest
//! R_i\[n\]/A_i\[n−1\]; then, for every user, A_i\[n\] = ω·δ_i\[n\]·R_i\[n\] + (1−ω)·A_i\[n−1\]
//! (δ_i = 1 for the served user). A_i is the rate the scheduler *granted*, whether or not the
//! frame then arrived intact.
//!
//! | assumption | where |
//! |---|---|
//! | A_i\[0\] = 1 bit/s for every user: no division by zero, and a short round-robin start (each user's first turn makes its A large) | C.2 (A) |
//! | A is kept at least the smallest positive f64, so a user starved for hours (A underflowing to 0) gets an infinite, not undefined, metric | (A) |

use crate::{Scheduler, Slot, Ties};

/// A_i\[0\] in bit/s (spec C.2 (A)).
pub const INITIAL_THROUGHPUT_BPS: f64 = 1.0;

/// The smoothed throughputs A_i of eq. 2, shared by PF and the TCP-aware schedulers.
#[derive(Clone, Debug)]
pub struct ThroughputAverage {
    omega: f64,
    /// A_i in bit/s.
    pub a: Vec<f64>,
}

impl ThroughputAverage {
    pub fn new(users: usize, omega: f64) -> Self {
        ThroughputAverage {
            omega,
            a: vec![INITIAL_THROUGHPUT_BPS; users],
        }
    }

    /// Eq. 2 for every user after a slot in which `served` (if any) was granted `rate_bps`.
    pub fn update(&mut self, served: Option<(usize, f64)>) {
        for a in &mut self.a {
            *a *= 1.0 - self.omega;
        }
        if let Some((i, r)) = served {
            self.a[i] += self.omega * r;
        }
        self.floor();
    }

    /// Eq. 2 over `slots` slots in which nobody was served.
    pub fn decay(&mut self, slots: u64) {
        let f = (1.0 - self.omega).powf(slots as f64);
        for a in &mut self.a {
            *a *= f;
        }
        self.floor();
    }

    fn floor(&mut self) {
        for a in &mut self.a {
            *a = a.max(f64::MIN_POSITIVE);
        }
    }
}

/// The proportional-fair scheduler.
#[derive(Clone, Debug)]
pub struct Pf {
    pub avg: ThroughputAverage,
}

impl Pf {
    pub fn new(users: usize, omega: f64) -> Self {
        Pf {
            avg: ThroughputAverage::new(users, omega),
        }
    }
}

impl Scheduler for Pf {
    fn name(&self) -> &str {
        "pf"
    }

    fn schedule(&mut self, slot: &Slot, ties: &mut Ties) -> Option<usize> {
        let a = &self.avg.a;
        let chosen = ties.argmax(slot, |i| slot.rate_bps[i] / a[i]);
        self.avg.update(chosen.map(|i| (i, slot.rate_bps[i])));
        chosen
    }

    fn idle(&mut self, _first: u64, slots: u64) {
        self.avg.decay(slots);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlink_engine::RngStream;

    #[test]
    fn spec_c_two_user_vector() {
        // U1: R = 1.28 Mb/s, A = 200 kb/s; U2: R = 640 kb/s, A = 120 kb/s.
        let mut pf = Pf::new(2, 1e-3);
        pf.avg.a = vec![200e3, 120e3];
        let rates = [1.28e6, 640e3];
        let slot = Slot {
            index: 100,
            rate_bps: &rates,
            queue_bits: &[20_000, 40_000],
        };
        assert!((rates[0] / pf.avg.a[0] - 6.4).abs() < 1e-12);
        assert!((rates[1] / pf.avg.a[1] - 5.333_333).abs() < 1e-6);
        assert_eq!(pf.schedule(&slot, &mut Ties::LowestIndex), Some(0));
        // Serving U2 instead (as TCP-PF does in the vector): A2 = 120 520, A1 = 199 800.
        let mut avg = ThroughputAverage::new(2, 1e-3);
        avg.a = vec![200e3, 120e3];
        avg.update(Some((1, 640e3)));
        assert!(
            (avg.a[1] - 120_520.0).abs() < 1e-9 && (avg.a[0] - 199_800.0).abs() < 1e-9,
            "{:?}",
            avg.a
        );
    }

    #[test]
    fn starts_round_robin_and_idle_slots_decay_like_empty_slots() {
        let mut pf = Pf::new(3, 1e-3);
        let rates = [320e3; 3];
        let slot = Slot {
            index: 0,
            rate_bps: &rates,
            queue_bits: &[1; 3],
        };
        let picks: Vec<_> = (0..3)
            .map(|_| pf.schedule(&slot, &mut Ties::LowestIndex).unwrap())
            .collect();
        assert_eq!(
            picks,
            [0, 1, 2],
            "all A start at 1 bit/s, served users' A jump"
        );
        let mut stepped = pf.clone();
        let empty = Slot {
            index: 0,
            rate_bps: &rates,
            queue_bits: &[0; 3],
        };
        for _ in 0..500 {
            assert_eq!(stepped.schedule(&empty, &mut Ties::LowestIndex), None);
        }
        pf.idle(3, 500);
        for (x, y) in pf.avg.a.iter().zip(&stepped.avg.a) {
            assert!((x / y - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn long_run_time_shares_are_equal_under_symmetric_fading() {
        // Rates c_i·X_i with X_i i.i.d.: PF gives each user 1/N of the slots whatever c_i,
        // while its MAC throughput follows c_i (Tse; Borst [S2 ref 5]).
        let scale = [1.0, 3.0, 9.0];
        let mut pf = Pf::new(3, 1e-3);
        let mut rng = RngStream::derive(4, "pf-test");
        let mut ties = Ties::Random(rng.substream("ties"));
        let mut served = [0u32; 3];
        let n = 200_000;
        for k in 0..n {
            // Exponential (Rayleigh power) fading per user and slot.
            let rates: Vec<f64> = scale
                .iter()
                .map(|c| c * 1e5 * -rng.uniform_open0().ln())
                .collect();
            let slot = Slot {
                index: k,
                rate_bps: &rates,
                queue_bits: &[1; 3],
            };
            served[pf.schedule(&slot, &mut ties).unwrap()] += 1;
        }
        for s in served {
            assert!((s as f64 / n as f64 - 1.0 / 3.0).abs() < 0.01, "{served:?}");
        }
        // A tracks each user's served rate: about c_i in proportion.
        let a = &pf.avg.a;
        assert!(
            (a[1] / a[0] / 3.0 - 1.0).abs() < 0.25 && (a[2] / a[1] / 3.0 - 1.0).abs() < 0.25,
            "{a:?}"
        );
    }
}
