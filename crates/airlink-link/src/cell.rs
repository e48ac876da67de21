//! The downlink of a multi-user cell (spec C.1–C.2, \[S2\] Klein/Leung/Zheng): one base station
//! serves N users in slots, one user per slot, chosen by an opportunistic scheduler.
//!
//! Packets wait in per-user MAC queues at the base station; a packet's user is found from its
//! flow through the `user_of_flow` table. In slot n every user's true and estimated SINR come
//! from the [`CellChannel`]; a user's rate R_i\[n\] is the highest of the [`RateSet`] whose
//! threshold the *estimated* SINR reaches (0 below the lowest). The [`Scheduler`] picks an
//! eligible user (data queued, R > 0). Its frame carries R × slot bits from the head of its
//! queue, across packet boundaries; the frame is lost with the probability [`FerModel`] gives
//! for the *true* SINR against the chosen rate's threshold, in which case its bits stay at the
//! head and go again when the user is next served. A packet leaves at the end of the slot in
//! which its last bit got through.
//!
//! Random draws are counter-based: the frame of user i in slot n fails when
//! `hashed_uniform(n)` of substream `"frames/user{i}"` is below the FER, and ties use substream
//! `"ties"`. With the channel also a function of (seed, user, slot), every scheduler run from
//! the same seed sees the same placements, fading, estimation noise and error draws.
//!
//! | aspect | airlink | \[S2\] / spec |
//! |---|---|---|
//! | SINR → rate | Shannon gap θ(R) = Γ(2^{R/W} − 1), W = 1.2288 MHz, Γ = 5 dB (−2.04 … 10.10 dB) | "1 % FER requirement", no table: C.1 (A) |
//! | frame errors | `waterfall`: FER = 1/(1 + 99·10^{Δ/1 dB}), Δ = true SINR − θ(R), 1 % at the threshold (default); `iid`: a fixed FER per frame | C.1 (A); the literal reading of \[S2\] is `iid` 1 % |
//! | errored frame | its bits stay at the head of the queue and go again at the user's next turn | C.1 (A) |
//! | bits per slot | ⌊R / slots per second⌋ (R × 5 ms: 1600 … 12 800 bits) | C.1 |
//! | MAC queues | unbounded (default), or drop-tail per user | "infinite buffers" |
//! | scheduler input | R from the estimated SINR, q in bits before the decision | C.2 |
//! | idle cell | no wake-ups while every queue is empty; the scheduler is told how many slots passed | (A) |

use crate::pipe::QueueLimit;
use crate::{DropReason, Link, LinkEvent, LinkSample, LinkStats, Packet};
use airlink_channel::CellChannel;
use airlink_engine::{Instant, RngStream};
use airlink_sched::{Scheduler, SchedulerConfig, SchedulerError, Slot, Ties};
use std::collections::{HashMap, VecDeque};
use std::fmt;

/// The rates a user can be given and the SINR each needs at the target frame error rate.
#[derive(Clone, Debug, PartialEq)]
pub struct RateSet {
    rates_bps: Vec<u64>,
    thresholds_db: Vec<f64>,
}

impl RateSet {
    /// \[S2\]'s rates in kbit/s.
    pub const STUDY_KBPS: [u64; 6] = [320, 480, 640, 1280, 1920, 2560];
    /// EV-DO chip rate, the bandwidth W of the default thresholds (spec C.1 (A)).
    pub const EVDO_BANDWIDTH_HZ: f64 = 1.2288e6;
    /// Shannon gap Γ of the default thresholds (spec C.1 (A)).
    pub const DEFAULT_GAP_DB: f64 = 5.0;

    /// Rates (bit/s, strictly increasing, positive) with their SINR thresholds (dB, finite,
    /// non-decreasing).
    pub fn new(rates_bps: Vec<u64>, thresholds_db: Vec<f64>) -> Result<Self, CellError> {
        if rates_bps.is_empty() || rates_bps.len() != thresholds_db.len() {
            return Err(CellError::RateSet(
                "needs at least one rate and one threshold per rate".into(),
            ));
        }
        if rates_bps[0] == 0 || rates_bps.windows(2).any(|w| w[0] >= w[1]) {
            return Err(CellError::RateSet(format!(
                "rates must be positive and strictly increasing, got {rates_bps:?}"
            )));
        }
        if thresholds_db.iter().any(|t| !t.is_finite())
            || thresholds_db.windows(2).any(|w| w[0] > w[1])
        {
            return Err(CellError::RateSet(format!(
                "thresholds must be finite and non-decreasing, got {thresholds_db:?}"
            )));
        }
        Ok(RateSet {
            rates_bps,
            thresholds_db,
        })
    }

    /// Thresholds θ(R) = Γ·(2^{R/W} − 1) for bandwidth `bandwidth_hz` and gap `gap_db`.
    pub fn shannon_gap(
        rates_bps: Vec<u64>,
        bandwidth_hz: f64,
        gap_db: f64,
    ) -> Result<Self, CellError> {
        if !(bandwidth_hz.is_finite() && bandwidth_hz > 0.0 && gap_db.is_finite()) {
            return Err(CellError::RateSet(format!("bandwidth {bandwidth_hz} Hz and gap {gap_db} dB must be finite, the bandwidth positive")));
        }
        let thresholds = rates_bps
            .iter()
            .map(|&r| gap_db + 10.0 * (2f64.powf(r as f64 / bandwidth_hz) - 1.0).log10())
            .collect();
        Self::new(rates_bps, thresholds)
    }

    /// \[S2\]'s rate set with spec C.1's thresholds.
    pub fn study() -> Self {
        let rates = Self::STUDY_KBPS.iter().map(|k| k * 1000).collect();
        Self::shannon_gap(rates, Self::EVDO_BANDWIDTH_HZ, Self::DEFAULT_GAP_DB)
            .expect("the study's rate set is valid")
    }

    /// Index of the highest rate whose threshold `sinr_db` reaches, if any.
    pub fn select(&self, sinr_db: f64) -> Option<usize> {
        self.thresholds_db.iter().rposition(|&t| sinr_db >= t)
    }

