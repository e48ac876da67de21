//! The DCCP endpoint: a sans-IO state machine for simulation.
//!
//! # Rules of the state machine
//!
//! 1. **Sequence space.** ISS = 0 on both sides; every packet, pure Acks included, takes the
//!    next sequence number. Ack Number = GSR (greatest sequence number received). A packet
//!    whose Ack Number exceeds our GSS is invalid: counted and dropped (RFC 4340 would answer
//!    with Sync, not modelled).
//! 2. **Handshake.** `connect` queues a Request (carrying the CCID); the server answers
//!    Response and enters RESPOND; the client answers Ack, emits `Connected` and is in PARTOPEN,
//!    where every packet carries an Ack (data as DataAck) and the Ack is repeated on a backed-off
//!    timer until any packet other than a Response arrives (→ OPEN). The server is OPEN (and
//!    emits `Connected`) on the first packet acknowledging its Response. Requests are repeated
//!    on a backed-off timer, each with a new sequence number; a repeated Request gets a new
//!    Response.
//! 3. **Sending** (one packet per `poll_transmit`, in this order): queued control packets;
//!    the receiver half's Ack (CCID 2: after Ack Ratio data packets or `ack_delay`, with an Ack
//!    Vector) or feedback (CCID 3); one data packet if the application has one and the CCID
//!    allows it (CCID 2: pipe < cwnd; CCID 3: now ≥ t_nom); a Close once the application
//!    closed and its queue is empty. Data is never retransmitted. A CCID-2 sender piggybacks
//!    the Ack Number (DataAck) whenever it received packets since its last Ack Number; that is
//!    the Ack-of-Ack which lets the receiver trim its Ack Vector state. A CCID-3 sender sends
//!    plain Data. Every packet carries an NDP Count of the non-data packets just before it.
//! 4. **Receiving data.** Delivered at once, in arrival order (`Delivered` per packet, with the
//!    iperf header); duplicates (CCID 2 knows them from its Ack Vector state) are dropped.
//!    Losses are counted iperf-style on data sequence numbers (gap minus NDP Count; a late
//!    packet counts as out of order).
//! 5. **Application.** Packets offered faster than the CCID allows wait in a queue of
//!    `queue_capacity`; when full, `queue_policy` blocks the application, drops the oldest or
//!    drops the offered packet (counted). Each offered packet gets the next iperf id (from 1)
//!    and its offer time as iperf timestamp; a packet dropped from the queue leaves a gap in
//!    the ids, so the peer's iperf accounting sees it as lost.
//! 6. **Closing.** `close` stops the source; after the queue drains a Close goes out (repeated
//!    on a backed-off timer); the peer answers Reset and emits `PeerClosed` and `Closed`; the
//!    closer emits `Closed` on the Reset. An unexpected Reset emits `Reset`. No TIME-WAIT timer.
//! 7. **Robustness.** Network input never panics: malformed Ack Vectors, impossible Ack Numbers,
//!    unknown CCIDs and packets that do not fit the state are counted in `invalid_packets`.
//!
//! # References and deviations
//! RFC 4340 (core), 4341 (CCID 2), 4342 and 5348 (CCID 3); spec `models.md` D.7; deviations of
//! the CCIDs are tabled in [`super::ccid2`], [`super::ccid3`] and [`super::ackvec`].
//!
//! | topic | RFC 4340 | here |
//! |---|---|---|
//! | feature negotiation | Change/Confirm options for every feature | only the CCID (in Request/Response) and Ack Ratio (Change L, sent when it changes); one CCID for both directions |
//! | Sync/SyncAck, sequence validity windows, CloseReq, service codes, checksums, ECN | specified | not modelled (service code bytes are counted in the size) |
//! | ISS | random | 0 |
//! | Request timer | back-off, give up eventually | back-off, never gives up |
//! | TIMEWAIT | 2 MSL | untimed: a closed endpoint answers a repeated Close with Reset |

use super::ackvec::AckVectorBuffer;
use super::ccid2::Ccid2Sender;
use super::ccid3::{Ccid3Receiver, Ccid3Sender};
use super::packet::{AppHeader, DccpPacket, PacketType, TfrcFeedback};
use super::{Ccid, DccpApp, DccpConfig, QueuePolicy};
use crate::endpoint::Role;
use crate::udp::MediaSource;
use airlink_engine::{Duration, Instant};
use std::collections::VecDeque;

