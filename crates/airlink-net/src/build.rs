//! From a scenario to running models: every component gets its configuration and its own
//! random stream, derived from the run seed and the component's stable name.

use crate::flow::{Ends, Flow};
use crate::{FlowPath, LinkId, NetChange, Network, TimedChange};
use airlink_engine::Instant;
use airlink_link::{Link, LinkChange, Packet};
use airlink_scenario as sc;
use airlink_transport::dccp::{AckRatioMode, Ccid, DccpApp, DccpConfig, DccpEndpoint};
use airlink_transport::udp::{IperfReceiver, Traffic, UdpSender, UdpSourceConfig};
use airlink_transport::{
    AfcConfig, CongestionConfig, CubicConfig, Recovery, Role, TcpConfig, TcpEndpoint, VenoConfig,
};
use std::collections::BTreeSet;
use std::fmt;

/// A `'static` copy of a generated component name, made once per distinct name (the
/// metrics tables hold names as `&'static str`; a sweep reuses the same few names).
fn intern(name: String) -> &'static str {
    static NAMES: std::sync::Mutex<BTreeSet<&'static str>> = std::sync::Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&known) = names.get(name.as_str()) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.into_boxed_str());
    names.insert(leaked);
    leaked
}

/// A scenario that parsed but cannot be built into models.
#[derive(Clone, Debug, PartialEq)]
pub struct BuildError(pub String);

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for BuildError {}

/// A link model built from a scenario, for any packet type (the simulator's and the
/// emulator's packets run through the same models).
pub struct BuiltLink<P> {
    /// Stable name: also the name its random stream is derived from.
    pub name: &'static str,
    /// Model name for reports ("pipe", "ofdm4g").
    pub model: &'static str,
    pub link: Box<dyn Link<P> + Send>,
}

pub use crate::model::{capacity_bps, channel_config, wlan_params};
use crate::model::{flows_over_run, queue_limit, Site};

/// The shorthand downlink's capacity in bit/s (see [`capacity_bps`]).
pub fn downlink_capacity_bps(s: &sc::Scenario) -> Result<Option<u64>, BuildError> {
    match &s.downlink {
        Some(d) => capacity_bps(d, "downlink"),
        None => Ok(None),
    }
}

/// The uplink of a scenario that has none: the downlink's capacity and delay in the other
/// direction, lossless, so the return path never throttles the ACKs unasked.
fn symmetric_uplink(s: &sc::Scenario) -> Result<sc::PipeConfig, BuildError> {
    Ok(sc::PipeConfig {
        rate: downlink_capacity_bps(s)?.map(sc::units::Rate),
        delay: sc::units::Time(
            s.downlink
                .as_ref()
                .map_or(airlink_engine::Duration::ZERO, sc::LinkModel::delay),
        ),
        ..sc::PipeConfig::default()
    })
}

/// Bytes assumed per packet of a queue limited in packets.
const QUEUE_PACKET_BYTES: u64 = 1500;
/// Linux's largest autotuned receive buffer (`net.ipv4.tcp_rmem[2]`).
const LINUX_RMEM_MAX: u64 = 6 << 20;
/// RFC 7323's largest window.
const MAX_WINDOW: u64 = 1 << 30;

/// What the path to the client can hold: its bottleneck rate (bit/s), round-trip propagation
/// delay, and the bytes its rated queues hold.
struct PathSize {
    bottleneck_bps: Option<u64>,
    rtt: airlink_engine::Duration,
    queued_bytes: u64,
}

