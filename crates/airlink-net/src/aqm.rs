//! A scenario's `aqm` key turned into a link's queue discipline.

use airlink_engine::{Duration, RngStream};
use airlink_link::queue::{AqmConfig, CodelParams, FqCodelParams, PieParams, QueueDisc, RedParams};
use airlink_link::{Packet, QueueLimit};
use airlink_scenario::aqm::{AqmConfig as Scenario, AqmKind};

/// The discipline's parameters: the scenario's values over each kind's defaults.
pub fn config(a: &Scenario) -> AqmConfig {
    let time = |t: Option<airlink_scenario::units::Time>, d: Duration| t.map_or(d, |t| t.0);
    let codel = |defaults: CodelParams| CodelParams {
        target: time(a.target, defaults.target),
        interval: time(a.interval, defaults.interval),
        ecn: a.ecn.unwrap_or(defaults.ecn),
    };
    match a.kind {
        AqmKind::Droptail => AqmConfig::DropTail,
        AqmKind::Codel => AqmConfig::Codel(codel(CodelParams::default())),
        AqmKind::FqCodel => {
            let d = FqCodelParams::default();
            AqmConfig::FqCodel(FqCodelParams {
                flows: a.flows.unwrap_or(d.flows),
                quantum: a.quantum.map_or(d.quantum, |q| q.0 as u32),
                codel: codel(d.codel),
                drop_batch: a.drop_batch.unwrap_or(d.drop_batch),
            })
        }
        AqmKind::Pie => {
            let d = PieParams::default();
            AqmConfig::Pie(PieParams {
                target: time(a.target, d.target),
                tupdate: time(a.tupdate, d.tupdate),
                alpha: a.alpha.unwrap_or(d.alpha),
                beta: a.beta.unwrap_or(d.beta),
                max_burst: time(a.max_burst, d.max_burst),
                ecn: a.ecn.unwrap_or(d.ecn),
            })
        }
        AqmKind::Red => {
            let d = RedParams::default();
            AqmConfig::Red(RedParams {
                min_th: a.min_th.unwrap_or(d.min_th),
                max_th: a.max_th.unwrap_or(d.max_th),
                max_p: a.max_p.map_or(d.max_p, |p| p.0),
                wq: a.wq.unwrap_or(d.wq),
                gentle: a.gentle.unwrap_or(d.gentle),
                ecn: a.ecn.unwrap_or(d.ecn),
            })
        }
    }
}

/// The queue of link `link` (its stream is `<link>.aqm`, so adding a discipline leaves every
/// other stream of the run as it was).
pub fn queue_disc<P: Packet + Send + 'static>(
    a: &Scenario,
    limit: QueueLimit,
    rate_bps: Option<u64>,
    seed: u64,
    link: &str,
) -> QueueDisc<P> {
    let rng = RngStream::derive(seed, &format!("{link}.aqm"));
    QueueDisc::new(&config(a), limit, rate_bps, rng)
}

/// A queue discipline's part of a link's summary.
#[derive(Clone, Debug, serde::Serialize, schemars::JsonSchema)]
pub struct AqmSummary {
    /// `droptail`, `codel`, `fq_codel`, `pie` or `red`.
    pub kind: &'static str,
    /// Arrivals dropped because the queue was over its limit.
    pub overflow_drops: u64,
    /// Packets the discipline's rule dropped.
    pub aqm_drops: u64,
    /// ECN-capable packets the rule marked CE instead.
    pub aqm_marks: u64,
    /// Packets handed to the transmitter, and their time in the queue (ms; within 1.6 %).
    pub dequeued: u64,
    pub sojourn_mean_ms: Option<f64>,
    pub sojourn_p50_ms: Option<f64>,
    pub sojourn_p95_ms: Option<f64>,
    pub sojourn_p99_ms: Option<f64>,
}

impl AqmSummary {
    pub fn of(s: &airlink_link::queue::QueueStats) -> AqmSummary {
        let ms = |d: Option<Duration>| d.map(|d| (d.as_millis_f64() * 1000.0).round() / 1000.0);
        AqmSummary {
            kind: s.kind,
            overflow_drops: s.overflow_drops,
            aqm_drops: s.aqm_drops,
            aqm_marks: s.aqm_marks,
            dequeued: s.sojourn.count(),
            sojourn_mean_ms: ms(s.sojourn.mean()),
            sojourn_p50_ms: ms(s.sojourn.quantile(0.5)),
            sojourn_p95_ms: ms(s.sojourn.quantile(0.95)),
            sojourn_p99_ms: ms(s.sojourn.quantile(0.99)),
        }
    }
}
