//! CUBIC (RFC 9438), as in spec D.4.
//!
//! Window arithmetic is in segments (f64) as in the RFC; `cwnd` is stored in bytes.
//!
//! | RFC 9438 / spec D.4 | here |
//! |---|---|
//! | C = 0.4, β = 0.7, fast convergence, Reno-friendly region | [`CubicConfig::RFC9438`]; [`CubicConfig::LINUX`] has β = 717/1024, C = 410/1024 and `linux_update` (below) |
//! | loss: ssthresh = max(FlightSize·β, 2 SMSS) (r) | same; `ssthresh_from_cwnd` uses cwnd·β as Linux does |
//! | fast convergence: W_max = cwnd·(1+β)/2 if cwnd < previous W_max | same |
//! | epoch at first CA ACK: K = ∛((W_max − cwnd_epoch)/C), K = 0 if W_max ≤ cwnd_epoch | same; the curve is then anchored at cwnd_epoch (Linux `bic_origin_point`) |
//! | target = clamp(W_cubic(t + SRTT), cwnd, 1.5·cwnd); cwnd += (target − cwnd)/cwnd per acked segment | same |
//! | W_est += α·n/cwnd, α = 3(1−β)/(1+β) until W_est ≥ cwnd_prior, then 1 | same (n = acked segments, or delivered ones with `count_delivered`); `linux_update`: α throughout (`tcp_friendliness` in `bictcp_update`) |
//! | W_cubic(t) < W_est → cwnd = W_est | cwnd = max(cwnd, W_est): never shrinks in CA (A); `linux_update`: cwnd += max(target − cwnd, W_est − cwnd)/cwnd per segment, at least 1/20 before any loss and after an RTO, at most 1/2 (Linux `cnt`), target one min RTT ahead |
//! | t excludes application-limited time | app-limited ACKs ([`AckEvent::app_limited`]: cwnd not in use, Linux `tcp_is_cwnd_limited`) move the epoch start forward by the time since the previous ACK and do not grow cwnd (A) |
//! | RTO: ssthresh as on loss; next CA stage with K = 0, W_max = W_est = cwnd (r, RFC §4.8) | same (ssthresh held on consecutive RTOs as RFC 5681); `linux_update`: W_max forgotten (`bictcp_reset`) |
//! | slow start | RFC 5681 slow start (with `count_delivered`: Linux `tcp_slow_start`, + delivered bytes up to ssthresh, the rest for avoidance); with `hystart`, HyStart's delay test ends it early (Linux `tcp_cubic.c` `hystart_update`, `HYSTART_DELAY`), with `hystart_ack_train` also its ACK-train test (`HYSTART_ACK_TRAIN`) |

use super::{
    in_unit_open, newreno_exit_window, AckEvent, CongestionConfigError, CongestionController,
    CongestionEvent, CongestionKind, ControllerInit, RecoveryExit, RecoveryKind,
};
use airlink_engine::Instant;

/// CUBIC parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct CubicConfig {
    /// C, segments/s³. Default 0.4 (RFC 9438 §5).
    pub c: f64,
    /// β_cubic, multiplicative decrease. Default 0.7 (RFC 9438 §4.6).
    pub beta: f64,
    /// Fast convergence (RFC 9438 §4.7). Default on.
    pub fast_convergence: bool,
    /// Reno-friendly region (RFC 9438 §4.3). Default on.
    pub reno_friendly: bool,
    /// Base ssthresh on cwnd instead of FlightSize (Linux). Default off (RFC).
    pub ssthresh_from_cwnd: bool,
    /// HyStart's delay test (Linux `tcp_cubic.c`, module parameter `hystart`, on by default
    /// there): once cwnd ≥ 16 segments, slow start ends (ssthresh = cwnd) in the first round
    /// whose smallest of its first 8 RTT samples exceeds the connection's minimum RTT by
    /// clamp(min RTT/8, 4 ms, 16 ms). Off: slow start runs until a loss, which on a deep
    /// drop-tail queue overshoots by up to a window. Default off (RFC 9438 leaves it optional).
    pub hystart: bool,
    /// With `hystart`, also HyStart's ACK-train test (Linux `hystart_detect` includes it by
    /// default): slow start ends once the ACKs of one round, none more than 2 ms after the
    /// previous, have kept coming for half the minimum RTT, i.e. cwnd is near one
    /// bandwidth-delay product. Only fast links give such trains (at 10 Mbit/s delayed ACKs
    /// are 2.4 ms apart); there slow start doubling per RTT outruns the delay test, which
    /// only sees the queue a round late. Default off.
    pub hystart_ack_train: bool,
    /// Linux `bictcp_update` (`tcp_cubic.c`) where it differs from RFC 9438 §4.2-4.3: W_est
    /// grows at α = 3(1−β)/(1+β) throughout (RFC: α = 1 once W_est ≥ cwnd_prior, which makes
    /// the window twice as fast in the Reno-friendly region after a small loss); cwnd moves
    /// towards W_est by (W_est − cwnd)/cwnd per acked segment instead of jumping onto it; the
    /// target looks one *minimum* RTT ahead (`delay_min`; RFC: SRTT); before the first loss,
    /// and after an RTO (`bictcp_reset` clears `last_max_cwnd`), cwnd grows at least 5 % per
    /// RTT (`cnt` ≤ 20). Default off.
    pub linux_update: bool,
}

