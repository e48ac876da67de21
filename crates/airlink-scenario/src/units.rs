//! Quantities with explicit units, as written in scenario files.
//!
//! Each type parses from a string such as `"200 ms"` or `"20 kbit/s"` and refuses anything
//! else with a message that says what was expected; each serialises back to a canonical
//! string, so a resolved scenario reads like the file a user would write.
//!
//! Decimal prefixes are powers of 1000 (k = 1e3, M = 1e6, G = 1e9); binary prefixes
//! (KiB, MiB, GiB) are powers of 1024. `b`/`bit` means bits and `B` bytes.

use airlink_engine::Duration;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// Splits `"12.5 Mbit/s"` into `(12.5, "Mbit/s")`.
fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || c == '+'
                || c == '-'
                || c == '_'
                || ((c == 'e' || c == 'E')
                    && i > 0
                    && s[i + 1..]
                        .starts_with(|d: char| d.is_ascii_digit() || d == '-' || d == '+')))
        })
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let number: f64 = s[..end].replace('_', "").parse().ok()?;
    Some((number, s[end..].trim()))
}

macro_rules! unit_type {
    ($(#[$doc:meta])* $name:ident($inner:ty), expecting = $expecting:literal, parse = $parse:expr, show = $show:expr) => {
        $(#[$doc])*
        #[derive(Copy, Clone, Debug, PartialEq, PartialOrd)]
        pub struct $name(pub $inner);

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                let parse: fn(f64, &str) -> Result<$inner, String> = $parse;
                let (x, unit) = split_number(s)
                    .ok_or_else(|| format!("invalid value \"{s}\": expected {}", $expecting))?;
                if !x.is_finite() {
                    return Err(format!("invalid value \"{s}\": expected a finite number"));
                }
                parse(x, unit).map($name).map_err(|e| format!("invalid value \"{s}\": {e}"))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let show: fn(&$inner, &mut fmt::Formatter<'_>) -> fmt::Result = $show;
                show(&self.0, f)
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string", "description": $expecting})
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                        v.parse().map_err(E::custom)
                    }
                }
                d.deserialize_str(V)
            }
        }
    };
}

unit_type!(
    /// A non-negative span of time: `"200 ms"`, `"2 s"`, `"10 us"`, `"1.5 min"`.
    Time(Duration),
    expecting = "a duration with a unit, like \"200 ms\" (units: ns, us, ms, s, min)",
    parse = |x, unit| {
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "min" => 60.0,
            "" => return Err("a duration needs a unit (ns, us, ms, s, min)".into()),
            u => return Err(format!("unknown time unit \"{u}\": expected ns, us, ms, s or min")),
        };
        if x < 0.0 {
            return Err("a duration cannot be negative".into());
        }
        Ok(Duration::from_secs_f64(x * scale))
    },
    show = |d, f| write!(f, "{d}")
);

unit_type!(
    /// A bit rate in bit/s: `"20 kbit/s"`, `"12 Mbit/s"`, `"1 Gbit/s"`, `"9600 bit/s"`.
    Rate(u64),
    expecting = "a rate with a unit, like \"20 kbit/s\" (bit/s, kbit/s, Mbit/s, Gbit/s)",
    parse = |x, unit| {
        let scale = match unit {
            "bit/s" | "bps" => 1.0,
            "kbit/s" | "kbps" => 1e3,
            "Mbit/s" | "Mbps" => 1e6,
            "Gbit/s" | "Gbps" => 1e9,
            "" => return Err("a rate needs a unit (bit/s, kbit/s, Mbit/s, Gbit/s)".into()),
            u => return Err(format!("unknown rate unit \"{u}\": expected bit/s, kbit/s, Mbit/s or Gbit/s")),
        };
        let bps = (x * scale).round();
        if bps <= 0.0 {
            return Err("a rate must be positive".into());
        }
        Ok(bps as u64)
    },
    show = |bps, f| {
        for (scale, unit) in [(1_000_000_000, "Gbit/s"), (1_000_000, "Mbit/s"), (1_000, "kbit/s")] {
            if *bps >= scale && *bps % scale == 0 {
                return write!(f, "{} {unit}", bps / scale);
            }
        }
        write!(f, "{bps} bit/s")
    }
);

