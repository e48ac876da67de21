//! The scenario schema: what a scenario file may say, with each field's unit, default, and
//! where the default comes from. Unknown keys are errors everywhere.
//!
//! Topology, in one of two forms:
//! - the shorthand (one wireless hop, as in the WIPEMU study): for every flow,
//!   `server [--access-->] --wired--> downlink --> client` and
//!   `client --> uplink --wired--> [--access-->] server`; `wired`, `downlink` and `uplink` are
//!   shared by all flows, `access` links (optional) are per flow;
//! - the general form: `[host.NAME]` tables and one-way `[link.NAME]` tables between them, any
//!   model on any link; each flow runs between two hosts, along the path it names or the only
//!   shortest one ([`crate::topology`]).
//!
//! A `pipe` is a plain link (rate, delay, queue, random loss, bit errors).

use crate::trace_keys;
pub use crate::trace_keys::TraceFormat;
use crate::units::{
    BitErrorRate, DataSize, Decibel, Distance, Frequency, Probability, QueueLimit, Rate, Speed,
    Time,
};
use crate::FlowStart;
use airlink_engine::Duration;
use airlink_phy::Modulation;
use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

fn ms(x: u64) -> Time {
    Time(Duration::from_millis(x))
}

/// A whole scenario file.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A short name for reports; defaults to the file name without `.toml`.
    #[serde(default)]
    pub name: String,
    /// Free text for people reading the file.
    #[serde(default)]
    pub description: String,
    /// The run seed; every component's random stream is derived from it and its name.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Simulated time after which the run stops even if flows are unfinished.
    #[serde(default = "default_stop")]
    pub stop: Time,
    /// Interval of the sampled time series (cwnd, queue length, SNR); 0 disables them.
    #[serde(default = "default_sample_interval")]
    pub sample_interval: Time,
    /// Simulation: also record, event by event, what the TCP servers sent and the ACKs they
    /// got (`segments`: every data segment, ACK and timeout with the sender's cwnd) and every
    /// slot a cell served (`slots`: user, rate, frame error). Off by default: these tables
    /// grow with the traffic, while the sampled series grow with time only.
    #[serde(default)]
    pub event_log: bool,
    /// Simulation: the most memory the run's state may take (events pending, packets held by
    /// links and outages, time series not yet written); a run that needs more stops with an
    /// error saying what grew. The time series are written out in parts as they grow.
    #[serde(default = "default_memory_budget")]
    pub memory_budget: DataSize,
    /// Optional access links of a dumbbell: each flow's server gets its own pair, between
    /// it and the shared wired link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<PipeConfig>,
    /// Shorthand: the fixed network between the server and the wireless link, each direction.
    /// Default: no rate, no delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wired: Option<PipeConfig>,
    /// Shorthand: the wireless downlink (towards the client), any link model. Required unless
    /// the scenario describes its links with `[link.NAME]` tables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downlink: Option<LinkModel>,
    /// Shorthand: the wireless uplink (from the client), any link model. Default: symmetric,
    /// a pipe with the downlink's capacity and delay (no loss), filled in when the scenario is
    /// built, so `check` and the manifest show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uplink: Option<LinkModel>,
    /// General form: the hosts (`[host.NAME]`), where flows start and end and links meet.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub host: IndexMap<String, HostConfig>,
    /// General form: the one-way links between hosts (`[link.NAME]`), any model each.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub link: IndexMap<String, LinkConfig>,
    /// The TCP preset of every flow whose `tcp.preset` is absent, so one line pins a file to
    /// the stack of its era. Default `linux` (the kernel's behaviour); the studies' scenarios
    /// pin theirs.
    #[serde(default)]
    pub tcp_preset: TcpPreset,
    /// The flows (`[[flow]]`), at least one.
    pub flow: Vec<FlowConfig>,
    /// Timed changes (`[[change]]`): a link's parameters, a link down or up, a flow's path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub change: Vec<ChangeConfig>,
    /// Hand-offs (`[[handoff]]`): a station moves from one WLAN (access point) to another.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handoff: Vec<HandoffConfig>,
    /// Settings of the two network namespaces in real-time emulation (ignored in simulation,
    /// except `mtu`, the path MTU DCCP packets must fit in both modes).
    #[serde(default)]
    pub emulation: EmulationConfig,
}

/// `[emulation]`: how the client and server namespaces are set up in real-time emulation.
/// Both namespaces get the same settings; simulation ignores the table but for `mtu`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmulationConfig {
    /// Removed: the flows' `congestion` sets the kernel's congestion control too (see
    /// `airlink_emu::kernel_cc`). Kept only to refuse it with a message saying so.
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    pub congestion: Option<toml::Value>,
    /// Per-namespace sysctls (keys under `net.`), e.g. `{ "net.ipv4.tcp_timestamps" = "0" }`.
    /// Values are written as given; numbers and booleans are accepted too. They are applied
    /// after the kernel's congestion control is set from the flows' `congestion`, so
    /// `net.ipv4.tcp_congestion_control` here picks one airlink does not model (e.g. `"htcp"`).
    #[serde(default, deserialize_with = "sysctl_values")]
    pub sysctl: std::collections::BTreeMap<String, String>,
    /// MTU of the emulated interfaces in bytes. Default 1500. It is also the path MTU a DCCP
    /// flow's packets are checked against, in simulation too (DCCP never fragments; see
    /// `flow.N.packet_size`).
    #[serde(default = "default_emu_mtu")]
    pub mtu: u32,
    /// Segmentation offloads (GSO/GRO) on the emulated interfaces. Default false: every packet
    /// crosses the link models as the IP packet it is on the wire. Only `false` is supported.
    #[serde(default)]
    pub offloads: bool,
    /// Interval of the kernel's TCP state sampled in both namespaces (TCP_INFO through
    /// sock_diag netlink) into the `flows` table. Default 10 ms; "0 s" turns the sampling off.
    #[serde(default = "default_tcp_info_interval")]
    pub tcp_info_interval: Time,
}

fn default_emu_mtu() -> u32 {
    1500
}
fn default_tcp_info_interval() -> Time {
    ms(10)
}

impl Default for EmulationConfig {
    fn default() -> Self {
        EmulationConfig {
            congestion: None,
            sysctl: Default::default(),
            mtu: default_emu_mtu(),
            offloads: false,
            tcp_info_interval: default_tcp_info_interval(),
        }
    }
}

fn sysctl_values<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<std::collections::BTreeMap<String, String>, D::Error> {
    let raw = std::collections::BTreeMap::<String, toml::Value>::deserialize(d)?;
    raw.into_iter()
        .map(|(k, v)| {
            let text = match v {
                toml::Value::String(s) => s,
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Boolean(b) => (b as u8).to_string(),
                other => {
                    return Err(serde::de::Error::custom(format!(
                        "sysctl `{k}` = {other}: expected a string, an integer or a boolean"
                    )))
                }
            };
            Ok((k, text))
        })
        .collect()
}

fn default_seed() -> u64 {
    1
}
fn default_stop() -> Time {
    Time(Duration::from_secs(600))
}
fn default_sample_interval() -> Time {
    ms(100)
}
fn default_memory_budget() -> DataSize {
    DataSize(4_000_000_000)
}

