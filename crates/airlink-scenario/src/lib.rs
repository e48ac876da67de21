//! Scenario files: TOML with explicit units, parsed strictly.
//!
//! [`Scenario::from_toml`] turns a file's text into a validated [`Scenario`] or one
//! [`ScenarioError`] naming the file, line and column, what is wrong and what was expected.
//! [`Scenario::with_overrides`] applies `key=value` overrides (the CLI's `--set`) to a parsed
//! scenario and validates the result again. Parsing never touches the machine.
//!
//! This crate holds the user-facing schema only; the simulation driver maps it onto the model
//! crates' own configuration types.

pub mod aqm;
pub mod host_budget;
pub mod keys;
pub mod model;
pub mod netem;
mod schema;
mod start;
pub mod topology;
pub mod units;

use airlink_engine::Duration;
use airlink_transport::dccp::{DccpConfig, DccpPacket};
pub use model::*;
pub use schema::*;
pub use start::FlowStart;
use std::fmt;

/// Bounds that keep every run finite in time and memory; each is far beyond the studies'.
const MAX_FLOWS: usize = 1000;
/// Thirty days of simulated time.
const MAX_STOP: Duration = Duration::from_secs(30 * 86_400);
/// The shortest sampling or report interval.
const MIN_INTERVAL: Duration = Duration::from_millis(1);
/// The longest delay of a link, an ARQ retransmission or a TCP timer.
const MAX_DELAY: Duration = Duration::from_secs(3600);
/// The fastest link or source: 10 Gbit/s.
const MAX_RATE: u64 = 10_000_000_000;
/// A radio channel's mean SNR, dB: beyond these the error probabilities are 0 or 1 anyway.
const MEAN_SNR_DB: std::ops::RangeInclusive<f64> = -50.0..=100.0;
/// Datagrams per second a media source may send.
const MAX_PACKET_RATE: f64 = 1e6;
/// The most packets a queue, a link's delay line or a TCP window may hold (each simulated
/// packet takes about 250 B of memory, so this keeps each to about 125 MB).
pub const MAX_PACKETS_HELD: u64 = 500_000;
/// The smallest `memory_budget`: what an idle run's own state takes, with room.
const MIN_MEMORY_BUDGET: u64 = 10_000_000;
/// bins per second × sub-bands × sinusoids of the OFDM channel (the study's: 6·10⁵).
const MAX_CHANNEL_WORK: f64 = 1e8;

type Invalid = (Vec<String>, String);

/// `value` within [lo, hi] (durations), else an error at `path`.
fn within(
    path: Vec<String>,
    value: Duration,
    lo: Duration,
    hi: Duration,
    what: &str,
) -> Result<(), Invalid> {
    if value < lo || value > hi {
        return Err((path, format!("{value}: expected {what} from {lo} to {hi}")));
    }
    Ok(())
}

/// A whole number within [lo, hi], else an error at `path`.
fn count(path: Vec<String>, value: u32, lo: u32, hi: u32, what: &str) -> Result<(), Invalid> {
    if value < lo || value > hi {
        return Err((path, format!("{value}: expected {lo} to {hi} {what}")));
    }
    Ok(())
}

fn check_rate(rate: units::Rate) -> Result<(), String> {
    if rate.0 > MAX_RATE {
        return Err(format!(
            "{rate}: expected at most {}",
            units::Rate(MAX_RATE)
        ));
    }
    Ok(())
}

/// A queue holds at most [`MAX_PACKETS_HELD`] packets of the scenario's smallest (`min_packet`).
fn check_queue(q: &units::QueueLimit, min_packet: u64) -> Result<(), String> {
    match *q {
        units::QueueLimit::Packets(n) if n as u64 > MAX_PACKETS_HELD => {
            Err(format!("{n} packets: expected at most {MAX_PACKETS_HELD} packets"))
        }
        units::QueueLimit::Bytes(b) if b / min_packet > MAX_PACKETS_HELD => Err(format!(
            "{} holds up to {} packets of {min_packet} B: expected at most {MAX_PACKETS_HELD} packets, at most {}",
            units::DataSize(b),
            b / min_packet,
            units::DataSize(MAX_PACKETS_HELD * min_packet)
        )),
        _ => Ok(()),
    }
}

/// A scenario's name names its results folder (`results/<name>-seed<N>`), so it must be one
/// plain folder name: no separators, no NUL or control characters, no leading dot.
fn check_name(name: &str) -> Result<(), String> {
    let bad = name
        .chars()
        .find(|c| matches!(c, '/' | '\\') || c.is_control());
    if let Some(c) = bad {
        return Err(format!(
            "{name:?} has the character {c:?}: a name becomes a results folder's name, so expected no '/', '\\' or control characters"
        ));
    }
    if let Some(c) = name.chars().find(|&c| is_bidi_control(c)) {
        return Err(format!(
            "{name:?} has the bidirectional-text control U+{:04X}, which shows text in another order than it is written: expected none in a name",
            c as u32
        ));
    }
    if name.starts_with('.') || name.trim().is_empty() || name.len() > 100 {
        return Err(format!(
            "{name:?}: a name becomes a results folder's name, so expected 1 to 100 characters, not starting with '.'"
        ));
    }
    Ok(())
}

/// The characters that reorder how text is shown (Trojan Source, CVE-2021-42574): embeddings,
/// overrides, isolates and the implicit marks.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// A folder-safe name made from a file name: characters other than letters, digits, `-`, `_`
/// and `.` become `_`, and a leading dot is dropped.
fn slug(stem: &str) -> String {
    let s: String = stem
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    let s = s.trim_start_matches('.');
    if s.is_empty() {
        "scenario".into()
    } else {
        s.into()
    }
}

/// The deserializer's messages in a scenario writer's terms rather than Rust's type names.
fn user_terms(message: &str) -> String {
    let mut m = message.to_owned();
    for (rust, user) in [
        ("expected u8", "expected a whole number from 0 to 255"),
        ("expected u16", "expected a whole number from 0 to 65535"),
        (
            "expected u32",
            "expected a whole number from 0 to 4294967295",
        ),
        ("expected u64", "expected a whole number"),
        ("expected usize", "expected a whole number"),
        ("expected i64", "expected a whole number"),
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("a sequence", "a list"),
        ("expected a map", "expected a table"),
        ("invalid type: map", "invalid type: table"),
        ("invalid type: sequence", "invalid type: list"),
        ("expected a boolean", "expected true or false"),
    ] {
        m = m.replace(rust, user);
    }
    // `expected struct PipeConfig` and the like: every struct is a table of the file.
    while let Some(at) = m.find("struct ") {
        let end = m[at + 7..]
            .find(|c: char| !c.is_alphanumeric())
            .map_or(m.len(), |e| at + 7 + e);
        m.replace_range(at..end, "a table");
    }
    m
}