unit_type!(
    /// A power ratio in decibels: `"16 dB"`, `"-3 dB"`.
    Decibel(f64),
    expecting = "a level in decibels, like \"16 dB\"",
    parse = |x, unit| match unit {
        "dB" => Ok(x),
        "" => Err("a level needs its unit: write it as \"16 dB\"".into()),
        u => Err(format!("unknown unit \"{u}\": expected dB")),
    },
    show = |x, f| write!(f, "{x} dB")
);

unit_type!(
    /// A speed in m/s: `"75 km/h"`, `"20 m/s"`.
    Speed(f64),
    expecting = "a speed with a unit, like \"75 km/h\" (km/h, m/s)",
    parse = |x, unit| {
        let mps = match unit {
            "km/h" => x / 3.6,
            "m/s" => x,
            "" => return Err("a speed needs a unit (km/h, m/s)".into()),
            u => return Err(format!("unknown speed unit \"{u}\": expected km/h or m/s")),
        };
        if mps < 0.0 {
            return Err("a speed cannot be negative".into());
        }
        Ok(mps)
    },
    show = |mps, f| write!(f, "{} km/h", (mps * 3.6 * 1e9).round() / 1e9)
);

unit_type!(
    /// A frequency in Hz: `"1900 MHz"`, `"200 kHz"`, `"2 GHz"`.
    Frequency(f64),
    expecting = "a frequency with a unit, like \"1900 MHz\" (Hz, kHz, MHz, GHz)",
    parse = |x, unit| {
        let scale = match unit {
            "Hz" => 1.0,
            "kHz" => 1e3,
            "MHz" => 1e6,
            "GHz" => 1e9,
            "" => return Err("a frequency needs a unit (Hz, kHz, MHz, GHz)".into()),
            u => return Err(format!("unknown frequency unit \"{u}\": expected Hz, kHz, MHz or GHz")),
        };
        if x <= 0.0 {
            return Err("a frequency must be positive".into());
        }
        Ok(x * scale)
    },
    show = |hz, f| {
        for (scale, unit) in [(1e9, "GHz"), (1e6, "MHz"), (1e3, "kHz")] {
            if *hz >= scale {
                return write!(f, "{} {unit}", hz / scale);
            }
        }
        write!(f, "{hz} Hz")
    }
);

unit_type!(
    /// A distance in metres: `"2 m"`, `"1.5 km"`.
    Distance(f64),
    expecting = "a distance with a unit, like \"2 m\" (m, km)",
    parse = |x, unit| {
        let m = match unit {
            "m" => x,
            "km" => x * 1e3,
            "" => return Err("a distance needs a unit (m, km)".into()),
            u => return Err(format!("unknown distance unit \"{u}\": expected m or km")),
        };
        if m <= 0.0 {
            return Err("a distance must be positive".into());
        }
        Ok(m)
    },
    show = |m, f| write!(f, "{m} m")
);

unit_type!(
    /// An amount of data in bytes: `"3 MB"`, `"1500 B"`, `"64 KiB"`, `"3 Mbit"` (= 375000 B).
    DataSize(u64),
    expecting = "an amount of data with a unit, like \"3 MB\" (B, kB, MB, GB, KiB, MiB, GiB, bit, kbit, Mbit)",
    parse = |x, unit| {
        let bytes = match unit {
            "B" => x,
            "kB" => x * 1e3,
            "MB" => x * 1e6,
            "GB" => x * 1e9,
            "KiB" => x * 1024.0,
            "MiB" => x * 1024.0 * 1024.0,
            "GiB" => x * 1024.0 * 1024.0 * 1024.0,
            "bit" | "b" => x / 8.0,
            "kbit" | "kb" => x * 1e3 / 8.0,
            "Mbit" | "Mb" => x * 1e6 / 8.0,
            "Gbit" | "Gb" => x * 1e9 / 8.0,
            "" => return Err("an amount of data needs a unit (B, kB, MB, KiB, Mbit, ...)".into()),
            u => return Err(format!("unknown data unit \"{u}\": expected B, kB, MB, GB, KiB, MiB, GiB, bit, kbit, Mbit or Gbit")),
        };
        if bytes < 0.0 {
            return Err("an amount of data cannot be negative".into());
        }
        if bytes.fract() != 0.0 {
            return Err("not a whole number of bytes".into());
        }
        Ok(bytes as u64)
    },
    show = |b, f| {
        for (scale, unit) in [(1_000_000_000, "GB"), (1_000_000, "MB"), (1_000, "kB")] {
            if *b >= scale && *b % scale == 0 {
                return write!(f, "{} {unit}", b / scale);
            }
        }
        write!(f, "{b} B")
    }
);