    pub fn len(&self) -> usize {
        self.rates_bps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rates_bps.is_empty()
    }

    pub fn rate_bps(&self, i: usize) -> u64 {
        self.rates_bps[i]
    }

    pub fn threshold_db(&self, i: usize) -> f64 {
        self.thresholds_db[i]
    }
}

/// Frame error probability of a frame sent at a rate whose threshold is θ.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum FerModel {
    /// FER = 1/(1 + 99·10^{Δ/1 dB}), Δ = true SINR − θ in dB: 1 % at the threshold, a decade
    /// per dB above it, 50 % two dB below (spec C.1 option `waterfall`).
    Waterfall,
    /// The same FER for every frame, whatever the SINR (spec C.1's literal reading: 1 %).
    Iid(f64),
}

impl FerModel {
    /// Frame error probability at true SINR `sinr_db` for a rate of threshold `threshold_db`.
    pub fn fer(&self, sinr_db: f64, threshold_db: f64) -> f64 {
        match *self {
            FerModel::Waterfall => 1.0 / (1.0 + 99.0 * 10f64.powf(sinr_db - threshold_db)),
            FerModel::Iid(p) => p,
        }
    }
}

/// Parameters of a [`CellDownlink`] besides its channel. [`Default`] is \[S2\] with spec C's
/// assumptions.
#[derive(Clone, Debug, PartialEq)]
pub struct CellParams {
    /// Rates and thresholds ([`RateSet::study`]).
    pub rates: RateSet,
    /// Frame errors ([`FerModel::Waterfall`]).
    pub fer: FerModel,
    /// The scheduler (proportional fair, ω = 1/1000); [`CellDownlink::with_scheduler`] takes
    /// any other.
    pub scheduler: SchedulerConfig,
    /// Each user's MAC queue limit; `None` (default) = unbounded, as in \[S2\].
    pub queue_limit: Option<QueueLimit>,
    /// Break ties at random from the link's stream (default), else by lowest user index.
    pub random_ties: bool,
    /// Report every slot that served a user as a [`LinkEvent::Served`] (the scheduling
    /// instants and frame errors of plots; off by default).
    pub record_slots: bool,
}

impl Default for CellParams {
    fn default() -> Self {
        CellParams {
            rates: RateSet::study(),
            fer: FerModel::Waterfall,
            scheduler: SchedulerConfig::by_name("pf").expect("pf exists"),
            queue_limit: None,
            random_ties: true,
            record_slots: false,
        }
    }
}

/// A cell that cannot be built.
#[derive(Clone, Debug, PartialEq)]
pub enum CellError {
    RateSet(String),
    Fer(f64),
    Scheduler(SchedulerError),
    /// `user_of_flow` maps a flow to a user the cell does not have.
    UnknownUser {
        flow: u32,
        user: usize,
        users: usize,
    },
}

impl fmt::Display for CellError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CellError::RateSet(m) => write!(f, "rate set: {m}"),
            CellError::Fer(p) => write!(f, "frame error rate {p} is outside [0, 1]"),
            CellError::Scheduler(e) => write!(f, "scheduler: {e}"),
            CellError::UnknownUser { flow, user, users } => write!(
                f,
                "flow {flow} is mapped to user {user}, but the cell has users 0..{users}"
            ),
        }
    }
}

impl std::error::Error for CellError {}

/// One user's counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CellUserStats {
    /// Slots in which the user was served (frames sent to it).
    pub slots_served: u64,
    pub frame_errors: u64,
    /// Payload bits that got through (the MAC throughput's numerator).
    pub bits_delivered: u64,
    /// What the served slots could carry, rate × slot, summed over every slot that served the
    /// user (the MAC throughput counted as scheduled), and over those whose frame failed. A
    /// slot carries less than its rate when the user's queue holds less than a frame.
    pub bits_scheduled: u64,
    pub bits_scheduled_errored: u64,
    pub packets_out: u64,
    pub queue_drops: u64,
    /// Slots in which the cell was active (its channel was evaluated), and the sums of the
    /// user's true SINR (linear) and feasible rate over them.
    pub slots_observed: u64,
    pub sinr_linear_sum: f64,
    pub rate_bps_sum: f64,
    /// Intervals between consecutive services, in slots: count, sum, sum of squares, maximum.
    pub intervals: u64,
    pub interval_sum: u64,
    pub interval_sq_sum: f64,
    pub interval_max: u64,
    /// Slot of the last service.
    pub last_served: Option<u64>,
}

impl CellUserStats {
    /// Mean true SINR in dB (of the linear mean) over the observed slots.
    pub fn mean_sinr_db(&self) -> f64 {
        10.0 * (self.sinr_linear_sum / self.slots_observed as f64).log10()
    }

    /// Mean feasible rate R_i over the observed slots, bit/s.
    pub fn mean_rate_bps(&self) -> f64 {
        self.rate_bps_sum / self.slots_observed as f64
    }

    /// Slot fill: the bits delivered over what the user's error-free served slots could carry
    /// (rate × slot); 1 when every such frame was full, `None` before any.
    pub fn slot_fill(&self) -> Option<f64> {
        let carried = self.bits_scheduled - self.bits_scheduled_errored;
        (carried > 0).then(|| self.bits_delivered as f64 / carried as f64)
    }

    /// Mean and second moment of the inter-scheduling interval, in slots and slots².
    pub fn interval_moments(&self) -> (f64, f64) {
        let n = self.intervals as f64;
        (self.interval_sum as f64 / n, self.interval_sq_sum / n)
    }
}

/// The cell's counters beyond [`LinkStats`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CellStats {
    pub users: Vec<CellUserStats>,
    /// Frames sent at each rate of the rate set.
    pub slots_per_rate: Vec<u64>,
    pub slot_duration_s: f64,
}

#[derive(Debug)]
struct UserQueue<P> {
    pkts: VecDeque<P>,
    bytes: u64,
    /// Bits of the head packet already delivered.
    head_sent_bits: u64,
    /// The head bits were in a frame that failed.
    retransmit: bool,
}

impl<P: Packet> UserQueue<P> {
    fn bits(&self) -> u64 {
        self.bytes * 8 - self.head_sent_bits
    }
}

