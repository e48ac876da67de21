//! TCP-AFC: adaptive flow control with delayed fast recovery (spec D.6).
//!
//! References: N. J. Kothari, B. Gambhava, K. S. Dasgupta, "Performance analysis of TCP-AFC
//! for satellite-based networks" (spec seed \[S4\], §2, eq. 1); its refs \[12\] (WOCN 2006,
//! delayed fast recovery) and \[13\] (ADCOM 2007, rate adjustment) were not obtained, so the
//! algorithm is reconstructed from \[S4\] §2 and spec D.6.
//!
//! The endpoint runs RFC 6675 SACK loss recovery (retransmissions, pipe, NextSeg) as for any
//! policy; this controller only decides *whether and how much* the window shrinks:
//!
//! - **SACK_OK.** Set true when a window's first loss is detected (the endpoint enters fast
//!   recovery: DupThresh duplicate ACKs or IsLost). While later SACKs only extend the SACKed
//!   data above that single hole, it stays true; a second hole in the same window sets it
//!   false.
//! - **Delayed fast recovery.** While SACK_OK is true, the lost segment is retransmitted but
//!   cwnd and ssthresh are left alone (the loss is taken as random). On the true → false
//!   transition: cwnd_{n+1} = cwnd_n/2 + R_adj with R_adj = Cd⁴/(2·cwnd_n³) if Cd > cwnd_n/2,
//!   else 0 ([`afc_window`]); ssthresh = cwnd_{n+1}. If the window is acknowledged with
//!   SACK_OK still true, nothing is ever reduced.
//! - **Congestion distance** Cd = sequence gap, in segments, from the start of the first hole
//!   to the start of the second.
//! - Slow start, congestion avoidance and RTO are Reno's (this crate's [`Reno`]).
//!
//! Interpretations (A = assumption of this implementation or of spec D.6):
//!
//! | topic | here |
//! |---|---|
//! | what is "one loss" | one *hole*: a run of consecutive un-SACKed segments counts as one loss (the SACKed sequence numbers still rise contiguously above it, \[S4\] §2). Holes inside the first hole's range (reordered pieces of it) are not new losses (A) |
//! | "the same window" | the data outstanding when the first loss was detected, i.e. below the endpoint's RecoveryPoint (RFC 6582 `recover`) (A) |
//! | a hole above that window while SACK_OK is true | the first loss of the next window: the episode restarts there (new first hole, window = data outstanding now), still without reduction (A) |
//! | after the reduction | one reduction per window, as RFC 6675: later holes of the same recovery episode are repaired without further reduction |
//! | a second hole already present when recovery starts | SACK_OK becomes false at once: reduction at entry |
//! | when a hole counts | as soon as a SACK block shows it, with no DupThresh: a reordered segment inside the window looks like a second loss (A) |
//! | growth during an undelayed episode | none while the endpoint is in fast recovery, as RFC 5681 (A) |
//! | R_adj | capped at cwnd_n/2 (Cd ≤ cwnd_n by construction in \[S4\]; the cap keeps the stated range (0, cwnd_n/2]) (A). The jump at Cd just above cwnd_n/2 (R_adj = cwnd_n/32) is kept |
//! | ssthresh | = cwnd_{n+1} (spec A), both at least 2 SMSS |
//! | cwnd_n | the controller's cwnd when the second hole appears (not FlightSize) |
//! | retransmission lost | RTO as Reno (spec A); the episode ends |
//! | no SACK negotiated | NewReno/Reno: halving at fast retransmit (no hole structure to judge by) (A) |
//! | SACK_OK outside an episode | keeps the verdict of the latest fast-retransmit episode (true before any loss); [`probe`](CongestionController::probe) reports it |
//!
//! Consequence worth knowing: a lone flow at a drop-tail bottleneck usually loses one packet
//! per overflow, which AFC takes as random; it then keeps the queue full and reduces rarely
//! (the goodput stays TCP's, the queueing delay and loss rate do not). \[S4\] §4.2 tested
//! congestion with competing flows, which lose several packets per window.
//!
//! Per-ACK work: each scoreboard change during recovery costs one O(log ranges) look-up
//! ([`LossView::next_hole`]); nothing walks the window.

use super::{
    AckEvent, CongestionController, CongestionEvent, CongestionKind, ControllerInit,
    ControllerProbe, LossView, RecoveryExit, Reno,
};
use airlink_engine::Instant;

/// TCP-AFC parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct AfcConfig {
    /// Add the rate adjustment R_adj to the halved window (\[S4\] eq. 1, the ADCOM 2007
    /// extension). Default true; false gives plain delayed fast recovery (WOCN 2006),
    /// cwnd_{n+1} = cwnd_n/2.
    pub rate_adjustment: bool,
}