/// A probability in [0, 1]: a number (`0`, `1e-5`, `0.01`) or a percentage (`"1 %"`).
#[derive(Copy, Clone, Debug, Default, PartialEq, PartialOrd, Serialize)]
pub struct Probability(pub f64);

impl schemars::JsonSchema for Probability {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Probability".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": ["number", "string"], "description": "a probability: a number in [0, 1] or a percentage, like \"1 %\""})
    }
}

/// A number or a percentage (`"1 %"`) as a fraction, not yet checked against a range.
fn fraction(s: &str, what: &str, expected: &str) -> Result<f64, String> {
    let (x, unit) = split_number(s).ok_or_else(|| format!("invalid {what} \"{s}\": {expected}"))?;
    match unit {
        "%" => Ok(x / 100.0),
        "" => Ok(x),
        u => Err(format!(
            "invalid {what} \"{s}\": unknown unit \"{u}\": {expected}"
        )),
    }
}

impl std::str::FromStr for Probability {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let expected = "expected a probability: a number in [0, 1] or a percentage, like \"1 %\"";
        Probability::new(fraction(s, "probability", expected)?)
            .map_err(|_| format!("invalid probability \"{s}\": {expected}"))
    }
}

impl Probability {
    fn new(x: f64) -> Result<Probability, String> {
        if (0.0..=1.0).contains(&x) {
            Ok(Probability(x))
        } else {
            Err(format!("invalid probability {x}: expected a number in [0, 1] or a percentage, like \"1 %\""))
        }
    }
}

impl<'de> Deserialize<'de> for Probability {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Probability;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a probability: a number in [0, 1] or a percentage, like \"1 %\"")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Probability, E> {
                Probability::new(v).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Probability, E> {
                Probability::new(v as f64).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Probability, E> {
                Probability::new(v as f64).map_err(E::custom)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Probability, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A bit error rate in [0, 0.5]: a number (`1e-5`) or a percentage. Above one half a bit would
/// be wrong more often than right (a receiver would invert it), so such a rate is refused.
#[derive(Copy, Clone, Debug, Default, PartialEq, PartialOrd, Serialize)]
pub struct BitErrorRate(pub f64);

const BER_EXPECTED: &str =
    "expected a bit error rate: a number in [0, 0.5] or a percentage, like \"0.001 %\"";

impl BitErrorRate {
    fn new(x: f64) -> Result<BitErrorRate, String> {
        if (0.0..=0.5).contains(&x) {
            Ok(BitErrorRate(x))
        } else {
            Err(format!("invalid bit error rate {x}: {BER_EXPECTED}"))
        }
    }
}

impl schemars::JsonSchema for BitErrorRate {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "BitErrorRate".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": ["number", "string"], "description": "a bit error rate: a number in [0, 0.5] or a percentage"})
    }
}

impl std::str::FromStr for BitErrorRate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        BitErrorRate::new(fraction(s, "bit error rate", BER_EXPECTED)?)
            .map_err(|_| format!("invalid bit error rate \"{s}\": {BER_EXPECTED}"))
    }
}

impl<'de> Deserialize<'de> for BitErrorRate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BitErrorRate;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a bit error rate: a number in [0, 0.5] or a percentage")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<BitErrorRate, E> {
                BitErrorRate::new(v).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<BitErrorRate, E> {
                BitErrorRate::new(v as f64).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<BitErrorRate, E> {
                BitErrorRate::new(v as f64).map_err(E::custom)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<BitErrorRate, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A queue limit: a whole number of packets (`50`) or an amount of data (`"64 KiB"`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum QueueLimit {
    Packets(u32),
    Bytes(u64),
}

impl schemars::JsonSchema for QueueLimit {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "QueueLimit".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": ["integer", "string"], "description": "a queue limit: a number of packets (like 50) or an amount of data (like \"64 KiB\")"})
    }
}

impl Serialize for QueueLimit {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            QueueLimit::Packets(n) => s.serialize_u32(*n),
            QueueLimit::Bytes(b) => s.collect_str(&DataSize(*b)),
        }
    }
}

