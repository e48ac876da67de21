//! TCP Veno (spec D.5): Reno whose increase and loss response depend on an estimate of the
//! flow's backlog in the bottleneck queue.
//!
//! References: C. P. Fu and S. C. Liew, "TCP Veno: TCP enhancement for transmission over
//! wireless access networks", IEEE JSAC 21(2), 2003; Linux `net/ipv4/tcp_veno.c` (v).
//!
//! - BaseRTT = smallest RTT sample of the connection; RTT = smallest sample in the last round
//!   (a round ends when the cumulative ACK reaches the HighData seen at its start).
//! - Backlog N = cwnd·(RTT − BaseRTT)/RTT segments ([`veno_backlog`]).
//! - Congestion avoidance: N < β → Reno (+1 SMSS per RTT); N ≥ β → +1 SMSS every other RTT
//!   (a toggle flips each time a cwnd's worth of bytes has been acknowledged; cwnd grows only
//!   on the flips that find it set).
//! - Fast retransmit: ssthresh = max(⌊cwnd·4/5⌋, 2 SMSS) if N < β (loss taken as random),
//!   else max(⌊cwnd/2⌋, 2 SMSS) ([`veno_ssthresh`]); cwnd = ssthresh.
//! - Slow start and RTO: Reno.
//!
//! | Linux `tcp_veno.c` / spec D.5 | here |
//! |---|---|
//! | segments; N stored doubled and compared with 2β = 6 | bytes for cwnd, f64 segments for N, compared with β |
//! | RTT = min sample since the previous ACK (`minrtt` is reset on every `cong_avoid` call); spec: min within the last RTT | min over the last *round*, as Vegas does (spec) |
//! | Reno fallback while `cntrtt ≤ 2`; `cntrtt` is never reset, so in effect only at the start | increase: Reno whenever the last round gave fewer than 3 samples (spec). Loss response: the N of the latest round that had ≥ 3 samples (A: a round spanning a SACK recovery has no samples — Karn — so the literal rule would call every loss right after a recovery congestive); before any such round, halve (A: Reno) |
//! | ssthresh from cwnd (not FlightSize) | same |
//! | random-loss factor 4/5, β = 3 segments, fixed | [`VenoConfig`] parameters with those defaults |
//! | RTO: Linux uses the Veno ssthresh | Reno: max(FlightSize/2, 2 SMSS), cwnd = 1 SMSS (spec: "RTO as Reno") |
//! | growth only when cwnd-limited (`tcp_is_cwnd_limited`) | same ([`AckEvent::app_limited`]); RTT samples are taken either way |
//! | BaseRTT + 1 µs (avoids zero) | BaseRTT as measured; a zero RTT gives N = 0 |
//! | BaseRTT over all samples | over the data segments' samples this controller saw: the handshake's RTT lacks a full-sized segment's serialisation time and would inflate N on slow links (A) |
//!
//! Per-ACK work is O(1).

use super::{
    in_unit_open, newreno_exit_window, AckEvent, CongestionConfigError, CongestionController,
    CongestionEvent, CongestionKind, ControllerInit, ControllerProbe, RecoveryExit, RecoveryKind,
};
use airlink_engine::{Duration, Instant};

/// Veno parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct VenoConfig {
    /// β: backlog threshold, segments, above which the path counts as congested. Default 3
    /// (Fu & Liew; Linux `beta = 3 << 1` in doubled units).
    pub beta: f64,
    /// ssthresh = cwnd × this after a loss taken as random (N < β), in (0, 1). Default 0.8
    /// (Fu & Liew's 4/5; Linux `snd_cwnd * 4 / 5`).
    pub random_loss_factor: f64,
}

impl Default for VenoConfig {
    fn default() -> Self {
        VenoConfig {
            beta: 3.0,
            random_loss_factor: 0.8,
        }
    }
}

impl VenoConfig {
    /// Checks β > 0 (finite) and the random-loss factor in (0, 1).
    pub fn validate(&self) -> Result<(), CongestionConfigError> {
        if !(self.beta.is_finite() && self.beta > 0.0) {
            return Err(CongestionConfigError::VenoBeta);
        }
        if !in_unit_open(self.random_loss_factor) {
            return Err(CongestionConfigError::VenoRandomLossFactor);
        }
        Ok(())
    }
}

