//! Puts netem's impairments (`[link.NAME] impair` or `netem`) after a built link model.

use crate::build::BuiltLink;
use airlink_engine::RngStream;
use airlink_link::{Distribution, ImpairParams, Impaired, LossModel, Packet};
use airlink_scenario::netem::{ImpairConfig, JitterDistribution};

/// The link model's parameters for an `impair` table (defaults as netem's, see
/// `airlink_scenario::netem`).
pub fn impair_params(c: &ImpairConfig) -> ImpairParams {
    let loss = if let Some(g) = &c.gemodel {
        LossModel::GilbertElliott {
            p: g.p.0,
            r: g.r.map_or(1.0 - g.p.0, |r| r.0),
            loss_bad: g.loss_bad.map_or(1.0, |x| x.0),
            loss_good: g.loss_good.map_or(0.0, |x| x.0),
        }
    } else if let Some(s) = &c.loss_state {
        LossModel::FourState {
            p13: s.p13.0,
            p31: s.p31.map_or(1.0 - s.p13.0, |x| x.0),
            p32: s.p32.map_or(0.0, |x| x.0),
            p23: s.p23.map_or(1.0, |x| x.0),
            p14: s.p14.map_or(0.0, |x| x.0),
        }
    } else if c.loss.0 > 0.0 {
        LossModel::Random {
            p: c.loss.0,
            correlation: c.loss_correlation.0,
        }
    } else {
        LossModel::None
    };
    ImpairParams {
        delay: c.delay.0,
        jitter: c.jitter.0,
        delay_correlation: c.delay_correlation.0,
        distribution: match c.distribution {
            JitterDistribution::Uniform => Distribution::Uniform,
            JitterDistribution::Normal => Distribution::Normal,
            JitterDistribution::Pareto => Distribution::Pareto,
            JitterDistribution::Paretonormal => Distribution::ParetoNormal,
        },
        loss,
        duplicate: c.duplicate.0,
        duplicate_correlation: c.duplicate_correlation.0,
        corrupt: c.corrupt.0,
        corrupt_correlation: c.corrupt_correlation.0,
        reorder: c.reorder.0,
        reorder_correlation: c.reorder_correlation.0,
        gap: c.gap.unwrap_or(if c.reorder.0 > 0.0 { 1 } else { 0 }),
        rate_bps: c.rate.map(|r| r.0),
        packet_overhead: c.packet_overhead,
        slot: c.slot_min.map(|lo| (lo.0, c.slot_max.unwrap_or(lo).0)),
    }
}

/// `built` followed by the impairments of `impair`, if any; they draw from the stream
/// `NAME.impair` of the run seed.
pub fn wrap<P: Packet + Send + 'static>(
    built: BuiltLink<P>,
    impair: Option<&ImpairConfig>,
    seed: u64,
) -> BuiltLink<P> {
    let Some(c) = impair else {
        return built;
    };
    let rng = RngStream::derive(seed, &format!("{}.impair", built.name));
    BuiltLink {
        name: built.name,
        model: built.model,
        link: Box::new(Impaired::new(built.link, impair_params(c), rng)),
    }
}
