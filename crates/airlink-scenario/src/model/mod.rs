//! The link models a scenario may name, one file each: its table's keys (with their docs and
//! defaults, which `airlink keys` reads), and its checks. What a model means to a running
//! network (how it is built, its capacity, what a change may set) is its file in
//! `airlink-net/src/model/`.
//!
//! To add a model: a file here with its config struct and a [`ModelConfig`] impl, a variant
//! of [`LinkModel`] and its line in [`LinkModel::config`]/[`LinkModel::config_mut`], and a
//! field of [`crate::LinkConfig`] (the `[link.NAME.MODEL]` table) with its line in
//! `LinkConfig::models`.

mod cell;
mod gprs;
mod leo;
mod ofdm4g;
mod pipe;
mod trace;
mod wlan;

pub use cell::*;
pub use gprs::*;
pub use leo::LeoConfig;
pub use ofdm4g::*;
pub use pipe::PipeConfig;
pub use trace::*;
pub use wlan::*;

use crate::{Invalid, LinkSet};
use airlink_engine::Duration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the scenario knows of a link model: its name, what it may change while it runs, its
/// own delay, and the checks of its table.
pub trait ModelConfig {
    /// The model's name, as its table names it (`pipe`, `trace`, `ofdm4g`, `cell`).
    fn kind(&self) -> &'static str;

    /// The parameters a running link of this model can change (the model implements each in
    /// its `Link::change`). Default: none.
    fn changeable(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether the model limits the rate (a pipe without a rate does not). Default: it does.
    fn rated(&self) -> bool {
        true
    }

    /// The model's own one-way propagation delay: the least time any packet spends in it
    /// besides serialisation and queueing. Default: none (a radio link whose slots are its
    /// only delay).
    fn delay(&self) -> Duration {
        Duration::ZERO
    }

    /// Checks the model's table; `base` is where it is (`downlink`, `link.NAME`), and the
    /// error's key path is the whole path from the file's top.
    fn check(&self, base: &[&str], min_packet: u64) -> Result<(), Invalid>;

    /// Checks a `[[change]]`'s new values against the model's (the key is relative to `set`).
    /// Default: nothing beyond what [`ModelConfig::changeable`] allows.
    fn check_set(&self, _set: &LinkSet, _min_packet: u64) -> Result<(), (&'static str, String)> {
        Ok(())
    }

    /// The files the table names, each resolved from the scenario file's folder when relative.
    fn files_mut(&mut self) -> Vec<&mut String> {
        Vec::new()
    }
}

/// A link's model, chosen by its table name: `[downlink.ofdm4g]`, `[uplink.pipe]`,
/// `[link.NAME.trace]`, ...
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum LinkModel {
    Ofdm4g(Box<Ofdm4gConfig>),
    Pipe(PipeConfig),
    /// A GPRS link (rate from its coding scheme and timeslots), modelled as a pipe.
    Gprs(GprsConfig),
    /// `downlink.trace = { file = "...", delay = "..", queue = .. }`: capacity from a
    /// Mahimahi delivery-opportunity trace.
    Trace(TraceConfig),
    /// A multi-user cell's downlink: the flows through it are its users, served one per slot
    /// by an opportunistic scheduler.
    Cell(Box<CellConfig>),
    /// An 802.11g access point's shared medium (general form only: `[link.NAME.wlan]`).
    Wlan(Box<WlanConfig>),
    /// A LEO satellite access link with 15 s reconfigurations (Starlink-like by default).
    Leo(Box<LeoConfig>),
}
impl LinkModel {
    /// The model's configuration: one line per model (the registry of the scenario side).
    pub fn config(&self) -> &dyn ModelConfig {
        match self {
            LinkModel::Ofdm4g(m) => m.as_ref(),
            LinkModel::Pipe(m) => m,
            LinkModel::Gprs(m) => m,
            LinkModel::Trace(m) => m,
            LinkModel::Cell(m) => m.as_ref(),
            LinkModel::Wlan(m) => m.as_ref(),
            LinkModel::Leo(m) => m.as_ref(),
        }
    }

    /// The model's configuration, to resolve its files.
    pub fn config_mut(&mut self) -> &mut dyn ModelConfig {
        match self {
            LinkModel::Ofdm4g(m) => m.as_mut(),
            LinkModel::Pipe(m) => m,
            LinkModel::Gprs(m) => m,
            LinkModel::Trace(m) => m,
            LinkModel::Cell(m) => m.as_mut(),
            LinkModel::Wlan(m) => m.as_mut(),
            LinkModel::Leo(m) => m.as_mut(),
        }
    }

    /// The model's name, as its table names it (`pipe`, `trace`, `ofdm4g`, `cell`).
    pub fn kind(&self) -> &'static str {
        self.config().kind()
    }

    /// The parameters a running link of this model can change.
    pub fn changeable(&self) -> &'static [&'static str] {
        self.config().changeable()
    }

    /// Whether the model limits the rate (a pipe without a rate does not).
    pub fn rated(&self) -> bool {
        self.config().rated()
    }

    /// The model's own one-way propagation delay ([`ModelConfig::delay`]).
    pub fn delay(&self) -> Duration {
        self.config().delay()
    }

    /// Checks one link model; `base` is where its table is (`downlink`, `link.NAME`).
    pub(crate) fn validate(&self, base: &[&str], min_packet: u64) -> Result<(), Invalid> {
        self.config().check(base, min_packet)
    }
}