impl CubicConfig {
    /// RFC 9438 constants.
    pub const RFC9438: CubicConfig = CubicConfig {
        c: 0.4,
        beta: 0.7,
        fast_convergence: true,
        reno_friendly: true,
        ssthresh_from_cwnd: false,
        hystart: false,
        hystart_ack_train: false,
        linux_update: false,
    };
    /// Linux `tcp_cubic.c` of the spec's \[S3\] era: β = 717/1024, C = 41·10/1024 (v).
    pub const LINUX: CubicConfig = CubicConfig {
        c: 410.0 / 1024.0,
        beta: 717.0 / 1024.0,
        fast_convergence: true,
        reno_friendly: true,
        ssthresh_from_cwnd: true,
        hystart: false,
        hystart_ack_train: true,
        linux_update: true,
    };

    /// Checks C > 0 (finite) and β in (0, 1).
    pub fn validate(&self) -> Result<(), CongestionConfigError> {
        if !(self.c.is_finite() && self.c > 0.0) {
            return Err(CongestionConfigError::CubicC);
        }
        if !in_unit_open(self.beta) {
            return Err(CongestionConfigError::CubicBeta);
        }
        Ok(())
    }
}

impl Default for CubicConfig {
    fn default() -> Self {
        Self::RFC9438
    }
}

/// K = ∛((W_max − cwnd_epoch)/C) in seconds; 0 when W_max ≤ cwnd_epoch (RFC 9438 eq. 2).
pub fn cubic_k(w_max: f64, cwnd_epoch: f64, c: f64) -> f64 {
    if w_max <= cwnd_epoch {
        0.0
    } else {
        libm::cbrt((w_max - cwnd_epoch) / c)
    }
}

/// W_cubic(t) = C(t − K)³ + W_max, segments (RFC 9438 eq. 1).
pub fn w_cubic(t: f64, k: f64, w_max: f64, c: f64) -> f64 {
    let d = t - k;
    c * d * d * d + w_max
}

/// HyStart's per-round state (Linux `bictcp` `round_start`, `last_ack`, `end_seq`, `curr_rtt`,
/// `sample_cnt`).
#[derive(Clone, Debug, Default)]
struct HyStart {
    /// The round ends when the cumulative ACK passes this (HighData at its start).
    end_seq: u64,
    samples: u32,
    curr_rtt: Option<airlink_engine::Duration>,
    round_start: Instant,
    /// The last ACK of the round's unbroken ACK train.
    train_end: Instant,
}

/// ACKs at most this far apart make a train (Linux `hystart_ack_delta_us`).
const HYSTART_ACK_DELTA: airlink_engine::Duration = airlink_engine::Duration::from_millis(2);

/// Samples per round before HyStart judges it (Linux `HYSTART_MIN_SAMPLES`).
const HYSTART_MIN_SAMPLES: u32 = 8;
/// HyStart acts only from this window, segments (Linux `hystart_low_window`).
const HYSTART_LOW_WINDOW: f64 = 16.0;

