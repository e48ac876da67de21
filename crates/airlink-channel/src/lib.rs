//! Channel layer of airlink: time-varying fading channels as seen by one user, per bin (slot)
//! and sub-band (spec section B).
//!
//! What this layer is: Doppler and Clarke statistics ([`doppler_hz`], [`level_crossing_rate`],
//! …); power-delay profiles ([`TapProfile`], with the WIPEMU, TUx, COST 207 TU12 and flat
//! presets); the Zheng–Xiao sum-of-sinusoids Rayleigh fader ([`ZhengXiao`], sampled on a bin
//! grid by [`BinnedFader`]); AR(1) log-normal shadowing ([`ShadowingProcess`]); and, combining
//! them, [`OfdmChannel`]: the true and predicted SNR of every (bin, sub-band) of one user; and
//! [`CellChannel`]: the true and estimated SINR of every user of a multi-user cell per slot
//! (placement, path loss, flat fading).
//!
//! What it must not do: read a clock, draw from anything but the [`RngStream`] it is handed
//! (each part from a named substream), do I/O, or know about modulation, frames or queues
//! (`airlink-phy` and `airlink-link` own those). Time enters only as a bin index on an exact
//! integer grid ([`BinGrid`]).
//!
//! Driver contract: the link asks [`OfdmChannel::snr`] / [`OfdmChannel::snr_all`] for the bins
//! it uses, normally with non-decreasing bin indices. Every value is a function of (config,
//! stream, bin, sub-band) only, so skipping bins or changing the order of sub-bands never
//! changes the values of the bins that are evaluated (common random numbers across compared
//! schedulers or protocols).
//!
//! References: `spec/models.md` section B; \[S1\] Alfredsson/Brunstrom/Sternad (WIPEMU);
//! \[ZX\] Zheng & Xiao 2003; \[G91\] Gudmundson 1991; \[MW\] MathWorks `stdchan.m` (COST 207,
//! 3GPP TR 25.943 profiles). Each model module lists its deviations.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod bins;
mod cell;
mod doppler;
mod fading;
mod ofdm;
mod profile;
mod shadowing;

pub use bins::BinGrid;
pub use cell::{CellChannel, CellChannelConfig, CellUser, PathLoss, CELL_SHADOWING};
/// A complex gain `re + j·im` (num-complex's `Complex64`).
pub type Complex = num_complex::Complex64;
pub use doppler::{
    average_fade_duration, bessel_j0, clarke_autocorrelation, doppler_hz, fade_probability,
    kmh_to_mps, level_crossing_rate, SPEED_OF_LIGHT_MPS,
};
pub use fading::{BinnedFader, ZhengXiao, ANCHOR_INTERVAL, DEFAULT_SINUSOIDS, MIN_SINUSOIDS};
pub use ofdm::{ChannelConfigError, OfdmChannel, OfdmChannelConfig, PredictionModel};
pub use profile::{ProfileError, TapProfile, WIPEMU_TU12_DB};
pub use shadowing::{Shadowing, ShadowingProcess};
