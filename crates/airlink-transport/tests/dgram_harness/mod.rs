//! A two-endpoint harness in virtual time for the datagram protocols (DCCP, UDP): one-way
//! pipes with fixed delay, optional serialisation rate with a drop-tail queue, seeded i.i.d.
//! loss and an explicit drop pattern. Test infrastructure, not a link model.
//!
//! Order at equal times: arrivals on the downlink, arrivals on the uplink, client timers, server
//! timers; every input is followed by draining transmissions and events.

#![allow(dead_code)]

use airlink_engine::{Duration, Instant, RngStream};
use airlink_transport::dccp::DccpConfig;
use airlink_transport::{DccpEndpoint, DccpEvent, DccpPacket, Role, UdpDatagram};
use std::collections::VecDeque;

/// Anything with an IP size.
pub trait Wire {
    fn wire_len(&self) -> u32;
}
impl Wire for DccpPacket {
    fn wire_len(&self) -> u32 {
        DccpPacket::wire_len(self)
    }
}
impl Wire for UdpDatagram {
    fn wire_len(&self) -> u32 {
        UdpDatagram::wire_len(self)
    }
}

#[derive(Clone, Debug)]
pub struct PipeConfig {
    pub delay: Duration,
    /// bit/s of IP packets, 0 = infinitely fast.
    pub rate_bps: u64,
    /// Drop-tail limit on packets queued or in serialisation (0 = unlimited).
    pub queue_packets: usize,
    /// i.i.d. loss probability.
    pub loss: f64,
    /// `drop[i]` drops the i-th packet entering the pipe.
    pub drop: Vec<bool>,
}

impl PipeConfig {
    pub fn delay(delay: Duration) -> Self {
        PipeConfig {
            delay,
            rate_bps: 0,
            queue_packets: 0,
            loss: 0.0,
            drop: Vec::new(),
        }
    }
}

pub struct Pipe<P> {
    pub cfg: PipeConfig,
    rng: RngStream,
    fifo: VecDeque<(Instant, P)>,
    busy_until: Instant,
    departures: VecDeque<Instant>,
    pub count: u64,
    pub carried: u64,
    pub lost_random: u64,
    pub lost_queue: u64,
}

impl<P: Wire> Pipe<P> {
    pub fn new(cfg: PipeConfig, rng: RngStream) -> Self {
        Pipe {
            cfg,
            rng,
            fifo: VecDeque::new(),
            busy_until: Instant::ZERO,
            departures: VecDeque::new(),
            count: 0,
            carried: 0,
            lost_random: 0,
            lost_queue: 0,
        }
    }

    /// Offers a packet; returns false if it was dropped.
    pub fn push(&mut self, now: Instant, p: P) -> bool {
        let idx = self.count as usize;
        self.count += 1;
        let pattern = self.cfg.drop.get(idx).copied().unwrap_or(false);
        if pattern | self.rng.bernoulli(self.cfg.loss) {
            self.lost_random += 1;
            return false;
        }
        let depart = if self.cfg.rate_bps == 0 {
            now
        } else {
            while self.departures.front().is_some_and(|&t| t <= now) {
                self.departures.pop_front();
            }
            if self.cfg.queue_packets > 0 && self.departures.len() >= self.cfg.queue_packets {
                self.lost_queue += 1;
                return false;
            }
            let start = self.busy_until.max(now);
            self.busy_until =
                start + Duration::for_bits(p.wire_len() as u64 * 8, self.cfg.rate_bps);
            self.departures.push_back(self.busy_until);
            self.busy_until
        };
        self.fifo.push_back((depart + self.cfg.delay, p));
        true
    }

    pub fn next_due(&self) -> Option<Instant> {
        self.fifo.front().map(|&(t, _)| t)
    }

    pub fn pop_due(&mut self, now: Instant) -> Option<P> {
        if self.next_due()? <= now {
            self.carried += 1;
            self.fifo.pop_front().map(|(_, p)| p)
        } else {
            None
        }
    }
}

/// What one side's application saw.
#[derive(Default, Debug, Clone)]
pub struct View {
    pub connected: bool,
    pub peer_closed: bool,
    pub closed: bool,
    pub reset: bool,
    /// (arrival, event) for every delivered packet.
    pub delivered: Vec<(Instant, DccpEvent)>,
}

