//! `[downlink.cell]`, `[link.NAME.cell]`: a multi-user cell's downlink (the TCP-PF study's).
//! The model is `airlink_link::CellDownlink`; its rule header lists references and deviations.

use super::ModelConfig;
use crate::units::{Decibel, Distance, Frequency, Probability, QueueLimit, Rate, Speed, Time};
use crate::{check_queue, within, Invalid, MEAN_SNR_DB};
use airlink_engine::Duration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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

impl ModelConfig for CellConfig {
    fn kind(&self) -> &'static str {
        "cell"
    }
    fn check(&self, base: &[&str], min_packet: u64) -> Result<(), Invalid> {
        let c = self;
        let p = |parts: &[&str]| parts.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let at = |k: &str| p(&[base, &["cell", k]].concat());
        for (k, v) in [("omega", c.omega), ("alpha", c.alpha), ("beta", c.beta)] {
            if !(v > 0.0 && v <= 1.0) {
                return Err((
                    at(k),
                    format!("{v} is outside (0, 1]: expected a weight of an average"),
                ));
            }
        }
        within(
            at("slot"),
            c.slot.0,
            Duration::from_micros(10),
            Duration::from_secs(1),
            "a slot",
        )?;
        if c.rates.is_empty() || c.rates.len() > 64 {
            return Err((
                at("rates"),
                format!("{} rates: expected 1 to 64", c.rates.len()),
            ));
        }
        if let Some(w) = c.rates.windows(2).find(|w| w[0].0 >= w[1].0) {
            return Err((
                at("rates"),
                format!(
                    "{} after {}: expected rates in increasing order",
                    w[1], w[0]
                ),
            ));
        }
        if !(c.radius.0 > 0.0 && c.radius.0 <= 1e5) {
            return Err((
                at("radius"),
                format!(
                    "{} m: expected more than 0 m and at most 100 km",
                    c.radius.0
                ),
            ));
        }
        if !(c.min_distance.0 >= 0.0 && c.min_distance.0 < c.radius.0) {
            return Err((
                at("min_distance"),
                format!(
                    "{} m: expected 0 m or more, less than the radius ({} m)",
                    c.min_distance.0, c.radius.0
                ),
            ));
        }
        if !MEAN_SNR_DB.contains(&c.edge_snr.0) {
            return Err((
                at("edge_snr"),
                format!(
                    "{} dB: expected {} dB to {} dB",
                    c.edge_snr.0,
                    MEAN_SNR_DB.start(),
                    MEAN_SNR_DB.end()
                ),
            ));
        }
        for (k, v) in [
            ("shadowing_sigma", c.shadowing_sigma.0),
            ("estimation_sigma", c.estimation_sigma.0),
        ] {
            if !(0.0..=30.0).contains(&v) {
                return Err((
                    at(k),
                    format!("{v} dB: expected a standard deviation of 0 dB to 30 dB"),
                ));
            }
        }
        let kmh = c.speed.0 * 3.6;
        if !(0.0..=1000.0).contains(&kmh) {
            return Err((at("speed"), format!("{kmh} km/h: expected 0 to 1000 km/h")));
        }
        if !(1e6..=3e11).contains(&c.carrier.0) {
            return Err((
                at("carrier"),
                format!("{} Hz: expected 1 MHz to 300 GHz", c.carrier.0),
            ));
        }
        if let Some(q) = &c.queue {
            check_queue(q, min_packet).map_err(|m| (at("queue"), m))?;
        }
        Ok(())
    }
}