/// `[emulation] congestion` was a second key for what a flow's `congestion` says.
const REMOVED_EMULATION_CONGESTION: &str = "removed: each [[flow]]'s `congestion` now sets the kernel's congestion control in emulation too (e.g. `congestion = \"cubic\"` in the flow's table, or --set flow.0.congestion=cubic); for one airlink does not model, `sysctl = { \"net.ipv4.tcp_congestion_control\" = \"NAME\" }` in [emulation]";

/// Why a scenario was refused.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioError {
    /// The file (or `--set`) the problem is in.
    pub source: String,
    /// 1-based line and column, when the problem has a place in the file.
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// What is wrong and what was expected.
    pub message: String,
    /// The offending line of the file, for display.
    pub snippet: Option<String>,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{}:{l}:{c}: {}", self.source, self.message)?,
            _ => write!(f, "{}: {}", self.source, self.message)?,
        }
        if let (Some(snippet), Some(c)) = (&self.snippet, self.column) {
            write!(
                f,
                "\n    {snippet}\n    {}^",
                " ".repeat(c.saturating_sub(1))
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}

/// 1-based (line, column) of byte offset `at` in `text`, columns counted in characters.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, text[line_start..at].chars().count() + 1)
}

impl ScenarioError {
    fn at(source: &str, text: &str, span: Option<std::ops::Range<usize>>, message: String) -> Self {
        match span {
            Some(span) => {
                let (line, column) = line_col(text, span.start);
                let snippet = text.lines().nth(line - 1).map(str::to_owned);
                ScenarioError {
                    source: source.into(),
                    line: Some(line),
                    column: Some(column),
                    message,
                    snippet,
                }
            }
            None => ScenarioError {
                source: source.into(),
                line: None,
                column: None,
                message,
                snippet: None,
            },
        }
    }
}

impl ScenarioError {
    /// A problem found when a valid scenario is built ("downlink.trace.file: ...", "flow 2:
    /// ..."), placed at the key or the flow's table it starts with when the file has it.
    pub fn placed(source: &str, text: &str, message: String) -> Self {
        let head = message.split(": ").next().unwrap_or("");
        let path: Option<Vec<String>> = if let Some(i) = head
            .strip_prefix("flow ")
            .and_then(|i| i.parse::<usize>().ok())
        {
            // A copy's problems are its table's; a key the table leaves out points at its header.
            let mut parsed: Option<Scenario> = toml::from_str(text).ok();
            let tables = parsed.as_mut().and_then(|s| s.expand_copies().ok());
            let table = tables.and_then(|t| t.get(i).copied()).unwrap_or(i);
            Some(vec!["flow".into(), table.to_string(), "protocol".into()])
        } else if !head.is_empty()
            && head
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            Some(head.split('.').map(str::to_owned).collect())
        } else {
            None
        };
        let span = path.and_then(|p| find_key_span(text, &p));
        ScenarioError::at(source, text, span, message)
    }
}

