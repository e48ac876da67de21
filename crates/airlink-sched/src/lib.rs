//! Slot schedulers of a multi-user cell (spec C.2; \[S2\] Klein/Leung/Zheng, eq. 1–2, 11–20).
//!
//! Each slot the cell asks its [`Scheduler`] which user to serve, giving every user's feasible
//! rate R_i\[n\] (0 when the channel supports no rate) and MAC queue q_i\[n\] in bits. A user is
//! *eligible* when q_i\[n\] > 0 and R_i\[n\] > 0; a scheduler picks one eligible user or none.
//! Ties between equal metrics are broken by [`Ties`]: uniformly at random from the run's
//! seeded stream, or the lowest index (for tests).
//!
//! | scheduler | file | metric |
//! |---|---|---|
//! | `rr` | `rr.rs` | cyclic over eligible users |
//! | `max` | `max.rs` | R_i\[n\] |
//! | `pf` | `pf.rs` | R_i\[n\]/A_i\[n−1\] |
//! | `tcp-pf` | `tcp_pf.rs` | (R_i\[n\]/A_i\[n−1\])·\[½Σ̂_i/Φ̂_i + Q_i\[n\]/A_i\[n−1\]\] |
//! | `tcp-max` | `tcp_max.rs` | R_i\[n\]·\[½Σ̂_i/Φ̂_i + Q_i\[n\]/A_i\[n−1\]\] |
//!
//! A scheduler of one's own is a type implementing [`Scheduler`]; the cell
//! (`airlink_link::CellDownlink::with_scheduler`) takes any `Box<dyn Scheduler>`. Giving it a
//! name in scenarios is one more variant of [`SchedulerConfig`]. For example, the user with
//! the most queued bits among those the channel lets through:
//!
//! ```
//! use airlink_sched::{Scheduler, Slot, Ties};
//!
//! struct LongestQueue;
//!
//! impl Scheduler for LongestQueue {
//!     fn name(&self) -> &str {
//!         "longest-queue"
//!     }
//!     fn schedule(&mut self, slot: &Slot, ties: &mut Ties) -> Option<usize> {
//!         ties.argmax(slot, |i| slot.queue_bits[i] as f64)
//!     }
//!     fn idle(&mut self, _first: u64, _slots: u64) {}
//! }
//!
//! let slot = Slot { index: 0, rate_bps: &[1e6, 0.0, 5e5], queue_bits: &[100, 900, 300] };
//! assert_eq!(LongestQueue.schedule(&slot, &mut Ties::LowestIndex), Some(2));
//! ```
//!
//! Schedulers never read a clock or a global RNG: time is the slot index, randomness comes
//! from the [`Ties`] they are handed.
#![forbid(unsafe_code)]

mod max;
mod pf;
mod rr;
mod tcp_max;
mod tcp_pf;

pub use max::Max;
pub use pf::{Pf, ThroughputAverage, INITIAL_THROUGHPUT_BPS};
pub use rr::RoundRobin;
pub use tcp_max::TcpMax;
pub use tcp_pf::{IntervalState, TcpPf, TcpPfUser};

use airlink_engine::RngStream;
use std::fmt;

/// What the scheduler sees in slot n: every user's feasible rate and MAC queue.
#[derive(Copy, Clone, Debug)]
pub struct Slot<'a> {
    /// Slot index n (slot n starts at n × slot length).
    pub index: u64,
    /// R_i\[n\] in bit/s; 0 when user i cannot be served in this slot.
    pub rate_bps: &'a [f64],
    /// q_i\[n\] in bits, measured before the decision.
    pub queue_bits: &'a [u64],
}

impl Slot<'_> {
    /// Number of users.
    pub fn users(&self) -> usize {
        self.rate_bps.len()
    }

    /// User `i` has data and a rate above zero.
    pub fn eligible(&self, i: usize) -> bool {
        self.queue_bits[i] > 0 && self.rate_bps[i] > 0.0
    }
}

/// A slot scheduler. Called once per slot in increasing slot order; slots in which every
/// queue was empty may instead be reported in bulk through [`Scheduler::idle`].
pub trait Scheduler: Send {
    /// The name it is known by (`pf`, `tcp-pf`, …).
    fn name(&self) -> &str;
    /// Chooses the user served in `slot` (`None` when no user is eligible) and updates the
    /// scheduler's state to the end of the slot.
    fn schedule(&mut self, slot: &Slot, ties: &mut Ties) -> Option<usize>;
    /// `slots` consecutive slots, the first being `first`, in which every queue was empty:
    /// the state must end as if [`Scheduler::schedule`] had been called for each of them.
    fn idle(&mut self, first: u64, slots: u64);
}

/// How ties between equal metrics are broken.
#[derive(Clone, Debug)]
pub enum Ties {
    /// Uniformly at random among the maxima, from this stream (the run's seeded stream).
    Random(RngStream),
    /// The lowest user index among the maxima (deterministic tests).
    LowestIndex,
}

