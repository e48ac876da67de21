//! The emulation summary as written to `summary.json`: what the emulator measured
//! ([`airlink_emu::EmulationSummary`]) completed with how the run went. The caller (Python's
//! `emulate` and `gateway`) knows only the facts it alone sees — its commands' exit codes and
//! times, a timeout, a signal, iperf3's reports it parsed — and passes them in; whether the run
//! *completed* and how long it took are decided here, in one place, beside the fields they join.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct EmulationSummary {
    #[serde(flatten)]
    pub measured: airlink_emu::EmulationSummary,
    /// With commands: the client command exited with 0; with airlink's own flows: every flow
    /// completed (as in simulation); in gateway mode: always. In every mode only within the
    /// timeout and with nothing interrupting the run.
    pub completed: bool,
    /// What stopped the run early (`"SIGINT"`, `"signal 15"`, `"exit"`), or null.
    pub interrupted: Option<String>,
    /// The timeout passed before the run ended by itself.
    pub timed_out: bool,
    /// Gateway mode: what ended forwarding (`"duration"`, `"SIGINT"`, `"signal 15"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// Wall time from the emulation's start to its stop, s.
    pub duration_s: f64,
    /// The commands run in the namespaces, server first.
    pub commands: Vec<Command>,
    /// Commands running iperf3: its reports as flows, and what could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iperf3: Option<Iperf3Results>,
}

/// A flow end's namespace.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Side {
    Client,
    Server,
}

/// One command run in a namespace.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Command {
    pub side: Side,
    /// As given.
    pub command: String,
    /// As it ran, when airlink changed it (added iperf3's `-J`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran: Option<String>,
    /// Seconds after the run's start.
    pub start_s: f64,
    /// Null when the run stopped before the command ended by itself.
    #[serde(default)]
    pub end_s: Option<f64>,
    /// Negative: killed by that signal; null: still running when the run stopped.
    #[serde(default)]
    pub exit_code: Option<i32>,
}

/// iperf3's reports, parsed by `airlink.iperf` (their shape is iperf3's, not airlink's).
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Iperf3Results {
    /// One entry per iperf3 stream.
    pub flows: Vec<IndexMap<String, serde_json::Value>>,
    /// Which file each side's report was read from.
    pub reports: BTreeMap<String, String>,
    pub warnings: Vec<String>,
}

/// How the run went, as the caller saw it.
pub(crate) struct Outcome {
    pub commands: Vec<Command>,
    pub interrupted: Option<String>,
    pub timed_out: bool,
    pub stopped_by: Option<String>,
    /// Warnings of the caller's (live control unavailable, iperf3 reports unreadable), after
    /// the emulator's own.
    pub warnings: Vec<String>,
    pub iperf3: Option<Iperf3Results>,
}

/// How the run's traffic was made.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Traffic {
    /// Commands in the namespaces (the kernel's transports).
    Commands,
    /// airlink's own transports (`start_flows`).
    OwnFlows,
    /// Forwarding between two interfaces.
    Gateway,
}

impl EmulationSummary {
    pub fn complete(
        mut measured: airlink_emu::EmulationSummary,
        traffic: Traffic,
        duration_s: f64,
        outcome: Outcome,
    ) -> EmulationSummary {
        let finished = match traffic {
            Traffic::Gateway => true,
            Traffic::OwnFlows => measured.stack.as_ref().is_some_and(|s| s.report.completed),
            Traffic::Commands => outcome
                .commands
                .iter()
                .any(|c| c.side == Side::Client && c.exit_code == Some(0)),
        };
        measured.warnings.extend(outcome.warnings);
        EmulationSummary {
            measured,
            completed: finished && !outcome.timed_out && outcome.interrupted.is_none(),
            interrupted: outcome.interrupted,
            timed_out: outcome.timed_out,
            stopped_by: outcome.stopped_by,
            duration_s,
            commands: outcome.commands,
            iperf3: outcome.iperf3,
        }
    }
}
