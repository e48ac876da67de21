//! Per-bin SNR of the OFDM sub-bands of one user (spec B.4–B.7): multipath fading through a
//! tapped delay line, shadowing, and a predicted version of the channel with a given NMSE.
//!
//! Model, for bin n (centre t_n = (n + ½)/B) and sub-band m (offset f_m = (m − (M−1)/2)·Δf):
//!
//! - H_m(t) = Σ_l √P_l·g_l(t)·e^{−j2π f_m τ_l}, g_l independent unit-power Zheng–Xiao faders
//!   (one per tap, each from substream `"tap{l}"`), Σ P_l = 1, so E|H_m|² = 1;
//! - true SNR γ = γ̄·S(t_n)·|H_m(t_n)|², S the shadowing factor (substream `"shadowing"`);
//! - predicted gain ĥ = (1−ε)·H + √(ε(1−ε))·w (MMSE-consistent, default) or ĥ = H + √ε·w
//!   (`Additive`), w ~ CN(0, 1) from `hashed_normal_pair(n·M + m)` of substream `"prediction"`;
//!   predicted SNR γ̂ = γ̄·S·|ĥ|² (shadowing known to the predictor).
//!
//! References: \[S1\] (WIPEMU: 25 sub-bands of 200 kHz, 12-tap TU at 75 km/h, 1.9 GHz, 16 dB,
//! AR(1) shadowing, NMSE 0.1); \[SF04\] (prediction error as NMSE); spec B.4, B.6, B.7.
//!
//! | deviation / assumption | where |
//! |---|---|
//! | one evaluation at the sub-band centre (the bin is flat); the `subcarrier_avg` option of B.4 is not implemented | B.4 (A) |
//! | WIPEMU's "16 dB SNR" is γ̄, the mean γ per bin (a median when shadowing is on) | A.1, B.5 (A) |
//! | prediction noise w is i.i.d. per (bin, sub-band): the prediction error is white in time and frequency | B.6 (A) |
//! | shadowing is the same on all sub-bands and perfectly known to the predictor | B.6 (A) |
//! | even M: sub-band offsets are half-integer multiples of Δf, symmetric about the carrier | (A) |
//! | taps' streams are named by their index in the profile after −∞ taps are dropped | B.2 (A) |

use std::fmt;

use airlink_engine::RngStream;

use crate::bins::BinGrid;
use crate::doppler::{doppler_hz, kmh_to_mps};
use crate::fading::{BinnedFader, ZhengXiao, DEFAULT_SINUSOIDS, MIN_SINUSOIDS};
use crate::profile::TapProfile;
use crate::shadowing::{Shadowing, ShadowingProcess};
use crate::Complex;

/// How the predicted channel is synthesised from the true one at NMSE ε (spec B.6).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum PredictionModel {
    /// ĥ = (1−ε)h + √(ε(1−ε))w: E|h−ĥ|² = ε, E|ĥ|² = 1−ε, error orthogonal to ĥ (an MMSE
    /// predictor's statistics; matches the conditional law assumed by `airlink-phy`'s
    /// max-throughput tables). Default.
    #[default]
    Mmse,
    /// ĥ = h + √ε·w: same NMSE, but E|ĥ|² = 1+ε (biased upwards).
    Additive,
}

