//! A GPRS link in the network's terms: the pipe of its RLC data rate and granularity
//! (`GprsConfig::pipe`), reported as "gprs".

use super::pipe::{certain_loss, pipe, pipe_parameters};
use super::{NetModel, Site};
use crate::build::{BuildError, BuiltLink};
use airlink_link::{LinkChange, Packet};
use airlink_scenario as sc;

impl NetModel for sc::GprsConfig {
    fn build<P: Packet + Send + 'static>(&self, site: &Site) -> Result<BuiltLink<P>, BuildError> {
        Ok(BuiltLink {
            model: "gprs",
            ..pipe(site.name, &self.pipe(), site.scenario.seed)
        })
    }

    fn capacity_bps(&self, _key: &str) -> Result<Option<u64>, BuildError> {
        Ok(Some(self.rate_bps()))
    }

    fn queue(&self) -> Option<sc::units::QueueLimit> {
        Some(self.queue)
    }

    /// The pipe's it is built as.
    fn parameters(&self) -> LinkChange {
        pipe_parameters(&self.pipe())
    }

    fn warnings(&self, name: &str) -> Vec<String> {
        if self.loss.0 >= 1.0 {
            vec![certain_loss(name)]
        } else {
            Vec::new()
        }
    }
}
