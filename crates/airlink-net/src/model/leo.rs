//! A LEO satellite access link in the network's terms (`airlink_link::LeoLink`).

use super::{NetModel, Site};
use crate::build::{BuildError, BuiltLink};
use airlink_engine::RngStream;
use airlink_link::{LeoLink, LeoParams, Packet, Place, QueueLimit};
use airlink_scenario as sc;

/// The LEO link of `l`. Its constellation's phase is drawn from the run's stream
/// `leo.constellation`, shared by every LEO link of the run, so a downlink and an uplink with
/// the same shell see the same satellites.
fn leo_link<P: Packet + Send + 'static>(
    name: &'static str,
    l: &sc::LeoConfig,
    seed: u64,
) -> BuiltLink<P> {
    let params = LeoParams {
        altitude_m: l.altitude_km * 1e3,
        inclination_deg: l.inclination_deg,
        planes: l.planes,
        sats_per_plane: l.sats_per_plane,
        phasing: l.phasing,
        terminal: Place {
            lat_deg: l.terminal_lat,
            lon_deg: l.terminal_lon,
        },
        ground_station: Place {
            lat_deg: l.ground_station_lat,
            lon_deg: l.ground_station_lon,
        },
        min_elevation_deg: l.min_elevation_deg,
        interval: l.interval.0,
        first_reconfiguration: l.first_reconfiguration.0,
        handover_outage: l.handover_outage.0,
        rate_bps: l.rate.0,
        queue_limit: match l.queue {
            sc::units::QueueLimit::Packets(n) => QueueLimit::Packets(n),
            sc::units::QueueLimit::Bytes(b) => QueueLimit::Bytes(b),
        },
        phase: None,
    };
    BuiltLink {
        name,
        model: "leo",
        link: Box::new(LeoLink::new(
            params,
            RngStream::derive(seed, "leo.constellation"),
        )),
    }
}

impl NetModel for sc::LeoConfig {
    fn build<P: Packet + Send + 'static>(&self, site: &Site) -> Result<BuiltLink<P>, BuildError> {
        Ok(leo_link(site.name, self, site.scenario.seed))
    }

    fn capacity_bps(&self, _key: &str) -> Result<Option<u64>, BuildError> {
        Ok(Some(self.rate.0))
    }

    fn queue(&self) -> Option<sc::units::QueueLimit> {
        Some(self.queue)
    }
}