/// A plain link: rate, propagation delay, drop-tail queue, random loss and bit errors.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PipeConfig {
    /// Serialisation rate; absent means unlimited (no queueing). A path without a rate anywhere
    /// (wired, access, downlink) needs a round trip of at least 1 ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// One-way propagation delay. Default 0.
    #[serde(default = "zero_time")]
    pub delay: Time,
    /// Drop-tail queue limit in packets or bytes (only with a rate). Default 1000 packets.
    #[serde(default = "default_pipe_queue")]
    pub queue: QueueLimit,
    /// Queue discipline in front of the link (needs a rate): `"droptail"`, `"codel"`,
    /// `"fq_codel"`, `"pie"`, `"red"`, or a table with its parameters (`aqm.kind`, ...); its
    /// limit is `queue`. Absent: the link's own drop-tail queue.
    #[serde(
        default,
        deserialize_with = "crate::aqm::deserialize",
        skip_serializing_if = "Option::is_none"
    )]
    pub aqm: Option<crate::aqm::AqmConfig>,
    /// Probability that a packet is lost, independently of others. Default 0.
    #[serde(default)]
    pub loss: Probability,
    /// Probability that each bit is flipped, in [0, 0.5]; the receiver's checksum then drops
    /// the packet. Without `error_burst_bits` each bit independently; with it, the long-run mean.
    #[serde(default)]
    pub bit_error_rate: BitErrorRate,
    /// Mean length of an error burst, bits: a Gilbert–Elliott channel over the bits sent, whose
    /// bad state flips each bit with probability 0.5 and whose good state is error-free, its
    /// periods geometric and long enough that the mean stays `bit_error_rate` (the residual
    /// errors of a convolutional decoder come in such bursts). Absent: independent bit errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_burst_bits: Option<std::num::NonZeroU32>,
    /// Unit of delivery (needs a rate): the link sends units of this size back to back, packed
    /// with the bytes queued, and a packet leaves with the unit holding its last byte (the
    /// Seawind study's granularity: LLC frames, RLC blocks). Absent: whole packets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<DataSize>,
}

fn zero_time() -> Time {
    Time(Duration::ZERO)
}
fn default_pipe_queue() -> QueueLimit {
    QueueLimit::Packets(1000)
}

impl Default for PipeConfig {
    fn default() -> Self {
        PipeConfig {
            rate: None,
            delay: zero_time(),
            queue: default_pipe_queue(),
            loss: Probability(0.0),
            bit_error_rate: BitErrorRate(0.0),
            error_burst_bits: None,
            unit: None,
            aqm: None,
        }
    }
}

/// A GPRS link (the Seawind study's packet-switched link): on each of `timeslots` timeslots a
/// radio block of the coding scheme every 20 ms, carrying IP packets at the RLC data rate.
/// Its `granularity` is the Seawind study's (§3.2): packets leave whole (`"ip"`), or in LLC
/// frames (`"llc"`, `llc_frame` bytes rounded up to whole RLC blocks) or RLC blocks (`"rlc"`),
/// packed back to back as the pipe's `unit` does; or a size, a whole number of RLC blocks.
/// Rates: 3GPP TS 45.003 (coding schemes) and TS 44.060 (RLC data per block: CS-1 20 B, CS-2
/// 30 B, CS-3 36 B, CS-4 50 B). The delay and queue defaults are assumptions (RFC 3481 §2.1:
/// GPRS round trips of several hundred ms, large buffers); LLC/SNDCP headers are left out.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GprsConfig {
    /// `"CS-1"` to `"CS-4"`. Default CS-2.
    #[serde(default = "default_coding_scheme")]
    pub coding_scheme: CodingScheme,
    /// Timeslots of the link, 1 to 8. Default 4 (a 4+1 terminal's downlink).
    #[serde(default = "default_timeslots")]
    pub timeslots: u32,
    /// `"ip"`, `"llc"`, `"rlc"` or a size that is a whole number of RLC blocks. Default ip.
    #[serde(default)]
    pub granularity: Granularity,
    /// LLC frame size of the `"llc"` granularity. Default 200 B (the Seawind study's).
    #[serde(default = "default_llc_frame")]
    pub llc_frame: DataSize,
    /// One-way delay besides serialisation. Default 300 ms (assumption, RFC 3481).
    #[serde(default = "default_gprs_delay")]
    pub delay: Time,
    /// Drop-tail queue. Default 30 packets (assumption).
    #[serde(default = "default_gprs_queue")]
    pub queue: QueueLimit,
    /// Queue discipline in front of the link (needs a rate): `"droptail"`, `"codel"`,
    /// `"fq_codel"`, `"pie"`, `"red"`, or a table with its parameters (`aqm.kind`, ...); its
    /// limit is `queue`. Absent: the link's own drop-tail queue.
    #[serde(
        default,
        deserialize_with = "crate::aqm::deserialize",
        skip_serializing_if = "Option::is_none"
    )]
    pub aqm: Option<crate::aqm::AqmConfig>,
    /// Probability that a packet is lost (RLC's acknowledged mode makes it rare). Default 0.
    #[serde(default)]
    pub loss: Probability,
}

/// A GPRS coding scheme (3GPP TS 45.003).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum CodingScheme {
    #[serde(rename = "CS-1")]
    Cs1,
    #[serde(rename = "CS-2")]
    Cs2,
    #[serde(rename = "CS-3")]
    Cs3,
    #[serde(rename = "CS-4")]
    Cs4,
}

impl fmt::Display for CodingScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CS-{}", *self as u8 + 1)
    }
}

impl CodingScheme {
    /// RLC data bytes per radio block (TS 44.060).
    pub fn block_bytes(self) -> u64 {
        match self {
            CodingScheme::Cs1 => 20,
            CodingScheme::Cs2 => 30,
            CodingScheme::Cs3 => 36,
            CodingScheme::Cs4 => 50,
        }
    }
}

/// What a GPRS link delivers at once (the Seawind study's §3.2).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub enum Granularity {
    /// Whole IP packets.
    #[default]
    Ip,
    /// LLC frames of `llc_frame` bytes.
    Llc,
    /// RLC blocks of the coding scheme.
    Rlc,
    /// Units of this size.
    Size(DataSize),
}

impl fmt::Display for Granularity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Granularity::Ip => f.write_str("ip"),
            Granularity::Llc => f.write_str("llc"),
            Granularity::Rlc => f.write_str("rlc"),
            Granularity::Size(s) => write!(f, "{s}"),
        }
    }
}

impl std::str::FromStr for Granularity {
    type Err = String;
    fn from_str(v: &str) -> Result<Self, String> {
        match v {
            "ip" => Ok(Granularity::Ip),
            "llc" => Ok(Granularity::Llc),
            "rlc" => Ok(Granularity::Rlc),
            _ => v
                .parse()
                .map(Granularity::Size)
                .map_err(|e| format!("{e}; or \"ip\", \"llc\", \"rlc\"")),
        }
    }
}

impl Serialize for Granularity {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Granularity {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Granularity {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Granularity".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "description": "\"ip\", \"llc\", \"rlc\" or a size like \"60 B\""})
    }
}

fn default_coding_scheme() -> CodingScheme {
    CodingScheme::Cs2
}
fn default_timeslots() -> u32 {
    4
}
fn default_llc_frame() -> DataSize {
    DataSize(200)
}
fn default_gprs_delay() -> Time {
    ms(300)
}
fn default_gprs_queue() -> QueueLimit {
    QueueLimit::Packets(30)
}

