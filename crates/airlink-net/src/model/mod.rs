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

    /// Whether the flows it serves are fixed when it is built (a cell's user table), so that
    /// a change made while the network runs cannot move a flow onto it unless the flow uses it
    /// at some time of the scenario's run. Default: no.
    fn users_fixed(&self) -> bool {
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

/// Refuses a change made while the network runs that moves a flow onto a link whose users are
/// fixed when it is built ([`NetModel::users_fixed`]) and that the flow never crosses over the
/// scenario's run (`paths`, `changes`: its start paths and timed changes).
pub(crate) fn keeps_users(
    t: &sc::topology::Topology,
    paths: &[FlowPath],
    changes: &[TimedChange],
    change: &NetChange,
) -> Result<(), BuildError> {
    let NetChange::Path {
        flow,
        down: Some(down),
        ..
    } = change
    else {
        return Ok(());
    };
    let users = flows_over_run(t.links.len(), paths, changes);
    let stranger = down.iter().map(|&l| l as usize).find(|&l| {
        let model = &t.links[l].model;
        with_model!(model, m => m.users_fixed()) && users[l].binary_search(flow).is_err()
    });
    match stranger {
        None => Ok(()),
        Some(l) => {
            let (name, kind) = (&t.links[l].name, t.links[l].model.kind());
            Err(BuildError(format!(
                "flow {flow} never crosses \"{name}\" in the scenario, and a {kind}'s users are fixed when it is built: expected a path through links the flow uses (a [[change]] in the scenario file that moves it onto \"{name}\" makes it one of its users)"
            )))
        }
    }
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

#[cfg(test)]
mod tests {
    use crate::build::live_change;
    use crate::{FlowPath, NetChange, Network, TimedChange};
    use airlink_engine::Instant;
    use airlink_scenario::{ChangeConfig, FlowRef, Scenario};

    /// Two flows between the same hosts, one through a pipe and one through a cell; a
    /// `[[change]]` moves the first onto the cell at 2 s.
    const MOVED_ONTO_A_CELL: &str =
        include_str!("../../../../tests/scenarios/cell-path-change.toml");

    /// Packets are never sent: only the built network is looked at.
    struct Nothing;

    impl airlink_link::Packet for Nothing {
        fn wire_len(&self) -> u32 {
            0
        }
        fn flip_bit(&mut self, _bit: u64) {}
        fn flow(&self) -> u32 {
            0
        }
    }

    fn scenario(text: &str) -> Scenario {
        let s = Scenario::from_toml(text, "cell-path-change.toml").unwrap();
        crate::build::resolve(&s).unwrap()
    }

    #[test]
    fn a_flow_is_a_user_of_every_link_it_crosses_at_some_time() {
        let paths = [
            FlowPath {
                down: vec![0],
                up: vec![2],
            },
            FlowPath {
                down: vec![1],
                up: vec![2],
            },
        ];
        let moved = |at, flow, down: Option<Vec<u16>>| TimedChange {
            at: Instant::from_nanos(at),
            change: NetChange::Path {
                flow,
                down,
                up: None,
            },
        };
        let changes = [moved(5, 0, Some(vec![1])), moved(9, 1, None)];
        let users = super::flows_over_run(4, &paths, &changes);
        assert_eq!(users, vec![vec![0], vec![0, 1], vec![], vec![]]);
    }

    #[test]
    fn a_cell_has_a_user_for_a_flow_a_timed_change_moves_onto_it() {
        let s = scenario(MOVED_ONTO_A_CELL);
        let net: Network<Nothing> = Network::build(&s).unwrap();
        assert_eq!(net.links[1].model, "cell");
        let t = s.topology().unwrap();
        let users = super::flows_over_run(t.links.len(), &net.paths, &net.changes);
        assert_eq!(users[1], vec![0, 1], "both flows are the cell's users");
    }

    fn move_a_onto_the_cell() -> ChangeConfig {
        ChangeConfig {
            at: airlink_scenario::units::Time(airlink_engine::Duration::ZERO),
            link: None,
            set: None,
            state: None,
            packets: None,
            flow: Some(FlowRef::Name("a".into())),
            path: Some(vec!["cell-down".into()]),
            return_path: None,
        }
    }

    #[test]
    fn a_live_change_onto_a_cell_is_refused_for_a_flow_that_is_not_its_user() {
        let without_change = MOVED_ONTO_A_CELL
            .split("[[change]]")
            .next()
            .unwrap()
            .to_owned();
        let e = live_change(&scenario(&without_change), &move_a_onto_the_cell()).unwrap_err();
        assert!(e.0.contains("flow 0 never crosses \"cell-down\""), "{e}");
        // With the scenario's own change moving it there, flow a is a user: the move is fine.
        let ok = live_change(&scenario(MOVED_ONTO_A_CELL), &move_a_onto_the_cell()).unwrap();
        assert!(matches!(ok, NetChange::Path { flow: 0, .. }));
    }
}
