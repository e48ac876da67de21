//! `[downlink.ofdm4g]`, `[link.NAME.ofdm4g]`: the 4G adaptive-OFDM downlink of the WIPEMU
//! study and its fading channel. The model is `airlink_link::Ofdm4gDownlink` over
//! `airlink_channel::OfdmChannel`; their rule headers list references and deviations.

use super::ModelConfig;
use crate::units::{Decibel, Distance, Frequency, Probability, QueueLimit, Speed, Time};
use crate::{check_queue, count, within, Invalid, MAX_CHANNEL_WORK, MAX_DELAY, MEAN_SNR_DB};
use airlink_engine::Duration;
use airlink_phy::Modulation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

fn ms(x: u64) -> Time {
    Time(Duration::from_millis(x))
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

impl ModelConfig for Ofdm4gConfig {
    fn kind(&self) -> &'static str {
        "ofdm4g"
    }
    fn changeable(&self) -> &'static [&'static str] {
        &["mean_snr"]
    }
    fn check(&self, base: &[&str], min_packet: u64) -> Result<(), Invalid> {
        let o = self;
        let p = |parts: &[&str]| parts.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let at = |k: &str| p(&[base, &["ofdm4g", k]].concat());
        check_queue(&o.queue, min_packet).map_err(|m| (at("queue"), m))?;
        count(
            at("bins_per_second"),
            o.bins_per_second,
            1,
            100_000,
            "bins per second",
        )?;
        count(
            at("symbols_per_frame"),
            o.symbols_per_frame,
            1,
            100_000,
            "symbols per frame",
        )?;
        count(at("subbands"), o.subbands, 1, 1024, "sub-bands")?;
        let hz = o.subband_spacing.0;
        if !(1e3..=1e8).contains(&hz) {
            return Err((
                at("subband_spacing"),
                format!("{hz} Hz: expected 1 kHz to 100 MHz"),
            ));
        }
        if o.static_subband >= o.subbands {
            return Err((
                at("static_subband"),
                format!(
                    "sub-band {} does not exist: expected 0 to {}",
                    o.static_subband,
                    o.subbands - 1
                ),
            ));
        }
        if o.modulation_set.is_empty() {
            return Err((
                at("modulation_set"),
                "expected at least one modulation".into(),
            ));
        }
        if o.arq_max_retransmissions > 255 {
            return Err((
                at("arq_max_retransmissions"),
                "expected 0 to 255 retransmissions".into(),
            ));
        }
        if matches!(o.switching, Switching::TargetBer)
            && !(o.target_ber.0 > 0.0 && o.target_ber.0 < 0.5)
        {
            return Err((
                at("target_ber"),
                "expected a target bit error rate in (0, 0.5)".into(),
            ));
        }
        let c = &o.channel;
        let at = |k: &str| p(&[base, &["ofdm4g", "channel", k]].concat());
        if !(0.0..1.0).contains(&c.prediction_nmse) {
            return Err((
                at("prediction_nmse"),
                format!("{} is outside [0, 1)", c.prediction_nmse),
            ));
        }
        if !(0.0..1.0).contains(&c.shadowing_pole) {
            return Err((
                at("shadowing_pole"),
                format!("{} is outside [0, 1)", c.shadowing_pole),
            ));
        }
        if c.shadowing_sigma.0 < 0.0 {
            return Err((
                at("shadowing_sigma"),
                "a standard deviation cannot be negative".into(),
            ));
        }
        count(at("sinusoids"), c.sinusoids, 8, 1024, "sinusoids per tap")?;
        within(
            p(&[base, &["ofdm4g", "arq_delay"]].concat()),
            o.arq_delay.0,
            Duration::ZERO,
            MAX_DELAY,
            "a delay",
        )?;
        if !MEAN_SNR_DB.contains(&c.mean_snr.0) {
            return Err((
                at("mean_snr"),
                format!(
                    "{} dB: expected {} dB to {} dB",
                    c.mean_snr.0,
                    MEAN_SNR_DB.start(),
                    MEAN_SNR_DB.end()
                ),
            ));
        }
        if c.shadowing_sigma.0 > 30.0 {
            return Err((
                at("shadowing_sigma"),
                format!("{} dB: expected 0 dB to 30 dB", c.shadowing_sigma.0),
            ));
        }
        let kmh = c.speed.0 * 3.6;
        if kmh > 1000.0 {
            return Err((at("speed"), format!("{kmh} km/h: expected 0 to 1000 km/h")));
        }
        if !(1e6..=3e11).contains(&c.carrier.0) {
            return Err((
                at("carrier"),
                format!("{} Hz: expected 1 MHz to 300 GHz", c.carrier.0),
            ));
        }
        if !(0.01..=1e4).contains(&c.shadowing_spacing.0) {
            return Err((
                at("shadowing_spacing"),
                format!("{} m: expected 1 cm to 10 km", c.shadowing_spacing.0),
            ));
        }
        // The channel's work per simulated second: every bin evaluates every sub-band's taps.
        let work = o.bins_per_second as f64 * o.subbands as f64 * c.sinusoids as f64;
        if work > MAX_CHANNEL_WORK {
            return Err((
                p(&[base, &["ofdm4g", "bins_per_second"]].concat()),
                format!("bins_per_second × subbands × sinusoids is {work:e}: expected at most {MAX_CHANNEL_WORK:e} (about 170 times the study's)"),
            ));
        }
        Ok(())
    }
}
