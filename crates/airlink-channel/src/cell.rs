//! The downlink channels of a multi-user cell (spec C.1, \[S2\] §IV): users placed in a disc,
//! path loss and a link budget set each user's mean SINR, flat Rayleigh fading and optional
//! shadowing move it slot by slot, and the base station sees it through Gaussian estimation
//! noise in dB.
//!
//! For user i in slot n (centre t_n = (n + ½)·T):
//!
//! - placement: distance d_i uniform in area on the annulus \[d_min, R\]
//!   (d = √(d_min² + U·(R² − d_min²)), i.e. R√U conditioned on d ≥ d_min), angle 2πV, both
//!   drawn from substream `"placement"`, user by user;
//! - mean SINR: γ̄_i = SNR_edge + L(R) − L(d_i) dB, with L the path loss ([`PathLoss`]): the
//!   user at the cell edge has SNR_edge;
//! - true SINR: γ_i\[n\] = γ̄_i + S_i(t_n) + 10·log10|h_i(t_n)|² dB, h_i a unit-power Zheng–Xiao
//!   fader (substream `"user{i}/fading"`), S_i AR(1) shadowing if configured (`"user{i}/shadowing"`);
//! - estimated SINR: γ_i\[n\] + σ_est·w, w ~ N(0, 1) from `hashed_normal_pair(n)` of
//!   `"user{i}/estimation"`.
//!
//! Every value is a function of (configuration, stream, user, slot): the same seed gives every
//! scheduler the same placements, fading and estimation noise (common random numbers).
//!
//! | assumption | where |
//! |---|---|
//! | path loss L(d) = 128.1 + 37.6·log10(d/km) dB (3GPP TR 25.942 urban macro at Δh_b = 15 m, 2 GHz); \[S2\] gives none | C.1 (A) |
//! | SNR_edge = 0 dB, no other-cell interference: SINR = SNR | C.1 (A) |
//! | minimum distance 35 m | C.1 (A) |
//! | shadowing off; when on, Gudmundson AR(1) along the user's track at its speed (σ = 8 dB per spec C.1, correlation 0.82 at 100 m from Gudmundson's suburban fit (r)) | C.1 (A), B.5 |
//! | "0.5 dB variance" of the estimation noise read as σ = √0.5 = 0.707 dB; i.i.d. per slot | C.1 |
//! | users do not move in distance (only fading and shadowing see the speed) | (A) |

use std::f64::consts::TAU;

use airlink_engine::RngStream;

use crate::bins::BinGrid;
use crate::fading::{BinnedFader, ZhengXiao, DEFAULT_SINUSOIDS, MIN_SINUSOIDS};
use crate::ofdm::ChannelConfigError;
use crate::shadowing::{Shadowing, ShadowingProcess};
use crate::{doppler_hz, kmh_to_mps};

/// Log-distance path loss L(d) = intercept + slope·log10(d / 1 km) dB.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct PathLoss {
    /// L at 1 km, dB.
    pub intercept_db: f64,
    /// dB per decade of distance.
    pub slope_db: f64,
}

impl PathLoss {
    /// 3GPP TR 25.942 / 36.942 urban macro, 2 GHz, Δh_b = 15 m: 128.1 + 37.6·log10(d/km).
    pub const URBAN_MACRO_2GHZ: PathLoss = PathLoss {
        intercept_db: 128.1,
        slope_db: 37.6,
    };

    /// L(d) in dB at `distance_m` metres.
    pub fn loss_db(&self, distance_m: f64) -> f64 {
        self.intercept_db + self.slope_db * (distance_m / 1000.0).log10()
    }
}

/// Optional shadowing of the cell's users: σ = 8 dB (spec C.1), 0.82 correlation at 100 m.
pub const CELL_SHADOWING: Shadowing = Shadowing {
    sigma_db: 8.0,
    pole: 0.82,
    spacing_m: 100.0,
};