/// Configuration of one user's OFDM channel. Plain data; [`OfdmChannelConfig::validate`] (also
/// run by [`OfdmChannel::new`]) checks it.
#[derive(Clone, Debug, PartialEq)]
pub struct OfdmChannelConfig {
    /// Mean SNR per symbol γ̄ in dB (16 dB in \[S1\]); the median when shadowing is on.
    pub mean_snr_db: f64,
    /// User speed in m/s (75 km/h in \[S1\]); ≥ 0.
    pub speed_mps: f64,
    /// Carrier frequency in Hz (1.9 GHz in \[S1\]); > 0.
    pub carrier_hz: f64,
    /// Power-delay profile ([`TapProfile::wipemu_tu12`] in \[S1\]).
    pub profile: TapProfile,
    /// Number of sub-bands M (25 in \[S1\]); ≥ 1.
    pub n_subbands: usize,
    /// Sub-band spacing Δf in Hz (200 kHz in \[S1\]); ≥ 0.
    pub subband_spacing_hz: f64,
    /// Sinusoids per fading generator (16, spec B.2); ≥ 8.
    pub sinusoids: usize,
    /// AR(1) shadowing, or `None` for none ([`Shadowing::WIPEMU`] in \[S1\]).
    pub shadowing: Option<Shadowing>,
    /// Prediction NMSE ε in [0, 1) (0 = perfect prediction; 0.1 in \[S1\]).
    pub prediction_nmse: f64,
    /// How the prediction error is synthesised.
    pub prediction_model: PredictionModel,
    /// Bins (slots) per second B (1500 in \[S1\]: 2/3 ms bins); ≥ 1.
    pub bins_per_second: u64,
}

impl OfdmChannelConfig {
    /// The WIPEMU channel of \[S1\] (spec B.7), with prediction NMSE 0.1.
    pub fn wipemu() -> Self {
        OfdmChannelConfig {
            mean_snr_db: 16.0,
            speed_mps: kmh_to_mps(75.0),
            carrier_hz: 1.9e9,
            profile: TapProfile::wipemu_tu12(),
            n_subbands: 25,
            subband_spacing_hz: 200e3,
            sinusoids: DEFAULT_SINUSOIDS,
            shadowing: Some(Shadowing::WIPEMU),
            prediction_nmse: 0.1,
            prediction_model: PredictionModel::Mmse,
            bins_per_second: 1500,
        }
    }

    /// A single flat Rayleigh band without shadowing or prediction error (e.g. \[S2\]'s users).
    pub fn flat(mean_snr_db: f64, speed_mps: f64, carrier_hz: f64, bins_per_second: u64) -> Self {
        OfdmChannelConfig {
            mean_snr_db,
            speed_mps,
            carrier_hz,
            profile: TapProfile::flat(),
            n_subbands: 1,
            subband_spacing_hz: 0.0,
            sinusoids: DEFAULT_SINUSOIDS,
            shadowing: None,
            prediction_nmse: 0.0,
            prediction_model: PredictionModel::Mmse,
            bins_per_second,
        }
    }

    /// Maximum Doppler frequency f_d = v·f_c/c in Hz.
    pub fn doppler_hz(&self) -> f64 {
        doppler_hz(self.speed_mps, self.carrier_hz)
    }

    /// Offset of sub-band `m` from the carrier: (m − (M−1)/2)·Δf (m − 12 for M = 25).
    pub fn subband_offset_hz(&self, m: usize) -> f64 {
        (m as f64 - (self.n_subbands as f64 - 1.0) / 2.0) * self.subband_spacing_hz
    }

    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), ChannelConfigError> {
        use ChannelConfigError as E;
        if !self.mean_snr_db.is_finite() {
            return Err(E::MeanSnr(self.mean_snr_db));
        }
        if !(self.speed_mps.is_finite() && self.speed_mps >= 0.0) {
            return Err(E::Speed(self.speed_mps));
        }
        if !(self.carrier_hz.is_finite() && self.carrier_hz > 0.0) {
            return Err(E::Carrier(self.carrier_hz));
        }
        if self.n_subbands == 0 {
            return Err(E::NoSubbands);
        }
        if !(self.subband_spacing_hz.is_finite() && self.subband_spacing_hz >= 0.0) {
            return Err(E::SubbandSpacing(self.subband_spacing_hz));
        }
        if self.sinusoids < MIN_SINUSOIDS {
            return Err(E::TooFewSinusoids(self.sinusoids));
        }
        if !(0.0..1.0).contains(&self.prediction_nmse) {
            return Err(E::Nmse(self.prediction_nmse));
        }
        if let Some(s) = self.shadowing {
            s.validate()?;
        }
        if self.bins_per_second == 0 {
            return Err(E::NoBins);
        }
        Ok(())
    }
}