#[derive(Clone, Debug)]
struct Epoch {
    start: Instant,
    k: f64,
    /// The plateau the curve returns to (W_max, or cwnd_epoch when that is larger).
    origin: f64,
    w_est: f64,
}

/// RFC 9438 CUBIC.
#[derive(Clone, Debug)]
pub struct Cubic {
    cfg: CubicConfig,
    smss: u64,
    cwnd: u64,
    ssthresh: u64,
    /// W_max of the last congestion event, segments (0 = none yet).
    w_max: f64,
    /// cwnd before the last reduction, segments.
    cwnd_prior: f64,
    epoch: Option<Epoch>,
    after_timeout: bool,
    last_ack: Option<Instant>,
    hystart: HyStart,
    /// Grow by delivered bytes (`ControllerInit::count_delivered`).
    count_delivered: bool,
}

impl Cubic {
    pub fn new(cfg: CubicConfig, init: &ControllerInit) -> Self {
        Cubic {
            cfg,
            smss: init.smss.max(1),
            cwnd: init.initial_window.max(1),
            ssthresh: init.initial_ssthresh,
            w_max: 0.0,
            cwnd_prior: 0.0,
            epoch: None,
            after_timeout: false,
            last_ack: None,
            hystart: HyStart::default(),
            count_delivered: init.count_delivered,
        }
    }

    /// HyStart on one ACK in slow start: true when slow start should end.
    fn hystart_exit(&mut self, now: Instant, ack: &AckEvent) -> bool {
        let cwnd = self.segs(self.cwnd);
        let h = &mut self.hystart;
        if ack.ack > h.end_seq {
            *h = HyStart {
                end_seq: ack.high_data,
                round_start: now,
                train_end: now,
                ..HyStart::default()
            };
        }
        let (Some(rtt), Some(min)) = (ack.rtt, ack.min_rtt) else {
            return false;
        };
        // ACK-train test: the round's ACKs, each within 2 ms of the previous, have been
        // arriving for more than half the minimum RTT, so the pipe is full (Linux
        // `HYSTART_ACK_TRAIN`, without the sub-millisecond allowance for pacing and TSO).
        if self.cfg.hystart_ack_train && now.saturating_since(h.train_end) <= HYSTART_ACK_DELTA {
            h.train_end = now;
            if cwnd >= HYSTART_LOW_WINDOW
                && now.saturating_since(h.round_start).as_nanos() > min.as_nanos() / 2
            {
                return true;
            }
        }
        if h.samples < HYSTART_MIN_SAMPLES {
            h.samples += 1;
            h.curr_rtt = Some(h.curr_rtt.map_or(rtt, |c| c.min(rtt)));
            if h.samples == HYSTART_MIN_SAMPLES && cwnd >= HYSTART_LOW_WINDOW {
                let ms = airlink_engine::Duration::from_millis;
                let thresh =
                    airlink_engine::Duration::from_nanos(min.as_nanos() / 8).clamp(ms(4), ms(16));
                return h.curr_rtt.is_some_and(|c| c >= min + thresh);
            }
        }
        false
    }

    fn segs(&self, bytes: u64) -> f64 {
        bytes as f64 / self.smss as f64
    }

    /// W_max after a congestion event at `cwnd` segments (fast convergence applied).
    pub fn w_max_after_loss(cfg: &CubicConfig, cwnd: f64, prev_w_max: f64) -> f64 {
        if cfg.fast_convergence && cwnd < prev_w_max {
            cwnd * (1.0 + cfg.beta) / 2.0
        } else {
            cwnd
        }
    }

    fn reduce(&mut self, flight: u64) {
        let cwnd = self.segs(self.cwnd);
        self.cwnd_prior = cwnd;
        self.w_max = Self::w_max_after_loss(&self.cfg, cwnd, self.w_max);
        let base = if self.cfg.ssthresh_from_cwnd {
            self.cwnd
        } else {
            flight
        };
        self.ssthresh = ((base as f64 * self.cfg.beta).round() as u64).max(2 * self.smss);
    }

    /// W_max (segments) in force.
    pub fn w_max(&self) -> f64 {
        self.w_max
    }
}

