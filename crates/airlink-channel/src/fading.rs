//! Rayleigh fading by a sum of sinusoids: the Zheng–Xiao generator (spec B.2), evaluated on a
//! uniform bin grid with rotating phasors.
//!
//! One [`ZhengXiao`] realisation is h(t) = √(2/M)·Σ_{n=1..M} e^{jψ_n}·cos(ω_d·t·cos α_n + φ),
//! α_n = (2πn − π + θ)/(4M), with θ, φ, ψ_n i.i.d. U[−π, π) drawn once from the tap's stream.
//! E|h|² = 1 and Re E[h(t)h*(t+τ)] = J0(ω_d τ) over realisations.
//!
//! [`BinnedFader`] samples it at bin centres t_n = (n + ½)/B (B bins per second). Instead of M
//! cosines per bin it keeps the phasors c_k = e^{j(ω_k t_n + φ)} and multiplies each by the
//! fixed step e^{jω_k/B} per bin (Re c_k is the cosine). Every [`ANCHOR_INTERVAL`] bins the
//! phasors are recomputed directly ("anchors"), which bounds rounding drift, makes a jump over
//! skipped bins cost at most one anchor plus `ANCHOR_INTERVAL − 1` steps, and makes the value
//! of bin n a function of n alone: the same sequence of operations (anchor ⌊n/K⌋·K, then
//! n mod K steps) produces it whichever bins were evaluated before.
//!
//! References: \[ZX\] Zheng & Xiao, IEEE Trans. Commun. 51(6) 2003, eq. (21), as coded in
//! `mattia-lecci/JakesProject` (`ZhengXiao2003Simulator.m`); Pop & Beaulieu 2001 (why not
//! deterministic Jakes).
//!
//! | deviation / assumption | where |
//! |---|---|
//! | unit *total* power (the paper normalises each rail to unit variance) | B.2 |
//! | draw order per tap stream: θ, φ, ψ_1..ψ_M | (A) |
//! | anchor phases θ_k·(n + ½) + φ are computed in f64: at n ≈ 10⁹ bins (a week at 1500 bins/s) the phase rounding is ≈ 1e-7 rad, far below any modelled effect | (A) |
//! | speed 0 gives a constant (not Rayleigh-distributed across time) gain per realisation | (A) |

use airlink_engine::RngStream;
use std::f64::consts::{PI, TAU};

use crate::Complex;

/// Sinusoids per generator (spec B.2: M = 16).
pub const DEFAULT_SINUSOIDS: usize = 16;
/// Fewest sinusoids accepted by the channel configuration (spec B.2: M ≥ 8).
pub const MIN_SINUSOIDS: usize = 8;
/// Bins between direct re-evaluations of the phasors.
pub const ANCHOR_INTERVAL: u64 = 128;

/// One realisation of the Zheng–Xiao sum-of-sinusoids Rayleigh fader (continuous time).
#[derive(Clone, Debug)]
pub struct ZhengXiao {
    doppler_hz: f64,
    /// ω_d·cos α_n, rad/s.
    omega: Vec<f64>,
    /// Common phase φ.
    phi: f64,
    /// √(2/M)·e^{jψ_n}, split into rails.
    w_re: Vec<f64>,
    w_im: Vec<f64>,
}

impl ZhengXiao {
    /// Draws a realisation with `sinusoids` terms (M ≥ 1) and maximum Doppler `doppler_hz` from
    /// `rng` (one tap's stream): θ, φ, then ψ_1..ψ_M.
    pub fn new(doppler_hz: f64, sinusoids: usize, rng: &mut RngStream) -> Self {
        assert!(sinusoids > 0, "a sum of sinusoids needs at least one term");
        let mut u = || -PI + TAU * rng.uniform();
        let theta = u();
        let phi = u();
        let m = sinusoids as f64;
        let amp = (2.0 / m).sqrt();
        let (mut omega, mut w_re, mut w_im) = (Vec::new(), Vec::new(), Vec::new());
        for n in 1..=sinusoids {
            let alpha = (TAU * n as f64 - PI + theta) / (4.0 * m);
            omega.push(TAU * doppler_hz * alpha.cos());
            let (s, c) = u().sin_cos();
            w_re.push(amp * c);
            w_im.push(amp * s);
        }
        ZhengXiao {
            doppler_hz,
            omega,
            phi,
            w_re,
            w_im,
        }
    }

    /// h(t) by direct evaluation (M cosines).
    pub fn gain_at(&self, t_s: f64) -> Complex {
        let mut h = Complex::new(0.0, 0.0);
        for k in 0..self.omega.len() {
            let c = (self.omega[k] * t_s + self.phi).cos();
            h += Complex::new(self.w_re[k] * c, self.w_im[k] * c);
        }
        h
    }

