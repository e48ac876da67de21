//! BBR version 1 as Linux's `net/ipv4/tcp_bbr.c` implements it (Cardwell et al., "BBR:
//! Congestion-Based Congestion Control", ACM Queue 2016; draft-cardwell-iccrg-bbr-congestion-control-00).
//!
//! BBR models the path by two filtered quantities, the bottleneck bandwidth (the windowed
//! maximum of delivery-rate samples) and the round-trip propagation time (the windowed
//! minimum RTT), paces at `pacing_gain × BtlBw` and caps the data in flight at
//! `cwnd_gain × BDP` plus allowance for send quanta. It works from the endpoint's rate
//! samples ([`RateSample`], `crate::rate_sample`) on every ACK, Linux's `cong_control`
//! (`bbr_main`); `on_ack` does nothing. Window arithmetic is in bytes, BBR's packet constants
//! times SMSS; bandwidth in payload bytes per second.
//!
//! | tcp_bbr.c (v1) | here |
//! |---|---|
//! | STARTUP: pacing and cwnd gain 2/ln 2 (`bbr_high_gain` = 2885/1000 + 1/256) | same |
//! | full pipe: 3 rounds without 25 % growth of the max bandwidth, app-limited rounds not counted (`bbr_check_full_bw_reached`) | same |
//! | DRAIN: pacing gain ln 2/2, until inflight ≤ 1 BDP (with quantum budget); ssthresh = that | same; inflight is the pipe after the ACK (no EDT adjustment, `bbr_packets_in_net_at_edt`) |
//! | PROBE_BW: pacing gain cycle 5/4, 3/4, 1 × 6, a phase lasting min RTT; 5/4 ends early only when inflight reaches 5/4 BDP or on loss, 3/4 early when inflight ≤ BDP; random starting phase other than 3/4 | same; the starting phase is drawn from a hash of the instant and the delivered count (no RNG: models are deterministic) |
//! | PROBE_RTT: when the min RTT is 10 s old, cwnd 4 packets for max(200 ms, one round) after inflight ≤ 4, then the mode before (STARTUP if the pipe never filled); the connection is app-limited meanwhile | same (the endpoint marks the rate sampler app-limited: [`CongestionController::marks_app_limited`]) |
//! | max-bandwidth filter over 10 rounds (`bbr_bw_rtts` = CYCLE_LEN + 2), Kathleen Nichols' 3-sample windowed max (`lib/win_minmax.c`) | same |
//! | min-RTT filter over 10 s; an expired filter takes the current sample (not one of an ACK maybe delayed, `is_ack_delayed`) | same, without the delayed-ACK exception (the sender cannot tell) |
//! | cwnd = cwnd_gain × BDP + 3 × TSO quantum, rounded up to even packets, + 2 packets in the 5/4 phase; growth by acked bytes up to it; at least 4 packets; before the pipe fills grows while below target or fewer than IW delivered | same; the quantum (`bbr_tso_segs_goal`: pacing rate × 1 ms, at least 2 segments, 1 below 1.2 Mbit/s, at most 127) is also the pacer's send quantum |
//! | pacing rate = gain × bw × 99 % (`bbr_pacing_margin_percent`); before the pipe is full only raised; initially 2.89 × IW / SRTT (1 ms without an RTT) | same |
//! | recovery: cwnd −= losses; on entering fast recovery packet conservation for a round (cwnd = inflight + acked, then ≥ that); on leaving, cwnd ≥ the cwnd saved at the loss (`prior_cwnd`) | same; the endpoint does not apply PRR ([`CongestionController::owns_recovery_window`]); without SACK its NewReno inflation still adds to the window |
//! | RTO (`tcp_enter_loss`, `bbr_set_state(TCP_CA_Loss)`): cwnd = inflight + 1 packet, full_bw reset, a round starts, lt sampling sees a loss | cwnd = 1 SMSS (the endpoint counts everything outstanding lost), the rest the same |
//! | long-term bandwidth (`lt_bw`) for policers: from the first loss, intervals of 4..16 rounds ending in a loss; an interval with loss ≥ 20 % whose rate is within 1/8 (or 4 kbit/s) of the previous one: use their mean for 48 rounds with pacing gain 1 | same; losses and deliveries counted in bytes |
//! | idle restart (`CA_EVENT_TX_START` while app-limited): PROBE_BW paces at gain 1, PROBE_RTT may end | same, "app-limited" being the last rate sample's flag |
//! | ACK aggregation allowance (`bbr_extra_acked`, Linux ≥ 4.20) | not modelled: cwnd has no extra-acked term |
//! | `bbr_undo_cwnd` after a spurious loss | not modelled (the endpoint has no undo) |

