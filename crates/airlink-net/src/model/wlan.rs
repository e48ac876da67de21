//! An 802.11g WLAN in the network's terms: its stations over the whole run (those it starts
//! with and those hand-offs bring) and each flow's route across it, from the flow's start
//! paths and every path change ([`super::paths_over_run`]).

use super::{paths_over_run, queue_limit, NetModel, Site};
use crate::build::{BuildError, BuiltLink};
use crate::{FlowPath, LinkId, TimedChange};
use airlink_engine::{Instant, RngStream};
use airlink_link::{
    bianchi_saturation_bps, Association, Attachment, Packet, WlanLink, WlanParams, WlanRoute,
};
use airlink_scenario as sc;
use std::collections::HashMap;

/// The WLAN parameters of a scenario's `[link.NAME.wlan]`.
pub fn wlan_params(w: &sc::WlanConfig) -> WlanParams {
    WlanParams {
        phy_rate_bps: w.phy_rate.0,
        ack_rate_bps: w.basic_rate.0,
        slot: w.slot.0,
        cw_min: w.cw_min,
        cw_max: w.cw_max,
        retry_limit: w.retry_limit,
        frame_error_rate: w.frame_error_rate.0,
        queue_limit: Some(queue_limit(w.queue)),
        ..WlanParams::default()
    }
}

/// WLAN `l` of the topology: its stations are those it starts with and those hand-offs bring;
/// each flow whose path crosses it (at the start or after a change) has its route there.
fn wlan<P: Packet + Send + 'static>(
    s: &sc::Scenario,
    t: &sc::topology::Topology,
    paths: &[FlowPath],
    changes: &[TimedChange],
    l: usize,
    name: &'static str,
) -> Result<BuiltLink<P>, BuildError> {
    let link = &t.links[l];
    let key = link.key.join(".");
    let sc::LinkModel::Wlan(w) = &link.model else {
        unreachable!("a WLAN")
    };
    // Hops are found with every WLAN's stations over the whole run.
    let mut all = t.links.clone();
    for x in all
        .iter_mut()
        .filter(|x| matches!(x.model, sc::LinkModel::Wlan(_)))
    {
        x.stations = x.all_stations(s);
    }
    let stations = &all[l].stations;
    let attach = |host: &str| match stations.iter().position(|h| h == host) {
        Some(i) => Attachment::Station(i as u32),
        None => Attachment::Wired,
    };
    let mut routes: HashMap<u32, WlanRoute> = HashMap::new();
    for (f, down, up) in paths_over_run(paths, changes) {
        let flow = &s.flow[f as usize];
        let (server, client) = (
            flow.server.as_deref().unwrap_or("server"),
            flow.client.as_deref().unwrap_or("client"),
        );
        let indices = |p: Option<&[LinkId]>| {
            p.unwrap_or_default()
                .iter()
                .map(|&l| l as usize)
                .collect::<Vec<_>>()
        };
        let (down, up) = (indices(down), indices(up));
        let hops = sc::topology::path_hosts(&all, &down, server, client)
            .into_iter()
            .zip(down.iter())
            .map(|((a, b), &k)| (k, a, b));
        let back = sc::topology::path_hosts(&all, &up, client, server)
            .into_iter()
            .zip(up.iter())
            .map(|((a, b), &k)| (k, b, a));
        for (_, server_side, client_side) in hops.chain(back).filter(|h| h.0 == l) {
            let route = WlanRoute {
                server: attach(&server_side),
                client: attach(&client_side),
            };
            if *routes.entry(f).or_insert(route) != route {
                return Err(BuildError(format!("{key}: flow {f} crosses the WLAN between different hosts on its two paths: expected one route")));
            }
        }
    }
    let index = |h: &str| {
        stations
            .iter()
            .position(|x| x == h)
            .expect("a station of the WLAN") as u32
    };
    let mut handoffs = Vec::new();
    for h in &t.handoffs {
        let c = &s.handoff[h.index];
        let (at, end) = (Instant::ZERO + c.at.0, Instant::ZERO + c.at.0 + c.outage.0);
        if h.from == l {
            handoffs.push(Association::Leave {
                station: index(&c.station),
                at,
                resume: end,
                queued_lost: c.queued_lost.0,
            });
        }
        if h.to == l {
            handoffs.push(Association::Join {
                station: index(&c.station),
                at,
                until: end,
            });
        }
    }
    let fallback = routes.iter().min_by_key(|r| r.0).map(|r| *r.1);
    let present: Vec<u32> = (0..link.stations.len() as u32).collect();
    let mut model = WlanLink::new(
        wlan_params(w),
        stations.len() as u32,
        routes,
        RngStream::derive(s.seed, name),
    )
    .map_err(|e| BuildError(format!("{key}: {e}")))?;
    if let Some(r) = fallback {
        model = model.with_fallback(r);
    }
    Ok(BuiltLink {
        name,
        model: "wlan",
        link: Box::new(model.with_associations(&present, handoffs)),
    })
}

impl NetModel for sc::WlanConfig {
    fn build<P: Packet + Send + 'static>(&self, site: &Site) -> Result<BuiltLink<P>, BuildError> {
        wlan(
            site.scenario,
            site.topology,
            site.paths,
            site.changes,
            site.id,
            site.name,
        )
    }

    /// One backlogged station's share of the medium at 1500 B.
    fn capacity_bps(&self, _key: &str) -> Result<Option<u64>, BuildError> {
        Ok(Some(
            bianchi_saturation_bps(&wlan_params(self), 1, 1500) as u64
        ))
    }

    fn queue(&self) -> Option<sc::units::QueueLimit> {
        Some(self.queue)
    }

    /// A WLAN carries both ways between its stations: netem's impairments are not put after
    /// it (as before the models had one home each).
    fn impairable(&self) -> bool {
        false
    }
}
