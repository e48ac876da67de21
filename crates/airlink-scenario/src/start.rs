//! When a flow starts: at a fixed time, or at a time drawn from a seeded distribution (users
//! that arrive, as an OPNET application profile starts its sessions at offsets).
//!
//! The draw of flow `i` comes from the run seed and the stream named `flow.<i>.start` alone,
//! never from the rest of the configuration: every configuration compared under one seed (a
//! scheduler, a queue bound) sees the same arrivals (common random numbers).
//!
//! | reference | what airlink takes |
//! |---|---|
//! | Klein, Leung, Zheng (TCP-PF study), Fig. 1 | users whose transfers begin at different times |
//!
//! Deviations: only the uniform distribution is offered (the studies give no other).

use crate::units::Time;
use airlink_engine::{Duration, RngStream};
use schemars::JsonSchema;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// `start`: a time (`"2 s"`) or a draw (`{ uniform = ["0 s", "5 s"] }`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum FlowStart {
    /// At this time.
    At(Time),
    /// Uniform on [from, to], drawn per flow from the run seed.
    Uniform(Time, Time),
}

impl Default for FlowStart {
    fn default() -> Self {
        FlowStart::At(Time(Duration::ZERO))
    }
}

impl FlowStart {
    /// The earliest time the flow can start.
    pub fn earliest(&self) -> Time {
        match *self {
            FlowStart::At(t) | FlowStart::Uniform(t, _) => t,
        }
    }

    /// The latest time the flow can start.
    pub fn latest(&self) -> Time {
        match *self {
            FlowStart::At(t) | FlowStart::Uniform(_, t) => t,
        }
    }

    /// The start of flow `index` (its position among the scenario's flows, copies counted) in
    /// the run seeded with `seed`.
    pub fn time(&self, seed: u64, index: usize) -> Time {
        match *self {
            FlowStart::At(t) => t,
            FlowStart::Uniform(from, to) => {
                let u = RngStream::derive(seed, &format!("flow.{index}.start")).uniform();
                let span = to.0.as_nanos().saturating_sub(from.0.as_nanos());
                let offset = (span as f64 * u).floor() as u64;
                Time(Duration::from_nanos(from.0.as_nanos() + offset.min(span)))
            }
        }
    }
}

impl fmt::Display for FlowStart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlowStart::At(t) => write!(f, "{t}"),
            FlowStart::Uniform(a, b) => write!(f, "uniform on [{a}, {b}]"),
        }
    }
}

impl Serialize for FlowStart {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            FlowStart::At(t) => t.serialize(s),
            FlowStart::Uniform(a, b) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("uniform", &[a, b])?;
                m.end()
            }
        }
    }
}

const EXPECTING: &str =
    "a time like \"2 s\", or a draw like { uniform = [\"0 s\", \"5 s\"] } (earliest, latest)";

impl<'de> Deserialize<'de> for FlowStart {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FlowStart;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(EXPECTING)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<FlowStart, E> {
                v.parse().map(FlowStart::At).map_err(E::custom)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FlowStart, A::Error> {
                let mut drawn = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key != "uniform" || drawn.is_some() {
                        return Err(de::Error::custom(format!(
                            "unknown distribution \"{key}\": expected one `uniform = [\"0 s\", \"5 s\"]`"
                        )));
                    }
                    let [from, to]: [Time; 2] = map.next_value()?;
                    if to.0 < from.0 {
                        return Err(de::Error::custom(format!(
                            "uniform on [{from}, {to}]: expected the earliest time first"
                        )));
                    }
                    drawn = Some(FlowStart::Uniform(from, to));
                }
                drawn.ok_or_else(|| {
                    de::Error::custom(format!("an empty table: expected {EXPECTING}"))
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for FlowStart {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "FlowStart".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"description": EXPECTING})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Time {
        s.parse().unwrap()
    }

    #[test]
    fn a_fixed_start_is_the_same_for_every_seed() {
        let s = FlowStart::At(t("2 s"));
        assert_eq!(s.time(1, 0), t("2 s"));
        assert_eq!(s.time(99, 7), t("2 s"));
    }

    #[test]
    fn draws_stay_in_the_interval_depend_on_seed_and_index_only_and_spread_uniformly() {
        let s = FlowStart::Uniform(t("1 s"), t("6 s"));
        let draws: Vec<f64> = (0..2000).map(|i| s.time(3, i).0.as_secs_f64()).collect();
        assert!(draws.iter().all(|&d| (1.0..=6.0).contains(&d)));
        // Uniform on [1, 6]: mean 3.5, variance 25/12; 2000 draws put the mean within ±0.1.
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean - 3.5).abs() < 0.1, "mean {mean}");
        let below = draws.iter().filter(|&&d| d < 2.0).count() as f64 / 2000.0;
        assert!((below - 0.2).abs() < 0.03, "fraction below 2 s {below}");
        // The same seed and index give the same draw; another seed another one.
        assert_eq!(s.time(3, 5), s.time(3, 5));
        assert_ne!(s.time(3, 5), s.time(4, 5));
        // A degenerate interval is its one time.
        assert_eq!(FlowStart::Uniform(t("2 s"), t("2 s")).time(8, 1), t("2 s"));
    }
}
