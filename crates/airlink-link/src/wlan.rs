//! An 802.11g WLAN: one access point (AP) and its stations sharing one medium under the
//! distributed coordination function (DCF, basic access, no RTS/CTS).
//!
//! Every node (the AP, each station) has one transmit queue: the AP's holds the downlink, a
//! station's its uplink. A packet's node is found from its flow and its [`Direction`] through
//! the [`WlanRoute`] table given at construction: the sender of a `Down` packet is the flow's
//! server, of an `Up` packet its client. A station-to-station packet crosses the medium twice:
//! from the sending station to the AP, then (queued again at the AP) from the AP to the
//! receiving station. One [`WlanLink`] therefore carries both directions of every flow on the
//! medium, so data, TCP ACKs and DCCP feedback all contend: it is placed on both the down and
//! the up path of each flow, and learns a packet's direction from [`Packet::direction`].
//!
//! DCF: a node with a frame to send draws a backoff counter uniform in [0, CW], CW = CW_min at
//! the first attempt, doubled (+1) at each failure up to CW_max. Counters count the idle slots
//! after the medium has been idle for DIFS and freeze while it is busy. A node whose counter
//! reaches 0 transmits; when two or more counters reach 0 in the same slot, their frames
//! collide. A frame that is alone is received in error with probability `frame_error_rate`. A
//! frame that failed (collision or error) is sent again after a new backoff, until
//! `retry_limit` attempts, after which the packet is dropped. A success resets CW; the node
//! draws a fresh backoff for its next frame. A packet leaves the link at the end of the data
//! frame that got it through.
//!
//! | parameter | default | source |
//! |---|---|---|
//! | PHY rate | 54 Mbit/s | highest ERP-OFDM rate (IEEE 802.11-2007 §19) |
//! | ACK rate | 24 Mbit/s | highest mandatory rate ≤ 54 in the basic rate set 6/12/24 (§9.6 control response rate) |
//! | slot | 9 µs | ERP short slot time, all-ERP BSS (§19.8.4; 20 µs with non-ERP stations) |
//! | SIFS | 10 µs | §19.8.4 |
//! | DIFS | SIFS + 2 slots = 28 µs | §9.2.10 |
//! | preamble + SIGNAL | 16 + 4 µs | OFDM PLCP (§17.3.3, used by ERP-OFDM) |
//! | OFDM symbol | 4 µs, SERVICE 16 bits + tail 6 bits | §17.3.5 |
//! | signal extension | 6 µs after every ERP-OFDM frame | §19.3.2.3 |
//! | MAC header + FCS | 24 + 4 B | data frame, 3 addresses, no QoS (§7.2.2) |
//! | LLC/SNAP | 8 B | IP over 802.11 (RFC 1042) |
//! | ACK | 14 B | §7.2.1.3 |
//! | CW_min, CW_max | 15, 1023 | OFDM PHY aCWmin/aCWmax (§17.4.4, §19.8.4) |
//! | retry limit | 7 attempts | dot11ShortRetryLimit (Annex D) |
//! | frame error rate | 0 | a parameter: the channel is not modelled |
//! | per-node queue | 100 packets, drop-tail | assumption (a driver/AP queue; Linux defaults range 100–1000) |
//!
//! Simplifications, each chosen to stay close to Bianchi's model (Bianchi 2000), against which
//! the model is validated: a failed sender waits for the ACK timeout, taken as SIFS + ACK time,
//! and every node then defers DIFS, so a failed exchange occupies the medium as long as a
//! successful one (the standard's EIFS for the bystanders is SIFS + ACK at the lowest rate +
//! DIFS, close to it at 11g rates); a newly backlogged node always draws a backoff (no
//! immediate access after an idle DIFS); propagation delay is 0.
//!
//! Hand-offs ([`Association`]): a station that leaves the AP at `at` takes its own queue with
//! it, and of the packets the AP holds for it a share `queued_lost` is lost; what is kept
//! leaves the link at `resume` (the end of the outage) towards the next hop of the flow's path
//! (by then its path through the new AP), without crossing the new AP's medium. A station
//! joining an AP is out of reach from `at` to `until`: its own packets wait in its queue
//! without contending, the AP's for it in a buffer of their own (802.11 power-save style, not
//! blocking the AP's queue), and both contend from `until`. Packets for or from a station that
//! is neither associated nor joining are lost (`DropReason::Handoff`).
//!
//! Packets of a flow the WLAN has no route for (an emulated application's, not a scenario
//! flow's) take the route given as the fallback (the first flow's, the shared path's).
//!
//! Random draws: node i's backoffs come from substream `"backoff/node{i}"`, frame errors from
//! `"errors"` (node 0 is the AP, node i + 1 station i), hand-off losses from `"handoff"`.

use crate::pipe::QueueLimit;
use crate::{Direction, DropReason, Link, LinkEvent, LinkSample, LinkStats, Packet};
use airlink_engine::{Duration, Instant, RngStream};
use std::collections::{HashMap, VecDeque};
use std::fmt;

/// 802.11g (ERP-OFDM) timing and MAC parameters; see the module documentation for defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct WlanParams {
    /// Data frames' PHY rate, bit/s: an OFDM rate (6, 9, 12, 18, 24, 36, 48, 54 Mbit/s).
    pub phy_rate_bps: u64,
    /// ACKs' PHY rate, bit/s (a basic rate).
    pub ack_rate_bps: u64,
    pub slot: Duration,
    pub sifs: Duration,
    /// PLCP preamble and SIGNAL field.
    pub preamble: Duration,
    /// Silence after each ERP-OFDM frame.
    pub signal_extension: Duration,
    /// MAC header, FCS and LLC/SNAP added to an IP packet.
    pub mac_overhead_bytes: u32,
    pub ack_bytes: u32,
    pub cw_min: u32,
    pub cw_max: u32,
    /// Transmission attempts of a frame before its packet is dropped.
    pub retry_limit: u32,
    /// Probability that a frame sent alone is received in error.
    pub frame_error_rate: f64,
    /// Each node's transmit queue; `None` = unbounded.
    pub queue_limit: Option<QueueLimit>,
}

impl Default for WlanParams {
    fn default() -> Self {
        WlanParams {
            phy_rate_bps: 54_000_000,
            ack_rate_bps: 24_000_000,
            slot: Duration::from_micros(9),
            sifs: Duration::from_micros(10),
            preamble: Duration::from_micros(20),
            signal_extension: Duration::from_micros(6),
            mac_overhead_bytes: 24 + 4 + 8,
            ack_bytes: 14,
            cw_min: 15,
            cw_max: 1023,
            retry_limit: 7,
            frame_error_rate: 0.0,
            queue_limit: Some(QueueLimit::Packets(100)),
        }
    }
}

/// OFDM symbol duration.
const SYMBOL: Duration = Duration::from_micros(4);
/// SERVICE (16) and tail (6) bits around every PSDU.
const SERVICE_TAIL_BITS: u64 = 16 + 6;

