//! Log-normal shadow fading as an AR(1) process in distance (spec B.5).
//!
//! Gudmundson's exponential spatial autocorrelation R(Δx) = σ²·a^{|Δx|/Δx₀}, sampled every Δx₀
//! metres, is the AR(1) recursion s_{k+1} = a·s_k + σ√(1−a²)·w_k (dB), w_k ~ N(0, 1),
//! s_0 ~ N(0, σ²). A user moving at v passes a sample every Δx₀/v seconds; between samples the
//! dB value is interpolated linearly. S(t) = 10^{s(t)/10} multiplies the mean SNR.
//!
//! References: \[G91\] Gudmundson, Electron. Lett. 27(23):2145-6, 1991; \[S1\] (Δx₀ = 2 m, a = 0.74,
//! σ = 4 dB).
//!
//! | deviation / assumption | where |
//! |---|---|
//! | \[S1\] Table I says "variance 4 dB", its text "standard deviation": σ = 4 dB is used | B.5 |
//! | linear interpolation in dB between samples; each bin uses its centre time (n + ½)/B | B.5 (A) |
//! | S has median 1 (0 dB), so γ̄ is the *median* SNR when shadowing is on (linear mean +1.84 dB at σ = 4) | B.5 (A) |
//! | samples are drawn sequentially from the shadowing stream; going back past the samples held replays the stream from s_0 (same values, O(k) cost) | (A) |

use airlink_engine::RngStream;

use crate::ofdm::ChannelConfigError;

/// Parameters of AR(1) shadowing.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Shadowing {
    /// Standard deviation σ of the dB process (4 dB in \[S1\]).
    pub sigma_db: f64,
    /// AR(1) pole a: correlation between successive samples, in [0, 1) (0.74 in \[S1\]).
    pub pole: f64,
    /// Distance Δx₀ between samples in metres (2 m in \[S1\]).
    pub spacing_m: f64,
}

impl Shadowing {
    /// WIPEMU's shadowing \[S1\]: σ = 4 dB, a = 0.74 per 2 m.
    pub const WIPEMU: Shadowing = Shadowing {
        sigma_db: 4.0,
        pole: 0.74,
        spacing_m: 2.0,
    };

    /// Checks σ ≥ 0, a in [0, 1) and Δx₀ > 0.
    pub fn validate(&self) -> Result<(), ChannelConfigError> {
        use ChannelConfigError as E;
        if !(self.sigma_db.is_finite() && self.sigma_db >= 0.0) {
            return Err(E::ShadowingSigma(self.sigma_db));
        }
        if !(0.0..1.0).contains(&self.pole) {
            return Err(E::ShadowingPole(self.pole));
        }
        if !(self.spacing_m.is_finite() && self.spacing_m > 0.0) {
            return Err(E::ShadowingSpacing(self.spacing_m));
        }
        Ok(())
    }

    /// Standard deviation of the AR(1) innovation, σ√(1 − a²) dB.
    pub fn innovation_sigma_db(&self) -> f64 {
        self.sigma_db * (1.0 - self.pole * self.pole).sqrt()
    }

    /// Correlation coefficient of the dB process at distance `distance_m`: a^{|d|/Δx₀}.
    pub fn correlation_at(&self, distance_m: f64) -> f64 {
        self.pole.powf(distance_m.abs() / self.spacing_m)
    }

    /// Distance at which the correlation falls to 1/e: −Δx₀/ln a.
    pub fn decorrelation_distance_m(&self) -> f64 {
        -self.spacing_m / self.pole.ln()
    }
}

/// The shadowing of one user along its track, indexed by bin.
///
/// Call contract: [`ShadowingProcess::db_at_bin`] is a function of the bin alone. Non-decreasing
/// bins cost O(1) amortised; going back more than one sample replays the stream.
#[derive(Clone, Debug)]
pub struct ShadowingProcess {
    params: Shadowing,
    innovation: f64,
    /// Samples passed per bin: v/(Δx₀·B).
    samples_per_bin: f64,
    bins_per_second: u64,
    /// The stream as handed in, for replays.
    origin: RngStream,
    rng: RngStream,
    /// Index of `lo`; `hi` is sample `k + 1`.
    k: u64,
    lo: f64,
    hi: f64,
    started: bool,
}

impl ShadowingProcess {
    /// Shadowing with `params` for a user at `speed_mps` on a grid of `bins_per_second` bins,
    /// drawing from `rng` (its own stream). Parameters are assumed valid (the channel
    /// configuration checks them).
    pub fn new(params: Shadowing, speed_mps: f64, bins_per_second: u64, rng: RngStream) -> Self {
        debug_assert!(
            (0.0..1.0).contains(&params.pole) && params.spacing_m > 0.0 && bins_per_second > 0
        );
        ShadowingProcess {
            params,
            innovation: params.innovation_sigma_db(),
            samples_per_bin: speed_mps / (params.spacing_m * bins_per_second as f64),
            bins_per_second,
            origin: rng.clone(),
            rng,
            k: 0,
            lo: 0.0,
            hi: 0.0,
            started: false,
        }
    }