impl Scenario {
    /// Parses and validates a scenario. `source` names the file in error messages; a missing
    /// `name` is taken from it.
    pub fn from_toml(text: &str, source: &str) -> Result<Scenario, ScenarioError> {
        let mut scenario: Scenario = toml::from_str(text).map_err(|e| {
            ScenarioError::at(source, text, e.span(), user_terms(e.message().trim()))
        })?;
        // A trace file is named relative to the scenario file, so scenarios travel with their
        // traces; the resolved scenario keeps the path it was found at.
        if let Some(dir) = std::path::Path::new(source).parent() {
            let models = [scenario.downlink.as_mut(), scenario.uplink.as_mut()]
                .into_iter()
                .flatten()
                .map(LinkModel::config_mut)
                .chain(scenario.link.values_mut().flat_map(LinkConfig::configs_mut));
            for m in models {
                for f in m.files_mut() {
                    if std::path::Path::new(f.as_str()).is_relative() {
                        *f = dir.join(&*f).to_string_lossy().into_owned();
                    }
                }
            }
        }
        if scenario.name.is_empty() {
            let stem = std::path::Path::new(source)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned());
            scenario.name = slug(stem.as_deref().unwrap_or(""));
        }
        scenario.inherit_tcp_preset();
        let tables = scenario.expand_copies().map_err(|(path, message)| {
            ScenarioError::at(
                source,
                text,
                find_key_span(text, &path),
                format!("{}: {message}", path.join(".")),
            )
        })?;
        scenario.validate().map_err(|(mut path, message)| {
            // A copy's errors are its table's.
            if let (Some("flow"), Some(i)) = (
                path.first().map(String::as_str),
                path.get(1).and_then(|i| i.parse::<usize>().ok()),
            ) {
                if let Some(table) = tables.get(i) {
                    path[1] = table.to_string();
                }
            }
            let span = find_key_span(text, &path);
            ScenarioError::at(source, text, span, format!("{}: {message}", path.join(".")))
        })?;
        Ok(scenario)
    }

    /// Applies `key.path=value` overrides (values in TOML syntax; a bare word is taken as a
    /// string, so `wired.delay=50 ms` works) and validates again. An error names the override
    /// that caused it (or all of them, when only their combination is wrong).
    pub fn with_overrides(&self, overrides: &[String]) -> Result<Scenario, ScenarioError> {
        if overrides.is_empty() {
            return Ok(self.clone());
        }
        self.apply_overrides(overrides).map_err(|message| {
            let culprit = overrides
                .iter()
                .find(|o| self.apply_overrides(std::slice::from_ref(o)).is_err());
            let source = match culprit {
                Some(item) => format!("--set {item}"),
                None => format!("--set {}", overrides.join(" --set ")),
            };
            ScenarioError::at(&source, "", None, message)
        })
    }

    fn apply_overrides(&self, overrides: &[String]) -> Result<Scenario, String> {
        let mut doc = toml::Table::try_from(self).expect("a scenario always serialises");
        for item in overrides {
            let (key, value) = item
                .split_once('=')
                .ok_or("expected key=value, like downlink.ofdm4g.arq_max_retransmissions=3")?;
            set_path(&mut doc, key.trim(), parse_override_value(value.trim()))?;
        }
        let text = toml::to_string(&doc).expect("a table always serialises");
        let mut scenario: Scenario =
            toml::from_str(&text).map_err(|e| user_terms(e.message().trim()))?;
        scenario.inherit_tcp_preset();
        // `flow.N.copies=K` on a copy re-expands the table it came from: its other copies
        // give way to K copies of flow N (with flow N's other overrides). The flows keep
        // their places unless the whole list was replaced (`flow=[...]`), which is expanded
        // as the file's tables are.
        let whole_list = overrides
            .iter()
            .any(|o| o.split_once('=').is_some_and(|(k, _)| k.trim() == "flow"));
        if !whole_list && scenario.flow.len() == self.flow.len() {
            for (f, before) in scenario.flow.iter_mut().zip(&self.flow) {
                f.copy_of = before.copy_of.clone();
            }
            let regrown: Vec<usize> = scenario
                .flow
                .iter()
                .filter(|f| f.copies.is_some())
                .filter_map(|f| f.copy_of.as_ref().map(|c| c.0))
                .collect();
            let mut seen = std::collections::HashSet::new();
            for t in &regrown {
                if !seen.insert(*t) {
                    return Err(format!("two copies of flow table {t} set `copies`: expected one (it stands for the whole table)"));
                }
            }
            scenario.flow.retain(|f| {
                f.copies.is_some() || !f.copy_of.as_ref().is_some_and(|c| regrown.contains(&c.0))
            });
        }
        scenario
            .expand_copies()
            .map_err(|(path, message)| format!("{}: {message}", path.join(".")))?;
        scenario
            .validate()
            .map_err(|(path, message)| format!("{}: {message}", path.join(".")))?;
        Ok(scenario)
    }

    /// Hands the scenario's `tcp_preset` to every flow, for those without a preset of their own.
    fn inherit_tcp_preset(&mut self) {
        for f in &mut self.flow {
            f.scenario_tcp_preset = self.tcp_preset;
        }
    }

    /// The fully resolved scenario (every default filled in) as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a scenario always serialises")
    }

    /// Checks that relate several fields, or values the types alone cannot refuse.
    /// Returns the key path of the offending field and the message.
    fn validate(&self) -> Result<(), (Vec<String>, String)> {
        let p = |parts: &[&str]| parts.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        if self.flow.is_empty() {
            return Err((
                p(&["flow"]),
                "a scenario needs at least one [[flow]]".into(),
            ));
        }
        check_name(&self.name).map_err(|m| (p(&["name"]), m))?;
        let min_packet = self.smallest_packet();
        if self.flow.len() > MAX_FLOWS {
            return Err((
                p(&["flow"]),
                format!("{} flows: expected at most {MAX_FLOWS}", self.flow.len()),
            ));
        }
        within(
            p(&["stop"]),
            self.stop.0,
            Duration::from_nanos(1),
            MAX_STOP,
            "the stop time",
        )?;
        if !self.sample_interval.0.is_zero() {
            within(
                p(&["sample_interval"]),
                self.sample_interval.0,
                MIN_INTERVAL,
                MAX_STOP,
                "a sample interval (or 0 s: no series)",
            )?;
        }
        if self.memory_budget.0 < MIN_MEMORY_BUDGET {
            return Err((
                p(&["memory_budget"]),
                format!(
                    "{}: expected at least {}",
                    self.memory_budget,
                    units::DataSize(MIN_MEMORY_BUDGET)
                ),
            ));
        }
        if matches!(self.uplink, Some(LinkModel::Cell(_))) {
            return Err((p(&["uplink", "cell"]), "a cell is a base station's downlink: expected it on the downlink; its users' uplinks are `uplink`".into()));
        }
        if !self.is_general() && self.downlink.is_none() {
            return Err((p(&["downlink"]), "expected a [downlink.MODEL] table (with the shorthand), or [host.NAME] and [link.NAME] tables".into()));
        }
        if let Some(w) = &self.wired {
            w.validate(min_packet)
                .map_err(|(key, m)| (p(&["wired", key]), m))?;
        }
        if let Some(a) = &self.access {
            a.validate(min_packet)
                .map_err(|(key, m)| (p(&["access", key]), m))?;
        }
        let mut models: Vec<(Vec<&str>, LinkModel)> = Vec::new();
        models.extend(self.downlink.clone().map(|m| (vec!["downlink"], m)));
        models.extend(self.uplink.clone().map(|m| (vec!["uplink"], m)));
        for (name, l) in &self.link {
            for m in l.models() {
                models.push((vec!["link", name.as_str()], m));
            }
            l.impairments()
                .map_err(|(k, m)| (p(&[&["link", name.as_str()], &k[..]].concat()), m))?;
        }
        for (base, model) in &models {
            model.validate(base, min_packet)?;
        }
        let e = &self.emulation;
        let at = |k: &str| p(&["emulation", k]);
        if !(68..=65535).contains(&e.mtu) {
            return Err((
                at("mtu"),
                format!("{} is not a usable MTU: expected 68 to 65535", e.mtu),
            ));
        }
        if e.offloads {
            return Err((
                at("offloads"),
                "offloads are not supported by the TUN datapath: expected false".into(),
            ));
        }
        if e.congestion.is_some() {
            return Err((at("congestion"), REMOVED_EMULATION_CONGESTION.into()));
        }
        for (k, v) in &e.sysctl {
            let well_formed = k.starts_with("net.")
                && k.split('.').all(|part| {
                    !part.is_empty()
                        && part
                            .chars()
                            .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-')
                });
            if !well_formed {
                return Err((at("sysctl"), format!("`{k}` is not a per-namespace sysctl: expected a key under net., like net.ipv4.tcp_timestamps")));
            }
            if v.contains('\n') {
                return Err((
                    at("sysctl"),
                    format!("the value of `{k}` has a line break: expected one line"),
                ));
            }
        }
        for (i, f) in self.flow.iter().enumerate() {
            if let Some(name) = &f.name {
                let at = vec!["flow".to_string(), i.to_string(), "name".to_string()];
                check_name(name).map_err(|m| (at.clone(), m))?;
                if let Some(j) = self.flow[..i]
                    .iter()
                    .position(|g| g.name.as_ref() == Some(name))
                {
                    return Err((
                        at,
                        format!("flow {j} is named \"{name}\" already: expected a name of its own"),
                    ));
                }
            }
            if let Some(port) = f.port {
                let at = vec!["flow".to_string(), i.to_string(), "port".to_string()];
                if port == 0 {
                    return Err((at, "expected a port from 1 to 65535".into()));
                }
                if let Some(j) = self.flow[..i].iter().position(|g| g.port == Some(port)) {
                    return Err((
                        at,
                        format!("flow {j} has port {port} already: a port picks one flow's path"),
                    ));
                }
            }
            if f.direction == Some(Direction::Up) && f.port.is_some() {
                let at = vec!["flow".to_string(), i.to_string(), "direction".to_string()];
                return Err((at, "`direction` is for airlink's own flows; the kernel's applications (`port`) choose theirs themselves (`iperf3 -c` without -R uploads): expected no `direction` with `port`".into()));
            }
            f.validate(self).map_err(|(mut path, message)| {
                path.splice(0..0, ["flow".to_string(), i.to_string()]);
                (path, message)
            })?;
        }
        self.validate_changes(min_packet)?;
        self.validate_host_budgets()?;
        if self.is_general() {
            if let Some(i) = self.flow.iter().position(|f| f.direction.is_some()) {
                return Err((p(&["flow", &i.to_string(), "direction"]), "`direction` belongs to the shorthand; with [host] and [link] tables the flow's `server` sends and its `client` receives: expected those instead".into()));
            }
            let topology = self.topology()?;
            for (i, (down, up)) in topology.paths.iter().enumerate() {
                // A path with neither a rate nor a delay would run every packet at one instant.
                let rated = down.iter().any(|&l| topology.links[l].model.rated());
                let delays = down.iter().chain(up).fold(Duration::ZERO, |sum, &l| {
                    sum + topology.links[l].model.delay()
                });
                if !rated && delays < MIN_INTERVAL {
                    return Err((
                        p(&["flow", &i.to_string(), "path"]),
                        format!("the flow's path has no rate on any link and a round trip below {MIN_INTERVAL}: expected a `rate` or a delay"),
                    ));
                }
                if !rated && self.flow[i].sends_without_bound() {
                    return Err((
                        p(&["flow", &i.to_string(), "protocol"]),
                        UNBOUNDED_DCCP.replace("LINKS", "a link on the flow's `path`"),
                    ));
                }
            }
            return Ok(());
        }
        for (i, f) in self.flow.iter().enumerate() {
            for (k, v) in [
                ("server", f.server.is_some()),
                ("client", f.client.is_some()),
                ("path", f.path.is_some()),
                ("return_path", f.return_path.is_some()),
            ] {
                if v {
                    return Err((p(&["flow", &i.to_string(), k]), format!("`{k}` applies only to scenarios with [host] and [link] tables; this one uses the shorthand{}", if matches!(k, "server" | "client") { ", whose uploads say `direction = \"up\"`" } else { "" })));
                }
            }
        }
        self.shorthand_has_no_handoffs()?;
        // A path with neither a rate nor a delay would run every packet at one instant.
        let wired = self.wired.clone().unwrap_or_default();
        let down_rated = wired.rate.is_some()
            || self.access.as_ref().is_some_and(|a| a.rate.is_some())
            || self.downlink.as_ref().is_some_and(LinkModel::rated);
        if !down_rated && self.one_way_delays() < MIN_INTERVAL {
            return Err((
                p(&["downlink", "pipe", "rate"]),
                format!("the path has no rate anywhere (wired, access or downlink) and a round trip below {MIN_INTERVAL}: expected a `rate` on the downlink pipe or a delay"),
            ));
        }
        if let Some(i) = self
            .flow
            .iter()
            .position(|f| f.sends_without_bound())
            .filter(|_| !down_rated)
        {
            return Err((
                p(&["flow", &i.to_string(), "protocol"]),
                UNBOUNDED_DCCP.replace("LINKS", "[downlink.pipe] (or [wired] or [access])"),
            ));
        }
        Ok(())
    }
}

