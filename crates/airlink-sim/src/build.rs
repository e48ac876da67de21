//! From a scenario to running models: every component gets its configuration and its own
//! random stream, derived from the run seed and the component's stable name.

use crate::metrics::Recorder;
use crate::{Event, FlowState, LinkSlot, Simulation, RANK_SAMPLE, RANK_START};
use airlink_channel::{OfdmChannel, OfdmChannelConfig, PredictionModel, Shadowing, TapProfile};
use airlink_engine::{EventQueue, Instant, RngStream};
use airlink_link::{Link, Ofdm4gDownlink, Packet, Ofdm4gModulation, Ofdm4gParams, Pipe, PipeParams, QueueLimit, SlotAllocation};
use airlink_phy::{ModulationTable, OddKModel, SwitchingRule};
use airlink_scenario as sc;
use airlink_transport::{CongestionConfig, Recovery, Role, TcpConfig, TcpEndpoint};
use std::fmt;

/// A scenario that parsed but cannot be built into models.
#[derive(Clone, Debug, PartialEq)]
pub struct BuildError(pub String);

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for BuildError {}

fn queue_limit(q: sc::units::QueueLimit) -> QueueLimit {
    match q {
        sc::units::QueueLimit::Packets(n) => QueueLimit::Packets(n),
        sc::units::QueueLimit::Bytes(b) => QueueLimit::Bytes(b),
    }
}

fn pipe_params(p: &sc::PipeConfig) -> PipeParams {
    PipeParams {
        rate_bps: p.rate.map(|r| r.0),
        delay: p.delay.0,
        queue_limit: queue_limit(p.queue),
        loss: p.loss.0,
        bit_error_rate: p.bit_error_rate.0,
    }
}

/// A link model built from a scenario, for any packet type (the simulator's and the
/// emulator's packets run through the same models).
pub struct BuiltLink<P> {
    /// Stable name: also the name its random stream is derived from.
    pub name: &'static str,
    /// Model name for reports ("pipe", "ofdm4g").
    pub model: &'static str,
    pub link: Box<dyn Link<P> + Send>,
}

/// The scenario's four links in their stable order: `wired.down`, `downlink`, `uplink`,
/// `wired.up`. Downward packets cross the first two, upward ones the last two.
pub fn scenario_links<P: Packet + Send + 'static>(s: &sc::Scenario) -> Result<Vec<BuiltLink<P>>, BuildError> {
    let seed = s.seed;
    let downlink = match &s.downlink {
        sc::DownlinkConfig::Ofdm4g(o) => ofdm4g(o, seed)?,
        sc::DownlinkConfig::Pipe(p) => pipe("downlink", p, seed),
        sc::DownlinkConfig::Trace(t) => trace_link(t)?,
    };
    let sc::UplinkConfig::Pipe(up) = &s.uplink;
    Ok(vec![pipe("wired.down", &s.wired, seed), downlink, pipe("uplink", up, seed), pipe("wired.up", &s.wired, seed)])
}

fn pipe<P: Packet + Send + 'static>(name: &'static str, p: &sc::PipeConfig, seed: u64) -> BuiltLink<P> {
    BuiltLink { name, model: "pipe", link: Box::new(Pipe::new(pipe_params(p), RngStream::derive(seed, name))) }
}

fn trace_link<P: Packet + Send + 'static>(t: &sc::TraceConfig) -> Result<BuiltLink<P>, BuildError> {
    let trace = airlink_link::Trace::from_file(std::path::Path::new(&t.file))
        .map_err(|e| BuildError(format!("downlink.trace.file: {e}")))?;
    let params = airlink_link::TraceParams { delay: t.delay.0, queue_limit: queue_limit(t.queue) };
    Ok(BuiltLink { name: "downlink", model: "trace", link: Box::new(airlink_link::TraceLink::new(trace, params)) })
}

fn odd_k(m: sc::OddKModelName) -> OddKModel {
    match m {
        sc::OddKModelName::Generic => OddKModel::Generic,
        sc::OddKModelName::Rect => OddKModel::Rect,
        sc::OddKModelName::Cross => OddKModel::Cross,
    }
}

/// The channel model configuration of an OFDM downlink.
pub fn channel_config(o: &sc::Ofdm4gConfig) -> OfdmChannelConfig {
    let c = &o.channel;
    OfdmChannelConfig {
        mean_snr_db: c.mean_snr.0,
        speed_mps: c.speed.0,
        carrier_hz: c.carrier.0,
        profile: match c.profile {
            sc::ProfileName::WipemuTu => TapProfile::wipemu_tu12(),
            sc::ProfileName::Cost207Tu => TapProfile::cost207_tu12(),
            sc::ProfileName::Flat => TapProfile::flat(),
        },
        n_subbands: o.subbands as usize,
        subband_spacing_hz: o.subband_spacing.0,
        sinusoids: c.sinusoids as usize,
        shadowing: (c.shadowing_sigma.0 > 0.0).then(|| Shadowing {
            sigma_db: c.shadowing_sigma.0,
            pole: c.shadowing_pole,
            spacing_m: c.shadowing_spacing.0,
        }),
        prediction_nmse: c.prediction_nmse,
        prediction_model: match c.prediction_model {
            sc::PredictionModelName::Mmse => PredictionModel::Mmse,
            sc::PredictionModelName::Additive => PredictionModel::Additive,
        },
        bins_per_second: o.bins_per_second as u64,
    }
}

