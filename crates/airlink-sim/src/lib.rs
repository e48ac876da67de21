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
use airlink_link::{Ecn, LinkEvent, LinkSample, Packet};
use airlink_net::metrics::{Recorder, SegmentKind};
use airlink_net::order::{self, SAMPLE, START, WAKE};
use airlink_net::step::DueKey;
pub use airlink_net::{
    BuildError, Direction, EventKind, Flow, FlowSummary, LinkId, LinkSummary, NetChange, Network,
    Outages, Summary, TimedChange,
};
use airlink_net::{Routed, Sink, Stepper};
use airlink_scenario as sc;
pub use airlink_transport::{Pdu, Role};

/// A simulated packet: the transport's header fields, the flow, and how many bits links
/// flipped.
#[derive(Clone, Debug)]
pub struct SimPacket {
    pub flow: u32,
    pub dir: Direction,
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
    fn direction(&self) -> Option<Direction> {
        Some(self.dir)
    }
    // The IP header's ECN field is the transport's (`Segment::ip_ecn`).
    fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.pdu.ecn().bits())
    }
    fn set_ce(&mut self) {
        self.pdu.set_ce();
    }
}

impl Routed for SimPacket {
    fn route(&self) -> usize {
        self.flow as usize
    }
    fn dir(&self) -> Direction {
        self.dir
    }
    fn hop(&self) -> u8 {
        self.hop
    }
    fn set_hop(&mut self, hop: u8) {
        self.hop = hop;
    }
    fn left_link(&mut self, link: LinkId) {
        if self.bit_errors > 0 && self.corrupted_by.is_none() {
            self.corrupted_by = Some(link);
        }
    }
}

/// The driver's own events (the network keeps packets between stages, link timers and timed
/// changes).
enum Event {
    /// An endpoint's timer.
    Wake(u32, Role),
    FlowStart(u32),
    Sample,
}

/// A flow in the simulation, and its endpoints' pending wake-ups.
struct FlowSlot {
    flow: Flow,
    client_wake: Option<Instant>,
    server_wake: Option<Instant>,
}

impl FlowSlot {
    fn wake(&mut self, side: Role) -> &mut Option<Instant> {
        match side {
            Role::Client => &mut self.client_wake,
            Role::Server => &mut self.server_wake,
        }
    }
}

/// A running simulation.
pub struct Simulation {
    queue: EventQueue<Event>,
    net: Stepper<SimPacket>,
    /// Per link: corrupted packets it delivered that a receiver's checksum caught.
    checksum_drops: Vec<u64>,
    flows: Vec<FlowSlot>,
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
/// Estimated bytes of one pending event: a packet, mostly, and its queue key.
const EVENT_BYTES: usize = std::mem::size_of::<SimPacket>() + 48;
/// Estimated bytes of one packet a link or an outage holds.
const PACKET_BYTES: usize = std::mem::size_of::<SimPacket>() + 24;

/// What the network hands the simulator: rows for the recorder, drops for the flows' counts,
/// and the packet that reached its end (taken by the driver after the step).
struct SimSink<'a> {
    recorder: &'a mut Recorder,
    flows: &'a mut [FlowSlot],
    delivered: Option<SimPacket>,
}

impl SimSink<'_> {
    fn count_link_drop(&mut self, flow: u32) {
        if let Some(n) = self
            .flows
            .get_mut(flow as usize)
            .and_then(|f| f.flow.link_drops.as_mut())
        {
            *n += 1;
        }
    }
}

