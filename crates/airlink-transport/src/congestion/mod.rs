//! Congestion control: the window *policy*, as a trait with `now` on every callback.
//!
//! The split (after quinn-proto's `congestion` module): the endpoint owns loss *detection and
//! recovery* — dup-ACK counting, the SACK scoreboard, NextSeg, NewReno's partial-ACK rule and
//! window inflation, RTO and go-back — and tells the controller what happened; the controller
//! owns `cwnd` and `ssthresh` and decides how they move. All windows are in bytes.
//!
//! Hooks for the variants still to come:
//! - **Veno** needs the minimum RTT per round: every [`AckEvent`] carries the RTT sample, the
//!   cumulative ACK and HighData, so a controller can mark a round as "the ACK passed the
//!   HighData seen at the round's start" (Linux `beg_snd_nxt`).
//! - **TCP-AFC** needs the structure of the losses and may postpone its reduction:
//!   [`CongestionEvent`] and [`CongestionController::on_loss_update`] give a [`LossView`] of the
//!   SACK scoreboard (holes, their positions), and the endpoint's recovery does not depend on
//!   the controller having reduced anything.

mod cubic;
mod reno;

pub use cubic::{Cubic, CubicConfig};
pub use reno::Reno;

use crate::scoreboard::SackScoreboard;
use airlink_engine::{Duration, Instant};
use std::fmt;

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
    /// The sender could not use its whole cwnd the last time it tried (no data, or the
    /// receiver's window): growth during such periods is optional (RFC 7661, RFC 9438 §5.8).
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
    /// Un-SACKed gaps below the highest SACKed byte, lowest first.
    pub fn holes(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.scoreboard.holes(self.snd_una)
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
    /// During SACK recovery, the hole structure changed (a new hole, a hole filled).
    fn on_loss_update(&mut self, _now: Instant, _loss: &LossView<'_>) {}
    /// Fast recovery ended.
    fn on_recovery_exit(&mut self, _now: Instant, _exit: &RecoveryExit) {}
    /// Congestion window, bytes.
    fn window(&self) -> u64;
    /// Slow-start threshold, bytes (`u64::MAX` = unset).
    fn ssthresh(&self) -> u64;
    /// Short name for reports ("reno", "cubic").
    fn name(&self) -> &'static str;
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
}

impl ControllerFactory for CongestionConfig {
    fn build(&self, _now: Instant, init: &ControllerInit) -> Box<dyn CongestionController> {
        match self {
            CongestionConfig::Reno => Box::new(Reno::new(init)),
            CongestionConfig::Cubic(c) => Box::new(Cubic::new(c.clone(), init)),
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
}