use super::{
    AckEvent, CaState, CongestionController, CongestionEvent, CongestionKind, ControllerInit,
    ControllerProbe, RateSample,
};
use airlink_engine::{Duration, Instant};

/// 2/ln 2: the smallest gain that doubles the sending rate per round (`bbr_high_gain`).
pub const HIGH_GAIN: f64 = 2885.0 / 1000.0 + 1.0 / 256.0;
/// ln 2 / 2 (`bbr_drain_gain`).
pub const DRAIN_GAIN: f64 = 1000.0 / 2885.0;
/// PROBE_BW's cwnd gain (`bbr_cwnd_gain`).
pub const CWND_GAIN: f64 = 2.0;
/// PROBE_BW's pacing-gain cycle (`bbr_pacing_gain`).
pub const PACING_GAIN: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
const CYCLE_LEN: usize = 8;
/// Rounds of the max-bandwidth filter (`bbr_bw_rtts`).
pub const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// Window of the min-RTT filter (`bbr_min_rtt_win_sec`).
pub const MIN_RTT_WIN: Duration = Duration::from_secs(10);
/// Time at the small window in PROBE_RTT (`bbr_probe_rtt_mode_ms`).
pub const PROBE_RTT_TIME: Duration = Duration::from_millis(200);
/// Smallest cwnd, and PROBE_RTT's, packets (`bbr_cwnd_min_target`).
pub const CWND_MIN_PACKETS: u64 = 4;
/// Full pipe: growth below this factor ... (`bbr_full_bw_thresh`)
const FULL_BW_THRESH: f64 = 1.25;
/// ... for this many rounds (`bbr_full_bw_cnt`).
const FULL_BW_CNT: u32 = 3;
const PACING_MARGIN: f64 = 0.99;
const LT_INTVL_MIN_RTTS: u64 = 4;
/// 50/256 ≈ 20 % loss (`bbr_lt_loss_thresh`).
const LT_LOSS_THRESH: f64 = 50.0 / 256.0;
const LT_BW_RATIO: f64 = 1.0 / 8.0;
/// 4 kbit/s in bytes/s (`bbr_lt_bw_diff`).
const LT_BW_DIFF: f64 = 4000.0 / 8.0;
const LT_BW_MAX_RTTS: u64 = 48;
/// Below this pacing rate the quantum is one segment (`bbr_min_tso_rate`, 1.2 Mbit/s).
const MIN_TSO_RATE: f64 = 1_200_000.0 / 8.0;

/// BBR's state machine modes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BbrMode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

impl BbrMode {
    pub fn name(self) -> &'static str {
        match self {
            BbrMode::Startup => "startup",
            BbrMode::Drain => "drain",
            BbrMode::ProbeBw => "probe_bw",
            BbrMode::ProbeRtt => "probe_rtt",
        }
    }
}

/// Kathleen Nichols' windowed running maximum over three samples (Linux `lib/win_minmax.c`),
/// time in rounds.
#[derive(Copy, Clone, Debug, Default)]
struct MaxFilter {
    s: [(u64, f64); 3],
}

impl MaxFilter {
    fn get(&self) -> f64 {
        self.s[0].1
    }

    fn reset(&mut self, t: u64, v: f64) {
        self.s = [(t, v); 3];
    }

    fn update(&mut self, win: u64, t: u64, v: f64) {
        let val = (t, v);
        if v >= self.s[0].1 || t - self.s[2].0 > win {
            self.reset(t, v);
            return;
        }
        if v >= self.s[1].1 {
            self.s[2] = val;
            self.s[1] = val;
        } else if v >= self.s[2].1 {
            self.s[2] = val;
        }
        // `minmax_subwin_update`
        let dt = t - self.s[0].0;
        if dt > win {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if t - self.s[0].0 > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = val;
        }
    }
}

