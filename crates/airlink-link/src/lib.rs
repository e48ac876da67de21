//! Link models: what happens to a packet between two nodes.
//!
//! A link is a sans-IO state machine driven by its caller (the simulation engine or the
//! real-time datapath). The contract, with `now` never decreasing between calls:
//!
//! 1. [`Link::enqueue`] hands the link a packet that arrives at its input at `now`;
//! 2. [`Link::poll_at`] says when the link next needs [`Link::handle_timeout`] (e.g. the next
//!    radio slot while it has work); `None` means it is idle and needs no wake-up;
//! 3. after any call, [`Link::poll_output`] yields the packets that leave the link, each with
//!    the instant it is due at the next stage (never earlier than `now`), in order of that
//!    instant; [`Link::poll_event`] yields drops and other events for the metrics.
//!
//! Links never read a clock, never draw from a global RNG (each owns the [`RngStream`]s it
//! is given) and never see packet contents beyond [`Packet`]: the same model carries the
//! simulator's header-only segments and the emulator's real bytes.
//!
//! [`RngStream`]: airlink_engine::RngStream

mod cell;
mod granular;
mod impair;
mod leo;
mod ofdm4g;
mod pipe;
pub mod queue;
mod trace;
mod trace_series;
mod wlan;

pub use cell::{CellDownlink, CellError, CellParams, CellStats, CellUserStats, FerModel, RateSet};
pub use granular::Granular;
pub use impair::{normal_quantile, Distribution, ImpairParams, Impaired, LossModel};
pub use leo::{LeoLink, LeoParams, Place, Shell, SPEED_OF_LIGHT};
pub use ofdm4g::{Ofdm4gDownlink, Ofdm4gModulation, Ofdm4gParams, SlotAllocation};
pub use pipe::{Pipe, PipeParams, QueueLimit};
pub use trace::{read_trace_text, Trace, TraceError, TraceLink, TraceParams, OPPORTUNITY_BYTES};
pub use trace_series::{CsvTrace, Series, SeriesKind};
pub use wlan::{
    bianchi_saturation_bps, Association, Attachment, WlanError, WlanLink, WlanNodeStats,
    WlanParams, WlanRoute, WlanStats,
};

use airlink_engine::{Duration, Instant};
use std::collections::VecDeque;

/// What a link needs to know about a packet.
pub trait Packet {
    /// Size on the wire (IP packet) in bytes.
    fn wire_len(&self) -> u32;
    /// Flips bit `bit` (0 = most significant bit of the first byte) of the packet: the
    /// simulator records the corruption, the emulator flips the real bit.
    fn flip_bit(&mut self, bit: u64);
    /// The flow the packet belongs to, for drop accounting.
    fn flow(&self) -> u32;
    /// The packet's direction, for links that carry both directions of a flow (the shared
    /// WLAN medium); `None` where the packet does not know it.
    fn direction(&self) -> Option<Direction> {
        None
    }
    /// A copy of the packet, for links that duplicate (netem's `duplicate`); `None` where
    /// the packet cannot be copied (the copy is then not made).
    fn duplicate(&self) -> Option<Self>
    where
        Self: Sized,
    {
        None
    }
    /// A hash of the packet's 5-tuple (addresses, protocol, ports), unseeded: a queue that
    /// sorts packets by flow (FQ-CoDel) mixes its own seed in. The default stands for the
    /// 5-tuple by the flow and direction, which name it in the simulator (one port pair per flow).
    fn flow_hash(&self) -> u32 {
        let dir = match self.direction() {
            None => 0,
            Some(Direction::Down) => 1,
            Some(Direction::Up) => 2,
        };
        self.flow().wrapping_mul(4) | dir
    }
    /// The ECN field of the packet's IP header (RFC 3168).
    fn ecn(&self) -> Ecn {
        Ecn::NotEct
    }
    /// Sets the ECN field to Congestion Experienced; called only on ECN-capable packets.
    fn set_ce(&mut self) {}
}

