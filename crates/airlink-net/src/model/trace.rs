//! A trace-driven link in the network's terms, built from its scenario table: the capacity
//! file (Mahimahi's, LeoReplayer's or the CSV form), and the delay and loss series beside it.

use super::{NetModel, Site};
use crate::build::{BuildError, BuiltLink};
use airlink_engine::RngStream;
use airlink_link::{
    CsvTrace, LinkChange, Packet, QueueLimit, Series, SeriesKind, Trace, TraceLink, TraceParams,
};
use airlink_scenario as sc;
use std::path::Path;

/// The fastest trace-driven link: 10 Gbit/s on average, as the scenario's rates.
const MAX_TRACE_RATE_BPS: f64 = 1e10;

/// What the files of a trace table give.
struct TraceFiles {
    capacity: Trace,
    delay_ms: Option<Series>,
    loss: Option<Series>,
}

/// Reads every file a trace table names; `key` is where the scenario names it
/// (`downlink.trace`), for messages.
fn read_files(t: &sc::TraceConfig, key: &str) -> Result<TraceFiles, BuildError> {
    let opportunity = t.opportunity.0 as u32; // validated: at most 1 MB
    let text = |file: &str, which: &str| {
        airlink_link::read_trace_text(Path::new(file))
            .map_err(|e| BuildError(format!("{key}.{which}: {e}")))
    };
    let series = |file: &Option<String>, which: &str, kind, step: sc::units::Time| {
        file.as_deref()
            .map(|f| {
                Series::parse(&text(f, which)?, f, kind, step.0)
                    .map_err(|e| BuildError(format!("{key}.{which}: {e}")))
            })
            .transpose()
    };
    let files = match t.format {
        sc::TraceFormat::Mahimahi => TraceFiles {
            capacity: Trace::parse(&text(&t.file, "file")?, &t.file)
                .map_err(|e| BuildError(format!("{key}.file: {e}")))?
                .with_opportunity_bytes(opportunity),
            delay_ms: series(
                &t.delay_file,
                "delay_file",
                SeriesKind::DelayMs,
                t.delay_interval,
            )?,
            loss: series(&t.loss_file, "loss_file", SeriesKind::Loss, t.loss_interval)?,
        },
        sc::TraceFormat::Csv => {
            let csv = CsvTrace::parse(&text(&t.file, "file")?, &t.file, opportunity)
                .map_err(|e| BuildError(format!("{key}.file: {e}")))?;
            TraceFiles {
                capacity: csv.capacity,
                delay_ms: csv.delay_ms,
                loss: csv.loss,
            }
        }
    };
    let rate = files.capacity.mean_rate_bps();
    if rate > MAX_TRACE_RATE_BPS {
        return Err(BuildError(format!(
            "{key}.file: {}: a mean rate of {rate:.3e} bit/s: expected at most 10 Gbit/s",
            t.file
        )));
    }
    Ok(files)
}

/// The capacity trace alone (for a link's mean rate).
pub(crate) fn read_capacity(t: &sc::TraceConfig, key: &str) -> Result<Trace, BuildError> {
    Ok(read_files(t, key)?.capacity)
}

/// The trace link of `t`; its random start and losses draw from the stream named `name`.
pub(crate) fn trace_link<P: Packet + Send + 'static>(
    name: &'static str,
    t: &sc::TraceConfig,
    seed: u64,
    key: &str,
) -> Result<BuiltLink<P>, BuildError> {
    let files = read_files(t, key)?;
    let params = TraceParams {
        delay: t.delay.0,
        queue_limit: match t.queue {
            sc::units::QueueLimit::Packets(n) => QueueLimit::Packets(n),
            sc::units::QueueLimit::Bytes(b) => QueueLimit::Bytes(b),
        },
        delay_ms: files.delay_ms,
        loss: t.loss.0,
        loss_series: files.loss,
        random_start: t.random_start,
        reorder: t.reorder,
    };
    let queue = params.queue_limit;
    let rate = files.capacity.mean_rate_bps() as u64;
    let link = TraceLink::new(files.capacity, params, RngStream::derive(seed, name));
    Ok(BuiltLink {
        name,
        model: "trace",
        link: Box::new(match &t.aqm {
            Some(a) => link.with_queue(crate::aqm::queue_disc(a, queue, Some(rate), seed, name)),
            None => link,
        }),
    })
}

impl NetModel for sc::TraceConfig {
    fn build<P: Packet + Send + 'static>(&self, site: &Site) -> Result<BuiltLink<P>, BuildError> {
        trace_link(site.name, self, site.scenario.seed, &site.key)
    }

    /// The capacity trace's mean.
    fn capacity_bps(&self, key: &str) -> Result<Option<u64>, BuildError> {
        Ok(Some(read_capacity(self, key)?.mean_rate_bps().ceil() as u64))
    }

    fn queue(&self) -> Option<sc::units::QueueLimit> {
        Some(self.queue)
    }

    fn parameters(&self) -> LinkChange {
        LinkChange {
            delay: Some(self.delay.0),
            ..Default::default()
        }
    }
}
