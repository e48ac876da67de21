//! `[downlink.pipe]`, `[link.NAME.pipe]`: a plain link (rate, propagation delay, drop-tail
//! queue or a queue discipline, random loss, bit errors, a unit of delivery). The model is
//! `airlink_link::Pipe` (`Granular` with a `unit`); its rule header lists references and
//! deviations.

use super::ModelConfig;
use crate::units::{BitErrorRate, DataSize, Probability, QueueLimit, Rate, Time};
use crate::{check_queue, check_rate, Invalid, LinkSet, MAX_DELAY, MAX_PACKETS_HELD};
use airlink_engine::Duration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A plain link: rate, propagation delay, drop-tail queue, random loss and bit errors.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PipeConfig {
    /// Serialisation rate; absent means unlimited (no queueing). A path without a rate anywhere
    /// (wired, access, downlink) needs a round trip of at least 1 ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// One-way propagation delay. Default 0.
    #[serde(default = "zero_time")]
    pub delay: Time,
    /// Drop-tail queue limit in packets or bytes (only with a rate). Default 1000 packets.
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
    /// Probability that a packet is lost, independently of others. Default 0.
    #[serde(default)]
    pub loss: Probability,
    /// Probability that each bit is flipped, in [0, 0.5]; the receiver's checksum then drops
    /// the packet. Without `error_burst_bits` each bit independently; with it, the long-run mean.
    #[serde(default)]
    pub bit_error_rate: BitErrorRate,
    /// Mean length of an error burst, bits: a Gilbert–Elliott channel over the bits sent, whose
    /// bad state flips each bit with probability 0.5 and whose good state is error-free, its
    /// periods geometric and long enough that the mean stays `bit_error_rate` (the residual
    /// errors of a convolutional decoder come in such bursts). Absent: independent bit errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_burst_bits: Option<std::num::NonZeroU32>,
    /// Unit of delivery (needs a rate): the link sends units of this size back to back, packed
    /// with the bytes queued, and a packet leaves with the unit holding its last byte (the
    /// Seawind study's granularity: LLC frames, RLC blocks). Absent: whole packets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<DataSize>,
}

pub(crate) fn zero_time() -> Time {
    Time(Duration::ZERO)
}

pub(crate) fn default_pipe_queue() -> QueueLimit {
    QueueLimit::Packets(1000)
}

impl Default for PipeConfig {
    fn default() -> Self {
        PipeConfig {
            rate: None,
            delay: zero_time(),
            queue: default_pipe_queue(),
            loss: Probability(0.0),
            bit_error_rate: BitErrorRate(0.0),
            error_burst_bits: None,
            unit: None,
            aqm: None,
        }
    }
}

/// The largest unit of delivery of a pipe (larger than any packet).
pub(crate) const MAX_UNIT_BYTES: u64 = 65_536;

impl PipeConfig {
    /// Checks one pipe; the key returned is relative to the pipe's table.
    pub(crate) fn validate(&self, min_packet: u64) -> Result<(), (&'static str, String)> {
        if let Some(r) = self.rate {
            check_rate(r).map_err(|m| ("rate", m))?;
        }
        if self.delay.0 > MAX_DELAY {
            return Err((
                "delay",
                format!("{}: expected a delay from 0 s to {MAX_DELAY}", self.delay.0),
            ));
        }
        check_queue(&self.queue, min_packet).map_err(|m| ("queue", m))?;
        if self.aqm.is_some() && self.rate.is_none() {
            return Err(("aqm", "a queue discipline needs the link's `rate`".into()));
        }
        if let Some(u) = self.unit {
            if self.rate.is_none() {
                return Err(("unit", "a unit of delivery needs the pipe's `rate`".into()));
            }
            if !(1..=MAX_UNIT_BYTES).contains(&u.0) {
                return Err(("unit", format!("{u}: expected 1 B to {MAX_UNIT_BYTES} B")));
            }
        }
        // Packets in flight are held in the link's delay line.
        if let Some(r) = self.rate {
            let in_flight = r.0 as f64 / 8.0 * self.delay.0.as_secs_f64() / min_packet as f64;
            if in_flight > MAX_PACKETS_HELD as f64 {
                return Err((
                    "delay",
                    format!("{} at {r} keeps up to {in_flight:.0} packets of {min_packet} B in flight: expected at most {MAX_PACKETS_HELD} (lower the rate × delay)", self.delay.0),
                ));
            }
        }
        Ok(())
    }
}

impl LinkSet {
    /// A pipe's parameters with this change's values over them.
    pub fn apply(&self, p: &PipeConfig) -> PipeConfig {
        PipeConfig {
            rate: self.rate.or(p.rate),
            delay: self.delay.unwrap_or(p.delay),
            queue: self.queue.unwrap_or(p.queue),
            loss: self.loss.unwrap_or(p.loss),
            bit_error_rate: self.bit_error_rate.unwrap_or(p.bit_error_rate),
            error_burst_bits: p.error_burst_bits,
            unit: p.unit,
            aqm: p.aqm.clone(),
        }
    }
}

impl ModelConfig for PipeConfig {
    fn kind(&self) -> &'static str {
        "pipe"
    }
    fn changeable(&self) -> &'static [&'static str] {
        &["rate", "delay", "queue", "loss", "bit_error_rate"]
    }
    fn rated(&self) -> bool {
        self.rate.is_some()
    }
    fn delay(&self) -> Duration {
        self.delay.0
    }
    fn check(&self, base: &[&str], min_packet: u64) -> Result<(), Invalid> {
        let pipe = self;
        let p = |parts: &[&str]| parts.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        pipe.validate(min_packet)
            .map_err(|(key, m)| (p(&[base, &["pipe", key]].concat()), m))?;
        Ok(())
    }
    fn check_set(&self, set: &LinkSet, min_packet: u64) -> Result<(), (&'static str, String)> {
        set.apply(self).validate(min_packet)
    }
}