/// Configuration of a cell's channels. Plain data; [`CellChannelConfig::validate`] (also run by
/// [`CellChannel::new`]) checks it.
#[derive(Clone, Debug, PartialEq)]
pub struct CellChannelConfig {
    /// Number of users N (21 in \[S2\]); ≥ 1.
    pub users: usize,
    /// Cell radius R in metres (2 km in \[S2\]).
    pub radius_m: f64,
    /// Smallest user distance in metres (35 m, spec C.1 (A)); in [0, R).
    pub min_distance_m: f64,
    /// Path loss model (spec C.1 (A)).
    pub path_loss: PathLoss,
    /// Mean SINR of a user at the cell edge, dB (0 dB, spec C.1 (A)).
    pub edge_snr_db: f64,
    /// User speed in m/s (30 km/h in \[S2\]).
    pub speed_mps: f64,
    /// Carrier frequency in Hz (2 GHz in \[S2\]).
    pub carrier_hz: f64,
    /// Flat Rayleigh fading (default); `false` keeps every user at its mean SINR (tests,
    /// calibration).
    pub rayleigh: bool,
    /// Sinusoids per fader (16, spec B.2); ≥ 8.
    pub sinusoids: usize,
    /// AR(1) shadowing, or `None` (default) for none.
    pub shadowing: Option<Shadowing>,
    /// Standard deviation of the SINR estimation noise in dB (0.707, \[S2\]'s "0.5 dB variance").
    pub estimation_sigma_db: f64,
    /// Slots per second (200: 5 ms slots in \[S2\]); ≥ 1.
    pub slots_per_second: u64,
}

impl CellChannelConfig {
    /// \[S2\]'s cell with spec C.1's assumptions: 21 users in 2 km, 30 km/h at 2 GHz, 5 ms slots.
    pub fn study() -> Self {
        CellChannelConfig {
            users: 21,
            radius_m: 2000.0,
            min_distance_m: 35.0,
            path_loss: PathLoss::URBAN_MACRO_2GHZ,
            edge_snr_db: 0.0,
            speed_mps: kmh_to_mps(30.0),
            carrier_hz: 2e9,
            rayleigh: true,
            sinusoids: DEFAULT_SINUSOIDS,
            shadowing: None,
            estimation_sigma_db: 0.5f64.sqrt(),
            slots_per_second: 200,
        }
    }

    /// Mean SINR γ̄(d) in dB of a user at `distance_m`: SNR_edge + L(R) − L(d).
    pub fn mean_snr_db(&self, distance_m: f64) -> f64 {
        self.edge_snr_db + self.path_loss.loss_db(self.radius_m)
            - self.path_loss.loss_db(distance_m)
    }

    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), ChannelConfigError> {
        use ChannelConfigError as E;
        if self.users == 0 {
            return Err(E::NoUsers);
        }
        if !(self.radius_m.is_finite() && self.radius_m > 0.0) {
            return Err(E::Radius(self.radius_m));
        }
        if !(self.min_distance_m >= 0.0 && self.min_distance_m < self.radius_m) {
            return Err(E::MinDistance(self.min_distance_m));
        }
        if !self.edge_snr_db.is_finite() {
            return Err(E::MeanSnr(self.edge_snr_db));
        }
        if !(self.speed_mps.is_finite() && self.speed_mps >= 0.0) {
            return Err(E::Speed(self.speed_mps));
        }
        if !(self.carrier_hz.is_finite() && self.carrier_hz > 0.0) {
            return Err(E::Carrier(self.carrier_hz));
        }
        if self.sinusoids < MIN_SINUSOIDS {
            return Err(E::TooFewSinusoids(self.sinusoids));
        }
        if let Some(s) = self.shadowing {
            s.validate()?;
        }
        if !(self.estimation_sigma_db.is_finite() && self.estimation_sigma_db >= 0.0) {
            return Err(E::EstimationSigma(self.estimation_sigma_db));
        }
        if self.slots_per_second == 0 {
            return Err(E::NoBins);
        }
        Ok(())
    }
}

/// Where a user is and its mean SINR.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct CellUser {
    /// Distance from the base station, m.
    pub distance_m: f64,
    /// Direction from the base station, rad.
    pub angle_rad: f64,
    /// γ̄ in dB (before shadowing and fading).
    pub mean_snr_db: f64,
}

#[derive(Clone, Debug)]
struct UserChannel {
    fader: Option<BinnedFader>,
    shadowing: Option<ShadowingProcess>,
    estimation: RngStream,
}

/// The true and estimated SINR of every user of a cell, slot by slot.
///
/// Call contract: [`CellChannel::sinr_db`] is a function of (configuration, stream, user,
/// slot); slots in increasing order are the cheap path.
#[derive(Clone, Debug)]
pub struct CellChannel {
    users: Vec<CellUser>,
    channels: Vec<UserChannel>,
    grid: BinGrid,
    estimation_sigma_db: f64,
}

