//! A two-endpoint harness in virtual time (after quinn-proto's `Pair`): a client and a server
//! joined by two one-way pipes with fixed delay, optional rate limit and drop-tail queue, and
//! seeded loss and reordering. Test infrastructure, not a link model (that is `airlink-link`).
//!
//! Order at equal times (P4): arrivals on the downlink, arrivals on the uplink, client timers,
//! server timers; each input is followed by draining the endpoint's transmissions and events.

#![allow(dead_code)]

use airlink_engine::{Duration, Instant, RngStream};
use airlink_transport::{
    AckEvent, CongestionConfig, CongestionController, CongestionEvent, CongestionKind,
    ControllerFactory, ControllerInit, ControllerProbe, LossView, RateSample, RecoveryExit, Role,
    Segment, TcpConfig, TcpEndpoint, TcpEvent,
};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::{Arc, Mutex};

/// One direction of the path.
#[derive(Clone, Debug)]
pub struct LinkConfig {
    /// One-way propagation delay.
    pub delay: Duration,
    /// Serialisation rate, bit/s of IP packets (0 = infinitely fast).
    pub rate_bps: u64,
    /// Drop-tail limit on packets waiting for or in serialisation (0 = unlimited).
    pub queue_packets: usize,
    /// i.i.d. loss probability.
    pub loss: f64,
    /// Probability that a packet is held back by up to `reorder_extra`.
    pub reorder: f64,
    pub reorder_extra: Duration,
    /// Drop the packets with these indices (0 = first packet entering this direction).
    pub drop_indices: Vec<u64>,
    /// Drop the first this many segments that carry a FIN.
    pub drop_fins: u32,
    /// Extra loss probability for retransmitted data (seq below the highest seen).
    pub retx_loss: f64,
    /// Drop the first `n` data segments starting at `seq`, for each `(seq, n)`.
    pub drop_seq: Vec<(u64, u32)>,
    /// A token-bucket policer before the queue: (rate bit/s, bucket bytes); a packet finding
    /// fewer tokens than its IP length is dropped. The bucket starts full.
    pub police: Option<(u64, u64)>,
}

impl LinkConfig {
    pub fn delay(delay: Duration) -> Self {
        LinkConfig {
            delay,
            rate_bps: 0,
            queue_packets: 0,
            loss: 0.0,
            reorder: 0.0,
            reorder_extra: Duration::ZERO,
            drop_indices: Vec::new(),
            drop_fins: 0,
            retx_loss: 0.0,
            drop_seq: Vec::new(),
            police: None,
        }
    }

    pub fn rate(mut self, bps: u64) -> Self {
        self.rate_bps = bps;
        self
    }
}

struct Late {
    at: Instant,
    n: u64,
    seg: Segment,
}
impl PartialEq for Late {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.n) == (o.at, o.n)
    }
}
impl Eq for Late {}
impl PartialOrd for Late {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Late {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.at, o.n).cmp(&(self.at, self.n))
    }
}

/// One direction: a FIFO for packets on schedule and a heap for the ones held back.
pub struct Pipe {
    pub cfg: LinkConfig,
    rng: RngStream,
    fifo: VecDeque<(Instant, Segment)>,
    late: BinaryHeap<Late>,
    busy_until: Instant,
    departures: VecDeque<Instant>,
    count: u64,
    max_seq: u64,
    fins_seen: u32,
    pub carried: u64,
    pub dropped: u64,
    /// The segments this pipe dropped, with the time they entered (when `log_drops`).
    pub dropped_log: Vec<(Instant, Segment)>,
    /// Record dropped segments in `dropped_log`.
    pub log_drops: bool,
    /// Every segment offered to this pipe, with the time (when `log_sends`).
    pub sent_log: Vec<(Instant, Segment)>,
    pub log_sends: bool,
    /// Policer tokens (bytes) and when they were last filled.
    tokens: Option<(f64, Instant)>,
    /// Packets the policer dropped.
    pub policed: u64,
}

impl Pipe {
    pub fn new(cfg: LinkConfig, rng: RngStream) -> Self {
        Pipe {
            cfg,
            rng,
            fifo: VecDeque::new(),
            late: BinaryHeap::new(),
            busy_until: Instant::ZERO,
            departures: VecDeque::new(),
            count: 0,
            max_seq: 0,
            fins_seen: 0,
            carried: 0,
            dropped: 0,
            dropped_log: Vec::new(),
            log_drops: false,
            sent_log: Vec::new(),
            log_sends: false,
            tokens: None,
            policed: 0,
        }
    }

    /// Packets waiting for or in serialisation at `now`.
    pub fn backlog(&self, now: Instant) -> usize {
        self.departures.iter().filter(|&&t| t > now).count()
    }