impl<'de> Deserialize<'de> for QueueLimit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = QueueLimit;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a queue limit: a number of packets (like 50) or an amount of data (like \"64 KiB\")")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<QueueLimit, E> {
                if v <= 0 || v > u32::MAX as i64 {
                    return Err(E::custom(format!(
                        "invalid queue limit {v}: expected at least 1 packet"
                    )));
                }
                Ok(QueueLimit::Packets(v as u32))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<QueueLimit, E> {
                self.visit_i64(v.min(i64::MAX as u64) as i64)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<QueueLimit, E> {
                let size: DataSize = v.parse().map_err(E::custom)?;
                if size.0 == 0 {
                    return Err(E::custom("invalid queue limit: expected at least 1 byte"));
                }
                Ok(QueueLimit::Bytes(size.0))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_units_scenarios_use() {
        assert_eq!(
            "200 ms".parse::<Time>().unwrap().0,
            Duration::from_millis(200)
        );
        assert_eq!(
            "0.667 ms".parse::<Time>().unwrap().0,
            Duration::from_nanos(667_000)
        );
        assert_eq!("20 kbit/s".parse::<Rate>().unwrap().0, 20_000);
        assert_eq!("1.5 Mbit/s".parse::<Rate>().unwrap().0, 1_500_000);
        assert_eq!("16 dB".parse::<Decibel>().unwrap().0, 16.0);
        assert!(("75 km/h".parse::<Speed>().unwrap().0 - 20.8333333).abs() < 1e-6);
        assert_eq!("1900 MHz".parse::<Frequency>().unwrap().0, 1.9e9);
        assert_eq!("3 MB".parse::<DataSize>().unwrap().0, 3_000_000);
        assert_eq!("3 Mbit".parse::<DataSize>().unwrap().0, 375_000);
        assert_eq!("64 KiB".parse::<DataSize>().unwrap().0, 65_536);
        assert_eq!(
            "1e-3 s".parse::<Time>().unwrap().0,
            Duration::from_millis(1)
        );
        assert_eq!("1 %".parse::<Probability>().unwrap().0, 0.01);
        assert_eq!("100%".parse::<Probability>().unwrap().0, 1.0);
        assert_eq!("0.25".parse::<Probability>().unwrap().0, 0.25);
    }

    #[test]
    fn refuses_missing_wrong_and_impossible_units() {
        assert!("200".parse::<Time>().unwrap_err().contains("needs a unit"));
        assert!("200 parsecs"
            .parse::<Time>()
            .unwrap_err()
            .contains("unknown time unit"));
        assert!("-5 kbit/s"
            .parse::<Rate>()
            .unwrap_err()
            .contains("positive"));
        assert!("fast"
            .parse::<Rate>()
            .unwrap_err()
            .contains("expected a rate"));
        assert!("3 bit"
            .parse::<DataSize>()
            .unwrap_err()
            .contains("whole number"));
        assert!("-1 m".parse::<Distance>().is_err());
        assert!("101 %"
            .parse::<Probability>()
            .unwrap_err()
            .contains("percentage"));
        assert!("1 dB"
            .parse::<Probability>()
            .unwrap_err()
            .contains("unknown unit"));
    }

    #[test]
    fn canonical_strings_parse_back_to_the_same_value() {
        for s in [
            "200 ms",
            "2 s",
            "666.666 us",
            "20 kbit/s",
            "1 Gbit/s",
            "1234 bit/s",
            "3 MB",
            "1500 B",
        ] {
            let t = s.parse::<Time>().map(|x| x.to_string());
            let r = s.parse::<Rate>().map(|x| x.to_string());
            let d = s.parse::<DataSize>().map(|x| x.to_string());
            for shown in [t, r, d].into_iter().flatten() {
                assert!(
                    shown.parse::<Time>().is_ok()
                        || shown.parse::<Rate>().is_ok()
                        || shown.parse::<DataSize>().is_ok()
                );
            }
        }
        let t: Time = "666.666 us".parse().unwrap();
        assert_eq!(t.to_string().parse::<Time>().unwrap(), t);
        let r: Rate = "1234 bit/s".parse().unwrap();
        assert_eq!(r.to_string().parse::<Rate>().unwrap(), r);
    }
}
