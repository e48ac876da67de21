//! Congestion control: the window *policy*, as a trait with `now` on every callback.
//!
//! The split (after quinn-proto's `congestion` module): the endpoint owns loss *detection and
//! recovery* — dup-ACK counting, the SACK scoreboard, NextSeg, NewReno's partial-ACK rule and
//! window inflation, RTO and go-back — and tells the controller what happened; the controller
//! owns `cwnd` and `ssthresh` and decides how they move. All windows are in bytes.
//!
//! Policies: [`Reno`] (RFC 5681; Reno, NewReno or SACK recovery is the endpoint's choice),
//! [`Cubic`] (RFC 9438), [`Veno`] (Fu & Liew 2003), [`Afc`] (TCP-AFC, Kothari et al.) and
//! [`Bbr`] (BBR v1, Linux `tcp_bbr.c`), which works from the endpoint's delivery-rate samples
//! ([`CongestionController::on_rate_sample`]) and paces ([`CongestionController::pacing_rate`]).
//! What the delay- and loss-structure-based ones need from the endpoint:
//! - **Veno** needs the minimum RTT per round: every [`AckEvent`] carries the RTT sample, the
//!   cumulative ACK and HighData, so a controller can mark a round as "the ACK passed the
//!   HighData seen at the round's start" (Linux `beg_snd_nxt`).
//! - **TCP-AFC** needs the structure of the losses and may postpone its reduction:
//!   [`CongestionEvent`] and [`CongestionController::on_loss_update`] give a [`LossView`] of the
//!   SACK scoreboard (holes, their positions), and the endpoint's recovery does not depend on
//!   the controller having reduced anything.
//!
//! A controller's own state beyond cwnd/ssthresh (Veno's backlog, AFC's SACK_OK flag and
//! congestion distance) is sampled generically through [`CongestionController::probe`].

mod afc;
mod bbr;
mod cubic;
mod reno;
mod veno;

pub use afc::{afc_window, Afc, AfcConfig};
pub use bbr::{Bbr, BbrMode};
pub use cubic::{Cubic, CubicConfig};
pub use reno::Reno;
pub use veno::{veno_backlog, veno_ssthresh, Veno, VenoConfig};

pub use crate::rate_sample::{CaState, RateSample};
use crate::scoreboard::SackScoreboard;
use airlink_engine::{Duration, Instant};
use std::fmt;
use std::str::FromStr;

/// What one acknowledgment of new data told the sender (passed to
/// [`CongestionController::on_ack`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AckEvent {
    /// The cumulative ACK (SND.UNA after this ACK).
    pub ack: u64,
    /// Payload bytes newly acknowledged cumulatively (> 0).
    pub acked_bytes: u64,
    /// Bytes newly SACKed by this ACK.
    pub sacked_bytes: u64,
    /// Bytes this ACK newly reported as received: cumulatively acknowledged bytes that were
    /// not SACKed before, plus newly SACKed bytes (RFC 6937 DeliveredData; Linux counts the
    /// same in segments, `acked_sacked` in `tcp_ack`, and grows cwnd by it).
    pub delivered_bytes: u64,
    /// The RTT sample this ACK gave, if any (none for retransmitted data: Karn).
    pub rtt: Option<Duration>,
    /// Smoothed RTT after this sample.
    pub srtt: Option<Duration>,
    /// Smallest RTT sample of the connection.
    pub min_rtt: Option<Duration>,
    /// Bytes in flight (RFC 6675 pipe) after this ACK.
    pub in_flight: u64,
    /// HighData (one past the highest sequence number sent).
    pub high_data: u64,
    /// The sender is in fast recovery (this ACK included, if it ends recovery): RFC 5681 does
    /// not grow cwnd then.
    pub in_recovery: bool,
    /// The sender is not using its cwnd (Linux `!tcp_is_cwnd_limited`): cwnd did not hold it
    /// back during the last window (the application, the receiver's window or its own host
    /// did) and, in slow start, cwnd is already at least twice the most it had outstanding.
    /// Every controller here then leaves cwnd alone, as Linux's `cong_avoid` functions do
    /// (RFC 7661, RFC 9438 §5.8): a window that is not used is not validated.
    pub app_limited: bool,
}

