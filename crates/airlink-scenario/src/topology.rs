//! A scenario's topology as one-way links between hosts, whichever form its file uses, and
//! each flow's path in each direction.
//!
//! The shorthand (`wired`, `downlink`, `uplink`, `access`) is the chain
//! `server → wired.down → downlink → client → uplink → wired.up → server`, with a pair of
//! access links per flow in front of the server when `[access]` is given; a flow with
//! `direction = "up"` sends its data the other way round the chain. The general form
//! names its hosts and links; a flow follows the `path` it names, or the only shortest path
//! between its hosts (two equally short ones are refused: the file must say which).

use crate::{Direction, LinkModel, PipeConfig, Scenario};
use std::collections::{BTreeMap, VecDeque};

/// One one-way link.
#[derive(Clone, Debug)]
pub struct TopoLink {
    /// The link's name in results (and the name its random stream is derived from).
    pub name: String,
    pub from: String,
    pub to: String,
    pub model: LinkModel,
    /// Where the link's model is in the file, for messages (`downlink.pipe`, `link.a.trace`).
    pub key: Vec<String>,
    /// A WLAN's stations at the start (its access point is `from`, `to` is empty); empty for
    /// other links.
    pub stations: Vec<String>,
    /// netem's impairments after the model (`[link.NAME] impair` or `netem`).
    pub impair: Option<crate::netem::ImpairConfig>,
}

impl TopoLink {
    /// A WLAN's stations over the whole run: those at the start, then those hand-offs bring,
    /// in the order they first come (their indices in the model).
    pub fn all_stations(&self, s: &Scenario) -> Vec<String> {
        let mut all = self.stations.clone();
        let mut order: Vec<_> = s.handoff.iter().collect();
        order.sort_by_key(|h| h.at.0);
        for h in order {
            if h.to == self.name && !all.contains(&h.station) {
                all.push(h.station.clone());
            }
        }
        all
    }

    /// The one-way hops the link offers: its own, or a WLAN's between its access point and
    /// each station, both ways, and between two stations (relayed by the access point).
    pub fn hops(&self) -> Vec<(&str, &str)> {
        if self.stations.is_empty() {
            return vec![(&self.from, &self.to)];
        }
        let ap = self.from.as_str();
        let mut hops = Vec::new();
        for s in &self.stations {
            hops.push((ap, s.as_str()));
            hops.push((s.as_str(), ap));
            hops.extend(
                self.stations
                    .iter()
                    .filter(|t| *t != s)
                    .map(|t| (s.as_str(), t.as_str())),
            );
        }
        hops
    }

    fn joins(&self, host: &str) -> bool {
        self.from == host || self.to == host || self.stations.iter().any(|s| s == host)
    }
}

/// A `[[handoff]]` resolved: the links it concerns and the flows' paths from then on.
#[derive(Clone, Debug)]
pub struct TopoHandoff {
    /// Index in the file's `[[handoff]]`.
    pub index: usize,
    /// Indices into [`Topology::links`] of the WLAN left and the WLAN joined.
    pub from: usize,
    pub to: usize,
    /// The flows that move, with their new paths (down, up).
    pub paths: Vec<(usize, Path, Path)>,
}

/// Indices into [`Topology::links`], in the order a packet crosses them.
pub type Path = Vec<usize>;

/// The links, and each flow's downward (server to client) and upward path.
#[derive(Clone, Debug)]
pub struct Topology {
    pub links: Vec<TopoLink>,
    pub paths: Vec<(Path, Path)>,
    /// The hand-offs in time order (the file's at equal times).
    pub handoffs: Vec<TopoHandoff>,
}

/// A key path in the file and what is wrong there.
pub type TopologyError = (Vec<String>, String);