impl Sink<SimPacket> for SimSink<'_> {
    fn deliver(&mut self, _at: Instant, pkt: SimPacket) {
        debug_assert!(self.delivered.is_none(), "one delivery per step");
        self.delivered = Some(pkt);
    }

    fn link_event(&mut self, _link: LinkId, name: &'static str, ev: LinkEvent) {
        if let LinkEvent::Drop { flow, .. } = ev {
            self.count_link_drop(flow);
        }
        if !self.recorder.enabled {
            return;
        }
        match ev {
            LinkEvent::Drop {
                at,
                flow,
                bytes,
                reason,
            } => self
                .recorder
                .events
                .push(at, EventKind::Drop(reason), name, flow, bytes, 0),
            LinkEvent::ArqGaveUp {
                at,
                flow,
                bit_errors,
            } => self
                .recorder
                .events
                .push(at, EventKind::ArqGaveUp, name, flow, 0, bit_errors),
            LinkEvent::Served {
                at,
                slot: n,
                user,
                rate_bps,
                frame_error,
            } if self.recorder.event_log => {
                let r = &mut self.recorder.slots;
                r.time_ns.push(at.as_nanos());
                r.link.push(name);
                r.slot.push(n);
                r.user.push(user as u64);
                r.rate_bps.push(rate_bps as f64);
                r.frame_error.push(frame_error as u64);
            }
            LinkEvent::Served { .. } => {}
        }
    }

    fn outage_loss(&mut self, at: Instant, _link: LinkId, name: &'static str, pkt: &SimPacket) {
        self.count_link_drop(pkt.flow);
        if self.recorder.enabled {
            self.recorder
                .events
                .push(at, EventKind::Outage, name, pkt.flow, pkt.wire_len(), 0);
        }
    }

    fn changed(&mut self, at: Instant, change: &NetChange, link_name: &'static str, _live: bool) {
        if self.recorder.enabled {
            self.recorder
                .events
                .push(at, change.kind(), link_name, change.flow(), 0, 0);
        }
    }

    fn link_sample(&mut self, at: Instant, _link: LinkId, name: &'static str, s: LinkSample) {
        self.recorder.links.push(at, name, &s);
    }
}