    pub fn push(&mut self, now: Instant, seg: Segment) {
        if self.log_sends {
            self.sent_log.push((now, seg));
        }
        let idx = self.count;
        self.count += 1;
        let end = seg.seq + seg.len as u64;
        let is_retx = seg.len > 0 && seg.seq < self.max_seq;
        self.max_seq = self.max_seq.max(end);
        let mut drop = self.cfg.drop_indices.contains(&idx);
        if seg.flags.fin && self.fins_seen < self.cfg.drop_fins {
            self.fins_seen += 1;
            drop = true;
        }
        if let Some(d) = self
            .cfg
            .drop_seq
            .iter_mut()
            .find(|d| d.0 == seg.seq && d.1 > 0)
        {
            if seg.len > 0 {
                d.1 -= 1;
                drop = true;
            }
        }
        drop |= self.rng.bernoulli(self.cfg.loss);
        drop |= is_retx && self.rng.bernoulli(self.cfg.retx_loss);
        if let (false, Some((rate, bucket))) = (drop, self.cfg.police) {
            let (tokens, last) = self.tokens.unwrap_or((bucket as f64, now));
            let tokens = (tokens + now.saturating_since(last).as_secs_f64() * rate as f64 / 8.0)
                .min(bucket as f64);
            let len = seg.wire_len() as f64;
            if tokens < len {
                self.tokens = Some((tokens, now));
                self.policed += 1;
                drop = true;
            } else {
                self.tokens = Some((tokens - len, now));
            }
        }
        if drop {
            self.drop(now, seg);
            return;
        }
        let depart = if self.cfg.rate_bps == 0 {
            now
        } else {
            while self.departures.front().is_some_and(|&t| t <= now) {
                self.departures.pop_front();
            }
            if self.cfg.queue_packets > 0 && self.departures.len() >= self.cfg.queue_packets {
                self.drop(now, seg);
                return;
            }
            let start = self.busy_until.max(now);
            self.busy_until =
                start + Duration::for_bits(seg.wire_len() as u64 * 8, self.cfg.rate_bps);
            self.departures.push_back(self.busy_until);
            self.busy_until
        };
        let at = depart + self.cfg.delay;
        if self.rng.bernoulli(self.cfg.reorder) {
            let extra = Duration::from_nanos(self.rng.below(self.cfg.reorder_extra.as_nanos() + 1));
            self.late.push(Late {
                at: at + extra,
                n: idx,
                seg,
            });
        } else {
            self.fifo.push_back((at, seg));
        }
    }

    fn drop(&mut self, now: Instant, seg: Segment) {
        self.dropped += 1;
        if self.log_drops {
            self.dropped_log.push((now, seg));
        }
    }

    pub fn next_due(&self) -> Option<Instant> {
        let a = self.fifo.front().map(|&(t, _)| t);
        let b = self.late.peek().map(|l| l.at);
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn pop_due(&mut self, now: Instant) -> Option<Segment> {
        let a = self.fifo.front().map(|&(t, _)| t).filter(|&t| t <= now);
        let b = self.late.peek().map(|l| l.at).filter(|&t| t <= now);
        let seg = match (a, b) {
            (Some(a), Some(b)) if b < a => self.late.pop().map(|l| l.seg),
            (Some(_), _) => self.fifo.pop_front().map(|(_, s)| s),
            (None, Some(_)) => self.late.pop().map(|l| l.seg),
            (None, None) => None,
        };
        if seg.is_some() {
            self.carried += 1;
        }
        seg
    }

    pub fn is_empty(&self) -> bool {
        self.fifo.is_empty() && self.late.is_empty()
    }
}

/// Per-side bookkeeping of what the application saw.
#[derive(Default, Debug, Clone)]
pub struct AppView {
    pub delivered: u64,
    pub connected: bool,
    pub peer_closed: bool,
    pub closed: bool,
    pub reset: bool,
    /// (time, cumulative delivered) at each delivery, when recording.
    pub deliveries: Vec<(Instant, u64)>,
}

/// Client and server joined by `up` (client → server) and `down` (server → client).
pub struct Pair {
    pub now: Instant,
    pub client: TcpEndpoint,
    pub server: TcpEndpoint,
    pub up: Pipe,
    pub down: Pipe,
    pub client_app: AppView,
    pub server_app: AppView,
    /// Keep a delivery time series.
    pub record: bool,
    /// The client closes as soon as the server's FIN arrives (a download).
    pub client_closes_on_fin: bool,
    /// Check both endpoints' internal invariants after every step (slow).
    pub check: bool,
    pub steps: u64,
}

impl Pair {
    pub fn new(
        client: TcpConfig,
        server: TcpConfig,
        up: LinkConfig,
        down: LinkConfig,
        seed: u64,
    ) -> Self {
        Pair {
            now: Instant::ZERO,
            client: TcpEndpoint::new(client, Role::Client),
            server: TcpEndpoint::new(server, Role::Server),
            up: Pipe::new(up, RngStream::derive(seed, "pipe/up")),
            down: Pipe::new(down, RngStream::derive(seed, "pipe/down")),
            client_app: AppView::default(),
            server_app: AppView::default(),
            record: false,
            client_closes_on_fin: true,
            check: false,
            steps: 0,
        }
    }

