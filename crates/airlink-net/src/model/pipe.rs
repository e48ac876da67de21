//! A pipe in the network's terms: `airlink_link::Pipe`, or `Granular` with a unit of
//! delivery, behind its queue discipline when it has one.

use super::{queue_limit, NetModel, Site};
use crate::build::{BuildError, BuiltLink};
use airlink_engine::RngStream;
use airlink_link::{Link, LinkChange, Packet, Pipe, PipeParams};
use airlink_scenario as sc;

fn pipe_params(p: &sc::PipeConfig) -> PipeParams {
    PipeParams {
        rate_bps: p.rate.map(|r| r.0),
        delay: p.delay.0,
        queue_limit: queue_limit(p.queue),
        loss: p.loss.0,
        bit_error_rate: p.bit_error_rate.0,
        error_burst_bits: p.error_burst_bits.map(|b| b.get()),
    }
}

pub(crate) fn pipe<P: Packet + Send + 'static>(
    name: &'static str,
    p: &sc::PipeConfig,
    seed: u64,
) -> BuiltLink<P> {
    let rng = RngStream::derive(seed, name);
    let rate = p.rate.map(|r| r.0);
    let qdisc = |a| crate::aqm::queue_disc(a, queue_limit(p.queue), rate, seed, name);
    let link: Box<dyn Link<P> + Send> = match p.unit {
        // Validated: a unit comes with a rate and fits in u32.
        Some(u) => {
            let g = airlink_link::Granular::new(pipe_params(p), u.0 as u32, rng);
            Box::new(match &p.aqm {
                Some(a) => g.with_queue(qdisc(a)),
                None => g,
            })
        }
        None => Box::new(match &p.aqm {
            Some(a) => Pipe::new(pipe_params(p), rng).with_queue(qdisc(a)),
            None => Pipe::new(pipe_params(p), rng),
        }),
    };
    BuiltLink {
        name,
        model: "pipe",
        link,
    }
}

/// A pipe's parameters in the terms of a change: all five.
pub(crate) fn pipe_parameters(p: &sc::PipeConfig) -> LinkChange {
    LinkChange {
        rate_bps: p.rate.map(|r| r.0),
        delay: Some(p.delay.0),
        queue_limit: Some(queue_limit(p.queue)),
        loss: Some(p.loss.0),
        bit_error_rate: Some(p.bit_error_rate.0),
        mean_snr_db: None,
    }
}

/// The warning of a link that loses every packet.
pub(crate) fn certain_loss(name: &str) -> String {
    format!("{name}.loss = 1: every packet is lost, so no flow can deliver anything")
}

impl NetModel for sc::PipeConfig {
    fn build<P: Packet + Send + 'static>(&self, site: &Site) -> Result<BuiltLink<P>, BuildError> {
        Ok(pipe(site.name, self, site.scenario.seed))
    }

    fn capacity_bps(&self, _key: &str) -> Result<Option<u64>, BuildError> {
        Ok(self.rate.map(|r| r.0))
    }

    fn queue(&self) -> Option<sc::units::QueueLimit> {
        Some(self.queue)
    }

    fn parameters(&self) -> LinkChange {
        pipe_parameters(self)
    }

    fn warnings(&self, name: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.loss.0 >= 1.0 {
            out.push(certain_loss(name));
        }
        // The chance that even a 40-byte ACK crosses without a flipped bit.
        let survive = (1.0 - self.bit_error_rate.0).powi(40 * 8);
        if self.bit_error_rate.0 > 0.0 && survive < 1e-6 {
            out.push(format!(
                "{name}.bit_error_rate = {}: practically every packet is corrupted (even a 40-byte one survives with probability {survive:.1e})",
                self.bit_error_rate.0
            ));
        }
        out
    }
}