/// What a flow's path holds: the rated links on the way down, and every delay both ways.
fn path_size(t: &sc::topology::Topology, flow: usize) -> Result<PathSize, BuildError> {
    let queue_bytes = |q: sc::units::QueueLimit| match q {
        sc::units::QueueLimit::Packets(n) => n as u64 * QUEUE_PACKET_BYTES,
        sc::units::QueueLimit::Bytes(b) => b,
    };
    let (down, up) = &t.paths[flow];
    let mut rated = Vec::with_capacity(down.len());
    for &l in down {
        let link = &t.links[l];
        let mut capacity = capacity_bps(&link.model, &link.key.join("."))?;
        if crate::model::shared_by_users(&link.model) {
            // A cell's users share its slots: a flow's part is at most its even share.
            let users = t
                .paths
                .iter()
                .filter(|(down, _)| down.contains(&l))
                .count()
                .max(1) as u64;
            capacity = capacity.map(|c| c / users);
        }
        // An unbounded queue cannot size a window: it counts for nothing.
        rated.push((
            capacity,
            crate::model::queue(&link.model).map_or(0, queue_bytes),
        ));
    }
    Ok(PathSize {
        bottleneck_bps: rated.iter().filter_map(|r| r.0).min(),
        rtt: down
            .iter()
            .chain(up)
            .fold(airlink_engine::Duration::ZERO, |sum, &l| {
                sum + t.links[l].model.delay()
            }),
        queued_bytes: rated.iter().filter(|r| r.0.is_some()).map(|r| r.1).sum(),
    })
}

/// The slowest rate on a flow's return path, if any link there has one.
fn return_bottleneck_bps(
    t: &sc::topology::Topology,
    flow: usize,
) -> Result<Option<u64>, BuildError> {
    let mut least = None;
    for &l in &t.paths[flow].1 {
        let link = &t.links[l];
        if let Some(c) = capacity_bps(&link.model, &link.key.join("."))? {
            least = Some(least.map_or(c, |m: u64| m.min(c)));
        }
    }
    Ok(least)
}

/// A resolved scenario's topology (see [`sc::Scenario::topology`]).
fn topology(s: &sc::Scenario) -> Result<sc::topology::Topology, BuildError> {
    s.topology()
        .map_err(|(key, m)| BuildError(format!("{}: {m}", key.join("."))))
}

impl PathSize {
    fn bdp_bytes(&self) -> Option<u64> {
        self.bottleneck_bps
            .map(|c| (c as f64 / 8.0 * self.rtt.as_secs_f64()).ceil() as u64)
    }
}

/// The receive window of a TCP flow whose scenario sets none: never the limit. The larger of
/// Linux's largest autotuned buffer and twice what the path holds (bandwidth-delay product
/// plus queues), in whole KiB, at most RFC 7323's 1 GiB.
/// Never more than `MAX_PACKETS_HELD` segments, which bounds the memory of a window.
fn default_rwnd(path: &PathSize, mss: u32) -> u64 {
    let holds = path.bdp_bytes().unwrap_or(0) + path.queued_bytes;
    let most = MAX_WINDOW.min(sc::MAX_PACKETS_HELD * mss as u64);
    (2 * holds)
        .div_ceil(1024)
        .saturating_mul(1024)
        .max(LINUX_RMEM_MAX)
        .min(most)
}

/// The scenario with every default that depends on other values filled in: the shorthand's
/// wired link and uplink (when absent, symmetric) and each TCP flow's receive window.
/// Idempotent.
pub fn resolve(s: &sc::Scenario) -> Result<sc::Scenario, BuildError> {
    let mut r = s.clone();
    if !r.is_general() {
        r.wired.get_or_insert_with(sc::PipeConfig::default);
        if r.uplink.is_none() {
            r.uplink = Some(sc::LinkModel::Pipe(symmetric_uplink(s)?));
        }
    }
    let t = topology(&r)?;
    for (i, f) in r
        .flow
        .iter_mut()
        .enumerate()
        .filter(|(_, f)| f.protocol == sc::Protocol::Tcp)
    {
        f.tcp.preset = Some(f.tcp_preset());
        if f.tcp.rwnd.is_none() {
            let mss = tcp_config(f)?.mss;
            f.tcp.rwnd = Some(sc::units::DataSize(default_rwnd(&path_size(&t, i)?, mss)));
        }
    }
    Ok(r)
}

/// IP and TCP header bytes of a pure ACK (plus the timestamps option when on).
fn ack_bytes(c: &TcpConfig) -> u64 {
    40 + if c.timestamps {
        airlink_transport::config::TIMESTAMP_OPTION_LEN as u64
    } else {
        0
    }
}