    /// A bulk download of `bytes`: the server writes everything and closes at t = 0, the
    /// client connects at t = 0 and closes when the server's FIN arrives.
    pub fn download(&mut self, bytes: u64) {
        self.server.send(self.now, bytes);
        self.server.close(self.now);
        self.client.connect(self.now);
        self.flush_client();
        self.flush_server();
    }

    fn flush_client(&mut self) {
        loop {
            while let Some(seg) = self.client.poll_transmit(self.now) {
                self.up.push(self.now, seg);
            }
            let close = drain(
                &mut self.client,
                &mut self.client_app,
                self.now,
                self.record,
            );
            if close && self.client_closes_on_fin {
                self.client.close(self.now);
                continue;
            }
            break;
        }
    }

    fn flush_server(&mut self) {
        while let Some(seg) = self.server.poll_transmit(self.now) {
            self.down.push(self.now, seg);
        }
        drain(
            &mut self.server,
            &mut self.server_app,
            self.now,
            self.record,
        );
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
        while let Some(seg) = self.down.pop_due(now) {
            self.client.handle_segment(now, &seg);
            self.flush_client();
        }
        while let Some(seg) = self.up.pop_due(now) {
            self.server.handle_segment(now, &seg);
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
        if self.check {
            for (name, ep) in [("client", &self.client), ("server", &self.server)] {
                if let Err(e) = ep.debug_check_invariants() {
                    panic!("{name} at {}: {e}", self.now);
                }
            }
        }
        true
    }

    /// Runs until nothing is left to happen, `until` is passed, or `max_steps` steps were made.
    /// Returns true if it ran out of events (the connection went quiet).
    pub fn run(&mut self, until: Instant, max_steps: u64) -> bool {
        while self.now <= until && self.steps < max_steps {
            if !self.step() {
                return true;
            }
        }
        false
    }
}

/// Drains events into the view; returns true when the peer's FIN arrived just now.
fn drain(ep: &mut TcpEndpoint, app: &mut AppView, now: Instant, record: bool) -> bool {
    let mut fin = false;
    while let Some(ev) = ep.poll_event() {
        match ev {
            TcpEvent::Connected => app.connected = true,
            TcpEvent::Delivered { bytes } => {
                app.delivered += bytes;
                if record {
                    app.deliveries.push((now, app.delivered));
                }
            }
            TcpEvent::PeerClosed => {
                app.peer_closed = true;
                fin = true;
            }
            TcpEvent::Closed => app.closed = true,
            TcpEvent::Reset => app.reset = true,
            TcpEvent::RttSample { .. } | TcpEvent::Congestion { .. } => {}
        }
    }
    fin
}

/// One window change a controller made outside `on_ack` (a reduction, or a decision not to).
#[derive(Clone, Debug)]
pub struct WindowChange {
    pub at: Instant,
    /// "fast" (fast retransmit), "timeout" or "update" (SACK scoreboard change in recovery).
    pub cause: &'static str,
    pub cwnd_before: u64,
    pub cwnd_after: u64,
    pub ssthresh_after: u64,
    /// Veno's backlog before the event.
    pub backlog_before: Option<f64>,
    pub probe_after: ControllerProbe,
}

/// (HighData, `app_limited`) of an ACK outside recovery, as the controller was told.
pub type AckSeen = (u64, bool);

/// Wraps a built-in controller and logs its reactions to losses and what each ACK told it.
#[derive(Debug)]
pub struct Logged {
    inner: Box<dyn CongestionController>,
    log: Arc<Mutex<Vec<WindowChange>>>,
    acks: Arc<Mutex<Vec<AckSeen>>>,
    samples: Arc<Mutex<Vec<(Instant, RateSample)>>>,
    probes: Arc<Mutex<Vec<(Instant, ControllerProbe)>>>,
}

impl Logged {
    fn record(
        &mut self,
        now: Instant,
        cause: &'static str,
        f: impl FnOnce(&mut dyn CongestionController),
    ) {
        let cwnd_before = self.inner.window();
        let backlog_before = self.inner.probe().backlog_segments;
        f(&mut *self.inner);
        let change = WindowChange {
            at: now,
            cause,
            cwnd_before,
            cwnd_after: self.inner.window(),
            ssthresh_after: self.inner.ssthresh(),
            backlog_before,
            probe_after: self.inner.probe(),
        };
        if cause != "update" || change.cwnd_after != cwnd_before {
            self.log.lock().unwrap().push(change);
        }
    }
}

impl CongestionController for Logged {
    fn on_sent(&mut self, now: Instant, bytes: u64, in_flight: u64) {
        self.inner.on_sent(now, bytes, in_flight);
    }
    fn on_ack(&mut self, now: Instant, ack: &AckEvent) {
        if !ack.in_recovery {
            self.acks
                .lock()
                .unwrap()
                .push((ack.high_data, ack.app_limited));
        }
        self.inner.on_ack(now, ack);
    }
    fn on_congestion_event(&mut self, now: Instant, ev: &CongestionEvent<'_>) {
        let cause = match ev.kind {
            CongestionKind::FastRetransmit => "fast",
            CongestionKind::Timeout { .. } => "timeout",
            CongestionKind::Ecn => "ecn",
        };
        self.record(now, cause, |c| c.on_congestion_event(now, ev));
    }
    fn on_loss_update(&mut self, now: Instant, loss: &LossView<'_>) {
        self.record(now, "update", |c| c.on_loss_update(now, loss));
    }
    fn on_recovery_exit(&mut self, now: Instant, exit: &RecoveryExit) {
        self.inner.on_recovery_exit(now, exit);
    }
    fn window(&self) -> u64 {
        self.inner.window()
    }
    fn ssthresh(&self) -> u64 {
        self.inner.ssthresh()
    }
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn probe(&self) -> ControllerProbe {
        self.inner.probe()
    }
    fn on_rate_sample(&mut self, now: Instant, rs: &RateSample) {
        self.samples.lock().unwrap().push((now, *rs));
        self.inner.on_rate_sample(now, rs);
        self.probes.lock().unwrap().push((now, self.inner.probe()));
    }
    fn pacing_rate(&self) -> Option<u64> {
        self.inner.pacing_rate()
    }
    fn send_quantum(&self) -> u64 {
        self.inner.send_quantum()
    }
    fn marks_app_limited(&self) -> bool {
        self.inner.marks_app_limited()
    }
    fn owns_recovery_window(&self) -> bool {
        self.inner.owns_recovery_window()
    }
}

/// Builds [`Logged`] controllers sharing one log.
#[derive(Debug, Default)]
pub struct LoggedFactory {
    pub cfg: CongestionConfig,
    pub log: Arc<Mutex<Vec<WindowChange>>>,
    pub acks: Arc<Mutex<Vec<AckSeen>>>,
    /// Every rate sample the controller was given.
    pub samples: Arc<Mutex<Vec<(Instant, RateSample)>>>,
    /// The controller's probe after each rate sample.
    pub probes: Arc<Mutex<Vec<(Instant, ControllerProbe)>>>,
    /// Builds this instead of `cfg` when set.
    pub custom: Option<Arc<dyn ControllerFactory>>,
}

impl ControllerFactory for LoggedFactory {
    fn build(&self, now: Instant, init: &ControllerInit) -> Box<dyn CongestionController> {
        let inner = match &self.custom {
            Some(f) => f.build(now, init),
            None => self.cfg.build(now, init),
        };
        Box::new(Logged {
            inner,
            log: self.log.clone(),
            acks: self.acks.clone(),
            samples: self.samples.clone(),
            probes: self.probes.clone(),
        })
    }
}

impl Pair {
    /// Replaces the server (the sender of a download) by one whose controller logs its loss
    /// reactions and ACKs; returns the logs.
    pub fn log_server(&mut self, cfg: TcpConfig) -> Arc<LoggedFactory> {
        let factory = Arc::new(LoggedFactory {
            cfg: cfg.congestion.clone(),
            ..LoggedFactory::default()
        });
        self.server = TcpEndpoint::with_controller(cfg, Role::Server, factory.clone());
        factory
    }

    /// Like [`log_server`](Self::log_server) with the controllers `custom` builds.
    pub fn log_server_with(
        &mut self,
        cfg: TcpConfig,
        custom: Arc<dyn ControllerFactory>,
    ) -> Arc<LoggedFactory> {
        let factory = Arc::new(LoggedFactory {
            cfg: cfg.congestion.clone(),
            custom: Some(custom),
            ..LoggedFactory::default()
        });
        self.server = TcpEndpoint::with_controller(cfg, Role::Server, factory.clone());
        factory
    }
}