impl GprsConfig {
    /// The radio block period on one timeslot (TS 45.002: 4 TDMA frames of 4.615 ms, 20 ms on average).
    pub const BLOCK_PERIOD_S: f64 = 0.02;

    /// RLC data rate of the link, bit/s.
    pub fn rate_bps(&self) -> u64 {
        (self.timeslots as u64 * self.coding_scheme.block_bytes() * 8) * 50
    }

    /// The unit of delivery of the granularity, in bytes (`None`: whole packets).
    pub fn unit_bytes(&self) -> Option<u64> {
        let block = self.coding_scheme.block_bytes();
        match self.granularity {
            Granularity::Ip => None,
            Granularity::Llc => Some(self.llc_frame.0.div_ceil(block) * block),
            Granularity::Rlc => Some(block),
            Granularity::Size(s) => Some(s.0),
        }
    }

    /// The pipe that models it.
    pub fn pipe(&self) -> PipeConfig {
        PipeConfig {
            rate: Some(Rate(self.rate_bps())),
            delay: self.delay,
            queue: self.queue,
            loss: self.loss,
            unit: self.unit_bytes().map(DataSize),
            aqm: self.aqm.clone(),
            ..PipeConfig::default()
        }
    }
}

/// A link's model, chosen by its table name: `[downlink.ofdm4g]`, `[uplink.pipe]`,
/// `[link.NAME.trace]`, ...
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum LinkModel {
    Ofdm4g(Box<Ofdm4gConfig>),
    Pipe(PipeConfig),
    /// A GPRS link (rate from its coding scheme and timeslots), modelled as a pipe.
    Gprs(GprsConfig),
    /// `downlink.trace = { file = "...", delay = "..", queue = .. }`: capacity from a
    /// Mahimahi delivery-opportunity trace.
    Trace(TraceConfig),
    /// A multi-user cell's downlink: the flows through it are its users, served one per slot
    /// by an opportunistic scheduler.
    Cell(Box<CellConfig>),
    /// An 802.11g access point's shared medium (general form only: `[link.NAME.wlan]`).
    Wlan(Box<WlanConfig>),
    /// A LEO satellite access link with 15 s reconfigurations (Starlink-like by default).
    Leo(Box<crate::leo_keys::LeoConfig>),
}

/// `[[change]]`: at a time, one of: new values for some of a link's parameters (`link` and
/// `set`); a link going down or up (`link` and `state`); a flow moving to other links
/// (`flow` and `path` and/or `return_path`: a hand-off).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeConfig {
    /// When the change happens (before the scenario's stop).
    pub at: Time,
    /// The link changed, by its name in results (`downlink`, `wired.down`, `access.0.up`, or a
    /// `[link]` table's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// New values of the link's parameters; the rest keep theirs. Packets already in the link
    /// keep the schedule they were given (as netem's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<LinkSet>,
    /// `"down"` or `"up"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<LinkState>,
    /// With `state = "down"`: what becomes of the packets queued in the link, in flight on it,
    /// and arriving while it is down: `"lost"` (default) or `"kept"` (delivered when it is up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets: Option<DownPackets>,
    /// The flow moved: its `name`, or its index in `[[flow]]` (from 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<FlowRef>,
    /// The flow's new links from its server to its client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<Vec<String>>,
    /// The flow's new links from its client back to its server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_path: Option<Vec<String>>,
}

/// `[[handoff]]`: at `at`, station `station` leaves the WLAN `from` for the WLAN `to`. It is
/// out of reach for `outage` (re-association), its flows move to paths through `to` at `at`,
/// and of the packets the old access point still holds for it, a fraction `queued_lost` is lost
/// (the rest reach it once it is associated again).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffConfig {
    /// When the station leaves `from` (within the run).
    pub at: Time,
    /// The station: a host in `from`'s `stations`, or one an earlier hand-off moved there.
    pub station: String,
    /// The WLAN (`[link.NAME.wlan]`) it leaves.
    pub from: String,
    /// The WLAN it joins.
    pub to: String,
    /// How long it can neither send nor receive. Default 50 ms (an assumption: the DCCP study
    /// says only "very fast"; Mishra et al. 2003 measured 53-420 ms, mostly scanning).
    #[serde(default = "default_handoff_outage")]
    pub outage: Time,
    /// The share of the packets queued for the station at the old access point that are lost:
    /// 1 (default, an access point drops frames for a station that left), 0 keeps them all.
    #[serde(default = "default_queued_lost")]
    pub queued_lost: Probability,
}

fn default_handoff_outage() -> Time {
    Time(Duration::from_millis(50))
}
fn default_queued_lost() -> Probability {
    Probability(1.0)
}

/// `[link.NAME.wlan]`: an 802.11g (ERP-OFDM) access point and its stations sharing one medium
/// under DCF. Every default is the standard's (IEEE 802.11-2007) for an all-ERP network at
/// 54 Mbit/s; see `crates/airlink-link/src/wlan.rs` for each source.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WlanConfig {
    /// The hosts associated with the access point at the start (none: only hand-offs bring some).
    pub stations: Vec<String>,
    /// Data frames' PHY rate: 6, 9, 12, 18, 24, 36, 48 or 54 Mbit/s. Default 54 Mbit/s.
    #[serde(default = "default_wlan_phy_rate")]
    pub phy_rate: Rate,
    /// The rate of MAC ACKs (a basic rate). Default 24 Mbit/s.
    #[serde(default = "default_wlan_basic_rate")]
    pub basic_rate: Rate,
    /// Slot time. Default 9 µs (short slot; 20 µs with 802.11b stations).
    #[serde(default = "default_wlan_slot")]
    pub slot: Time,
    /// Attempts of a frame before its packet is dropped. Default 7 (dot11ShortRetryLimit).
    #[serde(default = "default_wlan_retry_limit")]
    pub retry_limit: u32,
    /// Probability that a frame sent alone is received in error. Default 0.
    #[serde(default)]
    pub frame_error_rate: Probability,
    /// The contention window's first size, CW_min (aCWmin of the OFDM PHY). Default 15.
    #[serde(default = "default_wlan_cw_min")]
    pub cw_min: u32,
    /// The largest size it doubles to, CW_max (aCWmax). Default 1023.
    #[serde(default = "default_wlan_cw_max")]
    pub cw_max: u32,
    /// Each node's transmit queue (the access point's and every station's). Default 100 packets.
    #[serde(default = "default_wlan_queue")]
    pub queue: QueueLimit,
}

fn default_wlan_phy_rate() -> Rate {
    Rate(54_000_000)
}
fn default_wlan_basic_rate() -> Rate {
    Rate(24_000_000)
}
fn default_wlan_slot() -> Time {
    Time(Duration::from_micros(9))
}
fn default_wlan_retry_limit() -> u32 {
    7
}
fn default_wlan_cw_min() -> u32 {
    15
}
fn default_wlan_cw_max() -> u32 {
    1023
}
fn default_wlan_queue() -> QueueLimit {
    QueueLimit::Packets(100)
}

