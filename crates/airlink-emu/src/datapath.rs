//! The real-time datapath: one thread moves packets between the two TUN devices through the
//! scenario's four link models, on absolute deadlines.
//!
//! - Virtual time ([`Instant`]) maps to `CLOCK_MONOTONIC` with one fixed origin taken at
//!   start: `mono = origin + instant`. Links are called with the instant an event is *due*,
//!   never the (possibly late) wake-up time, so a late wake-up never shifts the model.
//! - Each wake-up handles everything already due, in time order (link timers, packets due at
//!   the next stage, samples), so the rate stays exact after a stall; then it reads what the
//!   applications sent (non-blocking, in batches) and stamps it with the current time.
//! - Waiting: `epoll` on both TUN devices, a stop `eventfd` and a `timerfd` armed with an
//!   *absolute* deadline at `next deadline - guard`; the last `guard` is a bounded spin.
//!   With no deadline the timer is disarmed: no wake-ups while idle. The spin is spent only
//!   while deliveries are sparser than the guard; dense deliveries are taken in batches of at
//!   least `MIN_SLEEP_NS` per wake-up (the rate stays exact).
//! - Logging and pcap writing go through a channel to the writer thread bounded in records
//!   and in bytes; when it is full the record is counted as lost (the summary and the run's
//!   warnings say so), the timed path never blocks.
//! - Memory is bounded: what the packets inside the emulated links of each direction (queues,
//!   delay lines, stage queues) take in memory never exceeds `max_in_flight_bytes`; a packet
//!   that would exceed it is dropped on arrival and counted (`in_flight_drops`), as a router
//!   out of buffer would. A packet is counted at its memory cost ([`held_bytes`]: its
//!   allocation and its queue slots), not its length: small packets cost several times their
//!   bytes.
//!
//! Paths: each packet read from a TUN device is given a path (server TUN → links → client TUN,
//! or back): that of the scenario flow whose server port it carries (airlink's own flows, and
//! flows given an emulation `port` for the kernel's applications), else the shared one, and
//! it crosses the path's links hop by hop, as in simulation. Things due at the same instant follow the network's event order
//! ([`airlink_net::order`]): arrivals at a link before link timers, then samples; ties by link.

use crate::control::{
    DatapathRequest, DatapathState, FlowTraffic, Inbox, LinkDrops, LinkState, Radio,
};
use crate::packet::{EmuPacket, Malformed, ETHERNET_HEADER};
use crate::timing::{monotonic_ns, spin_until, thread_cpu_ns};
use crate::writer::{Record, Side};
use airlink_engine::{Duration, Instant};
use airlink_link::Packet;
use airlink_link::{LinkChange, LinkEvent};
use airlink_net::build::BuiltLink;
use airlink_net::{order, EventKind, FlowPath, LinkId, NetChange, Outages, TimedChange, NO_FLOW};
use serde::Serialize;
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::Arc;

/// Packets read from one TUN device per wake-up before timers get their turn again.
const READ_BATCH: usize = 64;
/// Share of a core the hybrid wait may spend spinning, on average.
const SPIN_SHARE: f64 = 0.25;
/// The shortest sleep the datapath asks for when deliveries come closer together than this (ns).
const MIN_SLEEP_NS: u64 = 50_000;
/// Spin only while deliveries are on average at least this many guards apart.
const SPIN_MIN_GAP_GUARDS: f64 = 1.0;
/// Spin time that may be saved up (ns).
const SPIN_BUCKET_NS: f64 = 5e6;
/// Upper bound of the adaptive guard of the hybrid wait.
const MAX_GUARD_NS: u64 = 250_000;
/// Lateness histogram: 1 us buckets up to 20 ms, then one overflow bucket.
const LATE_BUCKETS: usize = 20_001;
/// Default bound of the memory the packets inside the emulated links of one direction hold:
/// 60 s of delay at 32 Mbit/s, or 0.6 s at 3.2 Gbit/s, of 1500-byte packets.
pub const DEFAULT_MAX_IN_FLIGHT_BYTES: u64 = 256 << 20;
/// Bound of the bytes of pcap records waiting for the writer thread.
pub const MAX_RECORD_BYTES: u64 = 64 << 20;

/// What a packet inside the links costs besides its own allocation: its slots in a stage
/// queue and in a link's queue (a `VecDeque` grows by doubling, so up to twice its length),
/// and a pipe's backlog entry (16 bytes, doubled likewise).
const PACKET_OVERHEAD: u64 = 2 * std::mem::size_of::<(Instant, EmuPacket)>() as u64 + 2 * 16;

/// The memory a packet of `len` bytes holds while inside the links: its data (allocated at
/// its exact length, plus malloc's 8-byte header, rounded to 16 bytes, at least 32) and
/// [`PACKET_OVERHEAD`]. A function of the length alone, so that a drop the links report by
/// its length gives back what the packet's arrival took.
pub fn held_bytes(len: u32) -> u64 {
    ((len as u64 + 8).next_multiple_of(16)).max(32) + PACKET_OVERHEAD
}

/// What the datapath reads and writes on its two sides.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Framing {
    /// IP packets (TUN devices).
    Ip,
    /// Ethernet frames (packet sockets on real interfaces: gateway mode). IP frames cross the
    /// links and leave with the Ethernet header they came with; other frames (ARP, ...) are
    /// passed to the other side at once.
    Ethernet,
}

