//! Round robin: cyclic over the eligible users (data queued and a rate above zero, spec C.2
//! (A): users whose channel supports no rate are skipped). After serving user i the search
//! starts at i + 1; a slot with nobody eligible leaves the pointer where it is.

use crate::{Scheduler, Slot, Ties};

/// The round-robin scheduler.
#[derive(Clone, Debug)]
pub struct RoundRobin {
    users: usize,
    /// The first user considered in the next slot.
    next: usize,
}

impl RoundRobin {
    pub fn new(users: usize) -> Self {
        RoundRobin { users, next: 0 }
    }
}

impl Scheduler for RoundRobin {
    fn name(&self) -> &str {
        "rr"
    }

    fn schedule(&mut self, slot: &Slot, _ties: &mut Ties) -> Option<usize> {
        debug_assert_eq!(slot.users(), self.users);
        let chosen = (0..self.users)
            .map(|k| (self.next + k) % self.users)
            .find(|&i| slot.eligible(i))?;
        self.next = (chosen + 1) % self.users;
        Some(chosen)
    }

    fn idle(&mut self, _first: u64, _slots: u64) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn skips_users_without_data_or_rate() {
        let mut rr = RoundRobin::new(4);
        let rates = [1.0, 0.0, 1.0, 1.0];
        let queues = [5, 5, 0, 5];
        let slot = Slot {
            index: 0,
            rate_bps: &rates,
            queue_bits: &queues,
        };
        let picks: Vec<_> = (0..5)
            .map(|_| rr.schedule(&slot, &mut Ties::LowestIndex).unwrap())
            .collect();
        assert_eq!(picks, [0, 3, 0, 3, 0]);
        let nobody = Slot {
            index: 0,
            rate_bps: &rates,
            queue_bits: &[0; 4],
        };
        assert_eq!(rr.schedule(&nobody, &mut Ties::LowestIndex), None);
        assert_eq!(
            rr.schedule(&slot, &mut Ties::LowestIndex),
            Some(3),
            "the pointer did not move"
        );
    }

    proptest! {
        /// While the set of eligible users stays the same, every one of them is served exactly
        /// once in each run of |set| consecutive slots.
        #[test]
        fn serves_every_eligible_user_once_per_cycle(
            eligible in prop::collection::vec(any::<bool>(), 1..15),
            warmup in 0usize..20,
        ) {
            let n = eligible.len();
            let rates: Vec<f64> = eligible.iter().map(|&e| if e { 1e6 } else { 0.0 }).collect();
            let queues = vec![100u64; n];
            let slot = Slot { index: 0, rate_bps: &rates, queue_bits: &queues };
            let mut rr = RoundRobin::new(n);
            for _ in 0..warmup {
                rr.schedule(&slot, &mut Ties::LowestIndex);
            }
            let k = eligible.iter().filter(|&&e| e).count();
            for _ in 0..3 {
                let mut served: Vec<usize> = (0..k).map(|_| rr.schedule(&slot, &mut Ties::LowestIndex).unwrap()).collect();
                served.sort();
                let want: Vec<usize> = (0..n).filter(|&i| eligible[i]).collect();
                prop_assert_eq!(served, want);
            }
        }
    }
}