/// `[flow.device]`: the data sender's service rate (IP packets) and send buffer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeviceConfig {
    /// At most this many bits per second of IP packets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// At most this many packets per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet_rate: Option<f64>,
    /// Packets the host holds, waiting or being sent. Default 4 (an assumption: the DCCP study's
    /// stalled senders suggest a small one; it does not give it).
    #[serde(default = "default_device_buffer")]
    pub buffer: u32,
    /// The host's per-packet work for each packet of the flow it receives (ACKs, feedback),
    /// which delays what it sends next. Default: a sent packet's, 1/`packet_rate` (a CPU-bound
    /// host pays per packet in both directions); "0 s" charges nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_cost: Option<Time>,
}

fn default_device_buffer() -> u32 {
    4
}

/// A flow named by its `name` or by its index in `[[flow]]`.
#[derive(Clone, Debug, PartialEq)]
pub enum FlowRef {
    Index(usize),
    Name(String),
}

impl Serialize for FlowRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            FlowRef::Index(i) => s.serialize_u64(*i as u64),
            FlowRef::Name(n) => s.serialize_str(n),
        }
    }
}

impl<'de> Deserialize<'de> for FlowRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = FlowRef;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a flow's name, or its index in [[flow]] (from 0)")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<FlowRef, E> {
                usize::try_from(v).map(FlowRef::Index).map_err(|_| {
                    E::custom(format!(
                        "{v}: expected a flow's name, or its index in [[flow]] (from 0)"
                    ))
                })
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<FlowRef, E> {
                Ok(FlowRef::Index(v as usize))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<FlowRef, E> {
                Ok(FlowRef::Name(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for FlowRef {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "FlowRef".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": ["string", "integer"], "description": "a flow's name, or its index in [[flow]] (from 0)"})
    }
}

/// Link parameters a change may set (which ones a model can change: [`LinkModel::changeable`]).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkSet {
    /// The new serialisation rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// The new one-way propagation delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Time>,
    /// The new drop-tail queue limit (packets already queued stay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<QueueLimit>,
    /// The new probability that a packet is lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<Probability>,
    /// The new probability that each bit is flipped, in [0, 0.5].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bit_error_rate: Option<BitErrorRate>,
    /// A radio channel's new mean SNR (its fading goes on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_snr: Option<Decibel>,
}

impl LinkSet {
    /// The names of the parameters set, in the table's order.
    pub fn names(&self) -> Vec<&'static str> {
        [
            ("rate", self.rate.is_some()),
            ("delay", self.delay.is_some()),
            ("queue", self.queue.is_some()),
            ("loss", self.loss.is_some()),
            ("bit_error_rate", self.bit_error_rate.is_some()),
            ("mean_snr", self.mean_snr.is_some()),
        ]
        .into_iter()
        .filter_map(|(n, set)| set.then_some(n))
        .collect()
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LinkState {
    Down,
    Up,
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DownPackets {
    #[default]
    Lost,
    Kept,
}

/// `[host.NAME]`: a host. Flows start and end at hosts; links join them.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {}

/// `[link.NAME]`: a one-way link from one host to another, with exactly one model table
/// (`[link.NAME.pipe]`, `[link.NAME.gprs]`, `[link.NAME.trace]`, `[link.NAME.ofdm4g]`, `[link.NAME.cell]`), or a
/// WLAN (`[link.NAME.wlan]`): the shared medium of the access point `from` and its stations,
/// which carries every hop between them, both ways.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// The host that sends into the link (a WLAN's: its access point).
    pub from: String,
    /// The host the link delivers to (none for a WLAN: its stations are in its table).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub to: String,
    /// A plain link (rate, delay, queue, loss, bit errors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipe: Option<PipeConfig>,
    /// A GPRS link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gprs: Option<GprsConfig>,
    /// A trace-driven link (Mahimahi's format).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceConfig>,
    /// The 4G OFDM radio link (the WIPEMU study's model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ofdm4g: Option<Box<Ofdm4gConfig>>,
    /// A multi-user cell's downlink (the TCP-PF study's model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<Box<CellConfig>>,
    /// An 802.11g WLAN: one access point's shared medium (DCF).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wlan: Option<Box<WlanConfig>>,
    /// A LEO satellite access link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leo: Option<Box<crate::leo_keys::LeoConfig>>,
    /// netem's impairments after the link's model (delay, jitter, loss models, duplicate,
    /// corrupt, reorder, rate, slot); see docs/netem.md. Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impair: Option<crate::netem::ImpairConfig>,
    /// netem's own options as a string (`"delay 100ms 10ms 25% loss 0.3%"`), read into
    /// `impair` (give one of the two). Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netem: Option<String>,
}

impl LinkConfig {
    /// The link's model (validation has checked there is exactly one).
    pub fn model(&self) -> LinkModel {
        if let Some(g) = &self.gprs {
            return LinkModel::Gprs(g.clone());
        }
        if let Some(l) = &self.leo {
            return LinkModel::Leo(l.clone());
        }
        match (
            &self.pipe,
            &self.trace,
            &self.ofdm4g,
            &self.cell,
            &self.wlan,
        ) {
            (Some(p), ..) => LinkModel::Pipe(p.clone()),
            (_, Some(t), ..) => LinkModel::Trace(t.clone()),
            (_, _, Some(o), ..) => LinkModel::Ofdm4g(o.clone()),
            (_, _, _, Some(c), _) => LinkModel::Cell(c.clone()),
            (.., Some(w)) => LinkModel::Wlan(w.clone()),
            _ => unreachable!("validated: a link has one model"),
        }
    }

    /// The models the table gives (one, when valid).
    pub fn models(&self) -> Vec<LinkModel> {
        [
            self.pipe.clone().map(LinkModel::Pipe),
            self.gprs.clone().map(LinkModel::Gprs),
            self.trace.clone().map(LinkModel::Trace),
            self.ofdm4g.clone().map(LinkModel::Ofdm4g),
            self.cell.clone().map(LinkModel::Cell),
            self.wlan.clone().map(LinkModel::Wlan),
            self.leo.clone().map(LinkModel::Leo),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// The downlink of a multi-user cell (\[S2\], spec C): a base station serves the flows through
/// the link, each flow one user (in the order of `[[flow]]`), one user per slot. Each user sits
/// at a random place in a disc (uniform in area), with its own path loss and flat Rayleigh
/// fading; its rate in a slot is the highest of the study's set (320 ... 2560 kbit/s) that its
/// *estimated* SINR supports, and its frame fails with a probability set by its *true* SINR.
/// Every default is the study's, or spec C.1's documented assumption where the study gives
/// none (path loss, link budget, SINR thresholds, frame errors).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CellConfig {
    /// Which user a slot serves: rr, max, pf, tcp-pf, tcp-max. Default pf.
    #[serde(default = "default_scheduler")]
    pub scheduler: SchedulerName,
    /// ω, the weight of the throughput and queue averages (pf, tcp-pf, tcp-max). Default 0.001.
    #[serde(default = "default_omega")]
    pub omega: f64,
    /// α, the weight of the mean interval between a user's turns (tcp-pf, tcp-max). Default 0.1.
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// β, the weight of its second moment (tcp-pf, tcp-max). Default 0.5.
    #[serde(default = "default_beta")]
    pub beta: f64,
    /// tcp-pf, tcp-max: intervals in slots, as the study literally defines them, instead of
    /// seconds (which make both terms of its eq. 19 times). Default false.
    #[serde(default)]
    pub phi_in_slots: bool,
    /// The slot. Default 5 ms.
    #[serde(default = "default_cell_slot")]
    pub slot: Time,
    /// Cell radius. Default 2 km.
    #[serde(default = "default_cell_radius")]
    pub radius: Distance,
    /// Users are no nearer the base station than this. Default 35 m.
    #[serde(default = "default_cell_min_distance")]
    pub min_distance: Distance,
    /// Mean SINR at the cell edge (the link budget). Default 0 dB.
    #[serde(default = "zero_db")]
    pub edge_snr: Decibel,
    /// Users' speed (Doppler of their fading). Default 30 km/h.
    #[serde(default = "default_cell_speed")]
    pub speed: Speed,
    /// Carrier frequency. Default 2 GHz.
    #[serde(default = "default_cell_carrier")]
    pub carrier: Frequency,
    /// Flat Rayleigh fading; false keeps each user at its mean SINR. Default true.
    #[serde(default = "default_true")]
    pub fading: bool,
    /// Log-normal shadowing of each user (σ; 0.82 correlation per 100 m); 0 dB: none. Default 0 dB.
    #[serde(default = "zero_db")]
    pub shadowing_sigma: Decibel,
    /// Standard deviation of the SINR estimation error. Default 0.707 dB (the study's "0.5 dB
    /// variance").
    #[serde(default = "default_estimation_sigma")]
    pub estimation_sigma: Decibel,
    /// The rates a slot can carry, increasing. A user gets the highest whose SINR threshold its
    /// estimated SINR reaches: θ(R) = Γ·(2^(R/W) − 1) with Γ = 5 dB, W = 1.2288 MHz (spec C.1
    /// (A); −2.04 … 10.10 dB for the default set). Default the study's 320, 480, 640, 1280,
    /// 1920, 2560 kbit/s.
    #[serde(default = "default_cell_rates")]
    pub rates: Vec<Rate>,
    /// Frame errors: "waterfall" (1 % at the rate's threshold, more below it) or "fixed" (the
    /// same `frame_error_rate` for every frame, the study's literal 1 %). Default waterfall.
    #[serde(default = "default_fer")]
    pub frame_errors: FrameErrors,
    /// With `frame_errors = "fixed"`: the probability a frame fails. Default 0.01.
    #[serde(default = "default_cell_fer")]
    pub frame_error_rate: Probability,
    /// Each user's MAC queue at the base station; absent: unbounded, as in the study.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<QueueLimit>,
    /// Ties between users: "random" (the run's stream) or "lowest" (the lowest index). Default random.
    #[serde(default = "default_ties")]
    pub ties: Ties,
}

/// A cell's scheduler.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SchedulerName {
    Rr,
    Max,
    Pf,
    TcpPf,
    TcpMax,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FrameErrors {
    Waterfall,
    Fixed,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Ties {
    Random,
    Lowest,
}

fn default_scheduler() -> SchedulerName {
    SchedulerName::Pf
}
fn default_omega() -> f64 {
    1e-3
}
fn default_alpha() -> f64 {
    0.1
}
fn default_beta() -> f64 {
    0.5
}
fn default_cell_rates() -> Vec<Rate> {
    [320, 480, 640, 1280, 1920, 2560]
        .map(|k| Rate(k * 1000))
        .to_vec()
}
fn default_cell_slot() -> Time {
    Time(Duration::from_millis(5))
}
fn default_cell_radius() -> Distance {
    Distance(2000.0)
}
fn default_cell_min_distance() -> Distance {
    Distance(35.0)
}
fn default_cell_speed() -> Speed {
    Speed(30.0 / 3.6)
}
fn default_cell_carrier() -> Frequency {
    Frequency(2e9)
}
fn default_true() -> bool {
    true
}
fn zero_db() -> Decibel {
    Decibel(0.0)
}
fn default_estimation_sigma() -> Decibel {
    Decibel(0.5f64.sqrt())
}
fn default_fer() -> FrameErrors {
    FrameErrors::Waterfall
}
fn default_cell_fer() -> Probability {
    Probability(0.01)
}
fn default_ties() -> Ties {
    Ties::Random
}

/// A trace-driven link (Mahimahi's `mm-link` format: one integer millisecond per line, each an
/// opportunity to deliver 1500 bytes; the trace repeats). The file is read when the scenario
/// is built into models, not when it is parsed.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    /// Path of the trace file; a relative path is taken from the scenario file's folder.
    pub file: String,
    /// One-way delay added after the link. Default 0.
    #[serde(default = "zero_time")]
    pub delay: Time,
    /// Drop-tail queue limit in packets or bytes. Default 1000 packets.
    #[serde(default = "default_pipe_queue")]
    pub queue: QueueLimit,
    /// Queue discipline in front of the link (needs a rate): `"droptail"`, `"codel"`,
    /// `"fq_codel"`, `"pie"`, `"red"`, or a table with its parameters (`aqm.kind`, ...); its
    /// limit is `queue`. Absent: the link's own drop-tail queue.
    #[serde(
        default,
        deserialize_with = "crate::aqm::deserialize",
        skip_serializing_if = "Option::is_none"
    )]
    pub aqm: Option<crate::aqm::AqmConfig>,
    /// The form of `file`: "mahimahi" (one ms timestamp per line, each a delivery
    /// opportunity; LeoReplayer's bandwidth traces too, with `opportunity`) or "csv" (rows of
    /// time, rate and optionally delay_ms and loss; see docs/traces.md). Default mahimahi.
    #[serde(default, skip_serializing_if = "TraceFormat::is_default")]
    pub format: TraceFormat,
    /// Bytes one line (opportunity) carries: 1500 B in Mahimahi's traces; LeoReplayer's give
    /// each line the rate of their own choosing. Default 1500 B.
    #[serde(
        default = "trace_keys::default_opportunity",
        skip_serializing_if = "trace_keys::is_default_opportunity"
    )]
    pub opportunity: DataSize,
    /// One-way delay trace, added to `delay`: one value in ms per `delay_interval` per line
    /// (LeoReplayer's format), or two columns `time_ms delay_ms`; it repeats. Relative paths
    /// from the scenario's folder. Absent: the delay is `delay` alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_file: Option<String>,
    /// The step of a one-column `delay_file`. Default 10 ms (LeoReplayer's).
    #[serde(
        default = "trace_keys::default_series_interval",
        skip_serializing_if = "trace_keys::is_default_series_interval"
    )]
    pub delay_interval: Time,
    /// Probability that a packet the link serves is lost. Default 0.
    #[serde(default, skip_serializing_if = "trace_keys::is_zero_probability")]
    pub loss: Probability,
    /// Loss probability trace (instead of `loss`): one probability per `loss_interval` per
    /// line, or two columns `time_ms probability`; it repeats. Absent: `loss`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_file: Option<String>,
    /// The step of a one-column `loss_file`. Default 10 ms.
    #[serde(
        default = "trace_keys::default_series_interval",
        skip_serializing_if = "trace_keys::is_default_series_interval"
    )]
    pub loss_interval: Time,
    /// Start each run at a random whole-ms offset into the traces (uniform over the capacity
    /// trace's period, drawn from the link's stream of the run seed), so that seeds differ.
    /// Default false: every run starts at the traces' beginning.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub random_start: bool,
    /// Let a packet overtake an earlier one when the delay trace falls faster than packets
    /// are spaced. Default false: it waits behind the earlier one (a path keeps order).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reorder: bool,
}