/// A field of [`OfdmChannelConfig`] out of range.
#[derive(Clone, Debug, PartialEq)]
pub enum ChannelConfigError {
    /// `mean_snr_db` is not finite.
    MeanSnr(f64),
    /// `speed_mps` is negative or not finite.
    Speed(f64),
    /// `carrier_hz` is not positive and finite.
    Carrier(f64),
    /// `n_subbands` is 0.
    NoSubbands,
    /// `subband_spacing_hz` is negative or not finite.
    SubbandSpacing(f64),
    /// `sinusoids` is below [`MIN_SINUSOIDS`].
    TooFewSinusoids(usize),
    /// `prediction_nmse` is outside [0, 1).
    Nmse(f64),
    /// Shadowing σ is negative or not finite.
    ShadowingSigma(f64),
    /// Shadowing pole is outside [0, 1).
    ShadowingPole(f64),
    /// Shadowing sample spacing is not positive and finite.
    ShadowingSpacing(f64),
    /// `bins_per_second` is 0.
    NoBins,
    /// A cell without users.
    NoUsers,
    /// Cell radius not positive and finite.
    Radius(f64),
    /// Minimum distance outside [0, radius).
    MinDistance(f64),
    /// Estimation noise σ negative or not finite.
    EstimationSigma(f64),
}

impl fmt::Display for ChannelConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ChannelConfigError as E;
        match self {
            E::MeanSnr(v) => write!(f, "mean SNR {v} dB is not finite"),
            E::Speed(v) => write!(f, "speed {v} m/s must be finite and non-negative"),
            E::Carrier(v) => write!(f, "carrier {v} Hz must be positive and finite"),
            E::NoSubbands => write!(f, "at least one sub-band is needed"),
            E::SubbandSpacing(v) => {
                write!(f, "sub-band spacing {v} Hz must be finite and non-negative")
            }
            E::TooFewSinusoids(v) => write!(
                f,
                "{v} sinusoids per fader; at least {MIN_SINUSOIDS} are needed"
            ),
            E::Nmse(v) => write!(f, "prediction NMSE {v} is outside [0, 1)"),
            E::ShadowingSigma(v) => {
                write!(f, "shadowing sigma {v} dB must be finite and non-negative")
            }
            E::ShadowingPole(v) => write!(f, "shadowing pole {v} is outside [0, 1)"),
            E::ShadowingSpacing(v) => write!(
                f,
                "shadowing sample spacing {v} m must be positive and finite"
            ),
            E::NoBins => write!(f, "bins per second must be positive"),
            E::NoUsers => write!(f, "a cell needs at least one user"),
            E::Radius(v) => write!(f, "cell radius {v} m must be positive and finite"),
            E::MinDistance(v) => {
                write!(
                    f,
                    "minimum distance {v} m must be at least 0 and below the radius"
                )
            }
            E::EstimationSigma(v) => write!(
                f,
                "estimation noise sigma {v} dB must be finite and non-negative"
            ),
        }
    }
}

impl std::error::Error for ChannelConfigError {}

/// One user's OFDM channel: true and predicted SNR per (bin, sub-band).
///
/// Call contract: every query is a pure function of (configuration, stream, bin, sub-band):
/// bins may be skipped and sub-bands queried in any order, and the values of the bins that are
/// evaluated do not change (common random numbers under lazy evaluation). Bins that never
/// decrease between calls are the cheap path: the tap gains are computed once per bin and
/// cached for all sub-bands of that bin; going back in time is allowed but recomputes.
#[derive(Clone, Debug)]
pub struct OfdmChannel {
    mean_snr_lin: f64,
    n_subbands: usize,
    n_taps: usize,
    grid: BinGrid,
    faders: Vec<BinnedFader>,
    /// `coeff[m·L + l]` = √P_l·e^{−j2π f_m τ_l}.
    coeff: Vec<Complex>,
    /// Tap gains g_l of bin `cached_bin`.
    tap_gains: Vec<Complex>,
    /// γ̄·S of bin `cached_bin`.
    scale: f64,
    cached_bin: Option<u64>,
    shadowing: Option<ShadowingProcess>,
    prediction_rng: RngStream,
    /// ĥ = keep·h + noise·w.
    keep: f64,
    noise: f64,
}