/// Datapath settings.
#[derive(Clone, Debug)]
pub struct DatapathConfig {
    pub guard_ns: u64,
    pub sample_interval: Duration,
    /// Bytes of each packet kept in the pcap files (0 = no pcap records at all).
    pub snaplen: u32,
    pub rt_fifo: bool,
    pub mlock: bool,
    /// Bytes the emulated links of one direction may hold at once (see the module doc).
    pub max_in_flight_bytes: u64,
}

/// Counters shared with the controlling thread while the datapath runs.
#[derive(Default)]
pub struct LiveCounters {
    pub wakeups: AtomicU64,
    pub packets_forwarded: AtomicU64,
}

/// Delivery statistics of one direction (packets written to one TUN device).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Delivery {
    pub packets: u64,
    pub bytes: u64,
    /// First and last due instant (s since the origin) and actual write times.
    pub first_due_s: Option<f64>,
    pub last_due_s: Option<f64>,
    pub first_actual_s: Option<f64>,
    pub last_actual_s: Option<f64>,
    /// Bytes after the first packet, for rates between the first and last departure.
    pub bytes_after_first: u64,
    /// Rate between the first and the last packet: from the link's schedule and as written.
    pub scheduled_rate_bps: Option<f64>,
    pub actual_rate_bps: Option<f64>,
    #[serde(skip)]
    first_due_ns: u64,
    #[serde(skip)]
    last_due_ns: u64,
    #[serde(skip)]
    first_actual_ns: u64,
    #[serde(skip)]
    last_actual_ns: u64,
}

impl Delivery {
    fn record(&mut self, due_ns: u64, actual_ns: u64, len: u32) {
        if self.packets == 0 {
            self.first_due_ns = due_ns;
            self.first_actual_ns = actual_ns;
        } else {
            self.bytes_after_first += len as u64;
        }
        self.packets += 1;
        self.bytes += len as u64;
        self.last_due_ns = due_ns;
        self.last_actual_ns = actual_ns;
    }

    fn finish(&mut self) {
        if self.packets == 0 {
            return;
        }
        self.first_due_s = Some(self.first_due_ns as f64 * 1e-9);
        self.last_due_s = Some(self.last_due_ns as f64 * 1e-9);
        self.first_actual_s = Some(self.first_actual_ns as f64 * 1e-9);
        self.last_actual_s = Some(self.last_actual_ns as f64 * 1e-9);
        let rate = |a: u64, b: u64| {
            (b > a).then(|| self.bytes_after_first as f64 * 8.0 / ((b - a) as f64 * 1e-9))
        };
        self.scheduled_rate_bps = rate(self.first_due_ns, self.last_due_ns);
        self.actual_rate_bps = rate(self.first_actual_ns, self.last_actual_ns);
    }
}

/// Lateness of packet writes against their due instants, in microseconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Lateness {
    pub packets: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

/// What the datapath saw, returned when it stops.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DatapathReport {
    pub duration_s: f64,
    pub wakeups: u64,
    /// Wake-ups with nothing to do: no packet read or written, no timer due.
    pub idle_wakeups: u64,
    pub packets_read_client: u64,
    pub packets_read_server: u64,
    /// Packets read from a TUN device that were not IP (counted, dropped).
    pub malformed_client: u64,
    pub malformed_server: u64,
    /// Writes to a TUN device that failed (counted, dropped).
    pub write_errors: u64,
    /// Gateway mode: frames other than IPv4/IPv6 (ARP, ...) passed straight to the other side.
    pub passed_through: u64,
    /// Records (pcap, samples, events) the writer thread could not take in time.
    pub records_lost: u64,
    /// Packets dropped on arrival because their direction's links held `max_in_flight_bytes`
    /// already: [downlink (from the server), uplink (from the client)].
    pub in_flight_drops: [u64; 2],
    /// The most memory the packets in the links of each direction held at once (bytes, as
    /// [`held_bytes`] counts them).
    pub in_flight_max_bytes: [u64; 2],
    /// The bound in force.
    pub max_in_flight_bytes: u64,
    pub downlink: Delivery,
    pub uplink: Delivery,
    pub lateness: Lateness,
    /// The guard of the hybrid wait at the end (it adapts to the timer wake-up latency).
    pub guard_us: f64,
    pub cpu_s: f64,
    /// Part of `cpu_s` spent spinning before deadlines (the hybrid wait's last guard).
    pub spin_s: f64,
    /// Per link: packets lost because it was down (the summary's `outage_drops`).
    #[serde(skip)]
    pub outage_drops: Vec<u64>,
}

/// Something due: a link's timer, the head of a link's stage queue, a timed change, or a
/// sample.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Due {
    Timer(usize),
    Stage(usize),
    Change(usize),
    Sample,
}

impl Due {
    /// The tie-break after the due instant: (rank, source) as in the network's event order.
    fn order(self) -> (u8, u32) {
        match self {
            // A stage queue's head arrives at the next link (or endpoint).
            Due::Stage(i) => (order::ARRIVE, order::link_source(i as u16)),
            Due::Timer(i) => (order::WAKE, order::link_source(i as u16)),
            Due::Change(i) => (order::CHANGE, i as u32),
            Due::Sample => (order::SAMPLE, 0),
        }
    }
}