/// How the downlink picks the modulation of each frame.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum ModulationMode {
    /// Per frame, from the predicted SNR of the bin (`"adaptive"`).
    Adaptive,
    /// Always this one (`"bpsk"`, `"4qam"`, ..., `"256qam"`).
    Fixed(Modulation),
}

impl Serialize for ModulationMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ModulationMode::Adaptive => s.serialize_str("adaptive"),
            ModulationMode::Fixed(m) => s.serialize_str(m.name()),
        }
    }
}

impl<'de> Deserialize<'de> for ModulationMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s == "adaptive" {
            return Ok(ModulationMode::Adaptive);
        }
        s.parse::<Modulation>()
            .map(ModulationMode::Fixed)
            .map_err(|_| {
                serde::de::Error::custom(format!(
                    "unknown modulation \"{s}\": expected \"adaptive\" or one of {}",
                    Modulation::ALL
                        .iter()
                        .map(|m| format!("\"{}\"", m.name()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }
}

impl JsonSchema for ModulationMode {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ModulationMode".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "description": "\"adaptive\" or a modulation: \"bpsk\", \"4qam\", \"8qam\", \"16qam\", \"32qam\", \"64qam\", \"128qam\", \"256qam\""})
    }
}

impl JsonSchema for ModulationName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ModulationName".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "description": "a modulation: \"bpsk\", \"4qam\", ..., \"256qam\""})
    }
}