    /// Number of sinusoids M.
    pub fn sinusoids(&self) -> usize {
        self.omega.len()
    }

    /// Maximum Doppler frequency f_d in Hz.
    pub fn doppler_hz(&self) -> f64 {
        self.doppler_hz
    }
}

/// A [`ZhengXiao`] realisation sampled at bin centres (n + ½)/B by rotating phasors.
///
/// Call contract: [`BinnedFader::gain`] accepts any bin in any order and always returns the
/// same value for the same bin; non-decreasing bins are cheapest (one step per bin), a jump
/// costs at most one anchor and `ANCHOR_INTERVAL − 1` steps.
#[derive(Clone, Debug)]
pub struct BinnedFader {
    zx: ZhengXiao,
    /// ω_k/B: phase advance per bin.
    step_rad: Vec<f64>,
    /// e^{jω_k/B}.
    r_re: Vec<f64>,
    r_im: Vec<f64>,
    /// Phasors e^{j(ω_k (bin + ½)/B + φ)} of bin `bin`.
    c_re: Vec<f64>,
    c_im: Vec<f64>,
    bin: u64,
    valid: bool,
}

impl BinnedFader {
    /// Samples `zx` on a grid of `bins_per_second` bins per second (> 0).
    pub fn new(zx: ZhengXiao, bins_per_second: u64) -> Self {
        assert!(bins_per_second > 0, "bins_per_second must be positive");
        let step_rad: Vec<f64> = zx
            .omega
            .iter()
            .map(|w| w / bins_per_second as f64)
            .collect();
        let (r_im, r_re) = step_rad.iter().map(|s| s.sin_cos()).unzip();
        let m = zx.sinusoids();
        BinnedFader {
            zx,
            step_rad,
            r_re,
            r_im,
            c_re: vec![0.0; m],
            c_im: vec![0.0; m],
            bin: 0,
            valid: false,
        }
    }

    /// The complex gain of bin `n`.
    #[inline]
    pub fn gain(&mut self, n: u64) -> Complex {
        let anchor = n - n % ANCHOR_INTERVAL;
        if !self.valid || n < self.bin || self.bin < anchor {
            self.set_anchor(anchor);
        }
        while self.bin < n {
            self.rotate();
        }
        self.output()
    }

    /// The gain of bin `n` by direct evaluation of the same phase θ_k·(n + ½) + φ as an anchor
    /// (reference for tests; M cosines).
    pub fn gain_direct(&self, n: u64) -> Complex {
        let t = n as f64 + 0.5;
        let mut h = Complex::new(0.0, 0.0);
        for k in 0..self.step_rad.len() {
            let c = (self.step_rad[k] * t + self.zx.phi).cos();
            h += Complex::new(self.zx.w_re[k] * c, self.zx.w_im[k] * c);
        }
        h
    }

    /// The underlying realisation.
    pub fn generator(&self) -> &ZhengXiao {
        &self.zx
    }

    fn set_anchor(&mut self, anchor: u64) {
        let t = anchor as f64 + 0.5;
        for k in 0..self.step_rad.len() {
            let (s, c) = (self.step_rad[k] * t + self.zx.phi).sin_cos();
            self.c_re[k] = c;
            self.c_im[k] = s;
        }
        self.bin = anchor;
        self.valid = true;
    }

    #[inline]
    fn rotate(&mut self) {
        // Zipped iterators: no bounds checks, so the loop vectorises.
        let phasors = self.c_re.iter_mut().zip(self.c_im.iter_mut());
        for ((cr, ci), (rr, ri)) in phasors.zip(self.r_re.iter().zip(&self.r_im)) {
            let (a, b) = (*cr, *ci);
            *cr = a * rr - b * ri;
            *ci = a * ri + b * rr;
        }
        self.bin += 1;
    }

