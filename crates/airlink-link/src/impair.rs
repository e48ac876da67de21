//! netem's impairments as a stage after any link: delay with jitter, loss (random with
//! correlation, Gilbert–Elliott, the 4-state model), duplication, corruption, reordering, a
//! rate with per-packet overhead, and slotting.
//!
//! [`Impaired`] wraps a link model: every packet the inner link delivers is handed to the
//! impairments at the instant it leaves the inner link, in the order of Linux's
//! `netem_enqueue` (`net/sched/sch_netem.c`), and held until its time to send, in a queue
//! ordered by that time (netem's `tfifo`). Both drivers step it like any link, so simulation
//! and emulation share it.
//!
//! Per packet, at the instant `t` it reaches the stage:
//! 1. duplicate with probability `duplicate` (a second copy goes through steps 3-4 too);
//! 2. lose it by the loss model (with a duplicate, one copy is lost);
//! 3. corrupt with probability `corrupt`: one uniformly chosen bit is flipped, and the packet
//!    travels on for the receiver's checksum to drop;
//! 4. time to send: with probability `reorder` (when `gap` packets have been delayed since the
//!    last reordered one) at once; otherwise `t + delay` with jitter from the distribution;
//!    with a `rate`, no earlier than the last held packet's time, plus the packet's
//!    transmission time of `len + overhead` bytes; with `slot`, at the first slot boundary at
//!    or after that time.
//!
//! Correlation is netem's `get_crandom`: the next uniform is `(1 − ρ)·u + ρ·previous` (which
//! also narrows the distribution, as in netem). Jitter is `μ + σ·x` with `x` from the
//! distribution's quantile at that uniform.
//!
//! | aspect | model | reference / deviation |
//! |---|---|---|
//! | uniform jitter | uniform on [μ − σ, μ + σ) (standard deviation σ/√3) | netem without a table |
//! | normal jitter | σ·Φ⁻¹(u) (standard deviation σ) | netem's `normal` table is Φ⁻¹ sampled at 4096 points; here the exact quantile |
//! | pareto jitter | Pareto of shape 3 standardised to mean 0, standard deviation 1 | a definition: netem's `pareto` table differs in its scale |
//! | paretonormal jitter | (0.25·N + 0.75·P)/√(0.25² + 0.75²), N from the correlated uniform, P from an independent one | netem tabulates the mixture's quantiles; here its definition |
//! | negative delay | sent at once | netem likewise (time to send in the past) |
//! | Gilbert–Elliott | netem's `loss_gilb_ell`: the state moves first, the loss is drawn with the old state's probability | `gemodel p r 1-h 1-k` |
//! | 4-state | netem's `loss_4state` (Salsano et al., "Definition of a general and intuitive loss model", 2012) | `state p13 p31 p32 p23 p14` |
//! | reorder | a reordered packet is sent at once | netem puts it at the head of its queue: the same instant |
//! | slot | boundaries at s₀ = 0, sₖ₊₁ = sₖ + U[min, max] | netem draws the next slot from the dequeue time and can cap packets/bytes per slot (not modelled) |
//! | rate | `len + overhead` bytes at `rate`, back to back after the last held packet | netem's cell size and cell overhead not modelled |

use crate::DropReason;
use crate::{CellStats, Link, LinkChange, LinkEvent, LinkSample, LinkStats, Packet};
use airlink_engine::{Duration, Instant, RngStream};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The jitter's distribution (netem's `distribution`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Distribution {
    #[default]
    Uniform,
    Normal,
    Pareto,
    ParetoNormal,
}

/// How packets are lost (netem's `loss`).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub enum LossModel {
    #[default]
    None,
    /// `loss random P [CORR]`.
    Random { p: f64, correlation: f64 },
    /// `loss gemodel p r 1-h 1-k`: good→bad `p`, bad→good `r`, loss in bad `loss_bad`
    /// (1 − h), loss in good `loss_good` (1 − k).
    GilbertElliott {
        p: f64,
        r: f64,
        loss_bad: f64,
        loss_good: f64,
    },
    /// `loss state p13 p31 p32 p23 p14`.
    FourState {
        p13: f64,
        p31: f64,
        p32: f64,
        p23: f64,
        p14: f64,
    },
}