/// A modulation name in a list (`modulation_set`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ModulationName(pub Modulation);

impl Serialize for ModulationName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.name())
    }
}

impl<'de> Deserialize<'de> for ModulationName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match ModulationMode::deserialize(d)? {
            ModulationMode::Fixed(m) => Ok(ModulationName(m)),
            ModulationMode::Adaptive => Err(serde::de::Error::custom(
                "\"adaptive\" is not a modulation: expected \"bpsk\", \"4qam\", ..., \"256qam\"",
            )),
        }
    }
}

/// Which sub-band carries the user's frame in each slot.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Allocation {
    /// Always the sub-band `static_subband`.
    Static,
    /// The sub-band with the best *predicted* SNR in each slot (WIPEMU "scheduled channel").
    Best,
}

/// How adaptive modulation sets its switching levels (spec A.6).
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Switching {
    /// Maximise the expected error-free frame throughput given the prediction (WIPEMU, [SF04]).
    MaxThroughput,
    /// The largest modulation whose predicted bit error rate is below `target_ber`.
    TargetBer,
}

/// Symbol-error model of the odd-k constellations (8, 32, 128-QAM), spec A.3.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OddKModelName {
    Generic,
    Rect,
    Cross,
}

/// How predicted channels are synthesised from true ones (spec B.6).
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PredictionModelName {
    /// ĥ = (1-ε)h + √(ε(1-ε))w: an MMSE-consistent predictor (default).
    Mmse,
    /// ĥ = h + √ε·w: same NMSE, biased power.
    Additive,
}

/// Tap-delay-line profiles (spec B.3).
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProfileName {
    /// WIPEMU's 12-tap typical urban profile (3GPP TUx re-binned on 0.2 µs).
    WipemuTu,
    /// COST 207 typical urban, 12 taps.
    Cost207Tu,
    /// One tap: flat Rayleigh fading.
    Flat,
}

/// The 4G adaptive-OFDM downlink of the WIPEMU study (Table I); every default is the study's.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ofdm4gConfig {
    /// Gateway IP queue, drop-tail. Default 50 packets (Table I).
    #[serde(default = "default_gateway_queue")]
    pub queue: QueueLimit,
    /// Time-frequency bins per second per sub-band. Default 1500 (slot 2/3 ms).
    #[serde(default = "default_bins")]
    pub bins_per_second: u32,
    /// Payload symbols per frame (one frame per bin). Default 108 (120 minus 12 training).
    #[serde(default = "default_symbols")]
    pub symbols_per_frame: u32,
    /// Number of sub-bands. Default 25 (5 MHz / 200 kHz).
    #[serde(default = "default_subbands")]
    pub subbands: u32,
    /// Sub-band width. Default 200 kHz.
    #[serde(default = "default_spacing")]
    pub subband_spacing: Frequency,
    /// `"static"` (one sub-band) or `"best"` (best predicted sub-band per slot). Default static.
    #[serde(default = "default_allocation")]
    pub allocation: Allocation,
    /// The sub-band of the static allocation, 0-based. Default 12 (the centre of 25).
    #[serde(default = "default_static_subband")]
    pub static_subband: u32,
    /// `"adaptive"` or a fixed modulation name. Default adaptive.
    #[serde(default = "default_modulation")]
    pub modulation: ModulationMode,
    /// The modulations adaptive modulation may choose. Default BPSK to 256-QAM.
    #[serde(default = "default_modulation_set")]
    pub modulation_set: Vec<ModulationName>,
    /// Switching rule of adaptive modulation. Default max-throughput.
    #[serde(default = "default_switching")]
    pub switching: Switching,
    /// Target BER of the `target-ber` rule. Default 1e-3.
    #[serde(default = "default_target_ber")]
    pub target_ber: Probability,
    /// Adaptive switching levels follow the local mean SNR (shadowing, `mean_snr` changes),
    /// refreshed on a 0.5 dB grid (spec A.6(b)); `false` keeps those of the configured mean.
    /// Only max-throughput switching with imperfect prediction depends on the mean. Default true.
    #[serde(default = "yes")]
    pub switching_refresh: bool,
    /// SER model of odd-k constellations. Default generic (spec A.3).
    #[serde(default = "default_odd_k")]
    pub odd_k_model: OddKModelName,
    /// Maximum link-layer retransmissions of a frame (0 = no ARQ). Default 30 (Table I: 3 to 30).
    #[serde(default = "default_arq_max")]
    pub arq_max_retransmissions: u32,
    /// Delay from a frame's transmission to its earliest retransmission. Default 2 ms.
    #[serde(default = "default_arq_delay")]
    pub arq_delay: Time,
    /// Retransmissions are modulated for the slot they go out in (split over slots when they
    /// no longer fit); `false` resends with the first transmission's modulation. Default true.
    #[serde(default = "yes")]
    pub arq_remodulate: bool,
    /// `false` makes every frame arrive intact (the study's validation runs). Default true.
    #[serde(default = "yes")]
    pub channel_errors: bool,
    /// The fading channel.
    #[serde(default)]
    pub channel: ChannelConfig,
}

fn default_gateway_queue() -> QueueLimit {
    QueueLimit::Packets(50)
}
fn default_bins() -> u32 {
    1500
}
fn default_symbols() -> u32 {
    108
}
fn default_subbands() -> u32 {
    25
}
fn default_spacing() -> Frequency {
    Frequency(200e3)
}
fn default_allocation() -> Allocation {
    Allocation::Static
}
fn default_static_subband() -> u32 {
    12
}
fn default_modulation() -> ModulationMode {
    ModulationMode::Adaptive
}
fn default_modulation_set() -> Vec<ModulationName> {
    Modulation::ALL
        .iter()
        .copied()
        .map(ModulationName)
        .collect()
}
fn default_switching() -> Switching {
    Switching::MaxThroughput
}
fn default_target_ber() -> Probability {
    Probability(1e-3)
}
fn default_odd_k() -> OddKModelName {
    OddKModelName::Generic
}
fn default_arq_max() -> u32 {
    30
}
fn default_arq_delay() -> Time {
    ms(2)
}
fn yes() -> bool {
    true
}