/// Longest interval between retransmitted Requests, PARTOPEN Acks and Closes.
const MAX_CONTROL_BACKOFF: Duration = Duration::from_secs(64);

/// Connection state (RFC 4340 §8.4 names; TIMEWAIT and CLOSED merged).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DccpState {
    Closed,
    Listen,
    Request,
    Respond,
    PartOpen,
    Open,
    Closing,
}

/// Something the application should know.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DccpEvent {
    /// The handshake completed.
    Connected,
    /// A data packet reached the application.
    Delivered {
        seq: u64,
        bytes: u32,
        app: Option<AppHeader>,
    },
    /// The peer closed the connection.
    PeerClosed,
    /// The connection is finished.
    Closed,
    /// The peer reset the connection unexpectedly.
    Reset,
}

/// Counters of one endpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DccpStats {
    pub packets_sent: u64,
    pub data_packets_sent: u64,
    pub payload_bytes_sent: u64,
    /// IP bytes of everything sent.
    pub wire_bytes_sent: u64,
    /// Pure Acks sent (receiver half).
    pub acks_sent: u64,
    pub packets_received: u64,
    pub data_packets_received: u64,
    /// Payload bytes delivered to the application.
    pub payload_bytes_delivered: u64,
    /// Data packets missing from the data sequence (gap − NDP Count), iperf-style.
    pub data_lost: u64,
    /// Data packets that arrived below the highest data sequence number seen.
    pub data_out_of_order: u64,
    pub duplicates: u64,
    /// Packets the application offered (sent, queued or dropped).
    pub app_offered: u64,
    /// Packets dropped from or refused by the full send queue.
    pub queue_drops: u64,
    /// Malformed or unexpected packets, counted and ignored.
    pub invalid_packets: u64,
}

impl DccpStats {
    /// iperf's reported loss: lost − out_of_order when larger, else lost.
    pub fn reported_lost(&self) -> u64 {
        if self.data_lost > self.data_out_of_order {
            self.data_lost - self.data_out_of_order
        } else {
            self.data_lost
        }
    }
}

/// A snapshot of the congestion state for time series.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CcidState {
    pub ccid: Option<Ccid>,
    /// CCID 2: window, packets.
    pub cwnd: Option<u32>,
    pub ssthresh: Option<u32>,
    pub pipe: Option<u32>,
    pub ack_ratio: Option<u16>,
    /// CCID 3: allowed sending rate X, bit/s.
    pub rate_bps: Option<f64>,
    /// CCID 3 sender: latest X_recv, bit/s.
    pub x_recv_bps: Option<f64>,
    /// CCID 3 sender: latest p received.
    pub p: Option<f64>,
    /// Sender RTT estimate (CCID 2: SRTT; CCID 3: R).
    pub rtt: Option<Duration>,
    /// CCID 3 receiver: current p and its X_recv, bit/s.
    pub rx_p: Option<f64>,
    pub rx_x_recv_bps: Option<f64>,
    /// CCID 2 sender: data packets found lost from Ack Vectors.
    pub lost_packets: u64,
    /// CCID 3 receiver: loss events detected.
    pub loss_events: u64,
}

#[derive(Clone, Debug)]
enum Tx {
    Two(Ccid2Sender),
    Three(Ccid3Sender),
}

#[derive(Clone, Debug)]
enum Rx {
    Two {
        buf: AckVectorBuffer,
        unacked: u32,
        ratio: u16,
        ack_at: Option<Instant>,
    },
    Three(Ccid3Receiver),
}