/// netem's parameters; zero everywhere is no impairment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImpairParams {
    pub delay: Duration,
    pub jitter: Duration,
    pub delay_correlation: f64,
    pub distribution: Distribution,
    pub loss: LossModel,
    pub duplicate: f64,
    pub duplicate_correlation: f64,
    pub corrupt: f64,
    pub corrupt_correlation: f64,
    pub reorder: f64,
    pub reorder_correlation: f64,
    /// Packets delayed between reordered ones (netem's `gap`; 1 when `reorder` is given alone).
    pub gap: u32,
    pub rate_bps: Option<u64>,
    /// Bytes added to (or, negative, taken from) each packet's length for `rate`.
    pub packet_overhead: i32,
    /// Slot length drawn uniform in [min, max].
    pub slot: Option<(Duration, Duration)>,
}

/// netem's correlated uniform (`get_crandom`).
#[derive(Clone, Debug, Default)]
struct Correlated {
    last: f64,
}

impl Correlated {
    fn next(&mut self, rho: f64, rng: &mut RngStream) -> f64 {
        let u = rng.uniform();
        if rho <= 0.0 {
            return u;
        }
        self.last = (1.0 - rho) * u + rho * self.last;
        self.last
    }
}

/// The standard normal quantile Φ⁻¹(p) (Acklam's rational approximation, relative error
/// below 1.2e-9). Written here because the jitter needs the quantile of a correlated uniform,
/// which samplers (`rand_distr`) do not expose.
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// Pareto of shape 3 and scale 1 at quantile `u`, standardised (mean 1.5, sd √0.75).
fn pareto_standard(u: f64) -> f64 {
    let x = (1.0 - u).max(1e-300).powf(-1.0 / 3.0);
    (x - 1.5) / 0.75f64.sqrt()
}

/// A link followed by netem's impairments; see the module documentation.
pub struct Impaired<P> {
    inner: Box<dyn Link<P> + Send>,
    params: ImpairParams,
    rng: RngStream,
    delay_cor: Correlated,
    loss_cor: Correlated,
    dup_cor: Correlated,
    corrupt_cor: Correlated,
    reorder_cor: Correlated,
    /// Gilbert–Elliott: in the bad state; 4-state: the state (1 ... 4).
    ge_bad: bool,
    four_state: u8,
    /// Packets delayed since the last reordered one.
    counter: u32,
    /// The latest time to send of a held packet (for `rate`).
    last_send: Instant,
    /// The slot boundary at or before the latest one used, and its successor.
    slot_next: Instant,
    held: BinaryHeap<Reverse<(Instant, u64, HeldPacket<P>)>>,
    held_bytes: u64,
    seq: u64,
    outbox: VecDeque<(Instant, P)>,
    events: VecDeque<LinkEvent>,
    own: LinkStats,
    stats: LinkStats,
}

/// A held packet; ordered by (time, sequence) only.
struct HeldPacket<P>(P);
impl<P> PartialEq for HeldPacket<P> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<P> Eq for HeldPacket<P> {}
impl<P> PartialOrd for HeldPacket<P> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<P> Ord for HeldPacket<P> {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl<P: Packet> Impaired<P> {
    /// `inner` followed by the impairments of `params`, drawing from `rng`.
    pub fn new(inner: Box<dyn Link<P> + Send>, params: ImpairParams, rng: RngStream) -> Self {
        Impaired {
            inner,
            params,
            rng,
            delay_cor: Correlated::default(),
            loss_cor: Correlated::default(),
            dup_cor: Correlated::default(),
            corrupt_cor: Correlated::default(),
            reorder_cor: Correlated::default(),
            ge_bad: false,
            four_state: 1,
            counter: 0,
            last_send: Instant::ZERO,
            slot_next: Instant::ZERO,
            held: BinaryHeap::new(),
            held_bytes: 0,
            seq: 0,
            outbox: VecDeque::new(),
            events: VecDeque::new(),
            own: LinkStats::default(),
            stats: LinkStats::default(),
        }
    }

