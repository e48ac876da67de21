//! TCP endpoint configuration: plain data, every field with its unit, default and source.

use crate::congestion::{CongestionConfig, CongestionConfigError};
use airlink_engine::Duration;
use std::fmt;

/// Loss recovery used when SACK was *not* negotiated (with SACK, RFC 6675 is always used).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Recovery {
    /// RFC 6582 NewReno: stay in fast recovery until the ACK covers `recover`, retransmitting
    /// on partial ACKs; one window reduction per window of data.
    #[default]
    NewReno,
    /// RFC 5681 Reno: leave fast recovery on the first ACK of new data; no `recover` guard.
    Reno,
}

/// Bytes of the timestamps option as Linux lays it out (NOP, NOP, TS).
pub const TIMESTAMP_OPTION_LEN: u32 = 12;

/// Configuration of one TCP endpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpConfig {
    /// Largest payload per segment we send and accept, bytes. Default 1460 = MTU 1500 − 20 IP
    /// − 20 TCP; 1448 with timestamps (12 option bytes) — see [`TcpConfig::for_mtu`]. The SMSS
    /// actually used is the smaller of this and the peer's MSS option (RFC 9293 §3.7.1; 536 if
    /// the peer sent none).
    pub mss: u32,
    /// Initial congestion window, segments. `None` (default) = RFC 5681 §3.1 from the SMSS:
    /// 2 if SMSS > 2190, 3 if > 1095, else 4 (spec D.1). RFC 3390's byte formula
    /// min(4·SMSS, max(2·SMSS, 4380 B)) gives the same whole segments except for 1460 < SMSS ≤
    /// 2190 (2 instead of 3). Linux 2.4 used 2 when the handshake RTT exceeded 20 ms (r).
    pub initial_window: Option<u32>,
    /// Initial ssthresh, bytes. `None` (default) = infinite (RFC 5681 §3.1).
    pub initial_ssthresh: Option<u64>,
    /// Receive buffer, bytes. Default 65 536 (64 KiB: the largest unscaled window; Linux 2.4's
    /// default `tcp_rmem` of 87 380 B advertises about that). The app consumes in-order data at
    /// once, so the advertised window is this minus out-of-order data held — never moving the
    /// right edge left (RFC 9293 §3.8.6.2.2).
    pub rwnd: u32,
    /// Offer SACK (RFC 2018); used when both ends offer it. Default true (Linux default).
    pub sack: bool,
    /// Offer timestamps (RFC 7323). Default false, as in WIPEMU \[S1\].
    pub timestamps: bool,
    /// ACK at least every this many received data segments (RFC 5681 §4.2: 2). Default 2.
    pub ack_every: u32,
    /// Delayed-ACK timeout. Default 200 ms (classic BSD, and Linux's upper bound `TCP_DELACK_MAX`;
    /// Linux adapts between 40 ms `TCP_DELACK_MIN` and 200 ms; RFC 5681 requires < 500 ms).
    pub delack_timeout: Duration,
    /// Lower bound of the RTO. Default 200 ms (Linux `TCP_RTO_MIN`, with `clock_granularity`
    /// 200 ms as Linux applies it); RFC 6298 (2.4) says 1 s.
    pub rto_min: Duration,
    /// Upper bound of the RTO. Default 120 s (Linux `TCP_RTO_MAX`); RFC 6298 (2.5): ≥ 60 s.
    pub rto_max: Duration,
    /// RTO before the first RTT sample. Default 1 s (RFC 6298 (2.1)); Linux 2.4 uses 3 s
    /// ([`TcpConfig::linux_2_4`]). After a SYN timeout data starts with 3 s (RFC 6298 (5.7)).
    pub rto_init: Duration,
    /// Clock granularity G in RTO = SRTT + max(G, 4·RTTVAR) (RFC 6298 (2.2)). Default 200 ms:
    /// Linux floors the variance term, not the whole RTO, at `TCP_RTO_MIN` (`tcp_rtt_estimator`
    /// keeps `mdev_max_us` ≥ `tcp_rto_min_us`), so its RTO is at least SRTT + 200 ms; \[S2\]
    /// used 200 ms. The RFC preset uses 0 (a simulator's clock is exact). With G = 0 and a
    /// 200 ms floor on the whole RTO, a steady RTT gives RTO ≈ 1.1·SRTT, shorter than a fast
    /// retransmit takes when the third duplicate ACK comes a round later: spurious timeouts.
    pub clock_granularity: Duration,
    /// Timer expiries (RTO, delayed ACK, persist) are rounded up to a multiple of this
    /// (a kernel's jiffy). Default 0 = no rounding; Linux 2.4 on i386: 10 ms (HZ = 100).
    pub tick: Duration,
    /// Duplicate ACKs that trigger fast retransmit, and RFC 6675's DupThresh. Default 3.
    pub dupthresh: u32,
    /// Recovery without SACK. Default NewReno (RFC 6582).
    pub recovery: Recovery,
    /// Receiver: acknowledge each of the first this many data segments at once (Linux
    /// quick-ACK mode at connection start, `tcp_incr_quickack` in `tcp_input.c`, up to
    /// `TCP_MAX_QUICKACKS` = 16), so slow start is not slowed by delayed ACKs. Default 0
    /// (RFC 5681 §4.2 delayed ACKs from the first segment).
    pub quickack_segments: u32,
    /// Sender: Proportional Rate Reduction (RFC 9937; Linux `tcp_cwnd_reduction` in
    /// `tcp_input.c`) paces what SACK recovery sends: in proportion to the data delivered
    /// while pipe > ssthresh; below, what was delivered (PRR-CRB), one SMSS more on an ACK
    /// that advances SND.UNA and shows no new loss (PRR-SSRB), up to ssthresh. Off: RFC 6675
    /// sends whatever pipe < cwnd allows, which after the window reduction is a silence of
    /// about half an RTT, then a burst. Default false.
    pub prr: bool,
    /// Sender: after an RTO, only the first outstanding segment and those sent more than an
    /// RTT ago count as lost; the rest once an ACK of data sent after the timeout arrives
    /// (RFC 8985 §6.3, RACK's rule on RTO; Linux `tcp_timeout_mark_lost`: "don't mark recently
    /// sent ones lost yet"). Off: RFC 5681/6675 go-back counts everything outstanding as lost,
    /// and resends segments still in flight, which then arrive twice. Default false.
    pub rto_spares_recent: bool,
    /// Sender (Reno and CUBIC): grow cwnd by the data each ACK delivered, as Linux does
    /// (`tcp_slow_start` and `tcp_cong_avoid_ai` in `tcp_cong.c` count the segments an ACK
    /// acknowledged or newly SACKed, `acked_sacked`), which is RFC 3465 byte counting without its
    /// L = 2 SMSS slow-start limit: slow start adds what was delivered (up to ssthresh; the rest
    /// counts for congestion avoidance), congestion avoidance one SMSS per cwnd of delivered
    /// bytes. Off: RFC 5681 counts ACKs (slow start at most one SMSS per ACK, congestion
    /// avoidance SMSS²/cwnd per ACK), so with delayed ACKs (one ACK per two segments) Reno
    /// grows half a segment per RTT instead of one. Default false.
    pub count_delivered: bool,
    /// Sender: a retransmission of the first unacknowledged segment is deemed lost again, and
    /// resent, once a segment sent a reordering window (min RTT/4) after it has been SACKed
    /// (RFC 8985 §6.2, RACK, for that segment; Linux counts these as `TCPLostRetransmit`).
    /// Off: RFC 6675 has no rule for a lost retransmission, so the sender waits for the RTO,
    /// whose go-back then also resends data still in flight. Default false.
    pub rack_lost_retransmit: bool,
    /// Explicit Congestion Notification (RFC 3168; rules in [`crate::ecn`]): ask for it on the
    /// SYN and accept it on a peer's SYN; once both ends agree, new data goes ECT(0), CE marks
    /// are echoed with ECE and the sender reduces once per round trip. Default false (Linux's
    /// `tcp_ecn` = 2 accepts but does not ask).
    pub ecn: bool,
    /// Window policy. Default [`CongestionConfig::Reno`] (RFC 5681; NewReno with the default
    /// `recovery`).
    pub congestion: CongestionConfig,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1460,
            initial_window: None,
            initial_ssthresh: None,
            rwnd: 65_536,
            sack: true,
            timestamps: false,
            ack_every: 2,
            delack_timeout: Duration::from_millis(200),
            rto_min: Duration::from_millis(200),
            rto_max: Duration::from_secs(120),
            rto_init: Duration::from_secs(1),
            clock_granularity: Duration::from_millis(200),
            tick: Duration::ZERO,
            dupthresh: 3,
            recovery: Recovery::NewReno,
            quickack_segments: 0,
            prr: false,
            rto_spares_recent: false,
            count_delivered: false,
            rack_lost_retransmit: false,
            ecn: false,
            congestion: CongestionConfig::Reno,
        }
    }
}