fn ofdm4g<P: Packet + Send + 'static>(o: &sc::Ofdm4gConfig, seed: u64) -> Result<BuiltLink<P>, BuildError> {
    let channel = OfdmChannel::new(&channel_config(o), RngStream::derive(seed, "downlink.channel"))
        .map_err(|e| BuildError(format!("downlink.ofdm4g.channel: {e}")))?;
    let modulation = match o.modulation {
        sc::ModulationMode::Fixed(m) => Ofdm4gModulation::Fixed(m),
        sc::ModulationMode::Adaptive => {
            let set: Vec<_> = o.modulation_set.iter().map(|m| m.0).collect();
            let rule = match o.switching {
                sc::Switching::MaxThroughput => SwitchingRule::MaxThroughput,
                sc::Switching::TargetBer => SwitchingRule::TargetBer(o.target_ber.0),
            };
            let mean_snr = 10f64.powf(o.channel.mean_snr.0 / 10.0);
            Ofdm4gModulation::Adaptive(ModulationTable::new(
                &set,
                rule,
                mean_snr,
                o.channel.prediction_nmse,
                o.symbols_per_frame,
                odd_k(o.odd_k_model),
            )
            .map_err(|e| BuildError(format!("downlink.ofdm4g: cannot build the modulation table: {e:?}")))?)
        }
    };
    let params = Ofdm4gParams {
        queue_limit: queue_limit(o.queue),
        bins_per_second: o.bins_per_second,
        symbols_per_frame: o.symbols_per_frame,
        allocation: match o.allocation {
            sc::Allocation::Static => SlotAllocation::Static(o.static_subband),
            sc::Allocation::Best => SlotAllocation::Best,
        },
        modulation,
        odd_k: odd_k(o.odd_k_model),
        arq_max_retransmissions: o.arq_max_retransmissions,
        arq_delay: o.arq_delay.0,
        arq_remodulate: o.arq_remodulate,
        channel_errors: o.channel_errors,
    };
    Ok(BuiltLink {
        name: "downlink",
        model: "ofdm4g",
        link: Box::new(Ofdm4gDownlink::new(params, channel, RngStream::derive(seed, "downlink"))),
    })
}

/// The transport configuration of a flow: the scenario's values over the transport defaults.
pub fn tcp_config(f: &sc::FlowConfig) -> TcpConfig {
    let t = &f.tcp;
    let mut c = match t.preset {
        sc::TcpPreset::Default => TcpConfig::default(),
        sc::TcpPreset::Rfc => TcpConfig::rfc(),
        sc::TcpPreset::Linux24 => TcpConfig::linux_2_4(),
    };
    c.timestamps = t.timestamps.unwrap_or(false);
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
    (c.congestion, c.recovery) = match f.congestion {
        sc::Congestion::Reno => (CongestionConfig::Reno, Recovery::Reno),
        sc::Congestion::Newreno => (CongestionConfig::Reno, Recovery::NewReno),
        sc::Congestion::Cubic => (CongestionConfig::Cubic(Default::default()), Recovery::NewReno),
    };
    c
}

fn congestion_name(c: sc::Congestion) -> &'static str {
    match c {
        sc::Congestion::Reno => "reno",
        sc::Congestion::Newreno => "newreno",
        sc::Congestion::Cubic => "cubic",
    }
}

impl Simulation {
    /// Builds the scenario's models. `record` turns the time series on.
    pub fn new(s: &sc::Scenario, record: bool) -> Result<Simulation, BuildError> {
        let seed = s.seed;
        // Link ids: 0 wired.down, 1 downlink, 2 uplink, 3 wired.up.
        let links = scenario_links(s)?
            .into_iter()
            .map(|b| LinkSlot { name: b.name, model: b.model, link: b.link, wake: None, checksum_drops: 0 })
            .collect();
        let mut queue = EventQueue::new();
        let flows = s
            .flow
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let cfg = tcp_config(f);
                queue.push(Instant::ZERO + f.start.0, RANK_START, i as u32, Event::FlowStart(i as u32));
                FlowState {
                    client: TcpEndpoint::new(cfg.clone(), Role::Client),
                    server: TcpEndpoint::new(cfg, Role::Server),
                    client_wake: None,
                    server_wake: None,
                    start: Instant::ZERO + f.start.0,
                    bytes: f.bytes.0,
                    delivered: 0,
                    first_delivery: None,
                    last_delivery: None,
                    mark10: None,
                    mark90: None,
                    done: f.bytes.0 == 0,
                    checksum_drops: 0,
                    protocol: "tcp",
                    congestion: congestion_name(f.congestion),
                }
            })
            .collect();
        let sample_interval = s.sample_interval.0;
        if record && !sample_interval.is_zero() {
            queue.push(Instant::ZERO, RANK_SAMPLE, 0, Event::Sample);
        }
        Ok(Simulation {
            queue,
            links,
            down_path: vec![0, 1],
            up_path: vec![2, 3],
            flows,
            stop: Instant::ZERO + s.stop.0,
            sample_interval,
            recorder: Recorder { enabled: record, ..Default::default() },
            now: Instant::ZERO,
            events_processed: 0,
            seed,
            name: s.name.clone(),
            finished: false,
        })
    }
}

