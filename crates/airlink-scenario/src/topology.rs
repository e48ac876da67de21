//! A scenario's topology as one-way links between hosts, whichever form its file uses, and
//! each flow's path in each direction.
//!
//! The shorthand (`wired`, `downlink`, `uplink`, `access`) is the chain
//! `server → wired.down → downlink → client → uplink → wired.up → server`, with a pair of
//! access links per flow in front of the server when `[access]` is given. The general form
//! names its hosts and links; a flow follows the `path` it names, or the only shortest path
//! between its hosts (two equally short ones are refused: the file must say which).

use crate::{LinkModel, PipeConfig, Scenario};
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
}

/// Indices into [`Topology::links`], in the order a packet crosses them.
pub type Path = Vec<usize>;

/// The links, and each flow's downward (server to client) and upward path.
#[derive(Clone, Debug)]
pub struct Topology {
    pub links: Vec<TopoLink>,
    pub paths: Vec<(Path, Path)>,
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
            return Err((key(&["uplink"]), "the shorthand needs a downlink and a resolved uplink".into()));
        };
        let wired = self.wired.clone().unwrap_or_default();
        let pipe = |name: &str, from: &str, to: &str, p: &PipeConfig, k: &[&str]| TopoLink {
            name: name.into(),
            from: from.into(),
            to: to.into(),
            model: LinkModel::Pipe(p.clone()),
            key: key(k),
        };
        // A cell's users each have an uplink of their own: `uplink.0` (flow 0's) where the
        // shared one would be, the others after the chain.
        let per_user = matches!(down, LinkModel::Cell(_));
        let uplink = |i: usize| TopoLink {
            name: if per_user { format!("uplink.{i}") } else { "uplink".into() },
            from: "client".into(),
            to: "gateway".into(),
            model: up.clone(),
            key: model_key(&["uplink"], up),
        };
        let mut links = vec![
            pipe("wired.down", "server", "gateway", &wired, &["wired"]),
            TopoLink { name: "downlink".into(), from: "gateway".into(), to: "client".into(), model: down.clone(), key: model_key(&["downlink"], down) },
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
                links.push(pipe(&format!("access.{i}.down"), &server, "server", access, &["access"]));
                up_path.push(links.len());
                links.push(pipe(&format!("access.{i}.up"), "server", &server, access, &["access"]));
            }
            paths.push((down_path, up_path));
        }
        Ok(Topology { links, paths })
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
            return Err((key(&["link"]), "[link] tables join hosts: expected [host.NAME] tables too".into()));
        }
        for name in self.host.keys() {
            check_id(name).map_err(|m| (key(&["host", name]), m))?;
        }
        let mut links = Vec::with_capacity(self.link.len());
        for (name, l) in &self.link {
            check_id(name).map_err(|m| (key(&["link", name]), m))?;
            for (end, host) in [("from", &l.from), ("to", &l.to)] {
                if !self.host.contains_key(host) {
                    return Err((key(&["link", name, end]), format!("no host named \"{host}\": expected one of {}", names(self.host.keys()))));
                }
            }
            if l.from == l.to {
                return Err((key(&["link", name, "to"]), format!("the link starts and ends at \"{}\": expected two different hosts", l.to)));
            }
            let models = l.models().len();
            if models != 1 {
                return Err((
                    key(&["link", name]),
                    format!("{models} models: expected exactly one of [link.{name}.pipe], [link.{name}.gprs], [link.{name}.trace], [link.{name}.ofdm4g], [link.{name}.cell]"),
                ));
            }
            let model = l.model();
            links.push(TopoLink { name: name.clone(), from: l.from.clone(), to: l.to.clone(), key: model_key(&["link", name], &model), model });
        }
        for host in self.host.keys() {
            if !links.iter().any(|l| &l.from == host || &l.to == host) {
                return Err((key(&["host", host]), format!("host \"{host}\" has no link: expected a [link] from or to it")));
            }
        }
        let mut paths = Vec::with_capacity(self.flow.len());
        for (i, f) in self.flow.iter().enumerate() {
            let at = |k: &str| key(&["flow", &i.to_string(), k]);
            let server = f.server.as_deref().unwrap_or("server");
            let client = f.client.as_deref().unwrap_or("client");
            for (end, host) in [("server", server), ("client", client)] {
                if !self.host.contains_key(host) {
                    let default = if [&f.server, &f.client][(end == "client") as usize].is_none() { " (the default)" } else { "" };
                    return Err((at(end), format!("no host named \"{host}\"{default}: expected one of {}", names(self.host.keys()))));
                }
            }
            if server == client {
                return Err((at("client"), format!("the flow's server and client are both \"{server}\": expected two hosts")));
            }
            let down = route(&links, f.path.as_deref(), server, client).map_err(|m| (at(if f.path.is_some() { "path" } else { "server" }), m))?;
            let up = route(&links, f.return_path.as_deref(), client, server)
                .map_err(|m| (at(if f.return_path.is_some() { "return_path" } else { "client" }), m))?;
            if let Some(&l) = up.iter().find(|&&l| matches!(links[l].model, LinkModel::Cell(_))) {
                let k = if f.return_path.is_some() { "return_path" } else { "client" };
                return Err((at(k), format!("the way back crosses \"{}\", a cell: a cell carries its base station's downlink only", links[l].name)));
            }
            paths.push((down, up));
        }
        Ok(Topology { links, paths })
    }
}

