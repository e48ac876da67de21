//! Stepping the network: forwarding along paths, outages, timed and live changes, link
//! timers: one implementation, driven by the simulator (virtual clock) and the emulator's
//! datapath (wall clock) alike.
//!
//! # Contract
//! [`Stepper`] is sans-IO. The driver
//! 1. asks [`Stepper::next_deadline`] what is due next (its key in the network's event order,
//!    [`crate::order`]) and merges it with its own events (endpoints, flow starts, samples);
//! 2. calls [`Stepper::step`] when the network's event comes first (or
//!    [`Stepper::advance`] to handle everything due by an instant);
//! 3. hands packets in at a flow's ingress with [`Stepper::take_in`], and live changes with
//!    [`Stepper::apply`];
//! 4. supplies a [`Sink`], through which the network hands out what reaches the end of its
//!    path and what it records (link events, outage losses, changes, samples).
//!
//! Time never goes back: every instant the driver passes is at or after the last event the
//! network handled.
//!
//! # Where a packet is between two stages
//! A packet that left a link (or was taken in at an ingress) waits, with the instant it is
//! due at the next stage, as an arrival of rank [`order::ARRIVE`] keyed by the link (or the
//! ingress) it comes from. When it is due:
//! - if the link it left is down, the outage caught it on its way (kept or lost);
//! - else its next hop is read from its path *now* (a path change while it was on its way
//!   applies past the point where the paths part), and it arrives at that link (caught if
//!   the link is down) or is delivered to the end of its path.
//!
//! A link's timer is one pending wake-up per link (rank [`order::WAKE`]); a wake-up that the
//! link moved earlier since is left in the queue and ignored when due (lazy cancellation).

use crate::build::BuiltLink;
use crate::{order, Direction, FlowPath, LinkId, NetChange, Network, Outages};
use airlink_engine::{EventQueue, Instant};
use airlink_link::{LinkEvent, LinkSample, Packet};

/// What the network needs to know of a packet besides what its links see: the path it
/// follows and how far along it is.
pub trait Routed: Packet {
    /// Index of its path in the network's paths: a scenario flow's, or (the last) the shared
    /// one.
    fn route(&self) -> usize;
    fn dir(&self) -> Direction;
    /// Index of the next hop on its path.
    fn hop(&self) -> u8;
    fn set_hop(&mut self, hop: u8);
    /// It left link `link` (the simulator notes which link corrupted it first).
    fn left_link(&mut self, _link: LinkId) {}
}

/// What the network hands its driver.
pub trait Sink<P> {
    /// `pkt` reached the end of its path at `at`: its flow's receiving end.
    fn deliver(&mut self, at: Instant, pkt: P);
    /// Link `link` (named `name`) reported `event`.
    fn link_event(&mut self, link: LinkId, name: &'static str, event: LinkEvent);
    /// An outage of link `link` lost `pkt` at `at`.
    fn outage_loss(&mut self, at: Instant, link: LinkId, name: &'static str, pkt: &P);
    /// `change` was applied at `at` (`link_name`: its link's, or "" for a path change; `live`:
    /// made through the control socket, not the scenario).
    fn changed(&mut self, at: Instant, change: &NetChange, link_name: &'static str, live: bool);
    /// A sample of link `link` at `at` (see [`Stepper::sample`]).
    fn link_sample(&mut self, at: Instant, link: LinkId, name: &'static str, sample: LinkSample);
}

/// The key of an event in the network's order, without the FIFO counter: `(time, rank,
/// source)`. The network's events and a driver's never share a `(rank, source)`, so this
/// decides between them.
pub type DueKey = (Instant, u8, u32);

/// The network's own events.
enum NetEvent<P> {
    /// A packet on its way to its next stage, from a link or (`None`) an ingress.
    Transit { from: Option<LinkId>, pkt: P },
    /// A link's timer.
    Wake(LinkId),
    /// The scenario's timed change with this index.
    Change(u32),
}

/// Why a change was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeError {
    /// The link is in that state already (a live change came first).
    Moot(String),
    /// The link's model refused the new values.
    Refused(String),
}

impl std::fmt::Display for ChangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChangeError::Moot(why) | ChangeError::Refused(why) => f.write_str(why),
        }
    }
}

/// A network in motion: its links, paths, outages and pending events.
pub struct Stepper<P> {
    links: Vec<BuiltLink<P>>,
    /// Each scenario flow's path, then the shared path (a path change moves them).
    paths: Vec<FlowPath>,
    changes: Vec<crate::TimedChange>,
    queue: EventQueue<NetEvent<P>>,
    /// Per link: its pending wake-up.
    wake: Vec<Option<Instant>>,
    outages: Outages<P, P>,
    /// Packets between two stages.
    in_transit: usize,
    now: Instant,
}