/// Stage queues: packets that left link `i` and are due at the next stage.
struct Datapath {
    links: Vec<BuiltLink<EmuPacket>>,
    /// Each scenario flow's path, then the shared path (a hand-off changes them).
    paths: Vec<FlowPath>,
    /// Server ports and the path their packets take.
    ports: Vec<(u16, u16)>,
    /// Per link: whether it carries packets upward (for the in-flight bound).
    carries_up: Vec<bool>,
    /// The scenario's timed changes, and the index of the next one due.
    changes: Vec<TimedChange>,
    next_change: usize,
    outages: Outages<EmuPacket, EmuPacket>,
    /// Live control: requests waiting, each link's parameters now, each flow's traffic.
    control: Inbox<DatapathRequest>,
    params: Vec<LinkChange>,
    traffic: Vec<FlowTraffic>,
    pending: Vec<VecDeque<(Instant, EmuPacket)>>,
    client: OwnedFd,
    server: OwnedFd,
    framing: Framing,
    origin: u64,
    records: SyncSender<Record>,
    /// Bytes of packet records sent to the writer and not yet taken (the writer subtracts).
    record_bytes: Arc<AtomicU64>,
    /// Memory the packets inside the links of each direction hold ([`held_bytes`]):
    /// [downlink, uplink].
    in_flight: [u64; 2],
    cfg: DatapathConfig,
    report: DatapathReport,
    late_hist: Vec<u64>,
    late_sum_ns: u128,
    late_max_ns: u64,
    next_sample: Instant,
    buf: Vec<u8>,
    did_work: bool,
    /// Moving average of the gap between due instants of successive deliveries (ns).
    delivery_gap_ewma: f64,
    last_delivery_due: u64,
}

impl Datapath {
    fn now(&self) -> Instant {
        Instant::from_nanos(monotonic_ns().saturating_sub(self.origin))
    }

    fn send(&mut self, r: Record) {
        match self.records.try_send(r) {
            Ok(()) => {}
            Err(TrySendError::Full(r)) | Err(TrySendError::Disconnected(r)) => {
                self.report.records_lost += 1;
                self.record_bytes.fetch_sub(r.bytes(), Ordering::Relaxed);
            }
        }
    }

    fn capture(&mut self, side: Side, outgoing: bool, mono_ns: u64, data: &[u8]) {
        if self.cfg.snaplen == 0 {
            return;
        }
        let keep = data.len().min(self.cfg.snaplen as usize);
        if self.record_bytes.fetch_add(keep as u64, Ordering::Relaxed) + keep as u64
            > MAX_RECORD_BYTES
        {
            self.record_bytes.fetch_sub(keep as u64, Ordering::Relaxed);
            self.report.records_lost += 1;
            return;
        }
        self.send(Record::Packet {
            side,
            outgoing,
            mono_ns,
            orig_len: data.len() as u32,
            data: data[..keep].to_vec(),
        });
    }

    /// Moves link `i`'s outputs to its stage queue and its events to the writer.
    fn drain_link(&mut self, i: usize) {
        while let Some(out) = self.links[i].link.poll_output() {
            self.pending[i].push_back(out);
        }
        while let Some(ev) = self.links[i].link.poll_event() {
            if let LinkEvent::Drop { bytes, .. } = ev {
                self.left(self.carries_up[i], bytes);
            }
            let name = self.links[i].name;
            self.send(Record::Event {
                event: ev,
                link: name,
            });
        }
    }

    /// A packet of `bytes` left the links of a direction (delivered or dropped).
    fn left(&mut self, uplink: bool, bytes: u32) {
        let d = &mut self.in_flight[uplink as usize];
        *d = d.saturating_sub(held_bytes(bytes));
    }

    /// The earliest thing to do, first in the network's event order among equal instants.
    fn next_event(&self, sampling: bool) -> Option<(Instant, Due)> {
        let mut best: Option<(Instant, Due)> = None;
        let mut consider = |t: Option<Instant>, what: Due| {
            if let Some(t) = t {
                if best.is_none_or(|(b, w)| (t, what.order()) < (b, w.order())) {
                    best = Some((t, what));
                }
            }
        };
        for i in 0..self.links.len() {
            consider(self.links[i].link.poll_at(), Due::Timer(i));
            consider(self.pending[i].front().map(|p| p.0), Due::Stage(i));
        }
        consider(
            self.changes.get(self.next_change).map(|c| c.at),
            Due::Change(self.next_change),
        );
        if sampling {
            consider(Some(self.next_sample), Due::Sample);
        }
        best
    }

    fn busy(&self) -> bool {
        (0..self.links.len())
            .any(|i| self.links[i].link.poll_at().is_some() || !self.pending[i].is_empty())
    }

    /// Handles everything due at or before `now`, in time order.
    fn process_due(&mut self, now: Instant) {
        let sampling = !self.cfg.sample_interval.is_zero();
        loop {
            let busy = self.busy();
            let Some((t, what)) = self.next_event(sampling && busy) else {
                break;
            };
            if t > now {
                break;
            }
            self.did_work = true;
            match what {
                Due::Timer(i) => {
                    self.links[i].link.handle_timeout(t);
                    self.drain_link(i);
                }
                Due::Stage(i) => {
                    let (due, pkt) = self.pending[i].pop_front().expect("front exists");
                    self.leave(i, due, pkt);
                }
                Due::Change(k) => {
                    self.next_change += 1;
                    self.apply_change(k, t);
                }
                Due::Sample => {
                    for i in 0..self.links.len() {
                        let s = self.links[i].link.sample(t);
                        let name = self.links[i].name;
                        self.send(Record::Sample {
                            time_ns: t.as_nanos(),
                            link: name,
                            sample: s,
                        });
                    }
                    self.next_sample = t + self.cfg.sample_interval;
                }
            }
        }
        if !self.busy() && !self.outages.any() {
            // Nothing inside the links (nor kept by an outage): resynchronise (a drop the links
            // did not report as an event cannot hold the bound shut for ever).
            self.in_flight = [0, 0];
        }
        if sampling && !self.busy() && self.next_sample <= now {
            // Idle: skip the sample instants that passed (no wake-ups while idle).
            let k = (now.as_nanos() - self.next_sample.as_nanos())
                / self.cfg.sample_interval.as_nanos()
                + 1;
            self.next_sample += self.cfg.sample_interval.saturating_mul(k);
        }
    }