/// How a loss was detected.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CongestionKind {
    /// DupThresh duplicate ACKs or the SACK scoreboard: fast retransmit and recovery.
    FastRetransmit,
    /// Retransmission timer expiry. `consecutive` counts earlier expiries without an ACK of
    /// new data in between (RFC 5681 §3.1: ssthresh is held after the first).
    Timeout { consecutive: u32 },
    /// An ACK echoed a Congestion Experienced mark (ECE, RFC 3168 §6.1.2): reduce as for a
    /// fast retransmit, though nothing was lost and nothing is retransmitted (Linux
    /// `tcp_enter_cwr` asks the controller's `ssthresh` likewise). At most once per round trip.
    Ecn,
}

/// A loss the sender reacted to (passed to [`CongestionController::on_congestion_event`]).
#[derive(Copy, Clone, Debug)]
pub struct CongestionEvent<'a> {
    pub kind: CongestionKind,
    /// FlightSize (RFC 5681): bytes sent and not cumulatively acknowledged.
    pub flight_size: u64,
    /// Bytes in flight by RFC 6675's pipe (excludes SACKed and lost bytes).
    pub in_flight: u64,
    /// The loss structure, for SACK connections.
    pub loss: Option<LossView<'a>>,
}

/// A read-only view of the sender's loss state (SACK connections).
#[derive(Copy, Clone, Debug)]
pub struct LossView<'a> {
    pub snd_una: u64,
    /// HighData: one past the highest sequence number sent.
    pub high_data: u64,
    /// End of the current recovery episode (RFC 6675 RecoveryPoint), if in recovery.
    pub recovery_point: Option<u64>,
    pub smss: u64,
    pub scoreboard: &'a SackScoreboard,
}

impl LossView<'_> {
    /// Un-SACKed gaps below the highest SACKed byte, lowest first. Walks the scoreboard:
    /// O(holes) — per-ACK code should use [`next_hole`](Self::next_hole).
    pub fn holes(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.scoreboard.holes(self.snd_una)
    }

    /// The lowest un-SACKed gap `[start, end)` at or above `from` (and SND.UNA) that lies below
    /// the highest SACKed byte; `end` is the start of the SACKed range above it. When `from` is
    /// inside a gap, the gap is reported from `from`. O(log ranges).
    pub fn next_hole(&self, from: u64) -> Option<(u64, u64)> {
        let start = self.scoreboard.next_unsacked(from.max(self.snd_una));
        let end = self.scoreboard.next_sacked_after(start)?;
        Some((start, end))
    }
}

/// Which recovery episode ended (passed to [`CongestionController::on_recovery_exit`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RecoveryKind {
    /// RFC 6582 NewReno (no SACK): ended by a full ACK.
    NewReno,
    /// RFC 5681 Reno (no SACK): ended by the first new ACK.
    Reno,
    /// RFC 6675 SACK-based recovery: ended when the ACK passed RecoveryPoint.
    Sack,
}

/// The end of a fast-recovery episode.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RecoveryExit {
    pub kind: RecoveryKind,
    /// FlightSize after the ACK that ended recovery.
    pub flight_size: u64,
}