/// A simulated DCCP endpoint (sans-IO).
///
/// # Driver contract
/// As [`crate::TcpEndpoint`]: inputs [`connect`](Self::connect), [`send`](Self::send),
/// [`close`](Self::close), [`handle_packet`](Self::handle_packet),
/// [`handle_timeout`](Self::handle_timeout), each with a monotone `now`; after every input call
/// [`poll_transmit`](Self::poll_transmit) until `None`, re-read
/// [`poll_timeout`](Self::poll_timeout) and drain [`poll_event`](Self::poll_event). A
/// configured source or greedy application needs no `send` calls: its packets appear at the
/// deadlines `poll_timeout` reports.
#[derive(Clone, Debug)]
pub struct DccpEndpoint {
    cfg: DccpConfig,
    role: Role,
    state: DccpState,
    ccid: Option<Ccid>,
    next_seq: u64,
    gss: Option<u64>,
    gsr: Option<u64>,
    gsr_at: Instant,
    ack_pending: bool,
    ndp: u32,
    tx: Option<Tx>,
    rx: Option<Rx>,
    ctl: VecDeque<PacketType>,
    /// Retransmission of Request, PARTOPEN Ack or Close: (deadline, current timeout).
    ctl_timer: Option<(Instant, Duration)>,
    response_seq: Option<u64>,
    source: Option<MediaSource>,
    queue: VecDeque<(u32, AppHeader)>,
    next_app_id: u64,
    last_enqueue: Instant,
    closing: bool,
    close_sent: bool,
    rx_high_data: Option<u64>,
    events: VecDeque<DccpEvent>,
    stats: DccpStats,
}

impl DccpEndpoint {
    /// A client (closed until `connect`) or a listening server.
    ///
    /// # Panics
    /// If `cfg` fails [`DccpConfig::validate`] (local misuse).
    pub fn new(cfg: DccpConfig, role: Role) -> Self {
        if let Err(e) = cfg.validate() {
            panic!("invalid DccpConfig: {e}");
        }
        let source = match &cfg.app {
            DccpApp::Source(s) => MediaSource::new(s.clone()).ok(),
            _ => None,
        };
        DccpEndpoint {
            role,
            state: match role {
                Role::Client => DccpState::Closed,
                Role::Server => DccpState::Listen,
            },
            ccid: None,
            next_seq: 0,
            gss: None,
            gsr: None,
            gsr_at: Instant::ZERO,
            ack_pending: false,
            ndp: 0,
            tx: None,
            rx: None,
            ctl: VecDeque::new(),
            ctl_timer: None,
            response_seq: None,
            source,
            queue: VecDeque::new(),
            next_app_id: 1,
            last_enqueue: Instant::ZERO,
            closing: false,
            close_sent: false,
            rx_high_data: None,
            events: VecDeque::new(),
            stats: DccpStats::default(),
            cfg,
        }
    }

    // ------------------------------------------------------------------ application inputs

    /// Client: queue the Request. Ignored on a server or when not closed.
    pub fn connect(&mut self, now: Instant) {
        if self.role == Role::Client && self.state == DccpState::Closed && !self.closing {
            self.state = DccpState::Request;
            self.ctl.push_back(PacketType::Request);
            self.ctl_timer = Some((now + self.cfg.request_timeout, self.cfg.request_timeout));
        }
    }

    /// The application offers one packet of `payload` bytes. Returns false if it was not
    /// taken: after `close`, a zero size, or a full queue under [`QueuePolicy::Block`] (the
    /// application should retry later). Under the drop policies it returns true and a drop is
    /// counted when the queue was full.
    pub fn send(&mut self, now: Instant, payload: u32) -> bool {
        if self.closing || payload == 0 {
            return false;
        }
        if self.queue.len() >= self.cfg.queue_capacity
            && self.cfg.queue_policy == QueuePolicy::Block
        {
            return false;
        }
        self.offer(now, payload);
        true
    }

    fn offer(&mut self, at: Instant, payload: u32) {
        let hdr = AppHeader {
            id: self.next_app_id,
            sent_at: at,
        };
        self.next_app_id += 1;
        self.stats.app_offered += 1;
        if self.queue.len() >= self.cfg.queue_capacity {
            self.stats.queue_drops += 1;
            match self.cfg.queue_policy {
                QueuePolicy::DropNewest => return,
                _ => {
                    self.queue.pop_front();
                }
            }
        }
        self.queue.push_back((payload, hdr));
        self.last_enqueue = at;
    }