/// What in a resolved scenario limits it in a way its author probably did not mean: an uplink
/// too slow for the downlink's ACKs, a receive window below the path's bandwidth-delay
/// product, certain loss. One sentence each.
pub fn warnings(s: &sc::Scenario) -> Result<Vec<String>, BuildError> {
    let s = &resolve(s)?;
    let t = topology(s)?;
    let mut out = Vec::new();
    // A shorthand model may stand for several links (`wired`, `access`): one warning each.
    let mut warned = BTreeSet::new();
    for link in &t.links {
        let name = link.key.join(".");
        if !warned.insert(name.clone()) {
            continue;
        }
        out.extend(crate::model::warnings(&link.model, &name));
    }
    for (i, f) in s.flow.iter().enumerate() {
        if f.protocol != sc::Protocol::Tcp {
            continue;
        }
        let c = tcp_config(f)?;
        let path = path_size(&t, i)?;
        let holds = path.bdp_bytes().map(|bdp| crate::moot::PathHolds {
            bdp,
            queued: path.queued_bytes,
        });
        out.extend(crate::moot::moot_choices(i, f, &c, holds));
        let Some(capacity) = path.bottleneck_bps else {
            continue;
        };
        // A saturated downlink returns one ACK per `ack_every` full segments.
        let ack_bps = capacity as f64 * ack_bytes(&c) as f64
            / ((c.mss as u64 + ack_bytes(&c)) as f64 * c.ack_every as f64);
        if let Some(up_rate) = return_bottleneck_bps(&t, i)? {
            if (up_rate as f64) < ack_bps {
                out.push(format!(
                    "flow {i}: the uplink's {} cannot carry the ACKs of a {} downlink ({:.0} bit/s at one ACK per {} segments of {} B): \
                     the uplink, not the downlink, will limit this flow",
                    sc::units::Rate(up_rate), sc::units::Rate(capacity), ack_bps, c.ack_every, c.mss
                ));
            }
        }
        if let Some(bdp) = path.bdp_bytes() {
            if (c.rwnd as u64) < bdp {
                out.push(format!(
                    "flow {i}: tcp.rwnd = {} is below the path's bandwidth-delay product ({} B at {} over a {} round trip): \
                     the receive window, not the link, will limit this flow to about {}",
                    sc::units::DataSize(c.rwnd as u64),
                    bdp,
                    sc::units::Rate(capacity),
                    path.rtt,
                    sc::units::Rate(((c.rwnd as f64 * 8.0 / path.rtt.as_secs_f64()).round() as u64).max(1))
                ));
            }
        }
    }
    Ok(out)
}