impl CongestionController for Cubic {
    fn on_ack(&mut self, now: Instant, ack: &AckEvent) {
        let last = self.last_ack.replace(now);
        if ack.in_recovery || ack.acked_bytes == 0 {
            return;
        }
        if ack.app_limited {
            // Time the sender did not use its cwnd does not count towards t (RFC 9438 §5.8).
            if let (Some(ep), Some(last)) = (self.epoch.as_mut(), last) {
                ep.start += now.saturating_since(last);
            }
            return;
        }
        let mut acked = if self.count_delivered {
            ack.delivered_bytes
        } else {
            ack.acked_bytes
        };
        if self.cwnd < self.ssthresh {
            if self.cfg.hystart && self.hystart_exit(now, ack) {
                self.ssthresh = self.cwnd;
                return;
            }
            if !self.count_delivered {
                self.cwnd += acked.min(self.smss);
                return;
            }
            // Linux `tcp_slow_start`: up to ssthresh; the rest counts for avoidance.
            let add = acked.min(self.ssthresh - self.cwnd);
            self.cwnd += add;
            acked -= add;
            if acked == 0 {
                return;
            }
        }
        let cwnd = self.segs(self.cwnd);
        if self.epoch.is_none() {
            if self.after_timeout {
                // RFC 9438 §4.8: first CA stage after an RTO starts at the current window.
                self.w_max = cwnd;
                self.after_timeout = false;
            }
            let origin = self.w_max.max(cwnd);
            self.epoch = Some(Epoch {
                start: now,
                k: cubic_k(self.w_max, cwnd, self.cfg.c),
                origin,
                w_est: cwnd,
            });
        }
        let (c, beta, linux) = (self.cfg.c, self.cfg.beta, self.cfg.linux_update);
        let no_loss_yet = self.w_max == 0.0;
        let ep = self.epoch.as_mut().expect("epoch set above");
        let t = now.saturating_since(ep.start).as_secs_f64();
        let rtt = if linux {
            ack.min_rtt.or(ack.rtt)
        } else {
            ack.srtt.or(ack.rtt)
        };
        let rtt = rtt.map_or(0.0, |d| d.as_secs_f64());
        let n = acked as f64 / self.smss as f64;
        let alpha = if ep.w_est >= self.cwnd_prior && !linux {
            1.0
        } else {
            3.0 * (1.0 - beta) / (1.0 + beta)
        };
        ep.w_est += alpha * n / cwnd;
        let target = w_cubic(t + rtt, ep.k, ep.origin, c).clamp(cwnd, 1.5 * cwnd);
        let new = if linux {
            // Linux `bictcp_update`: cwnd grows by 1/cnt per acked segment, cnt from the
            // cubic target; at least 5 % per RTT before any loss (cnt <= 20); towards W_est,
            // not onto it, when that is ahead; at most 1.5x per RTT (cnt >= 2).
            let mut per_segment = (target - cwnd) / cwnd;
            if no_loss_yet {
                per_segment = per_segment.max(1.0 / 20.0);
            }
            if self.cfg.reno_friendly {
                per_segment = per_segment.max((ep.w_est - cwnd) / cwnd);
            }
            cwnd + per_segment.min(0.5) * n
        } else if self.cfg.reno_friendly && w_cubic(t, ep.k, ep.origin, c) < ep.w_est {
            ep.w_est
        } else {
            cwnd + (target - cwnd) / cwnd * n
        };
        let new_bytes = (new * self.smss as f64) as u64;
        self.cwnd = self.cwnd.max(new_bytes);
    }

    fn on_congestion_event(&mut self, _now: Instant, ev: &CongestionEvent<'_>) {
        self.epoch = None;
        match ev.kind {
            CongestionKind::FastRetransmit | CongestionKind::Ecn => {
                self.reduce(ev.flight_size);
                self.cwnd = self.ssthresh;
                self.after_timeout = false;
            }
            CongestionKind::Timeout { consecutive } => {
                if consecutive == 0 {
                    self.reduce(ev.flight_size);
                }
                self.cwnd = self.smss;
                if self.cfg.linux_update {
                    // `bictcp_reset` on entering the Loss state forgets W_max (after ssthresh
                    // was taken from it): the next epoch starts at cwnd with K = 0 and the
                    // no-loss-yet minimum growth.
                    self.w_max = 0.0;
                } else {
                    self.after_timeout = true;
                }
            }
        }
    }

