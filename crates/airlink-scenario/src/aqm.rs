//! `aqm` on a link's table: the queue discipline in front of the link's transmitter.
//!
//! Short form `aqm = "codel"` (every parameter at its default), or a table
//! `aqm = { kind = "codel", target = "5 ms", interval = "100 ms", ecn = true }`. A table may
//! hold only the parameters of its kind. Defaults and their sources are in each field's doc
//! (so in `airlink keys`); the models are in `airlink-link`'s `queue` module.

use crate::units::{DataSize, Probability, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Which queue discipline.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AqmKind {
    /// A FIFO that refuses what exceeds the link's `queue` (as Linux's `pfifo`/`bfifo`).
    Droptail,
    /// CoDel (RFC 8289).
    Codel,
    /// FQ-CoDel (RFC 8290).
    FqCodel,
    /// PIE (RFC 8033).
    Pie,
    /// RED (Floyd & Jacobson 1993), gentle mode by default.
    Red,
}

impl AqmKind {
    pub fn name(self) -> &'static str {
        match self {
            AqmKind::Droptail => "droptail",
            AqmKind::Codel => "codel",
            AqmKind::FqCodel => "fq_codel",
            AqmKind::Pie => "pie",
            AqmKind::Red => "red",
        }
    }
}

/// A link's queue discipline. Its limit is the link's `queue`. Parameters left out take the
/// defaults given per kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AqmConfig {
    /// `"droptail"`, `"codel"`, `"fq_codel"`, `"pie"` or `"red"`; the short form `aqm = "codel"`
    /// takes every default.
    pub kind: AqmKind,
    /// codel, fq_codel: the acceptable standing sojourn, default 5 ms (RFC 8289 §4.4, Linux);
    /// pie: the reference queueing delay, default 15 ms (RFC 8033 §4.1, Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Time>,
    /// codel, fq_codel: how long the sojourn must stay above `target` before drops begin (about
    /// a worst-case RTT). Default 100 ms (RFC 8289 §4.3, Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Time>,
    /// Mark ECN-capable packets CE instead of dropping them. Default: on for fq_codel (Linux),
    /// off for codel, pie, red (Linux). pie marks only while its probability is at most 10 %
    /// (RFC 8033 §5.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<bool>,
    /// fq_codel: number of flow queues, 1 to 65536. Default 1024 (RFC 8290 §5.1, Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<u32>,
    /// fq_codel: bytes a flow queue sends per round, 64 B to 1 MiB. Default 1514 B (RFC 8290
    /// §5.1, Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantum: Option<DataSize>,
    /// fq_codel: most packets dropped from the fattest queue at an overflow, 1 to 65536.
    /// Default 64 (Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_batch: Option<u32>,
    /// pie: interval between probability updates. Default 15 ms (RFC 8033 §4.2, Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tupdate: Option<Time>,
    /// pie: weight of the delay's distance from `target`, per second, 0 to 100. Default 0.125
    /// (RFC 8033 §4.2, Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// pie: weight of the delay's change, per second, 0 to 100. Default 1.25 (RFC 8033 §4.2,
    /// Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// pie: burst let through without drops after the queue was calm, 0 to 10 s. Default
    /// 150 ms (RFC 8033 §4.3, Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_burst: Option<Time>,
    /// red: average queue, packets, where early drops begin. Default 5 (ns-3's MinTh).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_th: Option<f64>,
    /// red: average queue, packets, where the probability reaches `max_p` (above `min_th`).
    /// Default 15 (ns-3's MaxTh; Floyd: 3 × min_th).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_th: Option<f64>,
    /// red: drop probability at `max_th`, above 0. Default 0.1 (Floyd's recommendation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_p: Option<Probability>,
    /// red: weight of the current queue in the average, in (0, 1]. Default 0.002 (Floyd &
    /// Jacobson).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wq: Option<f64>,
    /// red: ramp from `max_p` to 1 between `max_th` and 2 × `max_th` instead of dropping all.
    /// Default true (Floyd 2000, ns-3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gentle: Option<bool>,
}

impl AqmConfig {
    /// The short form's configuration: a kind with every default.
    pub fn of_kind(kind: AqmKind) -> Self {
        AqmConfig {
            kind,
            target: None,
            interval: None,
            ecn: None,
            flows: None,
            quantum: None,
            drop_batch: None,
            tupdate: None,
            alpha: None,
            beta: None,
            max_burst: None,
            min_th: None,
            max_th: None,
            max_p: None,
            wq: None,
            gentle: None,
        }
    }