impl Scenario {
    /// Checks the timed changes: a time before the stop, a link or flow that exists, parameters
    /// the link's model can change, states that alternate, paths that connect.
    fn validate_changes(&self, min_packet: u64) -> Result<(), (Vec<String>, String)> {
        if self.change.is_empty() {
            return Ok(());
        }
        // Names and models only: a missing shorthand uplink stands in as the pipe it defaults to.
        let mut named = self.clone();
        if !named.is_general() && named.uplink.is_none() {
            named.uplink = Some(LinkModel::Pipe(PipeConfig::default()));
        }
        let topology = named.topology()?;
        let mut down: std::collections::HashSet<&str> = Default::default();
        let mut order: Vec<usize> = (0..self.change.len()).collect();
        order.sort_by_key(|&i| self.change[i].at.0); // stable: the file's order at equal times
        for i in order {
            let c = &self.change[i];
            let at = |k: &str| vec!["change".to_string(), i.to_string(), k.to_string()];
            if c.at.0 > self.stop.0 {
                return Err((
                    at("at"),
                    format!(
                        "{} is after the scenario's stop ({}): expected a time before it",
                        c.at.0, self.stop.0
                    ),
                ));
            }
            match (&c.link, &c.flow) {
                (Some(name), None) => {
                    let Some(link) = topology.links.iter().find(|l| &l.name == name) else {
                        let names: Vec<String> = topology
                            .links
                            .iter()
                            .map(|l| format!("\"{}\"", l.name))
                            .collect();
                        return Err((
                            at("link"),
                            format!(
                                "no link named \"{name}\": expected one of {}",
                                names.join(", ")
                            ),
                        ));
                    };
                    if c.path.is_some() || c.return_path.is_some() {
                        return Err((
                            at("path"),
                            "a path belongs to a flow: expected `flow` instead of `link`".into(),
                        ));
                    }
                    match (&c.set, c.state) {
                        (Some(set), None) => {
                            if c.packets.is_some() {
                                return Err((at("packets"), "`packets` goes with `state = \"down\"`".into()));
                            }
                            let names = set.names();
                            if names.is_empty() {
                                return Err((at("set"), "expected at least one parameter to set".into()));
                            }
                            let can = link.model.changeable();
                            if let Some(bad) = names.iter().find(|n| !can.contains(n)) {
                                let model = link.key.last().map_or("", String::as_str);
                                let list = if can.is_empty() { "none".to_string() } else { can.join(", ") };
                                return Err((at("set"), format!("this {model} link cannot change its `{bad}` while it runs: it can change {list}")));
                            }
                            link.model.config().check_set(set, min_packet).map_err(|(key, m)| (vec!["change".into(), i.to_string(), "set".into(), key.into()], m))?;
                            if let Some(snr) = set.mean_snr.filter(|s| !(MEAN_SNR_DB.contains(&s.0))) {
                                let at = vec!["change".into(), i.to_string(), "set".into(), "mean_snr".into()];
                                return Err((at, format!("{} dB: expected {} dB to {} dB", snr.0, MEAN_SNR_DB.start(), MEAN_SNR_DB.end())));
                            }
                        }
                        (None, Some(state)) => {
                            if state == LinkState::Up && c.packets.is_some() {
                                return Err((at("packets"), "`packets` goes with `state = \"down\"`".into()));
                            }
                            let was_down = down.contains(name.as_str());
                            if (state == LinkState::Down) == was_down {
                                return Err((at("state"), format!("link \"{name}\" is already {} then", if was_down { "down" } else { "up" })));
                            }
                            if state == LinkState::Down {
                                down.insert(&link.name);
                            } else {
                                down.remove(name.as_str());
                            }
                        }
                        _ => return Err((at("link"), "expected either `set` (new parameter values) or `state` (\"down\" or \"up\")".into())),
                    }
                }
                (None, Some(f)) => {
                    let flow = &self.flow[self.find_flow(f).map_err(|m| (at("flow"), m))?];
                    if c.set.is_some() || c.state.is_some() || c.packets.is_some() {
                        return Err((at("flow"), "a flow changes its `path` or `return_path`: `set`, `state` and `packets` belong to a link".into()));
                    }
                    if c.path.is_none() && c.return_path.is_none() {
                        return Err((
                            at("flow"),
                            "expected the flow's new `path` and/or `return_path`".into(),
                        ));
                    }
                    if !self.is_general() {
                        return Err((at("flow"), "moving a flow needs named hosts and links: expected [host] and [link] tables".into()));
                    }
                    let server = flow.server.as_deref().unwrap_or("server");
                    let client = flow.client.as_deref().unwrap_or("client");
                    if let Some(p) = &c.path {
                        topology::check_path(&topology.links, p, server, client)
                            .map_err(|m| (at("path"), m))?;
                    }
                    if let Some(p) = &c.return_path {
                        topology::check_path(&topology.links, p, client, server)
                            .map_err(|m| (at("return_path"), m))?;
                    }
                }
                _ => return Err((at("at"), "expected a `link` or a `flow` to change".into())),
            }
        }
        Ok(())
    }
}