    /// True when the loss model loses the next packet.
    fn lose(&mut self) -> bool {
        let rng = &mut self.rng;
        match self.params.loss {
            LossModel::None => false,
            LossModel::Random { p, correlation } => {
                p > 0.0 && self.loss_cor.next(correlation, rng) < p
            }
            LossModel::GilbertElliott {
                p,
                r,
                loss_bad,
                loss_good,
            } => {
                if self.ge_bad {
                    if rng.uniform() < r {
                        self.ge_bad = false;
                    }
                    rng.uniform() < loss_bad
                } else {
                    if rng.uniform() < p {
                        self.ge_bad = true;
                    }
                    rng.uniform() < loss_good
                }
            }
            LossModel::FourState {
                p13,
                p31,
                p32,
                p23,
                p14,
            } => {
                let u = rng.uniform();
                match self.four_state {
                    1 if u < p14 => {
                        self.four_state = 4;
                        true
                    }
                    1 if u < p14 + p13 => {
                        self.four_state = 3;
                        true
                    }
                    2 if u < p23 => {
                        self.four_state = 3;
                        true
                    }
                    3 if u < p32 => {
                        self.four_state = 2;
                        false
                    }
                    3 if u < p32 + p31 => {
                        self.four_state = 1;
                        false
                    }
                    3 => true,
                    4 => {
                        self.four_state = 1;
                        false
                    }
                    _ => false,
                }
            }
        }
    }

    /// The delay with jitter (netem's `tabledist`), never negative.
    fn jittered_delay(&mut self) -> Duration {
        let (mu, sigma) = (
            self.params.delay.as_nanos() as f64,
            self.params.jitter.as_nanos() as f64,
        );
        if sigma <= 0.0 {
            return self.params.delay;
        }
        let u = self
            .delay_cor
            .next(self.params.delay_correlation, &mut self.rng);
        let x = match self.params.distribution {
            Distribution::Uniform => 2.0 * u - 1.0,
            Distribution::Normal => normal_quantile(u),
            Distribution::Pareto => pareto_standard(u),
            Distribution::ParetoNormal => {
                let p = pareto_standard(self.rng.uniform());
                (0.25 * normal_quantile(u) + 0.75 * p) / (0.25f64.powi(2) + 0.75f64.powi(2)).sqrt()
            }
        };
        Duration::from_nanos((mu + sigma * x).max(0.0).round() as u64)
    }

    /// The first slot boundary at or after `t`.
    fn slot_at(&mut self, t: Instant) -> Instant {
        let Some((lo, hi)) = self.params.slot else {
            return t;
        };
        while self.slot_next < t {
            let span = hi.as_nanos() - lo.as_nanos();
            let step = lo.as_nanos() + (self.rng.uniform() * span as f64) as u64;
            self.slot_next += Duration::from_nanos(step.max(1));
        }
        self.slot_next
    }

    /// A packet the inner link delivers at `t`.
    fn arrive(&mut self, t: Instant, mut pkt: P) {
        let p = self.params.clone();
        let mut copies = 1;
        if p.duplicate > 0.0
            && self.dup_cor.next(p.duplicate_correlation, &mut self.rng) < p.duplicate
        {
            copies += 1;
        }
        if self.lose() {
            copies -= 1;
            if copies == 0 {
                self.own.record_drop(
                    &mut self.events,
                    t,
                    pkt.flow(),
                    pkt.wire_len(),
                    DropReason::Loss,
                );
                return;
            }
        }
        if copies == 2 {
            if let Some(twin) = pkt.duplicate() {
                self.own.duplicated += 1;
                self.schedule(t, twin);
            }
        }
        if p.corrupt > 0.0
            && self.corrupt_cor.next(p.corrupt_correlation, &mut self.rng) < p.corrupt
        {
            let bits = pkt.wire_len() as u64 * 8;
            if bits > 0 {
                pkt.flip_bit(self.rng.below(bits));
                self.own.packets_corrupted += 1;
            }
        }
        self.schedule(t, pkt);
    }