impl Ties {
    /// The eligible user of `slot` with the largest `metric` (NaN metrics never win), ties
    /// broken by `self`. Draws from the stream only when there is a tie.
    pub fn argmax(&mut self, slot: &Slot, mut metric: impl FnMut(usize) -> f64) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        let mut tied = 0u64;
        for i in (0..slot.users()).filter(|&i| slot.eligible(i)) {
            let m = metric(i);
            if m.is_nan() {
                continue;
            }
            match best {
                Some((_, b)) if m < b => {}
                Some((_, b)) if m == b => {
                    // Reservoir sampling: the k-th of k tied users replaces the choice with
                    // probability 1/k, so each ends chosen with probability 1/k.
                    tied += 1;
                    if let Ties::Random(rng) = self {
                        if rng.below(tied) == 0 {
                            best = Some((i, m));
                        }
                    }
                }
                _ => {
                    best = Some((i, m));
                    tied = 1;
                }
            }
        }
        best.map(|(i, _)| i)
    }
}

/// Parameters of the TCP-aware schedulers (spec C.2, \[S2\] §III.B).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct TcpParams {
    /// ω of the throughput and queue averages, eq. 2 and 12 (1/1000).
    pub omega: f64,
    /// α of the mean inter-scheduling interval, eq. 14 and 17 (0.1).
    pub alpha: f64,
    /// β of its second moment, eq. 15 and 18 (0.5).
    pub beta: f64,
    /// Intervals in slots, as \[S2\] literally defines φ (eq. 13), instead of seconds. Seconds
    /// (default) make both bracket terms of eq. 19 times; slots weigh the interval term 200
    /// times more at 5 ms slots.
    pub phi_in_slots: bool,
}

impl Default for TcpParams {
    /// \[S2\]'s values: ω = 1/1000, α = 0.1, β = 0.5, intervals in seconds.
    fn default() -> Self {
        TcpParams {
            omega: 1e-3,
            alpha: 0.1,
            beta: 0.5,
            phi_in_slots: false,
        }
    }
}

/// A scheduler chosen by name with its parameters.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum SchedulerConfig {
    RoundRobin,
    Max,
    /// Proportional fair with averaging weight ω (\[S2\]: 1/1000).
    Pf {
        omega: f64,
    },
    TcpPf(TcpParams),
    TcpMax(TcpParams),
}

impl SchedulerConfig {
    /// The names [`SchedulerConfig::by_name`] accepts.
    pub const NAMES: [&'static str; 5] = ["rr", "max", "pf", "tcp-pf", "tcp-max"];

    /// The scheduler called `name`, with \[S2\]'s parameters.
    pub fn by_name(name: &str) -> Result<Self, SchedulerError> {
        Ok(match name {
            "rr" => SchedulerConfig::RoundRobin,
            "max" => SchedulerConfig::Max,
            "pf" => SchedulerConfig::Pf {
                omega: TcpParams::default().omega,
            },
            "tcp-pf" => SchedulerConfig::TcpPf(TcpParams::default()),
            "tcp-max" => SchedulerConfig::TcpMax(TcpParams::default()),
            _ => return Err(SchedulerError::UnknownName(name.to_string())),
        })
    }

    pub fn name(&self) -> &'static str {
        match self {
            SchedulerConfig::RoundRobin => "rr",
            SchedulerConfig::Max => "max",
            SchedulerConfig::Pf { .. } => "pf",
            SchedulerConfig::TcpPf(_) => "tcp-pf",
            SchedulerConfig::TcpMax(_) => "tcp-max",
        }
    }

    /// Checks that ω, α and β are in (0, 1].
    pub fn validate(&self) -> Result<(), SchedulerError> {
        let check = |name: &'static str, v: f64| {
            if v > 0.0 && v <= 1.0 {
                Ok(())
            } else {
                Err(SchedulerError::Parameter { name, value: v })
            }
        };
        match self {
            SchedulerConfig::RoundRobin | SchedulerConfig::Max => Ok(()),
            SchedulerConfig::Pf { omega } => check("omega", *omega),
            SchedulerConfig::TcpPf(p) | SchedulerConfig::TcpMax(p) => {
                check("omega", p.omega)?;
                check("alpha", p.alpha)?;
                check("beta", p.beta)
            }
        }
    }

    /// The scheduler for `users` users and slots of `slot_s` seconds.
    pub fn build(&self, users: usize, slot_s: f64) -> Result<Box<dyn Scheduler>, SchedulerError> {
        self.validate()?;
        if users == 0 {
            return Err(SchedulerError::NoUsers);
        }
        if !(slot_s.is_finite() && slot_s > 0.0) {
            return Err(SchedulerError::Slot(slot_s));
        }
        Ok(match *self {
            SchedulerConfig::RoundRobin => Box::new(RoundRobin::new(users)),
            SchedulerConfig::Max => Box::new(Max),
            SchedulerConfig::Pf { omega } => Box::new(Pf::new(users, omega)),
            SchedulerConfig::TcpPf(p) => Box::new(TcpPf::new(users, slot_s, p)),
            SchedulerConfig::TcpMax(p) => Box::new(TcpMax::new(users, slot_s, p)),
        })
    }
}