/// One flow's effective transport values: its index and `(key, value)` rows.
pub type FlowParameters = (usize, Vec<(&'static str, String)>);

/// Every effective value of each TCP flow's transport, as `key = value` lines for people
/// (`airlink check`): the preset's values with the scenario's over them, including those the
/// scenario has no key for.
pub fn transport_parameters(s: &sc::Scenario) -> Result<Vec<FlowParameters>, BuildError> {
    let s = &resolve(s)?;
    let mut out = Vec::new();
    for (i, f) in s.flow.iter().enumerate() {
        let rows = match f.protocol {
            sc::Protocol::Tcp => {
                let c = tcp_config(f)?;
                let iw = c
                    .initial_window
                    .unwrap_or(airlink_transport::initial_window_segments(c.mss));
                let preset = serde_json::to_value(f.tcp_preset())
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned));
                let mut rows = vec![
                    ("preset", preset.unwrap_or_default()),
                    ("congestion", congestion_name(f.congestion()).to_owned()),
                    ("recovery", format!("{:?}", c.recovery).to_lowercase()),
                ];
                match &c.congestion {
                    CongestionConfig::Cubic(k) => rows.extend([
                        ("cubic.c", k.c.to_string()),
                        ("cubic.beta", k.beta.to_string()),
                        ("cubic.fast_convergence", k.fast_convergence.to_string()),
                        ("cubic.reno_friendly", k.reno_friendly.to_string()),
                    ]),
                    CongestionConfig::Veno(v) => rows.extend([
                        ("veno.beta", v.beta.to_string()),
                        ("veno.random_loss_factor", v.random_loss_factor.to_string()),
                    ]),
                    CongestionConfig::Afc(a) => {
                        rows.push(("afc.rate_adjustment", a.rate_adjustment.to_string()))
                    }
                    _ => {}
                }
                rows.extend([
                    ("mss", format!("{} B", c.mss)),
                    ("initial_window", format!("{iw} segments")),
                    (
                        "initial_ssthresh",
                        c.initial_ssthresh
                            .map_or("unlimited".into(), |b| format!("{b} B")),
                    ),
                    ("rwnd", format!("{} B", c.rwnd)),
                    ("sack", c.sack.to_string()),
                    ("timestamps", c.timestamps.to_string()),
                    ("ack_every", format!("{} segments", c.ack_every)),
                    ("delack_timeout", c.delack_timeout.to_string()),
                    ("rto_min", c.rto_min.to_string()),
                    ("rto_max", c.rto_max.to_string()),
                    ("rto_init", c.rto_init.to_string()),
                    ("clock_granularity", c.clock_granularity.to_string()),
                    ("tick", c.tick.to_string()),
                    ("dupthresh", format!("{} duplicate ACKs", c.dupthresh)),
                ]);
                rows
            }
            sc::Protocol::Dccp => {
                let d = f.dccp.clone().unwrap_or_default();
                vec![
                    ("ccid", f.ccid().to_string()),
                    ("packet_size", format!("{} B", f.datagram_payload())),
                    ("ack_ratio", d.ack_ratio.unwrap_or(2).to_string()),
                    (
                        "send_queue",
                        format!(
                            "{} packets",
                            d.send_queue
                                .unwrap_or(DccpConfig::default().queue_capacity as u32)
                        ),
                    ),
                ]
            }
            sc::Protocol::Udp => vec![("packet_size", format!("{} B", f.datagram_payload()))],
        };
        out.push((i, rows));
    }
    Ok(out)
}

/// The transport configuration of a flow: the scenario's values over the transport defaults.
pub fn tcp_config(f: &sc::FlowConfig) -> Result<TcpConfig, BuildError> {
    let t = &f.tcp;
    let mut c = match f.tcp_preset() {
        sc::TcpPreset::Classic => TcpConfig::default(),
        sc::TcpPreset::Rfc => TcpConfig::rfc(),
        sc::TcpPreset::Linux24 => TcpConfig::linux_2_4(),
        sc::TcpPreset::Linux => TcpConfig::linux(),
    };
    let linux = f.tcp_preset() == sc::TcpPreset::Linux;
    c.timestamps = t.timestamps.unwrap_or(c.timestamps);
    c.mss = TcpConfig::for_mtu(t.mtu.unwrap_or(1500), c.timestamps).mss;
    c.initial_window = t.initial_window.or(c.initial_window);
    if let Some(x) = t.sack {
        c.sack = x;
    }
    if let Some(x) = t.rwnd {
        c.rwnd = x.0.min(u32::MAX as u64) as u32;
    }
    if let Some(x) = t.ack_every {
        c.ack_every = x;
    }
    if let Some(x) = t.delack_timeout {
        c.delack_timeout = x.0;
    }
    if let Some(x) = t.rto_min {
        c.rto_min = x.0;
    }
    if let Some(x) = t.rto_max {
        c.rto_max = x.0;
    }
    if let Some(x) = t.rto_init {
        c.rto_init = x.0;
    }
    if let Some(x) = t.clock_granularity {
        c.clock_granularity = x.0;
    }
    if let Some(x) = t.tick {
        c.tick = x.0;
    }
    c.ecn = f.ecn;
    (c.congestion, c.recovery) = match f.congestion() {
        sc::Congestion::Reno => (CongestionConfig::Reno, Recovery::Reno),
        sc::Congestion::Newreno => (CongestionConfig::Reno, Recovery::NewReno),
        sc::Congestion::Cubic => (
            CongestionConfig::Cubic(cubic_config(f.cubic.as_ref(), linux)),
            Recovery::NewReno,
        ),
        sc::Congestion::Veno => {
            let mut v = VenoConfig::default();
            if let Some(p) = &f.veno {
                v.beta = p.beta.unwrap_or(v.beta);
                v.random_loss_factor = p.random_loss_factor.unwrap_or(v.random_loss_factor);
            }
            (CongestionConfig::Veno(v), Recovery::NewReno)
        }
        sc::Congestion::Afc => {
            let mut a = AfcConfig::default();
            if let Some(p) = &f.afc {
                a.rate_adjustment = p.rate_adjustment.unwrap_or(a.rate_adjustment);
            }
            (CongestionConfig::Afc(a), Recovery::NewReno)
        }
        sc::Congestion::Bbr => (CongestionConfig::Bbr, Recovery::NewReno),
    };
    c.validate()
        .map_err(|e| BuildError(format!("flow tcp parameters: {e}")))?;
    Ok(c)
}

