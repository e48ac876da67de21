//! The WIPEMU study's OFDM downlink in the network's terms: its fading channel, its
//! modulation tables (remembered per process), the `Ofdm4gDownlink` over them.

use super::{queue_limit, NetModel, Site};
use crate::build::{BuildError, BuiltLink};
use airlink_channel::{OfdmChannel, OfdmChannelConfig, PredictionModel, Shadowing, TapProfile};
use airlink_engine::RngStream;
use airlink_link::{
    LinkChange, Ofdm4gDownlink, Ofdm4gModulation, Ofdm4gParams, Packet, SlotAllocation,
};
use airlink_phy::{LocalSwitching, Modulation, ModulationTable, OddKModel, SwitchingRule};
use airlink_scenario as sc;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// [`ModulationTable::new`], remembered per process: its numerical search costs about as much
/// as a whole WIPEMU run, and a sweep builds the same few tables thousands of times. A pure
/// function of its inputs, so the cache cannot change a result.
fn modulation_table(
    set: &[Modulation],
    rule: SwitchingRule,
    mean_snr_lin: f64,
    nmse: f64,
    symbols: u32,
    odd_k: OddKModel,
) -> Result<ModulationTable, BuildError> {
    type Key = (Vec<Modulation>, Option<u64>, u64, u64, u32, OddKModel);
    static TABLES: OnceLock<Mutex<HashMap<Key, ModulationTable>>> = OnceLock::new();
    let tables = TABLES.get_or_init(Default::default);
    let target = match rule {
        SwitchingRule::TargetBer(b) => Some(b.to_bits()),
        SwitchingRule::MaxThroughput => None,
    };
    let key = (
        set.to_vec(),
        target,
        mean_snr_lin.to_bits(),
        nmse.to_bits(),
        symbols,
        odd_k,
    );
    if let Some(table) = tables.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(table.clone());
    }
    let table = ModulationTable::new(set, rule, mean_snr_lin, nmse, symbols, odd_k)
        .map_err(|e| BuildError(format!("cannot build the modulation table: {e:?}")))?;
    tables
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, table.clone());
    Ok(table)
}

/// [`LocalSwitching`] per (set, rule, ε, N, odd-k model), shared by every run of the process
/// so that each 0.5 dB table is built once per sweep worker, not once per run.
fn local_switching(
    set: &[Modulation],
    rule: SwitchingRule,
    mean_snr_lin: f64,
    nmse: f64,
    symbols: u32,
    odd_k: OddKModel,
) -> Result<Arc<LocalSwitching>, BuildError> {
    type Key = (Vec<Modulation>, u64, u32, OddKModel);
    static SETS: OnceLock<Mutex<HashMap<Key, Arc<LocalSwitching>>>> = OnceLock::new();
    debug_assert_eq!(
        rule,
        SwitchingRule::MaxThroughput,
        "only max-throughput levels depend on the mean"
    );
    let key = (set.to_vec(), nmse.to_bits(), symbols, odd_k);
    let mut sets = SETS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(local) = sets.get(&key) {
        return Ok(Arc::clone(local));
    }
    let local = LocalSwitching::new(set, rule, nmse, symbols, odd_k, mean_snr_lin)
        .map_err(|e| BuildError(format!("cannot build the modulation table: {e:?}")))?;
    Ok(Arc::clone(sets.entry(key).or_insert(Arc::new(local))))
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
        shadowing: (c.shadowing_sigma.0 > 0.0).then_some(Shadowing {
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

/// An OFDM link; its channel's random stream is `NAME.channel`, its own `NAME`.
fn ofdm4g<P: Packet + Send + 'static>(
    name: &'static str,
    o: &sc::Ofdm4gConfig,
    seed: u64,
    key: &str,
) -> Result<BuiltLink<P>, BuildError> {
    let channel = OfdmChannel::new(
        &channel_config(o),
        RngStream::derive(seed, &format!("{name}.channel")),
    )
    .map_err(|e| BuildError(format!("{key}.channel: {e}")))?;
    let modulation = match o.modulation {
        sc::ModulationMode::Fixed(m) => Ofdm4gModulation::Fixed(m),
        sc::ModulationMode::Adaptive => {
            let set: Vec<_> = o.modulation_set.iter().map(|m| m.0).collect();
            let rule = match o.switching {
                sc::Switching::MaxThroughput => SwitchingRule::MaxThroughput,
                sc::Switching::TargetBer => SwitchingRule::TargetBer(o.target_ber.0),
            };
            let mean_snr = 10f64.powf(o.channel.mean_snr.0 / 10.0);
            let (nmse, odd) = (o.channel.prediction_nmse, odd_k(o.odd_k_model));
            let in_key = |e: BuildError| BuildError(format!("{key}: {}", e.0));
            if o.switching_refresh && rule == SwitchingRule::MaxThroughput && nmse > 0.0 {
                Ofdm4gModulation::AdaptiveLocal(
                    local_switching(&set, rule, mean_snr, nmse, o.symbols_per_frame, odd)
                        .map_err(in_key)?,
                )
            } else {
                Ofdm4gModulation::Adaptive(
                    modulation_table(&set, rule, mean_snr, nmse, o.symbols_per_frame, odd)
                        .map_err(in_key)?,
                )
            }
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
        name,
        model: "ofdm4g",
        link: Box::new(Ofdm4gDownlink::new(
            params,
            channel,
            RngStream::derive(seed, name),
        )),
    })
}

impl NetModel for sc::Ofdm4gConfig {
    fn build<P: Packet + Send + 'static>(&self, site: &Site) -> Result<BuiltLink<P>, BuildError> {
        ofdm4g(site.name, self, site.scenario.seed, &site.key)
    }

    /// With its densest modulation.
    fn capacity_bps(&self, _key: &str) -> Result<Option<u64>, BuildError> {
        let bits = match self.modulation {
            sc::ModulationMode::Fixed(m) => m.bits(),
            sc::ModulationMode::Adaptive => self
                .modulation_set
                .iter()
                .map(|m| m.0.bits())
                .max()
                .unwrap_or(1),
        };
        Ok(Some(
            self.bins_per_second as u64 * self.symbols_per_frame as u64 * bits as u64,
        ))
    }

    fn queue(&self) -> Option<sc::units::QueueLimit> {
        Some(self.queue)
    }

    fn parameters(&self) -> LinkChange {
        LinkChange {
            mean_snr_db: Some(self.channel.mean_snr.0),
            ..Default::default()
        }
    }

    fn warnings(&self, name: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.channel_errors
            && self.channel.mean_snr.0 < -20.0
            && self.arq_max_retransmissions == 0
        {
            out.push(format!(
                "{name}.channel.mean_snr = {} dB without ARQ: almost every frame is lost",
                self.channel.mean_snr.0
            ));
        }
        out
    }
}
