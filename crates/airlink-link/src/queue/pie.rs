//! PIE, "Proportional Integral controller Enhanced" (RFC 8033): drop (or mark) arriving
//! packets with a probability that a PI controller updates every `tupdate` from the queueing
//! delay, steering it towards `target`.
//!
//! Every `tupdate` (RFC 8033 §4.2): `p = α·(qdelay − target) + β·(qdelay − qdelay_old)`,
//! scaled down while the probability is small (÷2048 below 10⁻⁶ … ÷2 below 0.1), capped at
//! 0.02 once the probability is 0.1 or more; the probability decays by 2 % while the queue
//! stays empty. On arrival (§4.1, §4.3, §5.1): nothing is dropped while the burst allowance
//! lasts, nor while the delay is below half the target with a probability below 0.2, nor with
//! at most two packets' bytes queued; otherwise a draw against the probability; with `ecn`, an
//! ECN-capable packet is marked instead of dropped while the probability is at most 0.1.
//!
//! | aspect | here | Linux (`sch_pie`) |
//! |---|---|---|
//! | queueing delay | the sojourn of the last packet dequeued (0 when the queue is empty), RFC 8033 §5.2's timestamp alternative | the same (default since Linux 5.1; `dq_rate_estimator` selects §4.2's rate estimate) |
//! | update timer | applied lazily at the next arrival or departure, at the instants it was due | a kernel timer |
//! | delay above 250 ms | no extra step | adds 0.02 to the probability step |
//! | derandomisation (§5.1 `accu_prob`) | absent | absent |
//! | "two packets' bytes" | twice the largest packet seen | twice the device MTU |
//! | probability | floating point | 64-bit fixed point |
//! | defaults | target 15 ms, tupdate 15 ms, α 0.125, β 1.25, max_burst 150 ms, ecn off | the same (α, β in 1/16 units: 2, 20) |

use super::{Discipline, Ledger, QueueDrop, Queued};
use crate::Packet;
use airlink_engine::{Duration, Instant, RngStream};
use std::collections::VecDeque;

/// PIE's parameters (RFC 8033 §4–5; the same as Linux's defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct PieParams {
    /// Reference queueing delay (QDELAY_REF). Default 15 ms.
    pub target: Duration,
    /// Interval between probability updates (T_UPDATE). Default 15 ms.
    pub tupdate: Duration,
    /// Weight of the delay's distance from the target, per second. Default 0.125.
    pub alpha: f64,
    /// Weight of the delay's change, per second. Default 1.25.
    pub beta: f64,
    /// Burst tolerated without drops after an idle queue (MAX_BURST). Default 150 ms.
    pub max_burst: Duration,
    /// Mark ECN-capable packets while the probability is at most 10 %. Default off.
    pub ecn: bool,
}

impl Default for PieParams {
    fn default() -> Self {
        PieParams {
            target: Duration::from_millis(15),
            tupdate: Duration::from_millis(15),
            alpha: 0.125,
            beta: 1.25,
            max_burst: Duration::from_millis(150),
            ecn: false,
        }
    }
}

/// The probability above which ECN-capable packets are dropped rather than marked.
const MARK_ECN_THRESHOLD: f64 = 0.1;

pub struct Pie<P> {
    params: PieParams,
    rng: RngStream,
    fifo: VecDeque<Queued<P>>,
    drop_prob: f64,
    /// The current queueing delay, and the one at the last update.
    qdelay: Duration,
    qdelay_old: Duration,
    burst_allowance: Duration,
    next_update: Instant,
}

impl<P> Pie<P> {
    pub fn new(params: PieParams, rng: RngStream) -> Self {
        Pie {
            burst_allowance: params.max_burst,
            next_update: Instant::ZERO + params.tupdate,
            params,
            rng,
            fifo: VecDeque::new(),
            drop_prob: 0.0,
            qdelay: Duration::ZERO,
            qdelay_old: Duration::ZERO,
        }
    }

    pub fn drop_probability(&self) -> f64 {
        self.drop_prob
    }

    /// Runs the updates due up to `now`, each with the delay known at its instant.
    fn catch_up(&mut self, now: Instant) {
        while self.next_update <= now {
            self.update();
            self.next_update += self.params.tupdate;
        }
    }

    /// RFC 8033 §4.2 `calculate_drop_prob`, with the current delay `self.qdelay`.
    fn update(&mut self) {
        let (q, q_old, target) = (
            self.qdelay.as_secs_f64(),
            self.qdelay_old.as_secs_f64(),
            self.params.target.as_secs_f64(),
        );
        let mut p = self.params.alpha * (q - target) + self.params.beta * (q - q_old);
        let prob = self.drop_prob;
        // Smaller steps while the probability is small, so it starts gently (§4.2).
        p /= match prob {
            x if x < 1e-6 => 2048.0,
            x if x < 1e-5 => 512.0,
            x if x < 1e-4 => 128.0,
            x if x < 1e-3 => 32.0,
            x if x < 1e-2 => 8.0,
            x if x < 1e-1 => 2.0,
            _ => 1.0,
        };
        if prob >= 0.1 && p > 0.02 {
            p = 0.02;
        }
        self.drop_prob += p;
        if self.qdelay.is_zero() && self.qdelay_old.is_zero() {
            self.drop_prob *= 0.98;
        }
        self.drop_prob = self.drop_prob.clamp(0.0, 1.0);
        self.qdelay_old = self.qdelay;
        self.burst_allowance = self.burst_allowance.saturating_sub(self.params.tupdate);
        let half = self.params.target.as_nanos() / 2;
        if self.drop_prob == 0.0
            && self.qdelay.as_nanos() < half
            && self.qdelay_old.as_nanos() < half
        {
            self.burst_allowance = self.params.max_burst;
        }
    }