    #[inline]
    fn output(&self) -> Complex {
        // Four partial sums per rail: a single running sum is a chain of dependent additions
        // that dominated the per-bin cost.
        let (mut re, mut im) = ([0.0; 4], [0.0; 4]);
        let chunks = self
            .c_re
            .chunks_exact(4)
            .zip(self.zx.w_re.chunks_exact(4))
            .zip(self.zx.w_im.chunks_exact(4));
        for ((c, wr), wi) in chunks {
            for j in 0..4 {
                re[j] += wr[j] * c[j];
                im[j] += wi[j] * c[j];
            }
        }
        let tail = self.c_re.len() / 4 * 4;
        for k in tail..self.c_re.len() {
            re[0] += self.zx.w_re[k] * self.c_re[k];
            im[0] += self.zx.w_im[k] * self.c_re[k];
        }
        Complex::new(
            (re[0] + re[1]) + (re[2] + re[3]),
            (im[0] + im[1]) + (im[2] + im[3]),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doppler::{clarke_autocorrelation, doppler_hz, kmh_to_mps, level_crossing_rate};

    fn fd() -> f64 {
        doppler_hz(kmh_to_mps(75.0), 1.9e9)
    }

    fn fader(seed: u64, bps: u64) -> BinnedFader {
        let mut rng = RngStream::derive(seed, "fading-test");
        BinnedFader::new(ZhengXiao::new(fd(), DEFAULT_SINUSOIDS, &mut rng), bps)
    }

    #[test]
    fn rotation_tracks_direct_evaluation_over_a_million_bins() {
        let mut f = fader(1, 1500);
        let zx = f.generator().clone();
        let mut worst: f64 = 0.0;
        for n in 0..1_000_000u64 {
            let g = f.gain(n);
            if n % 10 == 0 || n > 999_000 {
                // Against the continuous-time formula at t = (n + ½)/B.
                let d = zx.gain_at((n as f64 + 0.5) / 1500.0);
                worst = worst.max((g - d).norm_sqr().sqrt());
            }
        }
        assert!(worst <= 1e-9, "worst deviation {worst:e}");
    }

    #[test]
    fn a_bin_has_one_value_whatever_was_evaluated_before() {
        let mut seq = fader(2, 1500);
        let all: Vec<Complex> = (0..2000).map(|n| seq.gain(n)).collect();
        let mut skip = fader(2, 1500);
        for n in [5u64, 6, 130, 129, 900, 1999, 0, 1000, 1001, 1500] {
            assert_eq!(skip.gain(n), all[n as usize], "bin {n}");
        }
        // Within floating-point rounding of the direct formula.
        assert!((all[1777] - seq.gain_direct(1777)).norm_sqr() < 1e-26);
    }

    #[test]
    fn unit_power_and_clarke_autocorrelation() {
        // 2000 realisations × 20 start times; lags 2/3 ms, 1 ms and 5 ms (bins of 1/3 ms).
        let bps = 3000;
        let lags = [(2u64, 0.92498), (3, 0.83520), (15, -0.38329)];
        let (mut power, mut corr, mut count) = (0.0, [0.0; 3], 0.0);
        for seed in 0..2000 {
            let mut f = fader(1000 + seed, bps);
            for start in 0..20u64 {
                let n0 = start * 1000;
                let h0 = f.gain(n0);
                power += h0.norm_sqr();
                for (i, &(lag, _)) in lags.iter().enumerate() {
                    corr[i] += (h0.conj() * f.gain(n0 + lag)).re;
                }
                count += 1.0;
            }
        }
        let power = power / count;
        assert!((power - 1.0).abs() < 0.03, "E|h|² = {power}");
        for (i, &(lag, want)) in lags.iter().enumerate() {
            let got = corr[i] / count;
            let exact = clarke_autocorrelation(fd(), lag as f64 / bps as f64);
            assert!((exact - want).abs() < 1e-5);
            assert!((got - want).abs() < 0.03, "lag {lag}: {got} vs {want}");
        }
    }

    #[test]
    fn simulated_level_crossing_rate() {
        // Upward crossings of the rms level (ρ = 0 dB) and of −10 dB, sampled at 40 kHz
        // (≈ 300 samples per Doppler period), 120 realisations × 0.5 s (≈ 7300 crossings at 0 dB).
        let bps = 40_000;
        let duration_bins = bps / 2;
        let rhos = [1.0f64, 10f64.powf(-0.5)];
        let mut crossings = [0u64; 2];
        let realisations = 120;
        for seed in 0..realisations {
            let mut f = fader(5000 + seed, bps);
            let mut below = [false; 2];
            for n in 0..duration_bins {
                let p = f.gain(n).norm_sqr();
                for (i, rho) in rhos.iter().enumerate() {
                    let b = p < rho * rho;
                    if n > 0 && below[i] && !b {
                        crossings[i] += 1;
                    }
                    below[i] = b;
                }
            }
        }
        for (i, &rho) in rhos.iter().enumerate() {
            let got = crossings[i] as f64 / (realisations as f64 * 0.5);
            let want = level_crossing_rate(rho, fd());
            assert!(
                (got / want - 1.0).abs() < 0.05,
                "rho {rho}: {got}/s vs {want}/s"
            );
        }
    }
}
