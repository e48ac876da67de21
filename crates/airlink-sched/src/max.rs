//! MAX (\[S2\] §IV): the eligible user with the highest feasible rate R_i\[n\]. It maximises
//! MAC throughput and keeps no state.

use crate::{Scheduler, Slot, Ties};

/// The maximum-rate scheduler.
#[derive(Copy, Clone, Debug, Default)]
pub struct Max;

impl Scheduler for Max {
    fn name(&self) -> &str {
        "max"
    }

    fn schedule(&mut self, slot: &Slot, ties: &mut Ties) -> Option<usize> {
        ties.argmax(slot, |i| slot.rate_bps[i])
    }

    fn idle(&mut self, _first: u64, _slots: u64) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn picks_an_eligible_user_of_maximum_rate(
            users in prop::collection::vec((0u8..4, 0u64..3), 1..12),
        ) {
            let rates: Vec<f64> = users.iter().map(|&(r, _)| r as f64 * 320e3).collect();
            let queues: Vec<u64> = users.iter().map(|&(_, q)| q).collect();
            let slot = Slot { index: 7, rate_bps: &rates, queue_bits: &queues };
            let chosen = Max.schedule(&slot, &mut Ties::LowestIndex);
            let best = (0..users.len()).filter(|&i| slot.eligible(i)).map(|i| rates[i]).fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
            match chosen {
                None => prop_assert!(best.is_none()),
                Some(i) => {
                    prop_assert!(slot.eligible(i));
                    prop_assert_eq!(Some(rates[i]), best);
                    // Lowest index among the maxima.
                    prop_assert!((0..i).all(|j| !slot.eligible(j) || rates[j] < rates[i]));
                }
            }
        }
    }
}
