//! `[downlink.trace]`, `[link.NAME.trace]`: a trace-driven link (Mahimahi's, LeoReplayer's or
//! the CSV form, with delay and loss series beside it). The model is `airlink_link::TraceLink`;
//! its rule header lists references and deviations. The files are read when the scenario is
//! built into models, not when it is parsed.

use super::pipe::{default_pipe_queue, zero_time};
use super::ModelConfig;
use crate::units::{DataSize, Probability, QueueLimit, Time};
use crate::{check_queue, within, Invalid, MAX_DELAY};
use airlink_engine::Duration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A trace-driven link (Mahimahi's `mm-link` format: one integer millisecond per line, each an
/// opportunity to deliver 1500 bytes; the trace repeats). The file is read when the scenario
/// is built into models, not when it is parsed.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    /// Path of the trace file; a relative path is taken from the scenario file's folder.
    pub file: String,
    /// One-way delay added after the link. Default 0.
    #[serde(default = "zero_time")]
    pub delay: Time,
    /// Drop-tail queue limit in packets or bytes. Default 1000 packets.
    #[serde(default = "default_pipe_queue")]
    pub queue: QueueLimit,
    /// Queue discipline in front of the link (needs a rate): `"droptail"`, `"codel"`,
    /// `"fq_codel"`, `"pie"`, `"red"`, or a table with its parameters (`aqm.kind`, ...); its
    /// limit is `queue`. Absent: the link's own drop-tail queue.
    #[serde(
        default,
        deserialize_with = "crate::aqm::deserialize",
        skip_serializing_if = "Option::is_none"
    )]
    pub aqm: Option<crate::aqm::AqmConfig>,
    /// The form of `file`: "mahimahi" (one ms timestamp per line, each a delivery
    /// opportunity; LeoReplayer's bandwidth traces too, with `opportunity`) or "csv" (rows of
    /// time, rate and optionally delay_ms and loss; see docs/traces.md). Default mahimahi.
    #[serde(default, skip_serializing_if = "TraceFormat::is_default")]
    pub format: TraceFormat,
    /// Bytes one line (opportunity) carries: 1500 B in Mahimahi's traces; LeoReplayer's give
    /// each line the rate of their own choosing. Default 1500 B.
    #[serde(
        default = "default_opportunity",
        skip_serializing_if = "is_default_opportunity"
    )]
    pub opportunity: DataSize,
    /// One-way delay trace, added to `delay`: one value in ms per `delay_interval` per line
    /// (LeoReplayer's format), or two columns `time_ms delay_ms`; it repeats. Relative paths
    /// from the scenario's folder. Absent: the delay is `delay` alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_file: Option<String>,
    /// The step of a one-column `delay_file`. Default 10 ms (LeoReplayer's).
    #[serde(
        default = "default_series_interval",
        skip_serializing_if = "is_default_series_interval"
    )]
    pub delay_interval: Time,
    /// Probability that a packet the link serves is lost. Default 0.
    #[serde(default, skip_serializing_if = "is_zero_probability")]
    pub loss: Probability,
    /// Loss probability trace (instead of `loss`): one probability per `loss_interval` per
    /// line, or two columns `time_ms probability`; it repeats. Absent: `loss`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_file: Option<String>,
    /// The step of a one-column `loss_file`. Default 10 ms.
    #[serde(
        default = "default_series_interval",
        skip_serializing_if = "is_default_series_interval"
    )]
    pub loss_interval: Time,
    /// Start each run at a random whole-ms offset into the traces (uniform over the capacity
    /// trace's period, drawn from the link's stream of the run seed), so that seeds differ.
    /// Default false: every run starts at the traces' beginning.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub random_start: bool,
    /// Let a packet overtake an earlier one when the delay trace falls faster than packets
    /// are spaced. Default false: it waits behind the earlier one (a path keeps order).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reorder: bool,
}

/// The form of a trace link's `file`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// One integer ms per line, each a delivery opportunity (Mahimahi, LeoReplayer).
    #[default]
    Mahimahi,
    /// A header and rows of time, rate, and optionally delay_ms and loss.
    Csv,
}

impl TraceFormat {
    pub(crate) fn is_default(&self) -> bool {
        *self == TraceFormat::Mahimahi
    }
}

pub(crate) fn default_opportunity() -> DataSize {
    DataSize(1500)
}
pub(crate) fn is_default_opportunity(d: &DataSize) -> bool {
    d.0 == 1500
}
pub(crate) fn default_series_interval() -> Time {
    Time(Duration::from_millis(10))
}
pub(crate) fn is_default_series_interval(t: &Time) -> bool {
    t.0 == Duration::from_millis(10)
}
pub(crate) fn is_zero_probability(p: &Probability) -> bool {
    p.0 == 0.0
}

/// Checks the keys beside `file` that `file`'s own check does not cover: (key, message).
fn validate_files(t: &TraceConfig) -> Result<(), (&'static str, String)> {
    let file = |key: &'static str, f: &Option<String>| match f {
        Some(f) if f.is_empty() || f.contains('\0') => Err((
            key,
            "expected the path of a trace file, without NUL characters".to_owned(),
        )),
        _ => Ok(()),
    };
    file("delay_file", &t.delay_file)?;
    file("loss_file", &t.loss_file)?;
    for (key, step) in [
        ("delay_interval", t.delay_interval),
        ("loss_interval", t.loss_interval),
    ] {
        if step.0 < Duration::from_micros(1) || step.0 > Duration::from_secs(3600) {
            return Err((key, format!("{step}: expected a step from 1 us to 1 h")));
        }
    }
    if !(1..=1_000_000).contains(&t.opportunity.0) {
        return Err((
            "opportunity",
            format!("{}: expected 1 B to 1 MB per line", t.opportunity),
        ));
    }
    if t.loss_file.is_some() && t.loss.0 > 0.0 {
        return Err((
            "loss_file",
            "both `loss` and `loss_file` given: expected one of them".to_owned(),
        ));
    }
    if t.format == TraceFormat::Csv {
        let given = [
            ("delay_file", t.delay_file.is_some()),
            ("loss_file", t.loss_file.is_some()),
            ("loss", t.loss.0 > 0.0),
        ];
        if let Some((key, _)) = given.iter().find(|(_, g)| *g) {
            return Err((
                key,
                "a CSV trace gives the delay and loss in its own columns: expected no delay_file, loss_file or loss beside format = \"csv\"".to_owned(),
            ));
        }
    }
    Ok(())
}

impl ModelConfig for TraceConfig {
    fn kind(&self) -> &'static str {
        "trace"
    }
    fn delay(&self) -> Duration {
        self.delay.0
    }
    fn check(&self, base: &[&str], min_packet: u64) -> Result<(), Invalid> {
        let t = self;
        let p = |parts: &[&str]| parts.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let at = |k: &str| p(&[base, &["trace", k]].concat());
        if t.file.is_empty() || t.file.contains('\0') {
            return Err((
                at("file"),
                "expected the path of a trace file, without NUL characters".into(),
            ));
        }
        within(at("delay"), t.delay.0, Duration::ZERO, MAX_DELAY, "a delay")?;
        check_queue(&t.queue, min_packet).map_err(|m| (at("queue"), m))?;
        validate_files(t).map_err(|(k, m)| (at(k), m))?;
        Ok(())
    }
    fn files_mut(&mut self) -> Vec<&mut String> {
        [
            Some(&mut self.file),
            self.delay_file.as_mut(),
            self.loss_file.as_mut(),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}