/// Why a [`TcpConfig`] cannot be used.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// A parameter of `congestion` is out of its domain.
    Congestion(CongestionConfigError),
    /// `mss` is 0.
    ZeroMss,
    /// `rwnd` is 0.
    ZeroWindow,
    /// `ack_every` is 0.
    ZeroAckEvery,
    /// `dupthresh` is 0.
    ZeroDupThresh,
    /// `initial_window` is `Some(0)`.
    ZeroInitialWindow,
    /// `rto_min` exceeds `rto_max`, or `rto_max` is 0.
    RtoBounds,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            ConfigError::Congestion(e) => return e.fmt(f),
            ConfigError::ZeroMss => "mss must be at least 1 byte",
            ConfigError::ZeroWindow => "rwnd must be at least 1 byte",
            ConfigError::ZeroAckEvery => "ack_every must be at least 1",
            ConfigError::ZeroDupThresh => "dupthresh must be at least 1",
            ConfigError::ZeroInitialWindow => "initial_window must be at least 1 segment",
            ConfigError::RtoBounds => {
                "rto_min must not exceed rto_max, and rto_max must be positive"
            }
        };
        f.write_str(s)
    }
}

impl std::error::Error for ConfigError {}

/// RFC 5681 §3.1 initial window in segments for an SMSS.
pub fn initial_window_segments(smss: u32) -> u32 {
    if smss > 2190 {
        2
    } else if smss > 1095 {
        3
    } else {
        4
    }
}

