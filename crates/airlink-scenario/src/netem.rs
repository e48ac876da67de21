//! netem's impairments on a link: the `impair = { ... }` table (netem's semantics, airlink's
//! units) and `netem = "..."`, netem's own syntax, parsed into that table.
//!
//! The mapping from `tc qdisc ... netem` options (iproute2's `tc-netem(8)`):
//!
//! | netem | `impair` keys |
//! |---|---|
//! | `delay TIME [JITTER [CORR%]]` | `delay`, `jitter`, `delay_correlation` |
//! | `distribution {uniform\|normal\|pareto\|paretonormal}` | `distribution` (default uniform, as netem without a table) |
//! | `loss [random] P% [CORR%]` | `loss`, `loss_correlation` |
//! | `loss state P13% [P31% [P32% [P23% [P14%]]]]` | `loss_state = { p13, p31, p32, p23, p14 }` (defaults as tc: p31 = 1 − p13, p32 = 0, p23 = 1, p14 = 0) |
//! | `loss gemodel P% [R% [1-H% [1-K%]]]` | `gemodel = { p, r, loss_bad, loss_good }` (defaults as tc: r = 1 − p, 1 − h = 1, 1 − k = 0) |
//! | `duplicate P% [CORR%]` | `duplicate`, `duplicate_correlation` |
//! | `corrupt P% [CORR%]` | `corrupt`, `corrupt_correlation` |
//! | `reorder P% [CORR%]` | `reorder`, `reorder_correlation` (needs a delay; `gap` 1 unless given) |
//! | `gap N` | `gap` |
//! | `rate RATE [OVERHEAD]` | `rate`, `packet_overhead` |
//! | `slot MIN [MAX]` | `slot_min`, `slot_max` (MAX defaults to MIN) |
//!
//! Refused by name: `limit` (the link model's queue holds packets), `ecn`, `seed` (the run's
//! seed drives every stream), the cell size and cell overhead of `rate`, `slot` with a
//! distribution or with `packets`/`bytes`, `distribution` from a file. Times need a unit (`us`,
//! `ms`, `s`), probabilities a `%`, rates `bit`, `kbit`, `mbit` or `gbit` (netem's `bps` means
//! bytes per second and is refused to avoid a factor of 8 by mistake).

use crate::units::{Probability, Rate, Time};
use airlink_engine::Duration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// netem's impairments on a link (netem's semantics; see docs/netem.md for the mapping from
/// netem's options). Every key defaults to no impairment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImpairConfig {
    /// Delay added after the link. Default 0.
    #[serde(default = "zero_time")]
    pub delay: Time,
    /// Jitter σ of the delay (uniform: ±σ; other distributions: standard deviation σ). Default 0.
    #[serde(default = "zero_time")]
    pub jitter: Time,
    /// Correlation of successive jitter draws (netem's). Default 0.
    #[serde(default)]
    pub delay_correlation: Probability,
    /// The jitter's distribution: uniform, normal, pareto, paretonormal. Default uniform.
    #[serde(default)]
    pub distribution: JitterDistribution,
    /// Random loss probability. Default 0.
    #[serde(default)]
    pub loss: Probability,
    /// Correlation of successive loss draws. Default 0.
    #[serde(default)]
    pub loss_correlation: Probability,
    /// Gilbert–Elliott loss (instead of `loss`). Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gemodel: Option<GeModel>,
    /// netem's 4-state loss model (instead of `loss`). Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_state: Option<FourState>,
    /// Probability a packet is duplicated. Default 0.
    #[serde(default)]
    pub duplicate: Probability,
    /// Correlation of successive duplication draws. Default 0.
    #[serde(default)]
    pub duplicate_correlation: Probability,
    /// Probability one bit of a packet is flipped (the receiver's checksum drops it). Default 0.
    #[serde(default)]
    pub corrupt: Probability,
    /// Correlation of successive corruption draws. Default 0.
    #[serde(default)]
    pub corrupt_correlation: Probability,
    /// Probability a packet is sent at once, ahead of delayed ones (needs `delay`). Default 0.
    #[serde(default)]
    pub reorder: Probability,
    /// Correlation of successive reorder draws. Default 0.
    #[serde(default)]
    pub reorder_correlation: Probability,
    /// Packets delayed between reordered ones. Default 1 (with `reorder`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap: Option<u32>,
    /// Rate of netem's own serialisation. Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// Bytes added to each packet's length for `rate` (negative: taken away). Default 0.
    #[serde(default)]
    pub packet_overhead: i32,
    /// Slotting: packets leave at slot boundaries spaced uniform in [slot_min, slot_max].
    /// Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_min: Option<Time>,
    /// The longest slot. Default `slot_min`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_max: Option<Time>,
}