/// The path from `from` to `to`: the one named (checked), or the only shortest one.
fn route(links: &[TopoLink], named: Option<&[String]>, from: &str, to: &str) -> Result<Path, String> {
    match named {
        Some(names) => check_path(links, names, from, to),
        None => shortest_path(links, from, to),
    }
}

/// Checks a named path from `from` to `to` and returns its link indices.
pub fn check_path(links: &[TopoLink], named: &[String], from: &str, to: &str) -> Result<Path, String> {
    let mut path = Vec::with_capacity(named.len());
    let mut at = from;
    let mut visited = vec![from];
    for name in named {
        let Some(i) = links.iter().position(|l| &l.name == name) else {
            return Err(format!("no link named \"{name}\": expected one of {}", names(links.iter().map(|l| &l.name))));
        };
        let l = &links[i];
        if l.from != at {
            return Err(format!("link \"{name}\" starts at \"{}\", but the path is at \"{at}\" there: expected a link from \"{at}\"", l.from));
        }
        if visited.contains(&l.to.as_str()) {
            return Err(format!("link \"{name}\" returns to \"{}\": a path visits each host once", l.to));
        }
        visited.push(&l.to);
        at = &l.to;
        path.push(i);
    }
    if at != to {
        return Err(format!("the path ends at \"{at}\": expected it to reach \"{to}\""));
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
        for (i, l) in links.iter().enumerate().filter(|(_, l)| l.from == host) {
            match seen.get_mut(l.to.as_str()) {
                None => {
                    seen.insert(&l.to, (dist + 1, count, i));
                    queue.push_back(&l.to);
                }
                Some(e) if e.0 == dist + 1 => e.1 = (e.1 + count).min(2),
                Some(_) => {}
            }
        }
    }
    match seen.get(to) {
        None => Err(format!("no path of links from \"{from}\" to \"{to}\": expected links joining them")),
        Some(&(_, count, _)) if count > 1 => {
            Err(format!("several equally short paths from \"{from}\" to \"{to}\": name the links with `path` (down) or `return_path` (up)"))
        }
        Some(_) => {
            let mut path = Vec::new();
            let mut at = to;
            while at != from {
                let i = seen[at].2;
                path.push(i);
                at = &links[i].from;
            }
            path.reverse();
            Ok(path)
        }
    }
}

/// Host and link names appear in results tables: letters, digits, `-`, `_`, `.`.
fn check_id(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) {
        return Err(format!("\"{name}\": expected 1 to 64 letters, digits, '-', '_' or '.'"));
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
