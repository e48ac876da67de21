//! The simulation driver: builds a scenario's models and runs them in virtual time.
//!
//! Every model (links, TCP endpoints) is a sans-IO state machine; this driver owns the event
//! queue and is the only place where time advances. Each component says when it next needs
//! to run (`poll_at`/`poll_timeout`); the driver keeps one pending wake-up per component and
//! ignores stale ones (lazy cancellation), so a timer that moves never costs a queue removal.
//!
//! Event order at equal times (spec'd by the engine's key): packet arrivals (rank 0), then
//! component wake-ups (rank 1), then flow starts (rank 2), then samples (rank 3); within a
//! rank by source component id, then FIFO.
//!
//! Topology: for each flow, `server [-> access.i.down] -> wired.down -> downlink -> client`
//! and `client -> uplink -> wired.up [-> access.i.up] -> server`; the four named links are
//! shared by all flows, the access links (optional, a dumbbell's) belong to one flow each.

pub mod build;
pub mod dumbbell;
pub mod metrics;
mod summary;

use airlink_engine::{Duration, EventQueue, Instant};
use airlink_link::{Link, LinkEvent, Packet};
use airlink_transport::{Segment, TcpEndpoint, TcpEvent};
pub use build::BuildError;
use metrics::Recorder;
pub use summary::{FlowSummary, LinkSummary, Summary};

/// A simulated packet: TCP header fields, the flow, and how many bits links flipped.
#[derive(Clone, Debug)]
pub struct SimPacket {
    pub flow: u32,
    pub dir: Dir,
    /// Index of the next hop on the packet's path.
    pub hop: u8,
    pub seg: Segment,
    pub bit_errors: u32,
    /// The link that last corrupted the packet (for attributing checksum drops).
    pub corrupted_by: Option<LinkId>,
}

impl Packet for SimPacket {
    fn wire_len(&self) -> u32 {
        self.seg.wire_len()
    }
    fn flip_bit(&mut self, _bit: u64) {
        self.bit_errors += 1;
    }
    fn flow(&self) -> u32 {
        self.flow
    }
}

/// Direction of travel.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Server to client.
    Down,
    /// Client to server.
    Up,
}

/// Components that can be woken or receive packets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Node {
    Link(LinkId),
    Client(u32),
    Server(u32),
}

impl Node {
    /// A stable id for event ordering.
    fn id(self) -> u32 {
        match self {
            Node::Link(l) => l as u32,
            Node::Client(f) => 0x1_0000 + 2 * f,
            Node::Server(f) => 0x1_0001 + 2 * f,
        }
    }
}

enum Event {
    Arrive(Node, SimPacket),
    Wake(Node),
    FlowStart(u32),
    Sample,
}

const RANK_ARRIVE: u8 = 0;
const RANK_WAKE: u8 = 1;
const RANK_START: u8 = 2;
const RANK_SAMPLE: u8 = 3;

/// Index of a link in the simulation.
pub type LinkId = u16;

/// A named link with its pending wake-up.
pub(crate) struct LinkSlot {
    pub name: &'static str,
    pub model: &'static str,
    pub link: Box<dyn Link<SimPacket> + Send>,
    pub wake: Option<Instant>,
    pub checksum_drops: u64,
}

/// One flow: both endpoints, the application's state and its counters.
pub(crate) struct FlowState {
    pub client: TcpEndpoint,
    pub server: TcpEndpoint,
    pub client_wake: Option<Instant>,
    pub server_wake: Option<Instant>,
    /// Links crossed server to client, and client to server.
    pub down_path: Vec<LinkId>,
    pub up_path: Vec<LinkId>,
    pub start: Instant,
    /// Bytes the application transfers; `None`: as many as it can until the stop time.
    pub bytes: Option<u64>,
    pub delivered: u64,
    pub first_delivery: Option<Instant>,
    pub last_delivery: Option<Instant>,
    /// (time, delivered) when delivery first reached 10 % and 90 % of `bytes`.
    pub mark10: Option<(Instant, u64)>,
    pub mark90: Option<(Instant, u64)>,
    pub done: bool,
    pub checksum_drops: u64,
    pub protocol: &'static str,
    pub congestion: &'static str,
}

/// A running simulation.
pub struct Simulation {
    queue: EventQueue<Event>,
    pub(crate) links: Vec<LinkSlot>,
    pub(crate) flows: Vec<FlowState>,
    /// Flows that have not delivered all their bytes (flows without an end never finish).
    unfinished_flows: usize,
    stop: Instant,
    sample_interval: Duration,
    pub(crate) recorder: Recorder,
    now: Instant,
    pub(crate) events_processed: u64,
    pub(crate) seed: u64,
    pub(crate) name: String,
    finished: bool,
}

impl Simulation {
    /// The current simulated time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// All flows are complete, or the stop time was reached.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Buffered time series (empty unless recording was enabled at build time).
    pub fn recorder(&mut self) -> &mut Recorder {
        &mut self.recorder
    }