fn zero_time() -> Time {
    Time(Duration::ZERO)
}

impl Default for ImpairConfig {
    fn default() -> Self {
        ImpairConfig {
            delay: zero_time(),
            jitter: zero_time(),
            delay_correlation: Probability(0.0),
            distribution: JitterDistribution::Uniform,
            loss: Probability(0.0),
            loss_correlation: Probability(0.0),
            gemodel: None,
            loss_state: None,
            duplicate: Probability(0.0),
            duplicate_correlation: Probability(0.0),
            corrupt: Probability(0.0),
            corrupt_correlation: Probability(0.0),
            reorder: Probability(0.0),
            reorder_correlation: Probability(0.0),
            gap: None,
            rate: None,
            packet_overhead: 0,
            slot_min: None,
            slot_max: None,
        }
    }
}

/// The jitter's distribution.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum JitterDistribution {
    #[default]
    Uniform,
    Normal,
    Pareto,
    Paretonormal,
}

/// `loss gemodel p r 1-h 1-k`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GeModel {
    /// Good → bad transition probability.
    pub p: Probability,
    /// Bad → good transition probability. Default 1 − p.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r: Option<Probability>,
    /// Loss probability in the bad state (1 − h). Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_bad: Option<Probability>,
    /// Loss probability in the good state (1 − k). Default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_good: Option<Probability>,
}

/// `loss state p13 p31 p32 p23 p14`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FourState {
    /// Gap (1) → burst loss (3).
    pub p13: Probability,
    /// Burst loss (3) → gap (1). Default 1 − p13.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p31: Option<Probability>,
    /// Burst loss (3) → burst received (2). Default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p32: Option<Probability>,
    /// Burst received (2) → burst loss (3). Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p23: Option<Probability>,
    /// Gap (1) → isolated loss (4). Default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p14: Option<Probability>,
}