    /// The parameters set, by name, for the kind check.
    fn set(&self) -> [(&'static str, bool); 15] {
        [
            ("target", self.target.is_some()),
            ("interval", self.interval.is_some()),
            ("ecn", self.ecn.is_some()),
            ("flows", self.flows.is_some()),
            ("quantum", self.quantum.is_some()),
            ("drop_batch", self.drop_batch.is_some()),
            ("tupdate", self.tupdate.is_some()),
            ("alpha", self.alpha.is_some()),
            ("beta", self.beta.is_some()),
            ("max_burst", self.max_burst.is_some()),
            ("min_th", self.min_th.is_some()),
            ("max_th", self.max_th.is_some()),
            ("max_p", self.max_p.is_some()),
            ("wq", self.wq.is_some()),
            ("gentle", self.gentle.is_some()),
        ]
    }

    /// Which parameters a kind takes.
    fn takes(kind: AqmKind) -> &'static [&'static str] {
        match kind {
            AqmKind::Droptail => &[],
            AqmKind::Codel => &["target", "interval", "ecn"],
            AqmKind::FqCodel => &[
                "target",
                "interval",
                "ecn",
                "flows",
                "quantum",
                "drop_batch",
            ],
            AqmKind::Pie => &["target", "ecn", "tupdate", "alpha", "beta", "max_burst"],
            AqmKind::Red => &["ecn", "min_th", "max_th", "max_p", "wq", "gentle"],
        }
    }

    /// Refuses parameters of another kind and values out of range.
    pub fn check(&self) -> Result<(), String> {
        let takes = Self::takes(self.kind);
        for (name, set) in self.set() {
            if set && !takes.contains(&name) {
                let expected = if takes.is_empty() {
                    "no parameters".to_owned()
                } else {
                    takes.join(", ")
                };
                return Err(format!(
                    "`{name}` is not a parameter of {}: expected {expected}",
                    self.kind.name()
                ));
            }
        }
        let time = |name: &str, t: Option<Time>, zero_ok: bool| -> Result<(), String> {
            match t {
                Some(t) if (t.0.is_zero() && !zero_ok) || t.0.as_secs_f64() > 10.0 => Err(format!(
                    "`{name}` = {t}: expected {} to 10 s",
                    if zero_ok { "0 s" } else { "more than 0 s" }
                )),
                _ => Ok(()),
            }
        };
        time("target", self.target, false)?;
        time("tupdate", self.tupdate, false)?;
        time("max_burst", self.max_burst, true)?;
        if let Some(i) = self.interval {
            if i.0.is_zero() || i.0.as_secs_f64() > 100.0 {
                return Err(format!(
                    "`interval` = {i}: expected more than 0 s, up to 100 s"
                ));
            }
        }
        let whole = |name: &str, v: Option<u32>| match v {
            Some(n) if !(1..=65_536).contains(&n) => {
                Err(format!("`{name}` = {n}: expected 1 to 65536"))
            }
            _ => Ok(()),
        };
        whole("flows", self.flows)?;
        whole("drop_batch", self.drop_batch)?;
        if let Some(q) = self.quantum {
            if !(64..=1 << 20).contains(&q.0) {
                return Err(format!("`quantum` = {q}: expected 64 B to 1 MiB"));
            }
        }
        for (name, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            if let Some(x) = v {
                if !(0.0..=100.0).contains(&x) {
                    return Err(format!("`{name}` = {x}: expected 0 to 100 per second"));
                }
            }
        }
        let (min_th, max_th) = (self.min_th.unwrap_or(5.0), self.max_th.unwrap_or(15.0));
        if !(0.0..=1e6).contains(&min_th) {
            return Err(format!(
                "`min_th` = {min_th}: expected 0 to 1000000 packets"
            ));
        }
        if !(max_th > min_th && max_th <= 1e6) {
            return Err(format!(
                "`max_th` = {max_th}: expected more than `min_th` ({min_th}), up to 1000000 packets"
            ));
        }
        if let Some(p) = self.max_p {
            if p.0 <= 0.0 {
                return Err("`max_p` = 0: expected more than 0, up to 1".into());
            }
        }
        if let Some(w) = self.wq {
            if !(w > 0.0 && w <= 1.0) {
                return Err(format!("`wq` = {w}: expected more than 0, up to 1"));
            }
        }
        Ok(())
    }
}

