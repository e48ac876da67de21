//! The simulation driver: steps a scenario's network in virtual time.
//!
//! The network (links, flows, paths, event order, metrics, summary) is built once by
//! `airlink-net`, shared with the emulator; this driver owns the event queue and is the only
//! place where virtual time advances. Every model is a sans-IO state machine that says when it
//! next needs to run (`poll_at`/`poll_timeout`); the driver keeps one pending wake-up per
//! component and ignores stale ones (lazy cancellation), so a timer that moves never costs a
//! queue removal. Events at equal times follow the network's rule ([`airlink_net::order`]).

pub mod dumbbell;

use airlink_engine::{Duration, EventQueue, Instant};
use airlink_link::{Link, LinkEvent, Packet};
use airlink_net::metrics::Recorder;
use airlink_net::order::{self, ARRIVE, CHANGE, SAMPLE, START, WAKE};
use airlink_net::NO_FLOW;
pub use airlink_net::{
    BuildError, Dir, EventKind, Flow, FlowSummary, LinkId, LinkSummary, NetChange, Network,
    Outages, Pdu, Side, Summary, TimedChange,
};
use airlink_scenario as sc;

/// A simulated packet: the transport's header fields, the flow, and how many bits links
/// flipped.
#[derive(Clone, Debug)]
pub struct SimPacket {
    pub flow: u32,
    pub dir: Dir,
    /// Index of the next hop on the packet's path.
    pub hop: u8,
    pub pdu: Pdu,
    pub bit_errors: u32,
    /// The link that last corrupted the packet (for attributing checksum drops).
    pub corrupted_by: Option<LinkId>,
}

impl Packet for SimPacket {
    fn wire_len(&self) -> u32 {
        self.pdu.wire_len()
    }
    fn flip_bit(&mut self, _bit: u64) {
        self.bit_errors += 1;
    }
    fn flow(&self) -> u32 {
        self.flow
    }
    fn duplicate(&self) -> Option<Self> {
        Some(self.clone())
    }
    fn direction(&self) -> Option<airlink_link::Direction> {
        Some(match self.dir {
            Dir::Down => airlink_link::Direction::Down,
            Dir::Up => airlink_link::Direction::Up,
        })
    }
}

/// Components that can be woken or receive packets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Node {
    Link(LinkId),
    Client(u32),
    Server(u32),
}

impl Node {
    /// The node's source id in the event order.
    fn id(self) -> u32 {
        match self {
            Node::Link(l) => order::link_source(l),
            Node::Client(f) => order::endpoint_source(f, Side::Client),
            Node::Server(f) => order::endpoint_source(f, Side::Server),
        }
    }
}

enum Event {
    Arrive(Node, SimPacket),
    Wake(Node),
    FlowStart(u32),
    /// The scenario's timed change with this index.
    Change(u32),
    Sample,
}

/// A named link with its pending wake-up.
struct LinkSlot {
    name: &'static str,
    model: &'static str,
    link: Box<dyn Link<SimPacket> + Send>,
    wake: Option<Instant>,
    checksum_drops: u64,
}

/// A flow in the simulation: the flow and its place in the topology.
struct FlowSlot {
    flow: Flow,
    client_wake: Option<Instant>,
    server_wake: Option<Instant>,
    /// Links crossed server to client, and client to server.
    down_path: Vec<LinkId>,
    up_path: Vec<LinkId>,
}

/// A running simulation.
pub struct Simulation {
    queue: EventQueue<Event>,
    links: Vec<LinkSlot>,
    flows: Vec<FlowSlot>,
    changes: Vec<TimedChange>,
    /// Packets held by an outage on their way from a link keep the node they were going to.
    outages: Outages<SimPacket, (Node, SimPacket)>,
    /// Flows that have not delivered all their bytes (flows without an end never finish).
    unfinished_flows: usize,
    stop: Instant,
    sample_interval: Duration,
    recorder: Recorder,
    now: Instant,
    events_processed: u64,
    seed: u64,
    name: String,
    finished: bool,
    /// `run_until` returns early once the time series buffer this many rows (see
    /// [`drain_every`](Self::drain_every)).
    drain_rows: usize,
    /// The scenario's `memory_budget`, bytes, and why the run stopped when it went over.
    memory_budget: u64,
    over_budget: Option<String>,
    /// Loop turns until the next look at the memory estimate.
    until_budget_check: u32,
}