impl WlanParams {
    /// DIFS = SIFS + 2 slots.
    pub fn difs(&self) -> Duration {
        self.sifs + self.slot.saturating_mul(2)
    }

    /// Airtime of a PPDU of `bytes` MAC bytes at `rate_bps`: preamble, SIGNAL, whole OFDM
    /// symbols of SERVICE + data + tail bits, signal extension.
    pub fn ppdu_time(&self, bytes: u32, rate_bps: u64) -> Duration {
        let bits_per_symbol = rate_bps * 4 / 1_000_000;
        let symbols = (SERVICE_TAIL_BITS + 8 * bytes as u64).div_ceil(bits_per_symbol);
        self.preamble + SYMBOL.saturating_mul(symbols) + self.signal_extension
    }

    /// Airtime of the data frame carrying an IP packet of `ip_bytes`.
    pub fn data_time(&self, ip_bytes: u32) -> Duration {
        self.ppdu_time(ip_bytes + self.mac_overhead_bytes, self.phy_rate_bps)
    }

    pub fn ack_time(&self) -> Duration {
        self.ppdu_time(self.ack_bytes, self.ack_rate_bps)
    }

    /// How long one exchange keeps the medium busy, from the start of the data frame to the
    /// end of the DIFS after it: data + SIFS + ACK + DIFS. A failed exchange takes as long
    /// (ACK timeout = SIFS + ACK time).
    pub fn exchange_time(&self, ip_bytes: u32) -> Duration {
        self.data_time(ip_bytes) + self.sifs + self.ack_time() + self.difs()
    }

    fn check(&self) -> Result<(), WlanError> {
        let ofdm = |r: u64| r > 0 && r.is_multiple_of(250_000) && r * 4 / 1_000_000 > 0;
        if !ofdm(self.phy_rate_bps) || !ofdm(self.ack_rate_bps) {
            return Err(WlanError::Params(format!(
                "PHY rates must be positive multiples of 250 kbit/s (OFDM), got {} and {}",
                self.phy_rate_bps, self.ack_rate_bps
            )));
        }
        if self.slot.is_zero() {
            return Err(WlanError::Params("the slot time must be positive".into()));
        }
        if self.cw_min == 0 || self.cw_max < self.cw_min {
            return Err(WlanError::Params(format!(
                "need 0 < CW_min <= CW_max, got {} and {}",
                self.cw_min, self.cw_max
            )));
        }
        if self.retry_limit == 0 {
            return Err(WlanError::Params(
                "the retry limit must be at least 1 attempt".into(),
            ));
        }
        if !(0.0..=1.0).contains(&self.frame_error_rate) {
            return Err(WlanError::Params(format!(
                "frame error rate {} is outside [0, 1]",
                self.frame_error_rate
            )));
        }
        Ok(())
    }
}

/// Where a flow's endpoint is: behind the AP (the wired side) or on one of the stations.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Attachment {
    Wired,
    Station(u32),
}

/// A flow's endpoints on the WLAN.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WlanRoute {
    pub client: Attachment,
    pub server: Attachment,
}

/// A WLAN that cannot be built.
#[derive(Clone, Debug, PartialEq)]
pub enum WlanError {
    Params(String),
    /// A route names a station the WLAN does not have.
    UnknownStation {
        flow: u32,
        station: u32,
        stations: u32,
    },
    /// A route whose two ends do not cross the medium (both wired or both the same station).
    NoHop {
        flow: u32,
    },
}

impl fmt::Display for WlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WlanError::Params(m) => write!(f, "WLAN parameters: {m}"),
            WlanError::UnknownStation {
                flow,
                station,
                stations,
            } => {
                write!(
                    f,
                    "flow {flow} uses station {station}, but the WLAN has stations 0..{stations}"
                )
            }
            WlanError::NoHop { flow } => write!(
                f,
                "flow {flow} has both ends on the same side of the medium"
            ),
        }
    }
}

impl std::error::Error for WlanError {}

/// A station's change of access point, as this WLAN sees it.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Association {
    /// The station leaves at `at`; what the AP held for it and did not lose leaves the link at
    /// `resume`.
    Leave {
        station: u32,
        at: Instant,
        resume: Instant,
        queued_lost: f64,
    },
    /// The station re-associates: out of reach from `at`, associated from `until`.
    Join {
        station: u32,
        at: Instant,
        until: Instant,
    },
}

impl Association {
    fn at(&self) -> Instant {
        match *self {
            Association::Leave { at, .. } | Association::Join { at, .. } => at,
        }
    }
}

/// Where a station is in its association with this AP.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Assoc {
    Present,
    /// Re-associating (until its entry in `joins`).
    Joining,
    Absent,
}

/// One node's counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WlanNodeStats {
    /// Transmission attempts.
    pub frames_sent: u64,
    /// Frames that got through.
    pub successes: u64,
    /// Frames lost in a collision.
    pub collisions: u64,
    /// Frames sent alone and received in error.
    pub errors: u64,
    /// Packets dropped at the retry limit.
    pub retry_drops: u64,
    /// Packets lost to hand-offs (queued for the station at the AP, or arriving while it was away).
    pub handoff_drops: u64,
    pub queue_drops: u64,
    /// IP bytes that got through.
    pub bytes_delivered: u64,
}

/// The medium's counters beyond [`LinkStats`]; node 0 is the AP, node i + 1 station i.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WlanStats {
    pub nodes: Vec<WlanNodeStats>,
    /// Exchanges that ended in a collision.
    pub collision_events: u64,
    /// Packets that crossed the medium to the AP and were queued there for a station.
    pub relayed: u64,
}

struct Node<P> {
    /// Packets with "relay at the AP" flags.
    queue: VecDeque<(P, bool)>,
    bytes: u64,
    /// Failed attempts of the head frame.
    failures: u32,
    /// The slot, counted from `t0`, in which the node transmits; `None` while it has nothing
    /// to send.
    slot: Option<u64>,
    rng: RngStream,
}

/// The shared 802.11g medium; see the module documentation.
pub struct WlanLink<P> {
    p: WlanParams,
    routes: HashMap<u32, WlanRoute>,
    /// The route of packets of flows not in `routes`.
    fallback: Option<WlanRoute>,
    nodes: Vec<Node<P>>,
    errors: RngStream,
    /// Per station: its association, and what the AP holds for it while it joins.
    assoc: Vec<Assoc>,
    pending: Vec<Vec<P>>,
    /// Hand-offs still to come, latest first; then the instants `Join`s complete.
    schedule: Vec<Association>,
    joins: Vec<(Instant, u32)>,
    /// Kept packets of departed stations, by the instant they leave the link.
    parked: VecDeque<(Instant, P)>,
    handoff_rng: RngStream,
    /// Start of the current countdown: the end of the last DIFS.
    t0: Instant,
    outbox: VecDeque<(Instant, P)>,
    events: VecDeque<LinkEvent>,
    stats: LinkStats,
    wlan: WlanStats,
}