/// BBR v1.
#[derive(Clone, Debug)]
pub struct Bbr {
    smss: u64,
    initial_window: u64,
    cwnd: u64,
    ssthresh: u64,
    mode: BbrMode,
    bw: MaxFilter,
    rtt_cnt: u64,
    next_rtt_delivered: u64,
    round_start: bool,
    packet_conservation: bool,
    prev_ca_state: CaState,
    prior_cwnd: u64,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Instant,
    probe_rtt_done_stamp: Option<Instant>,
    probe_rtt_round_done: bool,
    idle_restart: bool,
    full_bw_reached: bool,
    full_bw: f64,
    full_bw_cnt: u32,
    /// The round in which the pipe was found full.
    full_bw_round: Option<u64>,
    cycle_idx: usize,
    cycle_stamp: Option<Instant>,
    pacing_gain: f64,
    cwnd_gain: f64,
    /// Bytes per second.
    pacing_rate: f64,
    has_seen_rtt: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u64,
    lt_use_bw: bool,
    lt_bw: f64,
    lt_last_delivered: u64,
    lt_last_lost: u64,
    lt_last_stamp: Option<Instant>,
    /// Connection state from the latest rate sample.
    delivered: u64,
    lost: u64,
    delivered_time: Option<Instant>,
    last_app_limited: bool,
    /// PROBE_RTT episodes entered.
    probe_rtt_count: u64,
}

impl Bbr {
    pub fn new(init: &ControllerInit, now: Instant) -> Self {
        let mut b = Bbr {
            smss: init.smss,
            initial_window: init.initial_window,
            cwnd: init.initial_window,
            ssthresh: u64::MAX,
            mode: BbrMode::Startup,
            bw: MaxFilter::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            packet_conservation: false,
            prev_ca_state: CaState::Open,
            prior_cwnd: 0,
            min_rtt: None,
            min_rtt_stamp: now,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            idle_restart: false,
            full_bw_reached: false,
            full_bw: 0.0,
            full_bw_cnt: 0,
            full_bw_round: None,
            cycle_idx: 0,
            cycle_stamp: None,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            pacing_rate: 0.0,
            has_seen_rtt: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0.0,
            lt_last_delivered: 0,
            lt_last_lost: 0,
            lt_last_stamp: None,
            delivered: 0,
            lost: 0,
            delivered_time: None,
            last_app_limited: false,
            probe_rtt_count: 0,
        };
        b.init_pacing_rate(None);
        b
    }

    pub fn mode(&self) -> BbrMode {
        self.mode
    }

    /// Rounds counted (`rtt_cnt`).
    pub fn rounds(&self) -> u64 {
        self.rtt_cnt
    }

    /// The round in which STARTUP found the pipe full.
    pub fn full_bw_round(&self) -> Option<u64> {
        self.full_bw_round
    }

    /// PROBE_RTT episodes so far.
    pub fn probe_rtt_count(&self) -> u64 {
        self.probe_rtt_count
    }