    fn on_recovery_exit(&mut self, _now: Instant, exit: &RecoveryExit) {
        if exit.kind == RecoveryKind::NewReno {
            self.cwnd = newreno_exit_window(self.ssthresh, exit.flight_size, self.smss);
        }
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn name(&self) -> &'static str {
        "cubic"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::congestion::CongestionEvent;
    use airlink_engine::Duration;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// An ACK of new data, `bytes` acknowledged and delivered, on a path of constant RTT.
    fn ack_of(bytes: u64, rtt: Duration) -> AckEvent {
        AckEvent {
            ack: 0,
            acked_bytes: bytes,
            sacked_bytes: 0,
            delivered_bytes: bytes,
            rtt: Some(rtt),
            srtt: Some(rtt),
            min_rtt: Some(rtt),
            in_flight: 0,
            high_data: 0,
            in_recovery: false,
            app_limited: false,
        }
    }

    /// Spec "Test vectors D": W_max = 100, cwnd_epoch = 70.
    #[test]
    fn k_and_w_cubic_vectors() {
        let k = cubic_k(100.0, 70.0, 0.4);
        assert!(close(k, 4.21716, 5e-6), "K = {k}");
        let expect = [
            (0.0, 70.0),
            (1.0, 86.681),
            (2.0, 95.640),
            (5.0, 100.192),
            (6.0, 102.267),
        ];
        for (t, w) in expect {
            let got = w_cubic(t, k, 100.0, 0.4);
            assert!(close(got, w, 5e-4), "W_cubic({t}) = {got}, want {w}");
        }
        assert_eq!(cubic_k(60.0, 70.0, 0.4), 0.0);
    }

    /// Spec: fast convergence at cwnd 90 < W_max 100 → W_max = 76.5, ssthresh = 63.
    #[test]
    fn fast_convergence_vector() {
        let smss = 1000;
        let init = ControllerInit {
            smss,
            initial_window: 90 * smss,
            initial_ssthresh: u64::MAX,
            count_delivered: false,
        };
        let mut c = Cubic::new(CubicConfig::RFC9438, &init);
        c.w_max = 100.0;
        let ev = CongestionEvent {
            kind: CongestionKind::FastRetransmit,
            flight_size: 90 * smss,
            in_flight: 0,
            loss: None,
        };
        c.on_congestion_event(Instant::ZERO, &ev);
        assert!(close(c.w_max(), 76.5, 1e-9));
        assert_eq!(c.ssthresh(), 63 * smss);
        assert_eq!(c.window(), 63 * smss);
        // Without fast convergence W_max is the cwnd at the event.
        let cfg = CubicConfig {
            fast_convergence: false,
            ..CubicConfig::RFC9438
        };
        let mut c = Cubic::new(cfg, &init);
        c.w_max = 100.0;
        c.on_congestion_event(Instant::ZERO, &ev);
        assert!(close(c.w_max(), 90.0, 1e-9));
    }

    /// After a loss at W_max = 100 the window follows the concave curve back to W_max at K,
    /// and stays above the Reno estimate.
    #[test]
    fn window_returns_to_w_max_near_k() {
        let smss = 1000;
        let init = ControllerInit {
            smss,
            initial_window: 100 * smss,
            initial_ssthresh: u64::MAX,
            count_delivered: false,
        };
        let mut c = Cubic::new(
            CubicConfig {
                reno_friendly: false,
                ..CubicConfig::RFC9438
            },
            &init,
        );
        let ev = CongestionEvent {
            kind: CongestionKind::FastRetransmit,
            flight_size: 100 * smss,
            in_flight: 0,
            loss: None,
        };
        c.on_congestion_event(Instant::ZERO, &ev);
        assert_eq!(c.window(), 70 * smss);
        let rtt = Duration::from_millis(100);
        let mut now = Instant::ZERO;
        // One ACK per segment, cwnd ACKs per RTT, for 4.2 s (≈ K).
        while now < Instant::from_millis(4217) {
            let per_rtt = c.window() / smss;
            let step = Duration::from_nanos(rtt.as_nanos() / per_rtt);
            for _ in 0..per_rtt {
                now += step;
                c.on_ack(now, &ack_of(smss, rtt));
            }
        }
        let w = c.window() as f64 / smss as f64;
        assert!((99.0..=101.5).contains(&w), "cwnd at K = {w} segments");
    }

    /// `rounds` round trips of 100 ms with delayed ACKs: the window's whole segments
    /// acknowledged two per ACK (the last alone if odd), spread over the round. Returns cwnd
    /// in segments.
    fn run_rounds(c: &mut Cubic, now: &mut Instant, rounds: u32) -> f64 {
        let smss = 1000;
        let rtt = Duration::from_millis(100);
        for _ in 0..rounds {
            let segments = c.window() / smss;
            let step = Duration::from_nanos(rtt.as_nanos() / segments.div_ceil(2));
            for i in (0..segments).step_by(2) {
                *now += step;
                let bytes = smss * (segments - i).min(2);
                c.on_ack(*now, &ack_of(bytes, rtt));
            }
        }
        c.window() as f64 / smss as f64
    }

    fn cubic_at(cfg: CubicConfig, cwnd: u64, ssthresh: u64) -> Cubic {
        Cubic::new(
            cfg,
            &ControllerInit {
                smss: 1000,
                initial_window: cwnd * 1000,
                initial_ssthresh: ssthresh * 1000,
                count_delivered: true,
            },
        )
    }

    /// The Reno-friendly region after a loss at 10 segments (the cubic term made negligible
    /// with a tiny C): Linux's W_est grows α = 3(1−β)/(1+β) ≈ 0.53 segment per RTT throughout,
    /// so 40 round trips take cwnd from 7 to about 7 + 40·0.53 ≈ 28; RFC 9438 switches to
    /// α = 1 once W_est passes the 10 segments before the loss (after about 6 round trips),
    /// reaching about 10 + 34 = 44.
    #[test]
    fn reno_friendly_growth_linux_against_rfc() {
        let loss = CongestionEvent {
            kind: CongestionKind::FastRetransmit,
            flight_size: 10_000,
            in_flight: 10_000,
            loss: None,
        };
        let grow = |cfg: CubicConfig| {
            let mut c = cubic_at(CubicConfig { c: 1e-9, ..cfg }, 10, 1000);
            c.on_congestion_event(Instant::ZERO, &loss);
            let mut now = Instant::ZERO;
            run_rounds(&mut c, &mut now, 40)
        };
        let linux = grow(CubicConfig::LINUX);
        let alpha = 3.0 * (1.0 - 717.0 / 1024.0) / (1.0 + 717.0 / 1024.0);
        // Rounds deliver whole segments only, and cwnd trails W_est by about a round's
        // growth: a little under the estimate.
        let expect = 7.0 + 40.0 * alpha;
        assert!(
            (expect - 1.5..=expect + 0.5).contains(&linux),
            "Linux: {linux} segments, about {expect}"
        );
        let rfc = grow(CubicConfig {
            beta: 717.0 / 1024.0,
            ..CubicConfig::RFC9438
        });
        assert!((41.0..=45.0).contains(&rfc), "RFC 9438: {rfc} segments");
    }

    /// Congestion avoidance before any loss (slow start ended by HyStart, W_max unknown):
    /// Linux grows at least 5 % per RTT (`cnt` ≤ 20), 100 · 1.05^20 ≈ 265 segments after 20
    /// round trips; the RFC curve anchored at cwnd with K = 0 is almost flat for 2 s, and
    /// W_est adds a segment per RTT.
    #[test]
    fn no_loss_yet_grows_five_percent_per_rtt_in_linux() {
        let mut now = Instant::ZERO;
        let mut linux = cubic_at(CubicConfig::LINUX, 100, 100);
        let w = run_rounds(&mut linux, &mut now, 20);
        let expect = 100.0 * 1.05f64.powi(20);
        assert!(
            (expect * 0.97..=expect * 1.01).contains(&w),
            "Linux: {w}, about {expect}"
        );
        let mut now = Instant::ZERO;
        let mut rfc = cubic_at(CubicConfig::RFC9438, 100, 100);
        let w = run_rounds(&mut rfc, &mut now, 20);
        assert!((118.0..=126.0).contains(&w), "RFC 9438: {w}");
    }
}