/// A scheduler configuration that cannot be built.
#[derive(Clone, Debug, PartialEq)]
pub enum SchedulerError {
    UnknownName(String),
    /// ω, α or β outside (0, 1].
    Parameter {
        name: &'static str,
        value: f64,
    },
    NoUsers,
    Slot(f64),
}

impl fmt::Display for SchedulerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedulerError::UnknownName(n) => {
                write!(
                    f,
                    "unknown scheduler `{n}`; valid schedulers: {}",
                    SchedulerConfig::NAMES.join(", ")
                )
            }
            SchedulerError::Parameter { name, value } => {
                write!(f, "{name} must be in (0, 1], got {value}")
            }
            SchedulerError::NoUsers => write!(f, "a scheduler needs at least one user"),
            SchedulerError::Slot(s) => write!(f, "the slot length must be positive, got {s} s"),
        }
    }
}

impl std::error::Error for SchedulerError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_valid_ones() {
        for name in SchedulerConfig::NAMES {
            let c = SchedulerConfig::by_name(name).unwrap();
            assert_eq!(c.name(), name);
            assert_eq!(c.build(3, 0.005).unwrap().name(), name);
        }
        let e = SchedulerConfig::by_name("fifo").unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown scheduler `fifo`; valid schedulers: rr, max, pf, tcp-pf, tcp-max"
        );
    }

    #[test]
    fn parameters_outside_the_unit_interval_are_refused() {
        for bad in [0.0, -0.1, 1.5, f64::NAN] {
            let pf = SchedulerConfig::Pf { omega: bad };
            assert!(
                matches!(
                    pf.validate(),
                    Err(SchedulerError::Parameter { name: "omega", .. })
                ),
                "{bad}"
            );
            let tcp = SchedulerConfig::TcpPf(TcpParams {
                beta: bad,
                ..TcpParams::default()
            });
            assert!(matches!(
                tcp.build(2, 0.005).err(),
                Some(SchedulerError::Parameter { name: "beta", .. })
            ));
            let tcp = SchedulerConfig::TcpMax(TcpParams {
                alpha: bad,
                ..TcpParams::default()
            });
            assert!(matches!(
                tcp.validate(),
                Err(SchedulerError::Parameter { name: "alpha", .. })
            ));
        }
        assert!(SchedulerConfig::Pf { omega: 1.0 }.validate().is_ok());
        assert_eq!(
            SchedulerConfig::Max.build(0, 0.005).err(),
            Some(SchedulerError::NoUsers)
        );
        assert_eq!(
            SchedulerConfig::Max.build(1, 0.0).err(),
            Some(SchedulerError::Slot(0.0))
        );
    }

    #[test]
    fn argmax_skips_ineligible_users_and_breaks_ties() {
        let rates = [5.0, 9.0, 9.0, 9.0, 0.0];
        let queues = [1, 1, 1, 0, 1];
        let slot = Slot {
            index: 0,
            rate_bps: &rates,
            queue_bits: &queues,
        };
        // User 3 has no data and user 4 no rate: the tie is between users 1 and 2.
        assert_eq!(
            Ties::LowestIndex.argmax(&slot, |i| slot.rate_bps[i]),
            Some(1)
        );
        let mut ties = Ties::Random(RngStream::derive(1, "ties"));
        let mut counts = [0u32; 5];
        for _ in 0..10_000 {
            counts[ties.argmax(&slot, |i| slot.rate_bps[i]).unwrap()] += 1;
        }
        assert_eq!((counts[0], counts[3], counts[4]), (0, 0, 0));
        assert!((counts[1] as i32 - 5000).abs() < 300, "{counts:?}");
        // NaN never wins; nobody eligible gives None.
        assert_eq!(
            Ties::LowestIndex.argmax(&slot, |i| if i == 1 { f64::NAN } else { 1.0 }),
            Some(0)
        );
        let empty = Slot {
            index: 0,
            rate_bps: &rates,
            queue_bits: &[0; 5],
        };
        assert_eq!(Ties::LowestIndex.argmax(&empty, |_| 1.0), None);
    }

    #[test]
    fn three_way_ties_are_uniform() {
        let rates = [1.0; 3];
        let slot = Slot {
            index: 0,
            rate_bps: &rates,
            queue_bits: &[1; 3],
        };
        let mut ties = Ties::Random(RngStream::derive(2, "ties"));
        let mut counts = [0i32; 3];
        for _ in 0..30_000 {
            counts[ties.argmax(&slot, |_| 1.0).unwrap()] += 1;
        }
        assert!(
            counts.iter().all(|&c| (c - 10_000).abs() < 400),
            "{counts:?}"
        );
    }
}