impl Simulation {
    /// Builds the scenario's network. `record` turns the time series on.
    pub fn new(s: &sc::Scenario, record: bool) -> Result<Simulation, BuildError> {
        let s = &airlink_net::build::resolve(s)?;
        let network = Network::<SimPacket>::build(s)?;
        let n_links = network.links.len();
        let net = Stepper::new(network);
        let mut queue = EventQueue::new();
        let mut flows = Vec::with_capacity(s.flow.len());
        for (i, f) in s.flow.iter().enumerate() {
            let mut flow = airlink_net::build::scenario_flow(f, i, s.seed)?;
            flow.link_drops = Some(0); // the simulator attributes every drop to its flow
            queue.push(flow.start, START, i as u32, Event::FlowStart(i as u32));
            flows.push(FlowSlot {
                flow,
                client_wake: None,
                server_wake: None,
            });
        }
        airlink_net::host_budget::attach(s, flows.iter_mut().map(|slot| &mut slot.flow))?;
        let unfinished_flows = flows.iter().filter(|slot| !slot.flow.done).count();
        let sample_interval = s.sample_interval.0;
        if record && !sample_interval.is_zero() {
            queue.push(Instant::ZERO, SAMPLE, 0, Event::Sample);
        }
        Ok(Simulation {
            queue,
            net,
            checksum_drops: vec![0; n_links],
            flows,
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

    /// The next event, the driver's or the network's, in the one event order: whether it is
    /// the network's, and its instant.
    #[inline]
    fn next_event(&self) -> Option<(bool, Instant)> {
        let mine: Option<DueKey> = self.queue.peek_key().map(|k| (k.time, k.rank, k.source));
        match (mine, self.net.next_deadline()) {
            (Some(a), Some(b)) if b < a => Some((true, b.0)),
            (Some(a), _) => Some((false, a.0)),
            (None, Some(b)) => Some((true, b.0)),
            (None, None) => None,
        }
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
            let next = self.next_event();
            match next {
                Some((_, t)) if t <= until && t <= self.stop => {}
                Some((_, t)) if t > self.stop => {
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
            let Some((network, t)) = next else {
                unreachable!("peeked")
            };
            self.now = t;
            if network {
                self.events_processed += 1;
                self.step_network();
            } else {
                let (_, event) = self.queue.pop().expect("peeked");
                // Samples are observation, not model events: recording must not change the
                // count.
                if !matches!(event, Event::Sample) {
                    self.events_processed += 1;
                }
                self.dispatch(event);
            }
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
        let events = self.queue.len() + self.net.pending_events();
        let in_links: u64 = self
            .net
            .links()
            .iter()
            .map(|l| {
                let s = l.link.stats();
                s.packets_in
                    .saturating_sub(s.packets_out + s.queue_drops + s.loss_drops)
            })
            .sum();
        let held = in_links as usize + self.net.outages().held();
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

    /// Handles the network's next event; a packet it delivers goes to its endpoint.
    fn step_network(&mut self) {
        let mut sink = SimSink {
            recorder: &mut self.recorder,
            flows: &mut self.flows,
            delivered: None,
        };
        self.net.step(&mut sink);
        if let Some(pkt) = sink.delivered {
            self.receive(pkt);
        }
    }

    /// A packet reaches the end of its path: its flow's client (downward) or server.
    fn receive(&mut self, pkt: SimPacket) {
        let now = self.now;
        let f = pkt.flow;
        let side = match pkt.dir {
            Direction::Down => Role::Client,
            Direction::Up => Role::Server,
        };
        if pkt.bit_errors > 0 {
            // The receiver's checksum catches the corruption.
            self.flows[f as usize].flow.checksum_drops += 1;
            if let Some(l) = pkt.corrupted_by {
                self.checksum_drops[l as usize] += 1;
            }
            if self.recorder.enabled {
                let link = pkt
                    .corrupted_by
                    .map_or("", |l| self.net.links()[l as usize].name);
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
            if self.flows[f as usize].flow.receive(side, now, &pkt.pdu) {
                self.unfinished_flows -= 1;
            }
            if let (Role::Server, Pdu::Tcp(seg)) = (side, &pkt.pdu) {
                if seg.flags.ack && self.recorder.logs_events() {
                    let cwnd = self.flows[f as usize].flow.sample().cwnd_bytes;
                    self.recorder
                        .segments
                        .push(now, f, SegmentKind::Ack, seg.ack, 0, cwnd);
                }
            }
        }
        self.after_endpoint(f, side);
    }

    fn dispatch(&mut self, event: Event) {
        let now = self.now;
        match event {
            Event::Wake(f, side) => {
                let pending = self.flows[f as usize].wake(side);
                if *pending != Some(now) {
                    return; // stale: the endpoint rescheduled since
                }
                *pending = None;
                let flow = &mut self.flows[f as usize].flow;
                let logs_timeouts = side == Role::Server && self.recorder.logs_events();
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
                            SegmentKind::Timeout,
                            0,
                            0,
                            after.cwnd_bytes,
                        );
                    }
                }
                self.after_endpoint(f, side);
            }
            Event::FlowStart(f) => {
                self.flows[f as usize].flow.start_at(now);
                self.after_endpoint(f, Role::Client);
                self.after_endpoint(f, Role::Server);
            }
            Event::Sample => {
                self.take_samples();
                if !self.sample_interval.is_zero() {
                    self.queue
                        .push(now + self.sample_interval, SAMPLE, 0, Event::Sample);
                }
            }
        }
    }

    fn after_endpoint(&mut self, f: u32, side: Role) {
        let now = self.now;
        let source = order::endpoint_source(f, side);
        let dir = match side {
            Role::Client => Direction::Up,
            Role::Server => Direction::Down,
        };
        if self.flows[f as usize]
            .flow
            .react(f, side, now, &mut self.recorder)
        {
            self.unfinished_flows -= 1;
        }
        while let Some(pdu) = self.flows[f as usize].flow.poll_transmit(side, now) {
            if let (Role::Server, Pdu::Tcp(seg)) = (side, &pdu) {
                if seg.len > 0 && self.recorder.logs_events() {
                    let cwnd = self.flows[f as usize].flow.sample().cwnd_bytes;
                    self.recorder
                        .segments
                        .push(now, f, SegmentKind::Sent, seg.seq, seg.len, cwnd);
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
            self.net.take_in(now, source, pkt);
        }
        let due = self.flows[f as usize].flow.poll_timeout(side);
        let pending = self.flows[f as usize].wake(side);
        if let Some(t) = due {
            if pending.is_none_or(|w| t < w) {
                let t = t.max(now);
                *pending = Some(t);
                self.queue.push(t, WAKE, source, Event::Wake(f, side));
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
        let mut sink = SimSink {
            recorder: &mut self.recorder,
            flows: &mut self.flows,
            delivered: None,
        };
        self.net.sample(now, &mut sink);
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
                .net
                .links()
                .iter()
                .enumerate()
                .map(|(i, l)| LinkSummary {
                    outage_drops: self.net.outages().drops(i as LinkId),
                    ..LinkSummary::of(l.name, l.model, l.link.as_ref(), self.checksum_drops[i])
                })
                .collect(),
        }
    }

    /// The summary as JSON (stable field order, so equal runs give equal bytes).
    pub fn summary_json(&self) -> String {
        self.summary().to_json()
    }
}