/// Parses `aqm = "kind"` or `aqm = { kind = ..., ... }` and checks it (for serde's
/// `deserialize_with`, so errors keep the value's place in the file).
pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<AqmConfig>, D::Error> {
    use serde::de::Error;
    // Through a TOML value first: an untagged enum's own errors would say nothing useful.
    let v = toml::Value::deserialize(d)?;
    let config = match v {
        toml::Value::String(s) => {
            let kind = AqmKind::deserialize(toml::Value::String(s.clone())).map_err(|_| {
                D::Error::custom(format!(
                    "unknown queue discipline \"{s}\": expected one of \"droptail\", \"codel\", \"fq_codel\", \"pie\", \"red\""
                ))
            })?;
            AqmConfig::of_kind(kind)
        }
        toml::Value::Table(t) => {
            AqmConfig::deserialize(toml::Value::Table(t)).map_err(|e| D::Error::custom(e.message().trim().to_owned()))?
        }
        other => {
            return Err(D::Error::custom(format!(
                "a {}: expected a queue discipline's name (\"codel\") or a table ({{ kind = \"codel\", target = \"5 ms\" }})",
                other.type_str()
            )))
        }
    };
    config.check().map_err(D::Error::custom)?;
    Ok(Some(config))
}

impl fmt::Display for AqmConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.name())
    }
}

#[cfg(test)]
mod tests {
    use crate::Scenario;

    fn scenario(aqm: &str) -> Result<Scenario, crate::ScenarioError> {
        let text = format!(
            "[downlink.pipe]\nrate = \"20 Mbit/s\"\ndelay = \"20 ms\"\naqm = {aqm}\n\n[[flow]]\nbytes = \"1 MB\"\n"
        );
        Scenario::from_toml(&text, "aqm.toml")
    }

    #[test]
    fn the_short_and_the_long_form_parse() {
        for (text, kind) in [
            ("\"codel\"", super::AqmKind::Codel),
            ("\"fq_codel\"", super::AqmKind::FqCodel),
            (
                "{ kind = \"pie\", target = \"20 ms\", ecn = true }",
                super::AqmKind::Pie,
            ),
            (
                "{ kind = \"red\", min_th = 30, max_th = 90, max_p = 0.05 }",
                super::AqmKind::Red,
            ),
        ] {
            let s = scenario(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let Some(crate::LinkModel::Pipe(p)) = &s.downlink else {
                panic!()
            };
            assert_eq!(p.aqm.as_ref().unwrap().kind, kind);
            // The resolved scenario reads back the same.
            let again = Scenario::from_toml(&s.to_toml(), "aqm.toml").unwrap();
            let Some(crate::LinkModel::Pipe(q)) = &again.downlink else {
                panic!()
            };
            assert_eq!(p.aqm, q.aqm);
        }
    }

    #[test]
    fn bad_values_are_refused_with_their_place() {
        for (text, says) in [
            ("\"codle\"", "unknown queue discipline \"codle\""),
            (
                "{ kind = \"codel\", quantum = \"1514 B\" }",
                "`quantum` is not a parameter of codel",
            ),
            ("{ kind = \"codel\", target = \"0 ms\" }", "`target` = 0"),
            ("{ kind = \"fq_codel\", flows = 0 }", "`flows` = 0"),
            (
                "{ kind = \"red\", min_th = 20, max_th = 10 }",
                "expected more than `min_th`",
            ),
            ("{ kind = \"pie\", alpha = -1 }", "`alpha` = -1"),
            (
                "{ kind = \"codel\", targte = \"5 ms\" }",
                "unknown field `targte`",
            ),
            ("{ target = \"5 ms\" }", "missing field `kind`"),
            ("5", "expected a queue discipline's name"),
        ] {
            let e = scenario(text).expect_err(text);
            assert_eq!((e.line, e.column), (Some(4), Some(7)), "{text}: {e}");
            assert!(e.message.contains(says), "{text}: {}", e.message);
        }
    }

    #[test]
    fn a_discipline_needs_a_rate() {
        let text =
            "[downlink.pipe]\ndelay = \"20 ms\"\naqm = \"codel\"\n\n[[flow]]\nbytes = \"1 MB\"\n";
        let e = Scenario::from_toml(text, "aqm.toml").unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        assert!(
            e.message.contains("needs the link's `rate`"),
            "{}",
            e.message
        );
    }
}