/// A congestion controller: owns `cwnd` and `ssthresh` (bytes).
///
/// Callbacks come in the order the endpoint meets the events; `now` never decreases.
pub trait CongestionController: Send + fmt::Debug {
    /// A data segment of `bytes` payload left; `in_flight` includes it.
    fn on_sent(&mut self, _now: Instant, _bytes: u64, _in_flight: u64) {}
    /// An ACK acknowledged new data cumulatively.
    fn on_ack(&mut self, now: Instant, ack: &AckEvent);
    /// A loss was detected: reduce (or, for delayed-response schemes, decide not to yet).
    /// For fast retransmit, the endpoint adds NewReno's DupThresh·SMSS inflation itself.
    fn on_congestion_event(&mut self, now: Instant, event: &CongestionEvent<'_>);
    /// During SACK recovery, an ACK changed the scoreboard (new data SACKed, or ranges
    /// dropped by the cumulative ACK): a hole may have appeared or been filled. At most once
    /// per ACK, after the ACK's other callbacks.
    fn on_loss_update(&mut self, _now: Instant, _loss: &LossView<'_>) {}
    /// Fast recovery ended.
    fn on_recovery_exit(&mut self, _now: Instant, _exit: &RecoveryExit) {}
    /// Congestion window, bytes.
    fn window(&self) -> u64;
    /// Slow-start threshold, bytes (`u64::MAX` = unset).
    fn ssthresh(&self) -> u64;
    /// Short name for reports ("reno", "cubic", "veno", "afc", "bbr").
    fn name(&self) -> &'static str;
    /// The controller's own state beyond cwnd and ssthresh, for time series: a driver can
    /// sample any controller the same way. Fields a controller does not have stay `None`
    /// (the default).
    fn probe(&self) -> ControllerProbe {
        ControllerProbe::default()
    }
    /// Every ACK that found data outstanding, after the ACK's other callbacks: the
    /// connection's delivery-rate sample (see [`crate::rate_sample`]). Controllers that own
    /// their window entirely (BBR, Linux `cong_control`) work here.
    fn on_rate_sample(&mut self, _now: Instant, _rs: &RateSample) {}
    /// Pacing rate, payload bytes per second; `None` (the default): no pacing (see
    /// [`crate::pacing`]).
    fn pacing_rate(&self) -> Option<u64> {
        None
    }
    /// Largest burst the pacer lets leave at one instant, bytes (0, the default: one SMSS).
    fn send_quantum(&self) -> u64 {
        0
    }
    /// Asked after [`on_rate_sample`](Self::on_rate_sample): true marks the connection
    /// application-limited from now (BBR's PROBE_RTT does, so its small window does not
    /// count as a bandwidth sample).
    fn marks_app_limited(&self) -> bool {
        false
    }
    /// The controller sets cwnd itself during fast recovery (BBR's packet conservation):
    /// the endpoint then does not apply RFC 6937 PRR (Linux skips `tcp_cwnd_reduction` for a
    /// `cong_control` module).
    fn owns_recovery_window(&self) -> bool {
        false
    }
}

/// Extra controller state for time series (see [`CongestionController::probe`]). Every field
/// is optional: `None` means "this controller has no such quantity" (or it is not yet
/// defined). New fields may be added; construct with `ControllerProbe::default()` and assign.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ControllerProbe {
    /// TCP-AFC's SACK_OK flag: true while every loss episode so far in the current window
    /// looked random (a single hole), false once a second hole made it congestion.
    pub sack_ok: Option<bool>,
    /// TCP-AFC's congestion distance Cd of the last fast recovery, segments.
    pub congestion_distance: Option<f64>,
    /// Veno's backlog estimate N = cwnd·(RTT − BaseRTT)/RTT, segments (`None` until a round
    /// with enough RTT samples has been measured).
    pub backlog_segments: Option<f64>,
    /// BBR's state machine mode ("startup", "drain", "probe_bw", "probe_rtt").
    pub mode: Option<&'static str>,
    /// The controller's bottleneck-bandwidth estimate, payload bytes per second.
    pub bandwidth: Option<f64>,
    /// The controller's minimum-RTT estimate, seconds.
    pub min_rtt: Option<f64>,
    /// Current pacing gain.
    pub pacing_gain: Option<f64>,
    /// Round trips counted by the controller.
    pub rounds: Option<u64>,
    /// BBR: the long-term (policed) bandwidth in use, payload bytes per second.
    pub lt_bandwidth: Option<f64>,
}

/// What a controller is built from, once the handshake fixed the SMSS.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ControllerInit {
    /// Sender maximum segment size, bytes.
    pub smss: u64,
    /// Initial window, bytes.
    pub initial_window: u64,
    /// Initial ssthresh, bytes (`u64::MAX` = infinite).
    pub initial_ssthresh: u64,
    /// Grow cwnd by the data each ACK delivered instead of per ACK (`TcpConfig::count_delivered`;
    /// Reno and CUBIC use it).
    pub count_delivered: bool,
}

/// Builds controllers; the endpoint builds one when created and again when the handshake has
/// fixed the SMSS.
pub trait ControllerFactory: Send + Sync + fmt::Debug {
    fn build(&self, now: Instant, init: &ControllerInit) -> Box<dyn CongestionController>;
}

/// The built-in window policies.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum CongestionConfig {
    /// RFC 5681 AIMD: slow start `cwnd += min(acked, SMSS)` per ACK, congestion avoidance
    /// `cwnd += SMSS²/cwnd` per ACK, halving on loss. With `TcpConfig::recovery` =
    /// `NewReno` (default) this is NewReno, with `Reno` it is classic Reno.
    #[default]
    Reno,
    /// RFC 9438 CUBIC.
    Cubic(CubicConfig),
    /// TCP Veno (spec D.5): Reno whose loss response and increase depend on the estimated
    /// backlog in the bottleneck queue.
    Veno(VenoConfig),
    /// TCP-AFC (spec D.6): SACK Reno that delays the window reduction until a second loss
    /// appears in the same window, then reduces by the congestion distance. Needs SACK;
    /// without it, it is NewReno/Reno.
    Afc(AfcConfig),
    /// BBR v1 as Linux `tcp_bbr.c`: model-based, paced; Linux's constants.
    Bbr,
}