/// The ECN field of an IP header (RFC 3168 §5).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Ecn {
    /// 00: not ECN-capable.
    #[default]
    NotEct,
    /// 01: ECN-capable transport, ECT(1).
    Ect1,
    /// 10: ECN-capable transport, ECT(0).
    Ect0,
    /// 11: congestion experienced.
    Ce,
}

impl Ecn {
    /// The two bits as in the IP header.
    pub fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0,
            Ecn::Ect1 => 1,
            Ecn::Ect0 => 2,
            Ecn::Ce => 3,
        }
    }
    pub fn from_bits(b: u8) -> Ecn {
        match b & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
    /// True for a packet of an ECN-capable transport (already marked CE included: marking it
    /// again changes nothing and it need not be dropped, as Linux's `INET_ECN_set_ce`).
    pub fn is_ect(self) -> bool {
        self != Ecn::NotEct
    }
}

/// Direction of travel of a packet within its flow.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Server to client.
    Down,
    /// Client to server.
    Up,
}

/// Why a link dropped a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DropReason {
    /// The queue was full (drop-tail).
    Queue,
    /// Random loss of the link (`loss` probability).
    Loss,
    /// A MAC gave up on the packet's frame after its retry limit.
    RetryLimit,
    /// Its station had left the access point (a WLAN hand-off).
    Handoff,
    /// The queue's discipline dropped it early (CoDel, PIE, RED; see [`queue`]).
    Aqm,
}

impl DropReason {
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::Queue => "queue",
            DropReason::Loss => "loss",
            DropReason::RetryLimit => "retry_limit",
            DropReason::Handoff => "handoff",
            DropReason::Aqm => "aqm",
        }
    }
}

/// Something that happened inside a link, for the event log.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum LinkEvent {
    /// A packet was dropped.
    Drop {
        at: Instant,
        flow: u32,
        bytes: u32,
        reason: DropReason,
    },
    /// ARQ gave up on a frame: the packet leaves with bit errors.
    ArqGaveUp {
        at: Instant,
        flow: u32,
        bit_errors: u32,
    },
    /// A cell served `user` in slot `slot` (starting `at`) at `rate_bps`; the frame failed
    /// when `frame_error`. Only from a cell that logs its slots (`CellParams::record_slots`).
    Served {
        at: Instant,
        slot: u64,
        user: u32,
        rate_bps: u64,
        frame_error: bool,
    },
}

/// Counters common to all links, plus model-specific ones (zero where not applicable).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkStats {
    pub packets_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    pub queue_drops: u64,
    pub loss_drops: u64,
    /// Packets that left with at least one flipped bit.
    pub packets_corrupted: u64,
    /// Radio frames transmitted (first transmissions and retransmissions).
    pub frames_sent: u64,
    /// Frames received in error.
    pub frame_errors: u64,
    /// Link-layer retransmissions.
    pub arq_retransmissions: u64,
    /// Packets released with bit errors because ARQ gave up on one of their frames.
    pub packets_given_up: u64,
    /// Radio slots spent in each modulation, indexed by bits per symbol - 1.
    pub slots_per_modulation: [u64; 8],
    /// Slot duration in seconds, to turn `slots_per_modulation` into time.
    pub slot_duration_s: f64,
    /// Copies made by netem's `duplicate`.
    pub duplicated: u64,
    /// Packets sent ahead of their delay by netem's `reorder`.
    pub reordered: u64,
}

impl LinkStats {
    /// The one place a link counts a drop and logs it: queue overflows and AQM drops are queue
    /// drops, everything else (random loss, retry limit, hand-off) a loss drop.
    pub fn record_drop(
        &mut self,
        events: &mut VecDeque<LinkEvent>,
        at: Instant,
        flow: u32,
        bytes: u32,
        reason: DropReason,
    ) {
        match reason {
            DropReason::Queue | DropReason::Aqm => self.queue_drops += 1,
            DropReason::Loss | DropReason::RetryLimit | DropReason::Handoff => self.loss_drops += 1,
        }
        events.push_back(LinkEvent::Drop {
            at,
            flow,
            bytes,
            reason,
        });
    }
}