impl TcpConfig {
    /// Defaults with the MSS derived from an MTU: MTU − 40, minus 12 with timestamps.
    pub fn for_mtu(mtu: u32, timestamps: bool) -> Self {
        let opt = if timestamps { TIMESTAMP_OPTION_LEN } else { 0 };
        TcpConfig {
            mss: mtu.saturating_sub(40 + opt).max(1),
            timestamps,
            ..Self::default()
        }
    }

    /// RFC values throughout: RTO min 1 s (RFC 6298 (2.4)), max 60 s, init 1 s, G = 0, no
    /// tick, delayed ACK 200 ms.
    pub fn rfc() -> Self {
        TcpConfig {
            rto_min: Duration::from_secs(1),
            rto_max: Duration::from_secs(60),
            clock_granularity: Duration::ZERO,
            ..Self::default()
        }
    }

    /// Linux 2.4 as in WIPEMU \[S1\] (timestamps off, MTU 1500, SACK on, NewReno recovery):
    /// RTO init 3 s, min 200 ms, max 120 s (v, spec D.1), G = 200 ms (as the default: Linux
    /// floors the variance term at `TCP_RTO_MIN`), tick 10 ms (HZ = 100), IW 2 segments
    /// (Linux 2.4 `tcp_init_cwnd` when the handshake RTT exceeds 20 ms (r)), delayed ACK
    /// 200 ms (the upper bound of Linux's adaptive timeout). Not modelled: quick-ACK mode at start, receive-window
    /// auto-tuning, rate-halving and FACK.
    pub fn linux_2_4() -> Self {
        TcpConfig {
            initial_window: Some(2),
            rto_init: Duration::from_secs(3),
            clock_granularity: Duration::from_millis(200),
            tick: Duration::from_millis(10),
            ..Self::default()
        }
    }

