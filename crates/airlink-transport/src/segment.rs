//! TCP segments as the simulation carries them: header fields only, no payload bytes.
//!
//! A [`Segment`] is `Copy` and holds no heap memory, so moving one through a link model costs a
//! copy of about 130 bytes. Sequence numbers are absolute `u64` byte offsets with ISN = 0 (the
//! SYN occupies sequence number 0, the first payload byte number 1); they never wrap.

use crate::ecn::Codepoint;
use std::fmt;

/// The TCP control flags airlink models (URG and PSH are not modelled; ECE and CWR are
/// [`Segment::ece`] and [`Segment::cwr`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags {
    pub syn: bool,
    pub ack: bool,
    pub fin: bool,
    pub rst: bool,
}

impl Flags {
    pub const NONE: Flags = Flags {
        syn: false,
        ack: false,
        fin: false,
        rst: false,
    };
    pub const SYN: Flags = Flags {
        syn: true,
        ..Flags::NONE
    };
    pub const SYN_ACK: Flags = Flags {
        syn: true,
        ack: true,
        ..Flags::NONE
    };
    pub const ACK: Flags = Flags {
        ack: true,
        ..Flags::NONE
    };
    pub const FIN_ACK: Flags = Flags {
        fin: true,
        ack: true,
        ..Flags::NONE
    };
    pub const RST: Flags = Flags {
        rst: true,
        ..Flags::NONE
    };
}

/// Up to [`SackBlocks::MAX`] SACK blocks `[start, end)` (RFC 2018), in the order they are
/// carried: the first block holds the most recently received segment.
#[derive(Copy, Clone, Default)]
pub struct SackBlocks {
    blocks: [(u64, u64); SackBlocks::MAX],
    len: u8,
}

impl SackBlocks {
    /// Four blocks fit in the 40 option bytes without timestamps, three with them.
    pub const MAX: usize = 4;

    pub const fn new() -> Self {
        SackBlocks {
            blocks: [(0, 0); SackBlocks::MAX],
            len: 0,
        }
    }

    /// The first [`SackBlocks::MAX`] blocks of `blocks`.
    pub fn from_slice(blocks: &[(u64, u64)]) -> Self {
        let mut s = Self::new();
        for &(a, b) in blocks.iter().take(Self::MAX) {
            s.push(a, b);
        }
        s
    }

    /// Appends a block; returns false (and drops it) when the option is full.
    pub fn push(&mut self, start: u64, end: u64) -> bool {
        let n = self.len as usize;
        if n >= Self::MAX {
            return false;
        }
        self.blocks[n] = (start, end);
        self.len += 1;
        true
    }

    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.blocks[..self.len as usize]
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> std::iter::Copied<std::slice::Iter<'_, (u64, u64)>> {
        self.as_slice().iter().copied()
    }
}

impl PartialEq for SackBlocks {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl Eq for SackBlocks {}

impl std::hash::Hash for SackBlocks {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state)
    }
}