/// Loop turns between two looks at the memory estimate: cheap, but not free.
const BUDGET_CHECK_EVERY: u32 = 1024;
/// Estimated bytes of one pending event: the event (a packet, mostly) and its queue key.
const EVENT_BYTES: usize = std::mem::size_of::<Event>() + 32;
/// Estimated bytes of one packet a link or an outage holds.
const PACKET_BYTES: usize = std::mem::size_of::<(Node, SimPacket)>() + 16;

impl Simulation {
    /// Builds the scenario's network. `record` turns the time series on.
    pub fn new(s: &sc::Scenario, record: bool) -> Result<Simulation, BuildError> {
        let s = &airlink_net::build::resolve(s)?;
        let network = Network::<SimPacket>::build(s)?;
        let links = network
            .links
            .into_iter()
            .map(|b| LinkSlot {
                name: b.name,
                model: b.model,
                link: b.link,
                wake: None,
                checksum_drops: 0,
            })
            .collect::<Vec<_>>();
        let n_links = links.len();
        let mut queue = EventQueue::new();
        for (i, c) in network.changes.iter().enumerate() {
            queue.push(c.at, CHANGE, i as u32, Event::Change(i as u32));
        }
        let mut flows = Vec::with_capacity(s.flow.len());
        for ((i, f), path) in s.flow.iter().enumerate().zip(network.paths) {
            let mut flow = airlink_net::build::scenario_flow(f, i)?;
            flow.link_drops = Some(0); // the simulator attributes every drop to its flow
            queue.push(flow.start, START, i as u32, Event::FlowStart(i as u32));
            flows.push(FlowSlot {
                flow,
                client_wake: None,
                server_wake: None,
                down_path: path.down,
                up_path: path.up,
            });
        }
        let unfinished_flows = flows.iter().filter(|slot| !slot.flow.done).count();
        let sample_interval = s.sample_interval.0;
        if record && !sample_interval.is_zero() {
            queue.push(Instant::ZERO, SAMPLE, 0, Event::Sample);
        }
        Ok(Simulation {
            queue,
            links,
            flows,
            changes: network.changes,
            outages: Outages::new(n_links),
            unfinished_flows,
            stop: Instant::ZERO + s.stop.0,
            sample_interval,
            recorder: Recorder {
                enabled: record,
                event_log: s.event_log,
                ..Default::default()
            },
            now: Instant::ZERO,
            events_processed: 0,
            seed: s.seed,
            name: s.name.clone(),
            finished: false,
            drain_rows: usize::MAX,
            memory_budget: s.memory_budget.0,
            over_budget: None,
            until_budget_check: BUDGET_CHECK_EVERY,
        })
    }

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

    /// From now on, [`run_until`](Self::run_until) and
    /// [`run_until_at_most`](Self::run_until_at_most) also return (unfinished) once the time
    /// series hold `rows` rows, so a driver that drains them after every call keeps them
    /// bounded. Where the run pauses changes nothing in it or in the rows.
    pub fn drain_every(&mut self, rows: usize) {
        self.drain_rows = rows.max(1);
    }

    /// Why the run stopped early, if its state went over the scenario's `memory_budget`
    /// (the run is then finished, incomplete).
    pub fn over_budget(&self) -> Option<&str> {
        self.over_budget.as_deref()
    }

    /// Runs to completion.
    pub fn run(&mut self) {
        self.run_until(Instant::FAR_FUTURE);
    }

    /// Processes every event due at or before `until` (or until the run finishes, or the time
    /// series are full: see [`drain_every`](Self::drain_every)).
    /// Returns whether the run has finished.
    pub fn run_until(&mut self, until: Instant) -> bool {
        self.run_until_at_most(until, u64::MAX);
        self.finished
    }