    /// Moves the source's packets due by `now` into the queue.
    fn feed_source(&mut self, now: Instant) {
        while let Some(due) = self.source.as_ref().and_then(|s| s.next_due()) {
            if due > now {
                break;
            }
            let full = self.queue.len() >= self.cfg.queue_capacity;
            if full && self.cfg.queue_policy == QueuePolicy::Block {
                break;
            }
            let Some((due, len)) = self.source.as_mut().and_then(|s| s.pop(now)) else {
                break;
            };
            // A blocked writer stamps the packet when its previous write returned.
            let stamp = due.max(self.last_enqueue);
            self.offer(stamp, len);
        }
    }

    /// The application is done: stop the source, send what is queued, then Close.
    pub fn close(&mut self, now: Instant) {
        if self.closing {
            return;
        }
        self.closing = true;
        self.source = None;
        if matches!(
            self.state,
            DccpState::Request | DccpState::Respond | DccpState::Listen
        ) {
            self.finish(now);
        }
    }

    fn finish(&mut self, _now: Instant) {
        if self.state != DccpState::Closed {
            self.state = DccpState::Closed;
            self.events.push_back(DccpEvent::Closed);
        }
        self.ctl_timer = None;
    }

    // ------------------------------------------------------------------ outputs and queries

    pub fn state(&self) -> DccpState {
        self.state
    }
    pub fn role(&self) -> Role {
        self.role
    }
    /// The negotiated CCID (`None` before the handshake).
    pub fn ccid(&self) -> Option<Ccid> {
        self.ccid
    }
    pub fn stats(&self) -> &DccpStats {
        &self.stats
    }
    pub fn config(&self) -> &DccpConfig {
        &self.cfg
    }
    /// Packets waiting in the send queue.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }
    pub fn ccid2_sender(&self) -> Option<&Ccid2Sender> {
        match &self.tx {
            Some(Tx::Two(c)) => Some(c),
            _ => None,
        }
    }
    pub fn ccid3_sender(&self) -> Option<&Ccid3Sender> {
        match &self.tx {
            Some(Tx::Three(c)) => Some(c),
            _ => None,
        }
    }
    pub fn ccid3_receiver(&self) -> Option<&Ccid3Receiver> {
        match &self.rx {
            Some(Rx::Three(c)) => Some(c),
            _ => None,
        }
    }

    /// Congestion state for time series.
    pub fn ccid_state(&self) -> CcidState {
        let mut s = CcidState {
            ccid: self.ccid,
            ..Default::default()
        };
        match &self.tx {
            Some(Tx::Two(c)) => {
                s.cwnd = Some(c.cwnd());
                s.ssthresh = Some(c.ssthresh());
                s.pipe = Some(c.pipe());
                s.ack_ratio = Some(c.ack_ratio());
                s.rtt = c.srtt();
                s.lost_packets = c.stats().lost_packets;
            }
            Some(Tx::Three(c)) => {
                s.rate_bps = Some(c.rate() * 8.0);
                s.x_recv_bps = Some(c.x_recv() * 8.0);
                s.p = Some(c.p());
                s.rtt = c.rtt();
            }
            None => {}
        }
        if let Some(Rx::Three(r)) = &self.rx {
            s.rx_p = Some(r.p());
            s.rx_x_recv_bps = Some(r.x_recv() * 8.0);
            s.loss_events = r.stats().loss_events;
        }
        s
    }

    pub fn poll_event(&mut self) -> Option<DccpEvent> {
        self.events.pop_front()
    }

    fn established(&self) -> bool {
        matches!(
            self.state,
            DccpState::PartOpen | DccpState::Open | DccpState::Closing
        )
    }

    fn has_data(&self) -> bool {
        !self.queue.is_empty() || (!self.closing && matches!(self.cfg.app, DccpApp::Greedy { .. }))
    }

    fn may_send_data(&self) -> bool {
        matches!(self.state, DccpState::PartOpen | DccpState::Open) && !self.close_sent
    }