/// RFC 9438's constants, or with the `linux` preset the kernel's and HyStart.
fn cubic_config(p: Option<&sc::CubicParams>, linux: bool) -> CubicConfig {
    let mut c = if linux {
        CubicConfig {
            hystart: true,
            ..CubicConfig::LINUX
        }
    } else {
        CubicConfig::default()
    };
    if let Some(p) = p {
        c.c = p.c.unwrap_or(c.c);
        c.beta = p.beta.unwrap_or(c.beta);
        c.fast_convergence = p.fast_convergence.unwrap_or(c.fast_convergence);
        c.reno_friendly = p.reno_friendly.unwrap_or(c.reno_friendly);
    }
    c
}

fn protocol_name(p: sc::Protocol) -> &'static str {
    match p {
        sc::Protocol::Tcp => "tcp",
        sc::Protocol::Udp => "udp",
        sc::Protocol::Dccp => "dccp",
    }
}

/// The media source of a UDP or DCCP flow (cbr, vbr).
fn media_source(f: &sc::FlowConfig, start: Instant, max_payload: u32) -> Option<UdpSourceConfig> {
    let traffic = match f.app() {
        sc::App::Cbr => Traffic::Cbr {
            payload: max_payload,
            rate_bps: f.rate?.0,
        },
        sc::App::Vbr => Traffic::Vbr {
            frames: f
                .frame_sizes
                .as_ref()?
                .iter()
                .map(|b| b.0.min(u32::MAX as u64) as u32)
                .collect(),
            fps: f.frame_rate?,
            max_payload,
        },
        sc::App::Bulk | sc::App::File => return None,
    };
    Some(UdpSourceConfig {
        traffic,
        start,
        stop: f.stop.map(|t| Instant::ZERO + t.0),
        cap: None,
    })
}

/// A flow's two endpoints.
fn endpoints(f: &sc::FlowConfig, i: usize, start: Instant) -> Result<Ends, BuildError> {
    let err = |e: &dyn fmt::Display| BuildError(format!("flow {i}: {e}"));
    let interval = Some(f.report_interval.0).filter(|d| !d.is_zero());
    let payload = f.datagram_payload();
    Ok(match f.protocol {
        sc::Protocol::Tcp => {
            let cfg = tcp_config(f)?;
            Ends::Tcp {
                client: TcpEndpoint::new(cfg.clone(), Role::Client),
                server: TcpEndpoint::new(cfg, Role::Server),
            }
        }
        sc::Protocol::Udp => {
            let source = media_source(f, start, payload)
                .ok_or_else(|| err(&"a udp flow needs a cbr or vbr source"))?;
            Ends::Udp {
                sender: UdpSender::new(source).map_err(|e| err(&e))?,
                receiver: IperfReceiver::new(interval),
            }
        }
        sc::Protocol::Dccp => {
            let mut cfg = DccpConfig {
                ccid: if f.ccid() == 2 {
                    Ccid::TcpLike
                } else {
                    Ccid::Tfrc
                },
                packet_size: payload,
                ..DccpConfig::default()
            };
            if let Some(d) = &f.dccp {
                if let Some(r) = d.ack_ratio {
                    cfg.ccid2.ack_ratio = AckRatioMode::Fixed(r.min(u16::MAX as u32) as u16);
                }
                if let Some(q) = d.send_queue {
                    cfg.queue_capacity = q as usize;
                }
            }
            // Only the server sends data; the client's application just reads.
            let client = DccpConfig {
                app: DccpApp::Manual,
                ..cfg.clone()
            };
            cfg.app = match media_source(f, start, payload) {
                Some(source) => DccpApp::Source(source),
                None => DccpApp::Greedy { payload },
            };
            cfg.validate().map_err(|e| err(&e))?;
            Ends::Dccp {
                client: DccpEndpoint::new(client, Role::Client),
                server: DccpEndpoint::new(cfg, Role::Server),
                receiver: IperfReceiver::new(interval),
            }
        }
    })
}