/// Backlog N = cwnd·(RTT − BaseRTT)/RTT, segments (= (Expected − Actual)·BaseRTT). Zero
/// when RTT is zero or below BaseRTT.
pub fn veno_backlog(cwnd_segments: f64, base_rtt: Duration, rtt: Duration) -> f64 {
    let (b, r) = (base_rtt.as_secs_f64(), rtt.as_secs_f64());
    if r <= 0.0 || r <= b {
        0.0
    } else {
        cwnd_segments * (r - b) / r
    }
}

/// ssthresh (bytes) after a fast retransmit at `cwnd` bytes: × `random_loss_factor` when the
/// backlog is known and below β, else halved; never below 2 SMSS.
pub fn veno_ssthresh(cwnd: u64, smss: u64, backlog: Option<f64>, cfg: &VenoConfig) -> u64 {
    let reduced = match backlog {
        Some(n) if n < cfg.beta => (cwnd as f64 * cfg.random_loss_factor).round() as u64,
        _ => cwnd / 2,
    };
    reduced.max(2 * smss)
}

/// The current measurement round.
#[derive(Clone, Debug, Default)]
struct Round {
    /// Ends when the cumulative ACK reaches this (HighData at the round's start).
    end: u64,
    min_rtt: Option<Duration>,
    samples: u32,
}

/// TCP Veno.
#[derive(Clone, Debug)]
pub struct Veno {
    cfg: VenoConfig,
    smss: u64,
    cwnd: u64,
    ssthresh: u64,
    base_rtt: Option<Duration>,
    round: Round,
    /// Samples the last completed round gave.
    last_round_samples: u32,
    /// Min RTT of the latest completed round with at least 3 samples.
    rtt: Option<Duration>,
    /// Bytes acknowledged towards the next every-other-RTT toggle.
    acked_count: u64,
    /// Linux `inc`: the next toggle adds one SMSS.
    inc: bool,
}

/// Rounds with fewer samples do not give a trustworthy minimum (Linux `cntrtt <= 2`).
const MIN_SAMPLES: u32 = 3;

impl Veno {
    pub fn new(cfg: VenoConfig, init: &ControllerInit) -> Self {
        Veno {
            cfg,
            smss: init.smss.max(1),
            cwnd: init.initial_window.max(1),
            ssthresh: init.initial_ssthresh,
            base_rtt: None,
            round: Round::default(),
            last_round_samples: 0,
            rtt: None,
            acked_count: 0,
            inc: true,
        }
    }

    /// N at the current cwnd, from the latest round with enough samples.
    pub fn backlog(&self) -> Option<f64> {
        let (base, rtt) = (self.base_rtt?, self.rtt?);
        Some(veno_backlog(self.cwnd as f64 / self.smss as f64, base, rtt))
    }

    fn sample(&mut self, ack: &AckEvent) {
        if let Some(r) = ack.rtt {
            self.base_rtt = Some(self.base_rtt.map_or(r, |b| b.min(r)));
            self.round.min_rtt = Some(self.round.min_rtt.map_or(r, |m| m.min(r)));
            self.round.samples += 1;
        }
        if ack.ack >= self.round.end {
            if self.round.samples >= MIN_SAMPLES {
                self.rtt = self.round.min_rtt;
            }
            self.last_round_samples = self.round.samples;
            self.round = Round {
                end: ack.high_data,
                ..Round::default()
            };
        }
    }
}

impl CongestionController for Veno {
    fn on_ack(&mut self, _now: Instant, ack: &AckEvent) {
        self.sample(ack);
        // RTT samples count; growth only while cwnd is used (Linux `tcp_veno_cong_avoid`).
        if ack.in_recovery || ack.acked_bytes == 0 || ack.app_limited {
            return;
        }
        if self.cwnd < self.ssthresh {
            self.cwnd += ack.acked_bytes.min(self.smss);
            return;
        }
        let congestive = self.last_round_samples >= MIN_SAMPLES
            && self.backlog().is_some_and(|n| n >= self.cfg.beta);
        if !congestive {
            self.cwnd += (self.smss * self.smss / self.cwnd).max(1);
            return;
        }
        // Every other RTT (Linux: `snd_cwnd_cnt` against `snd_cwnd`, toggling `inc`).
        if self.acked_count >= self.cwnd {
            if self.inc {
                self.cwnd += self.smss;
            }
            self.inc = !self.inc;
            self.acked_count = 0;
        } else {
            self.acked_count += ack.acked_bytes;
        }
    }

