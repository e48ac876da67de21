//! The real-time datapath: one thread moves packets between its two ports (TUN devices, or
//! packet sockets in gateway mode; see [`crate::port`]) through the scenario's link models,
//! on absolute deadlines.
//!
//! - Virtual time ([`Instant`]) maps to `CLOCK_MONOTONIC` with one fixed origin taken at
//!   start: `mono = origin + instant`. Links are called with the instant an event is *due*,
//!   never the (possibly late) wake-up time, so a late wake-up never shifts the model.
//! - Each wake-up handles everything already due, in time order (link timers, packets due at
//!   the next stage, samples), so the rate stays exact after a stall; then it reads what the
//!   applications sent (non-blocking, in batches) and stamps it with the current time.
//! - Waiting: `epoll` on both ports, a stop `eventfd` and a `timerfd` armed with an
//!   *absolute* deadline at `next deadline - guard`; the last `guard` is a bounded spin.
//!   With no deadline the timer is disarmed: no wake-ups while idle. The spin is spent only
//!   while deliveries are sparser than the guard; dense deliveries are taken in batches of at
//!   least `MIN_SLEEP_NS` per wake-up (the rate stays exact).
//! - Logging and pcap writing (the ports' [`crate::port::Captured`]) go through a channel to the writer thread bounded in records
//!   and in bytes; when it is full the record is counted as lost (the summary and the run's
//!   warnings say so), the timed path never blocks.
//! - Memory is bounded: what the packets inside the emulated links of each direction (queues,
//!   delay lines, stage queues) take in memory never exceeds `max_in_flight_bytes`; a packet
//!   that would exceed it is dropped on arrival and counted (`in_flight_drops`), as a router
//!   out of buffer would. A packet is counted at its memory cost ([`held_bytes`]: its
//!   allocation and its queue slots), not its length: small packets cost several times their
//!   bytes.
//!
//! Paths: each packet read from a port is given a path (server's port → links → client's port,
//! or back): that of the scenario flow whose server port it carries (airlink's own flows, and
//! flows given an emulation `port` for the kernel's applications), else the shared one, and
//! it crosses the path's links hop by hop, as in simulation. Things due at the same instant follow the network's event order
//! ([`airlink_net::order`]): arrivals at a link before link timers, then samples; ties by link.

use crate::control::{
    DatapathRequest, DatapathState, FlowTraffic, Inbox, LinkDrops, LinkState, Radio,
};
use crate::packet::{EmuPacket, Malformed};
use crate::port::{Facing, Port, Received};
use crate::timing::{monotonic_ns, spin_until, thread_cpu_ns};
use crate::writer::Record;
use airlink_engine::{Duration, Instant};
use airlink_link::{LinkChange, LinkEvent, LinkSample, Packet};
use airlink_net::build::BuiltLink;
use airlink_net::{
    order, Direction, EventKind, FlowPath, LinkId, NetChange, Network, Sink, Stepper, TimedChange,
};
use airlink_transport::Role;
use serde::Serialize;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;
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