impl OfdmChannel {
    /// Builds the channel, drawing every generator's parameters from `rng` (this user's channel
    /// stream) via named substreams.
    pub fn new(cfg: &OfdmChannelConfig, rng: RngStream) -> Result<Self, ChannelConfigError> {
        cfg.validate()?;
        let grid = BinGrid::new(cfg.bins_per_second).ok_or(ChannelConfigError::NoBins)?;
        let fd = cfg.doppler_hz();
        let n_taps = cfg.profile.len();
        let faders = (0..n_taps)
            .map(|l| {
                let mut tap_rng = rng.substream(&format!("tap{l}"));
                BinnedFader::new(
                    ZhengXiao::new(fd, cfg.sinusoids, &mut tap_rng),
                    cfg.bins_per_second,
                )
            })
            .collect();
        let mut coeff = Vec::with_capacity(cfg.n_subbands * n_taps);
        for m in 0..cfg.n_subbands {
            let f = cfg.subband_offset_hz(m);
            coeff.extend((0..n_taps).map(|l| cfg.profile.tap_coefficient(l, f)));
        }
        let shadowing = cfg.shadowing.map(|s| {
            ShadowingProcess::new(
                s,
                cfg.speed_mps,
                cfg.bins_per_second,
                rng.substream("shadowing"),
            )
        });
        let eps = cfg.prediction_nmse;
        let (keep, noise) = match cfg.prediction_model {
            PredictionModel::Mmse => (1.0 - eps, (eps * (1.0 - eps)).sqrt()),
            PredictionModel::Additive => (1.0, eps.sqrt()),
        };
        Ok(OfdmChannel {
            mean_snr_lin: 10f64.powf(cfg.mean_snr_db / 10.0),
            n_subbands: cfg.n_subbands,
            n_taps,
            grid,
            faders,
            coeff,
            tap_gains: vec![Complex::new(0.0, 0.0); n_taps],
            scale: 0.0,
            cached_bin: None,
            shadowing,
            prediction_rng: rng.substream("prediction"),
            keep,
            noise,
        })
    }

    /// Sets the mean SNR γ̄ (dB) from now on (a timed change); the fading and shadowing
    /// processes go on unchanged.
    pub fn set_mean_snr_db(&mut self, db: f64) {
        self.mean_snr_lin = 10f64.powf(db / 10.0);
        self.cached_bin = None;
    }

    /// (true, predicted) SNR, linear per symbol, of bin `n` on sub-band `m`.
    ///
    /// # Panics
    /// If `m` ≥ the number of sub-bands.
    #[inline]
    pub fn snr(&mut self, n: u64, m: usize) -> (f64, f64) {
        let (h, h_hat) = self.gains(n, m);
        (self.scale * h.norm_sqr(), self.scale * h_hat.norm_sqr())
    }

    /// (true, predicted) SNR of every sub-band of bin `n`, written to `true_out[m]` and
    /// `pred_out[m]` (e.g. for best-channel scheduling).
    ///
    /// # Panics
    /// If either slice's length is not the number of sub-bands.
    pub fn snr_all(&mut self, n: u64, true_out: &mut [f64], pred_out: &mut [f64]) {
        assert_eq!(
            true_out.len(),
            self.n_subbands,
            "true_out must have one entry per sub-band"
        );
        assert_eq!(
            pred_out.len(),
            self.n_subbands,
            "pred_out must have one entry per sub-band"
        );
        self.update(n);
        for m in 0..self.n_subbands {
            let h = self.subband_gain(m);
            let h_hat = self.predict(n, m, h);
            true_out[m] = self.scale * h.norm_sqr();
            pred_out[m] = self.scale * h_hat.norm_sqr();
        }
    }

    /// (true, predicted) unit-power complex gain (H_m, Ĥ_m) of bin `n` on sub-band `m`, without
    /// γ̄ and shadowing.
    ///
    /// # Panics
    /// If `m` ≥ the number of sub-bands.
    #[inline]
    pub fn gains(&mut self, n: u64, m: usize) -> (Complex, Complex) {
        assert!(
            m < self.n_subbands,
            "sub-band {m} out of range (0..{})",
            self.n_subbands
        );
        self.update(n);
        let h = self.subband_gain(m);
        (h, self.predict(n, m, h))
    }