impl CellChannel {
    /// Places the users and draws their channels from `rng` (the cell's stream) via named
    /// substreams.
    pub fn new(cfg: &CellChannelConfig, rng: RngStream) -> Result<Self, ChannelConfigError> {
        cfg.validate()?;
        let mut place = rng.substream("placement");
        let (r2, d2) = (
            cfg.radius_m * cfg.radius_m,
            cfg.min_distance_m * cfg.min_distance_m,
        );
        let distances: Vec<(f64, f64)> = (0..cfg.users)
            .map(|_| {
                let d = (d2 + place.uniform() * (r2 - d2)).sqrt();
                (d, TAU * place.uniform())
            })
            .collect();
        Self::with_positions(cfg, &distances, rng)
    }

    /// Users at the given (distance m, angle rad) instead of random places; `cfg.users` is
    /// ignored. Distances must be positive.
    pub fn with_positions(
        cfg: &CellChannelConfig,
        positions: &[(f64, f64)],
        rng: RngStream,
    ) -> Result<Self, ChannelConfigError> {
        CellChannelConfig {
            users: positions.len(),
            ..cfg.clone()
        }
        .validate()?;
        if let Some(&(d, _)) = positions.iter().find(|(d, _)| !(d.is_finite() && *d > 0.0)) {
            return Err(ChannelConfigError::MinDistance(d));
        }
        let grid = BinGrid::new(cfg.slots_per_second).ok_or(ChannelConfigError::NoBins)?;
        let fd = doppler_hz(cfg.speed_mps, cfg.carrier_hz);
        let users = positions
            .iter()
            .map(|&(d, a)| CellUser {
                distance_m: d,
                angle_rad: a,
                mean_snr_db: cfg.mean_snr_db(d),
            })
            .collect();
        let channels = (0..positions.len())
            .map(|i| {
                let fader = cfg.rayleigh.then(|| {
                    let mut s = rng.substream(&format!("user{i}/fading"));
                    BinnedFader::new(
                        ZhengXiao::new(fd, cfg.sinusoids, &mut s),
                        cfg.slots_per_second,
                    )
                });
                let shadowing = cfg.shadowing.map(|p| {
                    ShadowingProcess::new(
                        p,
                        cfg.speed_mps,
                        cfg.slots_per_second,
                        rng.substream(&format!("user{i}/shadowing")),
                    )
                });
                UserChannel {
                    fader,
                    shadowing,
                    estimation: rng.substream(&format!("user{i}/estimation")),
                }
            })
            .collect();
        Ok(CellChannel {
            users,
            channels,
            grid,
            estimation_sigma_db: cfg.estimation_sigma_db,
        })
    }

    /// The users' places and mean SINRs.
    pub fn users(&self) -> &[CellUser] {
        &self.users
    }

    /// The slot grid.
    pub fn grid(&self) -> BinGrid {
        self.grid
    }

