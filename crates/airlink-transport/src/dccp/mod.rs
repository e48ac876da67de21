//! DCCP (RFC 4340) with CCID 2 (RFC 4341) and CCID 3 (RFC 4342/5348) as a sans-IO endpoint.
//!
//! - [`packet`]: the simulated packet (header fields, options, payload as a count) and its size;
//! - [`ackvec`]: Ack Vector encoding/decoding and the receiver's Ack Vector state;
//! - [`ccid2`]: the TCP-like window sender; [`ccid3`]: TFRC sender and receiver;
//! - [`tfrc`]: the throughput equation, W_init and loss intervals;
//! - [`endpoint`]: [`DccpEndpoint`], the connection state machine (rules at the top).
//!
//! The driver contract is the one of [`crate::TcpEndpoint`]; see [`DccpEndpoint`].

pub mod ackvec;
pub mod ccid2;
pub mod ccid3;
pub mod endpoint;
pub mod packet;
pub mod tfrc;

use crate::udp::{SourceConfigError, UdpSourceConfig};
use airlink_engine::Duration;
use std::fmt;

pub use ccid2::{AckRatioMode, Ccid2Config};
pub use ccid3::Ccid3Config;
pub use endpoint::{CcidState, DccpEndpoint, DccpEvent, DccpState, DccpStats};
pub use packet::{AppHeader, DccpPacket, PacketType, TfrcFeedback};

/// Congestion Control ID.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ccid {
    /// CCID 2, TCP-like (RFC 4341).
    TcpLike = 2,
    /// CCID 3, TFRC (RFC 4342).
    Tfrc = 3,
}

/// An unknown CCID name or number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownCcid(pub String);

impl fmt::Display for UnknownCcid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown CCID {:?}; valid: {}",
            self.0,
            Ccid::NAMES.join(", ")
        )
    }
}

impl std::error::Error for UnknownCcid {}

impl Ccid {
    /// Names accepted by [`Ccid::from_name`] (case-insensitive).
    pub const NAMES: [&'static str; 6] = ["2", "ccid2", "tcp-like", "3", "ccid3", "tfrc"];

    pub fn from_name(name: &str) -> Result<Ccid, UnknownCcid> {
        match name
            .trim()
            .to_ascii_lowercase()
            .replace(['-', '_'], "")
            .as_str()
        {
            "2" | "ccid2" | "tcplike" => Ok(Ccid::TcpLike),
            "3" | "ccid3" | "tfrc" => Ok(Ccid::Tfrc),
            _ => Err(UnknownCcid(name.to_string())),
        }
    }

    /// The CCID number carried in feature negotiation.
    pub fn number(self) -> u8 {
        self as u8
    }

    pub fn from_number(n: u8) -> Option<Ccid> {
        match n {
            2 => Some(Ccid::TcpLike),
            3 => Some(Ccid::Tfrc),
            _ => None,
        }
    }
}

/// Where the endpoint's outgoing data comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum DccpApp {
    /// Only what [`DccpEndpoint::send`] offers.
    Manual,
    /// Always a packet of `payload` bytes ready (iperf with an unlimited rate).
    Greedy { payload: u32 },
    /// A CBR/VBR source like UDP's, feeding the send queue on its schedule.
    Source(UdpSourceConfig),
}

/// What happens when the application offers a packet and the send queue is full.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum QueuePolicy {
    /// The application waits (a blocking socket, Linux's default): a source falls behind
    /// its schedule and catches up later; [`DccpEndpoint::send`] refuses.
    Block,
    /// The oldest queued packet is dropped to make room (counted).
    DropOldest,
    /// The offered packet is dropped (counted).
    DropNewest,
}

/// Configuration of one DCCP endpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct DccpConfig {
    /// CCID for both half-connections. The client proposes it in the Request; a server uses
    /// the client's choice (feature negotiation's outcome). Default CCID 3.
    pub ccid: Ccid,
    /// Default [`DccpApp::Manual`].
    pub app: DccpApp,
    /// Send queue length, packets. Default 5 (Linux `net.dccp.default.tx_qlen` (r)).
    pub queue_capacity: usize,
    /// Default [`QueuePolicy::Block`] (Linux blocking socket).
    pub queue_policy: QueuePolicy,
    /// Packet size used before any payload was seen (initial cwnd, initial s), bytes.
    /// Default 1424 (\[S3\]'s larger size).
    pub packet_size: u32,
    /// Request and Close retransmission timeout, doubled per retry. Default 3 s (Linux
    /// `DCCP_TIMEOUT_INIT` (r)).
    pub request_timeout: Duration,
    /// PARTOPEN Ack retransmission timeout, doubled per retry. Default 200 ms (RFC 4340 §8.1.5).
    pub partopen_timeout: Duration,
    /// Largest Ack Vector option, bytes. Default 253 (RFC 4340 §5.8 option limit).
    pub ack_vector_max: usize,
    pub ccid2: Ccid2Config,
    pub ccid3: Ccid3Config,
}

