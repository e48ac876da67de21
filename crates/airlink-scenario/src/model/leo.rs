//! `[downlink.leo]` / `[link.NAME.leo]`: a LEO satellite access link (the model is
//! `airlink_link::LeoLink`; see its documentation for the geometry and its deviations).

use super::ModelConfig;
use crate::units::{QueueLimit, Rate, Time};
use crate::{check_queue, Invalid};
use airlink_engine::Duration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A LEO satellite access link: a bent pipe through the satellite of a Walker-delta shell that
/// both a user terminal and a ground station see, reassigned at every reconfiguration. Every
/// key has a default, so `[downlink.leo]` alone is Starlink's first shell between London and
/// the Goonhilly Earth Station site (Cornwall).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LeoConfig {
    /// Orbit altitude, km. Default 550 (Starlink shell 1, FCC SAT-MOD-20200417-00037).
    #[serde(default = "d_altitude")]
    pub altitude_km: f64,
    /// Orbit inclination, degrees. Default 53.
    #[serde(default = "d_inclination")]
    pub inclination_deg: f64,
    /// Orbital planes. Default 72.
    #[serde(default = "d_planes")]
    pub planes: u32,
    /// Satellites per plane. Default 22.
    #[serde(default = "d_per_plane")]
    pub sats_per_plane: u32,
    /// Walker phasing factor F (0 to planes − 1). Default 39.
    #[serde(default = "d_phasing")]
    pub phasing: u32,
    /// User terminal latitude, degrees north. Default 51.5074 (London).
    #[serde(default = "d_term_lat")]
    pub terminal_lat: f64,
    /// User terminal longitude, degrees east. Default −0.1278 (London).
    #[serde(default = "d_term_lon")]
    pub terminal_lon: f64,
    /// Ground station latitude, degrees north. Default 50.0481 (Goonhilly, Cornwall).
    #[serde(default = "d_gs_lat")]
    pub ground_station_lat: f64,
    /// Ground station longitude, degrees east. Default −5.1822 (Goonhilly, Cornwall).
    #[serde(default = "d_gs_lon")]
    pub ground_station_lon: f64,
    /// Minimum elevation at both ends, degrees. Default 25 (Starlink's filing).
    #[serde(default = "d_min_el")]
    pub min_elevation_deg: f64,
    /// Time between reconfigurations. Default 15 s (Starlink's global scheduler).
    #[serde(default = "d_interval")]
    pub interval: Time,
    /// The first reconfiguration after the start. Default 12 s: the instants fall at 12, 27,
    /// 42 and 57 s, as Starlink's do past the minute with the run starting on a minute.
    #[serde(default = "d_first")]
    pub first_reconfiguration: Time,
    /// Packets leaving within this time after a reconfiguration that changes satellite are
    /// lost. Default 0 s.
    #[serde(default = "d_outage")]
    pub handover_outage: Time,
    /// Capacity. Default 100 Mbit/s.
    #[serde(default = "d_rate")]
    pub rate: Rate,
    /// Drop-tail queue limit in packets or bytes. Default 1000 packets.
    #[serde(default = "d_queue")]
    pub queue: QueueLimit,
}

fn d_altitude() -> f64 {
    550.0
}
fn d_inclination() -> f64 {
    53.0
}
fn d_planes() -> u32 {
    72
}
fn d_per_plane() -> u32 {
    22
}
fn d_phasing() -> u32 {
    39
}
fn d_term_lat() -> f64 {
    51.5074
}
fn d_term_lon() -> f64 {
    -0.1278
}
fn d_gs_lat() -> f64 {
    50.0481
}
fn d_gs_lon() -> f64 {
    -5.1822
}
fn d_min_el() -> f64 {
    25.0
}
fn d_interval() -> Time {
    Time(Duration::from_secs(15))
}
fn d_first() -> Time {
    Time(Duration::from_secs(12))
}
fn d_outage() -> Time {
    Time(Duration::ZERO)
}
fn d_rate() -> Rate {
    Rate(100_000_000)
}
fn d_queue() -> QueueLimit {
    QueueLimit::Packets(1000)
}

impl LeoConfig {
    /// Checks the values: (key, message).
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let range = |key: &'static str, v: f64, lo: f64, hi: f64| {
            if v.is_finite() && (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err((key, format!("{v}: expected {lo} to {hi}")))
            }
        };
        range("altitude_km", self.altitude_km, 160.0, 2000.0)?;
        range("inclination_deg", self.inclination_deg, 0.0, 180.0)?;
        range("terminal_lat", self.terminal_lat, -90.0, 90.0)?;
        range("terminal_lon", self.terminal_lon, -180.0, 180.0)?;
        range("ground_station_lat", self.ground_station_lat, -90.0, 90.0)?;
        range("ground_station_lon", self.ground_station_lon, -180.0, 180.0)?;
        range("min_elevation_deg", self.min_elevation_deg, 0.0, 90.0)?;
        if !(1..=1000).contains(&self.planes) {
            return Err(("planes", format!("{}: expected 1 to 1000", self.planes)));
        }
        if !(1..=1000).contains(&self.sats_per_plane) || self.planes * self.sats_per_plane > 50_000
        {
            return Err((
                "sats_per_plane",
                format!(
                    "{}: expected 1 to 1000, and at most 50000 satellites in all",
                    self.sats_per_plane
                ),
            ));
        }
        if self.phasing >= self.planes {
            return Err((
                "phasing",
                format!("{}: expected 0 to planes − 1", self.phasing),
            ));
        }
        let min = Duration::from_millis(1);
        if self.interval.0 < min || self.interval.0 > Duration::from_secs(86_400) {
            return Err((
                "interval",
                format!("{}: expected 1 ms to 1 day", self.interval),
            ));
        }
        if self.first_reconfiguration.0 > self.interval.0 {
            return Err((
                "first_reconfiguration",
                format!(
                    "{}: expected at most the interval",
                    self.first_reconfiguration
                ),
            ));
        }
        if self.handover_outage.0 > self.interval.0 {
            return Err((
                "handover_outage",
                format!("{}: expected at most the interval", self.handover_outage),
            ));
        }
        if self.rate.0 == 0 {
            return Err(("rate", "0 bit/s: expected a positive rate".into()));
        }
        Ok(())
    }
}

impl ModelConfig for LeoConfig {
    fn kind(&self) -> &'static str {
        "leo"
    }
    /// The shortest it can be: straight up and straight down.
    fn delay(&self) -> Duration {
        Duration::from_secs_f64(2.0 * self.altitude_km * 1e3 / 299_792_458.0)
    }
    fn check(&self, base: &[&str], min_packet: u64) -> Result<(), Invalid> {
        let l = self;
        let p = |parts: &[&str]| parts.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        l.validate()
            .map_err(|(key, m)| (p(&[base, &["leo", key]].concat()), m))?;
        check_queue(&l.queue, min_packet)
            .map_err(|m| (p(&[base, &["leo", "queue"]].concat()), m))?;
        Ok(())
    }
}