impl<P: Packet> WlanLink<P> {
    /// A WLAN with `stations` stations and the given flows' routes; `rng` is the link's stream.
    pub fn new(
        p: WlanParams,
        stations: u32,
        routes: HashMap<u32, WlanRoute>,
        rng: RngStream,
    ) -> Result<Self, WlanError> {
        p.check()?;
        let mut flows: Vec<_> = routes.iter().collect();
        flows.sort_by_key(|(&f, _)| f);
        for (&flow, r) in flows {
            for end in [r.client, r.server] {
                if let Attachment::Station(s) = end {
                    if s >= stations {
                        return Err(WlanError::UnknownStation {
                            flow,
                            station: s,
                            stations,
                        });
                    }
                }
            }
            if r.client == r.server {
                return Err(WlanError::NoHop { flow });
            }
        }
        let n = stations as usize + 1;
        let nodes = (0..n)
            .map(|i| Node {
                queue: VecDeque::new(),
                bytes: 0,
                failures: 0,
                slot: None,
                rng: rng.substream(&format!("backoff/node{i}")),
            })
            .collect();
        Ok(WlanLink {
            errors: rng.substream("errors"),
            handoff_rng: rng.substream("handoff"),
            p,
            routes,
            fallback: None,
            nodes,
            assoc: vec![Assoc::Present; stations as usize],
            pending: (0..stations).map(|_| Vec::new()).collect(),
            schedule: Vec::new(),
            joins: Vec::new(),
            parked: VecDeque::new(),
            t0: Instant::ZERO,
            outbox: VecDeque::new(),
            events: VecDeque::new(),
            stats: LinkStats::default(),
            wlan: WlanStats {
                nodes: vec![WlanNodeStats::default(); n],
                ..Default::default()
            },
        })
    }

    /// The route of packets whose flow has none of its own.
    pub fn with_fallback(mut self, route: WlanRoute) -> Self {
        self.fallback = Some(route);
        self
    }

    /// Stations `present` are associated at the start (the others are not), and `handoffs`
    /// happen at their instants. Checked by the scenario: a station leaves only while
    /// associated and joins only while away.
    pub fn with_associations(mut self, present: &[u32], mut handoffs: Vec<Association>) -> Self {
        for (s, a) in self.assoc.iter_mut().enumerate() {
            *a = if present.contains(&(s as u32)) {
                Assoc::Present
            } else {
                Assoc::Absent
            };
        }
        handoffs.sort_by_key(|h| std::cmp::Reverse(h.at()));
        self.schedule = handoffs;
        self
    }

    pub fn params(&self) -> &WlanParams {
        &self.p
    }

    pub fn wlan_stats(&self) -> &WlanStats {
        &self.wlan
    }

    fn node_index(a: Attachment) -> usize {
        match a {
            Attachment::Wired => 0,
            Attachment::Station(s) => s as usize + 1,
        }
    }

    /// A backoff counter for a frame that failed `failures` times: uniform in [0, CW].
    fn draw_backoff(&mut self, i: usize) -> u64 {
        let mut cw = self.p.cw_min as u64;
        for _ in 0..self.nodes[i].failures {
            cw = (2 * cw + 1).min(self.p.cw_max as u64);
        }
        self.nodes[i].rng.below(cw + 1)
    }

    /// Node `i`, idle until `now`, draws a backoff counted from `now`.
    fn start_backoff(&mut self, i: usize, now: Instant) {
        let k = self.draw_backoff(i);
        // Idle slots already counted since t0 (none while the medium is busy).
        let elapsed = now
            .saturating_since(self.t0)
            .as_nanos()
            .div_ceil(self.p.slot.as_nanos());
        self.nodes[i].slot = Some(elapsed + k);
    }

    /// Queues `pkt` at node `i` at `now`; a node that had nothing to send starts a backoff.
    fn arrive(&mut self, i: usize, now: Instant, pkt: P, relay: bool) {
        let len = pkt.wire_len() as u64;
        let node = &self.nodes[i];
        let full = self
            .p
            .queue_limit
            .is_some_and(|l| l.is_full(node.queue.len(), node.bytes, len));
        if full {
            self.wlan.nodes[i].queue_drops += 1;
            self.stats.record_drop(
                &mut self.events,
                now,
                pkt.flow(),
                len as u32,
                DropReason::Queue,
            );
            return;
        }
        if self.nodes[i].slot.is_none() && self.contends(i) {
            self.start_backoff(i, now);
        }
        let node = &mut self.nodes[i];
        node.queue.push_back((pkt, relay));
        node.bytes += len;
    }

    /// Whether node `i` contends: the AP, or an associated station.
    fn contends(&self, i: usize) -> bool {
        i == 0 || self.assoc[i - 1] == Assoc::Present
    }

    /// The node a packet leaves from and the node it goes to.
    fn ends(&self, pkt: &P) -> (Attachment, Attachment) {
        let flow = pkt.flow();
        let route = self
            .routes
            .get(&flow)
            .or(self.fallback.as_ref())
            .unwrap_or_else(|| panic!("flow {flow} has no route on the WLAN"));
        match pkt
            .direction()
            .unwrap_or_else(|| panic!("a WLAN packet must carry its direction (flow {flow})"))
        {
            Direction::Down => (route.server, route.client),
            Direction::Up => (route.client, route.server),
        }
    }

    /// A packet lost to a hand-off, counted at node `i`.
    fn lose(&mut self, i: usize, at: Instant, pkt: &P) {
        self.wlan.nodes[i].handoff_drops += 1;
        self.stats.record_drop(
            &mut self.events,
            at,
            pkt.flow(),
            pkt.wire_len(),
            DropReason::Handoff,
        );
    }

    /// A packet for the AP to send to `to` at `now`: queued, held while its station joins, or
    /// lost while it is away.
    fn ap_sends(&mut self, now: Instant, pkt: P, to: Attachment) {
        match to {
            Attachment::Station(s) if self.assoc[s as usize] == Assoc::Absent => {
                self.lose(0, now, &pkt)
            }
            Attachment::Station(s) if self.assoc[s as usize] != Assoc::Present => {
                self.pending[s as usize].push(pkt)
            }
            _ => self.arrive(0, now, pkt, false),
        }
    }

    /// Puts an output in the outbox in time order (after those due at the same instant).
    fn emit(&mut self, at: Instant, pkt: P) {
        let k = self.outbox.partition_point(|o| o.0 <= at);
        self.outbox.insert(k, (at, pkt));
    }