impl Default for DccpConfig {
    fn default() -> Self {
        DccpConfig {
            ccid: Ccid::Tfrc,
            app: DccpApp::Manual,
            queue_capacity: 5,
            queue_policy: QueuePolicy::Block,
            packet_size: 1424,
            request_timeout: Duration::from_secs(3),
            partopen_timeout: Duration::from_millis(200),
            ack_vector_max: 253,
            ccid2: Ccid2Config::default(),
            ccid3: Ccid3Config::default(),
        }
    }
}

/// Why a [`DccpConfig`] cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DccpConfigError {
    /// `packet_size` or a greedy payload is 0.
    ZeroPacketSize,
    /// `queue_capacity` is 0.
    ZeroQueue,
    /// `ack_vector_max` is 0 or above 253.
    AckVectorSize,
    /// A timeout is 0.
    ZeroTimeout,
    /// CCID-2: a fixed Ack Ratio of 0, a zero dupthresh, or rto_min above rto_max.
    Ccid2,
    /// The source configuration is invalid.
    Source(SourceConfigError),
}

impl fmt::Display for DccpConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroPacketSize => f.write_str("packet size must be at least 1 byte"),
            Self::ZeroQueue => f.write_str("queue_capacity must be at least 1 packet"),
            Self::AckVectorSize => f.write_str("ack_vector_max must be within 1..=253 bytes"),
            Self::ZeroTimeout => f.write_str("timeouts must be positive"),
            Self::Ccid2 => f.write_str(
                "ccid2: ack ratio and dupthresh must be at least 1 and rto_min ≤ rto_max",
            ),
            Self::Source(e) => write!(f, "source: {e}"),
        }
    }
}

impl std::error::Error for DccpConfigError {}

impl DccpConfig {
    pub fn validate(&self) -> Result<(), DccpConfigError> {
        if self.packet_size == 0 || matches!(self.app, DccpApp::Greedy { payload: 0 }) {
            return Err(DccpConfigError::ZeroPacketSize);
        }
        if self.queue_capacity == 0 {
            return Err(DccpConfigError::ZeroQueue);
        }
        if !(1..=253).contains(&self.ack_vector_max) {
            return Err(DccpConfigError::AckVectorSize);
        }
        let c2 = &self.ccid2;
        if [
            self.request_timeout,
            self.partopen_timeout,
            c2.rto_init,
            c2.rto_max,
            c2.ack_delay,
            self.ccid3.initial_nofeedback,
            self.ccid3.feedback_fallback,
        ]
        .iter()
        .any(|d| d.is_zero())
        {
            return Err(DccpConfigError::ZeroTimeout);
        }
        if c2.ack_ratio == AckRatioMode::Fixed(0) || c2.dupthresh == 0 || c2.rto_min > c2.rto_max {
            return Err(DccpConfigError::Ccid2);
        }
        if let DccpApp::Source(s) = &self.app {
            s.validate().map_err(DccpConfigError::Source)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ccid_names() {
        for (n, c) in [
            ("2", Ccid::TcpLike),
            ("CCID3", Ccid::Tfrc),
            ("tcp-like", Ccid::TcpLike),
        ] {
            assert_eq!(Ccid::from_name(n), Ok(c));
        }
        let e = Ccid::from_name("ccid4").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown CCID \"ccid4\"; valid: 2, ccid2, tcp-like, 3, ccid3, tfrc"
        );
        assert_eq!(Ccid::from_number(Ccid::Tfrc.number()), Some(Ccid::Tfrc));
    }

    #[test]
    fn config_validation() {
        assert_eq!(DccpConfig::default().validate(), Ok(()));
        let bad = [
            (
                DccpConfig {
                    app: DccpApp::Greedy { payload: 0 },
                    ..Default::default()
                },
                DccpConfigError::ZeroPacketSize,
            ),
            (
                DccpConfig {
                    queue_capacity: 0,
                    ..Default::default()
                },
                DccpConfigError::ZeroQueue,
            ),
            (
                DccpConfig {
                    app: DccpApp::Source(UdpSourceConfig::cbr(100, 0)),
                    ..Default::default()
                },
                DccpConfigError::Source(SourceConfigError::BadRate),
            ),
            (
                DccpConfig {
                    ccid2: Ccid2Config {
                        ack_ratio: AckRatioMode::Fixed(0),
                        ..Default::default()
                    },
                    ..Default::default()
                },
                DccpConfigError::Ccid2,
            ),
        ];
        for (cfg, e) in bad {
            assert_eq!(cfg.validate(), Err(e));
        }
    }
}