/// A snapshot for the sampled time series.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct LinkSample {
    pub queue_packets: u32,
    pub queue_bytes: u64,
    /// Radio links: true and predicted SNR (dB) of the sub-band used at the sample instant,
    /// the modulation (bits per symbol) adaptive modulation would choose there, the sub-band.
    pub radio: Option<RadioSample>,
}

#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct RadioSample {
    pub snr_db: f64,
    pub predicted_snr_db: f64,
    pub modulation_bits: u32,
    pub subband: u32,
}

/// New values for some of a running link's parameters (a scenario's timed change); `None`
/// keeps the current value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkChange {
    pub rate_bps: Option<u64>,
    pub delay: Option<Duration>,
    pub queue_limit: Option<QueueLimit>,
    pub loss: Option<f64>,
    pub bit_error_rate: Option<f64>,
    /// A radio channel's mean SNR, dB.
    pub mean_snr_db: Option<f64>,
}

/// A link model; see the crate documentation for the call contract.
pub trait Link<P: Packet> {
    /// Applies a timed change at `now`. A model changes only the parameters it can (and says
    /// which in the scenario schema, `LinkModel::changeable`); the default refuses them all.
    fn change(&mut self, _now: Instant, _c: &LinkChange) -> Result<(), String> {
        Err("this link model cannot change its parameters while it runs".into())
    }
    fn enqueue(&mut self, now: Instant, pkt: P);
    fn poll_at(&self) -> Option<Instant>;
    fn handle_timeout(&mut self, now: Instant);
    fn poll_output(&mut self) -> Option<(Instant, P)>;
    fn poll_event(&mut self) -> Option<LinkEvent>;
    fn stats(&self) -> &LinkStats;
    /// Per-user counters of a multi-user cell; `None` for single-user links.
    fn cell_stats(&self) -> Option<&CellStats> {
        None
    }
    /// The queue discipline's counters, for a link given one (`aqm`); `None` for a link's own
    /// drop-tail queue.
    fn queue_stats(&self) -> Option<&queue::QueueStats> {
        None
    }
    /// State at `now` for the time series (may evaluate the channel at `now`).
    fn sample(&mut self, now: Instant) -> LinkSample;
}

/// Flips each bit of a packet independently with probability `ber`, by jumping between errors
/// with geometric gaps (cost proportional to the number of errors).
fn apply_bit_errors<P: Packet>(pkt: &mut P, ber: f64, rng: &mut airlink_engine::RngStream) -> u32 {
    flip_bits(pkt, 0, pkt.wire_len() as u64 * 8, ber, rng)
}

/// Flips each of the `n` bits from `start` on independently with probability `ber`.
fn flip_bits<P: Packet>(
    pkt: &mut P,
    start: u64,
    n: u64,
    ber: f64,
    rng: &mut airlink_engine::RngStream,
) -> u32 {
    if ber <= 0.0 {
        return 0;
    }
    if ber >= 1.0 {
        for b in start..start + n {
            pkt.flip_bit(b);
        }
        return n as u32;
    }
    let log_q = (-ber).ln_1p();
    let mut flipped = 0;
    let mut pos: u64 = 0;
    loop {
        // Number of intact bits before the next error: Geometric(ber) on {0, 1, ...}.
        let gap = (rng.uniform_open0().ln() / log_q).floor();
        if gap >= (n - pos) as f64 {
            return flipped;
        }
        pos += gap as u64;
        pkt.flip_bit(start + pos);
        flipped += 1;
        pos += 1;
    }
}

/// The bit error rate within an error burst: a decoder that lost track emits random bits.
pub const BURST_BER: f64 = 0.5;

