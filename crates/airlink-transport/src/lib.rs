//! Transport protocols for airlink: a sans-IO TCP endpoint for simulation.
//!
//! # What this layer is
//! The endpoints of a transport connection as deterministic state machines. A driver (the
//! discrete-event simulator, or a real-time loop) hands them segments, the application's
//! writes and the current time, and pulls out segments to transmit, the next timer deadline and
//! events. Segments carry header fields only: payload is a byte count.
//!
//! # What it must not do
//! Read a clock, draw random numbers, perform I/O, log, or panic on anything that arrives from
//! the network. Link behaviour (delay, rate, loss) belongs to `airlink-link`.
//!
//! # Driver contract (see [`TcpEndpoint`])
//! Inputs are `handle_*` / `connect` / `send` / `close`, each with `now` (monotone); after every
//! input call [`TcpEndpoint::poll_transmit`] until `None`, then read
//! [`TcpEndpoint::poll_timeout`] and drain [`TcpEndpoint::poll_event`]; call
//! [`TcpEndpoint::handle_timeout`] when the deadline is reached.
//!
//! # Modules
//! - [`segment`]: the simulated segment and its header size;
//! - [`codec`]: the wire format: [`Pdu`] (what a packet carries, any protocol) and its bytes
//!   inside a UDP datagram in emulation;
//! - [`config`]: [`TcpConfig`] with documented defaults and presets;
//! - [`congestion`]: the [`CongestionController`] trait, Reno (RFC 5681), CUBIC (RFC 9438),
//!   Veno (Fu & Liew 2003) and TCP-AFC (Kothari et al.);
//! - [`rtt`]: the RFC 6298 estimator;
//! - [`rate_sample`]: delivery-rate sampling (draft-cheng-iccrg-delivery-rate-estimation),
//!   kept by the endpoint for every controller ([`RateSample`]);
//! - [`pacing`]: the endpoint's pacer, driven by the controller's pacing rate and quantum;
//! - [`ecn`]: Explicit Congestion Notification (RFC 3168), the endpoint's ECN rules;
//! - [`endpoint`]: the state machine (rules and deviations at the top of the module);
//! - [`udp`]: UDP media sources (CBR/VBR) and iperf 2 receiver accounting;
//! - [`dccp`]: DCCP with CCID 2 and CCID 3 ([`DccpEndpoint`], same driver contract);
//! - [`device`]: a sending host's service rate and send buffer ([`DeviceLimit`]): UDP drops
//!   what does not fit, TCP and DCCP block.

pub mod codec;
pub mod config;
pub mod congestion;
pub mod dccp;
pub mod device;
pub mod ecn;
pub mod endpoint;
pub mod pacing;
mod rangeset;
pub mod rate_sample;
mod recv;
pub mod rtt;
pub mod scoreboard;
pub mod segment;
pub mod udp;

pub use codec::Pdu;
pub use config::{initial_window_segments, ConfigError, Recovery, TcpConfig};
pub use congestion::{
    AckEvent, Afc, AfcConfig, Bbr, BbrMode, CaState, CongestionConfig, CongestionConfigError,
    CongestionController, CongestionEvent, CongestionKind, ControllerFactory, ControllerInit,
    ControllerProbe, Cubic, CubicConfig, LossView, RateSample, RecoveryExit, RecoveryKind, Reno,
    UnknownCongestion, Veno, VenoConfig,
};
pub use dccp::{
    Ccid, DccpApp, DccpConfig, DccpConfigError, DccpEndpoint, DccpEvent, DccpPacket, DccpState,
    DccpStats, QueuePolicy,
};
pub use device::{DeviceLimit, DeviceLimitConfig, DeviceLimitError, DeviceStats};
pub use ecn::Codepoint;
pub use endpoint::{Role, TcpEndpoint, TcpEvent, TcpState, TcpStats};
pub use rtt::RttEstimator;
pub use scoreboard::SackScoreboard;
pub use segment::{Flags, SackBlocks, Segment};
pub use udp::{
    IntervalReport, IperfReceiver, IperfTotals, MediaSource, RateCap, Traffic, UdpDatagram,
    UdpReceiver, UdpSender, UdpSourceConfig,
};