    /// Shadowing of bin `n` in dB (0 without shadowing).
    pub fn shadowing_db(&mut self, n: u64) -> f64 {
        self.shadowing.as_mut().map_or(0.0, |s| s.db_at_bin(n))
    }

    /// The local mean SNR γ̄·S of bin `n`, linear: what the fading of every sub-band is around.
    pub fn local_mean_snr_lin(&mut self, n: u64) -> f64 {
        self.update(n);
        self.scale
    }

    /// Number of sub-bands.
    pub fn n_subbands(&self) -> usize {
        self.n_subbands
    }

    /// Mean SNR γ̄, linear.
    pub fn mean_snr_lin(&self) -> f64 {
        self.mean_snr_lin
    }

    /// The bin grid (exact bin start times and the bin of an instant).
    pub fn grid(&self) -> BinGrid {
        self.grid
    }

    /// Makes the tap gains and γ̄·S those of bin `n`.
    #[inline]
    fn update(&mut self, n: u64) {
        if self.cached_bin == Some(n) {
            return;
        }
        for (g, f) in self.tap_gains.iter_mut().zip(&mut self.faders) {
            *g = f.gain(n);
        }
        self.scale = match &mut self.shadowing {
            Some(s) => self.mean_snr_lin * 10f64.powf(s.db_at_bin(n) / 10.0),
            None => self.mean_snr_lin,
        };
        self.cached_bin = Some(n);
    }

    /// H_m of the cached bin.
    #[inline]
    fn subband_gain(&self, m: usize) -> Complex {
        let row = &self.coeff[m * self.n_taps..(m + 1) * self.n_taps];
        let mut h = Complex::new(0.0, 0.0);
        for (c, g) in row.iter().zip(&self.tap_gains) {
            h += *c * *g;
        }
        h
    }

