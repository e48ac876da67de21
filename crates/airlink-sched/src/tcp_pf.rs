//! TCP proportional fair (\[S2\] eq. 11–19, spec C.2): proportional fair weighted by an
//! estimate of the time a user's packet spends at the base station,
//! M_i = (R_i\[n\]/A_i\[n−1\])·\[½·Σ̂_i/Φ̂_i + Q_i\[n\]/A_i\[n−1\]\].
//!
//! Every slot, before the decision: Q_i\[n\] = ω·q_i\[n\] + (1−ω)·Q_i\[n−1\] (eq. 12, q in
//! bits); φ̂_i = n − n_i,last (eq. 16, in seconds unless `phi_in_slots`); Φ̂_i = α·φ̂_i +
//! (1−α)·Φ_i and Σ̂_i = β·φ̂_i² + (1−β)·Σ_i (eq. 17–18, reading the paper's "Φ̂_i^j, Σ̂_i^j" as
//! the stored Φ_i^j, Σ_i^j). After it: A_i for every user (eq. 2), and for the served user
//! only Φ_i ← Φ̂_i, Σ_i ← Σ̂_i, n_i,last ← n (eq. 13–15).
//!
//! | assumption | where |
//! |---|---|
//! | Q_i\[0\] = 0, n_i,last = 0, Φ_i = T_slot, Σ_i = T_slot² (one slot, in the chosen unit); A_i\[0\] = 1 bit/s | C.2 (A) |
//! | φ in seconds (slots × T_slot) so both bracket terms are times; `phi_in_slots` for the literal eq. 13 | C.2 (A) |

use crate::pf::ThroughputAverage;
use crate::{Scheduler, Slot, TcpParams, Ties};

/// One user's interval and queue state.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct TcpPfUser {
    /// Q_i: smoothed queue in bits.
    pub q: f64,
    /// Φ_i: smoothed inter-scheduling interval (seconds, or slots with `phi_in_slots`).
    pub phi: f64,
    /// Σ_i: smoothed second moment of the interval (its unit squared).
    pub sigma: f64,
    /// n_i,last: the slot the user was last served in.
    pub last: u64,
}

/// The state TCP-PF and TCP-MAX share: A_i, Q_i, Φ_i, Σ_i and the bracket of eq. 19–20.
#[derive(Clone, Debug)]
pub struct IntervalState {
    p: TcpParams,
    /// Length of one slot in the unit of φ: T_slot in seconds, or 1.
    unit: f64,
    pub avg: ThroughputAverage,
    pub users: Vec<TcpPfUser>,
    /// Whether user i has had data yet: its interval state starts at its first data (a user
    /// that arrives late has not been waiting since slot 0).
    pub started: Vec<bool>,
    /// Φ̂_i, Σ̂_i and the bracket ½Σ̂_i/Φ̂_i + Q_i\[n\]/A_i\[n−1\] of the current slot.
    phi_hat: Vec<f64>,
    sigma_hat: Vec<f64>,
    bracket: Vec<f64>,
}

impl IntervalState {
    pub fn new(users: usize, slot_s: f64, p: TcpParams) -> Self {
        let unit = if p.phi_in_slots { 1.0 } else { slot_s };
        let user = TcpPfUser {
            q: 0.0,
            phi: unit,
            sigma: unit * unit,
            last: 0,
        };
        IntervalState {
            p,
            unit,
            avg: ThroughputAverage::new(users, p.omega),
            users: vec![user; users],
            started: vec![false; users],
            phi_hat: vec![0.0; users],
            sigma_hat: vec![0.0; users],
            bracket: vec![0.0; users],
        }
    }

    /// Eq. 12 and 16–18 for slot `slot`, before the decision.
    pub fn predict(&mut self, slot: &Slot) {
        let (w, a, b) = (self.p.omega, self.p.alpha, self.p.beta);
        for (i, u) in self.users.iter_mut().enumerate() {
            if !self.started[i] && slot.queue_bits[i] > 0 {
                self.started[i] = true;
                u.last = slot.index;
            }
            u.q = w * slot.queue_bits[i] as f64 + (1.0 - w) * u.q;
            let elapsed = slot.index.saturating_sub(u.last) as f64 * self.unit;
            self.phi_hat[i] = a * elapsed + (1.0 - a) * u.phi;
            self.sigma_hat[i] = b * elapsed * elapsed + (1.0 - b) * u.sigma;
            self.bracket[i] = 0.5 * self.sigma_hat[i] / self.phi_hat[i] + u.q / self.avg.a[i];
        }
    }