    /// The next hand-off step: a scheduled `Leave`/`Join`, a join completing, or parked packets
    /// leaving.
    fn next_handoff(&self) -> Option<Instant> {
        [
            self.schedule.last().map(Association::at),
            self.joins.iter().map(|j| j.0).min(),
            self.parked.front().map(|p| p.0),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Runs the hand-off steps due at `now`.
    fn handoff_step(&mut self, now: Instant) {
        // Steps run at `now`: an idle link is woken only by its next packet, so a step may run
        // after its instant (nothing happened on the link in between); a join or release it
        // schedules runs in the same call.
        while self.schedule.last().is_some_and(|h| h.at() <= now) {
            match self.schedule.pop().expect("a hand-off") {
                Association::Join { station, until, .. } => {
                    self.assoc[station as usize] = Assoc::Joining;
                    self.joins.push((until, station));
                }
                Association::Leave {
                    station,
                    resume,
                    queued_lost,
                    ..
                } => self.leave(station, now, resume, queued_lost),
            }
        }
        while self.parked.front().is_some_and(|p| p.0 <= now) {
            let (_, pkt) = self.parked.pop_front().expect("a parked packet");
            self.stats.packets_out += 1;
            self.stats.bytes_out += pkt.wire_len() as u64;
            self.emit(now, pkt);
        }
        while let Some(k) = self.joins.iter().position(|j| j.0 <= now) {
            let (_, s) = self.joins.remove(k);
            self.assoc[s as usize] = Assoc::Present;
            for pkt in std::mem::take(&mut self.pending[s as usize]) {
                self.arrive(0, now, pkt, false);
            }
            let i = s as usize + 1;
            if !self.nodes[i].queue.is_empty() && self.nodes[i].slot.is_none() {
                self.start_backoff(i, now);
            }
        }
    }

    /// Station `s` leaves at `at`: it takes its queue along (it leaves the link at `resume`);
    /// of what the AP holds for it, each packet is lost with probability `lost`, the rest parked.
    fn leave(&mut self, s: u32, at: Instant, resume: Instant, lost: f64) {
        self.assoc[s as usize] = Assoc::Absent;
        let i = s as usize + 1;
        let mut keep: Vec<P> = Vec::new();
        let node = &mut self.nodes[i];
        node.failures = 0;
        node.slot = None;
        node.bytes = 0;
        keep.extend(node.queue.drain(..).map(|(pkt, _)| pkt));
        let ap = std::mem::take(&mut self.nodes[0].queue);
        let head_left = ap
            .front()
            .is_some_and(|(pkt, _)| self.ends(pkt).1 == Attachment::Station(s));
        for (pkt, relay) in ap {
            if self.ends(&pkt).1 != Attachment::Station(s) {
                self.nodes[0].queue.push_back((pkt, relay));
                continue;
            }
            self.nodes[0].bytes -= pkt.wire_len() as u64;
            if self.handoff_rng.bernoulli(lost) {
                self.lose(0, at, &pkt);
            } else {
                keep.push(pkt);
            }
        }
        if head_left {
            self.nodes[0].failures = 0;
        }
        if self.nodes[0].queue.is_empty() {
            self.nodes[0].slot = None;
        }
        let k = self.parked.partition_point(|p| p.0 <= resume);
        for (j, pkt) in keep.into_iter().enumerate() {
            self.parked.insert(k + j, (resume, pkt));
        }
    }

    fn next_slot(&self) -> Option<u64> {
        self.nodes.iter().filter_map(|n| n.slot).min()
    }

    fn slot_start(&self, slot: u64) -> Instant {
        self.t0 + self.p.slot.saturating_mul(slot)
    }

    /// Runs the exchange of the earliest slot in which some counter reaches 0.
    fn exchange(&mut self) {
        let m = self.next_slot().expect("a node has a frame");
        let start = self.slot_start(m);
        let senders: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].slot == Some(m))
            .collect();
        for n in &mut self.nodes {
            if let Some(s) = n.slot.as_mut() {
                *s -= m;
            }
        }
        let longest = senders
            .iter()
            .map(|&i| {
                self.nodes[i]
                    .queue
                    .front()
                    .expect("a sender has a frame")
                    .0
                    .wire_len()
            })
            .max()
            .expect("a sender");
        self.t0 = start + self.p.exchange_time(longest);
        let collision = senders.len() > 1;
        if collision {
            self.wlan.collision_events += 1;
        }
        for i in senders {
            self.stats.frames_sent += 1;
            self.wlan.nodes[i].frames_sent += 1;
            if self.nodes[i].failures > 0 {
                self.stats.arq_retransmissions += 1;
            }
            let ok = !collision && !self.errors.bernoulli(self.p.frame_error_rate);
            if ok {
                self.deliver(i, start);
            } else {
                self.fail(i, start, collision);
            }
            self.nodes[i].slot = None;
            if !self.nodes[i].queue.is_empty() {
                // Counted from the new t0: the medium is busy until then.
                self.nodes[i].slot = Some(self.draw_backoff(i));
            }
        }
    }

    fn pop_head(&mut self, i: usize) -> (P, bool) {
        let node = &mut self.nodes[i];
        node.failures = 0;
        let (pkt, relay) = node.queue.pop_front().expect("a sender has a frame");
        node.bytes -= pkt.wire_len() as u64;
        (pkt, relay)
    }

    fn deliver(&mut self, i: usize, start: Instant) {
        let (pkt, relay) = self.pop_head(i);
        let len = pkt.wire_len();
        let end = start + self.p.data_time(len);
        let s = &mut self.wlan.nodes[i];
        s.successes += 1;
        s.bytes_delivered += len as u64;
        if relay {
            self.wlan.relayed += 1;
            let to = self.ends(&pkt).1;
            self.ap_sends(end, pkt, to);
        } else {
            self.stats.packets_out += 1;
            self.stats.bytes_out += len as u64;
            self.emit(end, pkt);
        }
    }

    fn fail(&mut self, i: usize, start: Instant, collision: bool) {
        self.stats.frame_errors += 1;
        let s = &mut self.wlan.nodes[i];
        if collision {
            s.collisions += 1;
        } else {
            s.errors += 1;
        }
        self.nodes[i].failures += 1;
        if self.nodes[i].failures >= self.p.retry_limit {
            let (pkt, _) = self.pop_head(i);
            self.wlan.nodes[i].retry_drops += 1;
            let at = start + self.p.data_time(pkt.wire_len());
            self.stats.record_drop(
                &mut self.events,
                at,
                pkt.flow(),
                pkt.wire_len(),
                DropReason::RetryLimit,
            );
        }
    }
}

impl<P: Packet> Link<P> for WlanLink<P> {
    fn enqueue(&mut self, now: Instant, pkt: P) {
        self.handoff_step(now);
        self.stats.packets_in += 1;
        let (from, to) = self.ends(&pkt);
        match from {
            Attachment::Wired => self.ap_sends(now, pkt, to),
            Attachment::Station(s) if self.assoc[s as usize] == Assoc::Absent => {
                self.lose(s as usize + 1, now, &pkt)
            }
            Attachment::Station(_) => {
                let relay = matches!(to, Attachment::Station(_));
                self.arrive(Self::node_index(from), now, pkt, relay);
            }
        }
    }

