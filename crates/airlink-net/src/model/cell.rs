//! The TCP-PF study's multi-user cell in the network's terms: its users are the flows that
//! cross it over the whole run ([`super::flows_over_run`]).

use super::{queue_limit, NetModel, Site};
use crate::build::{BuildError, BuiltLink};
use airlink_channel::{CellChannel, CellChannelConfig, Shadowing, CELL_SHADOWING};
use airlink_engine::RngStream;
use airlink_link::{CellDownlink, CellParams, FerModel, Packet, RateSet};
use airlink_scenario as sc;
use airlink_sched::{SchedulerConfig, TcpParams};

/// A cell's downlink whose users are `flows`, in order. Its channel's stream is
/// `NAME.channel` and its own `NAME`: runs that differ only in the scheduler see the same
/// placements, fades, estimation errors and frame error draws.
fn cell<P: Packet + Send + 'static>(
    name: &'static str,
    c: &sc::CellConfig,
    seed: u64,
    key: &str,
    flows: &[u32],
    event_log: bool,
) -> Result<BuiltLink<P>, BuildError> {
    if flows.is_empty() {
        return Err(BuildError(format!("{key}: no flow crosses the cell from its base station: a cell's users are the flows through it")));
    }
    let slots_per_second = (1e9 / c.slot.0.as_nanos() as f64).round() as u64;
    let channel = CellChannelConfig {
        users: flows.len(),
        radius_m: c.radius.0,
        min_distance_m: c.min_distance.0,
        edge_snr_db: c.edge_snr.0,
        speed_mps: c.speed.0,
        carrier_hz: c.carrier.0,
        rayleigh: c.fading,
        shadowing: (c.shadowing_sigma.0 > 0.0).then_some(Shadowing {
            sigma_db: c.shadowing_sigma.0,
            ..CELL_SHADOWING
        }),
        estimation_sigma_db: c.estimation_sigma.0,
        slots_per_second,
        ..CellChannelConfig::study()
    };
    let channel = CellChannel::new(
        &channel,
        RngStream::derive(seed, &format!("{name}.channel")),
    )
    .map_err(|e| BuildError(format!("{key}: {e}")))?;
    let tcp = TcpParams {
        omega: c.omega,
        alpha: c.alpha,
        beta: c.beta,
        phi_in_slots: c.phi_in_slots,
    };
    let rates = RateSet::shannon_gap(
        c.rates.iter().map(|r| r.0).collect(),
        RateSet::EVDO_BANDWIDTH_HZ,
        RateSet::DEFAULT_GAP_DB,
    )
    .map_err(|e| BuildError(format!("{key}.rates: {e}")))?;
    let params = CellParams {
        rates,
        scheduler: match c.scheduler {
            sc::SchedulerName::Rr => SchedulerConfig::RoundRobin,
            sc::SchedulerName::Max => SchedulerConfig::Max,
            sc::SchedulerName::Pf => SchedulerConfig::Pf { omega: c.omega },
            sc::SchedulerName::TcpPf => SchedulerConfig::TcpPf(tcp),
            sc::SchedulerName::TcpMax => SchedulerConfig::TcpMax(tcp),
        },
        fer: match c.frame_errors {
            sc::FrameErrors::Waterfall => FerModel::Waterfall,
            sc::FrameErrors::Fixed => FerModel::Iid(c.frame_error_rate.0),
        },
        queue_limit: c.queue.map(queue_limit),
        random_ties: c.ties == sc::Ties::Random,
        record_slots: event_log,
    };
    let users = flows
        .iter()
        .enumerate()
        .map(|(user, &flow)| (flow, user))
        .collect();
    let link = CellDownlink::new(params, channel, users, RngStream::derive(seed, name))
        .map_err(|e| BuildError(format!("{key}: {e}")))?;
    Ok(BuiltLink {
        name,
        model: "cell",
        link: Box::new(link),
    })
}

impl NetModel for sc::CellConfig {
    fn build<P: Packet + Send + 'static>(&self, site: &Site) -> Result<BuiltLink<P>, BuildError> {
        cell(
            site.name,
            self,
            site.scenario.seed,
            &site.key,
            site.users,
            site.scenario.event_log,
        )
    }

    /// Its fastest rate.
    fn capacity_bps(&self, _key: &str) -> Result<Option<u64>, BuildError> {
        Ok(self.rates.iter().map(|r| r.0).max())
    }

    fn queue(&self) -> Option<sc::units::QueueLimit> {
        self.queue
    }

    fn shared_by_users(&self) -> bool {
        true
    }

    /// Its user table is made when it is built (one channel per user).
    fn users_fixed(&self) -> bool {
        true
    }
}