fn congestion_name(c: sc::Congestion) -> &'static str {
    match c {
        sc::Congestion::Reno => "reno",
        sc::Congestion::Newreno => "newreno",
        sc::Congestion::Cubic => "cubic",
        sc::Congestion::Veno => "veno",
        sc::Congestion::Afc => "afc",
        sc::Congestion::Bbr => "bbr",
    }
}

/// Flow `i` of a scenario run with `seed`: its endpoints and application (a drawn start
/// comes from the seed and `i`).
pub fn scenario_flow(f: &sc::FlowConfig, i: usize, seed: u64) -> Result<Flow, BuildError> {
    let congestion = match f.protocol {
        sc::Protocol::Tcp => congestion_name(f.congestion()),
        sc::Protocol::Dccp if f.ccid() == 2 => "ccid2",
        sc::Protocol::Dccp => "ccid3",
        sc::Protocol::Udp => "none",
    };
    let start = Instant::ZERO + f.start.time(seed, i).0;
    let mut flow = Flow::new(
        endpoints(f, i, start)?,
        start,
        f.bytes.map(|b| b.0),
        protocol_name(f.protocol),
        congestion,
    );
    if let Some(stop) = f.stop {
        flow.stop_at(Instant::ZERO + stop.0);
    }
    flow.name = f.name.clone();
    // A `device` is its host's budget, shared with the host's other flows: see host_budget.
    Ok(flow)
}

/// The scenario's changes in the network's terms, in time order (stable: the file's order at
/// equal times). The scenario was validated, so every name resolves.
fn changes(s: &sc::Scenario, t: &sc::topology::Topology) -> Result<Vec<TimedChange>, BuildError> {
    let mut out = s
        .change
        .iter()
        .map(|c| {
            Ok(TimedChange {
                at: Instant::ZERO + c.at.0,
                change: net_change(s, t, c)?,
            })
        })
        .collect::<Result<Vec<_>, BuildError>>()?;
    // A hand-off between access points moves each flow it concerns to its new path.
    let ids = |p: &[usize]| p.iter().map(|&l| l as LinkId).collect::<Vec<_>>();
    for h in &t.handoffs {
        for (f, down, up) in &h.paths {
            out.push(TimedChange {
                at: Instant::ZERO + s.handoff[h.index].at.0,
                change: NetChange::Path {
                    flow: *f as u32,
                    down: Some(ids(down)),
                    up: Some(ids(up)),
                },
            });
        }
    }
    out.sort_by_key(|c| c.at);
    Ok(out)
}

/// A change made to a running network (its `at` ignored), in the network's terms; check it
/// first with [`sc::Scenario::validate_live_change`].
pub fn live_change(s: &sc::Scenario, c: &sc::ChangeConfig) -> Result<NetChange, BuildError> {
    let t = topology(s)?;
    let change = net_change(s, &t, c)?;
    crate::model::keeps_users(&t, &start_paths(&t), &changes(s, &t)?, &change)?;
    Ok(change)
}

