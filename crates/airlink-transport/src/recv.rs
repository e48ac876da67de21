//! The receiving half of an endpoint: reassembly, SACK blocks, advertised window.
//!
//! The application consumes in-order data at once, so only out-of-order data occupies the
//! buffer. Delayed-ACK *decisions* are made by the endpoint from the [`RxOutcome`].

use crate::rangeset::RangeSet;
use crate::segment::SackBlocks;

#[derive(Clone, Debug)]
pub(crate) struct Receiver {
    /// Next sequence number expected (RCV.NXT).
    pub rcv_nxt: u64,
    buf: u64,
    /// Out-of-order payload held.
    ooo: RangeSet,
    /// Ranges to report, most recent first (RFC 2018 §4); always current maximal ranges of
    /// `ooo`.
    sack_list: [(u64, u64); SackBlocks::MAX],
    sack_n: usize,
    /// Highest right edge advertised (RCV.NXT + RCV.WND); never moves left.
    right_edge: u64,
    /// Sequence number of the peer's FIN, once seen.
    fin_seq: Option<u64>,
    pub fin_received: bool,
    /// An ACK must go out now.
    pub ack_pending: bool,
    /// Data segments received since the last ACK sent.
    pub unacked: u32,
    /// RFC 7323 TS.Recent.
    pub ts_recent: u32,
    /// RCV.NXT carried by the last ACK sent (RFC 7323 Last.ACK.sent).
    pub last_ack_sent: u64,
}

/// What a received segment did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RxOutcome {
    /// Payload bytes newly delivered in order.
    pub delivered: u64,
    /// The peer's FIN was consumed now.
    pub peer_fin: bool,
    /// Arrived above a hole (RFC 5681: ACK at once).
    pub out_of_order: bool,
    /// Advanced RCV.NXT while out-of-order data was held (filled a hole: ACK at once).
    pub filled_hole: bool,
    /// Carried nothing new (ACK at once).
    pub duplicate: bool,
    /// Some of it lay beyond the window or the FIN and was discarded.
    pub trimmed: bool,
}

impl Receiver {
    pub fn new(buf: u32) -> Self {
        Receiver {
            rcv_nxt: 0,
            buf: buf as u64,
            ooo: RangeSet::new(),
            sack_list: [(0, 0); SackBlocks::MAX],
            sack_n: 0,
            right_edge: 0,
            fin_seq: None,
            fin_received: false,
            ack_pending: false,
            unacked: 0,
            ts_recent: 0,
            last_ack_sent: 0,
        }
    }

    /// The peer's SYN occupied `irs`.
    pub fn init(&mut self, irs: u64) {
        self.rcv_nxt = irs + 1;
        self.right_edge = self.rcv_nxt + self.buf;
        self.last_ack_sent = self.rcv_nxt;
    }

    pub fn ooo_bytes(&self) -> u64 {
        self.ooo.total()
    }

    fn free(&self) -> u64 {
        self.buf.saturating_sub(self.ooo.total())
    }

    /// End of the acceptable sequence space.
    fn window_end(&self) -> u64 {
        self.right_edge.max(self.rcv_nxt + self.free())
    }

    /// Window to advertise now; moves the right edge (never left).
    pub fn advertise(&mut self) -> u32 {
        self.right_edge = self.window_end();
        (self.right_edge - self.rcv_nxt).min(u32::MAX as u64) as u32
    }

    /// Payload `[seq, seq + len)` and possibly a FIN after it. The caller has checked that the
    /// arithmetic does not overflow.
    pub fn on_segment(&mut self, seq: u64, len: u32, fin: bool) -> RxOutcome {
        let mut out = RxOutcome::default();
        let mut end = seq + len as u64;
        let mut fin = fin;
        if let Some(f) = self.fin_seq {
            // Nothing exists beyond the peer's FIN; a FIN elsewhere is bogus.
            if end > f {
                end = f.max(seq);
                out.trimmed = true;
            }
            if fin && seq + len as u64 != f {
                fin = false;
            }
        }
        let win_end = self.window_end();
        if end > win_end {
            end = win_end.max(seq);
            fin = false; // the FIN lies beyond the window too
            out.trimmed = true;
        }
        if fin && self.fin_seq.is_none() {
            self.fin_seq = Some(end);
        }
        let start = seq.max(self.rcv_nxt);
        if start < end {
            if start > self.rcv_nxt {
                let ins = self.ooo.insert(start, end, 0);
                out.out_of_order = true;
                out.duplicate = ins.added == 0;
                self.note_sack(ins.merged);
            } else {
                out.filled_hole = !self.ooo.is_empty();
                let mut nxt = end;
                while let Some((s, e)) = self.ooo.first() {
                    if s > nxt {
                        break;
                    }
                    self.ooo.pop_first();
                    nxt = nxt.max(e);
                }
                out.delivered = nxt - self.rcv_nxt;
                self.rcv_nxt = nxt;
                self.drop_sack_below(nxt);
            }
        } else if len > 0 && !out.trimmed {
            out.duplicate = true;
        }
        if fin && seq > self.rcv_nxt {
            out.out_of_order = true;
        }
        match self.fin_seq {
            Some(f) if !self.fin_received && self.rcv_nxt == f => {
                self.fin_received = true;
                self.rcv_nxt = f + 1;
                out.peer_fin = true;
            }
            Some(_) if self.fin_received && fin => out.duplicate = true,
            _ => {}
        }
        out
    }

