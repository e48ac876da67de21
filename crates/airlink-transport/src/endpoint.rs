//! The TCP endpoint: a sans-IO state machine for simulation.
//!
//! # Rules of the state machine
//!
//! 1. **Sequence space.** ISN = 0 on both sides. The SYN occupies 0, payload byte *i* (from 0)
//!    of the stream occupies 1 + *i*, the FIN occupies 1 + (bytes written). Sequence numbers
//!    are absolute `u64` and never wrap.
//! 2. **Handshake.** The client's `connect` queues a SYN; the server answers a SYN with a
//!    SYN-ACK; the client ACKs it. SMSS = min(`mss`, peer's MSS option − option overhead);
//!    SACK and timestamps are used iff both SYNs offered them. SYN and SYN-ACK are retransmitted
//!    on RTO with back-off; a duplicate SYN makes the server resend its SYN-ACK; a retransmitted
//!    SYN-ACK makes the client re-ACK. A retransmitted SYN gives no RTT sample (Karn) and data
//!    then starts with RTO ≥ 3 s (RFC 6298 (5.7)).
//! 3. **What may be sent** (one segment per `poll_transmit`, in this order):
//!    a forced retransmission (fast retransmit, NewReno partial ACK, RTO) regardless of cwnd;
//!    then, while pipe + len ≤ cwnd (+ NewReno inflation): in SACK recovery or after an RTO the
//!    lowest lost un-SACKed range above HighRxt (NextSeg rule 1), new data inside the peer's
//!    window (rule 2; segments shorter than SMSS only at the end of the data or if at least
//!    half the largest window offered — sender SWS avoidance), in SACK recovery the lowest
//!    un-SACKed range above HighRxt below the highest SACK (rule 3) and one rescue
//!    retransmission (rule 4); then a pure ACK if one is owed. Every segment after the SYN
//!    carries the current ACK, window and SACK blocks.
//! 4. **ACK processing order.** An ACK beyond SND.MAX is answered with an ACK and the segment is
//!    dropped. Otherwise: window update (SND.WL1/WL2 rule, RFC 9293); SACK blocks, clipped to
//!    [SND.UNA, SND.MAX), into the scoreboard; if SND.UNA advances: acknowledged records are
//!    removed, an RTT sample is taken from the oldest of them unless any was retransmitted
//!    (Karn; with timestamps from TSecr), recovery rules run, the RTO timer restarts (stops if
//!    nothing is outstanding), the controller sees `on_ack`; otherwise duplicate-ACK rules run.
//!    Last, if the ACK changed the scoreboard during SACK recovery, the controller sees
//!    `on_loss_update` (TCP-AFC looks for a second hole there).
//! 5. **Recovery states.** *Open*. *Fast* — without SACK: NewReno (RFC 6582) or Reno (RFC 5681),
//!    with cwnd inflation kept by the endpoint; with SACK: RFC 6675 (pipe, NextSeg, rescue).
//!    Entered on the DupThresh-th duplicate ACK (SACK: or when IsLost(SND.UNA)) if SND.UNA ≥
//!    `recover` (NewReno and SACK; Reno has no guard). *Loss* — after an RTO: everything sent
//!    before it counts as lost, go-back from SND.UNA skipping SACKed ranges, in slow start,
//!    until SND.UNA ≥ `recover`; no fast retransmit meanwhile.
//! 6. **Receiving.** In-order data is delivered at once (`Delivered`); out-of-order data is held
//!    in an interval set and reported in SACK blocks (most recent first). An ACK goes at once
//!    for out-of-order, hole-filling, duplicate or trimmed segments and for a FIN; otherwise on
//!    every `ack_every`-th data segment, or `delack_timeout` after the first unacknowledged one.
//! 7. **Timers** (RTO, delayed ACK, persist) expire at deadlines rounded up to `tick`.
//! 8. **Closing.** `close` queues a FIN after the data (on the last data segment if it fits).
//!    `PeerClosed` when the peer's FIN is consumed in order; `Closed` once our FIN is
//!    acknowledged and the peer's received. There is no TIME-WAIT timer: a closed endpoint keeps
//!    ACKing a retransmitted FIN and asks for no more timers; the driver drops it when done.
//! 9. **Robustness.** Network input never panics: impossible lengths are dropped and counted,
//!    SACK blocks are clipped, segments not fitting the state are ignored, RST closes.
//!
//! # References and deviations
//!
//! RFC 9293 (TCP), 5681 (congestion control), 6582 (NewReno), 2018/6675 (SACK), 6298 (RTO),
//! 7323 (timestamps), 3390 (IW); spec `models.md` D.1–D.3.
//!
//! | topic | reference | here |
//! |---|---|---|
//! | window accounting | RFC 5681 bytes | bytes; pipe per RFC 6675 for every state (no SACK: pipe = FlightSize, or go-back accounting after an RTO) |
//! | NewReno inflation | cwnd += SMSS per dup ACK, deflate on partial ACK | kept as a signed offset on the controller's window, so policies stay recovery-agnostic |
//! | after an RTO with SACK | RFC 6675 §5.1 allows keeping the scoreboard with a test for reneging | kept across every RTO: go-back skips SACKed ranges (spec D.3 (A)); cleared only when a cumulative ACK stops at SACKed data (the peer reneged, as Linux `tcp_check_sack_reneging`) |
//! | RTO timer on fast retransmit | RFC 6298 (5.1): start if not running | restarted when the fast retransmission leaves, as 4.4BSD, FreeBSD and Linux do |
//! | RTT sampling | RFC 6298: any valid sample | per ACK from the oldest newly acknowledged segment (Linux 2.4 without timestamps); none from SACKed data |
//! | delayed ACK | every 2nd *full-sized* segment | every `ack_every`-th data segment of any size; no Linux quick-ACK mode |
//! | dup ACK without SACK | RFC 5681 (a)–(e) | same, incl. "window unchanged" |
//! | ECN (RFC 3168) | — | in [`crate::ecn`] (its own rules and deviations), called at hooks here |
//! | limited transmit (RFC 3042), D-SACK, F-RTO, Nagle, TIME-WAIT, urgent data, window scaling | — | not modelled (without SACK no limited transmit; with SACK pipe excludes SACKed data, which has the same effect) |
//! | cwnd growth when cwnd is not in use | RFC 7661: not validated | Linux `tcp_is_cwnd_limited`: the controller is told an ACK is app-limited unless cwnd held the sender back in the last window or, in slow start, cwnd < 2 × the largest FlightSize of that window; a driver that stops polling (a device limit) counts as not cwnd-limited. No RFC 2861/7661 decay of an unused cwnd |
//! | persist timer | RFC 9293 | zero-window probe of one byte at RTO intervals, backed off |
//! | retries | RFC 9293 R2 | never gives up |

use crate::config::{initial_window_segments, Recovery, TcpConfig, TIMESTAMP_OPTION_LEN};
use crate::congestion::{
    AckEvent, CongestionController, CongestionEvent, CongestionKind, ControllerFactory,
    ControllerInit, LossView, RecoveryExit, RecoveryKind,
};
use crate::ecn::EcnState;
use crate::pacing::Pacer;
use crate::rate_sample::{CaState, RateSample, RateSampler, TxSnapshot};
use crate::recv::Receiver;
use crate::rtt::RttEstimator;
use crate::scoreboard::SackScoreboard;
use crate::segment::{Flags, SackBlocks, Segment};
use airlink_engine::{Duration, Instant};
use std::collections::VecDeque;
use std::sync::Arc;

/// Which end of a connection or flow: of an endpoint, of a flow's packets, of the host
/// (namespace) an application runs in. In airlink's flows the server sends the data.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// Active opener: sends the SYN on [`TcpEndpoint::connect`].
    Client,
    /// Passive opener: listens from creation.
    Server,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Server => "server",
        }
    }
}

/// RFC 9293 connection state, as observed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TcpState {
    Closed,
    Listen,
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    Closing,
    /// Both FINs exchanged, ours first (untimed: see rule 8).
    TimeWait,
    CloseWait,
    LastAck,
}

/// Something the application should know.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TcpEvent {
    /// The handshake completed.
    Connected,
    /// In-order payload reached the application (consecutive deliveries are merged until
    /// polled).
    Delivered { bytes: u64 },
    /// A valid RTT sample was taken.
    RttSample { rtt: Duration },
    /// The sender reacted to a loss.
    Congestion { kind: CongestionKind },
    /// The peer's FIN arrived in order: no more data will come.
    PeerClosed,
    /// Both directions are finished.
    Closed,
    /// The peer reset the connection.
    Reset,
}