/// The multi-user cell downlink; see the module documentation.
pub struct CellDownlink<P> {
    p: CellParams,
    channel: CellChannel,
    scheduler: Box<dyn Scheduler>,
    ties: Ties,
    frame_rngs: Vec<RngStream>,
    user_of_flow: HashMap<u32, usize>,
    queues: Vec<UserQueue<P>>,
    /// The first slot not yet processed.
    next_slot: u64,
    /// Per-slot scratch: rate, rate index and true SINR of every user.
    rates: Vec<f64>,
    rate_index: Vec<Option<usize>>,
    sinr_db: Vec<f64>,
    queue_bits: Vec<u64>,
    outbox: VecDeque<(Instant, P)>,
    events: VecDeque<LinkEvent>,
    stats: LinkStats,
    cell: CellStats,
}

impl<P: Packet> CellDownlink<P> {
    /// The cell with `p.scheduler`. `user_of_flow` gives the user (index into the channel's
    /// users) of each flow id; `rng` is the link's stream (frame errors, ties).
    pub fn new(
        p: CellParams,
        channel: CellChannel,
        user_of_flow: HashMap<u32, usize>,
        rng: RngStream,
    ) -> Result<Self, CellError> {
        let scheduler = p
            .scheduler
            .build(channel.users().len(), channel.grid().duration_s())
            .map_err(CellError::Scheduler)?;
        Self::with_scheduler(p, channel, scheduler, user_of_flow, rng)
    }

    /// The cell with a scheduler of one's own (`p.scheduler` is ignored); it must be built for
    /// the channel's number of users.
    pub fn with_scheduler(
        p: CellParams,
        channel: CellChannel,
        scheduler: Box<dyn Scheduler>,
        user_of_flow: HashMap<u32, usize>,
        rng: RngStream,
    ) -> Result<Self, CellError> {
        let n = channel.users().len();
        if let FerModel::Iid(q) = p.fer {
            if !(0.0..=1.0).contains(&q) {
                return Err(CellError::Fer(q));
            }
        }
        if let Some((&flow, &user)) = user_of_flow.iter().filter(|(_, &u)| u >= n).min() {
            return Err(CellError::UnknownUser {
                flow,
                user,
                users: n,
            });
        }
        let ties = if p.random_ties {
            Ties::Random(rng.substream("ties"))
        } else {
            Ties::LowestIndex
        };
        let frame_rngs = (0..n)
            .map(|i| rng.substream(&format!("frames/user{i}")))
            .collect();
        let slot_duration_s = channel.grid().duration_s();
        let cell = CellStats {
            users: vec![CellUserStats::default(); n],
            slots_per_rate: vec![0; p.rates.len()],
            slot_duration_s,
        };
        Ok(CellDownlink {
            p,
            channel,
            scheduler,
            ties,
            frame_rngs,
            user_of_flow,
            queues: (0..n)
                .map(|_| UserQueue {
                    pkts: VecDeque::new(),
                    bytes: 0,
                    head_sent_bits: 0,
                    retransmit: false,
                })
                .collect(),
            next_slot: 0,
            rates: vec![0.0; n],
            rate_index: vec![None; n],
            sinr_db: vec![0.0; n],
            queue_bits: vec![0; n],
            outbox: VecDeque::new(),
            events: VecDeque::new(),
            stats: LinkStats {
                slot_duration_s,
                ..Default::default()
            },
            cell,
        })
    }

    /// The channel (placements, mean SINRs).
    pub fn channel(&self) -> &CellChannel {
        &self.channel
    }

    fn has_data(&self) -> bool {
        self.queues.iter().any(|q| !q.pkts.is_empty())
    }

    fn slot_start(&self, n: u64) -> Instant {
        self.channel.grid().start(n)
    }

    fn run_slot(&mut self, n: u64) {
        for i in 0..self.queues.len() {
            let (sinr, estimated) = self.channel.sinr_db(i, n);
            let k = self.p.rates.select(estimated);
            self.sinr_db[i] = sinr;
            self.rate_index[i] = k;
            self.rates[i] = k.map_or(0.0, |k| self.p.rates.rate_bps(k) as f64);
            self.queue_bits[i] = self.queues[i].bits();
            let u = &mut self.cell.users[i];
            u.slots_observed += 1;
            u.sinr_linear_sum += 10f64.powf(sinr / 10.0);
            u.rate_bps_sum += self.rates[i];
        }
        let slot = Slot {
            index: n,
            rate_bps: &self.rates,
            queue_bits: &self.queue_bits,
        };
        let Some(i) = self.scheduler.schedule(&slot, &mut self.ties) else {
            return;
        };
        let k = self.rate_index[i].expect("schedulers pick users with a rate");
        let rate = self.p.rates.rate_bps(k);
        let error = self.frame_rngs[i].hashed_uniform(n)
            < self
                .p
                .fer
                .fer(self.sinr_db[i], self.p.rates.threshold_db(k));

        self.stats.frames_sent += 1;
        self.cell.slots_per_rate[k] += 1;
        let u = &mut self.cell.users[i];
        u.slots_served += 1;
        if let Some(last) = u.last_served {
            let gap = n - last;
            u.intervals += 1;
            u.interval_sum += gap;
            u.interval_sq_sum += (gap * gap) as f64;
            u.interval_max = u.interval_max.max(gap);
        }
        u.last_served = Some(n);
        if self.p.record_slots {
            self.events.push_back(LinkEvent::Served {
                at: self.channel.grid().start(n),
                slot: n,
                user: i as u32,
                rate_bps: rate,
                frame_error: error,
            });
        }
        let frame_bits = rate / self.channel.grid().bins_per_second();
        u.bits_scheduled += frame_bits;
        if error {
            u.bits_scheduled_errored += frame_bits;
        }
        let q = &mut self.queues[i];
        if q.retransmit {
            self.stats.arq_retransmissions += 1;
        }
        q.retransmit = error;
        if error {
            self.stats.frame_errors += 1;
            u.frame_errors += 1;
            return;
        }
        // The frame's bits, from the head of the queue across packet boundaries.
        let end = self.channel.grid().start(n + 1);
        let mut bits = frame_bits;
        while let Some(head) = q.pkts.front() {
            let len = head.wire_len() as u64;
            let left = len * 8 - q.head_sent_bits;
            if bits < left {
                q.head_sent_bits += bits;
                u.bits_delivered += bits;
                break;
            }
            bits -= left;
            u.bits_delivered += left;
            u.packets_out += 1;
            q.head_sent_bits = 0;
            q.bytes -= len;
            let pkt = q.pkts.pop_front().expect("head exists");
            self.stats.packets_out += 1;
            self.stats.bytes_out += len;
            self.outbox.push_back((end, pkt));
        }
    }
}