impl Scenario {
    /// Replaces each `[[flow]]` with `copies` by that many flows; returns the table each flow
    /// came from.
    fn expand_copies(&mut self) -> Result<Vec<usize>, (Vec<String>, String)> {
        let mut flows = Vec::with_capacity(self.flow.len());
        let mut tables = Vec::with_capacity(self.flow.len());
        for (i, f) in std::mem::take(&mut self.flow).into_iter().enumerate() {
            let n = f.copies.unwrap_or(1);
            if n == 0 || n as usize > MAX_FLOWS {
                let at = vec!["flow".to_string(), i.to_string(), "copies".to_string()];
                return Err((at, format!("{n}: expected 1 to {MAX_FLOWS} copies")));
            }
            if f.copies.is_none() {
                // One flow, or a copy already expanded: as it is.
                flows.push(f);
                tables.push(i);
                continue;
            }
            // A copy whose `copies` an override set re-expands its table.
            let (table, base) = f.copy_of.clone().unwrap_or((i, f.name.clone()));
            for k in 0..n {
                let name = base.as_ref().map(|name| {
                    if n > 1 {
                        format!("{name}.{k}")
                    } else {
                        name.clone()
                    }
                });
                let copy_of = (n > 1).then(|| (table, base.clone()));
                flows.push(FlowConfig {
                    name,
                    copies: None,
                    copy_of,
                    ..f.clone()
                });
                tables.push(i);
            }
        }
        self.flow = flows;
        Ok(tables)
    }

    /// The index of the flow a change (or a live request) names, or what is wrong with the name.
    pub fn find_flow(&self, f: &FlowRef) -> Result<usize, String> {
        self.flow_index(f).ok_or_else(|| match f {
            FlowRef::Index(i) => format!(
                "flow {i} does not exist: the scenario has {} ([[flow]] tables count from 0)",
                self.flow.len()
            ),
            FlowRef::Name(n) => {
                let names: Vec<String> = self
                    .flow
                    .iter()
                    .filter_map(|f| Some(format!("\"{}\"", f.name.as_ref()?)))
                    .collect();
                let known = if names.is_empty() {
                    "no flow has a name".to_string()
                } else {
                    format!("expected one of {}", names.join(", "))
                };
                format!("no flow named \"{n}\": {known}")
            }
        })
    }

    /// Checks a change made to a running emulation (its `at` is ignored: it applies now) with
    /// the checks of the scenario's own `[[change]]`s; `down` names the links that are down
    /// now. The error's key path is the change's own (`set.rate`, `path`), without `change.N`.
    pub fn validate_live_change(
        &self,
        c: &ChangeConfig,
        down: &[&str],
    ) -> Result<(), (Vec<String>, String)> {
        let now = ChangeConfig {
            at: units::Time(Duration::ZERO),
            ..c.clone()
        };
        let mut s = self.clone();
        // The links down now, as changes before this one.
        let was_down = |l: &&str| ChangeConfig {
            at: units::Time(Duration::ZERO),
            link: Some(l.to_string()),
            state: Some(LinkState::Down),
            set: None,
            packets: None,
            flow: None,
            path: None,
            return_path: None,
        };
        s.change = down.iter().map(was_down).chain([now]).collect();
        s.validate_changes(s.smallest_packet())
            .map_err(|(mut key, m)| {
                key.drain(..key.len().min(2));
                (key, m)
            })
    }

    /// The index of the flow a change names.
    pub fn flow_index(&self, f: &FlowRef) -> Option<usize> {
        match f {
            FlowRef::Index(i) => (*i < self.flow.len()).then_some(*i),
            FlowRef::Name(n) => self.flow.iter().position(|g| g.name.as_ref() == Some(n)),
        }
    }
}

impl Scenario {
    /// The smallest IP packet the flows put on a link: a TCP or DCCP acknowledgement (40 B),
    /// or a UDP datagram (a VBR frame's last piece may be a single byte).
    fn smallest_packet(&self) -> u64 {
        self.flow
            .iter()
            .map(|f| match (f.protocol, f.app()) {
                (Protocol::Udp, App::Cbr) => f.datagram_payload() as u64 + 28,
                (Protocol::Udp, _) => 29,
                _ => 40,
            })
            .min()
            .unwrap_or(40)
    }

    /// The sum of every shorthand link's one-way delay, both directions.
    fn one_way_delays(&self) -> Duration {
        let down = self
            .downlink
            .as_ref()
            .map_or(Duration::ZERO, LinkModel::delay);
        let up = self.uplink.as_ref().map_or(down, LinkModel::delay);
        let access = self.access.as_ref().map_or(Duration::ZERO, |a| a.delay.0);
        let wired = self.wired.as_ref().map_or(Duration::ZERO, |w| w.delay.0);
        wired + wired + access + access + down + up
    }
}

