//! TCP-MAX (\[S2\] eq. 20, spec C.2): the TCP-PF bracket without PF's normalisation,
//! M_i = R_i\[n\]·\[½·Σ̂_i/Φ̂_i + Q_i\[n\]/A_i\[n−1\]\]. The paper writes A_i\[n\], which is not
//! known before the decision; A_i\[n−1\] is used, as in eq. 19. State and updates are TCP-PF's.

use crate::tcp_pf::IntervalState;
use crate::{Scheduler, Slot, TcpParams, Ties};

/// The TCP-MAX scheduler.
#[derive(Clone, Debug)]
pub struct TcpMax {
    pub state: IntervalState,
}

impl TcpMax {
    pub fn new(users: usize, slot_s: f64, p: TcpParams) -> Self {
        TcpMax {
            state: IntervalState::new(users, slot_s, p),
        }
    }
}

impl Scheduler for TcpMax {
    fn name(&self) -> &str {
        "tcp-max"
    }

    fn schedule(&mut self, slot: &Slot, ties: &mut Ties) -> Option<usize> {
        self.state.predict(slot);
        let s = &self.state;
        let chosen = ties.argmax(slot, |i| slot.rate_bps[i] * s.bracket(i));
        self.state.commit(slot, chosen);
        chosen
    }

    fn idle(&mut self, _first: u64, slots: u64) {
        self.state.idle(slots);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp_pf::tests::{close, spec_c_state};

    #[test]
    fn spec_c_two_user_vector() {
        let (state, rates, queues) = spec_c_state();
        let slot = Slot {
            index: 1000,
            rate_bps: &rates,
            queue_bits: &queues,
        };
        let mut probe = state.clone();
        probe.predict(&slot);
        close(rates[0] * probe.bracket(0), 302_545.5, 1e-6);
        close(rates[1] * probe.bracket(1), 267_387.4, 1e-6);
        let mut tcp = TcpMax { state };
        assert_eq!(tcp.schedule(&slot, &mut Ties::LowestIndex), Some(0));
        assert_eq!(tcp.state.users[0].last, 1000);
        close(tcp.state.avg.a[0], 0.999 * 200e3 + 1.28e3, 1e-12);
    }
}