    /// Step 4: the packet's time to send, and holding it until then.
    fn schedule(&mut self, t: Instant, pkt: P) {
        let p = &self.params;
        let reordered = p.reorder > 0.0
            && p.gap > 0
            && self.counter + 1 >= p.gap
            && self.reorder_cor.next(p.reorder_correlation, &mut self.rng) < p.reorder;
        let send = if reordered {
            self.counter = 0;
            self.own.reordered += 1;
            t
        } else {
            self.counter += 1;
            let mut send = t + self.jittered_delay();
            if let Some(rate) = self.params.rate_bps.filter(|&r| r > 0) {
                let bytes =
                    (pkt.wire_len() as i64 + self.params.packet_overhead as i64).max(0) as u64;
                let busy_until = if self.held.is_empty() {
                    t
                } else {
                    self.last_send
                };
                send =
                    send.max(busy_until) + Duration::from_nanos(bytes * 8 * 1_000_000_000 / rate);
            }
            let send = self.slot_at(send);
            self.last_send = self.last_send.max(send);
            send
        };
        self.held_bytes += pkt.wire_len() as u64;
        self.seq += 1;
        self.held.push(Reverse((send, self.seq, HeldPacket(pkt))));
    }

    /// Takes what the inner link delivered, and releases what is due at `now`.
    fn pump(&mut self, now: Instant) {
        while let Some((at, pkt)) = self.inner.poll_output() {
            self.arrive(at, pkt);
        }
        while let Some(ev) = self.inner.poll_event() {
            self.events.push_back(ev);
        }
        while let Some(Reverse((at, _, _))) = self.held.peek() {
            if *at > now {
                break;
            }
            let Reverse((at, _, HeldPacket(pkt))) = self.held.pop().expect("peeked");
            self.held_bytes -= pkt.wire_len() as u64;
            self.own.packets_out += 1;
            self.own.bytes_out += pkt.wire_len() as u64;
            self.outbox.push_back((at.max(now), pkt));
        }
        let mut s = self.inner.stats().clone();
        s.packets_out = self.own.packets_out;
        s.bytes_out = self.own.bytes_out;
        s.loss_drops += self.own.loss_drops;
        s.packets_corrupted += self.own.packets_corrupted;
        s.duplicated = self.own.duplicated;
        s.reordered = self.own.reordered;
        self.stats = s;
    }
}

impl<P: Packet> Link<P> for Impaired<P> {
    fn change(&mut self, now: Instant, c: &LinkChange) -> Result<(), String> {
        self.inner.change(now, c)
    }

    fn enqueue(&mut self, now: Instant, pkt: P) {
        self.inner.enqueue(now, pkt);
        self.pump(now);
    }

    fn poll_at(&self) -> Option<Instant> {
        let held = self.held.peek().map(|Reverse((at, _, _))| *at);
        match (self.inner.poll_at(), held) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.inner.poll_at().is_some_and(|t| t <= now) {
            self.inner.handle_timeout(now);
        }
        self.pump(now);
    }

    fn poll_output(&mut self) -> Option<(Instant, P)> {
        self.outbox.pop_front()
    }

    fn poll_event(&mut self) -> Option<LinkEvent> {
        self.events.pop_front()
    }

    fn stats(&self) -> &LinkStats {
        &self.stats
    }

    fn cell_stats(&self) -> Option<&CellStats> {
        self.inner.cell_stats()
    }