impl CongestionConfig {
    /// The valid [`name`](Self::name)s, in the order listed in errors. Reno, NewReno and
    /// SACK are one policy (`"reno"`): they differ in `TcpConfig::recovery` and `sack`.
    pub fn names() -> &'static [&'static str] {
        &["reno", "cubic", "veno", "afc", "bbr"]
    }

    /// The policy's name (the [`CongestionController::name`] of what it builds).
    pub fn name(&self) -> &'static str {
        match self {
            CongestionConfig::Reno => "reno",
            CongestionConfig::Cubic(_) => "cubic",
            CongestionConfig::Veno(_) => "veno",
            CongestionConfig::Afc(_) => "afc",
            CongestionConfig::Bbr => "bbr",
        }
    }

    /// The policy called `name` with default parameters.
    pub fn from_name(name: &str) -> Result<Self, UnknownCongestion> {
        match name {
            "reno" => Ok(CongestionConfig::Reno),
            "cubic" => Ok(CongestionConfig::Cubic(CubicConfig::default())),
            "veno" => Ok(CongestionConfig::Veno(VenoConfig::default())),
            "afc" => Ok(CongestionConfig::Afc(AfcConfig::default())),
            "bbr" => Ok(CongestionConfig::Bbr),
            _ => Err(UnknownCongestion {
                name: name.to_owned(),
            }),
        }
    }

    /// Checks the parameters (a domain error is local misuse, reported before any run).
    pub fn validate(&self) -> Result<(), CongestionConfigError> {
        match self {
            CongestionConfig::Reno | CongestionConfig::Afc(_) | CongestionConfig::Bbr => Ok(()),
            CongestionConfig::Cubic(c) => c.validate(),
            CongestionConfig::Veno(v) => v.validate(),
        }
    }
}

impl FromStr for CongestionConfig {
    type Err = UnknownCongestion;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_name(s)
    }
}

/// A congestion-control name that is not one of [`CongestionConfig::names`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownCongestion {
    /// The name asked for.
    pub name: String,
}

impl fmt::Display for UnknownCongestion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown congestion control {:?}: expected one of {}",
            self.name,
            CongestionConfig::names().join(", ")
        )
    }
}

impl std::error::Error for UnknownCongestion {}

/// A congestion-control parameter outside its domain.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CongestionConfigError {
    /// CUBIC's `c` is not a finite number > 0.
    CubicC,
    /// CUBIC's `beta` is not in (0, 1).
    CubicBeta,
    /// Veno's `beta` (backlog threshold) is not a finite number of segments > 0.
    VenoBeta,
    /// Veno's `random_loss_factor` is not in (0, 1).
    VenoRandomLossFactor,
}

impl fmt::Display for CongestionConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CongestionConfigError::CubicC => "cubic: c must be a finite number > 0",
            CongestionConfigError::CubicBeta => "cubic: beta must be in (0, 1)",
            CongestionConfigError::VenoBeta => "veno: beta must be a finite number of segments > 0",
            CongestionConfigError::VenoRandomLossFactor => {
                "veno: random_loss_factor must be in (0, 1)"
            }
        })
    }
}

impl std::error::Error for CongestionConfigError {}

/// `x` lies in the open interval (0, 1) (false for NaN).
pub(crate) fn in_unit_open(x: f64) -> bool {
    x > 0.0 && x < 1.0
}

impl ControllerFactory for CongestionConfig {
    fn build(&self, now: Instant, init: &ControllerInit) -> Box<dyn CongestionController> {
        match self {
            CongestionConfig::Bbr => Box::new(Bbr::new(init, now)),
            CongestionConfig::Reno => Box::new(Reno::new(init)),
            CongestionConfig::Cubic(c) => Box::new(Cubic::new(c.clone(), init)),
            CongestionConfig::Veno(c) => Box::new(Veno::new(c.clone(), init)),
            CongestionConfig::Afc(c) => Box::new(Afc::new(c.clone(), init)),
        }
    }
}