    fn on_congestion_event(&mut self, _now: Instant, ev: &CongestionEvent<'_>) {
        self.acked_count = 0;
        match ev.kind {
            // Linux's `tcp_veno_ssthresh` answers an ECN reduction as a loss, by the backlog.
            CongestionKind::FastRetransmit | CongestionKind::Ecn => {
                self.ssthresh = veno_ssthresh(self.cwnd, self.smss, self.backlog(), &self.cfg);
                self.cwnd = self.ssthresh;
            }
            CongestionKind::Timeout { consecutive } => {
                if consecutive == 0 {
                    self.ssthresh = (ev.flight_size / 2).max(2 * self.smss);
                }
                self.cwnd = self.smss;
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
        "veno"
    }

    fn probe(&self) -> ControllerProbe {
        ControllerProbe {
            backlog_segments: self.backlog(),
            ..ControllerProbe::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMSS: u64 = 1000;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    fn init(cwnd_segs: u64, ssthresh_segs: u64) -> ControllerInit {
        ControllerInit {
            smss: SMSS,
            initial_window: cwnd_segs * SMSS,
            initial_ssthresh: ssthresh_segs * SMSS,
            count_delivered: false,
        }
    }

    fn ack(ack: u64, high_data: u64, rtt: Option<Duration>) -> AckEvent {
        AckEvent {
            ack,
            acked_bytes: SMSS,
            sacked_bytes: 0,
            delivered_bytes: 0,
            rtt,
            srtt: rtt,
            min_rtt: rtt,
            in_flight: 0,
            high_data,
            in_recovery: false,
            app_limited: false,
        }
    }

    fn fast_retransmit() -> CongestionEvent<'static> {
        CongestionEvent {
            kind: CongestionKind::FastRetransmit,
            flight_size: 0,
            in_flight: 0,
            loss: None,
        }
    }

    /// Spec "Test vectors D": (cwnd, BaseRTT, RTT) → (N, ssthresh).
    #[test]
    fn backlog_and_ssthresh_vectors() {
        let cfg = VenoConfig::default();
        for (cwnd, base, rtt, n, ss) in [
            (20u64, 100u64, 120u64, 3.333, 10u64),
            (20, 100, 110, 1.818, 16),
            (30, 200, 220, 2.727, 24),
        ] {
            let got = veno_backlog(cwnd as f64, ms(base), ms(rtt));
            assert!((got - n).abs() < 5e-4, "N({cwnd}, {base}, {rtt}) = {got}");
            let s = veno_ssthresh(cwnd * SMSS, SMSS, Some(got), &cfg);
            assert_eq!(s, ss * SMSS, "ssthresh for {cwnd}, {base}, {rtt}");
            // Other way round: the ssthresh tells which side of β the backlog was.
            assert_eq!(s * 2 == cwnd * SMSS, got >= cfg.beta);
        }
        assert_eq!(veno_ssthresh(2 * SMSS, SMSS, Some(0.0), &cfg), 2 * SMSS);
        assert_eq!(veno_ssthresh(20 * SMSS, SMSS, None, &cfg), 10 * SMSS);
    }

    /// Feeds one round of `n` ACKs with the given RTT; the round's data ends at `*seq`.
    fn round(v: &mut Veno, seq: &mut u64, n: u64, rtt: Duration) {
        let end = *seq + n * SMSS;
        for _ in 0..n {
            *seq += SMSS;
            v.on_ack(Instant::ZERO, &ack(*seq, end + n * SMSS, Some(rtt)));
        }
    }

    /// The controller measures BaseRTT and the per-round minimum, and reacts to a loss by
    /// the backlog: 4/5 on an empty queue, 1/2 with 5 segments queued.
    #[test]
    fn loss_response_follows_measured_backlog() {
        let mut v = Veno::new(VenoConfig::default(), &init(20, 20));
        let mut seq = 0;
        assert_eq!(v.backlog(), None);
        round(&mut v, &mut seq, 4, ms(100));
        round(&mut v, &mut seq, 4, ms(100));
        assert!(v.backlog().unwrap() < 0.01);
        v.cwnd = 20 * SMSS;
        v.on_congestion_event(Instant::ZERO, &fast_retransmit());
        assert_eq!((v.window(), v.ssthresh()), (16 * SMSS, 16 * SMSS));

        let mut v = Veno::new(VenoConfig::default(), &init(20, 20));
        let mut seq = 0;
        round(&mut v, &mut seq, 4, ms(100));
        round(&mut v, &mut seq, 4, ms(125));
        round(&mut v, &mut seq, 4, ms(125));
        v.cwnd = 20 * SMSS;
        let n = v.backlog().unwrap();
        assert!((n - 4.0).abs() < 1e-9, "N = {n}");
        assert_eq!(v.probe().backlog_segments, Some(n));
        v.on_congestion_event(Instant::ZERO, &fast_retransmit());
        assert_eq!(v.window(), 10 * SMSS);
    }

    /// With N ≥ β the window grows one SMSS every other RTT; with N < β every RTT.
    #[test]
    fn increase_every_other_rtt_when_congestive() {
        let grow = |rtt: Duration, rounds: u64| {
            let mut v = Veno::new(VenoConfig::default(), &init(20, 10));
            let mut seq = 0;
            round(&mut v, &mut seq, 20, ms(100));
            // One round at the new RTT, so the estimate has caught up.
            round(&mut v, &mut seq, 20, rtt);
            let w0 = v.window();
            for _ in 0..rounds {
                let n = v.window() / SMSS;
                round(&mut v, &mut seq, n, rtt);
            }
            (v.window() - w0) as f64 / SMSS as f64
        };
        let reno = grow(ms(100), 8);
        assert!(
            (7.0..=8.5).contains(&reno),
            "uncongested: +{reno} in 8 RTTs"
        );
        let veno = grow(ms(150), 8);
        assert!((3.5..=4.5).contains(&veno), "congestive: +{veno} in 8 RTTs");
    }

    /// Fewer than 3 samples in the last round: Reno increase even with a large backlog, and a
    /// loss before any full round halves.
    #[test]
    fn reno_fallback_with_few_samples() {
        let mut v = Veno::new(VenoConfig::default(), &init(20, 10));
        v.on_congestion_event(Instant::ZERO, &fast_retransmit());
        assert_eq!(v.window(), 10 * SMSS, "no estimate yet: halve");
        let mut v = Veno::new(VenoConfig::default(), &init(20, 10));
        let mut seq = 0;
        round(&mut v, &mut seq, 4, ms(100));
        round(&mut v, &mut seq, 4, ms(200));
        round(&mut v, &mut seq, 4, ms(200));
        assert!(v.backlog().unwrap() >= 3.0);
        // Close the current round with two samples (delayed ACKs of big aggregates, say).
        let end = v.round.end;
        v.on_ack(
            Instant::ZERO,
            &ack(end - SMSS, end + 10 * SMSS, Some(ms(200))),
        );
        v.on_ack(Instant::ZERO, &ack(end, end + 10 * SMSS, Some(ms(200))));
        assert_eq!(v.last_round_samples, 2);
        let w = v.window();
        v.on_ack(Instant::ZERO, &ack(end + SMSS, end + 10 * SMSS, None));
        assert_eq!(v.window(), w + SMSS * SMSS / w, "Reno increase");
    }

    #[test]
    fn timeout_is_reno() {
        let mut v = Veno::new(VenoConfig::default(), &init(20, 10));
        let ev = CongestionEvent {
            kind: CongestionKind::Timeout { consecutive: 0 },
            flight_size: 12 * SMSS,
            in_flight: 0,
            loss: None,
        };
        v.on_congestion_event(Instant::ZERO, &ev);
        assert_eq!((v.window(), v.ssthresh()), (SMSS, 6 * SMSS));
    }
}