    fn sample(&mut self, now: Instant) -> LinkSample {
        let mut s = self.inner.sample(now);
        s.queue_packets += self.held.len() as u32;
        s.queue_bytes += self.held_bytes;
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestPacket;

    /// A link that delivers every packet at once.
    struct Wire(VecDeque<(Instant, TestPacket)>, LinkStats);
    impl Link<TestPacket> for Wire {
        fn enqueue(&mut self, now: Instant, pkt: TestPacket) {
            self.0.push_back((now, pkt));
        }
        fn poll_at(&self) -> Option<Instant> {
            None
        }
        fn handle_timeout(&mut self, _: Instant) {}
        fn poll_output(&mut self) -> Option<(Instant, TestPacket)> {
            self.0.pop_front()
        }
        fn poll_event(&mut self) -> Option<LinkEvent> {
            None
        }
        fn stats(&self) -> &LinkStats {
            &self.1
        }
        fn sample(&mut self, _: Instant) -> LinkSample {
            LinkSample::default()
        }
    }

    /// Sends `n` 1000-B packets one per ms through the impairments; returns (id, sent ms,
    /// delivered ms) in delivery order, and the stage.
    fn send(
        params: ImpairParams,
        n: u32,
        seed: u64,
    ) -> (Vec<(u32, f64, f64)>, Impaired<TestPacket>) {
        let wire = Box::new(Wire(VecDeque::new(), LinkStats::default()));
        let mut l = Impaired::new(wire, params, RngStream::derive(seed, "impair"));
        let mut out = Vec::new();
        let drain = |l: &mut Impaired<TestPacket>, out: &mut Vec<_>| {
            while let Some((at, p)) = l.poll_output() {
                out.push((p.id, p.id as f64, at.as_nanos() as f64 / 1e6));
            }
        };
        for i in 0..n {
            let now = Instant::from_millis(i as u64);
            while let Some(t) = l.poll_at().filter(|&t| t < now) {
                l.handle_timeout(t);
                drain(&mut l, &mut out);
            }
            l.enqueue(now, TestPacket::new(i, 1000));
            drain(&mut l, &mut out);
        }
        while let Some(t) = l.poll_at() {
            l.handle_timeout(t);
            drain(&mut l, &mut out);
        }
        (out, l)
    }

    fn mean_sd(x: &[f64]) -> (f64, f64) {
        let n = x.len() as f64;
        let m = x.iter().sum::<f64>() / n;
        let v = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0);
        (m, v.sqrt())
    }

    fn delays(out: &[(u32, f64, f64)]) -> Vec<f64> {
        out.iter().map(|(_, s, d)| d - s).collect()
    }

    #[test]
    fn normal_quantile_matches_known_values() {
        for (p, z) in [
            (0.5, 0.0),
            (0.975, 1.959963985),
            (0.01, -2.326347874),
            (0.8413447461, 1.0),
        ] {
            assert!((normal_quantile(p) - z).abs() < 1e-7, "{p}");
        }
    }

    #[test]
    fn jitter_has_the_distributions_mean_and_standard_deviation() {
        let n = 100_000;
        for (dist, sd) in [
            (Distribution::Normal, 10.0),
            (Distribution::Uniform, 10.0 / 3f64.sqrt()),
            (Distribution::Pareto, 10.0),
            (Distribution::ParetoNormal, 10.0),
        ] {
            let params = ImpairParams {
                delay: Duration::from_millis(50),
                jitter: Duration::from_millis(10),
                distribution: dist,
                ..Default::default()
            };
            let (out, _) = send(params, n, 1);
            let (m, s) = mean_sd(&delays(&out));
            println!("delay 50ms 10ms distribution {dist:?}: mean {m:.3} ms, sd {s:.3} ms (expected {sd:.3})");
            // Standard error of the mean 0.03 ms. A Pareto of shape 3 has no fourth moment, so
            // its sample standard deviation converges slowly (and from below).
            let tolerance = match dist {
                Distribution::Pareto | Distribution::ParetoNormal => 0.12,
                _ => 0.02,
            };
            assert!((m - 50.0).abs() < 0.3, "{dist:?}: mean {m}");
            assert!((s / sd - 1.0).abs() < tolerance, "{dist:?}: sd {s} vs {sd}");
        }
    }