/// RFC 6582 §3.2 step 3, option (1), the exit rule after a full ACK: cwnd = min(ssthresh,
/// max(FlightSize, SMSS) + SMSS), which avoids a burst when little is in flight.
pub fn newreno_exit_window(ssthresh: u64, flight_size: u64, smss: u64) -> u64 {
    ssthresh.min(flight_size.max(smss) + smss)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newreno_exit_rule() {
        assert_eq!(newreno_exit_window(10_000, 2_000, 1_000), 3_000);
        assert_eq!(newreno_exit_window(10_000, 20_000, 1_000), 10_000);
        assert_eq!(newreno_exit_window(10_000, 0, 1_000), 2_000);
    }

    #[test]
    fn names_round_trip_and_unknown_lists_them() {
        for &n in CongestionConfig::names() {
            let c: CongestionConfig = n.parse().unwrap();
            assert_eq!(c.name(), n);
            let init = ControllerInit {
                smss: 1000,
                initial_window: 3000,
                initial_ssthresh: u64::MAX,
                count_delivered: false,
            };
            assert_eq!(c.build(Instant::ZERO, &init).name(), n);
            assert_eq!(c.validate(), Ok(()));
        }
        let e = "vegas".parse::<CongestionConfig>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown congestion control \"vegas\": expected one of reno, cubic, veno, afc, bbr"
        );
    }

    /// Linux's `cong_avoid` functions all return at once when `!tcp_is_cwnd_limited`.
    #[test]
    fn no_policy_grows_cwnd_on_an_app_limited_ack() {
        let t = |ms| Instant::from_millis(ms);
        let ack = |app_limited| AckEvent {
            ack: 0,
            acked_bytes: 2000,
            sacked_bytes: 0,
            delivered_bytes: 2000,
            rtt: Some(Duration::from_millis(50)),
            srtt: Some(Duration::from_millis(50)),
            min_rtt: Some(Duration::from_millis(50)),
            in_flight: 0,
            high_data: 0,
            in_recovery: false,
            app_limited,
        };
        // BBR grows cwnd from rate samples, never in `on_ack`.
        for &n in CongestionConfig::names().iter().filter(|&&n| n != "bbr") {
            let init = ControllerInit {
                smss: 1000,
                initial_window: 10_000,
                initial_ssthresh: 12_000,
                count_delivered: false,
            };
            let mut c = n.parse::<CongestionConfig>().unwrap().build(t(0), &init);
            let mut now = 0;
            let mut step = |c: &mut Box<dyn CongestionController>, app_limited| {
                now += 10;
                let before = c.window();
                c.on_ack(t(now), &ack(app_limited));
                c.window() - before
            };
            assert_eq!(step(&mut c, true), 0, "{n}: slow start");
            assert!(step(&mut c, false) > 0, "{n}: slow start");
            while c.window() < c.ssthresh() {
                step(&mut c, false);
            }
            for _ in 0..100 {
                assert_eq!(step(&mut c, true), 0, "{n}: congestion avoidance");
            }
            let before = c.window();
            for _ in 0..100 {
                step(&mut c, false);
            }
            assert!(c.window() > before, "{n}: congestion avoidance");
        }
    }

    #[test]
    fn out_of_domain_parameters_are_refused() {
        let veno = |beta, f| {
            CongestionConfig::Veno(VenoConfig {
                beta,
                random_loss_factor: f,
            })
            .validate()
        };
        assert_eq!(veno(3.0, 0.8), Ok(()));
        for f in [0.0, 1.0, -0.5, 1.5, f64::NAN] {
            assert_eq!(
                veno(3.0, f),
                Err(CongestionConfigError::VenoRandomLossFactor)
            );
        }
        for b in [0.0, -1.0, f64::INFINITY, f64::NAN] {
            assert_eq!(veno(b, 0.8), Err(CongestionConfigError::VenoBeta));
        }
        let cubic = |c, beta| {
            CongestionConfig::Cubic(CubicConfig {
                c,
                beta,
                ..CubicConfig::default()
            })
            .validate()
        };
        assert_eq!(cubic(0.0, 0.7), Err(CongestionConfigError::CubicC));
        assert_eq!(cubic(0.4, 1.0), Err(CongestionConfigError::CubicBeta));
    }

    #[test]
    fn next_hole_finds_gaps_above_a_point() {
        let mut sb = SackScoreboard::new();
        sb.on_sack(3000, 5000);
        sb.on_sack(6000, 7000);
        let v = LossView {
            snd_una: 1000,
            high_data: 9000,
            recovery_point: None,
            smss: 1000,
            scoreboard: &sb,
        };
        assert_eq!(v.next_hole(0), Some((1000, 3000)));
        assert_eq!(v.next_hole(2000), Some((2000, 3000)));
        assert_eq!(v.next_hole(3000), Some((5000, 6000)));
        assert_eq!(v.next_hole(6500), None, "nothing SACKed above 7000");
        assert_eq!(
            v.holes().collect::<Vec<_>>(),
            vec![(1000, 3000), (5000, 6000)]
        );
    }
}