    /// A packet that left link `i` (due at the next stage at `due`) goes on: into the next link,
    /// or out to its TUN device. An outage of `i` catches it on the way; one of the next link,
    /// on arrival.
    fn leave(&mut self, i: usize, due: Instant, pkt: EmuPacket) {
        if self.outages.is_down(i as LinkId) {
            let lost = self.outages.catch_leaving(i as LinkId, pkt);
            return self.lost_to_outage(i, due, lost);
        }
        self.forward(due, pkt);
    }

    /// Sends a packet to the next hop on its path at `at`: a link, or its TUN device.
    fn forward(&mut self, at: Instant, mut pkt: EmuPacket) {
        let path = &self.paths[pkt.route as usize];
        let hops = if pkt.up { &path.up } else { &path.down };
        match hops.get(pkt.hop as usize) {
            Some(&l) => {
                pkt.hop += 1;
                self.arrive(l as usize, at, pkt);
            }
            None => self.deliver(!pkt.up, at, pkt),
        }
    }

    /// The path of a packet read from the client (`up`) or the server: by its server port.
    fn path_of(&self, up: bool, ports: (u16, u16)) -> u16 {
        let server_port = if up { ports.1 } else { ports.0 };
        let shared = self.paths.len() - 1;
        self.ports
            .iter()
            .find(|p| p.0 == server_port)
            .map_or(shared, |p| p.1 as usize) as u16
    }

    /// A packet arrives at link `i` at `at`.
    fn arrive(&mut self, i: usize, at: Instant, pkt: EmuPacket) {
        if self.outages.is_down(i as LinkId) {
            let lost = self.outages.catch_arriving(i as LinkId, pkt);
            return self.lost_to_outage(i, at, lost);
        }
        self.links[i].link.enqueue(at, pkt);
        self.drain_link(i);
    }

    /// Accounts for a packet link `i`'s outage lost (none: it keeps it).
    fn lost_to_outage(&mut self, i: usize, at: Instant, pkt: Option<EmuPacket>) {
        let Some(pkt) = pkt else { return };
        let len = pkt.data.len() as u32;
        self.left(pkt.up, len);
        self.send(Record::NetEvent {
            time_ns: at.as_nanos(),
            kind: EventKind::Outage,
            link: self.links[i].name,
            flow: pkt.flow(),
            bytes: len,
            live: false,
        });
    }

    /// Applies the scenario's timed change `k`, due at `t`. One that finds its link in the
    /// state it asks for (a live change came first) does nothing and is not recorded.
    fn apply_change(&mut self, k: usize, t: Instant) {
        let change = self.changes[k].change.clone();
        if self.moot(&change).is_none() {
            // Validated: the scenario names only what the model can change.
            self.apply(change, t, false)
                .expect("a change the model accepts");
        }
    }

    /// Why a link change is moot now (the link is in that state already).
    fn moot(&self, change: &NetChange) -> Option<String> {
        let (link, down) = match change {
            NetChange::Down { link, .. } => (*link, true),
            NetChange::Up { link } => (*link, false),
            _ => return None,
        };
        (self.outages.is_down(link) == down).then(|| {
            format!(
                "link \"{}\" is {} already",
                self.links[link as usize].name,
                if down { "down" } else { "up" }
            )
        })
    }

    /// Applies a change at `t` and records it (`live`: made through the control socket).
    fn apply(&mut self, change: NetChange, t: Instant, live: bool) -> Result<(), String> {
        if let NetChange::Set { link, change } = &change {
            let l = *link as usize;
            self.links[l].link.change(t, change)?;
            crate::control::merge(&mut self.params[l], change);
        }
        let (link, flow) = match &change {
            NetChange::Set { link, .. } | NetChange::Down { link, .. } | NetChange::Up { link } => {
                (Some(*link as usize), NO_FLOW)
            }
            NetChange::Path { flow, .. } => (None, *flow),
        };
        let name = link.map_or("", |l| self.links[l].name);
        self.send(Record::NetEvent {
            time_ns: t.as_nanos(),
            kind: change.kind(),
            link: name,
            flow,
            bytes: 0,
            live,
        });
        match change {
            NetChange::Set { link, .. } => self.drain_link(link as usize),
            NetChange::Down { link, keep } => self.outages.take_down(link, keep),
            NetChange::Up { link } => {
                let (leaving, arrived) = self.outages.bring_up(link);
                for pkt in leaving {
                    self.leave(link as usize, t, pkt);
                }
                for pkt in arrived {
                    self.arrive(link as usize, t, pkt);
                }
            }
            NetChange::Path { flow, down, up } => {
                // The shared path follows the flow whose path it was.
                let shared = self.paths.len() - 1;
                let moved: Vec<usize> = if self.paths[shared] == self.paths[flow as usize] {
                    vec![flow as usize, shared]
                } else {
                    vec![flow as usize]
                };
                for p in moved {
                    let path = &mut self.paths[p];
                    path.down = down.clone().unwrap_or(std::mem::take(&mut path.down));
                    path.up = up.clone().unwrap_or(std::mem::take(&mut path.up));
                }
            }
        }
        Ok(())
    }

