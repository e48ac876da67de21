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

use crate::units::{BitErrorRate, DataSize, Decibel, Probability, QueueLimit, Rate, Time};
use crate::{
    CellConfig, FlowStart, GprsConfig, LinkModel, ModelConfig, Ofdm4gConfig, PipeConfig,
    TraceConfig, WlanConfig,
};
use airlink_engine::Duration;
use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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

/// A host's service budget (`[host.NAME] device`, or a flow's `device` for the host its data
/// comes from): the rate at which the host serves the packets it sends, its send buffer, and
/// what each packet it receives costs. One per host, shared by every flow at the host (the
/// DCCP study's CPU-bound tablets, Melo de Sales et al. 2008, §4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeviceConfig {
    /// At most this many bits per second of IP packets (the host's bus and driver). Default:
    /// none; a `rate` or a `packet_rate` is needed (the DCCP study's tablets: "3.4 Mbit/s", from
    /// Table 3's TCP throughput).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// At most this many packets per second, sent or received (the host's CPU). Default: none
    /// (the DCCP study's tablets: 720, Table 3's UDP throughput of 512-byte datagrams).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet_rate: Option<f64>,
    /// Packets the host holds, waiting or being sent; each flow end at the host may hold its
    /// share, ⌊buffer/ends⌋ (at least 1). Default 4 (an assumption: the DCCP study's stalled
    /// senders suggest a small one; it does not give it).
    #[serde(default = "default_device_buffer")]
    pub buffer: u32,
    /// The host's per-packet work for each packet it receives (data, ACKs, feedback, of any of
    /// its flows), which delays what it sends next. Default: a sent packet's, 1/`packet_rate`
    /// (a CPU-bound host pays per packet in both directions: the DCCP study's tablets); "0 s"
    /// charges nothing, as does a budget with only a `rate`. At most 1 s.
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
pub struct HostConfig {
    /// The host's service budget (a handheld's CPU and driver), shared by every flow that
    /// starts or ends at it: every packet those flows send from it (data, ACKs, feedback) is
    /// served through it, and every packet they receive at it costs `receive_cost`. A UDP
    /// datagram that finds the send buffer full is dropped there (iperf counts it lost); TCP
    /// and DCCP wait for room. Default: none (the host serves everything at once). A flow's
    /// `device` is shorthand for its data sender's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceConfig>,
}

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
    pub leo: Option<Box<crate::LeoConfig>>,
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
        self.models()
            .into_iter()
            .next()
            .expect("validated: a link has one model")
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
    /// The models' configurations the table gives, to resolve their files.
    pub fn configs_mut(&mut self) -> Vec<&mut dyn ModelConfig> {
        let mut out: Vec<&mut dyn ModelConfig> = Vec::new();
        out.extend(self.pipe.as_mut().map(|m| m as &mut dyn ModelConfig));
        out.extend(self.gprs.as_mut().map(|m| m as &mut dyn ModelConfig));
        out.extend(self.trace.as_mut().map(|m| m as &mut dyn ModelConfig));
        out.extend(
            self.ofdm4g
                .as_deref_mut()
                .map(|m| m as &mut dyn ModelConfig),
        );
        out.extend(self.cell.as_deref_mut().map(|m| m as &mut dyn ModelConfig));
        out.extend(self.wlan.as_deref_mut().map(|m| m as &mut dyn ModelConfig));
        out.extend(self.leo.as_deref_mut().map(|m| m as &mut dyn ModelConfig));
        out
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
    /// Shorthand for `[host.NAME] device` of the host this flow's data comes from (`server`,
    /// or `client` for an upload): that host's service budget, shared by all its flows (a
    /// handheld's CPU and driver). Flows from one host that give it must give the same table.
    /// A UDP datagram that finds the host full is dropped there (iperf counts it lost); TCP and
    /// DCCP senders wait for room instead.
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