/// The fading channel of the OFDM downlink (WIPEMU Table I, spec B).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelConfig {
    /// Mean SNR per symbol (median when shadowing is on). Default 16 dB.
    #[serde(default = "default_mean_snr")]
    pub mean_snr: Decibel,
    /// Terminal speed. Default 75 km/h.
    #[serde(default = "default_speed")]
    pub speed: Speed,
    /// Carrier frequency. Default 1900 MHz.
    #[serde(default = "default_carrier")]
    pub carrier: Frequency,
    /// Tap-delay profile. Default wipemu-tu.
    #[serde(default = "default_profile")]
    pub profile: ProfileName,
    /// Sinusoids per tap of the Zheng-Xiao generator. Default 16.
    #[serde(default = "default_sinusoids")]
    pub sinusoids: u32,
    /// Standard deviation of AR(1) shadow fading; "0 dB" disables it. Default 4 dB.
    #[serde(default = "default_shadow_sigma")]
    pub shadowing_sigma: Decibel,
    /// Pole of the AR(1) shadowing process, in [0, 1). Default 0.74.
    #[serde(default = "default_shadow_pole")]
    pub shadowing_pole: f64,
    /// Distance between shadowing samples. Default 2 m.
    #[serde(default = "default_shadow_spacing")]
    pub shadowing_spacing: Distance,
    /// Normalised mean square error of the channel prediction, in [0, 1). Default 0 (perfect).
    #[serde(default)]
    pub prediction_nmse: f64,
    /// Predictor model. Default mmse.
    #[serde(default = "default_prediction_model")]
    pub prediction_model: PredictionModelName,
}

fn default_mean_snr() -> Decibel {
    Decibel(16.0)
}
fn default_speed() -> Speed {
    Speed(75.0 / 3.6)
}
fn default_carrier() -> Frequency {
    Frequency(1.9e9)
}
fn default_profile() -> ProfileName {
    ProfileName::WipemuTu
}
fn default_sinusoids() -> u32 {
    16
}
fn default_shadow_sigma() -> Decibel {
    Decibel(4.0)
}
fn default_shadow_pole() -> f64 {
    0.74
}
fn default_shadow_spacing() -> Distance {
    Distance(2.0)
}
fn default_prediction_model() -> PredictionModelName {
    PredictionModelName::Mmse
}

impl Default for ChannelConfig {
    fn default() -> Self {
        toml::from_str("").expect("every channel field has a default")
    }
}

/// Transport protocols.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// airlink's TCP; the window policy is `congestion`.
    Tcp,
    /// Datagrams from a media source, counted by the receiver as iperf does.
    Udp,
    /// DCCP (RFC 4340) with the congestion control `ccid`.
    Dccp,
}

/// TCP congestion controls. All use SACK loss recovery when `tcp.sack` is on (the default).
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Congestion {
    /// RFC 5681 Reno: recovery ends at the first new ACK.
    Reno,
    /// RFC 6582 NewReno.
    Newreno,
    /// RFC 9438 CUBIC.
    Cubic,
    /// TCP Veno (Fu & Liew 2003).
    Veno,
    /// TCP-AFC (delayed fast recovery with congestion distance).
    Afc,
    /// BBR v1 (Linux `tcp_bbr.c`): paced, model-based.
    Bbr,
}

/// Which way a shorthand flow's data goes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// From the server to the client, through the downlink.
    #[default]
    Down,
    /// From the client to the server, through the uplink.
    Up,
}

/// Applications. The sender is at the server; data flows towards the client.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum App {
    /// Sends as fast as the transport allows: `bytes` if given, else until the flow's `stop`.
    Bulk,
    /// A file of `bytes`; the summary records its completion time.
    File,
    /// Constant bit rate: `packet_size` at `rate`.
    Cbr,
    /// Variable bit rate: frames of `frame_sizes` (looping) at `frame_rate`.
    Vbr,
}

/// One flow between the server and the client.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// A name for results and for changes that name the flow (unique in the scenario).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// This table stands for this many identical flows (a cell's users, a study's competing
    /// flows), named `NAME.0`, `NAME.1`, ... if it has a name. Flow indices (in changes, in
    /// results) count each copy. Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copies: Option<u32>,
    /// The scenario's `tcp_preset`, for a flow whose `tcp.preset` is absent (kept up to date
    /// by parsing and overrides).
    #[serde(skip)]
    #[schemars(skip)]
    pub scenario_tcp_preset: TcpPreset,
    /// For a copy: the table it came from (its index among the file's `[[flow]]` tables) and
    /// that table's name, so an override of one copy's `copies` re-expands the whole table.
    #[serde(skip)]
    #[schemars(skip)]
    pub copy_of: Option<(usize, Option<String>)>,
    /// Default tcp.
    #[serde(default = "default_protocol")]
    pub protocol: Protocol,
    /// TCP only: airlink's TCP runs it in simulation; in emulation the first TCP flow's is the
    /// kernel's congestion control in both namespaces (`newreno` and `reno` are the kernel's
    /// `reno`; `afc` has no kernel counterpart). Default newreno (with SACK when `tcp.sack`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<Congestion>,
    /// DCCP only: the congestion control, 2 (TCP-like) or 3 (TFRC). Default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ccid: Option<u8>,
    /// Default bulk for TCP and DCCP, cbr for UDP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<App>,
    /// Data the application transfers (TCP bulk, file). Absent for bulk: until the stop time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<DataSize>,
    /// When the client opens the connection (or the source starts): a time, or a draw per
    /// flow from the run seed, `{ uniform = ["0 s", "5 s"] }` (users that arrive; every
    /// configuration run under one seed sees the same draws). Default 0 s.
    #[serde(default)]
    pub start: FlowStart,
    /// When the source stops sending (TCP: the application stops writing; what it sent is
    /// still delivered, then the connection closes). Default: the scenario's stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Time>,
    /// CBR: the sending rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// Payload of each datagram (UDP, DCCP; the largest piece of a VBR frame). Default
    /// 1470 B for UDP (iperf's), 1424 B for DCCP (the DCCP study's larger size). DCCP never
    /// fragments (RFC 4340 §14), so a DCCP flow's largest datagram (this, or a smaller largest
    /// VBR frame) plus 20 B of IP header and up to 36 B of DCCP header and options (a DataAck
    /// with X = 1, NDP Count and Change L of Ack Ratio) must fit `[emulation] mtu`, the path
    /// MTU in simulation too: at most 1444 B with the default 1500-byte MTU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet_size: Option<DataSize>,
    /// VBR: the payload of successive frames, repeated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_sizes: Option<Vec<DataSize>>,
    /// VBR: frames per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_rate: Option<f64>,
    /// The sending host's own limit (a handheld's CPU and driver): it serves its packets one
    /// at a time and holds only a few. A UDP datagram that finds the host full is dropped there
    /// (iperf counts it lost); TCP and DCCP senders wait for room instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceConfig>,
    /// Interval of the receiver's iperf-style reports (UDP, DCCP). Default 1 s.
    #[serde(default = "default_report_interval")]
    pub report_interval: Time,
    /// Shorthand: which way the data goes. `"down"` (default): from the server through the
    /// downlink to the client (a download); `"up"`: from the client through the uplink to the
    /// server (an upload), the ACKs coming back through the downlink. The general form says it
    /// with `server` and `client` instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// General form: the host the data comes from. Default `"server"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// General form: the host the data goes to. Default `"client"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// General form: the links from the server to the client, in order. Default: the only
    /// shortest path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<Vec<String>>,
    /// General form: the links from the client back to the server. Default: the only
    /// shortest path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_path: Option<Vec<String>>,
    /// Emulation with the kernel's applications (`--client`, `--server`): the server's TCP or
    /// UDP port of the connection that plays this flow, so its packets take this flow's paths
    /// (e.g. 5201 for `iperf3 -s -p 5201`). Without one, they take the shared path: the
    /// shorthand's chain without access links, or the first flow's paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Explicit Congestion Notification (RFC 3168), tcp flows only: both ends negotiate it,
    /// new data goes ECT(0), a queue discipline with `ecn = true` marks it CE instead of
    /// dropping it, the receiver echoes the mark (ECE) until the sender's CWR, and the sender
    /// reduces its window once per round trip (BBR, as Linux's BBR v1, does not react).
    /// Simulation only for now: airlink's own TCP in emulation refuses it (the kernel's TCP
    /// negotiates ECN by `net.ipv4.tcp_ecn` in `[emulation] sysctl`). Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(extend("default" = false))]
    pub ecn: bool,
    /// TCP parameters.
    #[serde(default)]
    pub tcp: TcpParams,
    /// CUBIC parameters (with `congestion = "cubic"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cubic: Option<CubicParams>,
    /// Veno parameters (with `congestion = "veno"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub veno: Option<VenoParams>,
    /// TCP-AFC parameters (with `congestion = "afc"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub afc: Option<AfcParams>,
    /// DCCP parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dccp: Option<DccpParams>,
}

