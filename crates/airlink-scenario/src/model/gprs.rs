//! `[downlink.gprs]`, `[link.NAME.gprs]`: a GPRS link (the Seawind study's), modelled as the
//! pipe of its RLC data rate with the unit of delivery of its granularity.

use super::pipe::MAX_UNIT_BYTES;
use super::ModelConfig;
use crate::units::{DataSize, Probability, QueueLimit, Rate, Time};
use crate::{count, Invalid, PipeConfig};
use airlink_engine::Duration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

fn ms(x: u64) -> Time {
    Time(Duration::from_millis(x))
}

/// A GPRS link (the Seawind study's packet-switched link): on each of `timeslots` timeslots a
/// radio block of the coding scheme every 20 ms, carrying IP packets at the RLC data rate.
/// Its `granularity` is the Seawind study's (§3.2): packets leave whole (`"ip"`), or in LLC
/// frames (`"llc"`, `llc_frame` bytes rounded up to whole RLC blocks) or RLC blocks (`"rlc"`),
/// packed back to back as the pipe's `unit` does; or a size, a whole number of RLC blocks.
/// Rates: 3GPP TS 45.003 (coding schemes) and TS 44.060 (RLC data per block: CS-1 20 B, CS-2
/// 30 B, CS-3 36 B, CS-4 50 B). The delay and queue defaults are assumptions (RFC 3481 §2.1:
/// GPRS round trips of several hundred ms, large buffers); LLC/SNDCP headers are left out.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GprsConfig {
    /// `"CS-1"` to `"CS-4"`. Default CS-2.
    #[serde(default = "default_coding_scheme")]
    pub coding_scheme: CodingScheme,
    /// Timeslots of the link, 1 to 8. Default 4 (a 4+1 terminal's downlink).
    #[serde(default = "default_timeslots")]
    pub timeslots: u32,
    /// `"ip"`, `"llc"`, `"rlc"` or a size that is a whole number of RLC blocks. Default ip.
    #[serde(default)]
    pub granularity: Granularity,
    /// LLC frame size of the `"llc"` granularity. Default 200 B (the Seawind study's).
    #[serde(default = "default_llc_frame")]
    pub llc_frame: DataSize,
    /// One-way delay besides serialisation. Default 300 ms (assumption, RFC 3481).
    #[serde(default = "default_gprs_delay")]
    pub delay: Time,
    /// Drop-tail queue. Default 30 packets (assumption).
    #[serde(default = "default_gprs_queue")]
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
    /// Probability that a packet is lost (RLC's acknowledged mode makes it rare). Default 0.
    #[serde(default)]
    pub loss: Probability,
}

/// A GPRS coding scheme (3GPP TS 45.003).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum CodingScheme {
    #[serde(rename = "CS-1")]
    Cs1,
    #[serde(rename = "CS-2")]
    Cs2,
    #[serde(rename = "CS-3")]
    Cs3,
    #[serde(rename = "CS-4")]
    Cs4,
}

impl fmt::Display for CodingScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CS-{}", *self as u8 + 1)
    }
}

impl CodingScheme {
    /// RLC data bytes per radio block (TS 44.060).
    pub fn block_bytes(self) -> u64 {
        match self {
            CodingScheme::Cs1 => 20,
            CodingScheme::Cs2 => 30,
            CodingScheme::Cs3 => 36,
            CodingScheme::Cs4 => 50,
        }
    }
}

/// What a GPRS link delivers at once (the Seawind study's §3.2).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub enum Granularity {
    /// Whole IP packets.
    #[default]
    Ip,
    /// LLC frames of `llc_frame` bytes.
    Llc,
    /// RLC blocks of the coding scheme.
    Rlc,
    /// Units of this size.
    Size(DataSize),
}

impl fmt::Display for Granularity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Granularity::Ip => f.write_str("ip"),
            Granularity::Llc => f.write_str("llc"),
            Granularity::Rlc => f.write_str("rlc"),
            Granularity::Size(s) => write!(f, "{s}"),
        }
    }
}