/// Datapath settings.
#[derive(Clone, Debug)]
pub struct DatapathConfig {
    pub guard_ns: u64,
    pub sample_interval: Duration,
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
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
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
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct Lateness {
    pub packets: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

/// What the datapath saw, returned when it stops.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
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

/// The datapath: the network in motion, and what it talks to.
struct Datapath<P> {
    net: Stepper<EmuPacket>,
    /// Live control: requests waiting.
    control: Inbox<DatapathRequest>,
    io: Io<P>,
}

/// Everything of the datapath but the network: the two ports, the records, the bound on
/// what the links hold, the delivery statistics. It is the network's [`Sink`].
struct Io<P> {
    /// Number of scenario flows (the shared path comes after theirs).
    flows: usize,
    /// Server ports and the path their packets take.
    ports: Vec<(u16, u16)>,
    /// Per link: whether it carries packets upward (for the in-flight bound).
    carries_up: Vec<bool>,
    /// Each link's parameters now, each flow's traffic (for live state reads).
    params: Vec<LinkChange>,
    traffic: Vec<FlowTraffic>,
    client: P,
    server: P,
    origin: u64,
    records: SyncSender<Record>,
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

impl<P: Port> Io<P> {
    /// Hands a record (other than a packet's: the ports capture those) to the writer.
    fn send(&mut self, r: Record) {
        if self.records.try_send(r).is_err() {
            self.report.records_lost += 1;
        }
    }

    fn port(&mut self, facing: Facing) -> &mut P {
        match facing {
            Facing::Client => &mut self.client,
            Facing::Server => &mut self.server,
        }
    }

    /// Reads the next packet waiting at a port into the read buffer.
    fn recv(&mut self, facing: Facing) -> Option<Received> {
        let port = match facing {
            Facing::Client => &mut self.client,
            Facing::Server => &mut self.server,
        };
        port.recv(&mut self.buf)
    }

    /// A packet of `bytes` left the links of a direction (delivered or dropped).
    fn left(&mut self, dir: Direction, bytes: u32) {
        let d = &mut self.in_flight[(dir == Direction::Up) as usize];
        *d = d.saturating_sub(held_bytes(bytes));
    }

    /// The path of a packet read from the client (upward) or the server: by its server port.
    fn path_of(&self, dir: Direction, ports: (u16, u16)) -> u16 {
        let server_port = match dir {
            Direction::Up => ports.1,
            Direction::Down => ports.0,
        };
        self.ports
            .iter()
            .find(|p| p.0 == server_port)
            .map_or(self.flows, |p| p.1 as usize) as u16
    }
}

impl<P: Port> Sink<EmuPacket> for Io<P> {
    /// Writes a packet to the client's (downward) or the server's (upward) port.
    fn deliver(&mut self, due: Instant, pkt: EmuPacket) {
        let gap = due.as_nanos().saturating_sub(self.last_delivery_due) as f64;
        self.last_delivery_due = due.as_nanos();
        self.delivery_gap_ewma = if self.delivery_gap_ewma.is_finite() {
            0.95 * self.delivery_gap_ewma + 0.05 * gap
        } else {
            gap
        };
        self.left(pkt.dir, pkt.data.len() as u32);
        let to = match pkt.dir {
            Direction::Down => Facing::Client,
            Direction::Up => Facing::Server,
        };
        // The delivery instant is taken before the write: the write itself runs the receiving
        // stack (softirq) in this thread and may take tens of microseconds.
        let actual = monotonic_ns();
        if self.port(to).send(&pkt.data, &pkt.link, actual).is_err() {
            self.report.write_errors += 1;
            return;
        }
        let late = actual.saturating_sub(self.origin + due.as_nanos());
        self.late_hist[((late / 1000) as usize).min(LATE_BUCKETS - 1)] += 1;
        self.late_sum_ns += late as u128;
        self.late_max_ns = self.late_max_ns.max(late);
        let rel = actual.saturating_sub(self.origin);
        let len = pkt.data.len() as u32;
        if let Some(t) = self.traffic.get_mut(pkt.flow as usize) {
            match to {
                Facing::Client => {
                    t.down_packets += 1;
                    t.down_bytes += len as u64;
                }
                Facing::Server => {
                    t.up_packets += 1;
                    t.up_bytes += len as u64;
                }
            }
        }
        match to {
            Facing::Client => self.report.downlink.record(due.as_nanos(), rel, len),
            Facing::Server => self.report.uplink.record(due.as_nanos(), rel, len),
        }
    }

    fn link_event(&mut self, link: LinkId, name: &'static str, event: LinkEvent) {
        if let LinkEvent::Drop { bytes, .. } = event {
            let dir = if self.carries_up[link as usize] {
                Direction::Up
            } else {
                Direction::Down
            };
            self.left(dir, bytes);
        }
        self.send(Record::Event { event, link: name });
    }

    fn outage_loss(&mut self, at: Instant, _link: LinkId, name: &'static str, pkt: &EmuPacket) {
        let len = pkt.data.len() as u32;
        self.left(pkt.dir, len);
        self.send(Record::NetEvent {
            time_ns: at.as_nanos(),
            kind: EventKind::Outage,
            link: name,
            flow: pkt.flow(),
            bytes: len,
            live: false,
        });
    }

    fn changed(&mut self, at: Instant, change: &NetChange, link_name: &'static str, live: bool) {
        if let NetChange::Set { link, change } = change {
            crate::control::merge(&mut self.params[*link as usize], change);
        }
        self.send(Record::NetEvent {
            time_ns: at.as_nanos(),
            kind: change.kind(),
            link: link_name,
            flow: change.flow(),
            bytes: 0,
            live,
        });
    }

    fn link_sample(&mut self, at: Instant, _link: LinkId, name: &'static str, sample: LinkSample) {
        self.send(Record::Sample {
            time_ns: at.as_nanos(),
            link: name,
            sample,
        });
    }
}

impl<P: Port> Datapath<P> {
    fn new(parts: DatapathParts<P>) -> Datapath<P> {
        let DatapathParts {
            links,
            paths,
            shared,
            ports,
            changes,
            client,
            server,
            origin_mono_ns,
            records,
            cfg,
            mtu,
            control,
            params,
        } = parts;
        let flows = paths.len();
        let net = Stepper::new(Network {
            links,
            paths,
            shared,
            changes,
        });
        let mut carries_up = vec![false; net.links().len()];
        for path in net.paths() {
            for &l in &path.up {
                carries_up[l as usize] = true;
            }
        }
        let report = DatapathReport {
            guard_us: cfg.guard_ns as f64 / 1000.0,
            max_in_flight_bytes: cfg.max_in_flight_bytes,
            ..Default::default()
        };
        Datapath {
            net,
            control,
            io: Io {
                flows,
                ports,
                carries_up,
                params,
                traffic: vec![FlowTraffic::default(); flows],
                client,
                server,
                origin: origin_mono_ns,
                records,
                in_flight: [0, 0],
                cfg,
                report,
                late_hist: vec![0; LATE_BUCKETS],
                late_sum_ns: 0,
                late_max_ns: 0,
                next_sample: Instant::ZERO,
                buf: vec![0; (mtu as usize).max(65_536)],
                did_work: false,
                delivery_gap_ewma: f64::INFINITY,
                last_delivery_due: 0,
            },
        }
    }

    fn now(&self) -> Instant {
        Instant::from_nanos(monotonic_ns().saturating_sub(self.io.origin))
    }

    /// The earliest thing to do, the network's or a sample, in the network's event order:
    /// its instant, and whether it is a sample.
    fn next_event(&self, sampling: bool) -> Option<(Instant, bool)> {
        let sample = sampling.then_some((self.io.next_sample, order::SAMPLE, 0));
        match (self.net.next_deadline(), sample) {
            (Some(n), Some(s)) if s < n => Some((s.0, true)),
            (Some(n), _) => Some((n.0, false)),
            (None, Some(s)) => Some((s.0, true)),
            (None, None) => None,
        }
    }

    /// Handles everything due at or before `now`, in time order.
    fn process_due(&mut self, now: Instant) {
        let sampling = !self.io.cfg.sample_interval.is_zero();
        loop {
            let busy = self.net.busy();
            let Some((t, sample)) = self.next_event(sampling && busy) else {
                break;
            };
            if t > now {
                break;
            }
            self.io.did_work = true;
            if sample {
                self.net.sample(t, &mut self.io);
                self.io.next_sample = t + self.io.cfg.sample_interval;
            } else {
                self.net.step(&mut self.io);
            }
        }
        let busy = self.net.busy();
        if !busy && !self.net.outages().any() {
            // Nothing inside the links (nor kept by an outage): resynchronise (a drop the links
            // did not report as an event cannot hold the bound shut for ever).
            self.io.in_flight = [0, 0];
        }
        if sampling && !busy && self.io.next_sample <= now {
            // Idle: skip the sample instants that passed (no wake-ups while idle).
            let interval = self.io.cfg.sample_interval;
            let k = (now.as_nanos() - self.io.next_sample.as_nanos()) / interval.as_nanos() + 1;
            self.io.next_sample += interval.saturating_mul(k);
        }
    }

    /// Answers the control socket's requests (none waiting: nothing to do). Called after
    /// everything due by `now` was handled, so a change applies at `now` in time order.
    fn serve_requests(&mut self, now: Instant) {
        while let Some(req) = self.control.next() {
            self.io.did_work = true;
            match req {
                DatapathRequest::Apply { change, reply } => {
                    let _ = reply.send(self.apply_live(now, change));
                }
                DatapathRequest::State { reply } => {
                    let _ = reply.send(self.state(now));
                }
            }
        }
    }

    /// Applies a live change at `now` and handles what it released.
    fn apply_live(&mut self, now: Instant, change: NetChange) -> Result<u64, String> {
        self.net
            .apply(now, change, true, &mut self.io)
            .map_err(|e| e.to_string())?;
        self.process_due(now);
        Ok(now.as_nanos())
    }

    /// The links and flows now, for a state read.
    fn state(&mut self, now: Instant) -> DatapathState {
        let samples: Vec<LinkSample> = (0..self.net.links().len())
            .map(|i| self.net.sample_link(i as LinkId, now))
            .collect();
        let outages = self.net.outages();
        let links = self
            .net
            .links()
            .iter()
            .enumerate()
            .zip(samples)
            .map(|((i, l), sample)| {
                let st = l.link.stats();
                LinkState {
                    name: l.name,
                    model: l.model,
                    up: !outages.is_down(i as LinkId),
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
                        outage: outages.drops(i as LinkId),
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
                .params(&self.io.params[i])
            })
            .collect();
        DatapathState {
            time_s: now.as_nanos() as f64 * 1e-9,
            links,
            flows: self.io.traffic.clone(),
            wakeups: self.io.report.wakeups,
        }
    }

    /// Reads up to a batch from one port into the first link of its direction's path.
    fn read_side(&mut self, facing: Facing) -> usize {
        let mut n = 0;
        while n < READ_BATCH {
            let Some(got) = self.io.recv(facing) else {
                break;
            };
            n += 1;
            let now = Instant::from_nanos(got.mono_ns.saturating_sub(self.io.origin));
            self.take_in(now, facing, got);
        }
        if n > 0 {
            self.io.did_work = true;
        }
        n
    }

    /// Takes a packet a port read at `now` in at its path's ingress.
    fn take_in(&mut self, now: Instant, facing: Facing, got: Received) {
        let io = &mut self.io;
        let mono = got.mono_ns;
        let rc = got.ip.len();
        // Exactly its length: what `held_bytes` counts.
        let data = io.buf[got.ip].to_vec();
        // Earlier work may be due before this arrival: keep the links' time monotone.
        self.process_due(now);
        let io = &mut self.io;
        let (side, dir) = match facing {
            Facing::Client => (Role::Client, Direction::Up),
            Facing::Server => (Role::Server, Direction::Down),
        };
        match EmuPacket::parse(data) {
            Ok(mut pkt) => {
                match facing {
                    Facing::Client => io.report.packets_read_client += 1,
                    Facing::Server => io.report.packets_read_server += 1,
                }
                let d = (dir == Direction::Up) as usize;
                let len = held_bytes(rc as u32);
                if io.in_flight[d] + len > io.cfg.max_in_flight_bytes {
                    io.report.in_flight_drops[d] += 1;
                    io.send(Record::LimitDrop {
                        port: facing,
                        mono_ns: mono,
                        len: rc as u32,
                    });
                    return;
                }
                io.in_flight[d] += len;
                let held = &mut io.report.in_flight_max_bytes[d];
                *held = (*held).max(io.in_flight[d]);
                pkt.link = got.link;
                pkt.dir = dir;
                pkt.route = io.path_of(dir, pkt.ports);
                // Traffic of no scenario flow takes the shared path: the first flow's.
                pkt.flow = if pkt.route as usize == io.flows {
                    0
                } else {
                    pkt.route as u32
                };
                let source = order::endpoint_source(pkt.route as u32, side);
                self.net.take_in(now, source, pkt);
            }
            Err(Malformed::NotIp) | Err(Malformed::BadHeader) => {
                match facing {
                    Facing::Client => io.report.malformed_client += 1,
                    Facing::Server => io.report.malformed_server += 1,
                }
                io.send(Record::Malformed {
                    port: facing,
                    mono_ns: mono,
                    len: rc as u32,
                });
            }
        }
    }

    fn finish(self, started: u64, cpu0: u64) -> (Vec<BuiltLink<EmuPacket>>, DatapathReport) {
        let Datapath { net, io, .. } = self;
        let mut r = io.report;
        for port in [&io.client, &io.server] {
            let c = port.counters();
            r.passed_through += c.passed_through;
            r.write_errors += c.write_errors;
            r.records_lost += c.records_lost;
        }
        r.duration_s = (monotonic_ns() - started) as f64 * 1e-9;
        r.cpu_s = (thread_cpu_ns() - cpu0) as f64 * 1e-9;
        r.downlink.finish();
        r.uplink.finish();
        r.outage_drops = (0..net.links().len())
            .map(|l| net.outages().drops(l as LinkId))
            .collect();
        let total: u64 = io.late_hist.iter().sum();
        if total > 0 {
            let q = |p: f64| crate::timing::histogram_quantile(&io.late_hist, p) as f64; // 1 µs buckets
            r.lateness = Lateness {
                packets: total,
                mean_us: io.late_sum_ns as f64 / total as f64 / 1000.0,
                p50_us: q(0.5),
                p99_us: q(0.99),
                p999_us: q(0.999),
                max_us: io.late_max_ns as f64 / 1000.0,
            };
        }
        (net.into_links(), r)
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
pub struct DatapathParts<P> {
    pub links: Vec<BuiltLink<EmuPacket>>,
    /// Each scenario flow's path through `links`, and the shared path.
    pub paths: Vec<FlowPath>,
    pub shared: FlowPath,
    /// Server ports whose packets take a scenario flow's path: (port, flow).
    pub ports: Vec<(u16, u16)>,
    /// The scenario's timed changes, in time order.
    pub changes: Vec<TimedChange>,
    /// The ports facing the client and the server.
    pub client: P,
    pub server: P,
    pub origin_mono_ns: u64,
    pub records: SyncSender<Record>,
    pub cfg: DatapathConfig,
    pub mtu: u32,
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
pub fn prepare<P: Port>(
    parts: DatapathParts<P>,
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
        (parts.client.fd(), 0u64),
        (parts.server.fd(), 1),
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
        let mut dp = Datapath::new(parts);
        let mut armed: Option<u64> = None;
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 8];
        let mut after_wakeup = false;
        let mut spin_tokens = SPIN_BUCKET_NS;
        let mut last_refill = monotonic_ns();
        let mut spin_at = false;
        let mut spin_ns = 0u64;
        while !flag.stopped() {
            dp.io.did_work = false;
            let now = dp.now();
            dp.process_due(now);
            while dp.read_side(Facing::Client) + dp.read_side(Facing::Server) > 0 {
                if flag.stopped() {
                    break;
                }
                let now = dp.now();
                dp.process_due(now);
            }
            let now = dp.now();
            dp.process_due(now);
            dp.serve_requests(now);
            if after_wakeup && !dp.io.did_work {
                dp.io.report.idle_wakeups += 1;
            }
            after_wakeup = false;
            let sampling = !dp.io.cfg.sample_interval.is_zero();
            let next = dp
                .next_event(sampling && dp.net.busy())
                .map(|(t, _)| dp.io.origin + t.as_nanos());
            // When deliveries come closer together than the guard, spinning would mean spinning
            // through every gap: then the thread sleeps to each deadline and sends what is due
            // in one go (late by the wake-up latency, the rate stays exact). Every kind of
            // deadline spins otherwise: a late sample or stage transfer changes no model (they
            // get due instants), but a delivery due just after it would be late too.
            let spin_worthy = dp.io.delivery_gap_ewma > SPIN_MIN_GAP_GUARDS * guard as f64;
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
                    let coalesce = !may_spin && dp.io.delivery_gap_ewma < MIN_SLEEP_NS as f64;
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
            dp.io.report.wakeups += 1;
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
                        .clamp(dp.io.cfg.guard_ns, MAX_GUARD_NS.max(dp.io.cfg.guard_ns));
                    dp.io.report.guard_us = guard as f64 / 1000.0;
                }
                if let (Some(d), true) = (next, spin_at) {
                    let t0 = monotonic_ns();
                    let end = spin_until(d, 2 * guard + 20_000);
                    spin_tokens -= end.saturating_sub(t0) as f64;
                    spin_ns += end.saturating_sub(t0);
                }
            }
            live.packets_forwarded.store(
                dp.io.report.downlink.packets + dp.io.report.uplink.packets,
                Ordering::Relaxed,
            );
        }
        dp.io.report.spin_s = spin_ns as f64 * 1e-9;
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
    use crate::port::fake::FakePort;
    use airlink_engine::RngStream;
    use airlink_link::{Pipe, PipeParams};
    use std::sync::mpsc::{sync_channel, Receiver};

    /// The datapath between two fake ports, in virtual time (origin 0); the test plays the
    /// applications behind them.
    struct FakePorts {
        dp: Datapath<FakePort>,
        records: Receiver<Record>,
    }

    fn pipe(name: &'static str, delay_ms: u64) -> BuiltLink<EmuPacket> {
        BuiltLink {
            name,
            model: "pipe",
            link: Box::new(Pipe::new(
                PipeParams {
                    delay: Duration::from_millis(delay_ms),
                    ..Default::default()
                },
                RngStream::derive(1, name),
            )),
        }
    }

    /// Links "a" (10 ms) and "b" (20 ms) downward, "c" (5 ms) as the alternative; flow 0
    /// (server port 5000) takes a then b down, nothing up.
    fn two_hops(changes: Vec<TimedChange>) -> FakePorts {
        let (tx, records) = sync_channel(1024);
        let (_mailbox, control) = crate::control::mailbox().unwrap();
        let path = FlowPath {
            down: vec![0, 1],
            up: vec![],
        };
        let dp = Datapath::new(DatapathParts {
            links: vec![pipe("a", 10), pipe("b", 20), pipe("c", 5)],
            paths: vec![path.clone()],
            shared: path,
            ports: vec![(5000, 0)],
            changes,
            client: FakePort::default(),
            server: FakePort::default(),
            origin_mono_ns: 0,
            records: tx,
            cfg: DatapathConfig {
                guard_ns: 50_000,
                sample_interval: Duration::ZERO,
                rt_fifo: false,
                mlock: false,
                max_in_flight_bytes: DEFAULT_MAX_IN_FLIGHT_BYTES,
            },
            mtu: 1500,
            control,
            params: vec![LinkChange::default(); 3],
        });
        FakePorts { dp, records }
    }

    /// A UDP packet from the server's port 5000, with `tag` as its payload.
    fn from_server(tag: u8) -> Vec<u8> {
        let b = etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).udp(5000, 4000);
        let mut out = Vec::new();
        b.write(&mut out, &[tag; 20]).unwrap();
        out
    }

    impl FakePorts {
        /// The server's application sends `tag` at `ms` (virtual time).
        fn send_down(&mut self, ms: u64, tag: u8) {
            let port = &mut self.dp.io.server;
            port.incoming.push_back((ms * 1_000_000, from_server(tag)));
            assert_eq!(self.dp.read_side(Facing::Server), 1);
        }

        /// Runs the network to `ms` and returns the tags of what the client's side received.
        fn run_to(&mut self, ms: u64) -> Vec<u8> {
            self.dp.process_due(Instant::from_nanos(ms * 1_000_000));
            let written = std::mem::take(&mut self.dp.io.client.written);
            written.iter().map(|p| p[p.len() - 1]).collect()
        }

        /// The `kind`s of the network's rows recorded so far, with their link and `live`.
        fn net_events(&self) -> Vec<(EventKind, &'static str, bool)> {
            self.records
                .try_iter()
                .filter_map(|r| match r {
                    Record::NetEvent {
                        kind, link, live, ..
                    } => Some((kind, link, live)),
                    _ => None,
                })
                .collect()
        }
    }

    fn at_ms(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn a_packet_crosses_both_hops_and_leaves_after_their_delays() {
        let mut p = two_hops(vec![]);
        p.send_down(0, 1);
        assert_eq!(
            p.run_to(29),
            Vec::<u8>::new(),
            "10 ms + 20 ms: not before 30 ms"
        );
        assert_eq!(p.run_to(30), vec![1]);
        assert_eq!(p.dp.io.report.downlink.packets, 1);
        assert_eq!(p.dp.io.traffic[0].down_packets, 1);
        assert_eq!(
            p.dp.io.in_flight,
            [0, 0],
            "nothing is inside the links any more"
        );
        // Nothing came back the other way.
        assert!(p.dp.io.server.written.is_empty());
    }

    #[test]
    fn a_kept_outage_holds_packets_until_the_link_is_up_and_a_lost_one_drops_them() {
        let changes = vec![
            TimedChange {
                at: at_ms(5),
                change: NetChange::Down {
                    link: 1,
                    keep: true,
                },
            },
            TimedChange {
                at: at_ms(100),
                change: NetChange::Up { link: 1 },
            },
            TimedChange {
                at: at_ms(200),
                change: NetChange::Down {
                    link: 0,
                    keep: false,
                },
            },
        ];
        let mut p = two_hops(changes);
        // Reaches b at 10 ms: b is down and keeps it until 100 ms, then 20 ms of delay.
        p.send_down(0, 1);
        assert_eq!(p.run_to(119), Vec::<u8>::new());
        assert_eq!(p.run_to(120), vec![1]);
        // Sent into a at 195 ms, due to leave it at 205 ms: a's outage (at 200 ms) loses it
        // on its way.
        p.send_down(195, 2);
        assert_eq!(p.run_to(300), Vec::<u8>::new());
        assert_eq!(p.dp.net.outages().drops(0), 1);
        assert_eq!(p.dp.net.outages().drops(1), 0);
        assert_eq!(
            p.net_events(),
            vec![
                (EventKind::LinkDown, "b", false),
                (EventKind::LinkUp, "b", false),
                (EventKind::LinkDown, "a", false),
                (EventKind::Outage, "a", false),
            ]
        );
        assert_eq!(
            p.dp.io.in_flight,
            [0, 0],
            "the lost packet gave back its bytes"
        );
    }

    #[test]
    fn a_timed_path_change_moves_the_flow_and_packets_on_their_way_follow_it() {
        let changes = vec![TimedChange {
            at: at_ms(5),
            change: NetChange::Path {
                flow: 0,
                down: Some(vec![0, 2]),
                up: None,
            },
        }];
        let mut p = two_hops(changes);
        // In a when the path changes: past a, it takes c (5 ms), not b (20 ms).
        p.send_down(0, 1);
        assert_eq!(p.run_to(14), Vec::<u8>::new());
        assert_eq!(p.run_to(15), vec![1]);
        p.send_down(20, 2);
        assert_eq!(p.run_to(35), vec![2]);
        let events = p.net_events();
        assert_eq!(events, vec![(EventKind::PathChange, "", false)]);
    }

    #[test]
    fn a_live_change_applies_at_once_and_a_moot_one_is_refused() {
        let mut p = two_hops(vec![]);
        p.run_to(1);
        p.dp.apply_live(
            at_ms(1),
            NetChange::Down {
                link: 0,
                keep: false,
            },
        )
        .unwrap();
        let err =
            p.dp.apply_live(
                at_ms(2),
                NetChange::Down {
                    link: 0,
                    keep: false,
                },
            )
            .unwrap_err();
        assert_eq!(err, "link \"a\" is down already");
        p.send_down(3, 1);
        assert_eq!(
            p.run_to(50),
            Vec::<u8>::new(),
            "lost on arrival at the down link"
        );
        p.dp.apply_live(at_ms(50), NetChange::Up { link: 0 })
            .unwrap();
        let change = LinkChange {
            delay: Some(Duration::from_millis(1)),
            ..Default::default()
        };
        p.dp.apply_live(at_ms(50), NetChange::Set { link: 1, change })
            .unwrap();
        assert_eq!(p.dp.io.params[1].delay, Some(Duration::from_millis(1)));
        p.send_down(60, 2);
        assert_eq!(p.run_to(70), Vec::<u8>::new());
        assert_eq!(p.run_to(71), vec![2], "10 ms in a, then b's new 1 ms");
        assert_eq!(
            p.net_events(),
            vec![
                (EventKind::LinkDown, "a", true),
                (EventKind::Outage, "a", false),
                (EventKind::LinkUp, "a", true),
                (EventKind::LinkChange, "b", true),
            ]
        );
    }

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
