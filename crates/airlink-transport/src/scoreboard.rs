//! The sender's SACK scoreboard (RFC 6675 §3–4).
//!
//! Holds the SACKed ranges above SND.UNA in an ordered interval set (a `BTreeMap` of
//! ranges) and HighRxt, and keeps two running sums (bytes SACKed in total and below HighRxt)
//! so that `pipe` is computed without walking the window:
//!
//! - **IsLost** is monotone in the sequence number: every un-SACKed byte in the gap below the
//!   k-th highest SACKed range sees the same count of ranges (k) and bytes (the top k ranges)
//!   above it. So all losses lie below one boundary *L* = start of the first range, walking
//!   down, at which `k ≥ DupThresh` or the bytes exceed `(DupThresh − 1)·SMSS`. Finding *L*
//!   touches at most DupThresh ranges.
//! - **pipe** = un-SACKed bytes in [HighACK, HighData) − un-SACKed bytes below *L* + un-SACKed
//!   bytes below HighRxt, each term O(1) from the sums.

use crate::rangeset::RangeSet;

/// RFC 6675 scoreboard. Read-only to the outside: congestion controllers see it through
/// [`crate::LossView`] (e.g. TCP-AFC reads the hole structure).
#[derive(Clone, Debug, Default)]
pub struct SackScoreboard {
    sacked: RangeSet,
    /// One past the highest retransmitted byte (RFC 6675's HighRxt + 1); never below SND.UNA.
    high_rxt: u64,
    /// SACKed bytes in [SND.UNA, high_rxt).
    sacked_below_rxt: u64,
    /// Bumped whenever the SACKed ranges change (lets the endpoint cache the loss boundary).
    version: u64,
}

impl SackScoreboard {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Bytes SACKed above SND.UNA.
    pub fn sacked_bytes(&self) -> u64 {
        self.sacked.total()
    }

    /// Number of discontiguous SACKed ranges.
    pub fn block_count(&self) -> usize {
        self.sacked.len()
    }

    /// One past the highest SACKed byte.
    pub fn highest_sacked(&self) -> Option<u64> {
        self.sacked.last().map(|(_, e)| e)
    }