/// A link's bit errors: independent, or in bursts (a Gilbert–Elliott channel that advances
/// over the bits the link sends). In bursts, the bad state flips each bit with probability
/// [`BURST_BER`] and the good state none; bad periods are geometric on {1, 2, ...} with mean
/// `burst_bits`, good ones geometric on {0, 1, ...} with mean `burst_bits·(BURST_BER − ber)/ber`,
/// so that the long-run share of flipped bits is `ber`.
#[derive(Clone, Debug, Default)]
pub struct BitErrors {
    /// The current state (true = bad) and the bits left in its period; `None` before the first bit.
    period: Option<(bool, u64)>,
}

impl BitErrors {
    /// Corrupts `pkt` at mean bit error rate `ber` (≤ [`BURST_BER`] in bursts); returns the
    /// number of bits flipped.
    pub fn apply<P: Packet>(
        &mut self,
        pkt: &mut P,
        ber: f64,
        burst_bits: Option<u32>,
        rng: &mut airlink_engine::RngStream,
    ) -> u32 {
        let Some(burst) = burst_bits else {
            return apply_bit_errors(pkt, ber, rng);
        };
        if ber <= 0.0 {
            return 0;
        }
        let bits = pkt.wire_len() as u64 * 8;
        let (mut pos, mut flipped) = (0, 0);
        while pos < bits {
            let (bad, left) = self.current(ber, burst as f64, rng);
            let n = left.min(bits - pos);
            if bad {
                flipped += flip_bits(pkt, pos, n, BURST_BER, rng);
            }
            pos += n;
            self.period = Some((bad, left - n));
        }
        flipped
    }

    /// The state and a period of at least one bit, drawing new periods as old ones end (the
    /// first state from the stationary distribution).
    fn current(
        &mut self,
        ber: f64,
        burst: f64,
        rng: &mut airlink_engine::RngStream,
    ) -> (bool, u64) {
        let good_mean = burst * (BURST_BER - ber).max(0.0) / ber;
        let mut period = match self.period {
            Some(p) => p,
            None => {
                let bad = rng.bernoulli(burst / (burst + good_mean));
                (bad, Self::length(bad, burst, good_mean, rng))
            }
        };
        while period.1 == 0 {
            let bad = !period.0;
            period = (bad, Self::length(bad, burst, good_mean, rng));
        }
        period
    }