    /// A modern Linux kernel (6.x) where it matters for throughput and loss recovery: IW 10
    /// (RFC 6928, `TCP_INIT_CWND`), timestamps (RFC 7323, `tcp_timestamps` = 1; MSS 1448),
    /// SACK, RTO ≥ SRTT + 200 ms (`TCP_RTO_MIN` on the variance term), initial RTO 1 s,
    /// delayed ACK 40 ms (`TCP_DELACK_MIN`, the start of Linux's adaptive ATO) after 16
    /// quick ACKs (`TCP_MAX_QUICKACKS`), PRR in recovery (RFC 9937, on since Linux 3.2),
    /// RACK's rules for what an RTO deems lost (RFC 8985 §6.3) and for lost retransmissions
    /// (`rack_lost_retransmit`), cwnd growth by the segments each ACK delivered
    /// (`count_delivered`), and with CUBIC the kernel's constants, window update and HyStart
    /// (set by the scenario builder from [`crate::CubicConfig::LINUX`] with `hystart`). The RTO
    /// timer restarts on fast retransmit and SACK survives a timeout in every preset. Not
    /// modelled: the rest of RACK-TLP (time-based detection of first transmissions, which
    /// DupThresh and the SACK scoreboard find alike when nothing is reordered; tail loss
    /// probes, which Linux sends when a window's last segments are lost and no SACK follows:
    /// there the RTO remains); F-RTO and DSACK undo (RFC 5682, 3708), which only matter after
    /// spurious timeouts and retransmissions; receive-window auto-tuning (the window is
    /// `rwnd` from the start); Linux's whole-segment cwnd arithmetic (airlink's is in bytes).
    pub fn linux() -> Self {
        TcpConfig {
            initial_window: Some(10),
            timestamps: true,
            mss: 1500 - 40 - TIMESTAMP_OPTION_LEN,
            delack_timeout: Duration::from_millis(40),
            quickack_segments: 16,
            prr: true,
            rto_spares_recent: true,
            count_delivered: true,
            rack_lost_retransmit: true,
            ..Self::default()
        }
    }

    /// Checks the fields the endpoint cannot work with.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.mss == 0 {
            return Err(ConfigError::ZeroMss);
        }
        if self.rwnd == 0 {
            return Err(ConfigError::ZeroWindow);
        }
        if self.ack_every == 0 {
            return Err(ConfigError::ZeroAckEvery);
        }
        if self.dupthresh == 0 {
            return Err(ConfigError::ZeroDupThresh);
        }
        if self.initial_window == Some(0) {
            return Err(ConfigError::ZeroInitialWindow);
        }
        if self.rto_min > self.rto_max || self.rto_max == Duration::ZERO {
            return Err(ConfigError::RtoBounds);
        }
        self.congestion.validate().map_err(ConfigError::Congestion)
    }

    /// Value of the MSS option we announce: `mss` plus the timestamp option if we offer it
    /// (i.e. MTU − 40).
    pub(crate) fn mss_option(&self) -> u16 {
        let opt = if self.timestamps {
            TIMESTAMP_OPTION_LEN
        } else {
            0
        };
        (self.mss + opt).min(u16::MAX as u32) as u16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 5681 §3.1 / RFC 3390 initial window by SMSS (spec D.1).
    #[test]
    fn initial_window_by_mss() {
        for (mss, segs) in [
            (536, 4),
            (1095, 4),
            (1096, 3),
            (1448, 3),
            (1460, 3),
            (2190, 3),
            (2191, 2),
            (8960, 2),
        ] {
            assert_eq!(initial_window_segments(mss), segs, "mss {mss}");
            // RFC 3390's byte formula, in whole segments, agrees except for 1460 < SMSS ≤ 2190,
            // where it allows 4380 B = 2 segments and RFC 5681 §3.1 says 3.
            let rfc3390 = (4 * mss).min((2 * mss).max(4380));
            let expect = if (1461..=2190).contains(&mss) {
                2
            } else {
                segs
            };
            assert_eq!(rfc3390 / mss, expect, "RFC 3390 for mss {mss}");
        }
    }

    #[test]
    fn mss_from_mtu() {
        assert_eq!(TcpConfig::for_mtu(1500, false).mss, 1460);
        assert_eq!(TcpConfig::for_mtu(1500, true).mss, 1448);
        assert_eq!(TcpConfig::for_mtu(1500, true).mss_option(), 1460);
        assert_eq!(TcpConfig::default().validate(), Ok(()));
        assert_eq!(
            TcpConfig {
                ack_every: 0,
                ..TcpConfig::default()
            }
            .validate(),
            Err(ConfigError::ZeroAckEvery)
        );
    }
}