fn default_protocol() -> Protocol {
    Protocol::Tcp
}
fn default_report_interval() -> Time {
    Time(airlink_engine::Duration::from_secs(1))
}

impl FlowConfig {
    /// The TCP congestion control, with its default.
    pub fn congestion(&self) -> Congestion {
        self.congestion.unwrap_or(Congestion::Newreno)
    }

    /// The TCP preset: the flow's, else the scenario's.
    pub fn tcp_preset(&self) -> TcpPreset {
        self.tcp.preset.unwrap_or(self.scenario_tcp_preset)
    }

    /// The DCCP CCID, with its default.
    pub fn ccid(&self) -> u8 {
        self.ccid.unwrap_or(3)
    }

    /// The application, with the protocol's default.
    pub fn app(&self) -> App {
        self.app.unwrap_or(match self.protocol {
            Protocol::Udp => App::Cbr,
            Protocol::Tcp | Protocol::Dccp => App::Bulk,
        })
    }
}

/// CUBIC's constants (RFC 9438). Absent values take the RFC's.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CubicParams {
    /// C, segments/s³. Default 0.4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c: Option<f64>,
    /// Multiplicative decrease β in (0, 1). Default 0.7.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// Default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_convergence: Option<bool>,
    /// The Reno-friendly region. Default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reno_friendly: Option<bool>,
}

/// Veno's constants.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VenoParams {
    /// Backlog threshold β, segments. Default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// Window factor after a loss judged random (backlog below β), in (0, 1). Default 0.8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random_loss_factor: Option<f64>,
}

/// TCP-AFC's knobs.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AfcParams {
    /// Add the rate adjustment R_adj = Cd⁴/(2·cwnd³) to the halved window. Default true;
    /// false gives plain delayed fast recovery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_adjustment: Option<bool>,
}

/// DCCP knobs.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DccpParams {
    /// CCID-2 Ack Ratio. Default 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack_ratio: Option<u32>,
    /// Packets the sender's queue holds while the CCID does not allow sending; the
    /// application then waits (a blocking socket). Default 5 (Linux `tx_qlen`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_queue: Option<u32>,
}

/// A set of TCP defaults that the other knobs then adjust.
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TcpPreset {
    /// RFC algorithms with Linux's timer bounds (RTO ≥ SRTT + 200 ms, max 120 s, initial 1 s),
    /// initial window 3: airlink's default until 0.1, which the studies' scenarios pin.
    /// `"default"` is accepted as its former name.
    #[serde(alias = "default")]
    Classic,
    /// RFC values throughout (RTO min 1 s, max 60 s).
    Rfc,
    /// Linux 2.4 (the WIPEMU study's stack): initial RTO 3 s, 200 ms floor on the variance
    /// term, 10 ms timer tick, initial window 2.
    #[serde(rename = "linux-2.4")]
    Linux24,
    /// A modern Linux (6.x): initial window 10, timestamps, delayed ACK 40 ms after 16 quick
    /// ACKs, PRR, CUBIC with the kernel's constants and HyStart (`TcpConfig::linux`). The
    /// default: it behaves like the kernel's TCP on the same link (docs/howto/tcp-defaults.md).
    #[default]
    Linux,
}

/// TCP knobs (spec D.1). Absent values take the preset's documented values.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TcpParams {
    /// The base set of values. Default: the scenario's `tcp_preset` (itself `linux` by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<TcpPreset>,
    /// IP MTU; the MSS is derived from it (40 B of headers, 12 more with timestamps). Default 1500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// SACK (RFC 2018/6675). Default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sack: Option<bool>,
    /// Timestamps option (RFC 7323). Default false (the WIPEMU study turned it off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamps: Option<bool>,
    /// Initial window in segments. Default by RFC 3390 from the MSS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_window: Option<u32>,
    /// Receive buffer (advertised window). Default: one that does not bind, the larger of
    /// 6 MiB (Linux's largest autotuned receive buffer, `tcp_rmem[2]`) and twice what the
    /// path holds (its bandwidth-delay product plus its queues), at most 1 GiB (RFC 7323's
    /// largest window) and 500000 segments; filled in when the scenario is built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwnd: Option<DataSize>,
    /// Acknowledge every n-th full segment. Default 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack_every: Option<u32>,
    /// Delayed-ACK timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delack_timeout: Option<Time>,
    /// Minimum retransmission timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto_min: Option<Time>,
    /// Maximum retransmission timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto_max: Option<Time>,
    /// Initial retransmission timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto_init: Option<Time>,
    /// Clock granularity G of RFC 6298: the floor of the variance term in RTO = SRTT +
    /// max(G, 4·RTTVAR). The TCP-PF study's "granularity of the retransmission timer" is read
    /// this way by default (`scenarios/cell/tcp-pf.toml`); `tick` is the other reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_granularity: Option<Time>,
    /// Timer tick: the RTO, delayed-ACK and persist timers expire on multiples of it (a
    /// kernel's jiffy; BSD's 500 ms and 200 ms slow and fast timers). Default: the preset's
    /// (10 ms for `linux-2.4`, none otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick: Option<Time>,
}