/// One `[[change]]` in the network's terms.
fn net_change(
    s: &sc::Scenario,
    t: &sc::topology::Topology,
    c: &sc::ChangeConfig,
) -> Result<NetChange, BuildError> {
    let link_id = |name: &str| {
        t.links
            .iter()
            .position(|l| l.name == name)
            .map(|i| i as LinkId)
            .ok_or_else(|| BuildError(format!("no link named \"{name}\"")))
    };
    let path = |names: &Option<Vec<String>>| -> Result<Option<Vec<LinkId>>, BuildError> {
        names
            .as_ref()
            .map(|n| n.iter().map(|l| link_id(l)).collect())
            .transpose()
    };
    Ok(match (&c.link, &c.flow) {
        (Some(link), _) => {
            let link = link_id(link)?;
            match (&c.set, c.state) {
                (Some(set), _) => NetChange::Set {
                    link,
                    change: LinkChange {
                        rate_bps: set.rate.map(|r| r.0),
                        delay: set.delay.map(|d| d.0),
                        queue_limit: set.queue.map(queue_limit),
                        loss: set.loss.map(|p| p.0),
                        bit_error_rate: set.bit_error_rate.map(|p| p.0),
                        mean_snr_db: set.mean_snr.map(|d| d.0),
                    },
                },
                (None, Some(sc::LinkState::Down)) => NetChange::Down {
                    link,
                    keep: c.packets == Some(sc::DownPackets::Kept),
                },
                (None, _) => NetChange::Up { link },
            }
        }
        (None, Some(flow)) => {
            let flow = s
                .flow_index(flow)
                .ok_or_else(|| BuildError(format!("no flow {flow:?}")))?;
            NetChange::Path {
                flow: flow as u32,
                down: path(&c.path)?,
                up: path(&c.return_path)?,
            }
        }
        (None, None) => {
            return Err(BuildError(
                "a change names neither a link nor a flow".into(),
            ))
        }
    })
}

/// Each link's parameters as configured, in the terms of a change (what `airlink ctl` shows
/// and a change updates): a pipe's five (a GPRS link's as the pipe it is built as), an OFDM
/// link's mean SNR, a trace link's delay.
pub fn link_parameters(s: &sc::Scenario) -> Result<Vec<LinkChange>, BuildError> {
    Ok(topology(s)?
        .links
        .iter()
        .map(|l| crate::model::parameters(&l.model))
        .collect())
}

/// Each flow's paths at the start, in link ids.
fn start_paths(t: &sc::topology::Topology) -> Vec<FlowPath> {
    let ids = |path: &[usize]| path.iter().map(|&l| l as LinkId).collect::<Vec<_>>();
    t.paths
        .iter()
        .map(|(down, up)| FlowPath {
            down: ids(down),
            up: ids(up),
        })
        .collect()
}

impl<P: Packet + Send + 'static> Network<P> {
    /// Builds the scenario's links and each flow's path. The scenario must be [`resolve`]d
    /// (every default filled in), as the drivers' builds do.
    ///
    /// Link ids follow [`sc::Scenario::topology`]: with the shorthand, 0 `wired.down`,
    /// 1 `downlink`, 2 `uplink`, 3 `wired.up`, then each flow's access links (down, up);
    /// in the general form, the `[link]` tables in the order of the file.
    pub fn build(s: &sc::Scenario) -> Result<Network<P>, BuildError> {
        let t = topology(s)?;
        if t.links.len() > LinkId::MAX as usize + 1 {
            return Err(BuildError(format!(
                "{} links: at most 65536",
                t.links.len()
            )));
        }
        let paths = start_paths(&t);
        let changes = changes(s, &t)?;
        let users = flows_over_run(t.links.len(), &paths, &changes);
        let links = t
            .links
            .iter()
            .enumerate()
            .map(|(id, l)| {
                let site = Site {
                    name: intern(l.name.clone()),
                    key: l.key.join("."),
                    id,
                    scenario: s,
                    topology: &t,
                    paths: &paths,
                    changes: &changes,
                    users: &users[id],
                };
                let built = crate::model::build(&l.model, &site)?;
                Ok(if crate::model::impairable(&l.model) {
                    crate::impair_build::wrap(built, l.impair.as_ref(), s.seed)
                } else {
                    built
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        // The shorthand's shared links; in the general form, the first flow's path.
        let shared = if s.is_general() {
            paths[0].clone()
        } else {
            FlowPath {
                down: vec![0, 1],
                up: vec![2, 3],
            }
        };
        Ok(Network {
            links,
            paths,
            shared,
            changes,
        })
    }
}