impl fmt::Debug for SackBlocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<'a> IntoIterator for &'a SackBlocks {
    type Item = (u64, u64);
    type IntoIter = std::iter::Copied<std::slice::Iter<'a, (u64, u64)>>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// One TCP segment's header fields.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Segment {
    /// Sequence number of the first byte (or of the SYN/FIN when `len` is 0).
    pub seq: u64,
    /// Cumulative acknowledgment: next byte expected; valid when `flags.ack`.
    pub ack: u64,
    /// Payload bytes carried (simulated: no bytes are stored).
    pub len: u32,
    pub flags: Flags,
    /// Receive window in bytes (airlink does not scale windows).
    pub wnd: u32,
    /// SACK option blocks (empty when none).
    pub sack: SackBlocks,
    /// Timestamps option `(TSval, TSecr)` in millisecond ticks, when negotiated.
    pub timestamps: Option<(u32, u32)>,
    /// SACK-permitted option (SYN and SYN-ACK only).
    pub sack_permitted: bool,
    /// MSS option (SYN and SYN-ACK only): the largest segment the sender of this SYN accepts,
    /// in bytes of TCP payload plus TCP options (MTU − 40).
    pub mss_option: Option<u16>,
    /// ECN-Echo flag (RFC 3168 §6.1): on a SYN, with `cwr`, an ECN-setup SYN; on a SYN-ACK,
    /// without it, an ECN-setup SYN-ACK; otherwise the receiver saw a CE mark. Beside `flags`
    /// rather than in them so that code building [`Flags`] field by field keeps working.
    pub ece: bool,
    /// Congestion Window Reduced flag (RFC 3168 §6.1): the sender reduced its window.
    pub cwr: bool,
    /// The ECN field of the IP header carrying the segment (RFC 3168 §5): what the sender set
    /// and the links changed (an AQM marks an ECN-capable packet CE instead of dropping it).
    pub ip_ecn: Codepoint,
}

impl Segment {
    /// IPv4 header without options.
    pub const IP_HEADER_LEN: u32 = 20;
    /// TCP header without options.
    pub const TCP_HEADER_LEN: u32 = 20;

    /// Bytes of IP and TCP header, options included, laid out the way Linux does: MSS 4,
    /// timestamps 12 (NOP, NOP, TS; SACK-permitted shares that padding when both are on a SYN),
    /// SACK-permitted alone 4 (NOP, NOP, SACKOK), SACK 4 + 8 per block (NOP, NOP, kind, len).
    /// So a plain data segment or ACK has 40 bytes, one with timestamps 52.
    pub fn header_len(&self) -> u32 {
        let mut opt = 0;
        if self.mss_option.is_some() {
            opt += 4;
        }
        if self.timestamps.is_some() {
            opt += 12;
        } else if self.sack_permitted {
            opt += 4;
        }
        if !self.sack.is_empty() {
            opt += 4 + 8 * self.sack.len() as u32;
        }
        Self::IP_HEADER_LEN + Self::TCP_HEADER_LEN + opt
    }

    /// Size of the IP packet on the wire: headers plus payload.
    pub fn wire_len(&self) -> u32 {
        self.header_len() + self.len
    }

    /// Sequence space the segment occupies: payload plus one for SYN and one for FIN.
    pub fn seq_len(&self) -> u64 {
        self.len as u64 + self.flags.syn as u64 + self.flags.fin as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lengths_follow_linux_layout() {
        let data = Segment {
            len: 1460,
            flags: Flags::ACK,
            ..Default::default()
        };
        assert_eq!(data.header_len(), 40);
        assert_eq!(data.wire_len(), 1500);
        let syn = Segment {
            flags: Flags::SYN,
            mss_option: Some(1460),
            sack_permitted: true,
            ..Default::default()
        };
        assert_eq!(syn.header_len(), 48);
        let syn_ts = Segment {
            timestamps: Some((1, 0)),
            ..syn
        };
        assert_eq!(syn_ts.header_len(), 56);
        let ack = Segment {
            flags: Flags::ACK,
            sack: SackBlocks::from_slice(&[(10, 20), (30, 40)]),
            ..Default::default()
        };
        assert_eq!(ack.header_len(), 40 + 4 + 16);
        let ts_data = Segment {
            len: 1448,
            timestamps: Some((5, 6)),
            ..data
        };
        assert_eq!(ts_data.wire_len(), 1500);
    }

    #[test]
    fn sack_blocks_hold_at_most_four() {
        let mut s = SackBlocks::new();
        for i in 0..4 {
            assert!(s.push(i * 10, i * 10 + 5));
        }
        assert!(!s.push(100, 105));
        assert_eq!(s.len(), 4);
        assert_eq!(s.iter().next(), Some((0, 5)));
        assert_eq!(
            SackBlocks::from_slice(&[(1, 2)]),
            SackBlocks::from_slice(&[(1, 2)])
        );
    }
}