    fn length(bad: bool, burst: f64, good_mean: f64, rng: &mut airlink_engine::RngStream) -> u64 {
        // Geometric: the bad period on {1, 2, ...} with mean `burst`, the good one on {0, 1, ...}
        // with mean `good_mean`; each is the number of trials before the first stop.
        let (stay, base) = if bad {
            (1.0 - 1.0 / burst, 1)
        } else {
            (good_mean / (1.0 + good_mean), 0)
        };
        if stay <= 0.0 {
            return base;
        }
        base + (rng.uniform_open0().ln() / stay.ln())
            .floor()
            .min(u64::MAX as f64 / 2.0) as u64
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use super::Packet;

    /// A test packet that records its flipped bits.
    #[derive(Clone, Debug, PartialEq)]
    pub struct TestPacket {
        pub id: u32,
        pub len: u32,
        pub flipped: Vec<u64>,
        pub flow: u32,
        pub ecn: super::Ecn,
    }

    impl TestPacket {
        pub fn new(id: u32, len: u32) -> Self {
            TestPacket {
                id,
                len,
                flipped: Vec::new(),
                flow: 0,
                ecn: super::Ecn::NotEct,
            }
        }
    }

    impl Packet for TestPacket {
        fn wire_len(&self) -> u32 {
            self.len
        }
        fn flip_bit(&mut self, bit: u64) {
            assert!(
                bit < self.len as u64 * 8,
                "bit {bit} outside a {}-byte packet",
                self.len
            );
            self.flipped.push(bit);
        }
        fn flow(&self) -> u32 {
            self.flow
        }
        fn ecn(&self) -> super::Ecn {
            self.ecn
        }
        fn set_ce(&mut self) {
            self.ecn = super::Ecn::Ce;
        }
        fn duplicate(&self) -> Option<Self> {
            Some(self.clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::TestPacket;
    use super::*;
    use airlink_engine::RngStream;

    #[test]
    fn bit_errors_hit_at_the_requested_rate_and_stay_inside_the_packet() {
        let mut rng = RngStream::derive(1, "ber");
        let (mut errors, mut bits, mut hit) = (0u64, 0u64, 0u64);
        for i in 0..20_000 {
            let mut p = TestPacket::new(i, 1500);
            let n = apply_bit_errors(&mut p, 1e-5, &mut rng);
            assert_eq!(n as usize, p.flipped.len());
            errors += n as u64;
            bits += 12_000;
            hit += (n > 0) as u64;
        }
        let ber = errors as f64 / bits as f64;
        assert!((ber / 1e-5 - 1.0).abs() < 0.05, "ber {ber}");
        // Spec D test vector: packet error rate of 1500 B at BER 1e-5 is 11.31 %.
        let per = hit as f64 / 20_000.0;
        assert!((per - 0.1131).abs() < 0.01, "per {per}");
    }

    /// Bursts: the long-run bit error rate is the one asked for, and the errors cluster. A
    /// packet of b bits meets a burst when one starts within it or in the mean burst length L_b
    /// before it: bursts start once per L_g + L_b bits, so the packet error rate is about
    /// (b + L_b)/(L_g + L_b), with L_g = L_b·(0.5 − ber)/ber (less the few bursts that flip nothing).
    #[test]
    fn bursts_keep_the_mean_rate_and_corrupt_fewer_packets() {
        let (ber, burst) = (1e-5, 40u32);
        let mut rng = RngStream::derive(1, "burst");
        let mut channel = BitErrors::default();
        let packets = 400_000;
        let (mut errors, mut hit) = (0u64, 0u64);
        for i in 0..packets {
            let mut p = TestPacket::new(i, 1500);
            let n = channel.apply(&mut p, ber, Some(burst), &mut rng);
            assert_eq!(n as usize, p.flipped.len());
            assert!(p.flipped.iter().all(|&b| b < 12_000));
            errors += n as u64;
            hit += (n > 0) as u64;
        }
        let mean = errors as f64 / (packets as f64 * 12_000.0);
        assert!((mean / ber - 1.0).abs() < 0.1, "mean ber {mean}");
        let good = burst as f64 * (BURST_BER - ber) / ber;
        let expected = (12_000.0 + burst as f64) / (good + burst as f64);
        let per = hit as f64 / packets as f64;
        assert!(
            (per / expected - 1.0).abs() < 0.1,
            "per {per}, expected about {expected}"
        );
        // Independent errors at the same rate would corrupt 11.3 % of the packets.
        assert!(per < 0.1131 / 10.0);
    }

    #[test]
    fn bursts_at_one_half_flip_every_other_bit_on_average() {
        let mut rng = RngStream::derive(2, "burst");
        let mut channel = BitErrors::default();
        let flipped: u32 = (0..200)
            .map(|i| channel.apply(&mut TestPacket::new(i, 1500), 0.5, Some(8), &mut rng))
            .sum();
        let share = flipped as f64 / (200.0 * 12_000.0);
        assert!((share - 0.5).abs() < 0.01, "share {share}");
    }

    #[test]
    fn without_a_burst_length_the_errors_are_the_independent_ones() {
        let (mut a, mut b) = (RngStream::derive(3, "x"), RngStream::derive(3, "x"));
        let mut channel = BitErrors::default();
        for i in 0..2_000 {
            let (mut p, mut q) = (TestPacket::new(i, 1500), TestPacket::new(i, 1500));
            assert_eq!(
                channel.apply(&mut p, 1e-4, None, &mut a),
                apply_bit_errors(&mut q, 1e-4, &mut b)
            );
            assert_eq!(p.flipped, q.flipped);
        }
    }
}