/// Why a DCCP bulk flow needs a rated link on its way down; LINKS says where to put one.
const UNBOUNDED_DCCP: &str = "a DCCP flow with app \"bulk\" sends as fast as its CCID allows, and with no rate on any \
    link on its way down nothing is ever lost or queued, so its rate would double every round trip without end \
    (DCCP has no receive window to stop it): expected a `rate` on LINKS, or app = \"cbr\" with a `rate`";

/// iperf's default UDP payload (a 1498-byte IP packet).
const DEFAULT_DATAGRAM: u32 = 1470;

impl FlowConfig {
    /// A flow nothing but the network can slow down: DCCP bulk (TCP has its receive window,
    /// media sources their rate).
    fn sends_without_bound(&self) -> bool {
        self.protocol == Protocol::Dccp && self.app() == App::Bulk
    }

    /// The payload of a UDP or DCCP flow's datagrams: its `packet_size`, else the protocol's
    /// default. DCCP never fragments (RFC 4340 §14): its default leaves room in a 1500-byte MTU
    /// for the generic header, the acknowledgement subheader and options.
    pub fn datagram_payload(&self) -> u32 {
        let default = match self.protocol {
            Protocol::Dccp => DccpConfig::default().packet_size,
            _ => DEFAULT_DATAGRAM,
        };
        self.packet_size.map_or(default, |b| b.0 as u32)
    }

    /// DCCP never fragments (RFC 4340 §14): every data packet, with its IP header and the
    /// longest DCCP header and options the sender puts on data, must fit the path MTU, which
    /// is `[emulation] mtu` in both modes (the emulated interfaces' MTU).
    fn check_dccp_mtu(&self, mtu: u32) -> Result<(), (Vec<String>, String)> {
        let most = DccpPacket::max_data_payload(mtu) as u64;
        let piece = self.datagram_payload() as u64;
        // A VBR frame is cut into datagrams of at most `packet_size`.
        let frame = self
            .frame_sizes
            .iter()
            .flatten()
            .map(|f| f.0)
            .max()
            .filter(|_| self.app() == App::Vbr);
        let (largest, key) = match frame {
            Some(f) if f < piece => (f, "frame_sizes"),
            _ => (piece, "packet_size"),
        };
        if largest <= most {
            return Ok(());
        }
        let overhead = (DccpPacket::IP_HEADER_LEN + DccpPacket::MAX_DATA_HEADER_LEN) as u64;
        let (what, fix) = match (key, self.packet_size) {
            ("frame_sizes", _) => (
                format!("a frame of {largest} B is one DCCP packet, which"),
                format!("use frames of at most {most} B, or a packet_size of at most {most} B to cut them"),
            ),
            (_, None) => (
                format!("a DCCP packet of {largest} B payload (the default packet_size)"),
                format!("set packet_size to at most {most} B"),
            ),
            _ => (format!("a DCCP packet of {largest} B payload"), format!("use at most {most} B")),
        };
        Err((
            vec![key.to_string()],
            format!(
                "{what} is {} B with its headers (IP {} B, DCCP up to {} B), more than the MTU of {mtu} B ([emulation] mtu): DCCP never fragments; {fix}",
                largest + overhead,
                DccpPacket::IP_HEADER_LEN,
                DccpPacket::MAX_DATA_HEADER_LEN,
            ),
        ))
    }

    /// Datagrams per second of a media source (cbr, vbr), if this flow has one.
    fn media_packet_rate(&self) -> Option<f64> {
        let payload = self.datagram_payload().max(1) as f64;
        match self.app() {
            App::Cbr => self.rate.map(|r| r.0 as f64 / 8.0 / payload),
            App::Vbr => {
                let pieces = self
                    .frame_sizes
                    .as_ref()?
                    .iter()
                    .map(|f| (f.0 as f64 / payload).ceil().max(1.0))
                    .fold(1.0, f64::max);
                self.frame_rate.map(|fps| fps * pieces)
            }
            _ => None,
        }
    }
}