impl ImpairConfig {
    /// Checks what the types do not: which key is wrong and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let max = Duration::from_secs(60);
        for (key, t) in [("delay", self.delay), ("jitter", self.jitter)] {
            if t.0 > max {
                return Err((key, format!("{t}: expected at most 60 s")));
            }
        }
        let loss_models = [
            self.loss.0 > 0.0,
            self.gemodel.is_some(),
            self.loss_state.is_some(),
        ];
        if loss_models.iter().filter(|m| **m).count() > 1 {
            return Err((
                "loss",
                "more than one loss model: expected one of loss, gemodel, loss_state".into(),
            ));
        }
        if let Some(s) = &self.loss_state {
            let (p13, p14) = (s.p13.0, s.p14.map_or(0.0, |p| p.0));
            let (p31, p32) = (s.p31.map_or(1.0 - p13, |p| p.0), s.p32.map_or(0.0, |p| p.0));
            if p13 + p14 > 1.0 || p31 + p32 > 1.0 {
                return Err((
                    "loss_state",
                    "p13 + p14 and p31 + p32 must each be at most 1: expected the probabilities of leaving one state".into(),
                ));
            }
        }
        if self.reorder.0 > 0.0 && self.delay.0.is_zero() {
            return Err((
                "reorder",
                "reordering needs a delay to reorder against: expected a positive delay (as netem)"
                    .into(),
            ));
        }
        if self.gap == Some(0) {
            return Err(("gap", "0: expected at least 1".into()));
        }
        if let Some(r) = self.rate {
            if r.0 == 0 {
                return Err(("rate", "0 bit/s: expected a positive rate".into()));
            }
        }
        if self.slot_max.is_some() && self.slot_min.is_none() {
            return Err(("slot_max", "expected slot_min beside it".into()));
        }
        if let (Some(lo), Some(hi)) = (self.slot_min, self.slot_max) {
            if hi.0 < lo.0 {
                return Err((
                    "slot_max",
                    format!("{hi}: expected at least slot_min ({lo})"),
                ));
            }
        }
        if self.slot_min.is_some_and(|s| s.0.is_zero() || s.0 > max) {
            return Err(("slot_min", "expected a slot from 1 ns to 60 s".into()));
        }
        Ok(())
    }

    /// Parses netem's option string (see the module documentation); the error names the
    /// option and what was expected.
    pub fn from_netem(text: &str) -> Result<ImpairConfig, String> {
        let tokens: Vec<&str> = text.split_whitespace().collect();
        let mut c = ImpairConfig::default();
        let mut i = 0;
        let opt_pct = |i: &mut usize| -> Result<Option<Probability>, String> {
            match tokens.get(*i) {
                Some(t) if t.ends_with('%') || t.parse::<f64>().is_ok() => {
                    *i += 1;
                    percent(t).map(Some)
                }
                _ => Ok(None),
            }
        };
        while i < tokens.len() {
            let word = tokens[i];
            i += 1;
            let need = |i: usize, what: &str| {
                tokens
                    .get(i)
                    .copied()
                    .ok_or_else(|| format!("`{word}` needs {what}"))
            };
            match word {
                "delay" | "latency" => {
                    c.delay = time(need(i, "a time, like 100ms")?)?;
                    i += 1;
                    if let Some(t) = tokens.get(i).filter(|t| starts_time(t)) {
                        c.jitter = time(t)?;
                        i += 1;
                        if let Some(p) = opt_pct(&mut i)? {
                            c.delay_correlation = p;
                        }
                    }
                }
                "distribution" => {
                    let d = need(i, "uniform, normal, pareto or paretonormal")?;
                    i += 1;
                    c.distribution = match d {
                        "uniform" => JitterDistribution::Uniform,
                        "normal" => JitterDistribution::Normal,
                        "pareto" => JitterDistribution::Pareto,
                        "paretonormal" => JitterDistribution::Paretonormal,
                        other => return Err(format!("distribution `{other}`: airlink has no distribution tables from files: expected uniform, normal, pareto or paretonormal")),
                    };
                }
                "loss" | "drop" => match need(i, "a probability, like 0.3%")? {
                    "state" => {
                        i += 1;
                        let p13 = opt_pct(&mut i)?.ok_or("`loss state` needs p13, like 1%")?;
                        c.loss_state = Some(FourState {
                            p13,
                            p31: opt_pct(&mut i)?,
                            p32: opt_pct(&mut i)?,
                            p23: opt_pct(&mut i)?,
                            p14: opt_pct(&mut i)?,
                        });
                    }
                    "gemodel" => {
                        i += 1;
                        let p = opt_pct(&mut i)?.ok_or("`loss gemodel` needs p, like 1%")?;
                        c.gemodel = Some(GeModel {
                            p,
                            r: opt_pct(&mut i)?,
                            loss_bad: opt_pct(&mut i)?,
                            loss_good: opt_pct(&mut i)?,
                        });
                    }
                    _ => {
                        if tokens[i] == "random" {
                            i += 1;
                        }
                        c.loss = opt_pct(&mut i)?.ok_or("`loss` needs a probability, like 0.3%")?;
                        if let Some(p) = opt_pct(&mut i)? {
                            c.loss_correlation = p;
                        }
                    }
                },
                "duplicate" | "corrupt" | "reorder" => {
                    let p = opt_pct(&mut i)?.ok_or(format!("`{word}` needs a probability, like 1%"))?;
                    let cor = opt_pct(&mut i)?.unwrap_or_default();
                    match word {
                        "duplicate" => (c.duplicate, c.duplicate_correlation) = (p, cor),
                        "corrupt" => (c.corrupt, c.corrupt_correlation) = (p, cor),
                        _ => (c.reorder, c.reorder_correlation) = (p, cor),
                    }
                }
                "gap" => {
                    let n = need(i, "a number of packets")?;
                    i += 1;
                    c.gap = Some(n.parse().map_err(|_| format!("gap `{n}`: expected a whole number of packets"))?);
                }
                "rate" => {
                    c.rate = Some(rate(need(i, "a rate, like 1mbit")?)?);
                    i += 1;
                    if let Some(o) = tokens.get(i).and_then(|t| t.parse::<i32>().ok()) {
                        c.packet_overhead = o;
                        i += 1;
                        if tokens.get(i).is_some_and(|t| t.parse::<i64>().is_ok()) {
                            return Err("rate: a cell size and cell overhead are not modelled by airlink: expected `rate RATE [PACKETOVERHEAD]`".into());
                        }
                    }
                }
                "slot" => {
                    let first = need(i, "a minimum slot time, like 800us")?;
                    if first == "distribution" {
                        return Err("slot distribution: not modelled by airlink: expected `slot MIN [MAX]`".into());
                    }
                    let lo = time(first)?;
                    i += 1;
                    c.slot_min = Some(lo);
                    c.slot_max = Some(match tokens.get(i).filter(|t| starts_time(t)) {
                        Some(t) => {
                            i += 1;
                            time(t)?
                        }
                        None => lo,
                    });
                    if let Some(w @ ("packets" | "bytes")) = tokens.get(i).copied() {
                        return Err(format!("slot `{w}`: limits per slot are not modelled by airlink: expected `slot MIN [MAX]`"));
                    }
                }
                "limit" => return Err("`limit`: the link model's own queue holds the packets in airlink: expected no limit (set the link's queue instead)".into()),
                "ecn" => return Err("`ecn`: airlink's netem does not mark ECN: expected no ecn".into()),
                "seed" => return Err("`seed`: airlink seeds netem from the run's seed: expected no seed".into()),
                other => return Err(format!("`{other}`: not a netem option airlink knows: expected delay, distribution, loss, duplicate, corrupt, reorder, gap, rate or slot")),
            }
        }
        if c.reorder.0 > 0.0 && c.gap.is_none() {
            c.gap = Some(1);
        }
        Ok(c)
    }
}