    /// RFC 8033 §4.1 `drop_early`: should the arriving packet be dropped (or marked)?
    fn drop_early<Q: Packet>(&mut self, ledger: &Ledger<Q>) -> bool {
        if !self.burst_allowance.is_zero() {
            return false;
        }
        if self.qdelay_old.as_nanos() < self.params.target.as_nanos() / 2 && self.drop_prob < 0.2 {
            return false;
        }
        // Work conservation: never drop from a queue of two packets or less (the arrival counted).
        if ledger.bytes() <= 2 * ledger.max_packet() as u64 {
            return false;
        }
        self.rng.uniform() < self.drop_prob
    }
}

impl<P: Packet + Send> Discipline<P> for Pie<P> {
    fn enqueue(&mut self, now: Instant, mut item: Queued<P>, ledger: &mut Ledger<P>) {
        self.catch_up(now);
        if ledger.over_limit() {
            ledger.drop(item, QueueDrop::Overflow);
            return;
        }
        if self.drop_early(ledger)
            && !(self.params.ecn && self.drop_prob <= MARK_ECN_THRESHOLD && ledger.mark(&mut item))
        {
            ledger.drop(item, QueueDrop::Aqm);
            return;
        }
        self.fifo.push_back(item);
    }

    fn dequeue(&mut self, now: Instant, _ledger: &mut Ledger<P>) -> Option<Queued<P>> {
        self.catch_up(now);
        let item = self.fifo.pop_front();
        self.qdelay = match (&item, self.fifo.is_empty()) {
            (Some(it), false) => now.saturating_since(it.enqueued),
            _ => Duration::ZERO,
        };
        item
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::queue;
    use super::super::*;
    use super::*;
    use crate::testing::TestPacket;

    fn pie() -> Pie<TestPacket> {
        Pie::new(PieParams::default(), RngStream::derive(1, "pie"))
    }

    /// RFC 8033 §4.2's update from a known state, with its scaling of small probabilities.
    #[test]
    fn the_probability_update_is_the_rfcs() {
        let mut p = pie();
        p.qdelay = Duration::from_millis(30);
        p.update();
        // α(30 − 15 ms) + β(30 − 0 ms), ÷2048 as the probability was below 10⁻⁶.
        let step = (0.125 * 0.015 + 1.25 * 0.030) / 2048.0;
        assert!((p.drop_prob - step).abs() < 1e-15, "{}", p.drop_prob);
        // Same delay again: only the integral term, now ÷128 (1.9e-5 is in [1e-5, 1e-4)).
        p.update();
        let step2 = 0.125 * 0.015 / 128.0;
        assert!((p.drop_prob - (step + step2)).abs() < 1e-15);
        // At 0.1 or more, a step is capped at 0.02.
        p.drop_prob = 0.5;
        p.qdelay = Duration::from_millis(500);
        p.update();
        assert!((p.drop_prob - 0.52).abs() < 1e-12);
        // An empty queue at two updates in a row decays the probability by 2 %.
        p.qdelay = Duration::ZERO;
        p.update();
        p.drop_prob = 0.3;
        p.update();
        assert!((p.drop_prob - (0.3 - 0.125 * 0.015) * 0.98).abs() < 1e-12);
    }

    #[test]
    fn the_burst_allowance_protects_the_first_burst() {
        let mut q = queue(
            AqmConfig::Pie(PieParams::default()),
            QueueLimit::Packets(10_000),
        );
        // 100 ms of standing 200 ms delay: within max_burst, no drop yet.
        let mut t = Instant::ZERO;
        for i in 0..10_000u32 {
            q.enqueue(t, TestPacket::new(i, 1000));
            if t >= Instant::from_millis(200) {
                q.dequeue(t);
            }
            t += Duration::from_micros(100);
            if t == Instant::from_millis(300) {
                assert_eq!(q.stats().aqm_drops, 0);
            }
        }
        // Later, the controller drops.
        assert!(q.stats().aqm_drops > 0);
    }

    /// Fed an arrival rate 10 % above the departure rate, PIE settles the delay near its target
    /// with a drop rate near the excess (RFC 8033 §3: the delay is controlled, not the queue).
    #[test]
    fn holds_the_delay_near_the_target_under_overload() {
        let mut q = queue(
            AqmConfig::Pie(PieParams::default()),
            QueueLimit::Packets(100_000),
        );
        let tx = Duration::from_micros(1000); // departures every 1 ms
        let arrival = Duration::from_micros(909); // arrivals 10 % faster
        let (mut next_in, mut next_out) = (Instant::ZERO, Instant::ZERO);
        let mut id = 0;
        let mut late = Vec::new();
        while next_out < Instant::from_millis(120_000) {
            if next_in <= next_out {
                q.enqueue(next_in, TestPacket::new(id, 1000));
                id += 1;
                next_in += arrival;
            } else {
                if let Some((_, s)) = q.dequeue(next_out) {
                    if next_out > Instant::from_millis(60_000) {
                        late.push(s.as_secs_f64());
                    }
                }
                next_out += tx;
            }
        }
        let mean = late.iter().sum::<f64>() / late.len() as f64;
        assert!((mean - 0.015).abs() < 0.005, "mean delay {mean} s");
    }
}
