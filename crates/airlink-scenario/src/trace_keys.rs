//! Helpers of a trace link's keys (`[downlink.trace]`): the file's form and the defaults of
//! the keys beside `file`, kept out of the schema file that every link model edits.

use crate::units::{DataSize, Probability, Time};
use airlink_engine::Duration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
pub(crate) fn validate(t: &crate::TraceConfig) -> Result<(), (&'static str, String)> {
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