impl Default for AfcConfig {
    fn default() -> Self {
        AfcConfig {
            rate_adjustment: true,
        }
    }
}

/// cwnd_{n+1} = cwnd_n/2 + R_adj, segments (\[S4\] eq. 1): R_adj = Cd⁴/(2·cwnd_n³) when
/// Cd > cwnd_n/2, else 0, capped at cwnd_n/2.
pub fn afc_window(cwnd: f64, cd: f64) -> f64 {
    let half = cwnd / 2.0;
    let r_adj = if cd > half {
        (cd.powi(4) / (2.0 * cwnd.powi(3))).min(half)
    } else {
        0.0
    };
    half + r_adj
}

/// A fast-recovery episode as AFC sees it.
#[derive(Copy, Clone, Debug)]
struct Episode {
    /// Start of the first hole (the first loss).
    first_loss: u64,
    /// End of the first hole: holes are looked for from here up.
    first_hole_end: u64,
    /// End of the window the first loss belongs to (exclusive).
    window_end: u64,
    /// The reduction was made (SACK_OK went false).
    reduced: bool,
}

/// TCP-AFC on top of Reno's growth.
#[derive(Clone, Debug)]
pub struct Afc {
    cfg: AfcConfig,
    reno: Reno,
    smss: u64,
    sack_ok: bool,
    episode: Option<Episode>,
    last_cd: Option<f64>,
}

impl Afc {
    pub fn new(cfg: AfcConfig, init: &ControllerInit) -> Self {
        Afc {
            cfg,
            reno: Reno::new(init),
            smss: init.smss.max(1),
            sack_ok: true,
            episode: None,
            last_cd: None,
        }
    }

    /// The SACK_OK flag.
    pub fn sack_ok(&self) -> bool {
        self.sack_ok
    }

    /// Cd of the latest reduction, segments.
    pub fn congestion_distance(&self) -> Option<f64> {
        self.last_cd
    }

    /// Looks for a second hole of the episode's window; restarts the episode when the next
    /// hole lies beyond the window (at most twice: the restarted window covers all holes).
    fn check(&mut self, loss: &LossView<'_>) {
        while let Some(mut ep) = self.episode.filter(|e| !e.reduced) {
            let Some((start, end)) = loss.next_hole(ep.first_hole_end) else {
                return;
            };
            if start < ep.window_end {
                self.reduce(start - ep.first_loss);
                ep.reduced = true;
            } else {
                ep = Episode {
                    first_loss: start,
                    first_hole_end: end,
                    window_end: loss.high_data,
                    reduced: false,
                };
            }
            self.episode = Some(ep);
        }
    }

    /// Fast recovery at the second loss, `gap` bytes above the first.
    fn reduce(&mut self, gap: u64) {
        let smss = self.smss as f64;
        let cwnd = self.reno.window() as f64 / smss;
        let cd = gap as f64 / smss;
        let next = if self.cfg.rate_adjustment {
            afc_window(cwnd, cd)
        } else {
            cwnd / 2.0
        };
        let w = ((next * smss).round() as u64).max(2 * self.smss);
        self.reno.set_windows(w, w);
        self.sack_ok = false;
        self.last_cd = Some(cd);
    }
}

impl CongestionController for Afc {
    fn on_ack(&mut self, now: Instant, ack: &AckEvent) {
        self.reno.on_ack(now, ack);
    }

    fn on_congestion_event(&mut self, now: Instant, ev: &CongestionEvent<'_>) {
        self.episode = None;
        match (ev.kind, &ev.loss) {
            (CongestionKind::FastRetransmit, Some(loss)) => {
                let first_loss = loss.snd_una;
                let first_hole_end = loss
                    .next_hole(first_loss)
                    .map_or(first_loss + loss.smss, |(_, e)| e);
                self.sack_ok = true;
                self.episode = Some(Episode {
                    first_loss,
                    first_hole_end,
                    window_end: loss.recovery_point.unwrap_or(loss.high_data),
                    reduced: false,
                });
                self.check(loss);
            }
            (CongestionKind::FastRetransmit, None) => {
                // No SACK: nothing to tell random from congestive losses by.
                self.sack_ok = false;
                self.reno.on_congestion_event(now, ev);
            }
            // A mark is congestion, not a random loss: nothing to delay; reduce as Reno.
            (CongestionKind::Timeout { .. } | CongestionKind::Ecn, _) => {
                self.reno.on_congestion_event(now, ev)
            }
        }
    }