impl<P: Routed> Stepper<P> {
    /// Sets a built network in motion at time zero, its timed changes scheduled.
    pub fn new(network: Network<P>) -> Self {
        let n = network.links.len();
        let mut queue = EventQueue::new();
        for (i, c) in network.changes.iter().enumerate() {
            queue.push(c.at, order::CHANGE, i as u32, NetEvent::Change(i as u32));
        }
        let mut paths = network.paths;
        paths.push(network.shared);
        Stepper {
            links: network.links,
            paths,
            changes: network.changes,
            queue,
            wake: vec![None; n],
            outages: Outages::new(n),
            in_transit: 0,
            now: Instant::ZERO,
        }
    }

    pub fn links(&self) -> &[BuiltLink<P>] {
        &self.links
    }

    pub fn outages(&self) -> &Outages<P, P> {
        &self.outages
    }

    /// The paths: each scenario flow's, then the shared one.
    pub fn paths(&self) -> &[FlowPath] {
        &self.paths
    }

    /// The instant of the last event handled.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Gives the links back (for their counters at the end of a run).
    pub fn into_links(self) -> Vec<BuiltLink<P>> {
        self.links
    }

    /// Events pending in the network (for a driver's memory estimate).
    pub fn pending_events(&self) -> usize {
        self.queue.len()
    }

    /// Packets between two stages.
    pub fn in_transit(&self) -> usize {
        self.in_transit
    }

    /// Whether anything is inside the links or between them (timed changes aside).
    pub fn busy(&self) -> bool {
        self.in_transit > 0 || self.links.iter().any(|l| l.link.poll_at().is_some())
    }

    /// The network's next event (possibly a wake-up that turns out stale).
    #[inline]
    pub fn next_deadline(&self) -> Option<DueKey> {
        self.queue.peek_key().map(|k| (k.time, k.rank, k.source))
    }

    /// Handles everything due at or before `until`, in order.
    pub fn advance(&mut self, until: Instant, sink: &mut impl Sink<P>) {
        while self.queue.peek_time().is_some_and(|t| t <= until) {
            self.step(sink);
        }
    }

    /// Handles the next event (see [`next_deadline`](Self::next_deadline)).
    pub fn step(&mut self, sink: &mut impl Sink<P>) {
        let Some((key, event)) = self.queue.pop() else {
            return;
        };
        self.now = key.time;
        match event {
            NetEvent::Transit { from, pkt } => {
                self.in_transit -= 1;
                self.transit(from, pkt, sink);
            }
            NetEvent::Wake(l) => {
                let pending = &mut self.wake[l as usize];
                if *pending != Some(self.now) {
                    return; // stale: the link rescheduled since
                }
                *pending = None;
                let link = &mut self.links[l as usize].link;
                if link.poll_at().is_some_and(|t| t <= self.now) {
                    link.handle_timeout(self.now);
                }
                self.after_link(l, sink);
            }
            NetEvent::Change(i) => {
                let change = self.changes[i as usize].change.clone();
                // One that finds its link in the state it asks for (a live change came
                // first) does nothing and is not recorded.
                match self.apply_now(change, false, sink) {
                    Ok(()) | Err(ChangeError::Moot(_)) => {}
                    // Validated: the scenario names only what the model can change.
                    Err(ChangeError::Refused(why)) => panic!("a change the model accepts: {why}"),
                }
            }
        }
    }

    /// Takes a packet in at its flow's ingress at `at` (from the endpoint with source id
    /// `source`, [`order::endpoint_source`]): it arrives at the first hop of its path, in
    /// order with the other arrivals at `at`.
    #[inline]
    pub fn take_in(&mut self, at: Instant, source: u32, pkt: P) {
        self.in_transit += 1;
        self.queue.push(
            at,
            order::ARRIVE,
            source,
            NetEvent::Transit { from: None, pkt },
        );
    }

    /// Applies a change at `now` (at or after every event handled) and records it. `live`:
    /// made through the control socket.
    pub fn apply(
        &mut self,
        now: Instant,
        change: NetChange,
        live: bool,
        sink: &mut impl Sink<P>,
    ) -> Result<(), ChangeError> {
        debug_assert!(now >= self.now, "time went back");
        self.now = now;
        self.apply_now(change, live, sink)
    }

    /// Samples every link at `at`, through the sink.
    pub fn sample(&mut self, at: Instant, sink: &mut impl Sink<P>) {
        for (i, l) in self.links.iter_mut().enumerate() {
            let s = l.link.sample(at);
            sink.link_sample(at, i as LinkId, l.name, s);
        }
    }

    /// Samples link `l` at `at` (a state read).
    pub fn sample_link(&mut self, l: LinkId, at: Instant) -> LinkSample {
        self.links[l as usize].link.sample(at)
    }