    /// (true, estimated) SINR in dB of `user` in `slot`.
    pub fn sinr_db(&mut self, user: usize, slot: u64) -> (f64, f64) {
        let ch = &mut self.channels[user];
        let mut db = self.users[user].mean_snr_db;
        if let Some(s) = &mut ch.shadowing {
            db += s.db_at_bin(slot);
        }
        if let Some(f) = &mut ch.fader {
            db += 10.0 * f.gain(slot).norm_sqr().log10();
        }
        let noise = self.estimation_sigma_db * ch.estimation.hashed_normal_pair(slot).0;
        (db, db + noise)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_c_path_loss_vectors() {
        let l = PathLoss::URBAN_MACRO_2GHZ;
        for (d, want) in [(2000.0, 139.42), (500.0, 116.78), (100.0, 90.50)] {
            assert!(
                (l.loss_db(d) - want).abs() < 0.005,
                "L({d}) = {}",
                l.loss_db(d)
            );
        }
        let cfg = CellChannelConfig::study();
        assert_eq!(cfg.mean_snr_db(2000.0), 0.0);
        assert!(
            (cfg.mean_snr_db(200.0) - 37.6).abs() < 1e-9,
            "a decade closer gains the slope"
        );
        assert!((doppler_hz(cfg.speed_mps, cfg.carrier_hz) - 55.594).abs() < 1e-3);
    }

    #[test]
    fn placement_is_uniform_in_area_between_the_minimum_distance_and_the_radius() {
        let mut cfg = CellChannelConfig::study();
        cfg.users = 20_000;
        cfg.rayleigh = false;
        let cell = CellChannel::new(&cfg, RngStream::derive(1, "cell")).unwrap();
        let d: Vec<f64> = cell.users().iter().map(|u| u.distance_m).collect();
        assert!(d.iter().all(|&x| (35.0..=2000.0).contains(&x)));
        // P(d ≤ r) = (r² − d_min²)/(R² − d_min²): check at 0.5, 1 and 1.5 km.
        for r in [500.0, 1000.0, 1500.0] {
            let got = d.iter().filter(|&&x| x <= r).count() as f64 / d.len() as f64;
            let want = (r * r - 35.0 * 35.0) / (2000.0 * 2000.0 - 35.0 * 35.0);
            assert!((got - want).abs() < 0.01, "r {r}: {got} vs {want}");
        }
        // Angles uniform: a quarter in each quadrant.
        let q = cell
            .users()
            .iter()
            .filter(|u| u.angle_rad < TAU / 4.0)
            .count() as f64
            / d.len() as f64;
        assert!((q - 0.25).abs() < 0.01);
    }

    #[test]
    fn fading_is_rayleigh_around_the_mean_and_estimation_noise_has_the_given_sigma() {
        let cfg = CellChannelConfig::study();
        let mut cell =
            CellChannel::with_positions(&cfg, &[(1000.0, 0.0)], RngStream::derive(2, "cell"))
                .unwrap();
        let mean = cfg.mean_snr_db(1000.0);
        let n = 200_000u64;
        let (mut power, mut below, mut err, mut err2) = (0.0, 0u64, 0.0, 0.0);
        for k in 0..n {
            // Slots 0.5 s apart (28 Doppler periods): nearly independent fading samples.
            let (t, e) = cell.sinr_db(0, k * 100);
            let g = 10f64.powf((t - mean) / 10.0);
            power += g;
            below += (g < 0.1) as u64;
            err += e - t;
            err2 += (e - t) * (e - t);
        }
        let power = power / n as f64;
        assert!((power - 1.0).abs() < 0.03, "E|h|² = {power}");
        let p = below as f64 / n as f64;
        assert!((p - 0.09516).abs() < 0.005, "P(|h|² < 0.1) = {p}");
        let (m, s) = (err / n as f64, (err2 / n as f64).sqrt());
        assert!(
            m.abs() < 0.01 && (s - 0.5f64.sqrt()).abs() < 0.01,
            "noise mean {m}, sigma {s}"
        );
    }

    #[test]
    fn a_slot_has_one_value_whatever_was_evaluated_before() {
        let cfg = CellChannelConfig {
            users: 3,
            shadowing: Some(CELL_SHADOWING),
            ..CellChannelConfig::study()
        };
        let mut a = CellChannel::new(&cfg, RngStream::derive(3, "cell")).unwrap();
        let mut b = a.clone();
        let all: Vec<(f64, f64)> = (0..500).map(|n| a.sinr_db(1, n)).collect();
        for n in [7u64, 300, 8, 499, 0] {
            assert_eq!(b.sinr_db(1, n), all[n as usize]);
        }
        let again = CellChannel::new(&cfg, RngStream::derive(3, "cell")).unwrap();
        assert_eq!(again.users(), a.users(), "same seed, same placement");
        let other = CellChannel::new(&cfg, RngStream::derive(4, "cell")).unwrap();
        assert_ne!(other.users(), a.users());
    }

    #[test]
    fn bad_configurations_are_refused() {
        use ChannelConfigError as E;
        let ok = CellChannelConfig::study();
        let cases = [
            (
                CellChannelConfig {
                    users: 0,
                    ..ok.clone()
                },
                E::NoUsers,
            ),
            (
                CellChannelConfig {
                    radius_m: -1.0,
                    ..ok.clone()
                },
                E::Radius(-1.0),
            ),
            (
                CellChannelConfig {
                    min_distance_m: 2000.0,
                    ..ok.clone()
                },
                E::MinDistance(2000.0),
            ),
            (
                CellChannelConfig {
                    estimation_sigma_db: -0.1,
                    ..ok.clone()
                },
                E::EstimationSigma(-0.1),
            ),
            (
                CellChannelConfig {
                    slots_per_second: 0,
                    ..ok.clone()
                },
                E::NoBins,
            ),
            (
                CellChannelConfig {
                    shadowing: Some(Shadowing {
                        pole: 1.0,
                        ..CELL_SHADOWING
                    }),
                    ..ok.clone()
                },
                E::ShadowingPole(1.0),
            ),
        ];
        for (cfg, want) in cases {
            assert_eq!(
                CellChannel::new(&cfg, RngStream::derive(1, "c")).err(),
                Some(want)
            );
        }
        assert_eq!(
            CellChannel::with_positions(&ok, &[(0.0, 0.0)], RngStream::derive(1, "c")).err(),
            Some(E::MinDistance(0.0))
        );
    }
}