impl View {
    pub fn bytes(&self) -> u64 {
        self.delivered
            .iter()
            .map(|(_, e)| match e {
                DccpEvent::Delivered { bytes, .. } => *bytes as u64,
                _ => 0,
            })
            .sum()
    }
    pub fn bytes_between(&self, a: Instant, b: Instant) -> u64 {
        self.delivered
            .iter()
            .filter(|(t, _)| *t >= a && *t < b)
            .map(|(_, e)| match e {
                DccpEvent::Delivered { bytes, .. } => *bytes as u64,
                _ => 0,
            })
            .sum()
    }
}

/// A DCCP client and server joined by `up` (client → server) and `down`.
pub struct DccpPair {
    pub now: Instant,
    pub client: DccpEndpoint,
    pub server: DccpEndpoint,
    pub up: Pipe<DccpPacket>,
    pub down: Pipe<DccpPacket>,
    pub client_view: View,
    pub server_view: View,
    /// Every packet the client transmitted, with its time.
    pub client_sent: Vec<(Instant, DccpPacket)>,
    pub steps: u64,
}

fn drain(ep: &mut DccpEndpoint, view: &mut View, now: Instant) {
    while let Some(ev) = ep.poll_event() {
        match ev {
            DccpEvent::Connected => view.connected = true,
            DccpEvent::Delivered { .. } => view.delivered.push((now, ev)),
            DccpEvent::PeerClosed => view.peer_closed = true,
            DccpEvent::Closed => view.closed = true,
            DccpEvent::Reset => view.reset = true,
        }
    }
}

impl DccpPair {
    pub fn new(
        client: DccpConfig,
        server: DccpConfig,
        up: PipeConfig,
        down: PipeConfig,
        seed: u64,
    ) -> Self {
        DccpPair {
            now: Instant::ZERO,
            client: DccpEndpoint::new(client, Role::Client),
            server: DccpEndpoint::new(server, Role::Server),
            up: Pipe::new(up, RngStream::derive(seed, "pipe/up")),
            down: Pipe::new(down, RngStream::derive(seed, "pipe/down")),
            client_view: View::default(),
            server_view: View::default(),
            client_sent: Vec::new(),
            steps: 0,
        }
    }

    pub fn connect(&mut self) {
        self.client.connect(self.now);
        self.flush_client();
    }

    pub fn flush_client(&mut self) {
        while let Some(p) = self.client.poll_transmit(self.now) {
            self.client_sent.push((self.now, p.clone()));
            self.up.push(self.now, p);
        }
        drain(&mut self.client, &mut self.client_view, self.now);
    }

    pub fn flush_server(&mut self) {
        while let Some(p) = self.server.poll_transmit(self.now) {
            self.down.push(self.now, p);
        }
        drain(&mut self.server, &mut self.server_view, self.now);
    }

    /// Advances to the next event; false when nothing is left to happen.
    pub fn step(&mut self) -> bool {
        let next = [
            self.down.next_due(),
            self.up.next_due(),
            self.client.poll_timeout(),
            self.server.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(t) = next else { return false };
        self.now = self.now.max(t);
        let now = self.now;
        while let Some(p) = self.down.pop_due(now) {
            self.client.handle_packet(now, &p);
            self.flush_client();
        }
        while let Some(p) = self.up.pop_due(now) {
            self.server.handle_packet(now, &p);
            self.flush_server();
        }
        if self.client.poll_timeout().is_some_and(|t| t <= now) {
            self.client.handle_timeout(now);
            self.flush_client();
        }
        if self.server.poll_timeout().is_some_and(|t| t <= now) {
            self.server.handle_timeout(now);
            self.flush_server();
        }
        self.steps += 1;
        true
    }

    /// Runs until `until` or quiet; calls `check` after every step.
    pub fn run_checked(&mut self, until: Instant, mut check: impl FnMut(&DccpPair)) -> bool {
        while self.now <= until {
            assert!(self.steps < 20_000_000, "no progress at {}", self.now);
            if !self.step() {
                return true;
            }
            check(self);
        }
        false
    }

    pub fn run(&mut self, until: Instant) -> bool {
        self.run_checked(until, |_| {})
    }
}