/// Counters of one endpoint. "Segments" count everything incl. SYN/FIN/pure ACKs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpStats {
    pub segments_sent: u64,
    /// Segments carrying payload (incl. retransmissions).
    pub data_segments_sent: u64,
    /// Payload bytes sent, incl. retransmissions.
    pub bytes_sent: u64,
    /// Segments that carried nothing but an ACK.
    pub pure_acks_sent: u64,
    /// Retransmitted segments (data, FIN, SYN, SYN-ACK).
    pub retransmitted_segments: u64,
    /// Retransmitted payload bytes.
    pub bytes_retransmitted: u64,
    /// RTO expiries (incl. SYN).
    pub timeouts: u64,
    /// Fast-recovery episodes entered.
    pub fast_recoveries: u64,
    /// Duplicate ACKs received (RFC 5681 definition; with SACK: ACKs SACKing new data).
    pub dup_acks: u64,
    /// Payload bytes cumulatively acknowledged by the peer.
    pub bytes_acked: u64,
    pub segments_received: u64,
    /// Receiver: payload bytes delivered to the application in order.
    pub bytes_delivered: u64,
    /// Receiver: segments that arrived above a hole.
    pub out_of_order_segments: u64,
    /// Receiver: segments that carried nothing new.
    pub duplicate_segments: u64,
    /// Segments dropped: impossible fields, ACK of unsent data, wrong state, outside the window.
    pub dropped_segments: u64,
    pub rtt_samples: u64,
    /// Retransmissions found lost without a timeout (`TcpConfig::rack_lost_retransmit`; Linux
    /// `TCPLostRetransmit`).
    pub lost_retransmissions: u64,
    /// Receiver: data segments that arrived marked Congestion Experienced (ECN).
    pub ce_received: u64,
    /// Sender: window reductions made for an ECN-Echo (at most one per round trip).
    pub ecn_reductions: u64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Phase {
    Closed,
    Listen,
    SynSent,
    SynReceived,
    Synchronized,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum RecoveryState {
    Open,
    /// Fast recovery until the cumulative ACK reaches `point`.
    Fast {
        point: u64,
        kind: RecoveryKind,
        partial_seen: bool,
    },
    /// After an RTO, until SND.UNA ≥ `recover`.
    Loss,
}

/// One transmitted segment awaiting acknowledgment.
#[derive(Copy, Clone, Debug)]
struct SentSeg {
    seq: u64,
    len: u32,
    fin: bool,
    retransmitted: bool,
    /// First transmission (RTT samples, what an RTO spares).
    sent: Instant,
    /// Latest transmission (RACK's xmit_ts).
    last_sent: Instant,
    /// The connection's delivery state at the latest transmission (rate sampling).
    tx: TxSnapshot,
}

impl SentSeg {
    fn payload_end(&self) -> u64 {
        self.seq + self.len as u64
    }
    fn end(&self) -> u64 {
        self.payload_end() + self.fin as u64
    }
}

/// Proportional Rate Reduction (RFC 9937) over one SACK recovery episode, bytes.
#[derive(Copy, Clone, Debug)]
struct Prr {
    /// prr_delivered: data the receiver got since recovery began.
    delivered: u64,
    /// prr_out: data sent since recovery began.
    out: u64,
    /// RecoverFS: FlightSize at the start of recovery.
    recover_fs: u64,
    /// What this ACK allows to send (sndcnt), less what has been sent since.
    budget: u64,
}

/// ((scoreboard version, SND.UNA, l_rto), (L, SACKed bytes at or above L)).
type LossMemo = ((u64, u64, u64), (u64, u64));

/// Whether cwnd held the sender back, per window of data (Linux `tcp_cwnd_validate`: the
/// fields `is_cwnd_limited`, `max_packets_out`, `cwnd_usage_seq`, here in bytes).
#[derive(Copy, Clone, Debug, Default)]
struct CwndUse {
    /// cwnd held the sender back at some point of the window.
    limited: bool,
    /// The most bytes outstanding (FlightSize) after a send of the window.
    max_flight: u64,
    /// The window ends when SND.UNA reaches this (HighData when it began).
    end: u64,
}

/// A simulated TCP endpoint (sans-IO).
///
/// # Driver contract
///
/// - Inputs: [`connect`](Self::connect), [`send`](Self::send), [`close`](Self::close) from the
///   application; [`handle_segment`](Self::handle_segment) from the network;
///   [`handle_timeout`](Self::handle_timeout) when [`poll_timeout`](Self::poll_timeout) is due.
/// - After **every** input, call [`poll_transmit`](Self::poll_transmit) until it returns `None`
///   and transmit what it gives, then re-read [`poll_timeout`](Self::poll_timeout) (any input may
///   move it) and drain [`poll_event`](Self::poll_event) (events accumulate until polled).
/// - `now` must never decrease from one call to the next. Call `handle_timeout` at (or after)
///   the instant `poll_timeout` gave; calling it early is harmless.
/// - Nothing here reads a clock, draws random numbers, allocates per segment in steady state,
///   or panics on network input.
#[derive(Debug)]
pub struct TcpEndpoint {
    cfg: TcpConfig,
    role: Role,
    factory: Arc<dyn ControllerFactory>,
    phase: Phase,
    smss: u32,
    sack_ok: bool,
    ts_ok: bool,

    // --- sending
    /// One past the last byte the application wrote (1 + bytes written); the FIN's seq.
    app_end: u64,
    fin_queued: bool,
    snd_una: u64,
    /// HighData: next new sequence number.
    snd_max: u64,
    snd_wnd: u64,
    snd_wl1: u64,
    snd_wl2: u64,
    max_snd_wnd: u64,
    sent: VecDeque<SentSeg>,
    board: SackScoreboard,
    recovery: RecoveryState,
    /// RFC 6582 `recover` (exclusive: one past the highest byte sent at the last reduction).
    recover: u64,
    dupacks: u32,
    /// Everything below this counts as lost (set to HighData by an RTO).
    l_rto: u64,
    /// NewReno/Reno window inflation, bytes (signed: partial ACKs deflate).
    inflation: i64,
    rescue_rxt: Option<u64>,
    /// A retransmission owed regardless of cwnd.
    pending_rexmit: Option<u64>,
    /// Latest (re)transmission time among the segments SACKed so far (RFC 8985 RACK.xmit_ts).
    rack_xmit: Instant,
    /// The RTT of that segment, measured when its SACK arrived (RFC 8985 RACK.rtt).
    rack_rtt: Option<Duration>,
    /// With `rack_lost_retransmit`: retransmissions in the order they left (time, sequence
    /// number), until judged delivered or lost.
    rexmits: VecDeque<(Instant, u64)>,
    /// Retransmissions judged lost, to send again (lowest first).
    lost_rexmits: VecDeque<u64>,
    probe_pending: bool,
    syn_pending: bool,
    syn_sent_at: Option<Instant>,
    syn_retransmitted: bool,
    consecutive_rtos: u32,
    /// RFC 9937 (PRR) state of the current SACK recovery, when `prr` is on.
    prr: Option<Prr>,
    /// Data segments still to be acknowledged at once (quick-ACK mode).
    quickacks_left: u32,
    cwnd_use: CwndUse,
    /// Our FIN left before the peer's arrived (active close: TIME-WAIT, not CLOSED, at the end).
    closing_first: bool,
    rtt: RttEstimator,
    cc: Box<dyn CongestionController>,
    rto_at: Option<Instant>,
    persist_at: Option<Instant>,
    persist_backoff: u32,

    /// Memo of the loss boundary: ((scoreboard version, SND.UNA, l_rto), result).
    loss_memo: std::cell::Cell<LossMemo>,
    /// SACK blocks of the previous ACK, as received: a block repeated verbatim is already in
    /// the scoreboard (most blocks of an ACK are repeats, RFC 2018 §4).
    last_sack: SackBlocks,

    /// Delivery-rate sampling (`rate_sample`), kept for every controller.
    rate: RateSampler,
    /// Sequence number below which every un-SACKed byte has been counted as lost.
    lost_upto: u64,
    /// The pacer (`pacing`); untouched while the controller gives no pacing rate.
    pacer: Pacer,
    /// The pacer holds back a segment until then.
    pace_at: Option<Instant>,
    /// ECN (RFC 3168), both directions (`ecn`).
    ecn: EcnState,

    // --- receiving
    rcv: Receiver,
    delack_at: Option<Instant>,

    // --- outputs
    events: VecDeque<TcpEvent>,
    stats: TcpStats,
    closed_emitted: bool,
}

impl TcpEndpoint {
    /// A client (closed until `connect`) or a listening server.
    ///
    /// # Panics
    /// If `cfg` fails [`TcpConfig::validate`] (local misuse).
    pub fn new(cfg: TcpConfig, role: Role) -> Self {
        let factory: Arc<dyn ControllerFactory> = Arc::new(cfg.congestion.clone());
        Self::with_controller(cfg, role, factory)
    }

    /// Like [`new`](Self::new) with a custom congestion controller factory (`cfg.congestion`
    /// is then unused).
    pub fn with_controller(
        cfg: TcpConfig,
        role: Role,
        factory: Arc<dyn ControllerFactory>,
    ) -> Self {
        if let Err(e) = cfg.validate() {
            panic!("invalid TcpConfig: {e}");
        }
        let smss = cfg.mss;
        let cc = factory.build(Instant::ZERO, &controller_init(&cfg, smss));
        let rtt = RttEstimator::new(
            cfg.rto_init,
            cfg.rto_min,
            cfg.rto_max,
            cfg.clock_granularity,
        );
        TcpEndpoint {
            role,
            factory,
            phase: if role == Role::Server {
                Phase::Listen
            } else {
                Phase::Closed
            },
            smss,
            sack_ok: false,
            ts_ok: false,
            app_end: 1,
            fin_queued: false,
            snd_una: 0,
            snd_max: 0,
            snd_wnd: 0,
            snd_wl1: 0,
            snd_wl2: 0,
            max_snd_wnd: 0,
            sent: VecDeque::new(),
            board: SackScoreboard::new(),
            recovery: RecoveryState::Open,
            recover: 0,
            dupacks: 0,
            l_rto: 0,
            inflation: 0,
            rescue_rxt: None,
            pending_rexmit: None,
            rack_xmit: Instant::ZERO,
            rack_rtt: None,
            rexmits: VecDeque::new(),
            lost_rexmits: VecDeque::new(),
            probe_pending: false,
            syn_pending: false,
            syn_sent_at: None,
            syn_retransmitted: false,
            consecutive_rtos: 0,
            prr: None,
            quickacks_left: cfg.quickack_segments,
            cwnd_use: CwndUse::default(),
            closing_first: false,
            rtt,
            cc,
            rto_at: None,
            persist_at: None,
            persist_backoff: 0,
            loss_memo: std::cell::Cell::new(((u64::MAX, 0, 0), (0, 0))),
            last_sack: SackBlocks::new(),
            rate: RateSampler::default(),
            lost_upto: 0,
            pacer: Pacer::default(),
            pace_at: None,
            ecn: EcnState::new(cfg.ecn),
            rcv: Receiver::new(cfg.rwnd),
            delack_at: None,
            events: VecDeque::new(),
            stats: TcpStats::default(),
            closed_emitted: false,
            cfg,
        }
    }

    // ------------------------------------------------------------------ application inputs

    /// Client: queue the SYN. Ignored on a server or when already connecting.
    pub fn connect(&mut self, _now: Instant) {
        if self.role == Role::Client && self.phase == Phase::Closed && !self.closed_emitted {
            self.phase = Phase::SynSent;
            self.syn_pending = true;
        }
    }

    /// The application writes `bytes` more bytes (simulated payload). Ignored after `close`.
    pub fn send(&mut self, _now: Instant, bytes: u64) {
        if !self.fin_queued {
            self.app_end = self.app_end.saturating_add(bytes);
        }
    }

    /// The application has nothing more to write: a FIN follows the data.
    pub fn close(&mut self, _now: Instant) {
        self.fin_queued = true;
    }

    /// The application stops its stream where it stands: data written but never sent is
    /// withdrawn (what was sent is still delivered, retransmitted if need be), then a FIN.
    pub fn stop(&mut self, now: Instant) {
        self.app_end = self.app_end.min(self.snd_max.max(1));
        self.close(now);
    }

    // ------------------------------------------------------------------ outputs and queries

    /// The earliest instant a timer is due (RTO, delayed ACK, persist, pacing), if any.
    pub fn poll_timeout(&self) -> Option<Instant> {
        [self.rto_at, self.delack_at, self.persist_at, self.pace_at]
            .into_iter()
            .flatten()
            .min()
    }

    pub fn poll_event(&mut self) -> Option<TcpEvent> {
        self.events.pop_front()
    }

    pub fn stats(&self) -> &TcpStats {
        &self.stats
    }

    /// Congestion window, bytes (the controller's; NewReno inflation not included).
    pub fn cwnd(&self) -> u64 {
        self.cc.window()
    }

    pub fn ssthresh(&self) -> u64 {
        self.cc.ssthresh()
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }

    /// Current retransmission timeout, back-off included.
    pub fn rto(&self) -> Duration {
        self.rtt.rto()
    }

    /// RFC 6675 pipe: bytes the sender believes are in the network.
    pub fn bytes_in_flight(&self) -> u64 {
        self.pipe()
    }

    /// The SMSS in use (negotiated once connected).
    pub fn smss(&self) -> u32 {
        self.smss
    }

    /// Whether SACK was negotiated.
    pub fn sack_enabled(&self) -> bool {
        self.sack_ok
    }

    /// Whether ECN was negotiated.
    pub fn ecn_enabled(&self) -> bool {
        self.ecn.negotiated()
    }

    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }

    /// The last ACK's delivery-rate sample.
    pub fn rate_sample(&self) -> &RateSample {
        self.rate.last()
    }

    /// Payload bytes the peer reported received (cumulatively or by SACK) so far.
    pub fn delivered_bytes(&self) -> u64 {
        self.rate.delivered
    }

    /// Payload bytes marked lost so far.
    pub fn lost_bytes(&self) -> u64 {
        self.rate.lost
    }

    /// The controller's pacing rate, payload bytes per second (`None`: not pacing).
    pub fn pacing_rate(&self) -> Option<u64> {
        self.cc.pacing_rate()
    }

    /// The congestion controller (read-only).
    pub fn controller(&self) -> &dyn CongestionController {
        &*self.cc
    }

    /// The SACK scoreboard (read-only).
    pub fn scoreboard(&self) -> &SackScoreboard {
        &self.board
    }

    /// Payload bytes written by the application and not yet cumulatively acknowledged.
    pub fn unacked_bytes(&self) -> u64 {
        self.app_end.saturating_sub(self.snd_una.max(1))
    }

    pub fn state(&self) -> TcpState {
        match self.phase {
            Phase::Closed => TcpState::Closed,
            Phase::Listen => TcpState::Listen,
            Phase::SynSent => TcpState::SynSent,
            Phase::SynReceived => TcpState::SynReceived,
            Phase::Synchronized => {
                let (ours_sent, ours_acked, theirs) =
                    (self.fin_sent(), self.fin_acked(), self.rcv.fin_received);
                match (ours_sent, ours_acked, theirs) {
                    (false, _, false) => TcpState::Established,
                    (false, _, true) => TcpState::CloseWait,
                    (true, false, false) => TcpState::FinWait1,
                    (true, true, false) => TcpState::FinWait2,
                    (true, false, true) if self.fin_closed_first() => TcpState::Closing,
                    (true, false, true) => TcpState::LastAck,
                    (true, true, true) if self.fin_closed_first() => TcpState::TimeWait,
                    (true, true, true) => TcpState::Closed,
                }
            }
        }
    }

    fn fin_sent(&self) -> bool {
        self.fin_queued && self.snd_max > self.app_end
    }

    fn fin_acked(&self) -> bool {
        self.fin_queued && self.snd_una > self.app_end
    }

    /// We sent our FIN before the peer's arrived (active close).
    fn fin_closed_first(&self) -> bool {
        self.closing_first
    }

    // ------------------------------------------------------------------ network input

    /// A segment arrived from the peer.
    pub fn handle_segment(&mut self, now: Instant, seg: &Segment) {
        self.stats.segments_received += 1;
        // Lengths that would overflow sequence arithmetic cannot come from a real peer.
        if seg.seq > u64::MAX / 2 || seg.ack > u64::MAX / 2 {
            self.stats.dropped_segments += 1;
            return;
        }
        match self.phase {
            Phase::Closed => {
                self.stats.dropped_segments += 1;
                return;
            }
            Phase::Listen => {
                if seg.flags.syn && !seg.flags.ack && !seg.flags.rst {
                    self.accept_syn(now, seg);
                } else {
                    self.stats.dropped_segments += 1;
                }
                return;
            }
            Phase::SynSent => {
                if seg.flags.rst {
                    if seg.flags.ack && seg.ack == self.snd_max {
                        self.reset();
                    }
                    return;
                }
                if !(seg.flags.syn && seg.flags.ack && seg.ack == 1) {
                    // Simultaneous open is not supported.
                    self.stats.dropped_segments += 1;
                    return;
                }
                self.negotiate(now, seg);
                self.rcv.init(seg.seq);
                self.establish(now);
                self.snd_wnd = seg.wnd as u64;
                self.max_snd_wnd = self.snd_wnd;
                self.snd_wl1 = seg.seq;
                self.snd_wl2 = seg.ack;
                self.rcv.ack_pending = true;
                return;
            }
            Phase::SynReceived => {
                if seg.flags.rst {
                    self.reset();
                    return;
                }
                if seg.flags.syn {
                    if !seg.flags.ack && seg.seq + 1 == self.rcv.rcv_nxt {
                        // Our SYN-ACK was lost: send it again.
                        self.syn_pending = true;
                        self.syn_retransmitted = true;
                    } else {
                        self.stats.dropped_segments += 1;
                    }
                    return;
                }
                if !seg.flags.ack || seg.ack != 1 {
                    self.stats.dropped_segments += 1;
                    return;
                }
                self.establish(now);
                // Fall through: the ACK may carry data or a FIN.
            }
            Phase::Synchronized => {}
        }

        if seg.flags.rst {
            self.reset();
            return;
        }
        if seg.flags.syn {
            // A retransmitted SYN or SYN-ACK: our ACK of it was lost.
            self.rcv.ack_pending = true;
            return;
        }
        if self.ts_ok {
            if let Some((tsval, _)) = seg.timestamps {
                // RFC 7323 §4.3: TS.Recent from segments covering Last.ACK.sent.
                if seg.seq <= self.rcv.last_ack_sent
                    && (tsval.wrapping_sub(self.rcv.ts_recent) as i32) >= 0
                {
                    self.rcv.ts_recent = tsval;
                }
            }
        }
        if seg.flags.ack && !self.process_ack(now, seg) {
            return;
        }
        if seg.len > 0 || seg.flags.fin {
            self.process_data(now, seg);
        }
        self.check_closed();
    }

    /// A timer may be due.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.pace_at.is_some_and(|t| t <= now) {
            // The held-back segment goes at the next `poll_transmit`.
            self.pace_at = None;
        }
        if self.delack_at.is_some_and(|t| t <= now) {
            self.delack_at = None;
            self.rcv.ack_pending = true;
        }
        if self.rto_at.is_some_and(|t| t <= now) {
            self.rto_at = None;
            self.on_rto(now);
        }
        if self.persist_at.is_some_and(|t| t <= now) {
            self.persist_at = None;
            if self.phase == Phase::Synchronized
                && self.snd_una == self.snd_max
                && self.has_new_data()
            {
                self.probe_pending = true;
                self.persist_backoff = (self.persist_backoff + 1).min(16);
            }
        }
    }

    // ------------------------------------------------------------------ transmission

    /// The next segment to transmit, if any. Call until `None` after every input.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        let seg = match self.phase {
            Phase::Closed | Phase::Listen => None,
            Phase::SynSent | Phase::SynReceived => {
                if self.syn_pending {
                    Some(self.build_syn(now))
                } else {
                    None
                }
            }
            Phase::Synchronized => match self.next_segment(now) {
                Some(seg) => Some(seg),
                None => {
                    self.check_app_limited();
                    None
                }
            },
        }?;
        self.stats.segments_sent += 1;
        if seg.len > 0 {
            self.stats.data_segments_sent += 1;
            self.stats.bytes_sent += seg.len as u64;
            if let Some(prr) = self.prr.as_mut() {
                prr.out += seg.len as u64;
                prr.budget = prr.budget.saturating_sub(seg.len as u64);
            }
            // The segment may have filled cwnd: no room is left for another full one (Linux:
            // packets in flight ≥ cwnd after `tcp_write_xmit`).
            self.note_cwnd_use(self.cwnd_room() < self.smss as u64);
            if let Some(rate) = self.cc.pacing_rate() {
                let quantum = self.cc.send_quantum().max(self.smss as u64);
                self.pacer.on_sent(now, seg.len as u64, rate, quantum);
            }
        } else if !seg.flags.syn && !seg.flags.fin && !seg.flags.rst {
            self.stats.pure_acks_sent += 1;
        }
        Some(seg)
    }

    fn next_segment(&mut self, now: Instant) -> Option<Segment> {
        if let Some(seq) = self.pending_rexmit.take() {
            if seq >= self.snd_una && seq < self.snd_max {
                let counted = matches!(
                    self.recovery,
                    RecoveryState::Loss
                        | RecoveryState::Fast {
                            kind: RecoveryKind::Sack,
                            ..
                        }
                );
                return Some(self.retransmit(now, seq, counted));
            }
        }
        if self.probe_pending {
            self.probe_pending = false;
            if let Some(seg) = self.new_data(now, true) {
                return Some(seg);
            }
        }
        if self.paced_out(now) {
            // Held back by the pacer: `pace_at` wakes the driver.
        } else if let Some(seg) = self.window_limited(now) {
            return Some(seg);
        }
        if self.rcv.ack_pending {
            let mut seg = Segment {
                seq: self.snd_max,
                flags: Flags::ACK,
                ..Segment::default()
            };
            self.stamp(now, &mut seg);
            return Some(seg);
        }
        None
    }

    /// Whether the pacer holds back what cwnd would let go now (`pacing` rule 4); if the
    /// sender has something to send, arms `pace_at` for the release time.
    fn paced_out(&mut self, now: Instant) -> bool {
        let Some(_) = self.cc.pacing_rate() else {
            return false;
        };
        let (smss, quantum) = (self.smss as u64, self.cc.send_quantum());
        if self.pacer.allows(now, smss, quantum.max(smss)) {
            self.pace_at = None;
            return false;
        }
        let rwnd_room = (self.snd_una + self.snd_wnd).saturating_sub(self.snd_max);
        let recovering = self.recovery != RecoveryState::Open || !self.lost_rexmits.is_empty();
        let wants = self.cwnd_room() > 0 && ((self.has_new_data() && rwnd_room > 0) || recovering);
        self.pace_at = wants.then(|| self.pacer.release());
        true
    }

    /// Rate sampling rule 5: the sender has run out of data to send while cwnd had room.
    fn check_app_limited(&mut self) {
        let smss = self.smss as u64;
        if self.app_end.saturating_sub(self.snd_max) >= smss
            || self.pending_rexmit.is_some()
            || !self.lost_rexmits.is_empty()
            || self.pace_at.is_some()
        {
            return;
        }
        let pipe = self.pipe();
        if pipe >= self.send_window() {
            return;
        }
        let lost_unsent = self
            .board
            .next_unsacked(self.board.high_rxt().max(self.snd_una));
        if lost_unsent < self.loss_boundary().0.min(self.snd_max) {
            return; // lost data is waiting for its retransmission
        }
        self.rate.mark_app_limited(pipe);
    }

    /// Retransmissions and new data allowed by cwnd (RFC 6675 NextSeg order).
    fn window_limited(&mut self, now: Instant) -> Option<Segment> {
        let room = self.cwnd_room();
        let smss = self.smss as u64;
        let fast_sack = matches!(
            self.recovery,
            RecoveryState::Fast {
                kind: RecoveryKind::Sack,
                ..
            }
        );
        if fast_sack || self.recovery == RecoveryState::Loss {
            // Retransmissions found lost (RACK), before RFC 6675's rule 1.
            while let Some(&seq) = self.lost_rexmits.front() {
                if seq < self.snd_una || self.board.is_sacked(seq) {
                    self.lost_rexmits.pop_front();
                    continue;
                }
                if smss > room {
                    self.note_cwnd_use(true);
                    return None;
                }
                self.lost_rexmits.pop_front();
                if seq == self.snd_una {
                    // As on fast retransmit: the timer restarts when it leaves.
                    self.rto_at = None;
                }
                return Some(self.retransmit(now, seq, true));
            }
            // Rule 1: the lowest lost un-SACKed byte above HighRxt.
            let s = self
                .board
                .next_unsacked(self.board.high_rxt().max(self.snd_una));
            let (lost_below, _) = self.loss_boundary();
            if s < lost_below && s < self.snd_max {
                if smss > room {
                    self.note_cwnd_use(true);
                    return None;
                }
                return Some(self.retransmit(now, s, true));
            }
        }
        if let Some(seg) = self.new_data(now, false) {
            return Some(seg);
        }
        if fast_sack && smss <= room {
            // Rule 3: un-SACKed above HighRxt below the highest SACK, not yet deemed lost.
            let s = self
                .board
                .next_unsacked(self.board.high_rxt().max(self.snd_una));
            if self.board.highest_sacked().is_some_and(|h| s < h) {
                return Some(self.retransmit(now, s, true));
            }
            // Rule 4: one rescue retransmission per recovery episode.
            if !matches!(self.rescue_rxt, Some(r) if self.snd_una <= r)
                && self.snd_una < self.snd_max
            {
                let top = match self.board.blocks().next_back() {
                    Some((s, e)) if e >= self.snd_max => s,
                    _ => self.snd_max,
                };
                if top > self.snd_una {
                    let h = top - 1;
                    let run = self
                        .board
                        .sacked_end_at_or_before(h)
                        .filter(|&e| e <= h)
                        .unwrap_or(self.snd_una);
                    let idx = self.sent.partition_point(|r| r.end() <= h);
                    let start = self
                        .sent
                        .get(idx)
                        .map_or(run, |r| r.seq)
                        .max(run)
                        .max(self.snd_una);
                    if let RecoveryState::Fast { point, .. } = self.recovery {
                        self.rescue_rxt = Some(point);
                    }
                    return Some(self.retransmit(now, start, false));
                }
            }
        }
        None
    }

    /// New data (and/or the FIN) if cwnd and the peer's window allow; `probe` ignores both for
    /// a one-byte zero-window probe.
    fn new_data(&mut self, now: Instant, probe: bool) -> Option<Segment> {
        let unsent = self.app_end.saturating_sub(self.snd_max);
        let fin_unsent = self.fin_queued && self.snd_max <= self.app_end;
        if unsent == 0 && !fin_unsent {
            return None;
        }
        let smss = self.smss as u64;
        let cwnd_room = self.cwnd_room();
        let rwnd_room = (self.snd_una + self.snd_wnd).saturating_sub(self.snd_max);
        let mut len = unsent.min(smss);
        if probe {
            len = len.min(1);
        } else if len > rwnd_room {
            // Sender SWS avoidance: a short segment only if it is at least half the largest
            // window the peer offered.
            len = rwnd_room;
            if len == 0 || len < self.max_snd_wnd / 2 {
                if len == 0 && unsent == 0 && fin_unsent {
                    // A bare FIN needs no window.
                } else {
                    if self.snd_una == self.snd_max && self.persist_at.is_none() {
                        let d = self.rtt.rto().saturating_mul(1 << self.persist_backoff);
                        self.persist_at = Some(self.deadline(now, d.min(self.cfg.rto_max)));
                    }
                    return None;
                }
            }
        }
        if !probe && len.max(1) > cwnd_room {
            self.note_cwnd_use(true);
            return None;
        }
        let fin = fin_unsent && self.snd_max + len == self.app_end;
        let seq = self.snd_max;
        let tx = self.rate.on_sent(now, self.snd_una == self.snd_max);
        self.sent.push_back(SentSeg {
            seq,
            len: len as u32,
            fin,
            retransmitted: false,
            sent: now,
            last_sent: now,
            tx,
        });
        self.snd_max = seq + len + fin as u64;
        if fin && !self.rcv.fin_received {
            self.closing_first = true;
        }
        self.persist_at = None;
        let mut seg = Segment {
            seq,
            len: len as u32,
            flags: Flags { fin, ..Flags::ACK },
            ..Segment::default()
        };
        self.stamp(now, &mut seg);
        self.ecn.on_new_data(&mut seg);
        self.arm_rto_if_idle(now);
        let in_flight = self.pipe();
        self.cc.on_sent(now, len, in_flight);
        Some(seg)
    }

    /// Retransmits from `seq` to the end of its original segment, stopping at SACKed data.
    /// `counted` moves HighRxt (RFC 6675 (C.2)); NewReno's retransmissions and the rescue
    /// retransmission do not.
    fn retransmit(&mut self, now: Instant, seq: u64, counted: bool) -> Segment {
        let idx = self.sent.partition_point(|r| r.end() <= seq);
        let tx = self.rate.on_sent(now, false);
        let Some(rec) = self.sent.get_mut(idx) else {
            // Cannot happen for seq in [SND.UNA, SND.MAX); send an ACK rather than panic.
            let mut seg = Segment {
                seq: self.snd_max,
                flags: Flags::ACK,
                ..Segment::default()
            };
            self.stamp(now, &mut seg);
            return seg;
        };
        rec.retransmitted = true;
        rec.last_sent = now;
        rec.tx = tx;
        let (rec_seq, rec_end, rec_fin) = (rec.seq, rec.payload_end(), rec.fin);
        let mut start = seq.clamp(rec_seq, rec_end);
        let (mut end, mut fin) = (rec_end, rec_fin);
        if let Some(b) = self.board.next_sacked_after(start) {
            if b < end {
                end = b;
                fin = false;
            }
        }
        if end == start && !fin {
            // Nothing un-SACKed from here (a confused peer): resend the whole record.
            (start, end, fin) = (rec_seq, rec_end, rec_fin);
        }
        let len = end - start;
        if self.cfg.rack_lost_retransmit && self.sack_ok {
            self.rexmits.push_back((now, start));
        }
        self.stats.retransmitted_segments += 1;
        self.stats.bytes_retransmitted += len;
        if counted {
            self.board.raise_high_rxt(end + fin as u64);
        }
        let mut seg = Segment {
            seq: start,
            len: len as u32,
            flags: Flags { fin, ..Flags::ACK },
            ..Segment::default()
        };
        self.stamp(now, &mut seg);
        self.arm_rto_if_idle(now);
        seg
    }

    fn build_syn(&mut self, now: Instant) -> Segment {
        self.syn_pending = false;
        let again = self.syn_sent_at.is_some();
        if again {
            self.stats.retransmitted_segments += 1;
        } else {
            self.syn_sent_at = Some(now);
        }
        self.snd_max = 1;
        let mut seg = Segment {
            seq: 0,
            flags: Flags::SYN,
            wnd: self.cfg.rwnd,
            mss_option: Some(self.cfg.mss_option()),
            ..Segment::default()
        };
        match self.role {
            Role::Client => {
                seg.sack_permitted = self.cfg.sack;
                seg.timestamps = self.cfg.timestamps.then(|| (ts_now(now), 0));
            }
            Role::Server => {
                seg.flags = Flags::SYN_ACK;
                seg.ack = self.rcv.rcv_nxt;
                seg.sack_permitted = self.sack_ok;
                seg.timestamps = self.ts_ok.then(|| (ts_now(now), self.rcv.ts_recent));
                self.rcv.on_ack_sent();
            }
        }
        self.ecn.on_syn_sent(self.role, again, &mut seg);
        self.arm_rto_if_idle(now);
        seg
    }

    /// Fills the ACK, window, SACK and timestamp fields of an outgoing segment.
    fn stamp(&mut self, now: Instant, seg: &mut Segment) {
        seg.flags.ack = true;
        seg.ack = self.rcv.rcv_nxt;
        seg.wnd = self.rcv.advertise();
        if self.sack_ok && self.rcv.ooo_bytes() > 0 {
            let max = if self.ts_ok { 3 } else { SackBlocks::MAX };
            self.rcv.fill_sack(&mut seg.sack, max);
        }
        if self.ts_ok {
            seg.timestamps = Some((ts_now(now), self.rcv.ts_recent));
        }
        self.ecn.stamp(seg);
        self.rcv.on_ack_sent();
        self.delack_at = None;
    }

    // ------------------------------------------------------------------ handshake helpers

    fn accept_syn(&mut self, now: Instant, seg: &Segment) {
        self.negotiate(now, seg);
        self.rcv.init(seg.seq);
        self.snd_wnd = seg.wnd as u64;
        self.max_snd_wnd = self.snd_wnd;
        self.snd_wl1 = seg.seq;
        self.phase = Phase::SynReceived;
        self.syn_pending = true;
    }

    fn negotiate(&mut self, now: Instant, seg: &Segment) {
        self.sack_ok = self.cfg.sack && seg.sack_permitted;
        self.ts_ok = self.cfg.timestamps && seg.timestamps.is_some();
        let overhead = if self.ts_ok { TIMESTAMP_OPTION_LEN } else { 0 };
        // RFC 9293 §3.7.1: 536 when the peer sent no MSS option.
        let peer = seg
            .mss_option
            .map_or(536, |m| m as u32)
            .saturating_sub(overhead)
            .max(1);
        self.smss = self.cfg.mss.min(peer);
        self.ecn.on_syn_received(self.role, seg);
        self.loss_memo.set(((u64::MAX, 0, 0), (0, 0)));
        if let Some((tsval, _)) = seg.timestamps {
            self.rcv.ts_recent = tsval;
        }
        self.cc = self
            .factory
            .build(now, &controller_init(&self.cfg, self.smss));
    }

    fn establish(&mut self, now: Instant) {
        self.phase = Phase::Synchronized;
        self.snd_una = 1;
        self.recover = 1;
        self.l_rto = 1;
        self.board.reset_high_rxt(1);
        self.rto_at = None;
        self.events.push_back(TcpEvent::Connected);
        if let (Some(t0), false) = (self.syn_sent_at, self.syn_retransmitted) {
            if !self.ts_ok {
                self.take_rtt_sample(now.saturating_since(t0));
            }
        }
        if self.syn_retransmitted {
            self.rtt.restart_after_syn_timeout(Duration::from_secs(3));
        }
    }

    fn reset(&mut self) {
        self.phase = Phase::Closed;
        self.pace_at = None;
        self.rto_at = None;
        self.delack_at = None;
        self.persist_at = None;
        self.pending_rexmit = None;
        self.syn_pending = false;
        self.rcv.ack_pending = false;
        self.closed_emitted = true;
        self.events.push_back(TcpEvent::Reset);
    }

    fn check_closed(&mut self) {
        if !self.closed_emitted && self.fin_acked() && self.rcv.fin_received {
            self.closed_emitted = true;
            self.rto_at = None;
            self.persist_at = None;
            self.events.push_back(TcpEvent::Closed);
        }
    }

    // ------------------------------------------------------------------ ACK processing

    /// Returns false when the rest of the segment must be dropped.
    fn process_ack(&mut self, now: Instant, seg: &Segment) -> bool {
        let ack = seg.ack;
        if ack > self.snd_max {
            // Acknowledges something never sent (RFC 9293): answer with an ACK, drop.
            self.rcv.ack_pending = true;
            self.stats.dropped_segments += 1;
            return false;
        }
        let old_wnd = self.snd_wnd;
        if ack >= self.snd_una
            && (seg.seq > self.snd_wl1 || (seg.seq == self.snd_wl1 && ack >= self.snd_wl2))
        {
            self.snd_wnd = seg.wnd as u64;
            self.snd_wl1 = seg.seq;
            self.snd_wl2 = ack;
            self.max_snd_wnd = self.max_snd_wnd.max(self.snd_wnd);
            if self.snd_wnd > 0 {
                self.persist_at = None;
                self.persist_backoff = 0;
            }
        }
        let board_before = self.board.version();
        let (una_before, sacked_before) = (self.snd_una, self.board.sacked_bytes());
        let (outstanding, prior_in_flight) = (self.snd_una < self.snd_max, self.pipe());
        let lost_before = self.rate.lost;
        let mut newly_sacked = 0;
        if self.sack_ok {
            let lo = ack.max(self.snd_una);
            for (s, e) in seg.sack.iter() {
                if self.last_sack.iter().any(|b| b == (s, e)) {
                    continue;
                }
                let (s, e) = (s.max(lo), e.min(self.snd_max));
                if s < e {
                    // The parts of the block not SACKed before (for rate sampling).
                    let mut pieces = [(0u64, 0u64); 4];
                    let mut n = 0;
                    let mut x = s;
                    while x < e {
                        let u = self.board.next_unsacked(x);
                        if u >= e {
                            break;
                        }
                        let v = self.board.next_sacked_after(u).map_or(e, |b| b.min(e));
                        if n == pieces.len() {
                            pieces[n - 1].1 = e;
                            break;
                        }
                        pieces[n] = (u, v);
                        n += 1;
                        x = v;
                    }
                    let added = self.board.on_sack(s, e);
                    for &(u, v) in &pieces[..n] {
                        self.rate_on_sacked(u, v);
                    }
                    newly_sacked += added;
                    if added > 0 {
                        // A block grows at its top, where the segment sent last usually is. A
                        // retransmission SACKed sooner than min RTT after it left was the
                        // original arriving late: it says nothing of its retransmission's time
                        // (RFC 8985 §6.2 step 2).
                        let i = self.sent.partition_point(|r| r.end() < e);
                        if let Some(r) = self.sent.get(i) {
                            let min_rtt = self.rtt.min_rtt().unwrap_or(Duration::ZERO);
                            if (!r.retransmitted || now.saturating_since(r.last_sent) >= min_rtt)
                                && r.last_sent >= self.rack_xmit
                            {
                                self.rack_xmit = r.last_sent;
                                self.rack_rtt = Some(now.saturating_since(r.last_sent));
                            }
                        }
                    }
                }
            }
            self.last_sack = seg.sack;
        }
        if ack > self.snd_una {
            self.on_new_ack(now, seg, newly_sacked, sacked_before);
        } else if ack == self.snd_una {
            self.on_same_ack(now, seg, old_wnd, newly_sacked);
        }
        // ECN-Echo (an old ACK says nothing new).
        let recovering = self.recovery != RecoveryState::Open || ack < una_before;
        let (una, max) = (self.snd_una, self.snd_max);
        if let Some(kind) = self.ecn.on_ack(seg, recovering, una, max, &mut self.stats) {
            let (flight_size, in_flight) = (max - una, self.pipe());
            let ev = CongestionEvent {
                kind,
                flight_size,
                in_flight,
                loss: None,
            };
            self.cc.on_congestion_event(now, &ev);
            self.events.push_back(TcpEvent::Congestion { kind });
        }
        if self.board.version() != board_before {
            if let RecoveryState::Fast {
                point,
                kind: RecoveryKind::Sack,
                ..
            } = self.recovery
            {
                let view = loss_view!(self, Some(point));
                self.cc.on_loss_update(now, &view);
            }
        }
        self.detect_lost_retransmissions();
        // RFC 9937 DeliveredData: the change in SND.UNA plus the change in SACKed bytes.
        let delivered =
            (self.snd_una - una_before + self.board.sacked_bytes()).saturating_sub(sacked_before);
        let sampled = outstanding && ack >= una_before;
        if sampled {
            self.account_losses();
        }
        // RFC 9937's SafeACK: SND.UNA advanced and the ACK showed no further loss.
        let safe_ack = self.snd_una > una_before && self.rate.lost == lost_before;
        self.prr_on_ack(delivered, safe_ack);
        if sampled {
            let ca_state = match self.recovery {
                RecoveryState::Open => CaState::Open,
                RecoveryState::Fast { .. } => CaState::Recovery,
                RecoveryState::Loss => CaState::Loss,
            };
            let (min_rtt, srtt, in_flight) = (self.rtt.min_rtt(), self.rtt.srtt(), self.pipe());
            let rs = self.rate.generate(
                now,
                delivered,
                lost_before,
                min_rtt,
                srtt,
                prior_in_flight,
                in_flight,
                ca_state,
                self.smss as u64,
            );
            self.cc.on_rate_sample(now, rs);
            if self.cc.marks_app_limited() {
                self.rate.mark_app_limited(in_flight);
            }
        }
        true
    }

    /// Rate sampling: the segments wholly SACKed now within the newly SACKed `[u, v)`.
    fn rate_on_sacked(&mut self, u: u64, v: u64) {
        let mut i = self.sent.partition_point(|r| r.payload_end() <= u);
        while let Some(r) = self.sent.get(i) {
            if r.seq >= v {
                break;
            }
            if r.tx.delivered_time.is_some()
                && r.len > 0
                && self.board.next_unsacked(r.seq) >= r.payload_end()
            {
                let r = self.sent[i];
                self.rate
                    .on_delivered(&r.tx, r.last_sent, r.end(), r.retransmitted);
                self.sent[i].tx.delivered_time = None;
            }
            i += 1;
        }
    }

    /// Rate sampling without SACK: the first outstanding segment, about to be retransmitted,
    /// counts as lost.
    fn count_head_lost(&mut self) {
        if let Some(r) = self.sent.front() {
            self.rate.lost += r.payload_end().saturating_sub(self.snd_una);
        }
    }

    /// Counts as lost (C.lost) the un-SACKed bytes below the loss boundary not counted before.
    fn account_losses(&mut self) {
        let l = self.loss_boundary().0.min(self.snd_max);
        let mut x = self.lost_upto.max(self.snd_una);
        while x < l {
            let u = self.board.next_unsacked(x);
            if u >= l {
                break;
            }
            let v = self.board.next_sacked_after(u).map_or(l, |b| b.min(l));
            self.rate.lost += v - u;
            x = v;
        }
        self.lost_upto = self.lost_upto.max(l);
    }

    /// RFC 9937, on every ACK during SACK recovery: how much may be sent now. Below
    /// ssthresh the conservative bound (send what was delivered) applies, and the slow-start
    /// bound's extra SMSS only on a SafeACK, as Linux's `tcp_cwnd_reduction` does; RFC
    /// 6937's unconditional slow-start bound let a sender facing a steady high drop rate send
    /// twice what got through, the whole recovery long.
    fn prr_on_ack(&mut self, delivered_data: u64, safe_ack: bool) {
        let in_sack_recovery = matches!(
            self.recovery,
            RecoveryState::Fast {
                kind: RecoveryKind::Sack,
                ..
            }
        );
        if !in_sack_recovery {
            self.prr = None;
            return;
        }
        let (pipe, ssthresh, smss) = (self.pipe(), self.cc.ssthresh(), self.smss as u64);
        let Some(prr) = self.prr.as_mut() else { return };
        prr.delivered += delivered_data;
        let sndcnt = if pipe > ssthresh {
            // Proportional: ceil(prr_delivered · ssthresh / RecoverFS) − prr_out.
            let target =
                (prr.delivered as u128 * ssthresh as u128).div_ceil(prr.recover_fs.max(1) as u128);
            (target as u64).saturating_sub(prr.out)
        } else {
            // PRR-CRB, and PRR-SSRB's one SMSS more on a SafeACK; back up to ssthresh at most.
            let conservative = prr.delivered.saturating_sub(prr.out).max(delivered_data);
            let limit = conservative + if safe_ack { smss } else { 0 };
            (ssthresh - pipe).min(limit)
        };
        prr.budget = sndcnt;
    }

    /// After each data segment, and whenever cwnd (or PRR) holds a send back: records per
    /// window (until SND.UNA passes the HighData at its start) whether cwnd held the sender
    /// back and the largest FlightSize (Linux `tcp_cwnd_validate`). A send held back opens a
    /// new window, so its verdict lasts a window from then.
    fn note_cwnd_use(&mut self, cwnd_limited: bool) {
        let flight = self.snd_max - self.snd_una;
        let u = self.cwnd_use;
        if self.snd_una >= u.end || cwnd_limited || (!u.limited && flight > u.max_flight) {
            self.cwnd_use = CwndUse {
                limited: cwnd_limited,
                max_flight: flight,
                end: self.snd_max,
            };
        }
    }

    /// Whether the sender is using its cwnd, so that growing it is justified: cwnd held it
    /// back during the last window or, in slow start, cwnd is below twice the most it had
    /// outstanding then (Linux `tcp_is_cwnd_limited`; RFC 7661, RFC 9438 §5.8). A
    /// sender held back by the application, the peer's window or its own host (a device
    /// limit that stops the driver polling) is not: its cwnd would grow without bound.
    fn cwnd_limited(&self) -> bool {
        let u = &self.cwnd_use;
        let cwnd = self.cc.window();
        u.limited || (cwnd < self.cc.ssthresh() && cwnd < 2 * u.max_flight)
    }

    /// Bytes the congestion window (or PRR, in its recovery) lets us send now.
    fn cwnd_room(&self) -> u64 {
        match self.prr {
            Some(prr) => prr.budget,
            None => self.send_window().saturating_sub(self.pipe()),
        }
    }

    /// `sacked_before`: SACKed bytes on the scoreboard before this ACK's SACK blocks.
    fn on_new_ack(&mut self, now: Instant, seg: &Segment, newly_sacked: u64, sacked_before: u64) {
        let ack = seg.ack;
        let prev_una = self.snd_una;
        let payload_acked = ack
            .min(self.app_end)
            .saturating_sub(prev_una.min(self.app_end));
        // Remove acknowledged records; Karn: no sample if any of them was retransmitted.
        let mut oldest: Option<Instant> = None;
        let mut ambiguous = false;
        while let Some(front) = self.sent.front_mut() {
            if front.end() <= ack {
                ambiguous |= front.retransmitted;
                oldest.get_or_insert(front.sent);
                let r = *front;
                self.rate
                    .on_delivered(&r.tx, r.last_sent, r.end(), r.retransmitted);
                self.sent.pop_front();
            } else {
                if front.seq < ack {
                    ambiguous |= front.retransmitted;
                    oldest.get_or_insert(front.sent);
                    let r = *front;
                    self.rate
                        .on_delivered(&r.tx, r.last_sent, ack, r.retransmitted);
                    front.len -= (ack - front.seq).min(front.len as u64) as u32;
                    front.seq = ack;
                }
                break;
            }
        }
        self.snd_una = ack;
        self.board.advance(ack);
        if self.board.is_sacked(ack) {
            // The cumulative ACK stops at data the peer SACKed: it reneged (RFC 2018 §8), so
            // its SACKs can no longer be trusted (Linux `tcp_check_sack_reneging`).
            self.board.clear();
            self.last_sack = SackBlocks::new();
        }
        self.stats.bytes_acked += payload_acked;
        self.dupacks = 0;
        self.consecutive_rtos = 0;
        if self.pending_rexmit.is_some_and(|s| s < ack) {
            self.pending_rexmit = None;
        }
        let sample = if self.ts_ok {
            seg.timestamps
                .map(|(_, ecr)| Duration::from_millis(ts_now(now).wrapping_sub(ecr) as u64))
        } else if ambiguous {
            None
        } else {
            oldest.map(|t| now.saturating_since(t))
        };
        if let Some(r) = sample {
            self.take_rtt_sample(r);
        }

        // Recovery transitions.
        let was_in_recovery = matches!(self.recovery, RecoveryState::Fast { .. });
        let mut restart_rto = true;
        match self.recovery {
            RecoveryState::Open => {}
            RecoveryState::Loss => {
                if ack >= self.recover {
                    self.recovery = RecoveryState::Open;
                } else {
                    // What was sent more than an RTT ago and is still un-SACKed is lost now
                    // (RFC 8985 §6.2 with RACK.rtt the latest sample; without
                    // `rto_spares_recent` everything up to `recover` already is).
                    self.l_rto = self
                        .l_rto
                        .max(self.rto_loss_boundary(now))
                        .min(self.recover);
                }
            }
            RecoveryState::Fast {
                point,
                kind,
                partial_seen,
            } => {
                if ack >= point || kind == RecoveryKind::Reno {
                    self.recovery = RecoveryState::Open;
                    self.inflation = 0;
                    let exit = RecoveryExit {
                        kind,
                        flight_size: self.snd_max - self.snd_una,
                    };
                    self.cc.on_recovery_exit(now, &exit);
                } else if kind == RecoveryKind::NewReno {
                    // RFC 6582 partial ACK: retransmit the first unacknowledged segment,
                    // deflate by the amount acknowledged, add back one SMSS if ≥ SMSS acked.
                    let acked = (ack - prev_una) as i64;
                    let smss = self.smss as i64;
                    self.inflation -= acked;
                    if acked >= smss {
                        self.inflation += smss;
                    }
                    self.pending_rexmit = Some(ack);
                    self.count_head_lost();
                    // "Impatient" variant: only the first partial ACK restarts the timer.
                    restart_rto = !partial_seen;
                    self.recovery = RecoveryState::Fast {
                        point,
                        kind,
                        partial_seen: true,
                    };
                }
            }
        }
        if self.snd_una >= self.snd_max {
            self.rto_at = None;
        } else if restart_rto || self.rto_at.is_none() {
            self.rto_at = Some(self.deadline(now, self.rtt.rto()));
        }

        if payload_acked > 0 {
            let ev = AckEvent {
                ack,
                acked_bytes: payload_acked,
                sacked_bytes: newly_sacked,
                // Cumulatively acknowledged bytes the scoreboard did not hold yet, plus the
                // newly SACKed ones (what the board lost to the cumulative ACK was counted
                // when it was SACKed).
                delivered_bytes: (payload_acked + self.board.sacked_bytes())
                    .saturating_sub(sacked_before),
                rtt: sample,
                srtt: self.rtt.srtt(),
                min_rtt: self.rtt.min_rtt(),
                in_flight: self.pipe(),
                high_data: self.snd_max,
                in_recovery: was_in_recovery || self.ecn.reducing(ack),
                app_limited: !self.cwnd_limited(),
            };
            self.cc.on_ack(now, &ev);
        }

        // RFC 6675 §5: an ACK that SACKs new data counts as a duplicate even when it also
        // advances the cumulative ACK.
        if self.sack_ok
            && newly_sacked > 0
            && self.recovery == RecoveryState::Open
            && self.snd_una < self.snd_max
        {
            self.dupacks = 1;
            self.stats.dup_acks += 1;
            self.maybe_enter_sack_recovery(now);
        }
    }

    fn on_same_ack(&mut self, now: Instant, seg: &Segment, old_wnd: u64, newly_sacked: u64) {
        if self.snd_una >= self.snd_max {
            return; // nothing outstanding: not a duplicate
        }
        if self.sack_ok {
            if newly_sacked == 0 {
                return;
            }
            self.stats.dup_acks += 1;
            if self.recovery == RecoveryState::Open {
                self.dupacks += 1;
                self.maybe_enter_sack_recovery(now);
            }
            return;
        }
        // RFC 5681 duplicate ACK: no data, no SYN/FIN, same window.
        if seg.len > 0 || seg.flags.fin || seg.wnd as u64 != old_wnd {
            return;
        }
        self.stats.dup_acks += 1;
        match self.recovery {
            RecoveryState::Open => {
                self.dupacks += 1;
                let guard_ok = self.cfg.recovery == Recovery::Reno || self.snd_una >= self.recover;
                if self.dupacks == self.cfg.dupthresh && guard_ok {
                    self.enter_fast_recovery(
                        now,
                        if self.cfg.recovery == Recovery::Reno {
                            RecoveryKind::Reno
                        } else {
                            RecoveryKind::NewReno
                        },
                    );
                }
            }
            RecoveryState::Fast { .. } => self.inflation += self.smss as i64,
            RecoveryState::Loss => {}
        }
    }

    fn maybe_enter_sack_recovery(&mut self, now: Instant) {
        if self.snd_una < self.recover {
            return; // RFC 6675 §5.1 / RFC 6582: one reduction per window
        }
        let lost = self.snd_una < self.loss_boundary().0;
        if self.dupacks >= self.cfg.dupthresh || lost {
            self.enter_fast_recovery(now, RecoveryKind::Sack);
        }
    }

    fn enter_fast_recovery(&mut self, now: Instant, kind: RecoveryKind) {
        let point = self.snd_max;
        let flight = self.snd_max - self.snd_una;
        let in_flight = self.pipe();
        self.recovery = RecoveryState::Fast {
            point,
            kind,
            partial_seen: false,
        };
        self.recover = point;
        self.stats.fast_recoveries += 1;
        self.ecn.on_loss_reduction();
        self.rescue_rxt = None;
        let loss = if kind == RecoveryKind::Sack {
            Some(loss_view!(self, Some(point)))
        } else {
            None
        };
        let ev = CongestionEvent {
            kind: CongestionKind::FastRetransmit,
            flight_size: flight,
            in_flight,
            loss,
        };
        self.cc.on_congestion_event(now, &ev);
        self.events.push_back(TcpEvent::Congestion {
            kind: CongestionKind::FastRetransmit,
        });
        if kind == RecoveryKind::Sack && self.cfg.prr && !self.cc.owns_recovery_window() {
            self.prr = Some(Prr {
                delivered: 0,
                out: 0,
                recover_fs: flight,
                budget: 0,
            });
        }
        if kind == RecoveryKind::Sack {
            // RFC 6675 (4.3): HighRxt and RescueRxt end at the retransmitted segment.
            self.board.reset_high_rxt(self.snd_una);
            let first_end = self.sent.front().map_or(self.snd_una, |r| r.end());
            self.rescue_rxt = Some(first_end.saturating_sub(1));
        } else {
            // RFC 6582 step 2: cwnd = ssthresh + DupThresh·SMSS.
            self.inflation = self.cfg.dupthresh as i64 * self.smss as i64;
            // Without SACK only the retransmitted segment is known lost (Linux marks the head).
            self.count_head_lost();
        }
        self.pending_rexmit = Some(self.snd_una);
        // The timer restarts when the fast retransmission leaves (4.4BSD `tcp_input`, FreeBSD,
        // Linux `tcp_xmit_retransmit_queue`): it now guards that segment, which needs a whole
        // RTT from here, not from the last cumulative ACK.
        self.rto_at = None;
    }

    /// RFC 8985 §6.2's rule for retransmissions: one is lost once a segment sent more than a
    /// reordering window (min RTT/4) after it has been SACKed (RACK.xmit_ts passed it) while
    /// it was not. Linux finds these by RACK (`tcp_rack_detect_loss`, counted as
    /// `TCPLostRetransmit`); RFC 6675 has no rule for them and waits for the RTO. Checks the
    /// retransmissions in the order they left, so each is judged once: O(1) per ACK amortised.
    fn detect_lost_retransmissions(&mut self) {
        let recovering = matches!(
            self.recovery,
            RecoveryState::Loss
                | RecoveryState::Fast {
                    kind: RecoveryKind::Sack,
                    ..
                }
        );
        if !recovering {
            // What recovery left behind was delivered.
            self.rexmits.clear();
            self.lost_rexmits.clear();
            return;
        }
        let reo_wnd = self
            .rtt
            .min_rtt()
            .map_or(Duration::ZERO, |m| Duration::from_nanos(m.as_nanos() / 4));
        while let Some(&(sent, seq)) = self.rexmits.front() {
            if sent + reo_wnd >= self.rack_xmit {
                break;
            }
            self.rexmits.pop_front();
            if seq < self.snd_una || self.board.is_sacked(seq) {
                continue; // delivered
            }
            let i = self.sent.partition_point(|r| r.end() <= seq);
            if let Some(r) = self.sent.get(i).filter(|r| r.last_sent == sent) {
                self.rate.lost += r.payload_end().saturating_sub(seq);
                self.stats.lost_retransmissions += 1;
                self.lost_rexmits.push_back(seq);
            }
        }
    }

    /// Everything below this counts as lost after an RTO: all that was sent (RFC 5681/6675
    /// go-back) or, with `rto_spares_recent`, what was sent more than an RTT ago and the
    /// first outstanding segment (RFC 8985 §6.3; Linux `tcp_timeout_mark_lost`).
    fn rto_loss_boundary(&self, now: Instant) -> u64 {
        // The latest RTT, from the cumulative ACK's sample or from the SACK of the most
        // recently sent segment delivered (RACK.rtt), whichever says longer: a queue that grew
        // during recovery shows in SACKs first (no cumulative samples there without
        // timestamps, by Karn's rule), and data still in it is not lost.
        let rtt = match (self.rtt.latest(), self.rack_rtt) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        match (self.cfg.rto_spares_recent, rtt) {
            (true, Some(rtt)) => {
                let old = self.sent.partition_point(|r| r.sent + rtt <= now);
                let first_end = self.sent.front().map_or(self.snd_max, |r| r.end());
                self.sent
                    .get(old)
                    .map_or(self.snd_max, |r| r.seq)
                    .max(first_end)
            }
            _ => self.snd_max,
        }
    }

    fn on_rto(&mut self, now: Instant) {
        match self.phase {
            Phase::SynSent | Phase::SynReceived => {
                self.stats.timeouts += 1;
                self.rtt.back_off();
                self.syn_pending = true;
                self.syn_retransmitted = true;
            }
            Phase::Synchronized if self.snd_una < self.snd_max => {
                self.stats.timeouts += 1;
                let flight = self.snd_max - self.snd_una;
                let ev = CongestionEvent {
                    kind: CongestionKind::Timeout {
                        consecutive: self.consecutive_rtos,
                    },
                    flight_size: flight,
                    in_flight: self.pipe(),
                    loss: if self.sack_ok {
                        Some(loss_view!(self, None))
                    } else {
                        None
                    },
                };
                self.cc.on_congestion_event(now, &ev);
                self.events
                    .push_back(TcpEvent::Congestion { kind: ev.kind });
                self.consecutive_rtos += 1;
                self.ecn.on_loss_reduction();
                self.rtt.back_off();
                self.recovery = RecoveryState::Loss;
                self.prr = None;
                self.recover = self.snd_max;
                self.l_rto = self.rto_loss_boundary(now);
                self.inflation = 0;
                self.dupacks = 0;
                self.rescue_rxt = None;
                self.board.reset_high_rxt(self.snd_una);
                // The go-back resends everything deemed lost.
                self.rexmits.clear();
                self.lost_rexmits.clear();
                self.account_losses();
                // RFC 6298 (5.4): retransmit the earliest unacknowledged segment; the timer
                // restarts when it leaves (5.6).
                self.pending_rexmit = Some(self.snd_una);
            }
            _ => {}
        }
    }

    // ------------------------------------------------------------------ receiving

    fn process_data(&mut self, now: Instant, seg: &Segment) {
        let ecn = self.ecn.on_data_arrival(seg, &mut self.stats);
        self.quickacks_left = self.quickacks_left.max(ecn.quickacks);
        self.rcv.ack_pending |= ecn.ack_now;
        let out = self.rcv.on_segment(seg.seq, seg.len, seg.flags.fin);
        if out.delivered > 0 {
            self.stats.bytes_delivered += out.delivered;
            match self.events.back_mut() {
                Some(TcpEvent::Delivered { bytes }) => *bytes += out.delivered,
                _ => self.events.push_back(TcpEvent::Delivered {
                    bytes: out.delivered,
                }),
            }
        }
        if out.out_of_order {
            self.stats.out_of_order_segments += 1;
        }
        if out.duplicate {
            self.stats.duplicate_segments += 1;
        }
        if out.trimmed {
            self.stats.dropped_segments += 1;
        }
        if out.peer_fin {
            self.events.push_back(TcpEvent::PeerClosed);
        }
        let immediate = out.out_of_order
            || out.filled_hole
            || out.duplicate
            || out.trimmed
            || out.peer_fin
            || seg.flags.fin;
        if immediate {
            self.rcv.ack_pending = true;
        } else if out.delivered > 0 && self.quickacks_left > 0 {
            self.quickacks_left -= 1;
            self.rcv.ack_pending = true;
        } else if out.delivered > 0 {
            self.rcv.unacked += 1;
            if self.rcv.unacked >= self.cfg.ack_every {
                self.rcv.ack_pending = true;
            } else if self.delack_at.is_none() {
                self.delack_at = Some(self.deadline(now, self.cfg.delack_timeout));
            }
        }
    }

    /// Test support: recomputes pipe and the loss boundary from their definitions (RFC 6675
    /// §4, octet by octet over the holes) and checks the incremental values and other
    /// invariants. O(window); not for use on a hot path.
    #[doc(hidden)]
    pub fn debug_check_invariants(&self) -> Result<(), String> {
        if self.phase != Phase::Synchronized {
            return Ok(());
        }
        let (una, max) = (self.snd_una, self.snd_max);
        if una > max {
            return Err(format!("snd_una {una} > snd_max {max}"));
        }
        let blocks: Vec<(u64, u64)> = self.board.blocks().collect();
        if blocks.iter().any(|&(s, e)| s < una || e > max || s >= e) {
            return Err(format!("scoreboard {blocks:?} outside [{una}, {max})"));
        }
        let mut expect = una;
        for r in &self.sent {
            if r.seq != expect {
                return Err(format!("record {r:?} not contiguous at {expect}"));
            }
            expect = r.end();
        }
        if expect != max {
            return Err(format!("records end at {expect}, snd_max {max}"));
        }
        // IsLost by definition for a gap below the k-th highest block.
        let smss = self.smss as u64;
        let dt = self.cfg.dupthresh as usize;
        let lost_gap = |gap_end: u64| {
            let above: Vec<_> = blocks.iter().filter(|&&(s, _)| s >= gap_end).collect();
            let bytes: u64 = above.iter().map(|&&(s, e)| e - s).sum();
            above.len() >= dt || bytes > (dt as u64 - 1) * smss
        };
        let hr = self.board.high_rxt();
        let mut pipe = 0u64;
        let mut from = una;
        let mut gaps: Vec<(u64, u64)> = Vec::new();
        for &(s, e) in &blocks {
            if from < s {
                gaps.push((from, s));
            }
            from = e;
        }
        if from < max {
            gaps.push((from, max));
        }
        for (a, b) in gaps {
            let lost_end = if lost_gap(b) && b <= blocks.last().map_or(0, |l| l.0) {
                b
            } else {
                a
            };
            let lost_end = lost_end.max(self.l_rto.min(b)).max(a);
            let lost = lost_end - a;
            let retx = hr.clamp(a, b) - a;
            pipe += (b - a) - lost + retx;
        }
        if pipe != self.pipe() {
            return Err(format!("pipe {} != reference {pipe} (una {una} max {max} hr {hr} l_rto {} blocks {blocks:?})", self.pipe(), self.l_rto));
        }
        Ok(())
    }

    // ------------------------------------------------------------------ accounting helpers

    /// cwnd plus NewReno inflation.
    fn send_window(&self) -> u64 {
        let w = self.cc.window() as i128 + self.inflation as i128;
        w.clamp(0, u64::MAX as i128) as u64
    }

    /// (L, SACKed bytes at or above L); memoised, as pipe is asked for several times per
    /// segment and only changes with the scoreboard, SND.UNA or an RTO.
    fn loss_boundary(&self) -> (u64, u64) {
        let key = (self.board.version(), self.snd_una, self.l_rto);
        let (k, v) = self.loss_memo.get();
        if k == key {
            return v;
        }
        let v = self.board.loss_boundary(
            self.snd_una,
            self.l_rto,
            self.smss as u64,
            self.cfg.dupthresh,
        );
        self.loss_memo.set((key, v));
        v
    }

    /// RFC 6675 SetPipe, from running sums: un-SACKed outstanding bytes, minus those deemed
    /// lost, plus those retransmitted (below HighRxt).
    fn pipe(&self) -> u64 {
        if self.snd_max <= self.snd_una {
            return 0;
        }
        let sacked = self.board.sacked_bytes();
        let unsacked = (self.snd_max - self.snd_una).saturating_sub(sacked);
        let (l, sacked_above) = self.loss_boundary();
        let lost = (l - self.snd_una).saturating_sub(sacked.saturating_sub(sacked_above));
        let hr = self.board.high_rxt();
        let retx = hr
            .saturating_sub(self.snd_una)
            .saturating_sub(self.board.sacked_below_rxt());
        (unsacked.saturating_sub(lost)) + retx
    }

    fn has_new_data(&self) -> bool {
        self.snd_max < self.app_end || (self.fin_queued && self.snd_max <= self.app_end)
    }

    fn take_rtt_sample(&mut self, r: Duration) {
        self.rtt.on_sample(r);
        self.stats.rtt_samples += 1;
        self.events.push_back(TcpEvent::RttSample { rtt: r });
    }

    fn arm_rto_if_idle(&mut self, now: Instant) {
        if self.rto_at.is_none() {
            self.rto_at = Some(self.deadline(now, self.rtt.rto()));
        }
    }

    /// `now + d`, rounded up to a multiple of `tick`.
    fn deadline(&self, now: Instant, d: Duration) -> Instant {
        let t = (now + d).as_nanos();
        let tick = self.cfg.tick.as_nanos();
        if tick == 0 {
            Instant::from_nanos(t)
        } else {
            Instant::from_nanos(t.div_ceil(tick).saturating_mul(tick))
        }
    }
}

/// A [`LossView`] borrowing only the scoreboard, so the controller can be borrowed mutably
/// alongside it.
macro_rules! loss_view {
    ($ep:expr, $point:expr) => {
        LossView {
            snd_una: $ep.snd_una,
            high_data: $ep.snd_max,
            recovery_point: $point,
            smss: $ep.smss as u64,
            scoreboard: &$ep.board,
        }
    };
}
use loss_view;

fn controller_init(cfg: &TcpConfig, smss: u32) -> ControllerInit {
    let iw = cfg
        .initial_window
        .unwrap_or_else(|| initial_window_segments(smss));
    ControllerInit {
        smss: smss as u64,
        initial_window: iw as u64 * smss as u64,
        initial_ssthresh: cfg.initial_ssthresh.unwrap_or(u64::MAX),
        count_delivered: cfg.count_delivered,
    }
}

/// TSval: milliseconds since the start of the run, wrapping.
fn ts_now(now: Instant) -> u32 {
    (now.as_nanos() / 1_000_000) as u32
}