    #[test]
    fn reorder_sends_its_share_at_once_and_gap_spaces_them() {
        let n = 100_000;
        for (p, gap) in [(0.25, 1u32), (0.25, 5), (0.1, 3)] {
            let params = ImpairParams {
                delay: Duration::from_millis(10),
                reorder: p,
                gap,
                ..Default::default()
            };
            let (out, l) = send(params, n, 2);
            // One reordered per cycle of gap − 1 delayed packets and a geometric wait.
            let expected = p / (1.0 + (gap - 1) as f64 * p);
            let share = l.stats().reordered as f64 / n as f64;
            println!("reorder {p} gap {gap}: {share:.4} sent at once (expected {expected:.4})");
            assert!(
                (share - expected).abs() < 0.005,
                "p {p} gap {gap}: {share} vs {expected}"
            );
            // Each one overtakes the packets sent in the 10 ms before it.
            let at_once = out.iter().filter(|(_, s, d)| d == s).count();
            assert_eq!(at_once as u64, l.stats().reordered);
        }
    }

    /// netem's correlation narrows the uniform it draws from, so `reorder 25% 50%` reorders
    /// fewer than 25 %: (1 − ρ)·u + ρ·prev has mean ½ and a smaller spread. The share must lie
    /// between the uncorrelated 25 % and 0 and match a direct simulation of the same recursion.
    #[test]
    fn correlated_reorder_follows_netems_recursion() {
        let n = 200_000;
        let params = ImpairParams {
            delay: Duration::from_millis(10),
            reorder: 0.25,
            reorder_correlation: 0.5,
            gap: 1,
            ..Default::default()
        };
        let (out, l) = send(params, n, 11);
        let share = l.stats().reordered as f64 / n as f64;
        // The same recursion on its own stream.
        let mut rng = RngStream::derive(99, "recursion");
        let (mut last, mut hits) = (0.0, 0);
        for _ in 0..n {
            last = 0.5 * rng.uniform() + 0.5 * last;
            hits += (last < 0.25) as u32;
        }
        let direct = hits as f64 / n as f64;
        // Packets overtaken: delivered after a packet with a higher id.
        let mut highest = 0;
        let overtaken = out
            .iter()
            .filter(|(id, ..)| {
                let o = *id < highest;
                highest = highest.max(*id);
                o
            })
            .count();
        println!("reorder 25% 50%: {share:.4} sent at once (the recursion alone: {direct:.4}); {:.4} of packets arrive after a later one", overtaken as f64 / n as f64);
        assert!(
            share < 0.25 && (share - direct).abs() < 0.005,
            "{share} vs {direct}"
        );
    }

    #[test]
    fn duplicate_and_corrupt_hit_their_shares() {
        let n = 100_000;
        let params = ImpairParams {
            duplicate: 0.05,
            corrupt: 0.02,
            ..Default::default()
        };
        let (out, l) = send(params, n, 3);
        let dup = l.stats().duplicated as f64 / n as f64;
        assert!((dup - 0.05).abs() < 0.004, "{dup}");
        assert_eq!(out.len() as u64, n as u64 + l.stats().duplicated);
        let corrupt = l.stats().packets_corrupted as f64 / out.len() as f64;
        assert!((corrupt - 0.02).abs() < 0.003, "{corrupt}");
    }

    /// Loss runs (bursts) in delivery order of ids.
    fn loss_runs(out: &[(u32, f64, f64)], n: u32) -> (f64, f64) {
        let mut got = vec![false; n as usize];
        for (id, ..) in out {
            got[*id as usize] = true;
        }
        let lost = got.iter().filter(|g| !**g).count();
        let bursts = got.windows(2).filter(|w| w[0] && !w[1]).count() + (!got[0]) as usize;
        (lost as f64 / n as f64, lost as f64 / bursts as f64)
    }