impl std::str::FromStr for Granularity {
    type Err = String;
    fn from_str(v: &str) -> Result<Self, String> {
        match v {
            "ip" => Ok(Granularity::Ip),
            "llc" => Ok(Granularity::Llc),
            "rlc" => Ok(Granularity::Rlc),
            _ => v
                .parse()
                .map(Granularity::Size)
                .map_err(|e| format!("{e}; or \"ip\", \"llc\", \"rlc\"")),
        }
    }
}

impl Serialize for Granularity {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Granularity {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Granularity {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Granularity".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "description": "\"ip\", \"llc\", \"rlc\" or a size like \"60 B\""})
    }
}

fn default_coding_scheme() -> CodingScheme {
    CodingScheme::Cs2
}

fn default_timeslots() -> u32 {
    4
}

fn default_llc_frame() -> DataSize {
    DataSize(200)
}

fn default_gprs_delay() -> Time {
    ms(300)
}

fn default_gprs_queue() -> QueueLimit {
    QueueLimit::Packets(30)
}

impl GprsConfig {
    /// The radio block period on one timeslot (TS 45.002: 4 TDMA frames of 4.615 ms, 20 ms on average).
    pub const BLOCK_PERIOD_S: f64 = 0.02;

    /// RLC data rate of the link, bit/s.
    pub fn rate_bps(&self) -> u64 {
        (self.timeslots as u64 * self.coding_scheme.block_bytes() * 8) * 50
    }

    /// The unit of delivery of the granularity, in bytes (`None`: whole packets).
    pub fn unit_bytes(&self) -> Option<u64> {
        let block = self.coding_scheme.block_bytes();
        match self.granularity {
            Granularity::Ip => None,
            Granularity::Llc => Some(self.llc_frame.0.div_ceil(block) * block),
            Granularity::Rlc => Some(block),
            Granularity::Size(s) => Some(s.0),
        }
    }

    /// The pipe that models it.
    pub fn pipe(&self) -> PipeConfig {
        PipeConfig {
            rate: Some(Rate(self.rate_bps())),
            delay: self.delay,
            queue: self.queue,
            loss: self.loss,
            unit: self.unit_bytes().map(DataSize),
            aqm: self.aqm.clone(),
            ..PipeConfig::default()
        }
    }
}

impl ModelConfig for GprsConfig {
    fn kind(&self) -> &'static str {
        "gprs"
    }
    fn changeable(&self) -> &'static [&'static str] {
        &["delay", "queue", "loss"]
    }
    fn delay(&self) -> Duration {
        self.delay.0
    }
    fn check(&self, base: &[&str], min_packet: u64) -> Result<(), Invalid> {
        let g = self;
        let p = |parts: &[&str]| parts.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let at = |k: &str| p(&[base, &["gprs", k]].concat());
        count(at("timeslots"), g.timeslots, 1, 8, "timeslots")?;
        let block = g.coding_scheme.block_bytes();
        if let Granularity::Size(size) = g.granularity {
            if size.0 == 0 || size.0 % block != 0 {
                let cs = g.coding_scheme;
                return Err((at("granularity"), format!("{size} is not a whole number of {cs} RLC blocks ({block} B each): expected a multiple of {block} B, or \"ip\", \"llc\", \"rlc\"")));
            }
        }
        if !(1..=MAX_UNIT_BYTES).contains(&g.llc_frame.0) {
            return Err((
                at("llc_frame"),
                format!("{}: expected 1 B to {MAX_UNIT_BYTES} B", g.llc_frame),
            ));
        }
        // What is left to check is the pipe's (the rate follows from the timeslots).
        g.pipe().validate(min_packet).map_err(|(key, m)| {
            let key = match key {
                "rate" => "timeslots",
                "unit" => "granularity",
                k => k,
            };
            (at(key), m)
        })?;
        Ok(())
    }
}