impl FlowConfig {
    /// Checks one flow; the key path returned is relative to the flow.
    fn validate(&self, scenario: &Scenario) -> Result<(), (Vec<String>, String)> {
        let p = |parts: &[&str]| parts.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let protocol = format!("{:?}", self.protocol).to_lowercase();
        let app = self.app();
        let app_name = format!("{app:?}").to_lowercase();
        let only = |key: &str, what: &str| {
            Err((
                p(&[key]),
                format!("`{key}` applies only to {what}; this flow is {protocol} {app_name}"),
            ))
        };
        match self.protocol {
            Protocol::Tcp => {
                if self.ccid.is_some() {
                    return only("ccid", "dccp flows");
                }
                if self.dccp.is_some() {
                    return only("dccp", "dccp flows");
                }
                if !matches!(app, App::Bulk | App::File) {
                    return Err((
                        p(&["app"]),
                        format!("a tcp flow carries bulk or file, not {app_name}"),
                    ));
                }
            }
            Protocol::Udp | Protocol::Dccp => {
                if self.ecn {
                    return only("ecn", "tcp flows (RFC 3168 ECN is airlink's TCP's)");
                }
                if self.congestion.is_some() {
                    return only("congestion", "tcp flows (dccp flows choose with `ccid`)");
                }
                if self.protocol == Protocol::Udp && self.ccid.is_some() {
                    return only("ccid", "dccp flows");
                }
                if self.protocol == Protocol::Udp && !matches!(app, App::Cbr | App::Vbr) {
                    return Err((
                        p(&["app"]),
                        format!("a udp flow carries cbr or vbr, not {app_name}"),
                    ));
                }
                if self.protocol == Protocol::Dccp && app == App::File {
                    return Err((
                        p(&["app"]),
                        "dccp is unreliable, so it carries bulk, cbr or vbr, not a file".into(),
                    ));
                }
            }
        }
        if let Some(ccid) = self.ccid {
            if ccid != 2 && ccid != 3 {
                return Err((
                    p(&["ccid"]),
                    format!("unknown CCID {ccid}: expected 2 (TCP-like) or 3 (TFRC)"),
                ));
            }
        }
        match app {
            App::File if self.bytes.is_none_or(|b| b.0 == 0) => {
                return Err((
                    p(&["app"]),
                    "a file transfer needs `bytes`, more than 0".into(),
                ))
            }
            App::Cbr if self.rate.is_none() => {
                return Err((p(&["app"]), "a cbr source needs `rate`".into()))
            }
            App::Vbr
                if self.frame_sizes.as_ref().is_none_or(|f| f.is_empty())
                    || self.frame_rate.is_none() =>
            {
                return Err((
                    p(&["app"]),
                    "a vbr source needs `frame_sizes` (a non-empty list) and `frame_rate`".into(),
                ))
            }
            _ => {}
        }
        let media = matches!(app, App::Cbr | App::Vbr);
        if self.bytes.is_some() && (media || self.protocol != Protocol::Tcp) {
            return only("bytes", "tcp bulk and file applications");
        }
        if self.rate.is_some() && app != App::Cbr {
            return only("rate", "cbr sources");
        }
        if (self.frame_sizes.is_some() || self.frame_rate.is_some()) && app != App::Vbr {
            return only(
                if self.frame_rate.is_some() {
                    "frame_rate"
                } else {
                    "frame_sizes"
                },
                "vbr sources",
            );
        }
        if let Some(r) = self.frame_rate {
            if !(r > 0.0 && r <= 10_000.0) {
                return Err((
                    p(&["frame_rate"]),
                    format!("{r} frames per second: expected more than 0, at most 10000"),
                ));
            }
        }
        if self.frame_sizes.as_ref().is_some_and(|f| f.len() > 100_000) {
            return Err((
                p(&["frame_sizes"]),
                "expected at most 100000 frame sizes".into(),
            ));
        }
        if let Some(r) = self.rate {
            if r.0 == 0 {
                return Err((p(&["rate"]), "expected a positive rate".into()));
            }
            check_rate(r).map_err(|m| (p(&["rate"]), m))?;
        }
        if let Some(d) = &self.device {
            d.validate()
                .map_err(|(k, m)| ([&p(&["device"])[..], &k].concat(), m))?;
        }
        let max_payload = 65_507;
        let sizes = self
            .packet_size
            .iter()
            .chain(self.frame_sizes.iter().flatten());
        for s in sizes {
            if s.0 == 0 || s.0 > max_payload {
                let key = if self.packet_size == Some(*s) {
                    "packet_size"
                } else {
                    "frame_sizes"
                };
                return Err((
                    p(&[key]),
                    format!("{} B: expected 1 to {max_payload} B of payload", s.0),
                ));
            }
        }
        if self.protocol == Protocol::Dccp {
            self.check_dccp_mtu(scenario.emulation.mtu)?;
        }
        if let (Some(rate), Some(size)) = (self.rate, self.packet_size) {
            let pps = rate.0 as f64 / 8.0 / size.0 as f64;
            if pps > MAX_PACKET_RATE {
                return Err((p(&["rate"]), format!("{rate} in {size} datagrams is {pps:.0} datagrams/s: expected at most {MAX_PACKET_RATE:.0}")));
            }
        }
        if let (Some(fps), Some(frames), Some(size)) =
            (self.frame_rate, &self.frame_sizes, self.packet_size)
        {
            let pieces = frames
                .iter()
                .map(|f| f.0.div_ceil(size.0))
                .max()
                .unwrap_or(1) as f64;
            if fps * pieces > MAX_PACKET_RATE {
                return Err((
                    p(&["frame_rate"]),
                    format!(
                        "up to {:.0} datagrams/s: expected at most {MAX_PACKET_RATE:.0}",
                        fps * pieces
                    ),
                ));
            }
        }
        let delays = scenario.one_way_delays();
        if let Some(pps) = self.media_packet_rate() {
            let held = pps * delays.as_secs_f64();
            if held > MAX_PACKETS_HELD as f64 {
                let key = if self.app() == App::Cbr {
                    "rate"
                } else {
                    "frame_rate"
                };
                return Err((p(&[key]), format!(
                    "this source's {pps:.0} datagrams/s over the path's {delays} of delay are {held:.0} packets in flight: expected at most {MAX_PACKETS_HELD}"
                )));
            }
        }
        if !self.report_interval.0.is_zero() {
            within(
                p(&["report_interval"]),
                self.report_interval.0,
                MIN_INTERVAL,
                MAX_STOP,
                "a report interval (or 0 s: none)",
            )?;
        }
        if let Some(stop) = self.stop {
            if stop.0 <= self.start.latest().0 {
                return Err((p(&["stop"]), "the flow stops before it starts".into()));
            }
        }
        if self.start.latest().0 >= scenario.stop.0 {
            return Err((
                p(&["start"]),
                "the flow starts after the scenario's stop".into(),
            ));
        }
        let congestion = self.congestion();
        if let Some(c) = &self.cubic {
            if congestion != Congestion::Cubic {
                return only("cubic", "congestion = \"cubic\"");
            }
            if let Some(beta) = c.beta.filter(|b| !(*b > 0.0 && *b < 1.0)) {
                return Err((p(&["cubic", "beta"]), format!("{beta} is outside (0, 1)")));
            }
            if let Some(x) = c.c.filter(|x| !(*x > 0.0 && x.is_finite())) {
                return Err((
                    p(&["cubic", "c"]),
                    format!("{x}: expected a positive number"),
                ));
            }
        }
        if let Some(v) = &self.veno {
            if congestion != Congestion::Veno {
                return only("veno", "congestion = \"veno\"");
            }
            if let Some(beta) = v.beta.filter(|b| !(*b > 0.0 && b.is_finite())) {
                return Err((
                    p(&["veno", "beta"]),
                    format!("{beta}: expected a positive number of segments"),
                ));
            }
            if let Some(f) = v.random_loss_factor.filter(|b| !(*b > 0.0 && *b < 1.0)) {
                return Err((
                    p(&["veno", "random_loss_factor"]),
                    format!("{f} is outside (0, 1)"),
                ));
            }
        }
        if self.afc.is_some() && congestion != Congestion::Afc {
            return only("afc", "congestion = \"afc\"");
        }
        if let Some(d) = &self.dccp {
            if d.ack_ratio == Some(0) {
                return Err((p(&["dccp", "ack_ratio"]), "expected at least 1".into()));
            }
            if d.send_queue == Some(0) {
                return Err((
                    p(&["dccp", "send_queue"]),
                    "expected at least 1 packet".into(),
                ));
            }
        }
        if let Some(d) = &self.dccp {
            if d.ack_ratio.is_some_and(|r| r > 65_535) {
                return Err((p(&["dccp", "ack_ratio"]), "expected 1 to 65535".into()));
            }
            if d.send_queue.is_some_and(|q| q > 100_000) {
                return Err((
                    p(&["dccp", "send_queue"]),
                    "expected 1 to 100000 packets".into(),
                ));
            }
        }
        if let Some(c) = self.cubic.as_ref().and_then(|c| c.c).filter(|c| *c > 100.0) {
            return Err((p(&["cubic", "c"]), format!("{c}: expected at most 100")));
        }
        if let Some(b) = self
            .veno
            .as_ref()
            .and_then(|v| v.beta)
            .filter(|b| *b > 10_000.0)
        {
            return Err((
                p(&["veno", "beta"]),
                format!("{b}: expected at most 10000 segments"),
            ));
        }
        let at = |k: &str| p(&["tcp", k]);
        if let Some(w) = self.tcp.rwnd {
            if w.0 == 0 || w.0 > 1 << 30 {
                return Err((
                    at("rwnd"),
                    format!("{w}: expected 1 B to 1 GiB (RFC 7323's largest window)"),
                ));
            }
            let mss = self
                .tcp
                .mtu
                .unwrap_or(1500)
                .saturating_sub(if self.tcp.timestamps == Some(true) {
                    52
                } else {
                    40
                })
                .max(1) as u64;
            if w.0 / mss > MAX_PACKETS_HELD {
                return Err((at("rwnd"), format!("{w} is {} segments of {mss} B: expected at most {MAX_PACKETS_HELD} segments", w.0 / mss)));
            }
        }
        if self.tcp.initial_window.is_some_and(|w| w > 1000)
            || self.tcp.ack_every.is_some_and(|a| a > 1000)
        {
            let key = if self.tcp.ack_every.is_some_and(|a| a > 1000) {
                "ack_every"
            } else {
                "initial_window"
            };
            return Err((at(key), "expected 1 to 1000 segments".into()));
        }
        for (key, t) in [
            ("delack_timeout", self.tcp.delack_timeout),
            ("rto_min", self.tcp.rto_min),
            ("rto_max", self.tcp.rto_max),
            ("rto_init", self.tcp.rto_init),
            ("clock_granularity", self.tcp.clock_granularity),
            ("tick", self.tcp.tick),
        ] {
            if let Some(t) = t {
                within(at(key), t.0, Duration::ZERO, MAX_DELAY, "a time")?;
            }
        }
        if self.tcp.rto_min.is_some_and(|t| t.0 < MIN_INTERVAL) {
            return Err((at("rto_min"), format!("expected at least {MIN_INTERVAL}")));
        }
        if let Some(mtu) = self.tcp.mtu {
            if !(68..=65535).contains(&mtu) {
                return Err((
                    at("mtu"),
                    format!("{mtu} is not a usable MTU: expected 68 to 65535"),
                ));
            }
        }
        if self.tcp.ack_every == Some(0) {
            return Err((at("ack_every"), "expected at least 1".into()));
        }
        if self.tcp.initial_window == Some(0) {
            return Err((at("initial_window"), "expected at least 1 segment".into()));
        }
        if let (Some(lo), Some(hi)) = (self.tcp.rto_min, self.tcp.rto_max) {
            if lo.0 > hi.0 {
                return Err((at("rto_min"), "rto_min is larger than rto_max".into()));
            }
        }
        Ok(())
    }
}