    fn poll_at(&self) -> Option<Instant> {
        let exchange = self.next_slot().map(|m| self.slot_start(m));
        [exchange, self.next_handoff()].into_iter().flatten().min()
    }

    fn handle_timeout(&mut self, now: Instant) {
        loop {
            let exchange = self
                .next_slot()
                .map(|m| self.slot_start(m))
                .filter(|&t| t <= now);
            match (exchange, self.next_handoff().filter(|&t| t <= now)) {
                // A hand-off step first at equal instants: a station leaving does not send then.
                (e, Some(h)) if e.is_none_or(|e| h <= e) => self.handoff_step(h),
                (Some(_), _) => self.exchange(),
                _ => return,
            }
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

    fn sample(&mut self, _now: Instant) -> LinkSample {
        let pending = self
            .pending
            .iter()
            .flatten()
            .chain(self.parked.iter().map(|p| &p.1));
        let (pending_packets, pending_bytes) =
            pending.fold((0, 0), |(n, b), p| (n + 1, b + p.wire_len() as u64));
        LinkSample {
            queue_packets: self.nodes.iter().map(|n| n.queue.len() as u32).sum::<u32>()
                + pending_packets,
            queue_bytes: self.nodes.iter().map(|n| n.bytes).sum::<u64>() + pending_bytes,
            radio: None,
        }
    }
}

/// Bianchi's saturation throughput of DCF basic access (G. Bianchi, "Performance analysis of
/// the IEEE 802.11 distributed coordination function", IEEE JSAC 18(3), 2000, eqs. 7, 9, 13):
/// `n` always-backlogged nodes sending IP packets of `ip_bytes`, no frame errors, no retry
/// limit. The collision time equals the success time here (see the module documentation).
/// Returns the IP throughput in bit/s; an analytic reference for the simulated medium.
pub fn bianchi_saturation_bps(p: &WlanParams, n: u32, ip_bytes: u32) -> f64 {
    assert!(n >= 1);
    let w = (p.cw_min + 1) as f64;
    let m = ((p.cw_max + 1) as f64 / w).log2().round() as i32;
    let tau_of = |q: f64| {
        2.0 * (1.0 - 2.0 * q) / ((1.0 - 2.0 * q) * (w + 1.0) + q * w * (1.0 - (2.0 * q).powi(m)))
    };
    // p = 1 − (1 − τ(p))^(n−1) has one root in [0, 1): bisect on it.
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if 1.0 - (1.0 - tau_of(mid)).powi(n as i32 - 1) > mid {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let tau = tau_of(0.5 * (lo + hi));
    let p_tr = 1.0 - (1.0 - tau).powi(n as i32);
    let p_s = n as f64 * tau * (1.0 - tau).powi(n as i32 - 1) / p_tr;
    let (sigma, t_s) = (
        p.slot.as_secs_f64(),
        p.exchange_time(ip_bytes).as_secs_f64(),
    );
    let t_c = t_s;
    p_s * p_tr * (8 * ip_bytes) as f64
        / ((1.0 - p_tr) * sigma + p_tr * p_s * t_s + p_tr * (1.0 - p_s) * t_c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestPacket;

    /// A test packet that knows its direction.
    #[derive(Clone, Debug, PartialEq)]
    struct P {
        inner: TestPacket,
        dir: Direction,
    }

    impl Packet for P {
        fn wire_len(&self) -> u32 {
            self.inner.len
        }
        fn flip_bit(&mut self, bit: u64) {
            self.inner.flip_bit(bit)
        }
        fn flow(&self) -> u32 {
            self.inner.flow
        }
        fn direction(&self) -> Option<Direction> {
            Some(self.dir)
        }
    }

    fn pkt(id: u32, len: u32, flow: u32, dir: Direction) -> P {
        P {
            inner: TestPacket {
                flow,
                ..TestPacket::new(id, len)
            },
            dir,
        }
    }

    /// Flow i goes from station i (client) up to the wired side.
    fn uplinks(n: u32) -> HashMap<u32, WlanRoute> {
        (0..n)
            .map(|i| {
                (
                    i,
                    WlanRoute {
                        client: Attachment::Station(i),
                        server: Attachment::Wired,
                    },
                )
            })
            .collect()
    }

    /// Runs the link until `stop`, keeping every flow in `saturate` backlogged (a packet of
    /// `len` enqueued whenever its queue runs low). Returns the outputs.
    fn run(
        link: &mut WlanLink<P>,
        saturate: &[(u32, Direction)],
        len: u32,
        stop: Instant,
    ) -> Vec<(Instant, P)> {
        let mut out = Vec::new();
        let mut id = 0;
        let mut now = Instant::ZERO;
        loop {
            for &(flow, dir) in saturate {
                let route = link.routes[&flow];
                let from = if dir == Direction::Up {
                    route.client
                } else {
                    route.server
                };
                while link.nodes[WlanLink::<P>::node_index(from)].queue.len() < 2 {
                    link.enqueue(now, pkt(id, len, flow, dir));
                    id += 1;
                }
            }
            let Some(t) = link.poll_at() else { break };
            if t > stop {
                break;
            }
            now = t;
            link.handle_timeout(now);
            while let Some(o) = link.poll_output() {
                assert!(o.0 >= now);
                out.push(o);
            }
        }
        out
    }

    fn throughput_bps(out: &[(Instant, P)], stop: Instant) -> f64 {
        out.iter()
            .filter(|o| o.0 <= stop)
            .map(|o| 8.0 * o.1.wire_len() as f64)
            .sum::<f64>()
            / stop.as_secs_f64()
    }

    #[test]
    fn frame_timing_by_hand() {
        let p = WlanParams::default();
        // 1500 B IP + 36 B MAC/LLC = 1536 B: 16 + 12288 + 6 = 12310 bits / 216 per symbol
        // = 57 symbols = 228 µs; + 20 µs preamble/SIGNAL + 6 µs extension = 254 µs.
        assert_eq!(p.data_time(1500), Duration::from_micros(254));
        // ACK, 14 B at 24 Mbit/s: 134 bits / 96 = 2 symbols: 8 + 20 + 6 = 34 µs.
        assert_eq!(p.ack_time(), Duration::from_micros(34));
        assert_eq!(p.difs(), Duration::from_micros(28));
        // 254 + SIFS 10 + ACK 34 + DIFS 28.
        assert_eq!(p.exchange_time(1500), Duration::from_micros(326));
        // 512 B IP: 548 B = 16 + 4384 + 6 = 4406 bits / 216 = 21 symbols (20.4): 84 + 26 = 110 µs.
        assert_eq!(p.data_time(512), Duration::from_micros(110));
        // At 6 Mbit/s (24 bits per symbol): 12310 / 24 = 513 symbols = 2052 µs + 26.
        let slow = WlanParams {
            phy_rate_bps: 6_000_000,
            ..p
        };
        assert_eq!(slow.data_time(1500), Duration::from_micros(2078));
    }

    #[test]
    fn a_lone_station_sends_at_the_rate_its_mean_backoff_allows() {
        // One node: every exchange is a success after a mean of CW_min/2 = 7.5 idle slots, so
        // the throughput is 12000 bits / (326 µs + 7.5 × 9 µs) = 30.50 Mbit/s.
        let mut link = WlanLink::new(
            WlanParams::default(),
            1,
            uplinks(1),
            RngStream::derive(1, "wlan"),
        )
        .unwrap();
        let stop = Instant::from_millis(20_000);
        let s = throughput_bps(&run(&mut link, &[(0, Direction::Up)], 1500, stop), stop);
        let expected = 12_000.0 / 393.5e-6;
        assert!((s / expected - 1.0).abs() < 0.01, "{s} against {expected}");
        assert_eq!(link.wlan_stats().collision_events, 0);
    }

    /// Simulated and Bianchi saturation throughput for n = 1..10 stations and one size.
    fn bianchi_rows(len: u32) -> Vec<(u32, f64, f64)> {
        let stop = Instant::from_millis(10_000);
        (1..=10)
            .map(|n| {
                // Bianchi's model has no retry limit.
                let p = WlanParams {
                    retry_limit: u32::MAX,
                    queue_limit: None,
                    ..Default::default()
                };
                let mut link = WlanLink::new(
                    p.clone(),
                    n,
                    uplinks(n),
                    RngStream::derive(n as u64, "wlan"),
                )
                .unwrap();
                let flows: Vec<_> = (0..n).map(|f| (f, Direction::Up)).collect();
                let sim = throughput_bps(&run(&mut link, &flows, len, stop), stop);
                (n, sim, bianchi_saturation_bps(&p, n, len))
            })
            .collect()
    }

    #[test]
    fn saturation_throughput_matches_bianchi_for_1_to_10_stations() {
        for len in [512, 1500] {
            for (n, sim, model) in bianchi_rows(len) {
                let err = sim / model - 1.0;
                println!(
                    "{len} B, n = {n}: simulated {:.3} Mbit/s, Bianchi {:.3} Mbit/s ({:+.2} %)",
                    sim / 1e6,
                    model / 1e6,
                    100.0 * err
                );
                assert!(
                    err.abs() < 0.03,
                    "{len} B, {n} stations: {sim} against {model}"
                );
            }
        }
    }

    #[test]
    fn bianchi_reference_values() {
        // n = 1: τ = 2/(W + 1) = 2/17, S = L / ((1 − τ)/τ · σ + T_s) = 12000 / (67.5 + 326) µs.
        let p = WlanParams::default();
        assert!((bianchi_saturation_bps(&p, 1, 1500) - 12_000.0 / 393.5e-6).abs() < 1.0);
        // A second station fills idle slots (the peak, with CW_min = 15); beyond it collisions
        // cost more than they save.
        let s: Vec<f64> = (1..=10)
            .map(|n| bianchi_saturation_bps(&p, n, 1500))
            .collect();
        assert!(
            s[1] > s[0] && s[1..].windows(2).all(|w| w[1] < w[0]),
            "{s:?}"
        );
    }

    #[test]
    fn a_two_hop_path_gets_about_half_of_a_one_hop_path() {
        let stop = Instant::from_millis(10_000);
        for len in [512, 1500] {
            let one = {
                let mut link = WlanLink::new(
                    WlanParams::default(),
                    2,
                    uplinks(1),
                    RngStream::derive(3, "wlan"),
                )
                .unwrap();
                throughput_bps(&run(&mut link, &[(0, Direction::Up)], len, stop), stop)
            };
            let routes = HashMap::from([(
                0,
                WlanRoute {
                    client: Attachment::Station(0),
                    server: Attachment::Station(1),
                },
            )]);
            let mut link = WlanLink::new(
                WlanParams::default(),
                2,
                routes,
                RngStream::derive(3, "wlan"),
            )
            .unwrap();
            let two = throughput_bps(&run(&mut link, &[(0, Direction::Up)], len, stop), stop);
            let ratio = two / one;
            println!(
                "{len} B: one hop {:.2} Mbit/s, two hops {:.2} Mbit/s, ratio {ratio:.3}",
                one / 1e6,
                two / 1e6
            );
            // The AP relays what it wins of a medium shared by two backlogged nodes: about half
            // of Bianchi's n = 2 throughput, which is a little above one node's (fewer idle slots).
            let half_of_two = 0.5 * bianchi_saturation_bps(&WlanParams::default(), 2, len) / one;
            assert!(
                (ratio / half_of_two - 1.0).abs() < 0.05,
                "{len} B: ratio {ratio}, expected about {half_of_two}"
            );
            let s = link.wlan_stats();
            assert_eq!(s.relayed, s.nodes[1].successes);
            assert!(
                s.nodes[0].queue_drops > 0,
                "the saturated station overruns the AP's queue"
            );
        }
    }

    #[test]
    fn down_and_up_packets_of_a_flow_queue_at_the_ap_and_at_the_station() {
        let routes = HashMap::from([(
            7,
            WlanRoute {
                client: Attachment::Station(2),
                server: Attachment::Wired,
            },
        )]);
        let mut link = WlanLink::new(
            WlanParams::default(),
            3,
            routes,
            RngStream::derive(5, "wlan"),
        )
        .unwrap();
        link.enqueue(Instant::ZERO, pkt(0, 1500, 7, Direction::Down));
        link.enqueue(Instant::ZERO, pkt(1, 52, 7, Direction::Up));
        let out = run(&mut link, &[], 0, Instant::from_millis(100));
        let mut ids: Vec<u32> = out.iter().map(|o| o.1.inner.id).collect();
        ids.sort();
        assert_eq!(ids, [0, 1]);
        let s = link.wlan_stats();
        assert_eq!(s.nodes[0].bytes_delivered, 1500);
        assert_eq!(s.nodes[3].bytes_delivered, 52);
        assert_eq!(link.poll_at(), None, "idle once both are through");
    }

    #[test]
    fn a_downloads_acks_contend_for_the_medium() {
        // The AP sends 1500 B packets to station 0, which answers every second one with a
        // 52 B ACK. Two data exchanges take 2 × (326 + 67.5) µs with the mean backoff; one ACK
        // exchange adds 114 µs of airtime (0.873 of the ACK-free throughput if its backoff
        // overlapped the AP's entirely), plus 67.5 µs of backoff if it did not (0.813), plus
        // collisions between the two nodes.
        let route = HashMap::from([(
            0,
            WlanRoute {
                client: Attachment::Station(0),
                server: Attachment::Wired,
            },
        )]);
        let stop = Instant::from_millis(10_000);
        let alone = {
            let mut link = WlanLink::new(
                WlanParams::default(),
                1,
                route.clone(),
                RngStream::derive(6, "wlan"),
            )
            .unwrap();
            throughput_bps(&run(&mut link, &[(0, Direction::Down)], 1500, stop), stop)
        };
        let mut link = WlanLink::new(
            WlanParams::default(),
            1,
            route,
            RngStream::derive(6, "wlan"),
        )
        .unwrap();
        let (mut data_bits, mut acks, mut id) = (0u64, 0u64, 1_000_000);
        let mut now = Instant::ZERO;
        while now <= stop {
            while link.nodes[0].queue.len() < 2 {
                link.enqueue(now, pkt(id, 1500, 0, Direction::Down));
                id += 1;
            }
            now = link.poll_at().expect("backlogged");
            link.handle_timeout(now);
            while let Some((at, p)) = link.poll_output() {
                if p.dir == Direction::Down && at <= stop {
                    data_bits += 12_000;
                    if (data_bits / 12_000) % 2 == 0 {
                        link.enqueue(at, pkt(id, 52, 0, Direction::Up));
                        id += 1;
                    }
                } else if p.dir == Direction::Up {
                    acks += 1;
                }
            }
        }
        let with_acks = data_bits as f64 / stop.as_secs_f64();
        let ratio = with_acks / alone;
        println!(
            "download alone {:.2} Mbit/s, with its ACKs {:.2} Mbit/s ({ratio:.3})",
            alone / 1e6,
            with_acks / 1e6
        );
        assert!(acks > 0 && link.wlan_stats().collision_events > 0);
        assert!(ratio > 0.75 && ratio < 0.873, "ratio {ratio}");
    }

    #[test]
    fn frames_that_always_fail_are_dropped_at_the_retry_limit() {
        let p = WlanParams {
            frame_error_rate: 1.0,
            ..Default::default()
        };
        let mut link = WlanLink::new(p, 1, uplinks(1), RngStream::derive(2, "wlan")).unwrap();
        for i in 0..10 {
            link.enqueue(Instant::ZERO, pkt(i, 1000, 0, Direction::Up));
        }
        assert!(run(&mut link, &[], 0, Instant::from_secs_f64(10.0)).is_empty());
        let s = link.stats();
        assert_eq!(
            (
                s.frames_sent,
                s.frame_errors,
                s.loss_drops,
                s.arq_retransmissions
            ),
            (70, 70, 10, 60)
        );
        let mut drops = 0;
        while let Some(e) = link.poll_event() {
            assert!(matches!(
                e,
                LinkEvent::Drop {
                    reason: DropReason::RetryLimit,
                    flow: 0,
                    bytes: 1000,
                    ..
                }
            ));
            drops += 1;
        }
        assert_eq!(drops, 10);
    }

    #[test]
    fn frame_errors_are_retried_and_lose_packets_at_the_rate_of_all_attempts_failing() {
        // Each of 7 attempts fails with probability 0.5: a packet is lost with 0.5^7 = 0.78 %
        // and takes 2 − 2·0.5^7 attempts on average (truncated geometric).
        let p = WlanParams {
            frame_error_rate: 0.5,
            queue_limit: None,
            ..Default::default()
        };
        let mut link = WlanLink::new(p, 1, uplinks(1), RngStream::derive(4, "wlan")).unwrap();
        let n = 40_000;
        for i in 0..n {
            link.enqueue(Instant::ZERO, pkt(i, 200, 0, Direction::Up));
        }
        let out = run(&mut link, &[], 0, Instant::FAR_FUTURE);
        let s = link.stats();
        let lost = s.loss_drops as f64 / n as f64;
        assert!((lost - 0.5f64.powi(7)).abs() < 0.0015, "lost {lost}");
        let attempts = s.frames_sent as f64 / n as f64;
        assert!(
            (attempts - (2.0 - 2.0 * 0.5f64.powi(7))).abs() < 0.02,
            "attempts {attempts}"
        );
        assert_eq!(out.len() as u64 + s.loss_drops, n as u64);
    }

    #[test]
    fn packets_are_conserved_and_runs_are_deterministic() {
        // Five stations and the AP; flows both ways, station to station, small queues.
        let mut routes = uplinks(4);
        routes.insert(
            9,
            WlanRoute {
                client: Attachment::Station(4),
                server: Attachment::Station(0),
            },
        );
        let p = WlanParams {
            frame_error_rate: 0.2,
            retry_limit: 3,
            queue_limit: Some(QueueLimit::Packets(5)),
            ..Default::default()
        };
        let go = |seed| {
            let mut link = WlanLink::new(
                p.clone(),
                5,
                routes.clone(),
                RngStream::derive(seed, "wlan"),
            )
            .unwrap();
            let mut rng = RngStream::derive(seed, "traffic");
            let mut out = Vec::new();
            let mut t = Instant::ZERO;
            for i in 0..3000 {
                t += Duration::from_micros(rng.below(400));
                while link.poll_at().is_some_and(|w| w <= t) {
                    let w = link.poll_at().unwrap();
                    link.handle_timeout(w);
                }
                let flow = [0, 1, 2, 3, 9][rng.below(5) as usize];
                let dir = if rng.bernoulli(0.5) {
                    Direction::Up
                } else {
                    Direction::Down
                };
                link.enqueue(t, pkt(i, 40 + rng.below(1460) as u32, flow, dir));
                while let Some(o) = link.poll_output() {
                    out.push((o.0, o.1.inner.id));
                }
            }
            out.extend(
                run(&mut link, &[], 0, Instant::FAR_FUTURE)
                    .into_iter()
                    .map(|o| (o.0, o.1.inner.id)),
            );
            (out, link.stats().clone(), link.wlan_stats().clone())
        };
        let (out, s, w) = go(11);
        assert_eq!(s.packets_in, 3000);
        assert_eq!(s.packets_in, s.packets_out + s.queue_drops + s.loss_drops);
        assert_eq!(out.len() as u64, s.packets_out);
        assert!(
            out.windows(2).all(|p| p[0].0 <= p[1].0),
            "outputs in time order"
        );
        assert!(s.queue_drops > 0 && s.loss_drops > 0 && w.collision_events > 0 && w.relayed > 0);
        let successes: u64 = w.nodes.iter().map(|n| n.successes).sum();
        assert_eq!(successes, s.packets_out + w.relayed);
        assert_eq!(go(11), (out, s.clone(), w), "same seed, same run");
        assert_ne!(go(12).0, go(11).0, "another seed, another run");
    }

    /// Flow i goes down from the wired side to station i.
    fn downloads(n: u32) -> HashMap<u32, WlanRoute> {
        (0..n)
            .map(|i| {
                (
                    i,
                    WlanRoute {
                        client: Attachment::Station(i),
                        server: Attachment::Wired,
                    },
                )
            })
            .collect()
    }

    fn drops_by_reason(link: &mut WlanLink<P>) -> HashMap<(u32, DropReason), u64> {
        let mut out = HashMap::new();
        while let Some(e) = link.poll_event() {
            if let LinkEvent::Drop { flow, reason, .. } = e {
                *out.entry((flow, reason)).or_default() += 1;
            }
        }
        out
    }

    #[test]
    fn a_station_that_leaves_loses_the_share_of_the_aps_queue_asked_and_gets_the_rest_after_the_outage(
    ) {
        let (at, resume) = (Instant::from_millis(1), Instant::from_millis(51));
        for lost in [1.0, 0.0, 0.5] {
            let leave = Association::Leave {
                station: 0,
                at,
                resume,
                queued_lost: lost,
            };
            let mut link = WlanLink::new(
                WlanParams::default(),
                2,
                downloads(2),
                RngStream::derive(8, "wlan"),
            )
            .unwrap()
            .with_associations(&[0, 1], vec![leave]);
            // 50 packets each for stations 0 and 1, and one packet up from station 0.
            for i in 0..50 {
                link.enqueue(Instant::ZERO, pkt(i, 1500, 0, Direction::Down));
                link.enqueue(Instant::ZERO, pkt(100 + i, 1500, 1, Direction::Down));
            }
            link.enqueue(Instant::ZERO, pkt(999, 100, 0, Direction::Up));
            let mut out = run(&mut link, &[], 0, Instant::from_millis(200));
            // A packet for station 0 after it left is lost.
            link.enqueue(
                Instant::from_millis(200),
                pkt(1000, 1500, 0, Direction::Down),
            );
            out.extend(run(&mut link, &[], 0, Instant::FAR_FUTURE));
            let drops = drops_by_reason(&mut link);
            let to0: Vec<_> = out
                .iter()
                .filter(|o| o.1.inner.flow == 0 && o.1.dir == Direction::Down)
                .collect();
            let normal: Vec<_> = to0.iter().filter(|o| o.0 != resume).collect();
            let sent_before = normal.len() as u64;
            let kept = to0.iter().filter(|o| o.0 == resume).count() as u64;
            let handoff = drops.get(&(0, DropReason::Handoff)).copied().unwrap_or(0);
            assert!(
                normal
                    .iter()
                    .all(|o| o.0 < at + WlanParams::default().data_time(1500)),
                "sent normally only before it left"
            );
            assert!(
                sent_before > 0 && sent_before < 50,
                "{sent_before} sent in the first millisecond"
            );
            // 50 queued and one arriving after it left (always lost).
            assert_eq!(sent_before + kept + handoff, 51, "lost {lost}");
            match lost {
                1.0 => assert_eq!((kept, handoff), (0, 51 - sent_before)),
                0.0 => assert_eq!((kept, handoff), (50 - sent_before, 1)),
                _ => assert!(
                    handoff > 5 && kept > 5,
                    "a share: {handoff} lost, {kept} kept"
                ),
            }
            // Its own uplink packet goes with it and leaves the link when the outage ends.
            assert!(out
                .iter()
                .any(|o| o.1.inner.id == 999 && (o.0 <= at || o.0 == resume)));
            // Station 1's packets all get through.
            assert_eq!(out.iter().filter(|o| o.1.inner.flow == 1).count(), 50);
            assert_eq!(drops.get(&(1, DropReason::Handoff)), None);
            let s = link.stats();
            assert_eq!(s.packets_in, s.packets_out + s.queue_drops + s.loss_drops);
        }
    }

    #[test]
    fn a_joining_station_is_out_of_reach_until_the_outage_ends_without_blocking_the_others() {
        let (at, until) = (Instant::from_millis(10), Instant::from_millis(60));
        let join = Association::Join {
            station: 1,
            at,
            until,
        };
        let mut routes = downloads(2);
        routes.insert(
            2,
            WlanRoute {
                client: Attachment::Wired,
                server: Attachment::Station(1),
            },
        );
        let mut link = WlanLink::new(
            WlanParams::default(),
            2,
            routes,
            RngStream::derive(9, "wlan"),
        )
        .unwrap()
        .with_associations(&[0], vec![join]);
        // Before the join, station 1 is away: its packets are lost.
        link.enqueue(Instant::from_millis(5), pkt(0, 1500, 1, Direction::Down));
        let mut out = run(&mut link, &[], 0, Instant::from_millis(20));
        link.enqueue(Instant::from_millis(20), pkt(1, 1500, 1, Direction::Down));
        link.enqueue(Instant::from_millis(20), pkt(2, 300, 2, Direction::Down)); // from station 1, up to the wired side
        link.enqueue(Instant::from_millis(20), pkt(3, 1500, 0, Direction::Down));
        out.extend(run(&mut link, &[], 0, Instant::FAR_FUTURE));
        let when = |id| out.iter().find(|o| o.1.inner.id == id).map(|o| o.0);
        assert_eq!(when(0), None);
        assert!(
            when(1).unwrap() > until && when(2).unwrap() > until,
            "{:?} {:?}",
            when(1),
            when(2)
        );
        assert!(
            when(3).unwrap() < Instant::from_millis(21),
            "the AP's other traffic is not held: {:?}",
            when(3)
        );
        assert_eq!(
            drops_by_reason(&mut link).get(&(1, DropReason::Handoff)),
            Some(&1)
        );
    }

    #[test]
    fn bad_parameters_and_routes_are_refused() {
        let ok = |p: WlanParams, routes| {
            WlanLink::<P>::new(p, 2, routes, RngStream::derive(1, "w")).err()
        };
        assert!(matches!(
            ok(
                WlanParams {
                    phy_rate_bps: 1_000,
                    ..Default::default()
                },
                uplinks(1)
            ),
            Some(WlanError::Params(_))
        ));
        assert!(matches!(
            ok(
                WlanParams {
                    cw_min: 0,
                    ..Default::default()
                },
                uplinks(1)
            ),
            Some(WlanError::Params(_))
        ));
        assert!(matches!(
            ok(
                WlanParams {
                    retry_limit: 0,
                    ..Default::default()
                },
                uplinks(1)
            ),
            Some(WlanError::Params(_))
        ));
        assert!(matches!(
            ok(
                WlanParams {
                    frame_error_rate: 1.5,
                    ..Default::default()
                },
                uplinks(1)
            ),
            Some(WlanError::Params(_))
        ));
        assert_eq!(
            ok(WlanParams::default(), uplinks(3)),
            Some(WlanError::UnknownStation {
                flow: 2,
                station: 2,
                stations: 2
            })
        );
        let wired = HashMap::from([(
            4,
            WlanRoute {
                client: Attachment::Wired,
                server: Attachment::Wired,
            },
        )]);
        assert_eq!(
            ok(WlanParams::default(), wired),
            Some(WlanError::NoHop { flow: 4 })
        );
    }
}
