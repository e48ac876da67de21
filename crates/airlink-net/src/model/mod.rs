//! Each link model in the network's terms, one file each: how it is built from its scenario
//! table, its capacity and queue (what sizes a flow's receive window), the parameters a change
//! may set and their values, the warnings its values deserve. The scenario side of a model
//! (its keys and checks, its name, its own delay) is `airlink-scenario/src/model/`.
//!
//! Which flows use a link over the whole run is computed here once for every model
//! ([`flows_over_run`], from the start paths, every `[[change]]` path change and every hand-off)
//! and handed to its build: a cell's users, a WLAN's routes.
//!
//! To add a model: a file here with a [`NetModel`] impl for its scenario config, and its line
//! in [`with_model!`].

mod cell;
mod gprs;
mod leo;
mod ofdm4g;
mod pipe;
mod trace;
mod wlan;

pub use ofdm4g::channel_config;
pub use wlan::wlan_params;

use crate::build::{BuildError, BuiltLink};
use crate::{FlowPath, LinkId, NetChange, TimedChange};
use airlink_link::{LinkChange, Packet, QueueLimit};
use airlink_scenario as sc;

/// Runs `$body` with `$m` bound to the model's scenario config, whatever the model: the
/// registry, one line per model.
macro_rules! with_model {
    ($model:expr, $m:ident => $body:expr) => {
        match $model {
            sc::LinkModel::Pipe($m) => $body,
            sc::LinkModel::Gprs($m) => $body,
            sc::LinkModel::Trace($m) => $body,
            sc::LinkModel::Leo($m) => $body,
            sc::LinkModel::Ofdm4g($m) => $body,
            sc::LinkModel::Cell($m) => $body,
            sc::LinkModel::Wlan($m) => $body,
        }
    };
}

/// Where a link is built: its names, the scenario and topology it is part of, and the flows
/// that use it over the run.
pub(crate) struct Site<'a> {
    /// Its name in results, and the name its random streams derive from.
    pub name: &'static str,
    /// Where the scenario describes it (`downlink`, `link.NAME`), for messages.
    pub key: String,
    /// Its index in the topology.
    pub id: usize,
    pub scenario: &'a sc::Scenario,
    pub topology: &'a sc::topology::Topology,
    /// Each flow's start paths, and the changes that move them (`[[change]]`s and hand-offs).
    pub paths: &'a [FlowPath],
    pub changes: &'a [TimedChange],
    /// The flows whose packets cross it server to client at some time of the run, in order.
    pub users: &'a [u32],
}

/// A link model in the network's terms, implemented by each model's scenario config.
pub(crate) trait NetModel {
    /// The running model.
    fn build<P: Packet + Send + 'static>(&self, site: &Site) -> Result<BuiltLink<P>, BuildError>;

    /// Its capacity in bit/s (an OFDM link's with its densest modulation, a trace's mean),
    /// `None` for no limit; `key` is where the scenario describes it, for messages.
    fn capacity_bps(&self, key: &str) -> Result<Option<u64>, BuildError>;

    /// Its queue limit (`None`: unbounded).
    fn queue(&self) -> Option<sc::units::QueueLimit>;

    /// Its parameters as configured, in the terms of a change (what `airlink ctl` shows and a
    /// change updates). Default: none.
    fn parameters(&self) -> LinkChange {
        LinkChange::default()
    }

    /// What in its values limits a run in a way its author probably did not mean, one
    /// sentence each; `name` is its key. Default: nothing.
    fn warnings(&self, _name: &str) -> Vec<String> {
        Vec::new()
    }

    /// Whether its users share its capacity (a cell's slots), so that a flow's part is at most
    /// its even share. Default: no.
    fn shared_by_users(&self) -> bool {
        false
    }

    /// Whether netem's impairments (`impair`, `netem`) go after it. Default: yes.
    fn impairable(&self) -> bool {
        true
    }
}

/// Builds one link model (see [`NetModel::build`]).
pub(crate) fn build<P: Packet + Send + 'static>(
    model: &sc::LinkModel,
    site: &Site,
) -> Result<BuiltLink<P>, BuildError> {
    with_model!(model, m => m.build(site))
}

/// A link model's capacity in bit/s (see [`NetModel::capacity_bps`]).
pub fn capacity_bps(model: &sc::LinkModel, key: &str) -> Result<Option<u64>, BuildError> {
    with_model!(model, m => m.capacity_bps(key))
}

/// A model's queue limit (`None`: unbounded).
pub(crate) fn queue(model: &sc::LinkModel) -> Option<sc::units::QueueLimit> {
    with_model!(model, m => m.queue())
}

/// A model's parameters in the terms of a change (see [`NetModel::parameters`]).
pub(crate) fn parameters(model: &sc::LinkModel) -> LinkChange {
    with_model!(model, m => m.parameters())
}

/// A model's warnings (see [`NetModel::warnings`]).
pub(crate) fn warnings(model: &sc::LinkModel, name: &str) -> Vec<String> {
    with_model!(model, m => m.warnings(name))
}

/// Whether a model's users share its capacity (see [`NetModel::shared_by_users`]).
pub(crate) fn shared_by_users(model: &sc::LinkModel) -> bool {
    with_model!(model, m => m.shared_by_users())
}

/// Whether netem's impairments go after a model (see [`NetModel::impairable`]).
pub(crate) fn impairable(model: &sc::LinkModel) -> bool {
    with_model!(model, m => m.impairable())
}

pub(crate) fn queue_limit(q: sc::units::QueueLimit) -> QueueLimit {
    match q {
        sc::units::QueueLimit::Packets(n) => QueueLimit::Packets(n),
        sc::units::QueueLimit::Bytes(b) => QueueLimit::Bytes(b),
    }
}

/// Every path each flow takes over the run: its start paths, then each timed path change's
/// (hand-offs' and `[[change]]`s'); `None`: that direction keeps the path it had.
pub(crate) fn paths_over_run<'a>(
    paths: &'a [FlowPath],
    changes: &'a [TimedChange],
) -> impl Iterator<Item = (u32, Option<&'a [LinkId]>, Option<&'a [LinkId]>)> + 'a {
    let start = paths
        .iter()
        .enumerate()
        .map(|(f, p)| (f as u32, Some(&p.down[..]), Some(&p.up[..])));
    let moved = changes.iter().filter_map(|c| match &c.change {
        NetChange::Path { flow, down, up } => Some((*flow, down.as_deref(), up.as_deref())),
        _ => None,
    });
    start.chain(moved)
}

/// Per link, the flows whose packets cross it server to client at some time of the run (a
/// cell's users), in flow order: a flow a change moves onto a link later is one of its users
/// from the start.
pub fn flows_over_run(links: usize, paths: &[FlowPath], changes: &[TimedChange]) -> Vec<Vec<u32>> {
    let mut flows = vec![Vec::new(); links];
    for (f, down, _) in paths_over_run(paths, changes) {
        for &l in down.unwrap_or_default() {
            flows[l as usize].push(f);
        }
    }
    for f in &mut flows {
        f.sort_unstable();
        f.dedup();
    }
    flows
}