fn starts_time(t: &str) -> bool {
    t.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && t.ends_with(|c: char| c.is_ascii_alphabetic())
}

/// A netem time: a number with `s`, `ms`, `us` (`sec`, `msec`, `usec` too).
fn time(t: &str) -> Result<Time, String> {
    let split = t
        .find(|c: char| c.is_ascii_alphabetic())
        .ok_or_else(|| format!("`{t}`: expected a time with a unit, like 100ms"))?;
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{t}`: expected a time with a unit, like 100ms"))?;
    let ns = match unit {
        "s" | "sec" | "secs" => 1e9,
        "ms" | "msec" | "msecs" => 1e6,
        "us" | "usec" | "usecs" => 1e3,
        "ns" | "nsec" | "nsecs" => 1.0,
        _ => {
            return Err(format!(
                "`{t}`: unknown time unit: expected s, ms, us or ns"
            ))
        }
    };
    if !(0.0..=60e9).contains(&(v * ns)) {
        return Err(format!("`{t}`: expected 0 to 60 s"));
    }
    Ok(Time(Duration::from_nanos((v * ns).round() as u64)))
}

/// A netem percentage (`0.3%`); a bare number is taken as a percentage too, as tc does.
fn percent(t: &str) -> Result<Probability, String> {
    let v: f64 = t
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("`{t}`: expected a percentage, like 0.3%"))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!("`{t}`: expected 0% to 100%"));
    }
    Ok(Probability(v / 100.0))
}

/// A netem rate in bits per second (`bit`, `kbit`, `mbit`, `gbit`).
fn rate(t: &str) -> Result<Rate, String> {
    let lower = t.to_ascii_lowercase();
    let split = lower
        .find(|c: char| c.is_ascii_alphabetic())
        .ok_or_else(|| format!("`{t}`: expected a rate with a unit, like 1mbit"))?;
    let (num, unit) = lower.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{t}`: expected a rate with a unit, like 1mbit"))?;
    let scale = match unit {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        _ => {
            return Err(format!(
            "`{t}`: expected a rate in bit, kbit, mbit or gbit (netem's bps is bytes per second)"
        ))
        }
    };
    Ok(Rate((v * scale).round() as u64))
}