    /// Answers the control socket's requests (none waiting: nothing to do). Called after
    /// everything due by `now` was handled, so a change applies at `now` in time order.
    fn serve_requests(&mut self, now: Instant) {
        while let Some(req) = self.control.next() {
            self.did_work = true;
            match req {
                DatapathRequest::Apply { change, reply } => {
                    let r = match self.moot(&change) {
                        Some(why) => Err(why),
                        None => self.apply(change, now, true).map(|()| now.as_nanos()),
                    };
                    let _ = reply.send(r);
                }
                DatapathRequest::State { reply } => {
                    let _ = reply.send(self.state(now));
                }
            }
        }
    }

    /// The links and flows now, for a state read.
    fn state(&mut self, now: Instant) -> DatapathState {
        let links = (0..self.links.len())
            .map(|i| {
                let sample = self.links[i].link.sample(now);
                let l = &self.links[i];
                let st = l.link.stats();
                LinkState {
                    name: l.name,
                    model: l.model,
                    up: !self.outages.is_down(i as LinkId),
                    rate_bps: None,
                    delay_s: None,
                    queue_limit_packets: None,
                    queue_limit_bytes: None,
                    loss: None,
                    bit_error_rate: None,
                    mean_snr_db: None,
                    packets_in: st.packets_in,
                    packets_out: st.packets_out,
                    bytes_out: st.bytes_out,
                    queue_packets: sample.queue_packets,
                    queue_bytes: sample.queue_bytes,
                    drops: LinkDrops {
                        queue: st.queue_drops,
                        loss: st.loss_drops,
                        outage: self.outages.drops(i as LinkId),
                        corrupted: st.packets_corrupted,
                        arq_gave_up: st.packets_given_up,
                    },
                    radio: sample.radio.map(|r| Radio {
                        snr_db: r.snr_db,
                        predicted_snr_db: r.predicted_snr_db,
                        modulation_bits: r.modulation_bits,
                        subband: r.subband,
                    }),
                }
                .params(&self.params[i])
            })
            .collect();
        DatapathState {
            time_s: now.as_nanos() as f64 * 1e-9,
            links,
            flows: self.traffic.clone(),
            wakeups: self.report.wakeups,
        }
    }

    /// Writes a packet to the client (downlink) or server (uplink) TUN device.
    fn deliver(&mut self, to_client: bool, due: Instant, pkt: EmuPacket) {
        let gap = due.as_nanos().saturating_sub(self.last_delivery_due) as f64;
        self.last_delivery_due = due.as_nanos();
        self.delivery_gap_ewma = if self.delivery_gap_ewma.is_finite() {
            0.95 * self.delivery_gap_ewma + 0.05 * gap
        } else {
            gap
        };
        self.left(!to_client, pkt.data.len() as u32);
        let fd = if to_client {
            self.client.as_raw_fd()
        } else {
            self.server.as_raw_fd()
        };
        // The delivery instant is taken before the write: the write itself runs the receiving
        // stack (softirq) in this thread and may take tens of microseconds.
        let actual = monotonic_ns();
        let rc = match &pkt.l2 {
            Some(header) => {
                let parts = [
                    libc::iovec {
                        iov_base: header.as_ptr() as *mut libc::c_void,
                        iov_len: header.len(),
                    },
                    libc::iovec {
                        iov_base: pkt.data.as_ptr() as *mut libc::c_void,
                        iov_len: pkt.data.len(),
                    },
                ];
                // SAFETY: a valid descriptor and two valid buffers.
                unsafe { libc::writev(fd, parts.as_ptr(), 2) }
            }
            // SAFETY: a valid descriptor and buffer.
            None => unsafe { libc::write(fd, pkt.data.as_ptr().cast(), pkt.data.len()) },
        };
        if rc < 0 {
            self.report.write_errors += 1;
            return;
        }
        let late = actual.saturating_sub(self.origin + due.as_nanos());
        self.late_hist[((late / 1000) as usize).min(LATE_BUCKETS - 1)] += 1;
        self.late_sum_ns += late as u128;
        self.late_max_ns = self.late_max_ns.max(late);
        let rel = actual - self.origin;
        let len = pkt.data.len() as u32;
        if let Some(t) = self.traffic.get_mut(pkt.flow as usize) {
            if to_client {
                t.down_packets += 1;
                t.down_bytes += len as u64;
            } else {
                t.up_packets += 1;
                t.up_bytes += len as u64;
            }
        }
        if to_client {
            self.report.downlink.record(due.as_nanos(), rel, len);
        } else {
            self.report.uplink.record(due.as_nanos(), rel, len);
        }
        let side = if to_client {
            Side::Client
        } else {
            Side::Server
        };
        self.capture(side, false, actual, &pkt.data);
    }