impl<P: Packet> Link<P> for CellDownlink<P> {
    fn enqueue(&mut self, now: Instant, pkt: P) {
        self.stats.packets_in += 1;
        let flow = pkt.flow();
        let i = *self
            .user_of_flow
            .get(&flow)
            .unwrap_or_else(|| panic!("flow {flow} has no user in the cell's user_of_flow table"));
        let len = pkt.wire_len() as u64;
        let q = &self.queues[i];
        let full = self
            .p
            .queue_limit
            .is_some_and(|l| l.is_full(q.pkts.len(), q.bytes, len));
        if full {
            self.cell.users[i].queue_drops += 1;
            self.stats
                .record_drop(&mut self.events, now, flow, len as u32, DropReason::Queue);
            return;
        }
        if !self.has_data() {
            // The cell was idle: the slots since the last one it ran pass without data.
            let first = self
                .channel
                .grid()
                .first_at_or_after(now)
                .max(self.next_slot);
            if first > self.next_slot {
                self.scheduler.idle(self.next_slot, first - self.next_slot);
                self.next_slot = first;
            }
        }
        let q = &mut self.queues[i];
        q.pkts.push_back(pkt);
        q.bytes += len;
    }

    fn poll_at(&self) -> Option<Instant> {
        self.has_data().then(|| self.slot_start(self.next_slot))
    }

    fn handle_timeout(&mut self, now: Instant) {
        while self.has_data() && self.slot_start(self.next_slot) <= now {
            let n = self.next_slot;
            self.run_slot(n);
            self.next_slot = n + 1;
        }
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
        Some(&self.cell)
    }