fn key(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

fn model_key(base: &[&str], model: &LinkModel) -> Vec<String> {
    key(&[base, &[model.kind()]].concat())
}

impl Scenario {
    /// Whether the file describes its links with `[link.NAME]` tables.
    pub fn is_general(&self) -> bool {
        !self.link.is_empty() || !self.host.is_empty()
    }

    /// The topology. A shorthand scenario needs its uplink filled in (the build resolves it
    /// from the downlink's capacity first).
    pub fn topology(&self) -> Result<Topology, TopologyError> {
        if self.is_general() {
            return self.general_topology();
        }
        let (Some(down), Some(up)) = (&self.downlink, &self.uplink) else {
            return Err((
                key(&["uplink"]),
                "the shorthand needs a downlink and a resolved uplink".into(),
            ));
        };
        let wired = self.wired.clone().unwrap_or_default();
        let pipe = |name: &str, from: &str, to: &str, p: &PipeConfig, k: &[&str]| TopoLink {
            name: name.into(),
            from: from.into(),
            to: to.into(),
            model: LinkModel::Pipe(p.clone()),
            key: key(k),
            stations: Vec::new(),
            impair: None,
        };
        // A cell's users each have an uplink of their own: `uplink.0` (flow 0's) where the
        // shared one would be, the others after the chain.
        let per_user = matches!(down, LinkModel::Cell(_));
        let uplink = |i: usize| TopoLink {
            name: if per_user {
                format!("uplink.{i}")
            } else {
                "uplink".into()
            },
            from: "client".into(),
            to: "gateway".into(),
            model: up.clone(),
            key: model_key(&["uplink"], up),
            stations: Vec::new(),
            impair: None,
        };
        let mut links = vec![
            pipe("wired.down", "server", "gateway", &wired, &["wired"]),
            TopoLink {
                name: "downlink".into(),
                from: "gateway".into(),
                to: "client".into(),
                model: down.clone(),
                key: model_key(&["downlink"], down),
                stations: Vec::new(),
                impair: None,
            },
            uplink(0),
            pipe("wired.up", "gateway", "server", &wired, &["wired"]),
        ];
        let mut paths = Vec::with_capacity(self.flow.len());
        for i in 0..self.flow.len() {
            let (mut down_path, mut up_path) = (vec![0, 1], vec![2, 3]);
            if per_user && i > 0 {
                up_path[0] = links.len();
                links.push(uplink(i));
            }
            if let Some(access) = &self.access {
                let server = format!("server.{i}");
                down_path.insert(0, links.len());
                links.push(pipe(
                    &format!("access.{i}.down"),
                    &server,
                    "server",
                    access,
                    &["access"],
                ));
                up_path.push(links.len());
                links.push(pipe(
                    &format!("access.{i}.up"),
                    "server",
                    &server,
                    access,
                    &["access"],
                ));
            }
            // An upload's data takes the uplink; its ACKs come back through the downlink.
            paths.push(match self.flow[i].direction.unwrap_or_default() {
                Direction::Down => (down_path, up_path),
                Direction::Up => (up_path, down_path),
            });
        }
        self.shorthand_has_no_handoffs()?;
        Ok(Topology {
            links,
            paths,
            handoffs: Vec::new(),
        })
    }

    /// The shorthand's links are no WLANs, so nothing can hand off between them.
    pub(crate) fn shorthand_has_no_handoffs(&self) -> Result<(), TopologyError> {
        if !self.handoff.is_empty() {
            return Err((key(&["handoff"]), "hand-offs move stations between WLANs: expected [host] and [link] tables with [link.NAME.wlan]".into()));
        }
        Ok(())
    }

    fn general_topology(&self) -> Result<Topology, TopologyError> {
        for shorthand in ["wired", "downlink", "uplink", "access"] {
            let present = match shorthand {
                "wired" => self.wired.is_some(),
                "downlink" => self.downlink.is_some(),
                "uplink" => self.uplink.is_some(),
                _ => self.access.is_some(),
            };
            if present {
                return Err((
                    key(&[shorthand]),
                    format!("`{shorthand}` is shorthand for a fixed chain of links: a scenario with [host] and [link] tables describes every link there"),
                ));
            }
        }
        if self.host.is_empty() {
            return Err((
                key(&["link"]),
                "[link] tables join hosts: expected [host.NAME] tables too".into(),
            ));
        }
        for name in self.host.keys() {
            check_id(name).map_err(|m| (key(&["host", name]), m))?;
        }
        let mut links = Vec::with_capacity(self.link.len());
        for (name, l) in &self.link {
            check_id(name).map_err(|m| (key(&["link", name]), m))?;
            let stations = l.wlan.as_ref().map_or(Vec::new(), |w| w.stations.clone());
            let wlan = l.wlan.is_some();
            if wlan && !l.to.is_empty() {
                return Err((key(&["link", name, "to"]), "a WLAN reaches its stations: expected `stations` in its [wlan] table instead of `to`".into()));
            }
            if !wlan && l.to.is_empty() {
                return Err((
                    key(&["link", name]),
                    "expected `to`, the host the link delivers to".into(),
                ));
            }
            let ends = [("from", &l.from)]
                .into_iter()
                .chain((!wlan).then_some(("to", &l.to)))
                .map(|(end, h)| (vec!["link", name, end], h));
            let station_ends = stations
                .iter()
                .map(|h| (vec!["link", name, "wlan", "stations"], h));
            for (at, host) in ends.chain(station_ends) {
                if !self.host.contains_key(host) {
                    return Err((
                        key(&at),
                        format!(
                            "no host named \"{host}\": expected one of {}",
                            names(self.host.keys())
                        ),
                    ));
                }
            }
            if l.from == l.to || stations.contains(&l.from) {
                let at = if wlan {
                    key(&["link", name, "wlan", "stations"])
                } else {
                    key(&["link", name, "to"])
                };
                return Err((
                    at,
                    format!(
                        "the link starts and ends at \"{}\": expected two different hosts",
                        l.from
                    ),
                ));
            }
            let models = l.models().len();
            if models != 1 {
                return Err((
                    key(&["link", name]),
                    format!("{models} models: expected exactly one of [link.{name}.pipe], [link.{name}.gprs], [link.{name}.trace], [link.{name}.ofdm4g], [link.{name}.cell], [link.{name}.wlan]"),
                ));
            }
            let model = l.model();
            links.push(TopoLink {
                name: name.clone(),
                from: l.from.clone(),
                to: l.to.clone(),
                key: model_key(&["link", name], &model),
                model,
                stations,
                // Validated before the topology is built.
                impair: l.impairments().ok().flatten(),
            });
        }
        for (i, a) in links.iter().enumerate() {
            if let Some((b, s)) = a.stations.iter().find_map(|s| {
                links[..i]
                    .iter()
                    .find(|b| b.stations.contains(s))
                    .map(|b| (b, s))
            }) {
                return Err((
                    key(&["link", &a.name, "wlan", "stations"]),
                    format!("\"{s}\" is a station of \"{}\" already: a station starts associated with one access point (a [[handoff]] moves it)", b.name),
                ));
            }
        }
        for host in self.host.keys() {
            if !links.iter().any(|l| l.joins(host)) {
                return Err((
                    key(&["host", host]),
                    format!("host \"{host}\" has no link: expected a [link] from or to it"),
                ));
            }
        }
        let mut paths = Vec::with_capacity(self.flow.len());
        for (i, f) in self.flow.iter().enumerate() {
            let at = |k: &str| key(&["flow", &i.to_string(), k]);
            let server = f.server.as_deref().unwrap_or("server");
            let client = f.client.as_deref().unwrap_or("client");
            for (end, host) in [("server", server), ("client", client)] {
                if !self.host.contains_key(host) {
                    let default = if [&f.server, &f.client][(end == "client") as usize].is_none() {
                        " (the default)"
                    } else {
                        ""
                    };
                    return Err((
                        at(end),
                        format!(
                            "no host named \"{host}\"{default}: expected one of {}",
                            names(self.host.keys())
                        ),
                    ));
                }
            }
            if server == client {
                return Err((
                    at("client"),
                    format!(
                        "the flow's server and client are both \"{server}\": expected two hosts"
                    ),
                ));
            }
            let down = route(&links, f.path.as_deref(), server, client)
                .map_err(|m| (at(if f.path.is_some() { "path" } else { "server" }), m))?;
            let up = route(&links, f.return_path.as_deref(), client, server).map_err(|m| {
                (
                    at(if f.return_path.is_some() {
                        "return_path"
                    } else {
                        "client"
                    }),
                    m,
                )
            })?;
            if let Some(&l) = up
                .iter()
                .find(|&&l| matches!(links[l].model, LinkModel::Cell(_)))
            {
                let k = if f.return_path.is_some() {
                    "return_path"
                } else {
                    "client"
                };
                return Err((at(k), format!("the way back crosses \"{}\", a cell: a cell carries its base station's downlink only", links[l].name)));
            }
            paths.push((down, up));
        }
        let handoffs = self.handoffs(&mut links.clone(), &mut paths.clone())?;
        Ok(Topology {
            links,
            paths,
            handoffs,
        })
    }

    /// Checks the hand-offs in time order and finds each moving flow's new paths (`links` and
    /// `paths` are worked on: they end as the last hand-off leaves them).
    fn handoffs(
        &self,
        links: &mut [TopoLink],
        paths: &mut [(Path, Path)],
    ) -> Result<Vec<TopoHandoff>, TopologyError> {
        let mut order: Vec<usize> = (0..self.handoff.len()).collect();
        order.sort_by_key(|&i| self.handoff[i].at.0);
        // Per station, the end of its last outage.
        let mut busy: BTreeMap<&str, (usize, airlink_engine::Duration)> = BTreeMap::new();
        let mut out = Vec::with_capacity(order.len());
        for i in order {
            let h = &self.handoff[i];
            let at = |k: &str| key(&["handoff", &i.to_string(), k]);
            let end = h.at.0 + h.outage.0;
            if h.outage.0.is_zero() {
                return Err((
                    at("outage"),
                    "expected a positive outage (re-association takes time)".into(),
                ));
            }
            if end > self.stop.0 {
                return Err((at("at"), format!("{} plus the outage ({}) ends after the run's stop ({}): expected a hand-off within the run", h.at.0, h.outage.0, self.stop.0)));
            }
            let wlans = || {
                names(
                    links
                        .iter()
                        .filter(|l| !l.stations.is_empty() || matches!(l.model, LinkModel::Wlan(_)))
                        .map(|l| &l.name),
                )
            };
            let wlan = |k: &str, name: &str| {
                links
                    .iter()
                    .position(|l| l.name == name && matches!(l.model, LinkModel::Wlan(_)))
                    .ok_or_else(|| {
                        (
                            at(k),
                            format!("no WLAN named \"{name}\": expected one of {}", wlans()),
                        )
                    })
            };
            let (from, to) = (wlan("from", &h.from)?, wlan("to", &h.to)?);
            if from == to {
                return Err((
                    at("to"),
                    format!("the station stays with \"{}\": expected another WLAN", h.to),
                ));
            }
            if !self.host.contains_key(&h.station) {
                return Err((
                    at("station"),
                    format!(
                        "no host named \"{}\": expected one of {}",
                        h.station,
                        names(self.host.keys())
                    ),
                ));
            }
            let Some(s) = links[from].stations.iter().position(|x| x == &h.station) else {
                return Err((
                    at("station"),
                    format!(
                        "\"{}\" is not a station of \"{}\" at {}: its stations then are {}",
                        h.station,
                        h.from,
                        h.at.0,
                        names(links[from].stations.iter())
                    ),
                ));
            };
            if let Some(&(j, prev)) = busy.get(h.station.as_str()) {
                if h.at.0 < prev {
                    return Err((at("at"), format!("{} is within the outage of handoff {j} (until {prev}): expected the station's hand-offs not to overlap", h.at.0)));
                }
            }
            busy.insert(&h.station, (i, end));
            // The flows with a hop to or from the station on the WLAN it leaves move.
            let moving: Vec<usize> = (0..paths.len())
                .filter(|&f| {
                    let flow = &self.flow[f];
                    let (server, client) = (
                        flow.server.as_deref().unwrap_or("server"),
                        flow.client.as_deref().unwrap_or("client"),
                    );
                    let (down, up) = &paths[f];
                    let on = |p: &Path, a: &str, b: &str| {
                        path_hosts(links, p, a, b)
                            .iter()
                            .zip(p)
                            .any(|((x, y), &l)| l == from && (*x == h.station || *y == h.station))
                    };
                    on(down, server, client) || on(up, client, server)
                })
                .collect();
            links[from].stations.remove(s);
            links[to].stations.push(h.station.clone());
            let mut moved = Vec::with_capacity(moving.len());
            for f in moving {
                let flow = &self.flow[f];
                let (server, client) = (
                    flow.server.as_deref().unwrap_or("server"),
                    flow.client.as_deref().unwrap_or("client"),
                );
                let new = |a: &str, b: &str| {
                    shortest_path(links, a, b).map_err(|m| (at("to"), format!("flow {f}: {m}")))
                };
                paths[f] = (new(server, client)?, new(client, server)?);
                moved.push((f, paths[f].0.clone(), paths[f].1.clone()));
            }
            out.push(TopoHandoff {
                index: i,
                from,
                to,
                paths: moved,
            });
        }
        Ok(out)
    }
}

/// The hosts each link of `path` joins, from `from` to `to`: a WLAN's hop ends where the next
/// link starts (or at `to`). The path was checked, so it connects.
pub fn path_hosts(
    links: &[TopoLink],
    path: &[usize],
    from: &str,
    to: &str,
) -> Vec<(String, String)> {
    let mut out = Vec::with_capacity(path.len());
    let mut at = from.to_string();
    for (k, &l) in path.iter().enumerate() {
        let next = match path.get(k + 1) {
            None => to.to_string(),
            Some(&n) => {
                let hops = links[l].hops();
                let starts: Vec<&str> = links[n].hops().into_iter().map(|h| h.0).collect();
                hops.iter()
                    .find(|h| h.0 == at && starts.contains(&h.1))
                    .map_or_else(|| links[l].to.clone(), |h| h.1.to_string())
            }
        };
        out.push((at, next.clone()));
        at = next;
    }
    out
}

/// The path from `from` to `to`: the one named (checked), or the only shortest one.
fn route(
    links: &[TopoLink],
    named: Option<&[String]>,
    from: &str,
    to: &str,
) -> Result<Path, String> {
    match named {
        Some(names) => check_path(links, names, from, to),
        None => shortest_path(links, from, to),
    }
}

/// Checks a named path from `from` to `to` and returns its link indices.
pub fn check_path(
    links: &[TopoLink],
    named: &[String],
    from: &str,
    to: &str,
) -> Result<Path, String> {
    let mut path = Vec::with_capacity(named.len());
    let mut at = from;
    let mut visited = vec![from];
    for name in named {
        let Some(i) = links.iter().position(|l| &l.name == name) else {
            return Err(format!(
                "no link named \"{name}\": expected one of {}",
                names(links.iter().map(|l| &l.name))
            ));
        };
        let l = &links[i];
        let hops: Vec<(&str, &str)> = l.hops().into_iter().filter(|h| h.0 == at).collect();
        if hops.is_empty() {
            return Err(format!("link \"{name}\" starts at \"{}\", but the path is at \"{at}\" there: expected a link from \"{at}\"", l.from));
        }
        // A WLAN's hop ends where the next link starts, or at the path's end.
        let next: Option<Vec<&str>> = named
            .get(path.len() + 1)
            .and_then(|n| links.iter().find(|x| &x.name == n))
            .map(|x| x.hops().into_iter().map(|h| h.0).collect());
        let hop = hops
            .iter()
            .find(|h| {
                next.as_ref()
                    .map_or(h.1 == to, |starts| starts.contains(&h.1))
            })
            .unwrap_or(&hops[0]);
        if visited.contains(&hop.1) {
            return Err(format!(
                "link \"{name}\" returns to \"{}\": a path visits each host once",
                hop.1
            ));
        }
        visited.push(hop.1);
        at = hop.1;
        path.push(i);
    }
    if at != to {
        return Err(format!(
            "the path ends at \"{at}\": expected it to reach \"{to}\""
        ));
    }
    Ok(path)
}

/// Breadth-first search counting shortest paths, so that an ambiguous route is refused.
fn shortest_path(links: &[TopoLink], from: &str, to: &str) -> Result<Path, String> {
    // Per host: hop distance, number of shortest paths (capped at 2), and the link it was reached by.
    let mut seen: BTreeMap<&str, (usize, u8, usize)> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    seen.insert(from, (0, 1, usize::MAX));
    while let Some(host) = queue.pop_front() {
        let (dist, count, _) = seen[host];
        for (i, l) in links.iter().enumerate() {
            for (_, next) in l.hops().into_iter().filter(|h| h.0 == host) {
                match seen.get_mut(next) {
                    None => {
                        seen.insert(next, (dist + 1, count, i));
                        queue.push_back(next);
                    }
                    Some(e) if e.0 == dist + 1 => e.1 = (e.1 + count).min(2),
                    Some(_) => {}
                }
            }
        }
    }
    match seen.get(to) {
        None => Err(format!("no path of links from \"{from}\" to \"{to}\": expected links joining them")),
        Some(&(_, count, _)) if count > 1 => {
            Err(format!("several equally short paths from \"{from}\" to \"{to}\": name the links with `path` (down) or `return_path` (up)"))
        }
        Some(_) => {
            // Back from `to`: each host was reached from the host one hop nearer `from`.
            let mut path = Vec::new();
            let mut at = to;
            while at != from {
                let i = seen[at].2;
                path.push(i);
                let (d, _, _) = seen[at];
                at = links[i].hops().into_iter().find(|h| h.1 == at && seen.get(h.0).is_some_and(|e| e.0 + 1 == d)).map(|h| h.0).expect("a hop led here");
            }
            path.reverse();
            Ok(path)
        }
    }
}

/// Host and link names appear in results tables: letters, digits, `-`, `_`, `.`.
fn check_id(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(format!(
            "\"{name}\": expected 1 to 64 letters, digits, '-', '_' or '.'"
        ));
    }
    Ok(())
}

fn names<'a>(it: impl Iterator<Item = &'a String>) -> String {
    let all: Vec<String> = it.map(|n| format!("\"{n}\"")).collect();
    if all.is_empty() {
        "none".into()
    } else {
        all.join(", ")
    }
}