    /// Reads up to a batch from one TUN device into the first link of its direction's path.
    fn read_side(&mut self, from_client: bool) -> usize {
        let fd: RawFd = if from_client {
            self.client.as_raw_fd()
        } else {
            self.server.as_raw_fd()
        };
        let mut n = 0;
        while n < READ_BATCH {
            // SAFETY: a valid descriptor and buffer.
            let rc = unsafe { libc::read(fd, self.buf.as_mut_ptr().cast(), self.buf.len()) };
            if rc <= 0 {
                break;
            }
            n += 1;
            let mono = monotonic_ns();
            let mut frame = &self.buf[..rc as usize];
            let mut l2 = None;
            if self.framing == Framing::Ethernet {
                let ip = frame.len() > ETHERNET_HEADER
                    && matches!([frame[12], frame[13]], [0x08, 0x00] | [0x86, 0xdd]);
                if !ip {
                    // ARP and the like: the two hosts must find each other, outside the model.
                    let to = if from_client {
                        self.server.as_raw_fd()
                    } else {
                        self.client.as_raw_fd()
                    };
                    // SAFETY: a valid descriptor and buffer.
                    if unsafe { libc::write(to, frame.as_ptr().cast(), frame.len()) } < 0 {
                        self.report.write_errors += 1;
                    }
                    self.report.passed_through += 1;
                    continue;
                }
                l2 = Some(frame[..ETHERNET_HEADER].try_into().expect("checked length"));
                frame = &frame[ETHERNET_HEADER..];
            }
            let rc = frame.len() as isize;
            // Exactly its length: what `held_bytes` counts.
            let data = frame.to_vec();
            let side = if from_client {
                Side::Client
            } else {
                Side::Server
            };
            self.capture(side, true, mono, &data);
            let now = Instant::from_nanos(mono.saturating_sub(self.origin));
            // Earlier work may be due before this arrival: keep the links' time monotone.
            self.process_due(now);
            match EmuPacket::parse(data) {
                Ok(pkt) => {
                    if from_client {
                        self.report.packets_read_client += 1;
                    } else {
                        self.report.packets_read_server += 1;
                    }
                    let dir = from_client as usize;
                    let len = held_bytes(rc as u32);
                    if self.in_flight[dir] + len > self.cfg.max_in_flight_bytes {
                        self.report.in_flight_drops[dir] += 1;
                        self.send(Record::LimitDrop {
                            side,
                            mono_ns: mono,
                            len: rc as u32,
                        });
                        continue;
                    }
                    self.in_flight[dir] += len;
                    let held = &mut self.report.in_flight_max_bytes[dir];
                    *held = (*held).max(self.in_flight[dir]);
                    let mut pkt = pkt;
                    pkt.l2 = l2;
                    pkt.up = from_client;
                    pkt.route = self.path_of(from_client, pkt.ports);
                    // Traffic of no scenario flow takes the shared path: the first flow's.
                    pkt.flow = if pkt.route as usize == self.paths.len() - 1 {
                        0
                    } else {
                        pkt.route as u32
                    };
                    self.forward(now, pkt);
                }
                Err(Malformed::NotIp) | Err(Malformed::BadHeader) => {
                    if from_client {
                        self.report.malformed_client += 1;
                    } else {
                        self.report.malformed_server += 1;
                    }
                    self.send(Record::Malformed {
                        side,
                        mono_ns: mono,
                        len: rc as u32,
                    });
                }
            }
        }
        if n > 0 {
            self.did_work = true;
        }
        n
    }

    fn finish(mut self, started: u64, cpu0: u64) -> (Vec<BuiltLink<EmuPacket>>, DatapathReport) {
        let r = &mut self.report;
        r.duration_s = (monotonic_ns() - started) as f64 * 1e-9;
        r.cpu_s = (thread_cpu_ns() - cpu0) as f64 * 1e-9;
        r.downlink.finish();
        r.uplink.finish();
        r.outage_drops = (0..self.links.len())
            .map(|l| self.outages.drops(l as LinkId))
            .collect();
        let total: u64 = self.late_hist.iter().sum();
        if total > 0 {
            let q = |p: f64| crate::timing::histogram_quantile(&self.late_hist, p) as f64; // 1 µs buckets
            r.lateness = Lateness {
                packets: total,
                mean_us: self.late_sum_ns as f64 / total as f64 / 1000.0,
                p50_us: q(0.5),
                p99_us: q(0.99),
                p999_us: q(0.999),
                max_us: self.late_max_ns as f64 / 1000.0,
            };
        }
        (self.links, self.report)
    }
}

/// A handle to stop a real-time thread (the datapath's, the stack's) from another thread:
/// a flag, and an `eventfd` in the thread's `epoll` set that wakes it.
#[derive(Clone)]
pub struct StopHandle {
    flag: Arc<AtomicBool>,
    eventfd: Arc<OwnedFd>,
}