    /// As [`run_until`](Self::run_until), but returns after at most `max_events` events, so a
    /// caller can look at the wall clock (or a cancel request) between slices. Slicing does
    /// not change the run: the same events are processed in the same order. Returns whether
    /// the slice ended because `until` was reached, the run finished or the time series are
    /// full (false: `max_events` used up).
    pub fn run_until_at_most(&mut self, until: Instant, max_events: u64) -> bool {
        let mut budget = max_events;
        while !self.finished {
            if budget == 0 {
                return false;
            }
            budget -= 1;
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
            // Both looks come after the peek, so a pause or a stop falls on an event, wherever
            // the caller's slices end.
            if self.recorder.rows() >= self.drain_rows {
                return true;
            }
            self.until_budget_check -= 1;
            if self.until_budget_check == 0 {
                self.until_budget_check = BUDGET_CHECK_EVERY;
                if let Some(why) = self.over_memory_budget() {
                    self.over_budget = Some(why);
                    self.finished = true;
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
        true
    }

    /// The run's estimated memory, from the sizes of what grows with the traffic (pending
    /// events, packets held by links and outages, time series not yet drained): a message
    /// saying what took it when it is over the budget.
    fn over_memory_budget(&self) -> Option<String> {
        let events = self.queue.len();
        let in_links: u64 = self
            .links
            .iter()
            .map(|l| {
                let s = l.link.stats();
                s.packets_in
                    .saturating_sub(s.packets_out + s.queue_drops + s.loss_drops)
            })
            .sum();
        let held = in_links as usize + self.outages.held();
        let rows = self.recorder.rows();
        let parts = [
            (events * EVENT_BYTES, format!("{events} pending events")),
            (
                held * PACKET_BYTES,
                format!("{held} packets held by links and outages"),
            ),
            (self.recorder.held_bytes(), {
                let (table, n) = self.recorder.largest();
                format!("{rows} time-series rows not yet written (most in {table}: {n})")
            }),
        ];
        let total: usize = parts.iter().map(|p| p.0).sum();
        if (total as u64) <= self.memory_budget {
            return None;
        }
        let mut parts = parts.to_vec();
        parts.sort_by_key(|p| std::cmp::Reverse(p.0));
        let list: Vec<String> = parts
            .iter()
            .map(|(bytes, what)| format!("{what} ({})", megabytes(*bytes)))
            .collect();
        Some(format!(
            "run stopped at {:.3} s simulated: its state took about {}, over memory_budget = \"{}\": {}; \
             raise memory_budget, or lower the rates or the stop time",
            self.now.as_secs_f64(),
            megabytes(total),
            sc::units::DataSize(self.memory_budget),
            list.join(", "),
        ))
    }

    fn dispatch(&mut self, event: Event) {
        let now = self.now;
        match event {
            Event::Arrive(node, pkt) if self.outages.any() && self.caught_by_outage(node, &pkt) => {
                self.hold_or_drop(node, pkt);
            }
            Event::Arrive(Node::Link(l), pkt) => {
                self.links[l as usize].link.enqueue(now, pkt);
                self.after_link(l);
            }
            Event::Arrive(node @ (Node::Client(f) | Node::Server(f)), pkt) => {
                if pkt.bit_errors > 0 {
                    // The receiver's checksum catches the corruption.
                    self.flows[f as usize].flow.checksum_drops += 1;
                    if let Some(l) = pkt.corrupted_by {
                        self.links[l as usize].checksum_drops += 1;
                    }
                    if self.recorder.enabled {
                        let link = pkt.corrupted_by.map_or("", |l| self.links[l as usize].name);
                        self.recorder.events.push(
                            now,
                            EventKind::ChecksumDrop,
                            link,
                            f,
                            pkt.wire_len(),
                            pkt.bit_errors,
                        );
                    }
                } else {
                    let side = if node == Node::Client(f) {
                        Side::Client
                    } else {
                        Side::Server
                    };
                    if self.flows[f as usize].flow.receive(side, now, &pkt.pdu) {
                        self.unfinished_flows -= 1;
                    }
                    if let (Side::Server, Pdu::Tcp(seg)) = (side, &pkt.pdu) {
                        if seg.flags.ack && self.recorder.logs_events() {
                            let cwnd = self.flows[f as usize].flow.sample().cwnd_bytes;
                            self.recorder.segments.push(now, f, "ack", seg.ack, 0, cwnd);
                        }
                    }
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
                    Node::Client(f) | Node::Server(f) => {
                        let side = if node == Node::Client(f) {
                            Side::Client
                        } else {
                            Side::Server
                        };
                        let flow = &mut self.flows[f as usize].flow;
                        let logs_timeouts = side == Side::Server && self.recorder.logs_events();
                        let timeouts = if logs_timeouts {
                            flow.sample().timeouts
                        } else {
                            0
                        };
                        flow.handle_timeout(side, now);
                        if logs_timeouts {
                            let after = flow.sample();
                            if after.timeouts > timeouts {
                                self.recorder.segments.push(
                                    now,
                                    f,
                                    "timeout",
                                    0,
                                    0,
                                    after.cwnd_bytes,
                                );
                            }
                        }
                        self.after_endpoint(node);
                    }
                }
            }
            Event::FlowStart(f) => {
                self.flows[f as usize].flow.start_at(now);
                self.after_endpoint(Node::Client(f));
                self.after_endpoint(Node::Server(f));
            }
            Event::Change(i) => self.apply_change(i as usize),
            Event::Sample => {
                self.take_samples();
                if !self.sample_interval.is_zero() {
                    self.queue
                        .push(now + self.sample_interval, SAMPLE, 0, Event::Sample);
                }
            }
        }
    }

    /// The link that sent `pkt` towards `node` (none: it comes from its endpoint).
    fn previous_link(&self, pkt: &SimPacket) -> Option<LinkId> {
        let flow = &self.flows[pkt.flow as usize];
        let path = if pkt.dir == Dir::Down {
            &flow.down_path
        } else {
            &flow.up_path
        };
        // `hop` is one past the index of the node it arrives at.
        (pkt.hop >= 2)
            .then(|| path.get(pkt.hop as usize - 2).copied())
            .flatten()
    }

    /// A packet arriving at a down link, or on its way from one.
    fn caught_by_outage(&self, node: Node, pkt: &SimPacket) -> bool {
        let down = |l: LinkId| self.outages.is_down(l);
        matches!(node, Node::Link(l) if down(l)) || self.previous_link(pkt).is_some_and(down)
    }

    /// Keeps a packet an outage caught until its link is up, or drops it.
    fn hold_or_drop(&mut self, node: Node, pkt: SimPacket) {
        // The link on its way from: the outage took it in flight; else it arrived at the down link.
        let lost = match self
            .previous_link(&pkt)
            .filter(|&l| self.outages.is_down(l))
        {
            Some(l) => self
                .outages
                .catch_leaving(l, (node, pkt))
                .map(|(_, pkt)| (l, pkt)),
            None => match node {
                Node::Link(l) => self.outages.catch_arriving(l, pkt).map(|pkt| (l, pkt)),
                _ => unreachable!("caught by an outage"),
            },
        };
        let Some((l, pkt)) = lost else { return };
        if let Some(n) = self.flows[pkt.flow as usize].flow.link_drops.as_mut() {
            *n += 1;
        }
        if self.recorder.enabled {
            self.recorder.events.push(
                self.now,
                EventKind::Outage,
                self.links[l as usize].name,
                pkt.flow,
                pkt.wire_len(),
                0,
            );
        }
    }

    fn apply_change(&mut self, i: usize) {
        let now = self.now;
        let change = self.changes[i].change.clone();
        let (link, flow) = match &change {
            NetChange::Set { link, .. } | NetChange::Down { link, .. } | NetChange::Up { link } => {
                (Some(*link), NO_FLOW)
            }
            NetChange::Path { flow, .. } => (None, *flow),
        };
        if self.recorder.enabled {
            let name = link.map_or("", |l| self.links[l as usize].name);
            self.recorder
                .events
                .push(now, change.kind(), name, flow, 0, 0);
        }
        match change {
            NetChange::Set { link, change } => {
                // Validated: the scenario names only what the model can change.
                self.links[link as usize]
                    .link
                    .change(now, &change)
                    .expect("a change the model accepts");
                self.after_link(link);
            }
            NetChange::Down { link, keep } => self.outages.take_down(link, keep),
            NetChange::Up { link } => {
                let (leaving, arrived) = self.outages.bring_up(link);
                for (node, pkt) in leaving {
                    self.queue.push(
                        now,
                        ARRIVE,
                        order::link_source(link),
                        Event::Arrive(node, pkt),
                    );
                }
                for pkt in arrived {
                    self.links[link as usize].link.enqueue(now, pkt);
                }
                self.after_link(link);
            }
            NetChange::Path { flow, down, up } => {
                let slot = &mut self.flows[flow as usize];
                slot.down_path = down.unwrap_or(std::mem::take(&mut slot.down_path));
                slot.up_path = up.unwrap_or(std::mem::take(&mut slot.up_path));
            }
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
        self.queue
            .push(at, ARRIVE, source.id(), Event::Arrive(next, pkt));
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
            if let LinkEvent::Drop { flow, .. } = ev {
                if let Some(n) = self
                    .flows
                    .get_mut(flow as usize)
                    .and_then(|f| f.flow.link_drops.as_mut())
                {
                    *n += 1;
                }
            }
            if !self.recorder.enabled {
                continue;
            }
            match ev {
                LinkEvent::Drop {
                    at,
                    flow,
                    bytes,
                    reason,
                } => self.recorder.events.push(
                    at,
                    EventKind::Drop(reason),
                    slot.name,
                    flow,
                    bytes,
                    0,
                ),
                LinkEvent::ArqGaveUp {
                    at,
                    flow,
                    bit_errors,
                } => self.recorder.events.push(
                    at,
                    EventKind::ArqGaveUp,
                    slot.name,
                    flow,
                    0,
                    bit_errors,
                ),
                LinkEvent::Served {
                    at,
                    slot: n,
                    user,
                    rate_bps,
                    frame_error,
                } if self.recorder.event_log => {
                    let r = &mut self.recorder.slots;
                    r.time_ns.push(at.as_nanos());
                    r.link.push(slot.name);
                    r.slot.push(n);
                    r.user.push(user as u64);
                    r.rate_bps.push(rate_bps as f64);
                    r.frame_error.push(frame_error as u64);
                }
                LinkEvent::Served { .. } => {}
            }
        }
        let due = slot.link.poll_at();
        if let Some(t) = due {
            if slot.wake.is_none_or(|w| t < w) {
                let t = t.max(now);
                slot.wake = Some(t);
                self.queue
                    .push(t, WAKE, order::link_source(l), Event::Wake(Node::Link(l)));
            }
        }
    }

    fn after_endpoint(&mut self, node: Node) {
        let now = self.now;
        let (f, side, dir) = match node {
            Node::Client(f) => (f, Side::Client, Dir::Up),
            Node::Server(f) => (f, Side::Server, Dir::Down),
            Node::Link(_) => unreachable!("links are not endpoints"),
        };
        if self.flows[f as usize]
            .flow
            .react(f, side, now, &mut self.recorder)
        {
            self.unfinished_flows -= 1;
        }
        while let Some(pdu) = self.flows[f as usize].flow.poll_transmit(side, now) {
            if let (Side::Server, Pdu::Tcp(seg)) = (side, &pdu) {
                if seg.len > 0 && self.recorder.logs_events() {
                    let cwnd = self.flows[f as usize].flow.sample().cwnd_bytes;
                    self.recorder
                        .segments
                        .push(now, f, "sent", seg.seq, seg.len, cwnd);
                }
            }
            let pkt = SimPacket {
                flow: f,
                dir,
                hop: 0,
                pdu,
                bit_errors: 0,
                corrupted_by: None,
            };
            self.forward(now, pkt, node);
        }
        let due = self.flows[f as usize].flow.poll_timeout(side);
        let slot = &mut self.flows[f as usize];
        let pending = if side == Side::Client {
            &mut slot.client_wake
        } else {
            &mut slot.server_wake
        };
        if let Some(t) = due {
            if pending.is_none_or(|w| t < w) {
                let t = t.max(now);
                *pending = Some(t);
                self.queue.push(t, WAKE, node.id(), Event::Wake(node));
            }
        }
    }

    fn take_samples(&mut self) {
        if !self.recorder.enabled {
            return;
        }
        let now = self.now;
        for (i, slot) in self.flows.iter().enumerate() {
            self.recorder
                .flows
                .push(now, i as u32, slot.flow.delivered, &slot.flow.sample());
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

/// Bytes for people: "12.3 MB".
fn megabytes(bytes: usize) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

impl Simulation {
    pub fn summary(&self) -> Summary {
        Summary {
            scenario: self.name.clone(),
            seed: self.seed,
            completed: self.flows.iter().all(|slot| slot.flow.completed()),
            sim_time_s: self.now.as_secs_f64(),
            events: self.events_processed,
            flows: self
                .flows
                .iter()
                .enumerate()
                .map(|(i, slot)| slot.flow.summary(i as u32))
                .collect(),
            links: self
                .links
                .iter()
                .enumerate()
                .map(|(i, l)| LinkSummary {
                    outage_drops: self.outages.drops(i as LinkId),
                    ..LinkSummary::of(l.name, l.model, l.link.as_ref(), l.checksum_drops)
                })
                .collect(),
        }
    }

    /// The summary as JSON (stable field order, so equal runs give equal bytes).
    pub fn summary_json(&self) -> String {
        self.summary().to_json()
    }
}
