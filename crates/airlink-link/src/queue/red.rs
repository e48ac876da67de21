//! RED, "Random Early Detection" (Floyd & Jacobson, IEEE/ACM ToN 1993), with the gentle mode
//! (Floyd, "Recommendation on using the gentle variant of RED", 2000).
//!
//! On each arrival the average queue length (packets) is updated as an EWMA with weight `wq`
//! (after an idle period, decayed as if `m` small packets had been sent, §4 of the paper).
//! Below `min_th` nothing is dropped; between `min_th` and `max_th` the base probability ramps
//! linearly from 0 to `max_p`; in gentle mode it ramps on from `max_p` to 1 between `max_th`
//! and `2·max_th`; above that every arrival is dropped. The drop probability is spread by the
//! count since the last drop, `p_a = p_b / (1 − count·p_b)`, so drops are nearly evenly spaced
//! (§7). With `ecn`, ECN-capable packets are marked instead of dropped.
//!
//! | aspect | here | Linux (`sch_red`) |
//! |---|---|---|
//! | thresholds | packets | bytes (`min`, `max`, with `avpkt`) |
//! | idle decay | `m` = idle time / transmission time of a 500-byte packet at the link's rate | `Scell_log` table over idle time |
//! | average | floating point | fixed point scaled by `Wlog` |
//! | gentle region | probability-spread as the main ramp | the same |
//! | hard region with ECN | marks | marks unless `harddrop` |
//! | defaults | min_th 5, max_th 15 packets, wq 0.002, max_p 0.1, gentle on (ns-3 and Floyd's recommendations) | no defaults (tc requires them) |

use super::{Discipline, Ledger, QueueDrop, Queued};
use crate::Packet;
use airlink_engine::{Duration, Instant, RngStream};
use std::collections::VecDeque;

/// RED's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct RedParams {
    /// Average queue (packets) where early drops begin. Default 5 (ns-3's `MinTh`).
    pub min_th: f64,
    /// Average queue (packets) where the ramp reaches `max_p`. Default 15 (ns-3's `MaxTh`).
    pub max_th: f64,
    /// Drop probability at `max_th`. Default 0.1 (Floyd's recommendation).
    pub max_p: f64,
    /// Weight of the current queue in the average. Default 0.002 (Floyd & Jacobson).
    pub wq: f64,
    /// Ramp from `max_p` to 1 between `max_th` and `2·max_th`. Default on.
    pub gentle: bool,
    /// Mark ECN-capable packets instead of dropping them. Default off.
    pub ecn: bool,
}

impl Default for RedParams {
    fn default() -> Self {
        RedParams {
            min_th: 5.0,
            max_th: 15.0,
            max_p: 0.1,
            wq: 0.002,
            gentle: true,
            ecn: false,
        }
    }
}

/// The small packet of the idle-time decay, bytes (Floyd & Jacobson's "typical small packet").
const SMALL_PACKET_BYTES: u64 = 500;

pub struct Red<P> {
    params: RedParams,
    rng: RngStream,
    fifo: VecDeque<Queued<P>>,
    avg: f64,
    /// Arrivals since the last drop while the average was between the thresholds; −1 while it
    /// was below `min_th` (Floyd & Jacobson's initial value).
    count: i64,
    /// When the queue last emptied (for the idle decay); `None` while it holds packets.
    idle_since: Option<Instant>,
    small_packet_time: Option<Duration>,
}

impl<P> Red<P> {
    pub fn new(params: RedParams, rate_bps: Option<u64>, rng: RngStream) -> Self {
        Red {
            params,
            rng,
            fifo: VecDeque::new(),
            avg: 0.0,
            count: -1,
            idle_since: Some(Instant::ZERO),
            small_packet_time: rate_bps.map(|r| Duration::for_bits(SMALL_PACKET_BYTES * 8, r)),
        }
    }

    /// The base drop probability `p_b` at average queue `avg` (the ramp of the paper, and the
    /// gentle one above `max_th`).
    pub fn base_probability(&self, avg: f64) -> f64 {
        let RedParams {
            min_th,
            max_th,
            max_p,
            gentle,
            ..
        } = self.params;
        if avg < min_th {
            0.0
        } else if avg < max_th {
            max_p * (avg - min_th) / (max_th - min_th)
        } else if gentle && avg < 2.0 * max_th {
            max_p + (1.0 - max_p) * (avg - max_th) / max_th
        } else {
            1.0
        }
    }

    fn update_average(&mut self, now: Instant, queued: usize) {
        match self.idle_since.take() {
            Some(since) if queued == 0 => {
                // Idle: the average decays as if `m` small packets had gone by an empty queue.
                let m = match self.small_packet_time {
                    Some(s) if !s.is_zero() => {
                        now.saturating_since(since).as_nanos() as f64 / s.as_nanos() as f64
                    }
                    _ => 0.0,
                };
                self.avg *= (1.0 - self.params.wq).powf(m);
            }
            _ => self.avg += self.params.wq * (queued as f64 - self.avg),
        }
    }