    /// ½Σ̂_i/Φ̂_i + Q_i\[n\]/A_i\[n−1\] as of the last [`IntervalState::predict`].
    pub fn bracket(&self, i: usize) -> f64 {
        self.bracket[i]
    }

    /// Φ̂_i and Σ̂_i as of the last [`IntervalState::predict`].
    pub fn predicted(&self, i: usize) -> (f64, f64) {
        (self.phi_hat[i], self.sigma_hat[i])
    }

    /// Eq. 2 for everyone and eq. 14–15 for the served user, after the decision.
    pub fn commit(&mut self, slot: &Slot, chosen: Option<usize>) {
        self.avg.update(chosen.map(|i| (i, slot.rate_bps[i])));
        if let Some(i) = chosen {
            let u = &mut self.users[i];
            u.phi = self.phi_hat[i];
            u.sigma = self.sigma_hat[i];
            u.last = slot.index;
        }
    }

    /// `slots` slots with every queue empty: A_i and Q_i decay (eq. 2 and 12 with δ = q = 0).
    pub fn idle(&mut self, slots: u64) {
        self.avg.decay(slots);
        let f = (1.0 - self.p.omega).powf(slots as f64);
        for u in &mut self.users {
            u.q *= f;
        }
    }
}

/// The TCP-PF scheduler.
#[derive(Clone, Debug)]
pub struct TcpPf {
    pub state: IntervalState,
}

impl TcpPf {
    pub fn new(users: usize, slot_s: f64, p: TcpParams) -> Self {
        TcpPf {
            state: IntervalState::new(users, slot_s, p),
        }
    }
}

impl Scheduler for TcpPf {
    fn name(&self) -> &str {
        "tcp-pf"
    }

    fn schedule(&mut self, slot: &Slot, ties: &mut Ties) -> Option<usize> {
        self.state.predict(slot);
        let s = &self.state;
        let chosen = ties.argmax(slot, |i| slot.rate_bps[i] / s.avg.a[i] * s.bracket(i));
        self.state.commit(slot, chosen);
        chosen
    }