    /// Ĥ_m from H_m with the noise of (bin n, sub-band m).
    #[inline]
    fn predict(&self, n: u64, m: usize, h: Complex) -> Complex {
        if self.noise == 0.0 {
            return h;
        }
        let counter = n
            .wrapping_mul(self.n_subbands as u64)
            .wrapping_add(m as u64);
        let (x, y) = self.prediction_rng.hashed_normal_pair(counter);
        // w = (x + jy)/√2 ~ CN(0, 1).
        let k = self.noise * std::f64::consts::FRAC_1_SQRT_2;
        Complex::new(self.keep * h.re + k * x, self.keep * h.im + k * y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fading::ANCHOR_INTERVAL;

    fn channel(cfg: &OfdmChannelConfig, seed: u64) -> OfdmChannel {
        OfdmChannel::new(cfg, RngStream::derive(seed, "user0/channel")).unwrap()
    }

    fn no_shadow(nmse: f64) -> OfdmChannelConfig {
        OfdmChannelConfig {
            shadowing: None,
            prediction_nmse: nmse,
            ..OfdmChannelConfig::wipemu()
        }
    }

    #[test]
    fn validation_rejects_each_bad_field() {
        use ChannelConfigError as E;
        let ok = OfdmChannelConfig::wipemu();
        assert_eq!(ok.validate(), Ok(()));
        let bad = |f: &dyn Fn(&mut OfdmChannelConfig)| {
            let mut c = ok.clone();
            f(&mut c);
            OfdmChannel::new(&c, RngStream::derive(1, "x")).unwrap_err()
        };
        assert_eq!(
            bad(&|c| c.mean_snr_db = f64::NAN).to_string(),
            "mean SNR NaN dB is not finite"
        );
        assert_eq!(bad(&|c| c.speed_mps = -1.0), E::Speed(-1.0));
        assert_eq!(bad(&|c| c.carrier_hz = 0.0), E::Carrier(0.0));
        assert_eq!(bad(&|c| c.n_subbands = 0), E::NoSubbands);
        assert_eq!(
            bad(&|c| c.subband_spacing_hz = -5.0),
            E::SubbandSpacing(-5.0)
        );
        assert_eq!(bad(&|c| c.sinusoids = 7), E::TooFewSinusoids(7));
        assert_eq!(bad(&|c| c.prediction_nmse = 1.0), E::Nmse(1.0));
        assert_eq!(bad(&|c| c.prediction_nmse = -0.1), E::Nmse(-0.1));
        assert_eq!(
            bad(&|c| c.shadowing = Some(Shadowing {
                sigma_db: -1.0,
                ..Shadowing::WIPEMU
            })),
            E::ShadowingSigma(-1.0)
        );
        assert_eq!(
            bad(&|c| c.shadowing = Some(Shadowing {
                pole: 1.0,
                ..Shadowing::WIPEMU
            })),
            E::ShadowingPole(1.0)
        );
        assert_eq!(
            bad(&|c| c.shadowing = Some(Shadowing {
                spacing_m: 0.0,
                ..Shadowing::WIPEMU
            })),
            E::ShadowingSpacing(0.0)
        );
        assert_eq!(bad(&|c| c.bins_per_second = 0), E::NoBins);
    }

    #[test]
    fn subband_coefficients_give_the_deterministic_response() {
        // All g_l = 1: |Σ_l coeff[m][l]|² at m = 0, 6, 12, 18, 24 (spec B vectors).
        let ch = channel(&OfdmChannelConfig::wipemu(), 1);
        assert_eq!(ch.n_taps, 10);
        for (m, want) in [
            (0, 0.04312),
            (6, 0.31543),
            (12, 6.99745),
            (18, 0.31543),
            (24, 0.04312),
        ] {
            let row = &ch.coeff[m * ch.n_taps..(m + 1) * ch.n_taps];
            let h = row.iter().fold(Complex::new(0.0, 0.0), |a, &c| a + c);
            assert!(
                (h.norm_sqr() - want).abs() < 6e-6,
                "m {m}: {}",
                h.norm_sqr()
            );
        }
        assert_eq!(OfdmChannelConfig::wipemu().subband_offset_hz(0), -2.4e6);
    }

    #[test]
    fn mean_power_is_the_mean_snr() {
        let cfg = no_shadow(0.0);
        let (mut sum, mut count) = (0.0, 0.0);
        for seed in 0..200 {
            let mut ch = channel(&cfg, seed);
            for k in 0..50u64 {
                // Bins 85 ms apart (≈ 11 Doppler periods, nearly independent), on anchors.
                let n = k * ANCHOR_INTERVAL;
                for m in [0usize, 7, 12, 24] {
                    sum += ch.snr(n, m).0;
                    count += 1.0;
                }
            }
        }
        let mean = sum / count / ch_mean(&cfg);
        assert!((mean - 1.0).abs() < 0.03, "E[γ]/γ̄ = {mean}");
    }

    fn ch_mean(cfg: &OfdmChannelConfig) -> f64 {
        10f64.powf(cfg.mean_snr_db / 10.0)
    }

    #[test]
    fn prediction_error_has_the_requested_nmse() {
        for (model, want_hat) in [
            (PredictionModel::Mmse, 0.9),
            (PredictionModel::Additive, 1.1),
        ] {
            let cfg = OfdmChannelConfig {
                prediction_model: model,
                ..no_shadow(0.1)
            };
            let (mut p_hat, mut err, mut cross, mut p) = (0.0, 0.0, 0.0, 0.0);
            let mut count = 0.0;
            for seed in 0..20 {
                let mut ch = channel(&cfg, seed);
                for n in 0..2000u64 {
                    for m in 0..25 {
                        let (h, h_hat) = ch.gains(n, m);
                        p += h.norm_sqr();
                        p_hat += h_hat.norm_sqr();
                        err += (h - h_hat).norm_sqr();
                        cross += (h_hat.conj() * (h - h_hat)).re;
                        count += 1.0;
                    }
                }
            }
            let (p, p_hat, err, cross) = (p / count, p_hat / count, err / count, cross / count);
            // 10⁶ noise draws: the noise part is exact to ≈ 0.2 %; the fading part averages 20
            // realisations × 1.3 s (≈ 180 Doppler periods).
            assert!((err - 0.1).abs() < 0.003, "{model:?}: E|h−ĥ|² = {err}");
            assert!(
                (p_hat / p - want_hat).abs() < 0.01,
                "{model:?}: E|ĥ|²/E|h|² = {}",
                p_hat / p
            );
            assert!(
                (p_hat - want_hat).abs() < 0.03,
                "{model:?}: E|ĥ|² = {p_hat}"
            );
            if model == PredictionModel::Mmse {
                assert!(cross.abs() < 0.004, "E[ĥ*(h−ĥ)] = {cross}");
            }
        }
    }

    #[test]
    fn perfect_prediction_is_the_true_channel() {
        let mut ch = channel(&no_shadow(0.0), 3);
        for n in 0..100 {
            let (t, p) = ch.snr(n, 5);
            assert_eq!(t, p);
        }
    }

    #[test]
    fn shadowing_scales_both_versions() {
        let cfg = OfdmChannelConfig::wipemu();
        let mut ch = channel(&cfg, 4);
        let mut plain = OfdmChannel::new(
            &OfdmChannelConfig {
                shadowing: None,
                ..cfg.clone()
            },
            RngStream::derive(4, "user0/channel"),
        )
        .unwrap();
        for n in [0u64, 100, 1000, 20_000] {
            let s = 10f64.powf(ch.shadowing_db(n) / 10.0);
            let (t, p) = ch.snr(n, 3);
            let (t0, p0) = plain.snr(n, 3);
            assert!((t / (t0 * s) - 1.0).abs() < 1e-12 && (p / (p0 * s) - 1.0).abs() < 1e-12);
        }
        assert_eq!(plain.shadowing_db(5), 0.0);
    }

    #[test]
    fn values_do_not_depend_on_evaluation_order() {
        let cfg = OfdmChannelConfig::wipemu();
        // Reference: every bin, sub-bands in order, via snr_all.
        let mut a = channel(&cfg, 7);
        let (mut t, mut p) = (vec![0.0; 25], vec![0.0; 25]);
        let mut reference = Vec::new();
        for n in 0..3000u64 {
            a.snr_all(n, &mut t, &mut p);
            reference.push((t.clone(), p.clone()));
        }
        // Same seed: identical sequence.
        let mut b = channel(&cfg, 7);
        b.snr_all(0, &mut t, &mut p);
        assert_eq!((t.clone(), p.clone()), reference[0]);
        // Skipping bins, sub-bands in reverse and scattered order, occasionally going back.
        let mut c = channel(&cfg, 7);
        for n in [5u64, 6, 130, 131, 400, 399, 1999, 2999, 10] {
            for m in [24usize, 0, 13, 12] {
                assert_eq!(
                    c.snr(n, m),
                    (reference[n as usize].0[m], reference[n as usize].1[m]),
                    "bin {n} sub-band {m}"
                );
            }
        }
        // A different seed gives a different channel.
        let mut d = channel(&cfg, 8);
        assert_ne!(d.snr(0, 0), (reference[0].0[0], reference[0].1[0]));
    }

    #[test]
    fn taps_fade_independently() {
        let ch = channel(&no_shadow(0.0), 9);
        let mut f = ch.faders.clone();
        let (g0, g1) = (f[0].gain(0), f[1].gain(0));
        assert_ne!(g0, g1);
        assert_eq!(ch.grid().bins_per_second(), 1500);
        assert_eq!(ch.n_subbands(), 25);
    }

    #[test]
    fn flat_channel_is_the_same_on_its_band() {
        let cfg = OfdmChannelConfig::flat(10.0, 30.0 / 3.6, 2e9, 200);
        let mut ch = channel(&cfg, 11);
        let mut tap = ch.faders[0].clone();
        for n in 0..100 {
            let (t, _) = ch.snr(n, 0);
            assert!((t - 10.0 * tap.gain(n).norm_sqr()).abs() < 1e-12);
        }
    }
}