    /// Shadowing in dB at the centre of bin `n`.
    pub fn db_at_bin(&mut self, n: u64) -> f64 {
        let u = (n as f64 + 0.5) * self.samples_per_bin;
        let k = u.floor();
        let frac = u - k;
        self.seek(k as u64);
        self.lo + frac * (self.hi - self.lo)
    }

    /// The k-th AR(1) sample in dB (taken at k·Δx₀ along the track).
    pub fn sample_db(&mut self, k: u64) -> f64 {
        self.seek(k);
        self.lo
    }

    /// Seconds between samples, Δx₀/v (infinite at speed 0).
    pub fn sample_period_s(&self) -> f64 {
        1.0 / (self.samples_per_bin * self.bins_per_second as f64)
    }

    /// The parameters.
    pub fn params(&self) -> Shadowing {
        self.params
    }

    /// Makes `lo`, `hi` samples k and k + 1.
    fn seek(&mut self, k: u64) {
        if !self.started || k < self.k {
            self.rng = self.origin.clone();
            self.lo = self.params.sigma_db * self.rng.normal();
            self.hi = self.next(self.lo);
            self.k = 0;
            self.started = true;
        }
        while self.k < k {
            self.lo = self.hi;
            self.hi = self.next(self.lo);
            self.k += 1;
        }
    }

    #[inline]
    fn next(&mut self, s: f64) -> f64 {
        self.params.pole * s + self.innovation * self.rng.normal()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn close(got: f64, want: f64, abs: f64) {
        assert!((got - want).abs() <= abs, "got {got}, want {want}");
    }

    #[test]
    fn ar1_vectors() {
        let s = Shadowing::WIPEMU;
        close(s.innovation_sigma_db(), 2.6904, 5e-5);
        close(s.decorrelation_distance_m(), 6.64, 5e-3);
        close(s.correlation_at(10.0), 0.2219, 5e-5);
        close(s.correlation_at(-2.0), 0.74, 1e-15);
    }

    #[test]
    fn simulated_variance_and_correlation() {
        let mut p = ShadowingProcess::new(
            Shadowing::WIPEMU,
            20.0,
            1500,
            RngStream::derive(1, "shadow"),
        );
        let n = 400_000u64;
        let (mut m, mut v, mut c1) = (0.0, 0.0, 0.0);
        let mut prev = p.sample_db(0);
        for k in 0..n {
            let x = p.sample_db(k);
            m += x;
            v += x * x;
            if k > 0 {
                c1 += x * prev;
            }
            prev = x;
        }
        let mean = m / n as f64;
        let var = v / n as f64 - mean * mean;
        // Effective sample size ≈ n(1−a)/(1+a) ≈ 60 000: σ(var)/var ≈ 0.6 %.
        assert!((var / 16.0 - 1.0).abs() < 0.03, "variance {var}");
        assert!(mean.abs() < 0.1, "mean {mean}");
        let rho = (c1 / (n - 1) as f64 - mean * mean) / var;
        assert!((rho - 0.74).abs() < 0.01, "lag-1 correlation {rho}");
    }

    #[test]
    fn interpolates_between_samples_at_bin_centres() {
        // 75 km/h, 1500 bins/s: a sample every 0.096 s = 144 bins.
        let v = 75.0 / 3.6;
        let mut p =
            ShadowingProcess::new(Shadowing::WIPEMU, v, 1500, RngStream::derive(2, "shadow"));
        close(p.sample_period_s(), 0.096, 1e-12);
        let mut q = p.clone();
        let (s3, s4, s5) = (q.sample_db(3), q.sample_db(4), q.sample_db(5));
        // Bin 3·144 + 71 has its centre 71.5 bins past sample 3.
        close(
            p.db_at_bin(3 * 144 + 71),
            s3 + (s4 - s3) * 71.5 / 144.0,
            1e-9,
        );
        close(p.db_at_bin(4 * 144), s4 + (s5 - s4) * 0.5 / 144.0, 1e-9);
    }

    #[test]
    fn values_depend_only_on_the_bin() {
        let rng = RngStream::derive(3, "shadow");
        let mut fwd = ShadowingProcess::new(Shadowing::WIPEMU, 30.0, 1500, rng.clone());
        let seq: Vec<f64> = (0..5000).map(|n| fwd.db_at_bin(n)).collect();
        let mut jumpy = ShadowingProcess::new(Shadowing::WIPEMU, 30.0, 1500, rng);
        for n in [4999u64, 17, 18, 2500, 0, 4000] {
            assert_eq!(jumpy.db_at_bin(n), seq[n as usize]);
        }
        // Standing still: one sample forever.
        let mut still =
            ShadowingProcess::new(Shadowing::WIPEMU, 0.0, 1500, RngStream::derive(3, "shadow"));
        assert_eq!(still.db_at_bin(0), still.db_at_bin(1_000_000));
        assert!(still.sample_period_s().is_infinite());
    }
}