fn parse_override_value(v: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {v}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(v.trim_matches('"').to_owned()))
}

fn set_path(doc: &mut toml::Table, key: &str, value: toml::Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    // A table the scenario leaves out (`wired`, `uplink`) may be set: it is created here, and
    // a name the schema does not know is refused when the result is read back.
    let mut node: &mut toml::Value = doc
        .entry(parts[0])
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if parts.len() == 1 {
        *node = value;
        return Ok(());
    }
    for (depth, part) in parts[1..].iter().enumerate() {
        let last = depth + 2 == parts.len();
        node = match node {
            toml::Value::Table(t) => {
                if last {
                    // A key the resolved scenario leaves out (an optional field) may be set.
                    t.insert(part.to_string(), value);
                    return Ok(());
                }
                t.entry(*part)
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            }
            toml::Value::Array(a) => {
                let i: usize = part.parse().map_err(|_| {
                    format!(
                        "`{}` is a list: expected an index",
                        parts[..depth + 1].join(".")
                    )
                })?;
                let len = a.len();
                let item = a
                    .get_mut(i)
                    .ok_or_else(|| format!("index {i} is out of range (the list has {len})"))?;
                if last {
                    *item = value;
                    return Ok(());
                }
                item
            }
            _ => return Err(format!("`{}` is not a table", parts[..depth + 1].join("."))),
        };
    }
    Ok(())
}

/// Finds the span of the value of `path` (e.g. `downlink.ofdm4g.queue`) in the source text,
/// for errors raised after parsing, or of its table's header when the file leaves the key
/// out. Array elements are counted by their `[[name]]` headers.
fn find_key_span(text: &str, path: &[String]) -> Option<std::ops::Range<usize>> {
    // A line scan suffices: the file already parsed, so keys are well formed.
    let mut spanned_value: Option<std::ops::Range<usize>> = None;
    let leaf = path.last()?;
    let table_path: Vec<&str> = path[..path.len() - 1]
        .iter()
        .map(String::as_str)
        .filter(|s| s.parse::<usize>().is_err())
        .collect();
    let index: Option<usize> = path.iter().find_map(|s| s.parse().ok());
    let mut offset = 0;
    // Which element of the `[[array]]` the lines belong to, counted by its headers.
    let mut arrays_seen = 0usize;
    let mut current: Option<usize> = None;
    let mut in_table = table_path.is_empty();
    // Where a key the file leaves out is reported: the header of its table.
    let mut header: Option<std::ops::Range<usize>> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            let name = trimmed.trim_matches(|c| c == '[' || c == ']').trim();
            if trimmed.starts_with("[[") && Some(name) == table_path.first().copied() {
                current = Some(arrays_seen);
                arrays_seen += 1;
            }
            let this_element = index.is_none() || current == index;
            let full = [table_path.join("."), leaf.clone()]
                .join(".")
                .trim_start_matches('.')
                .to_string();
            if (name == full || name.starts_with(&format!("{full}."))) && this_element {
                // The key is itself a table (or holds one): point at its header.
                let indent = line.len() - line.trim_start().len();
                return Some(offset + indent..offset + line.trim_end().len());
            }
            in_table = name == table_path.join(".") && this_element;
            if in_table && header.is_none() {
                let indent = line.len() - line.trim_start().len();
                header = Some(offset + indent..offset + line.trim_end().len());
            }
        } else if in_table {
            let key = trimmed.split('=').next().unwrap_or("").trim();
            if key == leaf && trimmed.contains('=') {
                let col = line.find('=').unwrap() + 1;
                let value_start = col + line[col..].len() - line[col..].trim_start().len();
                spanned_value = Some(offset + value_start..offset + line.trim_end().len());
                break;
            }
        }
        offset += line.len();
    }
    // A key inside an inline table (`set = { mean_snr = .. }`): the line of the table's key.
    spanned_value.or(header).or_else(|| {
        (path.len() > 1)
            .then(|| find_key_span(text, &path[..path.len() - 1]))
            .flatten()
    })
}

#[cfg(test)]
mod tests;