impl crate::LinkConfig {
    /// The link's impairments: its `impair` table, or its `netem` string read into one;
    /// `None` without either. The error is (key path below the link's table, message).
    pub fn impairments(&self) -> Result<Option<ImpairConfig>, (Vec<&'static str>, String)> {
        let c = match (&self.impair, &self.netem) {
            (Some(_), Some(_)) => {
                return Err((
                    vec!["netem"],
                    "both `impair` and `netem` given: expected one of them".into(),
                ))
            }
            (Some(c), None) => c.clone(),
            (None, Some(s)) => {
                ImpairConfig::from_netem(s).map_err(|m| (vec!["netem"], format!("netem: {m}")))?
            }
            (None, None) => return Ok(None),
        };
        c.validate().map_err(|(k, m)| match self.netem {
            Some(_) => (vec!["netem"], format!("netem: {k}: {m}")),
            None => (vec!["impair", k], m),
        })?;
        Ok(Some(c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Time {
        Time(Duration::from_millis(x))
    }

    #[test]
    fn the_issue_string_maps_to_the_table() {
        let c = ImpairConfig::from_netem("delay 100ms 10ms 25% distribution normal loss 0.3% 25% reorder 5% 50% duplicate 1% corrupt 0.1% slot 800us 1ms").unwrap();
        let p = |x: f64| Probability(x);
        let close = |a: Probability, b: f64| (a.0 - b).abs() < 1e-12;
        assert_eq!((c.delay, c.jitter), (ms(100), ms(10)));
        assert!(close(c.delay_correlation, 0.25));
        assert_eq!(c.distribution, JitterDistribution::Normal);
        assert!(close(c.loss, 0.003) && close(c.loss_correlation, 0.25));
        assert!(close(c.reorder, 0.05) && close(c.reorder_correlation, 0.5));
        assert_eq!(c.gap, Some(1));
        assert!(close(c.duplicate, 0.01) && close(c.corrupt, 0.001));
        assert_eq!(c.slot_min, Some(Time(Duration::from_micros(800))));
        assert_eq!(c.slot_max, Some(ms(1)));
        assert!(c.validate().is_ok());
        let _ = p;
    }

    #[test]
    fn loss_models_rate_and_gap() {
        let c = ImpairConfig::from_netem("loss gemodel 1% 25% 100% 0%").unwrap();
        let g = c.gemodel.unwrap();
        assert_eq!(
            (
                g.p.0,
                g.r.unwrap().0,
                g.loss_bad.unwrap().0,
                g.loss_good.unwrap().0
            ),
            (0.01, 0.25, 1.0, 0.0)
        );
        let c = ImpairConfig::from_netem("loss state 2% 40%").unwrap();
        let s = c.loss_state.unwrap();
        assert_eq!((s.p13.0, s.p31.unwrap().0, s.p32), (0.02, 0.4, None));
        let c = ImpairConfig::from_netem("delay 10ms reorder 25% gap 5 rate 2mbit 20").unwrap();
        assert_eq!(
            (c.gap, c.rate, c.packet_overhead, c.jitter),
            (Some(5), Some(Rate(2_000_000)), 20, zero_time())
        );
        let c = ImpairConfig::from_netem("loss random 1%").unwrap();
        assert_eq!(c.loss.0, 0.01);
    }

    #[test]
    fn unsupported_options_are_refused_by_name() {
        for (s, name) in [
            ("limit 1000", "limit"),
            ("delay 10ms ecn", "ecn"),
            ("rate 1mbit 20 53 5", "cell size"),
            ("slot 1ms 2ms packets 3", "packets"),
            ("slot distribution normal 1ms 1ms", "slot distribution"),
            ("distribution experimental", "experimental"),
            ("delay 100", "with a unit"),
            ("rate 100kbps", "bytes per second"),
            ("frobnicate 3", "frobnicate"),
            ("seed 7", "seed"),
        ] {
            let e = ImpairConfig::from_netem(s).unwrap_err();
            assert!(e.contains(name), "{s}: {e}");
        }
        let c = ImpairConfig::from_netem("reorder 5%").unwrap();
        assert_eq!(c.validate().unwrap_err().0, "reorder");
        let c = ImpairConfig::from_netem("loss 1% loss gemodel 1%").unwrap();
        assert_eq!(c.validate().unwrap_err().0, "loss");
    }
}