impl StopHandle {
    pub(crate) fn new() -> std::io::Result<StopHandle> {
        // SAFETY: a plain syscall creating a new descriptor.
        let eventfd = Arc::new(new_fd(
            unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) },
            "eventfd",
        )?);
        Ok(StopHandle {
            flag: Arc::new(AtomicBool::new(false)),
            eventfd,
        })
    }

    pub(crate) fn stopped(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// The descriptor to add to the thread's `epoll` set.
    pub(crate) fn fd(&self) -> RawFd {
        self.eventfd.as_raw_fd()
    }

    pub fn stop(&self) {
        self.flag.store(true, Ordering::SeqCst);
        let one: u64 = 1;
        // SAFETY: writing 8 bytes to an eventfd.
        unsafe { libc::write(self.eventfd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }
}

/// Everything the datapath thread needs.
pub struct DatapathParts {
    pub links: Vec<BuiltLink<EmuPacket>>,
    /// Each scenario flow's path through `links`, and the shared path.
    pub paths: Vec<FlowPath>,
    pub shared: FlowPath,
    /// Server ports whose packets take a scenario flow's path: (port, flow).
    pub ports: Vec<(u16, u16)>,
    /// The scenario's timed changes, in time order.
    pub changes: Vec<TimedChange>,
    pub client: OwnedFd,
    pub server: OwnedFd,
    pub origin_mono_ns: u64,
    pub records: SyncSender<Record>,
    /// Shared with the writer: bytes of packet records in the channel.
    pub record_bytes: Arc<AtomicU64>,
    pub cfg: DatapathConfig,
    pub mtu: u32,
    pub framing: Framing,
    /// Live control's requests, and each link's parameters as configured.
    pub control: Inbox<DatapathRequest>,
    pub params: Vec<LinkChange>,
}

pub(crate) fn new_fd(fd: libc::c_int, call: &str) -> std::io::Result<OwnedFd> {
    if fd < 0 {
        return Err(std::io::Error::other(format!(
            "{call}: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: a fresh descriptor owned from here on.
    Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// What the datapath thread returns: the links (for their counters), its report, the RT settings.
pub type Finished = (
    Vec<BuiltLink<EmuPacket>>,
    DatapathReport,
    crate::rt::RtReport,
);

/// Prepares the stop handle and the runner; the runner is called on the datapath thread.
pub fn prepare(
    parts: DatapathParts,
) -> std::io::Result<(StopHandle, impl FnOnce(&LiveCounters) -> Finished)> {
    // SAFETY: plain syscalls creating new descriptors.
    let stop = StopHandle::new()?;
    let timerfd = new_fd(
        unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        },
        "timerfd_create",
    )?;
    let epfd = new_fd(
        unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) },
        "epoll_create1",
    )?;
    for (fd, tag) in [
        (parts.client.as_raw_fd(), 0u64),
        (parts.server.as_raw_fd(), 1),
        (timerfd.as_raw_fd(), 2),
        (stop.fd(), 3),
        (parts.control.fd(), 4),
    ] {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: tag,
        };
        // SAFETY: valid descriptors and event.
        if unsafe { libc::epoll_ctl(epfd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } != 0 {
            return Err(std::io::Error::other(format!(
                "epoll_ctl: {}",
                std::io::Error::last_os_error()
            )));
        }
    }
    let flag = stop.clone();
    let run = move |live: &LiveCounters| {
        let rt = crate::rt::apply(parts.cfg.rt_fifo, parts.cfg.mlock);
        let cpu0 = thread_cpu_ns();
        let started = monotonic_ns();
        // The guard adapts to the wake-up latency of this machine's timers (epoll + timerfd
        // wakes 50-100 us late on a KVM guest): 1.5 x its moving average + 10 us, never below
        // the configured guard nor above MAX_GUARD_NS.
        let mut guard = parts.cfg.guard_ns;
        let mut wake_late_ewma = parts.cfg.guard_ns as f64;
        let n = parts.links.len();
        let flows = parts.paths.len();
        let mut carries_up = vec![false; n];
        for path in parts.paths.iter().chain([&parts.shared]) {
            for &l in &path.up {
                carries_up[l as usize] = true;
            }
        }
        let mut dp = Datapath {
            pending: (0..n).map(|_| VecDeque::new()).collect(),
            links: parts.links,
            paths: parts.paths.into_iter().chain([parts.shared]).collect(),
            ports: parts.ports,
            carries_up,
            changes: parts.changes,
            next_change: 0,
            outages: Outages::new(n),
            control: parts.control,
            params: parts.params,
            traffic: vec![FlowTraffic::default(); flows],
            client: parts.client,
            server: parts.server,
            framing: parts.framing,
            origin: parts.origin_mono_ns,
            records: parts.records,
            record_bytes: parts.record_bytes,
            in_flight: [0, 0],
            next_sample: Instant::ZERO,
            cfg: parts.cfg,
            report: DatapathReport::default(),
            late_hist: vec![0; LATE_BUCKETS],
            late_sum_ns: 0,
            late_max_ns: 0,
            buf: vec![0; (parts.mtu as usize).max(65_536)],
            did_work: false,
            delivery_gap_ewma: f64::INFINITY,
            last_delivery_due: 0,
        };
        dp.report.guard_us = guard as f64 / 1000.0;
        dp.report.max_in_flight_bytes = dp.cfg.max_in_flight_bytes;
        let mut armed: Option<u64> = None;
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 8];
        let mut after_wakeup = false;
        let mut spin_tokens = SPIN_BUCKET_NS;
        let mut last_refill = monotonic_ns();
        let mut spin_at = false;
        let mut spin_ns = 0u64;
        while !flag.stopped() {
            dp.did_work = false;
            let now = dp.now();
            dp.process_due(now);
            while dp.read_side(true) + dp.read_side(false) > 0 {
                if flag.stopped() {
                    break;
                }
                let now = dp.now();
                dp.process_due(now);
            }
            let now = dp.now();
            dp.process_due(now);
            dp.serve_requests(now);
            if after_wakeup && !dp.did_work {
                dp.report.idle_wakeups += 1;
            }
            after_wakeup = false;
            let sampling = !dp.cfg.sample_interval.is_zero();
            let next = dp
                .next_event(sampling && dp.busy())
                .map(|(t, _)| dp.origin + t.as_nanos());
            // When deliveries come closer together than the guard, spinning would mean spinning
            // through every gap: then the thread sleeps to each deadline and sends what is due
            // in one go (late by the wake-up latency, the rate stays exact). Every kind of
            // deadline spins otherwise: a late sample or stage transfer changes no model (they
            // get due instants), but a delivery due just after it would be late too.
            let spin_worthy = dp.delivery_gap_ewma > SPIN_MIN_GAP_GUARDS * guard as f64;
            let mono_now = monotonic_ns();
            // Spin budget: spinning may use at most SPIN_SHARE of a core on average. When it is
            // spent (high packet rates), the thread sleeps to the deadline itself and sends
            // everything due in one batch on waking: the rate stays exact, bursts are short.
            spin_tokens =
                (spin_tokens + (mono_now - last_refill) as f64 * SPIN_SHARE).min(SPIN_BUCKET_NS);
            last_refill = mono_now;
            let may_spin = spin_worthy && spin_tokens >= guard as f64;
            match next {
                Some(d) if d <= mono_now + guard && (may_spin || d <= mono_now) => {
                    // Close: spin (bounded) instead of sleeping.
                    let end = spin_until(d, 2 * guard + 20_000);
                    spin_tokens -= end.saturating_sub(mono_now) as f64;
                    spin_ns += end.saturating_sub(mono_now);
                    continue;
                }
                Some(d) => {
                    // With deliveries closer than MIN_SLEEP_NS apart and no spin, ask for no
                    // wake-up sooner than that: on a KVM guest arming a timer costs several
                    // microseconds (a VM exit; a third of the datapath's time at 125 k
                    // deliveries/s) and it fires 50-100 us late anyway, so such deliveries are
                    // better taken in one batch per wake-up than with a timer each.
                    let coalesce = !may_spin && dp.delivery_gap_ewma < MIN_SLEEP_NS as f64;
                    let at = if may_spin {
                        d - guard
                    } else if coalesce {
                        d.max(mono_now + MIN_SLEEP_NS)
                    } else {
                        d
                    };
                    spin_at = may_spin;
                    if armed != Some(at) {
                        arm(&timerfd, Some(at));
                        armed = Some(at);
                    }
                }
                None => {
                    if armed.is_some() {
                        arm(&timerfd, None);
                        armed = None;
                    }
                }
            }
            // SAFETY: valid epoll descriptor and buffer.
            let n = unsafe {
                libc::epoll_wait(
                    epfd.as_raw_fd(),
                    events.as_mut_ptr(),
                    events.len() as i32,
                    -1,
                )
            };
            dp.report.wakeups += 1;
            after_wakeup = true;
            live.wakeups.fetch_add(1, Ordering::Relaxed);
            let mut timer_fired = false;
            let fired_at = armed;
            for ev in events.iter().take(n.max(0) as usize) {
                if ev.u64 == 2 {
                    let mut b = [0u8; 8];
                    // SAFETY: reading the 8-byte expiry count clears the timer.
                    unsafe { libc::read(timerfd.as_raw_fd(), b.as_mut_ptr().cast(), 8) };
                    armed = None;
                    timer_fired = true;
                } else if ev.u64 == 4 {
                    dp.control.clear();
                }
            }
            if timer_fired {
                if let (Some(at), true) = (fired_at, spin_at) {
                    let late = monotonic_ns().saturating_sub(at) as f64;
                    wake_late_ewma = 0.9 * wake_late_ewma + 0.1 * late;
                    guard = ((1.5 * wake_late_ewma) as u64 + 10_000)
                        .clamp(dp.cfg.guard_ns, MAX_GUARD_NS.max(dp.cfg.guard_ns));
                    dp.report.guard_us = guard as f64 / 1000.0;
                }
                if let (Some(d), true) = (next, spin_at) {
                    let t0 = monotonic_ns();
                    let end = spin_until(d, 2 * guard + 20_000);
                    spin_tokens -= end.saturating_sub(t0) as f64;
                    spin_ns += end.saturating_sub(t0);
                }
            }
            live.packets_forwarded.store(
                dp.report.downlink.packets + dp.report.uplink.packets,
                Ordering::Relaxed,
            );
        }
        dp.report.spin_s = spin_ns as f64 * 1e-9;
        let (links, report) = dp.finish(started, cpu0);
        (links, report, rt)
    };
    Ok((stop, run))
}

/// Arms the timer at an absolute monotonic instant, or disarms it.
pub(crate) fn arm(timerfd: &OwnedFd, at_ns: Option<u64>) {
    let ts = |ns: u64| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    let spec = libc::itimerspec {
        it_interval: ts(0),
        it_value: at_ns.map_or(ts(0), |ns| ts(ns.max(1))),
    };
    // SAFETY: valid descriptor and itimerspec.
    unsafe {
        libc::timerfd_settime(
            timerfd.as_raw_fd(),
            libc::TFD_TIMER_ABSTIME,
            &spec,
            std::ptr::null_mut(),
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_counts_at_what_it_holds_in_memory() {
        // Its allocation (malloc's header, rounded to 16 bytes) and its queue slots.
        assert_eq!(held_bytes(100), 112 + PACKET_OVERHEAD);
        assert_eq!(held_bytes(1500), 1520 + PACKET_OVERHEAD);
        assert_eq!(held_bytes(1), 32 + PACKET_OVERHEAD);
        assert!(PACKET_OVERHEAD >= 2 * std::mem::size_of::<EmuPacket>() as u64);
        // Small packets cost several times their length.
        assert!(held_bytes(100) > 2 * 100);
    }
}