    /// Why a change is moot now (its link is in that state already).
    pub fn moot(&self, change: &NetChange) -> Option<String> {
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

    fn apply_now(
        &mut self,
        change: NetChange,
        live: bool,
        sink: &mut impl Sink<P>,
    ) -> Result<(), ChangeError> {
        if let Some(why) = self.moot(&change) {
            return Err(ChangeError::Moot(why));
        }
        let now = self.now;
        if let NetChange::Set { link, change } = &change {
            self.links[*link as usize]
                .link
                .change(now, change)
                .map_err(ChangeError::Refused)?;
        }
        let name = change.link().map_or("", |l| self.links[l as usize].name);
        sink.changed(now, &change, name, live);
        match change {
            NetChange::Set { link, .. } => self.after_link(link, sink),
            NetChange::Down { link, keep } => self.outages.take_down(link, keep),
            NetChange::Up { link } => {
                let (leaving, arrived) = self.outages.bring_up(link);
                // Those on their way from it go on first, in the order of arrivals at `now`.
                for pkt in leaving {
                    self.in_transit += 1;
                    self.queue.push(
                        now,
                        order::ARRIVE,
                        order::link_source(link),
                        NetEvent::Transit {
                            from: Some(link),
                            pkt,
                        },
                    );
                }
                for pkt in arrived {
                    self.links[link as usize].link.enqueue(now, pkt);
                }
                self.after_link(link, sink);
            }
            NetChange::Path { flow, down, up } => {
                // The shared path follows the flow whose path it was.
                let shared = self.paths.len() - 1;
                let moves_shared = self.paths[shared] == self.paths[flow as usize];
                for p in [flow as usize]
                    .into_iter()
                    .chain(moves_shared.then_some(shared))
                {
                    let path = &mut self.paths[p];
                    if let Some(down) = &down {
                        path.down.clone_from(down);
                    }
                    if let Some(up) = &up {
                        path.up.clone_from(up);
                    }
                }
            }
        }
        Ok(())
    }

    /// A packet due at its next stage now: caught by the outage of the link it left, or on to
    /// its next hop on its path as it is now.
    fn transit(&mut self, from: Option<LinkId>, mut pkt: P, sink: &mut impl Sink<P>) {
        if let Some(l) = from.filter(|&l| self.outages.any() && self.outages.is_down(l)) {
            if let Some(pkt) = self.outages.catch_leaving(l, pkt) {
                sink.outage_loss(self.now, l, self.links[l as usize].name, &pkt);
            }
            return;
        }
        let path = &self.paths[pkt.route()];
        let hops = match pkt.dir() {
            Direction::Down => &path.down,
            Direction::Up => &path.up,
        };
        let Some(&l) = hops.get(pkt.hop() as usize) else {
            return sink.deliver(self.now, pkt);
        };
        pkt.set_hop(pkt.hop() + 1);
        if self.outages.any() && self.outages.is_down(l) {
            if let Some(pkt) = self.outages.catch_arriving(l, pkt) {
                sink.outage_loss(self.now, l, self.links[l as usize].name, &pkt);
            }
            return;
        }
        self.links[l as usize].link.enqueue(self.now, pkt);
        self.after_link(l, sink);
    }

    /// Moves what link `l` released on its way, hands out its events, and schedules its timer.
    fn after_link(&mut self, l: LinkId, sink: &mut impl Sink<P>) {
        let slot = &mut self.links[l as usize];
        while let Some((at, mut pkt)) = slot.link.poll_output() {
            pkt.left_link(l);
            self.in_transit += 1;
            self.queue.push(
                at,
                order::ARRIVE,
                order::link_source(l),
                NetEvent::Transit { from: Some(l), pkt },
            );
        }
        while let Some(ev) = slot.link.poll_event() {
            sink.link_event(l, slot.name, ev);
        }
        if let Some(t) = slot.link.poll_at() {
            let pending = &mut self.wake[l as usize];
            if pending.is_none_or(|w| t < w) {
                let t = t.max(self.now);
                *pending = Some(t);
                self.queue
                    .push(t, order::WAKE, order::link_source(l), NetEvent::Wake(l));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TimedChange;
    use airlink_engine::{Duration, RngStream};
    use airlink_link::{Pipe, PipeParams};

    #[derive(Debug)]
    struct TestPacket {
        id: u32,
        hop: u8,
    }

    impl Packet for TestPacket {
        fn wire_len(&self) -> u32 {
            100
        }
        fn flip_bit(&mut self, _bit: u64) {}
        fn flow(&self) -> u32 {
            0
        }
    }

    impl Routed for TestPacket {
        fn route(&self) -> usize {
            0
        }
        fn dir(&self) -> Direction {
            Direction::Down
        }
        fn hop(&self) -> u8 {
            self.hop
        }
        fn set_hop(&mut self, hop: u8) {
            self.hop = hop;
        }
    }

    /// Records what it is handed.
    #[derive(Default)]
    struct Log {
        delivered: Vec<(u64, u32)>,
        rows: Vec<String>,
    }

    impl Sink<TestPacket> for Log {
        fn deliver(&mut self, at: Instant, pkt: TestPacket) {
            self.delivered.push((at.as_nanos() / 1_000_000, pkt.id));
        }
        fn link_event(&mut self, _link: LinkId, name: &'static str, _event: LinkEvent) {
            self.rows.push(format!("event {name}"));
        }
        fn outage_loss(&mut self, at: Instant, _l: LinkId, name: &'static str, p: &TestPacket) {
            self.rows.push(format!(
                "{} ms outage {name} {}",
                at.as_nanos() / 1_000_000,
                p.id
            ));
        }
        fn changed(&mut self, at: Instant, c: &NetChange, name: &'static str, live: bool) {
            let kind = c.kind().as_str();
            self.rows.push(format!(
                "{} ms {kind} {name} {live}",
                at.as_nanos() / 1_000_000
            ));
        }
        fn link_sample(&mut self, _at: Instant, _l: LinkId, _n: &'static str, _s: LinkSample) {}
    }

    fn ms(n: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(n)
    }

    /// Pipes "a" (10 ms), "b" (20 ms), "c" (5 ms); flow 0 goes down a then b.
    fn network(changes: Vec<TimedChange>) -> Stepper<TestPacket> {
        let pipe = |name: &'static str, delay_ms: u64| BuiltLink {
            name,
            model: "pipe",
            link: Box::new(Pipe::new(
                PipeParams {
                    delay: Duration::from_millis(delay_ms),
                    ..Default::default()
                },
                RngStream::derive(1, name),
            )) as Box<dyn airlink_link::Link<TestPacket> + Send>,
        };
        let path = FlowPath {
            down: vec![0, 1],
            up: vec![],
        };
        Stepper::new(Network {
            links: vec![pipe("a", 10), pipe("b", 20), pipe("c", 5)],
            paths: vec![path.clone()],
            shared: path,
            changes,
        })
    }

    #[test]
    fn a_packet_crosses_its_path_hop_by_hop_and_the_deadline_says_when() {
        let mut net = network(vec![]);
        let mut log = Log::default();
        net.take_in(
            ms(0),
            order::endpoint_source(0, airlink_transport::Role::Server),
            TestPacket { id: 1, hop: 0 },
        );
        assert_eq!(
            net.next_deadline().map(|k| (k.0, k.1)),
            Some((ms(0), order::ARRIVE))
        );
        net.advance(ms(29), &mut log);
        assert!(log.delivered.is_empty());
        assert_eq!(net.next_deadline().map(|k| k.0), Some(ms(30)));
        net.advance(ms(30), &mut log);
        assert_eq!(log.delivered, vec![(30, 1)]);
        assert!(!net.busy() && net.next_deadline().is_none());
    }

    #[test]
    fn after_a_path_change_a_packet_on_its_way_takes_the_new_path_and_an_outage_of_the_link_it_left_catches_it(
    ) {
        let changes = vec![
            TimedChange {
                at: ms(5),
                change: NetChange::Path {
                    flow: 0,
                    down: Some(vec![0, 2]),
                    up: None,
                },
            },
            TimedChange {
                at: ms(40),
                change: NetChange::Down {
                    link: 0,
                    keep: false,
                },
            },
        ];
        let mut net = network(changes);
        let mut log = Log::default();
        let source = order::endpoint_source(0, airlink_transport::Role::Server);
        net.take_in(ms(0), source, TestPacket { id: 1, hop: 0 });
        net.advance(ms(100), &mut log);
        net.take_in(ms(100), source, TestPacket { id: 2, hop: 0 });
        net.advance(ms(200), &mut log);
        // Past a at 10 ms, packet 1 takes c (5 ms): the path changed while it was in a.
        assert_eq!(log.delivered, vec![(15, 1)]);
        assert_eq!(
            log.rows,
            vec![
                "5 ms path_change  false",
                "40 ms link_down a false",
                "100 ms outage a 2"
            ]
        );
        assert_eq!(net.outages().drops(0), 1);
    }

    #[test]
    fn a_live_change_that_finds_its_link_in_that_state_is_moot() {
        let mut net = network(vec![]);
        let mut log = Log::default();
        let up = net.apply(ms(1), NetChange::Up { link: 1 }, true, &mut log);
        assert_eq!(
            up,
            Err(ChangeError::Moot("link \"b\" is up already".into()))
        );
        net.apply(
            ms(1),
            NetChange::Down {
                link: 1,
                keep: true,
            },
            true,
            &mut log,
        )
        .unwrap();
        assert_eq!(log.rows, vec!["1 ms link_down b true"]);
    }
}
