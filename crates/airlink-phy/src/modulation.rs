//! The modulation formats of the WIPEMU system (\[S1\]: BPSK and 4- to 256-QAM, uncoded) and the
//! choice of constellation for odd bits per symbol (spec A.3).

use std::fmt;
use std::str::FromStr;

/// An uncoded M-ary modulation, M = 2^k, k = 1..8. Ordered by bits per symbol.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Modulation {
    /// Binary phase-shift keying (k = 1).
    Bpsk,
    /// 4-QAM = QPSK (k = 2).
    Qam4,
    /// 8-QAM (k = 3); constellation per [`OddKModel`].
    Qam8,
    /// 16-QAM (k = 4).
    Qam16,
    /// 32-QAM (k = 5); constellation per [`OddKModel`].
    Qam32,
    /// 64-QAM (k = 6).
    Qam64,
    /// 128-QAM (k = 7); constellation per [`OddKModel`].
    Qam128,
    /// 256-QAM (k = 8).
    Qam256,
}

impl Modulation {
    /// All formats, lowest order first.
    pub const ALL: [Modulation; 8] = [
        Modulation::Bpsk,
        Modulation::Qam4,
        Modulation::Qam8,
        Modulation::Qam16,
        Modulation::Qam32,
        Modulation::Qam64,
        Modulation::Qam128,
        Modulation::Qam256,
    ];

    const NAMES: [&'static str; 8] = [
        "bpsk", "4qam", "8qam", "16qam", "32qam", "64qam", "128qam", "256qam",
    ];

    /// Bits per symbol k = log2 M.
    #[inline]
    pub const fn bits(self) -> u32 {
        self as u32 + 1
    }

    /// Constellation size M = 2^k.
    #[inline]
    pub const fn order(self) -> u32 {
        1 << self.bits()
    }

    /// The format with `k` bits per symbol, if 1 ≤ k ≤ 8.
    pub const fn from_bits(k: u32) -> Option<Modulation> {
        if k >= 1 && k <= 8 {
            Some(Self::ALL[(k - 1) as usize])
        } else {
            None
        }
    }

    /// Canonical lower-case name: "bpsk", "4qam", …, "256qam".
    pub const fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// True for M = 4, 16, 64, 256 (√M-PAM on each rail); BPSK and odd k are not square.
    pub const fn is_square(self) -> bool {
        matches!(
            self,
            Modulation::Qam4 | Modulation::Qam16 | Modulation::Qam64 | Modulation::Qam256
        )
    }
}

impl fmt::Display for Modulation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not one of [`Modulation`]'s names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseModulationError {
    /// The rejected input.
    pub input: String,
}

impl fmt::Display for ParseModulationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown modulation {:?}; expected one of: {}",
            self.input,
            Modulation::NAMES.join(", ")
        )
    }
}

impl std::error::Error for ParseModulationError {}

impl FromStr for Modulation {
    type Err = ParseModulationError;

    /// Parses the canonical names, ignoring ASCII case ("16QAM" is accepted).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| ParseModulationError {
                input: s.to_owned(),
            })
    }
}

/// How the symbol error probability of odd-k formats (8, 32, 128) is modelled (spec A.3).
/// Square formats and BPSK are exact under every choice.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum OddKModel {
    /// Square-QAM formula with the actual (non-square) M: the textbook treatment. Default.
    #[default]
    Generic,
    /// I×J rectangular constellation, I = 2^⌈k/2⌉, J = 2^⌊k/2⌋ (8 = 4×2, 32 = 8×4, 128 = 16×8); exact.
    Rect,
    /// Cross constellations for 32 and 128 (rectangular-cell approximation of \[ZYW10\]).
    /// 8-QAM has no cross form and uses [`OddKModel::Rect`].
    Cross,
}

impl OddKModel {
    const NAMES: [&'static str; 3] = ["generic", "rect", "cross"];

    /// Canonical name: "generic", "rect" or "cross".
    pub const fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

impl fmt::Display for OddKModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not one of [`OddKModel`]'s names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseOddKModelError {
    /// The rejected input.
    pub input: String,
}

impl fmt::Display for ParseOddKModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown odd-k model {:?}; expected one of: {}",
            self.input,
            OddKModel::NAMES.join(", ")
        )
    }
}

impl std::error::Error for ParseOddKModelError {}

impl FromStr for OddKModel {
    type Err = ParseOddKModelError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [OddKModel::Generic, OddKModel::Rect, OddKModel::Cross]
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| ParseOddKModelError {
                input: s.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_order_and_names_round_trip() {
        for (i, m) in Modulation::ALL.into_iter().enumerate() {
            let k = i as u32 + 1;
            assert_eq!(m.bits(), k);
            assert_eq!(m.order(), 1 << k);
            assert_eq!(Modulation::from_bits(k), Some(m));
            assert_eq!(m.name().parse::<Modulation>(), Ok(m));
            assert_eq!(m.to_string(), m.name());
        }
        assert_eq!(Modulation::from_bits(0), None);
        assert_eq!(Modulation::from_bits(9), None);
        assert_eq!("256QAM".parse::<Modulation>(), Ok(Modulation::Qam256));
        assert_eq!(Modulation::Qam64.name(), "64qam");
    }

    #[test]
    fn parse_error_lists_the_valid_names() {
        let e = "qpsk".parse::<Modulation>().unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("\"qpsk\""));
        for n in Modulation::NAMES {
            assert!(msg.contains(n), "{msg}");
        }
        assert!("hex"
            .parse::<OddKModel>()
            .unwrap_err()
            .to_string()
            .contains("generic, rect, cross"));
    }

    #[test]
    fn odd_k_model_names() {
        assert_eq!(OddKModel::default(), OddKModel::Generic);
        for m in [OddKModel::Generic, OddKModel::Rect, OddKModel::Cross] {
            assert_eq!(m.name().parse::<OddKModel>(), Ok(m));
        }
    }

    #[test]
    fn ordering_follows_bits() {
        assert!(Modulation::Bpsk < Modulation::Qam4);
        assert!(Modulation::Qam128 < Modulation::Qam256);
        assert!(
            Modulation::Qam16.is_square()
                && !Modulation::Qam8.is_square()
                && !Modulation::Bpsk.is_square()
        );
    }
}