    fn on_loss_update(&mut self, _now: Instant, loss: &LossView<'_>) {
        self.check(loss);
    }

    fn on_recovery_exit(&mut self, now: Instant, exit: &RecoveryExit) {
        self.episode = None;
        self.reno.on_recovery_exit(now, exit);
    }

    fn window(&self) -> u64 {
        self.reno.window()
    }

    fn ssthresh(&self) -> u64 {
        self.reno.ssthresh()
    }

    fn name(&self) -> &'static str {
        "afc"
    }

    fn probe(&self) -> ControllerProbe {
        ControllerProbe {
            sack_ok: Some(self.sack_ok),
            congestion_distance: self.last_cd,
            ..ControllerProbe::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::congestion::RecoveryKind;
    use crate::scoreboard::SackScoreboard;

    const SMSS: u64 = 1000;

    /// Spec "Test vectors D": cwnd = 32.
    #[test]
    fn rate_adjustment_vectors() {
        for (cd, want) in [(16.0, 16.0), (17.0, 17.2744), (20.0, 18.4414), (32.0, 32.0)] {
            let got = afc_window(32.0, cd);
            assert!((got - want).abs() < 5e-5, "Cd {cd}: {got}, want {want}");
        }
        // The jump just above cwnd/2, and the cap beyond one window.
        assert!((afc_window(32.0, 16.0 + 1e-9) - 17.0).abs() < 1e-6);
        assert_eq!(afc_window(32.0, 40.0), 32.0);
        // Other way round: Cd from the window it produced.
        for want_cd in [17.0f64, 20.0, 25.0, 32.0] {
            let w = afc_window(32.0, want_cd);
            let cd = ((w - 16.0) * 2.0 * 32f64.powi(3)).powf(0.25);
            assert!((cd - want_cd).abs() < 1e-9);
        }
    }

    fn afc(cwnd_segs: u64) -> Afc {
        Afc::new(
            AfcConfig::default(),
            &ControllerInit {
                smss: SMSS,
                initial_window: cwnd_segs * SMSS,
                initial_ssthresh: cwnd_segs * SMSS,
                count_delivered: false,
            },
        )
    }

    /// Segment i covers [1 + i·SMSS, 1 + (i+1)·SMSS).
    fn s(i: u64) -> u64 {
        1 + i * SMSS
    }

    fn view(sb: &SackScoreboard, una: u64, high: u64, point: u64) -> LossView<'_> {
        LossView {
            snd_una: una,
            high_data: high,
            recovery_point: Some(point),
            smss: SMSS,
            scoreboard: sb,
        }
    }

    fn enter(a: &mut Afc, v: LossView<'_>) {
        let ev = CongestionEvent {
            kind: CongestionKind::FastRetransmit,
            flight_size: v.high_data - v.snd_una,
            in_flight: 0,
            loss: Some(v),
        };
        a.on_congestion_event(Instant::ZERO, &ev);
    }

    /// One hole whose SACKs keep extending: no reduction, SACK_OK stays true through the
    /// episode and after it.
    #[test]
    fn single_hole_never_reduces() {
        let mut a = afc(32);
        let mut sb = SackScoreboard::new();
        sb.on_sack(s(1), s(4));
        enter(&mut a, view(&sb, s(0), s(32), s(32)));
        for i in 4..32 {
            sb.on_sack(s(i), s(i + 1));
            a.on_loss_update(Instant::ZERO, &view(&sb, s(0), s(32 + i), s(32)));
        }
        assert_eq!((a.window(), a.ssthresh()), (32 * SMSS, 32 * SMSS));
        let exit = RecoveryExit {
            kind: RecoveryKind::Sack,
            flight_size: 0,
        };
        a.on_recovery_exit(Instant::ZERO, &exit);
        assert_eq!(a.window(), 32 * SMSS);
        assert_eq!(a.probe().sack_ok, Some(true));
        assert_eq!(a.probe().congestion_distance, None);
    }

    /// Losses at segments 0 and 20 of a 32-segment window: Cd = 20, cwnd 32 → 18.4414.
    #[test]
    fn second_hole_reduces_by_congestion_distance() {
        let mut a = afc(32);
        let mut sb = SackScoreboard::new();
        sb.on_sack(s(1), s(4));
        enter(&mut a, view(&sb, s(0), s(32), s(32)));
        sb.on_sack(s(4), s(20));
        a.on_loss_update(Instant::ZERO, &view(&sb, s(0), s(32), s(32)));
        assert_eq!(a.probe().sack_ok, Some(true));
        sb.on_sack(s(21), s(22));
        a.on_loss_update(Instant::ZERO, &view(&sb, s(0), s(32), s(32)));
        assert_eq!(a.window(), 18_441);
        assert_eq!(a.ssthresh(), 18_441);
        assert_eq!(a.probe().sack_ok, Some(false));
        assert_eq!(a.probe().congestion_distance, Some(20.0));
        // A third hole in the same episode changes nothing.
        sb.on_sack(s(25), s(26));
        a.on_loss_update(Instant::ZERO, &view(&sb, s(0), s(32), s(32)));
        assert_eq!(a.window(), 18_441);
    }

    /// The second hole shows only after the first was repaired (the cumulative ACK passed
    /// it): still the same window.
    #[test]
    fn second_hole_after_first_repaired() {
        let mut a = afc(32);
        let mut sb = SackScoreboard::new();
        sb.on_sack(s(3), s(6));
        enter(&mut a, view(&sb, s(2), s(34), s(34)));
        sb.on_sack(s(6), s(12));
        sb.advance(s(12));
        sb.on_sack(s(13), s(14));
        a.on_loss_update(Instant::ZERO, &view(&sb, s(12), s(40), s(34)));
        assert_eq!(a.probe().congestion_distance, Some(10.0));
        assert_eq!(a.window(), 16 * SMSS, "Cd ≤ cwnd/2: plain halving");
    }

    /// Two holes already at entry: reduce at once. A burst (one hole of three segments) is
    /// one loss.
    #[test]
    fn entry_with_two_holes_and_bursts() {
        let mut a = afc(32);
        let mut sb = SackScoreboard::new();
        sb.on_sack(s(1), s(2));
        sb.on_sack(s(3), s(5));
        enter(&mut a, view(&sb, s(0), s(32), s(32)));
        assert_eq!(a.window(), 16 * SMSS);
        assert_eq!(a.probe().congestion_distance, Some(2.0));

        let mut a = afc(32);
        let mut sb = SackScoreboard::new();
        sb.on_sack(s(3), s(7));
        enter(&mut a, view(&sb, s(0), s(32), s(32)));
        // A reordered piece of the first hole is SACKed late: not a new loss.
        sb.on_sack(s(1), s(2));
        sb.on_sack(s(7), s(12));
        a.on_loss_update(Instant::ZERO, &view(&sb, s(0), s(32), s(32)));
        assert_eq!(a.window(), 32 * SMSS);
        assert_eq!(a.probe().sack_ok, Some(true));
    }

    /// A hole beyond the window (new data sent during the episode) is the next window's
    /// first loss; a hole after it in that window reduces, measured from it.
    #[test]
    fn hole_beyond_window_restarts_the_episode() {
        let mut a = afc(32);
        let mut sb = SackScoreboard::new();
        sb.on_sack(s(1), s(4));
        enter(&mut a, view(&sb, s(0), s(32), s(32)));
        sb.on_sack(s(4), s(33));
        sb.on_sack(s(34), s(36));
        a.on_loss_update(Instant::ZERO, &view(&sb, s(0), s(60), s(32)));
        assert_eq!(a.window(), 32 * SMSS);
        sb.on_sack(s(36), s(54));
        sb.on_sack(s(55), s(56));
        a.on_loss_update(Instant::ZERO, &view(&sb, s(0), s(64), s(32)));
        assert_eq!(a.probe().congestion_distance, Some(21.0));
        assert_eq!(
            a.window(),
            (afc_window(32.0, 21.0) * SMSS as f64).round() as u64
        );
    }

    #[test]
    fn without_sack_or_adjustment() {
        let mut a = afc(32);
        let ev = CongestionEvent {
            kind: CongestionKind::FastRetransmit,
            flight_size: 30 * SMSS,
            in_flight: 0,
            loss: None,
        };
        a.on_congestion_event(Instant::ZERO, &ev);
        assert_eq!(a.window(), 15 * SMSS, "Reno: FlightSize/2");
        assert_eq!(a.probe().sack_ok, Some(false));

        let mut a = Afc::new(
            AfcConfig {
                rate_adjustment: false,
            },
            &ControllerInit {
                smss: SMSS,
                initial_window: 32 * SMSS,
                initial_ssthresh: u64::MAX,
                count_delivered: false,
            },
        );
        let mut sb = SackScoreboard::new();
        sb.on_sack(s(1), s(2));
        sb.on_sack(s(30), s(31));
        enter(&mut a, view(&sb, s(0), s(32), s(32)));
        assert_eq!(a.window(), 16 * SMSS);
    }
}