    #[test]
    fn gilbert_elliott_has_its_stationary_loss_and_mean_burst() {
        let n = 400_000;
        let (p, r) = (0.01, 0.25);
        let params = ImpairParams {
            loss: LossModel::GilbertElliott {
                p,
                r,
                loss_bad: 1.0,
                loss_good: 0.0,
            },
            ..Default::default()
        };
        let (out, _) = send(params, n, 4);
        let (rate, burst) = loss_runs(&out, n);
        let (rate_cf, burst_cf) = (p / (p + r), 1.0 / r);
        println!("gemodel p {p} r {r}: loss {rate:.5} (closed form {rate_cf:.5}), mean burst {burst:.3} (closed form {burst_cf:.3})");
        assert!((rate / rate_cf - 1.0).abs() < 0.05, "{rate} vs {rate_cf}");
        assert!(
            (burst / burst_cf - 1.0).abs() < 0.05,
            "{burst} vs {burst_cf}"
        );
    }

    #[test]
    fn four_state_loss_has_its_stationary_loss_and_mean_burst() {
        let n = 400_000;
        let (p13, p31) = (0.02, 0.4);
        let params = ImpairParams {
            loss: LossModel::FourState {
                p13,
                p31,
                p32: 0.0,
                p23: 1.0,
                p14: 0.0,
            },
            ..Default::default()
        };
        let (out, _) = send(params, n, 5);
        let (rate, burst) = loss_runs(&out, n);
        let (rate_cf, burst_cf) = (p13 / (p13 + p31), 1.0 / p31);
        assert!((rate / rate_cf - 1.0).abs() < 0.05, "{rate} vs {rate_cf}");
        assert!(
            (burst / burst_cf - 1.0).abs() < 0.05,
            "{burst} vs {burst_cf}"
        );
    }

    #[test]
    fn random_loss_with_correlation_keeps_near_its_rate() {
        let params = ImpairParams {
            loss: LossModel::Random {
                p: 0.1,
                correlation: 0.0,
            },
            ..Default::default()
        };
        let (out, _) = send(params, 100_000, 6);
        let (rate, _) = loss_runs(&out, 100_000);
        assert!((rate - 0.1).abs() < 0.005, "{rate}");
    }

    #[test]
    fn rate_spaces_packets_by_their_length_and_overhead() {
        // 1000 B + 24 B at 4 Mbit/s = 2.048 ms per packet; packets arrive every 1 ms.
        let params = ImpairParams {
            rate_bps: Some(4_000_000),
            packet_overhead: 24,
            ..Default::default()
        };
        let (out, _) = send(params, 100, 7);
        let t: Vec<f64> = out.iter().map(|o| o.2).collect();
        assert!((t[0] - 2.048).abs() < 1e-6);
        assert!(
            t.windows(2).all(|w| (w[1] - w[0] - 2.048).abs() < 1e-6),
            "{t:?}"
        );
    }

    #[test]
    fn slot_releases_packets_at_boundaries_spaced_within_min_and_max() {
        let params = ImpairParams {
            slot: Some((Duration::from_micros(800), Duration::from_millis(5))),
            ..Default::default()
        };
        let (out, _) = send(params, 2000, 8);
        let mut bounds: Vec<f64> = out.iter().map(|o| o.2).collect();
        bounds.dedup();
        assert!(bounds.len() < 1000, "packets share slots");
        // Used boundaries are at least `min` apart; no packet waits longer than `max`.
        assert!(bounds.windows(2).all(|w| w[1] - w[0] >= 0.8 - 1e-9));
        assert!(out.iter().all(|(_, s, d)| d - s <= 5.0 + 1e-9));
        assert!(out.iter().all(|(_, s, d)| d >= s));
    }

    #[test]
    fn the_same_seed_gives_the_same_impairments() {
        let params = ImpairParams {
            delay: Duration::from_millis(20),
            jitter: Duration::from_millis(5),
            delay_correlation: 0.25,
            loss: LossModel::Random {
                p: 0.05,
                correlation: 0.25,
            },
            duplicate: 0.01,
            reorder: 0.05,
            gap: 1,
            ..Default::default()
        };
        let a = send(params.clone(), 5000, 9).0;
        assert_eq!(a, send(params.clone(), 5000, 9).0);
        assert_ne!(a, send(params, 5000, 10).0);
    }
}