    /// RFC 2018 §4: the block holding the newest segment goes first, then the previously
    /// reported blocks it does not cover.
    fn note_sack(&mut self, merged: (u64, u64)) {
        let mut list = [(0, 0); SackBlocks::MAX];
        list[0] = merged;
        let mut n = 1;
        for &(s, e) in &self.sack_list[..self.sack_n] {
            let inside = s >= merged.0 && e <= merged.1;
            if !inside && n < SackBlocks::MAX {
                list[n] = (s, e);
                n += 1;
            }
        }
        self.sack_list = list;
        self.sack_n = n;
    }

    fn drop_sack_below(&mut self, nxt: u64) {
        let mut n = 0;
        for i in 0..self.sack_n {
            if self.sack_list[i].0 >= nxt {
                self.sack_list[n] = self.sack_list[i];
                n += 1;
            }
        }
        self.sack_n = n;
    }

    /// Up to `max` blocks: the recency list first, then any other held ranges, lowest first
    /// (RFC 2018: report as many distinct blocks as fit). A block ending at the peer's FIN
    /// covers the FIN too (it occupies a sequence number, and Linux SACKs it with the data), so
    /// the sender does not resend a FIN the receiver holds.
    pub fn fill_sack(&self, out: &mut SackBlocks, max: usize) {
        let fin = self.fin_seq;
        let with_fin = |e: u64| if Some(e) == fin { e + 1 } else { e };
        for &(s, e) in self.sack_list[..self.sack_n].iter().take(max) {
            out.push(s, with_fin(e));
        }
        if out.len() < max && self.ooo.len() > self.sack_n {
            for (s, e) in self.ooo.iter() {
                if out.len() >= max {
                    break;
                }
                if !self.sack_list[..self.sack_n].iter().any(|&(ls, _)| ls == s) {
                    out.push(s, with_fin(e));
                }
            }
        }
    }

    /// An ACK carrying the current state left.
    pub fn on_ack_sent(&mut self) {
        self.ack_pending = false;
        self.unacked = 0;
        self.last_ack_sent = self.rcv_nxt;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx() -> Receiver {
        let mut r = Receiver::new(10_000);
        r.init(0);
        r
    }

    fn sack(r: &Receiver, max: usize) -> Vec<(u64, u64)> {
        let mut s = SackBlocks::new();
        r.fill_sack(&mut s, max);
        s.as_slice().to_vec()
    }

    #[test]
    fn sack_blocks_most_recent_first() {
        let mut r = rx();
        assert_eq!(r.on_segment(1, 100, false).delivered, 100);
        assert!(r.on_segment(201, 100, false).out_of_order);
        assert!(r.on_segment(401, 100, false).out_of_order);
        assert_eq!(sack(&r, 4), vec![(401, 501), (201, 301)]);
        r.on_segment(301, 50, false);
        assert_eq!(
            sack(&r, 4),
            vec![(201, 351), (401, 501)],
            "the extended block moves first"
        );
        r.on_segment(601, 100, false);
        r.on_segment(801, 100, false);
        r.on_segment(1001, 100, false);
        assert_eq!(sack(&r, 3), vec![(1001, 1101), (801, 901), (601, 701)]);
        let o = r.on_segment(101, 100, false);
        assert!(o.filled_hole);
        assert_eq!(o.delivered, 250);
        assert_eq!(r.rcv_nxt, 351);
        assert_eq!(
            sack(&r, 4),
            vec![(1001, 1101), (801, 901), (601, 701), (401, 501)]
        );
        assert_eq!(r.ooo_bytes(), 400);
    }

    #[test]
    fn fin_after_a_hole_is_consumed_when_the_hole_fills() {
        let mut r = rx();
        let o = r.on_segment(101, 100, true);
        assert!(o.out_of_order && !o.peer_fin);
        assert_eq!(
            sack(&r, 4),
            vec![(101, 202)],
            "the SACK block covers the FIN"
        );
        let o = r.on_segment(1, 100, false);
        assert_eq!(o.delivered, 200);
        assert!(o.peer_fin);
        assert_eq!(r.rcv_nxt, 202);
        assert!(r.on_segment(101, 100, true).duplicate, "retransmitted FIN");
    }

    #[test]
    fn window_shrinks_by_held_data_but_edge_never_moves_left() {
        let mut r = rx();
        assert_eq!(r.advertise(), 10_000);
        r.on_segment(1001, 1000, false);
        assert_eq!(r.advertise(), 10_000, "right edge kept");
        r.on_segment(1, 1000, false);
        assert_eq!(r.advertise(), 10_000);
        // Beyond the window: trimmed.
        let o = r.on_segment(12_001, 1000, false);
        assert!(o.trimmed && !o.out_of_order);
    }
}