    /// The earliest instant something is due: retransmission of handshake or Close, CCID
    /// timers, the receiver's Ack delay or feedback, CCID-3 pacing, the source's next packet.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut t: Option<Instant> = self.ctl_timer.map(|(at, _)| at);
        let mut add = |x: Option<Instant>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        };
        if self.established() {
            match &self.tx {
                Some(Tx::Two(c)) => add(c.poll_timeout()),
                Some(Tx::Three(c)) => {
                    add(c.poll_timeout());
                    if self.may_send_data() && self.has_data() {
                        add(Some(c.next_send()));
                    }
                }
                None => {}
            }
            match &self.rx {
                Some(Rx::Two {
                    ack_at, unacked, ..
                }) if *unacked > 0 => add(*ack_at),
                Some(Rx::Three(r)) => add(r.poll_timeout()),
                _ => {}
            }
        }
        if let Some(src) = &self.source {
            let room = self.queue.len() < self.cfg.queue_capacity
                || self.cfg.queue_policy != QueuePolicy::Block;
            if room {
                add(src.next_due());
            }
        }
        t
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some((at, timeout)) = self.ctl_timer {
            if at <= now {
                // RFC 4340 §8.1.1: back off, but to no less than one packet every 64 s.
                let next = timeout.saturating_mul(2).min(MAX_CONTROL_BACKOFF);
                self.ctl_timer = Some((now + next, next));
                match self.state {
                    DccpState::Request => self.ctl.push_back(PacketType::Request),
                    DccpState::PartOpen => self.ctl.push_back(PacketType::Ack),
                    DccpState::Closing => self.ctl.push_back(PacketType::Close),
                    _ => self.ctl_timer = None,
                }
            }
        }
        if self.established() {
            match &mut self.tx {
                Some(Tx::Two(c)) => c.on_timeout(now),
                Some(Tx::Three(c)) => c.on_timeout(now),
                None => {}
            }
            if let Some(Rx::Three(r)) = &mut self.rx {
                r.on_timeout(now);
            }
        }
        self.feed_source(now);
    }

    // ------------------------------------------------------------------ network input

    fn open_ccid(&mut self, ccid: Ccid) {
        self.ccid = Some(ccid);
        let s = match self.cfg.app {
            DccpApp::Greedy { payload } => payload,
            _ => self.cfg.packet_size,
        };
        match ccid {
            Ccid::TcpLike => {
                self.tx = Some(Tx::Two(Ccid2Sender::new(self.cfg.ccid2.clone(), s)));
                self.rx = Some(Rx::Two {
                    buf: AckVectorBuffer::new(self.cfg.ack_vector_max),
                    unacked: 0,
                    ratio: 2,
                    ack_at: None,
                });
            }
            Ccid::Tfrc => {
                self.tx = Some(Tx::Three(Ccid3Sender::new(self.cfg.ccid3.clone(), s)));
                self.rx = Some(Rx::Three(Ccid3Receiver::new(self.cfg.ccid3.clone())));
            }
        }
    }

    fn invalid(&mut self) {
        self.stats.invalid_packets += 1;
    }

    /// A packet arrived from the peer.
    pub fn handle_packet(&mut self, now: Instant, pkt: &DccpPacket) {
        self.stats.packets_received += 1;
        if pkt.ack.is_some() != pkt.kind.has_ack()
            || pkt.ack.is_some_and(|a| self.gss.is_none_or(|g| a > g))
        {
            return self.invalid();
        }
        use DccpState as S;
        use PacketType as P;
        match (self.state, pkt.kind) {
            (S::Listen | S::Respond, P::Request) => {
                let Some(ccid) = pkt.ccid.and_then(Ccid::from_number) else {
                    return self.invalid();
                };
                if self.ccid.is_none() {
                    self.open_ccid(ccid);
                }
                self.state = S::Respond;
                self.note_seq(now, pkt.seq);
                self.ctl.push_back(P::Response);
                return;
            }
            (S::Request, P::Response) => {
                let Some(ccid) = pkt.ccid.and_then(Ccid::from_number) else {
                    return self.invalid();
                };
                self.open_ccid(ccid);
                self.note_seq(now, pkt.seq);
                self.state = S::PartOpen;
                self.ctl.push_back(P::Ack);
                self.ctl_timer = Some((now + self.cfg.partopen_timeout, self.cfg.partopen_timeout));
                self.events.push_back(DccpEvent::Connected);
                return;
            }
            (S::PartOpen, P::Response) => {
                self.note_seq(now, pkt.seq);
                self.ctl.push_back(P::Ack);
                return;
            }
            (S::Closed, P::Close) => {
                self.ctl.push_back(P::Reset);
                return;
            }
            (S::Closed | S::Listen | S::Request, _) => return self.invalid(),
            (_, P::Reset) => {
                if self.state == S::Closing {
                    self.finish(now);
                } else {
                    self.state = S::Closed;
                    self.ctl_timer = None;
                    self.events.push_back(DccpEvent::Reset);
                }
                return;
            }
            (_, P::Close) => {
                self.note_seq(now, pkt.seq);
                self.ctl.push_back(P::Reset);
                self.events.push_back(DccpEvent::PeerClosed);
                self.finish(now);
                return;
            }
            (_, P::Request | P::Response) => return self.invalid(),
            (S::Respond, _) => {
                if pkt.ack.is_some_and(|a| Some(a) >= self.response_seq) {
                    self.state = S::Open;
                    self.events.push_back(DccpEvent::Connected);
                } else {
                    return self.invalid();
                }
            }
            (S::PartOpen, _) => {
                self.state = S::Open;
                self.ctl_timer = None;
            }
            _ => {}
        }
        self.established_input(now, pkt);
    }

    fn note_seq(&mut self, now: Instant, seq: u64) {
        if self.gsr.is_none_or(|g| seq > g) {
            self.gsr = Some(seq);
            self.gsr_at = now;
        }
        self.ack_pending = true;
    }

    fn established_input(&mut self, now: Instant, pkt: &DccpPacket) {
        self.note_seq(now, pkt.seq);
        // The peer as receiver of our data: acknowledgements and feedback.
        match &mut self.tx {
            Some(Tx::Two(c)) if pkt.ack_vector.is_some() => match pkt.decoded_ack_vector() {
                Some(runs) => c.on_ack(now, pkt.seq, &runs),
                None => self.stats.invalid_packets += 1,
            },
            Some(Tx::Three(c)) => {
                if let (Some(fb), Some(a)) = (pkt.feedback, pkt.ack) {
                    c.on_feedback(now, a, fb.x_recv, fb.p, fb.elapsed);
                }
            }
            _ => {}
        }
        // The peer as sender of data: our receiver half.
        let data = pkt.kind.carries_data();
        let mut duplicate = false;
        match &mut self.rx {
            Some(Rx::Two {
                buf,
                unacked,
                ratio,
                ack_at,
            }) => {
                if let Some(a) = pkt.ack {
                    buf.on_ack_of_ack(a);
                }
                if let Some(r) = pkt.ack_ratio {
                    *ratio = r.max(1);
                }
                duplicate = !buf.record(pkt.seq);
                if data && !duplicate {
                    *unacked += 1;
                    if ack_at.is_none() {
                        *ack_at = Some(now + self.cfg.ccid2.ack_delay);
                    }
                }
            }
            Some(Rx::Three(r)) if data => {
                r.on_data(now, pkt.seq, pkt.ccval, pkt.payload, pkt.ndp_count)
            }
            _ => {}
        }
        if !data {
            return;
        }
        if duplicate {
            self.stats.duplicates += 1;
            return;
        }
        match self.rx_high_data {
            Some(h) if pkt.seq > h => {
                self.stats.data_lost += (pkt.seq - h - 1).saturating_sub(pkt.ndp_count as u64);
                self.rx_high_data = Some(pkt.seq);
            }
            Some(_) => self.stats.data_out_of_order += 1,
            None => self.rx_high_data = Some(pkt.seq),
        }
        self.stats.data_packets_received += 1;
        self.stats.payload_bytes_delivered += pkt.payload as u64;
        self.events.push_back(DccpEvent::Delivered {
            seq: pkt.seq,
            bytes: pkt.payload,
            app: pkt.app,
        });
    }

    // ------------------------------------------------------------------ transmission

    fn emit(&mut self, mut pkt: DccpPacket) -> DccpPacket {
        pkt.ndp_count = self.ndp;
        if pkt.kind.carries_data() {
            self.ndp = 0;
        } else {
            self.ndp = self.ndp.saturating_add(1);
        }
        if pkt.ack.is_some() {
            self.ack_pending = false;
        }
        self.gss = Some(pkt.seq);
        self.next_seq = pkt.seq + 1;
        self.stats.packets_sent += 1;
        self.stats.wire_bytes_sent += pkt.wire_len() as u64;
        pkt
    }

    fn control(&mut self, kind: PacketType) -> DccpPacket {
        let mut p = DccpPacket::new(kind, self.next_seq);
        if kind.has_ack() {
            p.ack = self.gsr;
        }
        match kind {
            PacketType::Request => p.ccid = Some(self.cfg.ccid.number()),
            PacketType::Response => {
                p.ccid = self.ccid.map(Ccid::number);
                self.response_seq = Some(p.seq);
            }
            PacketType::Close => {
                self.state = DccpState::Closing;
                self.close_sent = true;
            }
            _ => {}
        }
        p
    }

    /// The next packet to transmit now, if any.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<DccpPacket> {
        while let Some(kind) = self.ctl.pop_front() {
            // A packet needing an Ack Number can only go once something was received.
            if kind.has_ack() && self.gsr.is_none() {
                continue;
            }
            let p = self.control(kind);
            return Some(self.emit(p));
        }
        if !self.established() {
            return None;
        }
        if let Some(p) = self.receiver_ack(now) {
            self.stats.acks_sent += 1;
            return Some(self.emit(p));
        }
        if self.may_send_data() {
            self.feed_source(now);
            if let Some(p) = self.data_packet(now) {
                return Some(self.emit(p));
            }
        }
        if self.closing
            && !self.close_sent
            && self.queue.is_empty()
            && self.state == DccpState::Open
        {
            let p = self.control(PacketType::Close);
            self.ctl_timer = Some((now + self.cfg.request_timeout, self.cfg.request_timeout));
            return Some(self.emit(p));
        }
        None
    }

    fn receiver_ack(&mut self, now: Instant) -> Option<DccpPacket> {
        let seq = self.next_seq;
        let gsr = self.gsr?;
        let mut p = DccpPacket::new(PacketType::Ack, seq);
        p.ack = Some(gsr);
        match &mut self.rx {
            Some(Rx::Two {
                buf,
                unacked,
                ratio,
                ack_at,
            }) => {
                let due = *unacked >= *ratio as u32 || ack_at.is_some_and(|t| t <= now);
                if *unacked == 0 || !due {
                    return None;
                }
                let (ackno, v) = buf.build(seq)?;
                p.ack = Some(ackno);
                p.ack_vector = Some(v);
                *unacked = 0;
                *ack_at = None;
            }
            Some(Rx::Three(r)) => {
                let fb = r.poll_feedback(now)?;
                p.feedback = Some(TfrcFeedback {
                    x_recv: fb.x_recv,
                    p: fb.p,
                    elapsed: now.saturating_since(self.gsr_at),
                });
            }
            None => return None,
        }
        Some(p)
    }

    fn data_packet(&mut self, now: Instant) -> Option<DccpPacket> {
        if !self.has_data() {
            return None;
        }
        let allowed = match &self.tx {
            Some(Tx::Two(c)) => c.can_send(),
            Some(Tx::Three(c)) => now >= c.next_send(),
            None => false,
        };
        if !allowed {
            return None;
        }
        let (payload, app) = match self.queue.pop_front() {
            Some(q) => q,
            None => {
                let DccpApp::Greedy { payload } = self.cfg.app else {
                    return None;
                };
                let hdr = AppHeader {
                    id: self.next_app_id,
                    sent_at: now,
                };
                self.next_app_id += 1;
                self.stats.app_offered += 1;
                (payload, hdr)
            }
        };
        let seq = self.next_seq;
        let partopen = self.state == DccpState::PartOpen;
        let mut p = DccpPacket::new(PacketType::Data, seq);
        p.payload = payload;
        p.app = Some(app);
        match &mut self.tx {
            Some(Tx::Two(c)) => {
                c.on_sent(now, seq);
                p.ack_ratio = c.take_ack_ratio_change();
                if self.ack_pending || partopen {
                    p.kind = PacketType::DataAck;
                    p.ack = self.gsr;
                }
            }
            Some(Tx::Three(c)) => {
                p.ccval = c.on_sent(now, seq, payload);
                if partopen {
                    p.kind = PacketType::DataAck;
                    p.ack = self.gsr;
                }
            }
            None => return None,
        }
        self.stats.data_packets_sent += 1;
        self.stats.payload_bytes_sent += payload as u64;
        Some(p)
    }
}