    /// Runs to completion.
    pub fn run(&mut self) {
        self.run_until(Instant::FAR_FUTURE);
    }

    /// Processes every event due at or before `until` (or until the run finishes).
    /// Returns whether the run has finished.
    pub fn run_until(&mut self, until: Instant) -> bool {
        while !self.finished {
            match self.queue.peek_time() {
                Some(t) if t <= until && t <= self.stop => {}
                Some(t) if t > self.stop => {
                    self.now = self.stop;
                    self.finished = true;
                    break;
                }
                None => {
                    // Nothing can happen any more (e.g. every flow failed to start).
                    self.finished = true;
                    break;
                }
                _ => {
                    self.now = self.now.max(until.min(self.stop));
                    break;
                }
            }
            let (key, event) = self.queue.pop().expect("peeked");
            self.now = key.time;
            // Samples are observation, not model events: recording must not change the count.
            if !matches!(event, Event::Sample) {
                self.events_processed += 1;
            }
            self.dispatch(event);
            if self.unfinished_flows == 0 {
                self.finished = true;
            }
        }
        self.finished
    }

    fn dispatch(&mut self, event: Event) {
        let now = self.now;
        match event {
            Event::Arrive(Node::Link(l), pkt) => {
                self.links[l as usize].link.enqueue(now, pkt);
                self.after_link(l);
            }
            Event::Arrive(node @ (Node::Client(f) | Node::Server(f)), pkt) => {
                if pkt.bit_errors > 0 {
                    // The receiver's checksum catches the corruption.
                    self.flows[f as usize].checksum_drops += 1;
                    if let Some(l) = pkt.corrupted_by {
                        self.links[l as usize].checksum_drops += 1;
                    }
                    if self.recorder.enabled {
                        let link = pkt.corrupted_by.map_or("", |l| self.links[l as usize].name);
                        self.recorder.events.push(now, "checksum_drop", link, f, pkt.wire_len(), pkt.bit_errors);
                    }
                } else {
                    self.endpoint(node).handle_segment(now, &pkt.seg);
                }
                self.after_endpoint(node);
            }
            Event::Wake(node) => {
                let pending = match node {
                    Node::Link(l) => &mut self.links[l as usize].wake,
                    Node::Client(f) => &mut self.flows[f as usize].client_wake,
                    Node::Server(f) => &mut self.flows[f as usize].server_wake,
                };
                if *pending != Some(now) {
                    return; // stale: the component rescheduled since
                }
                *pending = None;
                match node {
                    Node::Link(l) => {
                        let slot = &mut self.links[l as usize];
                        if slot.link.poll_at().is_some_and(|t| t <= now) {
                            slot.link.handle_timeout(now);
                        }
                        self.after_link(l);
                    }
                    _ => {
                        let ep = self.endpoint(node);
                        if ep.poll_timeout().is_some_and(|t| t <= now) {
                            ep.handle_timeout(now);
                        }
                        self.after_endpoint(node);
                    }
                }
            }
            Event::FlowStart(f) => {
                self.flows[f as usize].client.connect(now);
                self.after_endpoint(Node::Client(f));
            }
            Event::Sample => {
                self.take_samples();
                if !self.sample_interval.is_zero() {
                    self.queue.push(now + self.sample_interval, RANK_SAMPLE, 0, Event::Sample);
                }
            }
        }
    }

    fn endpoint(&mut self, node: Node) -> &mut TcpEndpoint {
        match node {
            Node::Client(f) => &mut self.flows[f as usize].client,
            Node::Server(f) => &mut self.flows[f as usize].server,
            Node::Link(_) => unreachable!("links are not endpoints"),
        }
    }

    /// Sends a packet into its next hop (a link, or the endpoint at the end of its path).
    fn forward(&mut self, at: Instant, mut pkt: SimPacket, source: Node) {
        let flow = &self.flows[pkt.flow as usize];
        let path = match pkt.dir {
            Dir::Down => &flow.down_path,
            Dir::Up => &flow.up_path,
        };
        let next = match path.get(pkt.hop as usize) {
            Some(&l) => Node::Link(l),
            None => match pkt.dir {
                Dir::Down => Node::Client(pkt.flow),
                Dir::Up => Node::Server(pkt.flow),
            },
        };
        pkt.hop += 1;
        self.queue.push(at, RANK_ARRIVE, source.id(), Event::Arrive(next, pkt));
    }

    fn after_link(&mut self, l: LinkId) {
        let now = self.now;
        while let Some((at, mut pkt)) = self.links[l as usize].link.poll_output() {
            if pkt.bit_errors > 0 && pkt.corrupted_by.is_none() {
                pkt.corrupted_by = Some(l);
            }
            self.forward(at, pkt, Node::Link(l));
        }
        let slot = &mut self.links[l as usize];
        while let Some(ev) = slot.link.poll_event() {
            if !self.recorder.enabled {
                continue;
            }
            match ev {
                LinkEvent::Drop { at, flow, bytes, reason } => {
                    self.recorder.events.push(at, reason.as_str(), slot.name, flow, bytes, 0)
                }
                LinkEvent::ArqGaveUp { at, flow, bit_errors } => {
                    self.recorder.events.push(at, "arq_gave_up", slot.name, flow, 0, bit_errors)
                }
            }
        }
        let due = slot.link.poll_at();
        if let Some(t) = due {
            if slot.wake.is_none_or(|w| t < w) {
                let t = t.max(now);
                slot.wake = Some(t);
                self.queue.push(t, RANK_WAKE, l as u32, Event::Wake(Node::Link(l)));
            }
        }
    }