    fn idle(&mut self, _first: u64, slots: u64) {
        self.state.idle(slots);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Spec C's two-user state before slot n = 1000 (T = 5 ms): U1 R = 1.28 Mb/s,
    /// A = 200 kb/s, Q = 20 kbit, Φ = 0.10 s, Σ = 0.02 s², last served 40 slots ago; U2
    /// R = 640 kb/s, A = 120 kb/s, Q = 40 kbit, Φ = 0.20 s, Σ = 0.06 s², 10 slots ago. The
    /// queues equal Q, so eq. 12 leaves Q unchanged.
    pub(crate) fn spec_c_state() -> (IntervalState, [f64; 2], [u64; 2]) {
        let mut s = IntervalState::new(2, 0.005, TcpParams::default());
        s.avg.a = vec![200e3, 120e3];
        s.users[0] = TcpPfUser {
            q: 20e3,
            phi: 0.10,
            sigma: 0.02,
            last: 960,
        };
        s.users[1] = TcpPfUser {
            q: 40e3,
            phi: 0.20,
            sigma: 0.06,
            last: 990,
        };
        s.started = vec![true; 2]; // both have had data before
        (s, [1.28e6, 640e3], [20_000, 40_000])
    }

    #[track_caller]
    pub(crate) fn close(got: f64, want: f64, rel: f64) {
        assert!(((got - want) / want).abs() <= rel, "got {got}, want {want}");
    }

    #[test]
    fn spec_c_two_user_vector() {
        let (state, rates, queues) = spec_c_state();
        let slot = Slot {
            index: 1000,
            rate_bps: &rates,
            queue_bits: &queues,
        };
        let mut tcp = TcpPf { state };
        tcp.state.predict(&slot);
        let s = &tcp.state;
        close(s.predicted(0).0, 0.110, 1e-12);
        close(s.predicted(1).0, 0.185, 1e-12);
        close(s.predicted(0).1, 0.0300, 1e-12);
        close(s.predicted(1).1, 0.03125, 1e-12);
        close(s.bracket(0), 0.236364, 2e-6);
        close(s.bracket(1), 0.417793, 2e-6);
        close(rates[0] / s.avg.a[0] * s.bracket(0), 1.512727, 2e-6);
        close(rates[1] / s.avg.a[1] * s.bracket(1), 2.228228, 2e-6);

        let (state, ..) = spec_c_state();
        let mut tcp = TcpPf { state };
        assert_eq!(tcp.schedule(&slot, &mut Ties::LowestIndex), Some(1));
        let s = &tcp.state;
        assert_eq!(
            s.users[1],
            TcpPfUser {
                q: 40e3,
                phi: s.predicted(1).0,
                sigma: s.predicted(1).1,
                last: 1000
            }
        );
        assert_eq!(
            (s.users[0].phi, s.users[0].sigma, s.users[0].last),
            (0.10, 0.02, 960),
            "unserved: unchanged"
        );
        close(s.avg.a[1], 120_520.0, 1e-12);
        close(s.avg.a[0], 199_800.0, 1e-12);
    }

    #[test]
    fn intervals_in_slots_weigh_the_interval_term_by_the_slots_per_second() {
        // One user served at slots 0 and 1 of both variants: then Φ and Σ differ exactly by the
        // unit, so the interval term of the bracket differs by 1/T_slot = 200.
        let p = TcpParams {
            phi_in_slots: true,
            ..TcpParams::default()
        };
        let mut slots = IntervalState::new(1, 0.005, p);
        let mut secs = IntervalState::new(1, 0.005, TcpParams::default());
        for n in 0..5 {
            let slot = Slot {
                index: n,
                rate_bps: &[1e6],
                queue_bits: &[0],
            };
            for s in [&mut slots, &mut secs] {
                s.predict(&slot);
                s.commit(&slot, Some(0));
            }
        }
        let slot = Slot {
            index: 12,
            rate_bps: &[1e6],
            queue_bits: &[0],
        };
        slots.predict(&slot);
        secs.predict(&slot);
        close(slots.bracket(0), 200.0 * secs.bracket(0), 1e-12);
        close(slots.predicted(0).0, 200.0 * secs.predicted(0).0, 1e-12);
    }

    #[test]
    fn initial_values_and_idle_slots() {
        let mut s = IntervalState::new(2, 0.005, TcpParams::default());
        assert_eq!(
            s.users[0],
            TcpPfUser {
                q: 0.0,
                phi: 0.005,
                sigma: 2.5e-5,
                last: 0
            }
        );
        assert_eq!(s.avg.a, vec![1.0, 1.0]);
        // Slot 0: φ̂ = 0, Φ̂ = 0.9·T, Σ̂ = 0.5·T², bracket ½·Σ̂/Φ̂ + Q/A with Q = ω·q.
        let slot = Slot {
            index: 0,
            rate_bps: &[1e6, 1e6],
            queue_bits: &[1000, 0],
        };
        s.predict(&slot);
        close(s.bracket(0), 0.5 * 1.25e-5 / 0.0045 + 1.0, 1e-12);
        close(s.bracket(1), 0.5 * 1.25e-5 / 0.0045, 1e-12);
        // Idle slots decay Q as empty slots would.
        let mut stepped = s.clone();
        for n in 1..=300 {
            let empty = Slot {
                index: n,
                rate_bps: &[1e6, 1e6],
                queue_bits: &[0, 0],
            };
            stepped.predict(&empty);
            stepped.commit(&empty, None);
        }
        s.idle(300);
        close(s.users[0].q, stepped.users[0].q, 1e-12);
        close(s.avg.a[0], stepped.avg.a[0], 1e-12);
    }

    #[test]
    fn hand_computed_slot_from_the_initial_state() {
        // Slot 4, the first with data, nobody served yet: a user's interval starts at its first
        // data (φ = 0 now), one without data counts from slot 0 (φ = 4·T = 0.02 s).
        // U0: R = 320 k, q = 8000; U1: empty queue; U2: rate 0; U3: R = 640 k, q = 1000; U4 = U3.
        // Q = ω·q: 8, 0, 5, 1, 1 bits. With data: Φ̂ = 0.9·0.005 = 0.0045 s, Σ̂ = 0.5·0.005² =
        // 1.25e-5 s², ½Σ̂/Φ̂ = 0.001388889 s; U1: Φ̂ = 0.1·0.02 + 0.9·0.005 = 0.0065 s,
        // Σ̂ = 0.5·0.02² + 0.5·0.005² = 2.125e-4 s². With A = 1 bit/s: TCP-PF = TCP-MAX =
        // R·(0.0013889 + Q): U0 2 560 444.4, U3 = U4 640 888.9 → U0;
        // PF = R: U3 and U4 tie at 640 000 → U3 (lowest index).
        let rates = [320e3, 640e3, 0.0, 640e3, 640e3];
        let queues = [8000, 0, 5000, 1000, 1000];
        let slot = Slot {
            index: 4,
            rate_bps: &rates,
            queue_bits: &queues,
        };
        let mut tcp = TcpPf::new(5, 0.005, TcpParams::default());
        tcp.state.predict(&slot);
        let q: Vec<f64> = tcp.state.users.iter().map(|u| u.q).collect();
        assert_eq!(q, [8.0, 0.0, 5.0, 1.0, 1.0]);
        close(tcp.state.predicted(2).0, 0.0045, 1e-12);
        close(tcp.state.predicted(2).1, 1.25e-5, 1e-12);
        close(tcp.state.predicted(1).0, 0.0065, 1e-12);
        close(tcp.state.predicted(1).1, 2.125e-4, 1e-12);
        close(tcp.state.bracket(0), 8.001388889, 1e-9);
        close(rates[3] * tcp.state.bracket(3), 640_888.889, 1e-6);
        let mut tcp = TcpPf::new(5, 0.005, TcpParams::default());
        assert_eq!(tcp.schedule(&slot, &mut Ties::LowestIndex), Some(0));
        let u0 = tcp.state.users[0];
        assert_eq!(
            (u0.last, tcp.state.users[3].last, tcp.state.users[1].last),
            (4, 4, 0)
        );
        close(u0.phi, 0.0045, 1e-12);
        close(u0.sigma, 1.25e-5, 1e-12);
        close(tcp.state.avg.a[0], 0.999 + 320.0, 1e-12);
        close(tcp.state.avg.a[2], 0.999, 1e-12);
        let mut max = crate::TcpMax::new(5, 0.005, TcpParams::default());
        assert_eq!(max.schedule(&slot, &mut Ties::LowestIndex), Some(0));
        let mut pf = crate::Pf::new(5, 1e-3);
        assert_eq!(pf.schedule(&slot, &mut Ties::LowestIndex), Some(3));
    }

    #[test]
    fn a_late_user_has_not_been_waiting_since_slot_0() {
        // First data at slot 1000: its interval state is a fresh user's there, not 1000 slots.
        let mut tcp = TcpPf::new(1, 0.005, TcpParams::default());
        let (rate, none, some) = ([320e3], [0u64], [8000u64]);
        for n in 0..1000 {
            tcp.state.predict(&Slot {
                index: n,
                rate_bps: &rate,
                queue_bits: &none,
            });
        }
        tcp.state.predict(&Slot {
            index: 1000,
            rate_bps: &rate,
            queue_bits: &some,
        });
        assert_eq!(tcp.state.users[0].last, 1000);
        close(tcp.state.predicted(0).0, 0.9 * 0.005, 1e-12);
        close(tcp.state.predicted(0).1, 0.5 * 0.005 * 0.005, 1e-15);
    }

    #[test]
    fn a_long_wait_raises_a_users_priority_over_pf() {
        // Equal rates and throughputs: PF ties, TCP-PF serves the user waiting longest.
        let mut tcp = TcpPf::new(3, 0.005, TcpParams::default());
        tcp.state.avg.a = vec![1e5; 3];
        tcp.state.users[0].last = 90;
        tcp.state.users[1].last = 50;
        tcp.state.users[2].last = 99;
        tcp.state.started = vec![true; 3];
        let slot = Slot {
            index: 100,
            rate_bps: &[1e6; 3],
            queue_bits: &[1; 3],
        };
        assert_eq!(tcp.schedule(&slot, &mut Ties::LowestIndex), Some(1));
    }
}