    fn sample(&mut self, _now: Instant) -> LinkSample {
        LinkSample {
            queue_packets: self.queues.iter().map(|q| q.pkts.len() as u32).sum(),
            queue_bytes: self.queues.iter().map(|q| q.bytes).sum(),
            radio: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestPacket;
    use airlink_channel::CellChannelConfig;

    /// Users without fading at the given SINRs, estimated with noise of σ `estimation_sigma_db`.
    fn fixed_channel(snr_db: &[f64], estimation_sigma_db: f64) -> CellChannel {
        // Without fading a user at distance d has exactly γ̄(d): put it where γ̄ = snr_db.
        let cfg = CellChannelConfig {
            rayleigh: false,
            estimation_sigma_db,
            ..CellChannelConfig::study()
        };
        let places: Vec<(f64, f64)> = snr_db
            .iter()
            .map(|s| (cfg.radius_m * 10f64.powf(-s / cfg.path_loss.slope_db), 0.0))
            .collect();
        let ch = CellChannel::with_positions(&cfg, &places, RngStream::derive(1, "cell")).unwrap();
        for (u, s) in ch.users().iter().zip(snr_db) {
            assert!((u.mean_snr_db - s).abs() < 1e-9);
        }
        ch
    }

    fn study_channel(users: usize, seed: u64) -> CellChannel {
        CellChannel::new(
            &CellChannelConfig {
                users,
                ..CellChannelConfig::study()
            },
            RngStream::derive(seed, "cell"),
        )
        .unwrap()
    }

    /// Flow f + 10 belongs to user f % users.
    fn flows(users: usize, flows: u32) -> HashMap<u32, usize> {
        (0..flows).map(|f| (f + 10, f as usize % users)).collect()
    }

    fn packet(id: u32, len: u32, flow: u32) -> TestPacket {
        TestPacket {
            flow,
            ..TestPacket::new(id, len)
        }
    }

    /// Drives the link as the engine would: arrivals (time-sorted) and wake-ups in time order,
    /// arrivals first at equal times, until `stop` or until it is idle with nothing to come.
    fn drive(
        link: &mut CellDownlink<TestPacket>,
        arrivals: Vec<(Instant, TestPacket)>,
        stop: Instant,
    ) -> Vec<(Instant, TestPacket)> {
        let mut arrivals = VecDeque::from(arrivals);
        let mut out = Vec::new();
        loop {
            let next_arrival = arrivals.front().map(|a| a.0);
            let wake = link.poll_at();
            let t = match (next_arrival, wake) {
                (None, None) => break,
                (Some(a), Some(w)) => a.min(w),
                (a, w) => a.or(w).unwrap(),
            };
            if t > stop {
                break;
            }
            if next_arrival == Some(t) {
                let (t, p) = arrivals.pop_front().unwrap();
                link.enqueue(t, p);
            } else {
                link.handle_timeout(t);
            }
            out.extend(std::iter::from_fn(|| link.poll_output()));
        }
        out
    }

    /// The slots the link reported serving since the last call: (slot, user, rate, frame error),
    /// each at its slot's start.
    fn served(link: &mut CellDownlink<TestPacket>) -> Vec<(u64, u32, u64, bool)> {
        let events: Vec<LinkEvent> = std::iter::from_fn(|| link.poll_event()).collect();
        events
            .into_iter()
            .filter_map(|e| match e {
                LinkEvent::Served {
                    at,
                    slot,
                    user,
                    rate_bps,
                    frame_error,
                } => {
                    assert_eq!(at, link.slot_start(slot));
                    Some((slot, user, rate_bps, frame_error))
                }
                _ => None,
            })
            .collect()
    }

    fn params(scheduler: &str, fer: FerModel) -> CellParams {
        CellParams {
            scheduler: SchedulerConfig::by_name(scheduler).unwrap(),
            fer,
            ..CellParams::default()
        }
    }

    #[test]
    fn spec_c_thresholds_rate_selection_and_waterfall_vectors() {
        let r = RateSet::study();
        for (k, want) in [-2.04, -0.07, 1.38, 5.25, 7.91, 10.10]
            .into_iter()
            .enumerate()
        {
            assert!(
                (r.threshold_db(k) - want).abs() < 0.005,
                "θ{k} = {}",
                r.threshold_db(k)
            );
            assert_eq!(r.rate_bps(k), RateSet::STUDY_KBPS[k] * 1000);
            assert_eq!(
                r.select(r.threshold_db(k)),
                Some(k),
                "exactly at the threshold"
            );
            assert_eq!(
                r.select(r.threshold_db(k) - 1e-9),
                k.checked_sub(1),
                "just below"
            );
        }
        assert_eq!(r.select(40.0), Some(5));
        for (delta, want) in [(-2.0, 0.5025), (-1.0, 0.0917), (0.0, 0.0100), (1.0, 0.0010)] {
            let got = FerModel::Waterfall.fer(3.0 + delta, 3.0);
            assert!((got - want).abs() < 5e-5, "Δ {delta}: {got}");
        }
        assert_eq!(FerModel::Iid(0.01).fer(-30.0, 10.0), 0.01);
        for (rates, th) in [
            (vec![], vec![]),
            (vec![2, 1], vec![0.0, 1.0]),
            (vec![0, 1], vec![0.0, 1.0]),
            (vec![1, 2], vec![1.0, 0.0]),
            (vec![1], vec![0.0, 1.0]),
        ] {
            assert!(matches!(
                RateSet::new(rates, th),
                Err(CellError::RateSet(_))
            ));
        }
    }

    #[test]
    fn a_queue_shorter_than_a_frame_fills_the_slot_in_part() {
        // 6 dB: 6400 bits a slot. Packets of 500 B (4000 bits) arrive one per 20 slots: each
        // is served whole in one slot that could carry 6400 bits, a fill of 0.625.
        let mut link = CellDownlink::new(
            params("pf", FerModel::Iid(0.0)),
            fixed_channel(&[6.0], 0.0),
            flows(1, 1),
            RngStream::derive(1, "cell-link"),
        )
        .unwrap();
        let arrivals = (0..50)
            .map(|i| {
                let at = Instant::ZERO + airlink_engine::Duration::from_millis(100 * i as u64);
                (at, packet(i, 500, 10))
            })
            .collect();
        let out = drive(&mut link, arrivals, Instant::FAR_FUTURE);
        assert_eq!(out.len(), 50);
        let u = &link.cell_stats().unwrap().users[0];
        assert_eq!(u.slots_served, 50);
        assert_eq!(u.bits_scheduled, 50 * 6400);
        assert_eq!(u.bits_delivered, 50 * 4000);
        assert_eq!(u.slot_fill(), Some(0.625));
    }

    #[test]
    fn one_backlogged_user_at_a_fixed_sinr_gets_rate_times_one_minus_fer() {
        // 6 dB: 1.28 Mbit/s (θ = 5.25 dB), 6400 bits per 5 ms slot; 4000 packets of 1500 B
        // (7500 frames of data).
        let total_bits = 4000.0 * 12_000.0;
        for fer in [
            FerModel::Iid(0.0),
            FerModel::Iid(0.01),
            FerModel::Iid(0.2),
            FerModel::Waterfall,
        ] {
            let mut link = CellDownlink::new(
                params("pf", fer),
                fixed_channel(&[6.0], 0.0),
                flows(1, 1),
                RngStream::derive(1, "cell-link"),
            )
            .unwrap();
            let arrivals = (0..4000)
                .map(|i| (Instant::ZERO, packet(i, 1500, 10)))
                .collect();
            let out = drive(&mut link, arrivals, Instant::FAR_FUTURE);
            assert_eq!(out.len(), 4000);
            assert!(
                out.iter().enumerate().all(|(i, (_, p))| p.id == i as u32),
                "FIFO"
            );
            let s = link.stats().clone();
            let p = fer.fer(6.0, RateSet::study().threshold_db(3));
            // Every slot serves the user; the good frames carry exactly the data.
            assert_eq!(s.frames_sent - s.frame_errors, 7500);
            assert_eq!(out.last().unwrap().0, link.slot_start(s.frames_sent));
            let cell = link.cell_stats().unwrap();
            assert_eq!(cell.slots_per_rate, [0, 0, 0, s.frames_sent, 0, 0]);
            assert_eq!(cell.users[0].bits_delivered as f64, total_bits);
            // A backlogged user fills every good frame: scheduled = rate × slot per served slot.
            let u = &cell.users[0];
            assert_eq!(u.bits_scheduled, s.frames_sent * 6400);
            assert_eq!(u.bits_scheduled_errored, s.frame_errors * 6400);
            assert_eq!(u.slot_fill(), Some(1.0));
            let sd = (p * (1.0 - p) * s.frames_sent as f64).sqrt();
            assert!(
                (s.frame_errors as f64 - p * s.frames_sent as f64).abs() <= 4.0 * sd + 1e-9,
                "{fer:?}: {} errors of {}",
                s.frame_errors,
                s.frames_sent
            );
            let throughput = total_bits / out.last().unwrap().0.as_secs_f64();
            let want = 1.28e6 * (1.0 - p);
            assert!(
                (throughput / want - 1.0).abs() < 4.0 * sd / s.frames_sent as f64 + 1e-9,
                "{fer:?}: {throughput} vs {want}"
            );
            assert_eq!(
                s.arq_retransmissions, s.frame_errors,
                "every errored frame's bits went again"
            );
        }
    }

    #[test]
    fn rates_follow_the_estimated_sinr_and_errors_the_true_one() {
        // A backlogged user at a true 5.5 dB, estimated with σ = 0.707 dB noise: rate k is
        // chosen with probability P(θ_k ≤ 5.5 + σw < θ_{k+1}), and a frame at rate k fails
        // with the waterfall FER of 5.5 dB − θ_k.
        let sigma = 0.5f64.sqrt();
        let mut link = CellDownlink::new(
            params("pf", FerModel::Waterfall),
            fixed_channel(&[5.5], sigma),
            flows(1, 1),
            RngStream::derive(1, "l"),
        )
        .unwrap();
        let arrivals = (0..20_000)
            .map(|i| (Instant::ZERO, packet(i, 1500, 10)))
            .collect();
        drive(&mut link, arrivals, Instant::from_secs_f64(100.0));
        let cell = link.cell_stats().unwrap();
        let n = link.stats().frames_sent as f64;
        assert_eq!(n, 20_001.0, "backlogged for slots 0 to 20 000");
        let rates = RateSet::study();
        let below = |x: f64| 0.5 * libm::erfc(-(x - 5.5) / (sigma * 2f64.sqrt()));
        let mut want_errors = 0.0;
        for k in 0..rates.len() {
            let upper = if k + 1 < rates.len() {
                below(rates.threshold_db(k + 1))
            } else {
                1.0
            };
            let p = upper - below(rates.threshold_db(k));
            let got = cell.slots_per_rate[k] as f64 / n;
            assert!(
                (got - p).abs() < 4.0 * (p * (1.0 - p) / n).sqrt() + 1e-4,
                "rate {k}: {got} vs {p}"
            );
            want_errors += p * FerModel::Waterfall.fer(5.5, rates.threshold_db(k));
        }
        // No rate (estimate below −2.04 dB, 8.7 σ down) never happens: every slot is served.
        let got = link.stats().frame_errors as f64 / n;
        assert!(
            (got - want_errors).abs() < 4.0 * (want_errors / n).sqrt(),
            "errors {got} vs {want_errors}"
        );
        assert!(
            cell.slots_per_rate[2] > 5000 && cell.slots_per_rate[3] > 10_000,
            "the noise spreads the choice over two rates"
        );
        assert!((cell.users[0].mean_sinr_db() - 5.5).abs() < 1e-9);
    }

    #[test]
    fn packets_leave_at_the_end_of_the_slot_of_their_last_bit() {
        // Error-free 1.28 Mbit/s: packet j's last bit is bit 12 000·(j+1) − 1 of the stream,
        // sent in slot ⌊that / 6400⌋.
        let mut link = CellDownlink::new(
            params("rr", FerModel::Iid(0.0)),
            fixed_channel(&[6.0], 0.0),
            flows(1, 1),
            RngStream::derive(1, "l"),
        )
        .unwrap();
        // An idle cell needs no wake-ups; a packet at 12 ms waits for slot 3 (15 ms).
        assert_eq!(link.poll_at(), None);
        let arrivals = (0..20)
            .map(|i| (Instant::from_millis(12), packet(i, 1500, 10)))
            .collect();
        let out = drive(&mut link, arrivals, Instant::FAR_FUTURE);
        for (j, (t, _)) in out.iter().enumerate() {
            let slot = 3 + (12_000 * (j as u64 + 1) - 1) / 6400;
            assert_eq!(*t, Instant::from_millis(5 * (slot + 1)), "packet {j}");
        }
        assert_eq!(link.poll_at(), None);
    }

    fn traffic(n_flows: u32, packets: u32, seed: u64) -> Vec<(Instant, TestPacket)> {
        let mut rng = RngStream::derive(seed, "traffic");
        let mut t = 0u64;
        (0..packets)
            .map(|i| {
                t += rng.below(3_000_000);
                let len = 40 + rng.below(1461) as u32;
                (
                    Instant::from_nanos(t),
                    packet(i, len, 10 + rng.below(n_flows as u64) as u32),
                )
            })
            .collect()
    }

    #[test]
    fn every_packet_leaves_once_in_order_per_user_and_bits_are_conserved() {
        for (sched, limit) in [
            ("pf", None),
            ("tcp-pf", None),
            ("max", Some(QueueLimit::Packets(20))),
            ("rr", Some(QueueLimit::Bytes(30_000))),
            ("tcp-max", None),
        ] {
            let users = 5;
            let map = flows(users, 8);
            let p = CellParams {
                queue_limit: limit,
                ..params(sched, FerModel::Waterfall)
            };
            let mut link = CellDownlink::new(
                p,
                study_channel(users, 2),
                map.clone(),
                RngStream::derive(2, "l"),
            )
            .unwrap();
            let arrivals = traffic(8, 3000, 3);
            let arrived: HashMap<u32, (Instant, u32)> =
                arrivals.iter().map(|(t, p)| (p.id, (*t, p.flow))).collect();
            let sizes: HashMap<u32, u32> = arrivals.iter().map(|(_, p)| (p.id, p.len)).collect();
            let out = drive(&mut link, arrivals, Instant::from_secs_f64(60.0));
            let dropped: Vec<LinkEvent> = std::iter::from_fn(|| link.poll_event()).collect();
            let s = link.stats();
            let cell = link.cell_stats().unwrap();
            assert_eq!(s.packets_in, 3000);
            assert_eq!(
                s.packets_out + s.queue_drops,
                3000,
                "{sched}: every packet leaves or is dropped, after the queues drained"
            );
            assert_eq!(dropped.len() as u64, s.queue_drops);
            assert_eq!(limit.is_none(), s.queue_drops == 0, "{sched}");
            let mut ids: Vec<u32> = out.iter().map(|(_, p)| p.id).collect();
            ids.sort();
            ids.dedup();
            assert_eq!(ids.len(), out.len(), "no packet leaves twice");
            assert!(
                out.windows(2).all(|w| w[0].0 <= w[1].0),
                "outputs in time order"
            );
            let mut last_id = vec![None; users];
            let mut bits = vec![0u64; users];
            for (t, p) in &out {
                let (arrival, flow) = arrived[&p.id];
                assert!(*t > arrival);
                let u = map[&flow];
                assert!(last_id[u] < Some(p.id), "{sched}: FIFO per user");
                last_id[u] = Some(p.id);
                bits[u] += sizes[&p.id] as u64 * 8;
            }
            for (u, stats) in cell.users.iter().enumerate() {
                assert_eq!(stats.bits_delivered, bits[u], "{sched}: user {u}'s bits");
                assert_eq!(
                    stats.packets_out,
                    out.iter().filter(|(_, p)| map[&p.flow] == u).count() as u64
                );
            }
            assert_eq!(
                cell.users.iter().map(|u| u.slots_served).sum::<u64>(),
                s.frames_sent
            );
            assert_eq!(
                cell.users.iter().map(|u| u.frame_errors).sum::<u64>(),
                s.frame_errors
            );
            assert!(
                s.frame_errors > 0,
                "{sched}: fading and estimation noise cause some errors"
            );
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_run_and_every_scheduler_the_same_channel() {
        let run = |sched: &str, seed: u64| {
            let p = CellParams {
                record_slots: true,
                ..params(sched, FerModel::Waterfall)
            };
            let mut link = CellDownlink::new(
                p,
                study_channel(6, seed),
                flows(6, 6),
                RngStream::derive(seed, "l"),
            )
            .unwrap();
            // Every user backlogged for the whole second: every slot is evaluated.
            let arrivals = (0..1200)
                .map(|i| (Instant::ZERO, packet(i, 1500, 10 + i % 6)))
                .collect();
            let out: Vec<(Instant, u32)> = drive(&mut link, arrivals, Instant::from_secs_f64(1.0))
                .into_iter()
                .map(|(t, p)| (t, p.id))
                .collect();
            let log = served(&mut link);
            (out, link.cell_stats().unwrap().clone(), log)
        };
        let (a, cell_a, log_a) = run("pf", 7);
        assert_eq!((a.clone(), cell_a.clone(), log_a.clone()), run("pf", 7));
        assert_ne!(a, run("pf", 8).0);
        // The slot log: slots 0 to 200 (at 1 s), one user each, agreeing with the counters.
        assert_eq!(
            log_a.iter().map(|r| r.0).collect::<Vec<u64>>(),
            (0..=200).collect::<Vec<u64>>()
        );
        for (i, u) in cell_a.users.iter().enumerate() {
            let mine: Vec<_> = log_a.iter().filter(|r| r.1 == i as u32).collect();
            assert_eq!(mine.len() as u64, u.slots_served);
            assert_eq!(mine.iter().filter(|r| r.3).count() as u64, u.frame_errors);
            assert_eq!(mine.last().map(|r| r.0), u.last_served);
            assert!(mine
                .iter()
                .all(|r| RateSet::STUDY_KBPS.contains(&(r.2 / 1000))));
        }
        assert!(log_a.iter().any(|r| r.3), "some frames fail");
        let (b, cell_b, _) = run("rr", 7);
        assert_ne!(a, b);
        for (x, y) in cell_a.users.iter().zip(&cell_b.users) {
            assert_eq!(
                (x.slots_observed, x.sinr_linear_sum, x.rate_bps_sum),
                (y.slots_observed, y.sinr_linear_sum, y.rate_bps_sum)
            );
        }
        // Round robin over 6 backlogged users: intervals near 6 slots (shorter while another
        // user has no rate, longer while this one has none); PF's longest gap is longer.
        for u in &cell_b.users {
            let (mean, second) = u.interval_moments();
            assert!((4.0..8.0).contains(&mean) && second >= mean * mean, "{u:?}");
            assert_eq!(u.intervals + 1, u.slots_served);
        }
        let max_gap = |c: &CellStats| c.users.iter().map(|u| u.interval_max).max().unwrap();
        assert!(
            max_gap(&cell_a) > max_gap(&cell_b),
            "PF {} vs RR {}",
            max_gap(&cell_a),
            max_gap(&cell_b)
        );
    }

    #[test]
    fn schedulers_drive_the_choice_and_a_user_without_rate_is_never_served() {
        // Users at 12 dB (2.56 Mbit/s), 3 dB (640 kbit/s) and −10 dB (no rate).
        let counts = |sched: &str| {
            let mut link = CellDownlink::new(
                CellParams {
                    random_ties: false,
                    ..params(sched, FerModel::Iid(0.0))
                },
                fixed_channel(&[12.0, 3.0, -10.0], 0.0),
                flows(3, 3),
                RngStream::derive(1, "l"),
            )
            .unwrap();
            let arrivals = (0..300)
                .map(|i| (Instant::ZERO, packet(i, 1000, 10 + i % 3)))
                .collect();
            let out = drive(&mut link, arrivals, Instant::from_secs_f64(2.0));
            let cell = link.cell_stats().unwrap();
            assert_eq!(cell.users[2].slots_served, 0, "{sched}");
            assert_eq!(cell.users[2].mean_rate_bps(), 0.0);
            assert!(out.iter().all(|(_, p)| p.flow != 12));
            assert!(link.poll_at().is_some(), "user 2's packets wait");
            (
                cell.users[0].slots_served,
                cell.users[1].slots_served,
                cell.users[1].last_served.unwrap(),
            )
        };
        // MAX empties the 12 dB user's queue (100 kB at 12 800 bits a slot: 63 slots) before
        // serving the other (100 kB at 3200 bits a slot: 250 slots).
        let (u0, u1, last1) = counts("max");
        assert_eq!((u0, u1, last1), (63, 250, 63 + 250 - 1));
        let (u0, u1, last1) = counts("rr");
        assert_eq!((u0, u1, last1), (63, 250, 250 + 63 - 1));
        let mut link = CellDownlink::new(
            CellParams {
                random_ties: false,
                record_slots: true,
                ..params("rr", FerModel::Iid(0.0))
            },
            fixed_channel(&[12.0, 3.0], 0.0),
            flows(2, 2),
            RngStream::derive(1, "l"),
        )
        .unwrap();
        drive(
            &mut link,
            (0..4)
                .map(|i| (Instant::ZERO, packet(i, 1000, 10 + i % 2)))
                .collect(),
            Instant::FAR_FUTURE,
        );
        let users: Vec<u32> = served(&mut link).iter().map(|r| r.1).collect();
        // Alternating while both have data: user 0's packets take a slot each (12 800 bits),
        // user 1's 8000 bits each take 2.5 slots of 3200.
        assert_eq!(users, [0, 1, 0, 1, 1, 1, 1]);
    }

    #[test]
    fn in_the_study_cell_max_leads_at_the_mac_level_and_pf_is_fairer() {
        // 21 backlogged users, 10 s, three placements; the same channels for every scheduler.
        for seed in 1..=3 {
            let run = |sched: &str| {
                let mut link = CellDownlink::new(
                    params(sched, FerModel::Waterfall),
                    study_channel(21, seed),
                    flows(21, 21),
                    RngStream::derive(seed, "l"),
                )
                .unwrap();
                let arrivals = (0..21 * 3000)
                    .map(|i| (Instant::ZERO, packet(i, 576, 10 + i % 21)))
                    .collect();
                drive(&mut link, arrivals, Instant::from_secs_f64(10.0));
                let users = &link.cell_stats().unwrap().users;
                let bits: Vec<f64> = users
                    .iter()
                    .map(|u| u.bits_delivered as f64 / 10.0)
                    .collect();
                assert!(
                    users.iter().all(|u| u.slots_observed == 2001),
                    "backlogged throughout"
                );
                // Total MAC throughput (bit/s) and the sum of log throughputs (0 counts as 1 bit/s).
                (
                    bits.iter().sum::<f64>(),
                    bits.iter().map(|b| b.max(1.0).ln()).sum::<f64>(),
                )
            };
            let [rr, max, pf, tcp_pf, tcp_max] = SchedulerConfig::NAMES.map(run);
            assert!(max.0 > pf.0 && max.0 > tcp_max.0 && max.0 > tcp_pf.0 && pf.0 > rr.0, "MAC throughput: rr {rr:?} max {max:?} pf {pf:?} tcp-pf {tcp_pf:?} tcp-max {tcp_max:?}");
            assert!(
                pf.1 > max.1 && pf.1 > rr.1,
                "PF maximises the sum of log throughputs"
            );
        }
    }

    #[test]
    fn a_scheduler_of_ones_own_plugs_in() {
        /// Always the highest-indexed eligible user.
        struct Last;
        impl Scheduler for Last {
            fn name(&self) -> &str {
                "last"
            }
            fn schedule(&mut self, slot: &Slot, _: &mut Ties) -> Option<usize> {
                (0..slot.users()).rev().find(|&i| slot.eligible(i))
            }
            fn idle(&mut self, _: u64, _: u64) {}
        }
        let mut link = CellDownlink::with_scheduler(
            params("pf", FerModel::Iid(0.0)),
            fixed_channel(&[12.0, 12.0], 0.0),
            Box::new(Last),
            flows(2, 2),
            RngStream::derive(1, "l"),
        )
        .unwrap();
        let out = drive(
            &mut link,
            (0..10)
                .map(|i| (Instant::ZERO, packet(i, 1000, 10 + i % 2)))
                .collect(),
            Instant::FAR_FUTURE,
        );
        let order: Vec<u32> = out.iter().map(|(_, p)| p.flow).collect();
        assert_eq!(order, [11, 11, 11, 11, 11, 10, 10, 10, 10, 10]);
    }

    #[test]
    fn bad_construction_is_refused() {
        let map: HashMap<u32, usize> = [(5, 0), (6, 3)].into_iter().collect();
        let e = CellDownlink::<TestPacket>::new(
            CellParams::default(),
            fixed_channel(&[1.0, 2.0], 0.0),
            map,
            RngStream::derive(1, "l"),
        )
        .err()
        .unwrap();
        assert_eq!(
            e.to_string(),
            "flow 6 is mapped to user 3, but the cell has users 0..2"
        );
        let e = CellDownlink::<TestPacket>::new(
            params("pf", FerModel::Iid(1.5)),
            fixed_channel(&[1.0], 0.0),
            flows(1, 1),
            RngStream::derive(1, "l"),
        )
        .err();
        assert_eq!(e, Some(CellError::Fer(1.5)));
        let p = CellParams {
            scheduler: SchedulerConfig::Pf { omega: 0.0 },
            ..CellParams::default()
        };
        let e = CellDownlink::<TestPacket>::new(
            p,
            fixed_channel(&[1.0], 0.0),
            flows(1, 1),
            RngStream::derive(1, "l"),
        )
        .err()
        .unwrap();
        assert_eq!(e.to_string(), "scheduler: omega must be in (0, 1], got 0");
    }

    #[test]
    fn idle_gaps_reach_the_scheduler() {
        /// Round robin that records what the cell tells it.
        struct Recorder(RoundRobinLog);
        type RoundRobinLog = std::sync::Arc<std::sync::Mutex<(Vec<u64>, Vec<(u64, u64)>)>>;
        impl Scheduler for Recorder {
            fn name(&self) -> &str {
                "recorder"
            }
            fn schedule(&mut self, slot: &Slot, _: &mut Ties) -> Option<usize> {
                self.0.lock().unwrap().0.push(slot.index);
                (0..slot.users()).find(|&i| slot.eligible(i))
            }
            fn idle(&mut self, first: u64, slots: u64) {
                self.0.lock().unwrap().1.push((first, slots));
            }
        }
        // Two bursts of 40 × 1500 B at 8 dB (1.92 Mbit/s, 9600 bits a slot: 50 slots each),
        // at 0 s and at 10 s (slot 2000): slots 50 to 1999 pass idle.
        let log = RoundRobinLog::default();
        let mut link = CellDownlink::with_scheduler(
            params("pf", FerModel::Iid(0.0)),
            fixed_channel(&[8.0, 8.0], 0.0),
            Box::new(Recorder(log.clone())),
            flows(2, 2),
            RngStream::derive(1, "l"),
        )
        .unwrap();
        let burst = |t: f64, base: u32| {
            (0..40).map(move |i| {
                (
                    Instant::from_secs_f64(t),
                    packet(base + i, 1500, 10 + i % 2),
                )
            })
        };
        let out = drive(
            &mut link,
            burst(0.0, 0).chain(burst(10.0, 100)).collect(),
            Instant::FAR_FUTURE,
        );
        assert_eq!(out.len(), 80);
        let (scheduled, idle) = log.lock().unwrap().clone();
        assert_eq!(idle, [(50, 1950)]);
        assert_eq!(
            scheduled,
            (0..50).chain(2000..2050).collect::<Vec<u64>>(),
            "one call per slot, in order"
        );
    }
}