    fn after_endpoint(&mut self, node: Node) {
        let now = self.now;
        let (f, dir) = match node {
            Node::Client(f) => (f, Dir::Up),
            Node::Server(f) => (f, Dir::Down),
            Node::Link(_) => unreachable!(),
        };
        // Application reactions to transport events.
        while let Some(ev) = self.endpoint(node).poll_event() {
            let flow = &mut self.flows[f as usize];
            match ev {
                TcpEvent::Connected if node == Node::Server(f) => {
                    // The server's application writes the whole transfer, then closes.
                    match flow.bytes {
                        Some(bytes) => {
                            flow.server.send(now, bytes);
                            flow.server.close(now);
                        }
                        None => flow.server.send(now, u64::MAX / 2),
                    }
                }
                TcpEvent::Delivered { bytes } if node == Node::Client(f) => {
                    flow.delivered += bytes;
                    flow.first_delivery.get_or_insert(now);
                    flow.last_delivery = Some(now);
                    if let Some(total) = flow.bytes {
                        if flow.mark10.is_none() && flow.delivered * 10 >= total {
                            flow.mark10 = Some((now, flow.delivered));
                        }
                        if flow.mark90.is_none() && flow.delivered * 10 >= total * 9 {
                            flow.mark90 = Some((now, flow.delivered));
                        }
                        if flow.delivered >= total && !flow.done {
                            flow.done = true;
                            self.unfinished_flows -= 1;
                        }
                    }
                }
                TcpEvent::RttSample { rtt } if self.recorder.enabled => {
                    self.recorder.rtt.time_ns.push(now.as_nanos());
                    self.recorder.rtt.flow.push(f as u64);
                    self.recorder.rtt.rtt_us.push(rtt.as_nanos() as f64 / 1e3);
                }
                _ => {}
            }
        }
        while let Some(seg) = self.endpoint(node).poll_transmit(now) {
            let pkt = SimPacket { flow: f, dir, hop: 0, seg, bit_errors: 0, corrupted_by: None };
            self.forward(now, pkt, node);
        }
        let due = self.endpoint(node).poll_timeout();
        let flow = &mut self.flows[f as usize];
        let pending = if dir == Dir::Up { &mut flow.client_wake } else { &mut flow.server_wake };
        if let Some(t) = due {
            if pending.is_none_or(|w| t < w) {
                let t = t.max(now);
                *pending = Some(t);
                self.queue.push(t, RANK_WAKE, node.id(), Event::Wake(node));
            }
        }
    }

    fn take_samples(&mut self) {
        if !self.recorder.enabled {
            return;
        }
        let now = self.now;
        for (i, fl) in self.flows.iter().enumerate() {
            let s = &fl.server;
            let r = &mut self.recorder.flows;
            r.time_ns.push(now.as_nanos());
            r.flow.push(i as u64);
            r.cwnd_bytes.push(s.cwnd());
            r.ssthresh_bytes.push(s.ssthresh().min(u32::MAX as u64 * 4));
            r.inflight_bytes.push(s.bytes_in_flight());
            r.delivered_bytes.push(fl.delivered);
            r.srtt_us.push(s.srtt().map_or(f64::NAN, |d| d.as_nanos() as f64 / 1e3));
            r.rto_us.push(s.rto().as_nanos() as f64 / 1e3);
            r.retransmissions.push(s.stats().retransmitted_segments);
            let probe = s.controller().probe();
            r.sack_ok.push(probe.sack_ok.map_or(-1, i64::from));
            r.congestion_distance_segments.push(probe.congestion_distance.unwrap_or(f64::NAN));
            r.backlog_segments.push(probe.backlog_segments.unwrap_or(f64::NAN));
        }
        for slot in &mut self.links {
            let s = slot.link.sample(now);
            let r = &mut self.recorder.links;
            r.time_ns.push(now.as_nanos());
            r.link.push(slot.name);
            r.queue_packets.push(s.queue_packets as u64);
            r.queue_bytes.push(s.queue_bytes);
            match s.radio {
                Some(radio) => {
                    r.snr_db.push(radio.snr_db);
                    r.predicted_snr_db.push(radio.predicted_snr_db);
                    r.modulation_bits.push(radio.modulation_bits as i64);
                    r.subband.push(radio.subband as i64);
                }
                None => {
                    r.snr_db.push(f64::NAN);
                    r.predicted_snr_db.push(f64::NAN);
                    r.modulation_bits.push(-1);
                    r.subband.push(-1);
                }
            }
        }
    }
}