    /// Bandwidth in use (`bbr_bw`): lt_bw when policed, else the max filter; bytes/s.
    pub fn bandwidth(&self) -> f64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.bw.get()
        }
    }

    /// Whether the long-term (policer) bandwidth is in use.
    pub fn lt_in_use(&self) -> bool {
        self.lt_use_bw
    }

    fn max_bw(&self) -> f64 {
        self.bw.get()
    }

    fn init_pacing_rate(&mut self, srtt: Option<Duration>) {
        let rtt = match srtt {
            Some(s) => {
                self.has_seen_rtt = true;
                s.max(Duration::from_micros(1))
            }
            None => Duration::from_millis(1),
        };
        let bw = self.cwnd as f64 / rtt.as_secs_f64();
        self.pacing_rate = bw * HIGH_GAIN * PACING_MARGIN;
    }

    fn set_pacing_rate(&mut self, srtt: Option<Duration>, bw: f64, gain: f64) {
        let rate = bw * gain * PACING_MARGIN;
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_pacing_rate(srtt);
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// `bbr_tso_segs_goal`, in segments.
    fn tso_segs(&self) -> u64 {
        let min = if self.pacing_rate < MIN_TSO_RATE {
            1
        } else {
            2
        };
        let bytes = (self.pacing_rate / 1024.0) as u64;
        (bytes / self.smss).max(min).min(127)
    }

    /// BDP × gain, whole packets rounded up (`bbr_bdp`); IW before an RTT is known.
    fn bdp_packets(&self, bw: f64, gain: f64) -> u64 {
        match self.min_rtt {
            None => self.initial_window.div_ceil(self.smss),
            Some(rtt) => (bw * rtt.as_secs_f64() * gain / self.smss as f64).ceil() as u64,
        }
    }

    /// `bbr_quantization_budget` of `packets`, returned in bytes.
    fn budget(&self, packets: u64) -> u64 {
        let mut p = packets + 3 * self.tso_segs();
        p = (p + 1) & !1;
        if self.mode == BbrMode::ProbeBw && self.cycle_idx == 0 {
            p += 2;
        }
        p * self.smss
    }

    /// `bbr_inflight`: the data in flight BBR aims at for `gain`, bytes.
    fn inflight(&self, bw: f64, gain: f64) -> u64 {
        self.budget(self.bdp_packets(bw, gain))
    }

    fn save_cwnd(&mut self) {
        if self.prev_ca_state == CaState::Open && self.mode != BbrMode::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    fn reset_startup_mode(&mut self) {
        self.mode = BbrMode::Startup;
    }

    fn reset_probe_bw_mode(&mut self, now: Instant) {
        self.mode = BbrMode::ProbeBw;
        // CYCLE_LEN − 1 − rand(7): any phase but 3/4 comes next.
        let h = splitmix64(now.as_nanos() ^ self.delivered.rotate_left(32));
        self.cycle_idx = CYCLE_LEN - 1 - (h % 7) as usize;
        self.advance_cycle_phase();
    }

    fn reset_mode(&mut self, now: Instant) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(now);
        } else {
            self.reset_startup_mode();
        }
    }

    fn advance_cycle_phase(&mut self) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_stamp = self.delivered_time;
    }

    fn is_next_cycle_phase(&self, rs: &RateSample) -> bool {
        let elapsed = match (rs.delivered_time, self.cycle_stamp) {
            (Some(a), Some(b)) => a.saturating_since(b),
            (Some(_), None) => Duration::MAX,
            _ => Duration::ZERO,
        };
        let full_length = elapsed > self.min_rtt.unwrap_or(Duration::ZERO);
        if self.pacing_gain == 1.0 {
            return full_length;
        }
        let inflight = rs.prior_in_flight;
        let bw = self.max_bw();
        if self.pacing_gain > 1.0 {
            return full_length
                && (rs.newly_lost > 0 || inflight >= self.inflight(bw, self.pacing_gain));
        }
        full_length || inflight <= self.inflight(bw, 1.0)
    }

    fn reset_lt_bw_sampling_interval(&mut self) {
        self.lt_last_stamp = self.delivered_time;
        self.lt_last_delivered = self.delivered;
        self.lt_last_lost = self.lost;
        self.lt_rtt_cnt = 0;
    }

    fn reset_lt_bw_sampling(&mut self) {
        self.lt_bw = 0.0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval();
    }

    fn lt_bw_interval_done(&mut self, bw: f64) {
        if self.lt_bw > 0.0 {
            let diff = (bw - self.lt_bw).abs();
            if diff <= LT_BW_RATIO * self.lt_bw || diff * PACING_MARGIN <= LT_BW_DIFF {
                // Two intervals alike: policed.
                self.lt_bw = (bw + self.lt_bw) / 2.0;
                self.lt_use_bw = true;
                self.pacing_gain = 1.0;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval();
    }

    /// `bbr_lt_bw_sampling`; `losses` and `app_limited` from the sample (an RTO passes a loss).
    fn lt_bw_sampling(&mut self, now: Instant, losses: bool, app_limited: bool) {
        if self.lt_use_bw {
            if self.mode == BbrMode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling();
                    self.reset_probe_bw_mode(now);
                }
            }
            return;
        }
        if !self.lt_is_sampling {
            if !losses {
                return;
            }
            self.reset_lt_bw_sampling_interval();
            self.lt_is_sampling = true;
        }
        if app_limited {
            self.reset_lt_bw_sampling();
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling();
            return;
        }
        if !losses {
            return;
        }
        let lost = self.lost - self.lt_last_lost;
        let delivered = self.delivered - self.lt_last_delivered;
        if delivered == 0 || (lost as f64) < LT_LOSS_THRESH * delivered as f64 {
            return;
        }
        let t = match (self.delivered_time, self.lt_last_stamp) {
            (Some(a), Some(b)) => a.saturating_since(b),
            _ => Duration::ZERO,
        };
        if t < Duration::from_millis(1) {
            return;
        }
        self.lt_bw_interval_done(delivered as f64 / t.as_secs_f64());
    }

    fn update_bw(&mut self, now: Instant, rs: &RateSample) {
        self.round_start = false;
        let (Some(prior), Some(rate)) = (rs.prior_delivered, rs.delivery_rate) else {
            return;
        };
        if prior >= self.next_rtt_delivered {
            self.next_rtt_delivered = self.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(now, rs.newly_lost > 0, rs.is_app_limited);
        if !rs.is_app_limited || rate >= self.max_bw() {
            self.bw.update(BW_RTTS, self.rtt_cnt, rate);
        }
    }

    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        if self.max_bw() >= self.full_bw * FULL_BW_THRESH {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
        if self.full_bw_reached && self.full_bw_round.is_none() {
            self.full_bw_round = Some(self.rtt_cnt);
        }
    }

    fn check_drain(&mut self, now: Instant, rs: &RateSample) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
            self.ssthresh = self.inflight(self.max_bw(), 1.0);
        }
        if self.mode == BbrMode::Drain && rs.in_flight <= self.inflight(self.max_bw(), 1.0) {
            self.reset_probe_bw_mode(now);
        }
    }

    fn check_probe_rtt_done(&mut self, now: Instant) {
        if self.probe_rtt_done_stamp.is_none_or(|d| now <= d) {
            return;
        }
        self.min_rtt_stamp = now;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.reset_mode(now);
    }

    fn update_min_rtt(&mut self, now: Instant, rs: &RateSample) {
        let expired = now > self.min_rtt_stamp + MIN_RTT_WIN;
        if let Some(r) = rs.rtt {
            if self.min_rtt.is_none_or(|m| r < m) || expired {
                self.min_rtt = Some(r);
                self.min_rtt_stamp = now;
            }
        }
        if expired && !self.idle_restart && self.mode != BbrMode::ProbeRtt {
            self.mode = BbrMode::ProbeRtt;
            self.probe_rtt_count += 1;
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
        }
        if self.mode == BbrMode::ProbeRtt {
            if self.probe_rtt_done_stamp.is_none() && rs.in_flight <= CWND_MIN_PACKETS * self.smss {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_TIME);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = self.delivered;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(now);
                }
            }
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            BbrMode::Startup => (HIGH_GAIN, HIGH_GAIN),
            BbrMode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            BbrMode::ProbeBw if self.lt_use_bw => (1.0, CWND_GAIN),
            BbrMode::ProbeBw => (PACING_GAIN[self.cycle_idx], CWND_GAIN),
            BbrMode::ProbeRtt => (1.0, 1.0),
        };
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: Some(cwnd) under packet conservation.
    fn recover_or_restore(&mut self, rs: &RateSample, acked: u64) -> (bool, u64) {
        let (prev, state) = (self.prev_ca_state, rs.ca_state);
        let mut cwnd = self.cwnd;
        if rs.newly_lost > 0 {
            cwnd = cwnd.saturating_sub(rs.newly_lost).max(self.smss);
        }
        let recovering = |s: CaState| s != CaState::Open;
        if state == CaState::Recovery && prev != CaState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = self.delivered;
            cwnd = rs.in_flight + acked;
        } else if recovering(prev) && !recovering(state) {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (true, cwnd.max(rs.in_flight + acked));
        }
        (false, cwnd)
    }

    fn set_cwnd(&mut self, rs: &RateSample, bw: f64) {
        let acked = rs.newly_delivered;
        if acked > 0 {
            let (conserving, mut cwnd) = self.recover_or_restore(rs, acked);
            if !conserving {
                let target = self.inflight(bw, self.cwnd_gain);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || self.delivered < self.initial_window {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_PACKETS * self.smss);
            }
            self.cwnd = cwnd;
        }
        if self.mode == BbrMode::ProbeRtt {
            self.cwnd = self.cwnd.min(CWND_MIN_PACKETS * self.smss);
        }
    }
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl CongestionController for Bbr {
    fn on_sent(&mut self, now: Instant, bytes: u64, in_flight: u64) {
        // `bbr_cwnd_event(CA_EVENT_TX_START)`: restarting from idle while app-limited.
        if in_flight <= bytes && self.last_app_limited {
            self.idle_restart = true;
            match self.mode {
                BbrMode::ProbeBw => {
                    self.pacing_rate = self.bandwidth() * PACING_MARGIN;
                }
                BbrMode::ProbeRtt => self.check_probe_rtt_done(now),
                _ => {}
            }
        }
    }

    fn on_ack(&mut self, _now: Instant, _ack: &AckEvent) {}

    fn on_congestion_event(&mut self, now: Instant, ev: &CongestionEvent<'_>) {
        // `bbr_ssthresh`: remember cwnd, leave ssthresh. An ECN reduction (`tcp_enter_cwr`)
        // asks the same and does nothing more: BBR v1 does not react to ECN.
        self.save_cwnd();
        if let CongestionKind::Timeout { .. } = ev.kind {
            // `tcp_enter_loss` then `bbr_set_state(TCP_CA_Loss)`.
            self.cwnd = self.smss;
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0.0;
            self.round_start = true;
            self.lt_bw_sampling(now, true, false);
        }
    }

    fn on_rate_sample(&mut self, now: Instant, rs: &RateSample) {
        self.delivered = rs.delivered_total;
        self.lost = rs.lost_total;
        self.delivered_time = rs.delivered_time;
        self.last_app_limited = rs.is_app_limited;
        if self.min_rtt.is_none() {
            if let Some(m) = rs.min_rtt {
                self.min_rtt = Some(m);
                self.min_rtt_stamp = now;
            }
        }
        // `bbr_update_model`
        self.update_bw(now, rs);
        if self.mode == BbrMode::ProbeBw && self.is_next_cycle_phase(rs) {
            self.advance_cycle_phase();
        }
        self.check_full_bw_reached(rs);
        self.check_drain(now, rs);
        self.update_min_rtt(now, rs);
        self.update_gains();
        let bw = self.bandwidth();
        self.set_pacing_rate(rs.srtt, bw, self.pacing_gain);
        self.set_cwnd(rs, bw);
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn name(&self) -> &'static str {
        "bbr"
    }

    fn probe(&self) -> ControllerProbe {
        ControllerProbe {
            mode: Some(self.mode.name()),
            bandwidth: Some(self.bandwidth()),
            min_rtt: self.min_rtt.map(|d| d.as_secs_f64()),
            pacing_gain: Some(self.pacing_gain),
            rounds: Some(self.rtt_cnt),
            lt_bandwidth: self.lt_use_bw.then_some(self.lt_bw),
            ..ControllerProbe::default()
        }
    }

    fn pacing_rate(&self) -> Option<u64> {
        Some((self.pacing_rate as u64).max(1))
    }

    fn send_quantum(&self) -> u64 {
        self.tso_segs() * self.smss
    }

    fn marks_app_limited(&self) -> bool {
        self.mode == BbrMode::ProbeRtt
    }

    fn owns_recovery_window(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `lib/win_minmax.c`: a larger sample replaces all; the max expires after the window,
    /// the second- and third-best taking over.
    #[test]
    fn windowed_max_expires_after_its_window() {
        let mut f = MaxFilter::default();
        f.update(10, 1, 100.0);
        f.update(10, 2, 50.0);
        f.update(10, 7, 40.0);
        assert_eq!(f.get(), 100.0);
        f.update(10, 12, 30.0);
        // 50 came too soon after 100 to be kept; 40, a quarter window later, was.
        assert_eq!(f.get(), 40.0, "100 is 11 rounds old");
        f.update(10, 30, 10.0);
        assert_eq!(f.get(), 10.0);
        f.update(10, 31, 20.0);
        assert_eq!(f.get(), 20.0);
    }

    #[test]
    fn gains_are_linux_constants() {
        assert!((HIGH_GAIN - 2.0 / std::f64::consts::LN_2).abs() < 0.005);
        assert!((DRAIN_GAIN - 1.0 / HIGH_GAIN).abs() < 0.005);
    }
}