    /// Decides on an arrival with the average at `self.avg`: true to drop (or mark).
    fn early_drop(&mut self) -> bool {
        let pb = self.base_probability(self.avg);
        if pb <= 0.0 {
            self.count = -1;
            return false;
        }
        if pb >= 1.0 {
            self.count = 0;
            return true;
        }
        self.count += 1;
        let denominator = 1.0 - self.count as f64 * pb;
        let pa = if denominator <= 0.0 {
            1.0
        } else {
            pb / denominator
        };
        if self.rng.uniform() < pa {
            self.count = 0;
            true
        } else {
            false
        }
    }
}

impl<P: Packet + Send> Discipline<P> for Red<P> {
    fn enqueue(&mut self, now: Instant, mut item: Queued<P>, ledger: &mut Ledger<P>) {
        self.update_average(now, self.fifo.len());
        if ledger.over_limit() {
            ledger.drop(item, QueueDrop::Overflow);
        } else if self.early_drop() && !(self.params.ecn && ledger.mark(&mut item)) {
            ledger.drop(item, QueueDrop::Aqm);
        } else {
            self.fifo.push_back(item);
        }
        if self.fifo.is_empty() {
            self.idle_since = Some(now);
        }
    }

    fn dequeue(&mut self, now: Instant, _ledger: &mut Ledger<P>) -> Option<Queued<P>> {
        let item = self.fifo.pop_front();
        if item.is_some() && self.fifo.is_empty() {
            self.idle_since = Some(now);
        }
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestPacket;

    fn red(gentle: bool) -> Red<TestPacket> {
        Red::new(
            RedParams {
                gentle,
                ..Default::default()
            },
            Some(10_000_000),
            RngStream::derive(1, "red"),
        )
    }

    /// The base probability: 0 below min_th, linear to max_p at max_th, then (gentle) linear to 1
    /// at 2·max_th, or (not gentle) 1 at once.
    #[test]
    fn the_probability_ramps_between_the_thresholds() {
        let (g, h) = (red(true), red(false));
        for (avg, gentle, hard) in [
            (0.0, 0.0, 0.0),
            (4.99, 0.0, 0.0),
            (5.0, 0.0, 0.0),
            (10.0, 0.05, 0.05),
            (14.0, 0.09, 0.09),
            (15.0, 0.1, 1.0),
            (22.5, 0.55, 1.0),
            (30.0, 1.0, 1.0),
        ] {
            assert!(
                (g.base_probability(avg) - gentle).abs() < 1e-12,
                "gentle at {avg}"
            );
            assert!((h.base_probability(avg) - hard).abs() < 1e-12, "at {avg}");
        }
    }

    /// With the average held at a point of the ramp, the count spreading makes the gap between
    /// drops nearly uniform (§7): the n-th arrival after a drop goes with p_b/(1 − n·p_b), so the
    /// share dropped is one over the mean gap of that law (2·p_b when 1/p_b is whole).
    #[test]
    fn drops_at_a_fixed_average_are_spread_uniformly() {
        for avg in [7.0, 10.0, 14.0] {
            let mut r = red(true);
            let pb = r.base_probability(avg);
            let n = 200_000;
            let mut dropped = 0;
            for _ in 0..n {
                r.avg = avg;
                dropped += r.early_drop() as u32;
            }
            let share = dropped as f64 / n as f64;
            let (mut survive, mut mean_gap, mut n) = (1.0, 0.0, 1.0);
            while survive > 1e-12 {
                let pa: f64 = if 1.0 - n * pb <= 0.0 {
                    1.0
                } else {
                    pb / (1.0 - n * pb)
                };
                mean_gap += n * survive * pa.min(1.0);
                survive *= 1.0 - pa.min(1.0);
                n += 1.0;
            }
            let want = 1.0 / mean_gap;
            assert!(
                (share / want - 1.0).abs() < 0.03,
                "avg {avg}: {share} vs {want}"
            );
        }
    }

    #[test]
    fn the_average_follows_the_queue_and_decays_when_idle() {
        let mut r = red(true);
        r.idle_since = None;
        for _ in 0..5000 {
            r.update_average(Instant::ZERO, 20);
        }
        assert!((r.avg - 20.0).abs() < 1e-3);
        // Idle for the time of 1000 small packets: decays by (1 − wq)^1000.
        r.idle_since = Some(Instant::from_millis(1000));
        let before = r.avg;
        r.update_average(Instant::from_millis(1400), 0);
        let want = before * (1.0f64 - 0.002).powf(1000.0);
        assert!((r.avg - want).abs() < 1e-6, "{} vs {want}", r.avg);
    }
}
