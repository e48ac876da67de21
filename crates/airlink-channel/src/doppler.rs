//! Doppler frequency and the Clarke (isotropic scattering) statistics of a Rayleigh fader
//! (spec B.1): the targets the sum-of-sinusoids generator is tested against.
//!
//! References: Clarke, BSTJ 1968; Jakes, *Microwave Mobile Communications*, 1974 (level-crossing
//! rate and fade duration); `libm::j0` (FreeBSD msun / musl) for the Bessel function.
//!
//! | assumption | where |
//! |---|---|
//! | c = 299 792 458 m/s; ρ is an *amplitude* ratio (threshold / rms envelope): ρ = 0 dB ⇔ ρ = 1, −10 dB ⇔ ρ² = 0.1 | B.1 |

use std::f64::consts::TAU;

/// Speed of light in vacuum, m/s.
pub const SPEED_OF_LIGHT_MPS: f64 = 299_792_458.0;

/// Maximum Doppler shift f_d = v·f_c/c in Hz for speed `speed_mps` (m/s) and carrier `carrier_hz`.
#[inline]
pub fn doppler_hz(speed_mps: f64, carrier_hz: f64) -> f64 {
    speed_mps * carrier_hz / SPEED_OF_LIGHT_MPS
}

/// km/h to m/s.
#[inline]
pub fn kmh_to_mps(kmh: f64) -> f64 {
    kmh / 3.6
}

/// Bessel function of the first kind, order 0.
#[inline]
pub fn bessel_j0(x: f64) -> f64 {
    libm::j0(x)
}

/// Normalised autocorrelation of a unit-power Clarke fader at lag `tau_s`: J0(2π·f_d·τ).
#[inline]
pub fn clarke_autocorrelation(doppler_hz: f64, tau_s: f64) -> f64 {
    bessel_j0(TAU * doppler_hz * tau_s)
}

/// Level-crossing rate (crossings per second, one direction) of a Rayleigh envelope at
/// amplitude ratio `rho` = threshold / rms: N_R = √(2π)·f_d·ρ·e^{−ρ²}.
#[inline]
pub fn level_crossing_rate(rho: f64, doppler_hz: f64) -> f64 {
    TAU.sqrt() * doppler_hz * rho * (-rho * rho).exp()
}

/// Probability that the envelope is below `rho`·rms: P(|h|² < ρ²) = 1 − e^{−ρ²}.
#[inline]
pub fn fade_probability(rho: f64) -> f64 {
    -(-rho * rho).exp_m1()
}

/// Average fade duration (s) below amplitude ratio `rho`: (e^{ρ²} − 1)/(ρ·f_d·√(2π)), which is
/// [`fade_probability`] / [`level_crossing_rate`].
#[inline]
pub fn average_fade_duration(rho: f64, doppler_hz: f64) -> f64 {
    (rho * rho).exp_m1() / (rho * doppler_hz * TAU.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn close(got: f64, want: f64, rel: f64) {
        assert!(((got - want) / want).abs() <= rel, "got {got}, want {want}");
    }

    const FD_WIPEMU: f64 = 132.036;

    #[test]
    fn doppler_vectors() {
        close(doppler_hz(kmh_to_mps(75.0), 1.9e9), 132.036, 5e-6);
        close(doppler_hz(kmh_to_mps(100.0), 1.9e9), 176.048, 5e-6);
        close(doppler_hz(kmh_to_mps(30.0), 2.0e9), 55.594, 1e-5);
    }

    #[test]
    fn bessel_vectors() {
        close(
            clarke_autocorrelation(FD_WIPEMU, 2.0 / 3.0 * 1e-3),
            0.92498,
            1e-5,
        );
        close(clarke_autocorrelation(FD_WIPEMU, 1e-3), 0.83520, 1e-5);
        close(clarke_autocorrelation(FD_WIPEMU, 5e-3), -0.38329, 1e-4);
        assert_eq!(bessel_j0(0.0), 1.0);
    }

    #[test]
    fn lcr_and_afd_vectors() {
        let rho_0db = 1.0;
        let rho_m10db = 10f64.powf(-10.0 / 20.0);
        close(level_crossing_rate(rho_0db, FD_WIPEMU), 121.76, 1e-4);
        close(average_fade_duration(rho_0db, FD_WIPEMU), 5.19e-3, 1e-3);
        close(level_crossing_rate(rho_m10db, FD_WIPEMU), 94.70, 1e-4);
        close(average_fade_duration(rho_m10db, FD_WIPEMU), 1.005e-3, 1e-3);
        close(fade_probability(rho_m10db), 0.09516, 1e-4);
        // AFD · LCR = P(fade).
        for rho in [0.1, 0.5, 1.0, 2.0] {
            close(
                average_fade_duration(rho, 50.0) * level_crossing_rate(rho, 50.0),
                fade_probability(rho),
                1e-12,
            );
        }
    }
}