    /// SACKed ranges `[start, end)`, lowest first.
    pub fn blocks(&self) -> impl DoubleEndedIterator<Item = (u64, u64)> + '_ {
        self.sacked.iter()
    }

    /// Un-SACKed gaps `[start, end)` between `snd_una` and the highest SACKed byte, lowest
    /// first: the holes a SACK receiver reports.
    pub fn holes(&self, snd_una: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        let mut from = snd_una;
        self.sacked.iter().filter_map(move |(s, e)| {
            let hole = (from < s).then_some((from, s));
            from = from.max(e);
            hole
        })
    }

    /// One past the highest retransmitted byte (RFC 6675 HighRxt + 1).
    pub fn high_rxt(&self) -> u64 {
        self.high_rxt
    }

    pub fn is_sacked(&self, seq: u64) -> bool {
        self.sacked.contains(seq)
    }

    pub(crate) fn sacked_below_rxt(&self) -> u64 {
        self.sacked_below_rxt
    }

    /// Records a SACK block (already clipped to [SND.UNA, SND.MAX)); returns bytes newly SACKed.
    pub(crate) fn on_sack(&mut self, start: u64, end: u64) -> u64 {
        let ins = self.sacked.insert(start, end, self.high_rxt);
        self.sacked_below_rxt += ins.added_below;
        if ins.added > 0 {
            self.version += 1;
        }
        ins.added
    }

    /// Cumulative ACK up to `una`: forget everything below it.
    pub(crate) fn advance(&mut self, una: u64) {
        self.raise_high_rxt(una);
        let removed = self.sacked.remove_below(una);
        self.sacked_below_rxt -= removed;
        if removed > 0 {
            self.version += 1;
        }
    }

    /// HighRxt moves up to `x` (a retransmission ended there).
    pub(crate) fn raise_high_rxt(&mut self, x: u64) {
        if x > self.high_rxt {
            self.sacked_below_rxt += self.sacked.covered_in(self.high_rxt, x);
            self.high_rxt = x;
        }
    }

    /// Restarts HighRxt at `una` (entering recovery, or after an RTO). Nothing is SACKed below
    /// `una`, so the running sum restarts at zero.
    pub(crate) fn reset_high_rxt(&mut self, una: u64) {
        self.high_rxt = una;
        self.sacked_below_rxt = 0;
    }

    /// Forgets all SACK information (receiver reneging defence).
    pub(crate) fn clear(&mut self) {
        self.sacked.clear();
        self.sacked_below_rxt = 0;
        self.version += 1;
    }

    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    /// First un-SACKed sequence number at or above `x`.
    pub(crate) fn next_unsacked(&self, x: u64) -> u64 {
        match self.sacked.at_or_before(x) {
            Some((_, e)) if e > x => e,
            _ => x,
        }
    }

    /// Start of the first SACKed range starting after `x`.
    pub(crate) fn next_sacked_after(&self, x: u64) -> Option<u64> {
        self.sacked.next_start_after(x)
    }

    /// End of the SACKed range at or before `x` (for finding the start of an un-SACKed run).
    pub(crate) fn sacked_end_at_or_before(&self, x: u64) -> Option<u64> {
        self.sacked.at_or_before(x).map(|(_, e)| e)
    }

    /// The loss boundary: every un-SACKed byte in [una, L) is lost. `L` is the larger of the
    /// RFC 6675 IsLost boundary and `l_rto` (after an RTO everything sent before it counts as
    /// lost). Returns `(L, SACKed bytes at or above L)`.
    pub(crate) fn loss_boundary(
        &self,
        una: u64,
        l_rto: u64,
        smss: u64,
        dupthresh: u32,
    ) -> (u64, u64) {
        let floor = l_rto.max(una);
        let byte_limit = dupthresh.saturating_sub(1) as u64 * smss;
        let (mut k, mut sum) = (0u32, 0u64);
        // In recovery the top range alone usually decides (more than (DupThresh − 1)·SMSS);
        // otherwise walk down, at most DupThresh ranges in all.
        let Some(top) = self.sacked.last() else {
            return (floor, 0);
        };
        for (s, e) in std::iter::once(top).chain(self.sacked.iter_rev_below(top.0)) {
            if e <= floor {
                return (floor, sum);
            }
            if s < floor {
                return (floor, sum + (e - floor));
            }
            k += 1;
            sum += e - s;
            if k >= dupthresh || sum > byte_limit {
                return (s, sum);
            }
        }
        (floor, sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    /// Reference IsLost, octet by octet (RFC 6675 §4).
    fn is_lost_ref(sb: &SackScoreboard, seq: u64) -> bool {
        let blocks: Vec<_> = sb.blocks().filter(|&(s, _)| s > seq).collect();
        let bytes: u64 = sb
            .blocks()
            .map(|(s, e)| e.saturating_sub(s.max(seq + 1)))
            .sum();
        blocks.len() >= 3 || bytes > 2 * MSS
    }

    #[test]
    fn boundary_matches_octet_definition() {
        let mut sb = SackScoreboard::new();
        // Segments of 1000 B from 1: SACK #2, #4, #6 (three ranges, 3000 B).
        for i in [2u64, 4, 6] {
            sb.on_sack(1 + i * MSS, 1 + (i + 1) * MSS);
        }
        let (l, above) = sb.loss_boundary(1, 0, MSS, 3);
        assert_eq!(
            l,
            1 + 2 * MSS,
            "the 3rd range from the top starts at segment 2"
        );
        assert_eq!(above, 3 * MSS);
        for seq in 1..1 + 7 * MSS {
            if !sb.is_sacked(seq) {
                assert_eq!(seq < l, is_lost_ref(&sb, seq), "seq {seq}");
            }
        }
        // Bytes rule alone: one range of 2001 B.
        let mut sb = SackScoreboard::new();
        sb.on_sack(1 + MSS, 1 + 3 * MSS + 1);
        assert_eq!(sb.loss_boundary(1, 0, MSS, 3).0, 1 + MSS);
        let mut sb = SackScoreboard::new();
        sb.on_sack(1 + MSS, 1 + 3 * MSS);
        assert_eq!(
            sb.loss_boundary(1, 0, MSS, 3).0,
            1,
            "exactly 2 SMSS is not more than 2 SMSS"
        );
        // After an RTO the boundary is at least l_rto.
        assert_eq!(sb.loss_boundary(1, 5000, MSS, 3), (5000, 0));
        assert_eq!(sb.loss_boundary(1, 2500, MSS, 3), (2500, 501));
    }

    #[test]
    fn sacked_below_rxt_is_tracked_incrementally() {
        let mut sb = SackScoreboard::new();
        sb.reset_high_rxt(1);
        sb.on_sack(1001, 2001);
        sb.on_sack(3001, 4001);
        sb.raise_high_rxt(3501);
        assert_eq!(sb.sacked_below_rxt(), 1500);
        sb.on_sack(2001, 2501);
        assert_eq!(sb.sacked_below_rxt(), 2000);
        sb.advance(2501);
        assert_eq!(sb.sacked_below_rxt(), 500);
        assert_eq!(sb.sacked_bytes(), 1000);
        assert_eq!(sb.holes(2501).collect::<Vec<_>>(), vec![(2501, 3001)]);
    }
}
