//! Explicit Congestion Notification in airlink's TCP (RFC 3168): the endpoint's ECN state and
//! its rules, called from the endpoint at a few hooks.
//!
//! # Rules
//!
//! 1. **Negotiation** (RFC 3168 §6.1.1). A client with `TcpConfig::ecn` sends an ECN-setup SYN
//!    (ECE and CWR set). A server with `ecn` that receives an ECN-setup SYN which is itself not
//!    ECN-capable (a SYN is never ECT, §6.1.1) answers with an ECN-setup SYN-ACK (ECE set, CWR
//!    clear) and uses ECN. The client uses ECN iff the SYN-ACK is an ECN-setup SYN-ACK. A
//!    retransmitted SYN carries neither flag (ECN fallback: a path that drops ECN-setup SYNs
//!    still connects), so a handshake that needed one runs without ECN.
//! 2. **What is ECN-capable** (§6.1.2, §6.1.5, §6.1.6). Once negotiated, a segment carrying new
//!    data is sent ECT(0). Pure ACKs, SYNs, a bare FIN, window probes of old data and
//!    retransmissions are sent not-ECT.
//! 3. **Receiver** (§6.1.3). A data segment arriving CE makes every segment sent from then on
//!    carry ECE, until a data segment with CWR arrives; CWR is taken first, so a segment with
//!    both CWR and CE keeps the echo on. The first CE of an episode and a CWR on data ask for
//!    an ACK at once (quick-ACK for two segments on CE), so the sender learns soon.
//! 4. **Sender** (§6.1.2). An ACK with ECE (not a SYN-ACK) while the connection is in its open
//!    state (no fast recovery, no RTO recovery) and not already reducing makes the
//!    controller reduce as for a loss, without a retransmission ([`CongestionKind::Ecn`]:
//!    ssthresh by the controller's rule, cwnd = ssthresh), and no further reduction until an
//!    ACK passes the HighData of that moment: at most one per round trip. cwnd does not grow
//!    meanwhile. The next new data segment carries CWR. Entering fast recovery or RTO recovery
//!    also reduces the window, so it too queues a CWR (the receiver may stop echoing).
//!
//! # References and deviations
//!
//! RFC 3168 §5 (the IP field), §6.1 (TCP); Linux `net/ipv4/tcp_input.c` (`tcp_ecn_*`,
//! `tcp_enter_cwr`, the CWR state in `tcp_fastretrans_alert`), `tcp_output.c` (`tcp_ecn_send*`,
//! `tcp_ecn_clear_syn`), `tcp_minisocks.c`/`tcp_ipv4.c` (`tcp_ecn_create_request`).
//!
//! | topic | Linux | here |
//! |---|---|---|
//! | retransmissions | not-ECT (`tcp_ecn_send`: only segments at or above `snd_nxt` get ECT), as RFC 3168 §6.1.5 required before RFC 8311 | the same: not-ECT |
//! | window during the reduction | CWR state: PRR (`tcp_cwnd_reduction`) brings cwnd down to ssthresh over the round, cwnd = ssthresh when it ends | cwnd = ssthresh at once (the sender pauses instead of thinning out its sends); no growth until the round ends, as Linux |
//! | loss during the CWR round | `tcp_enter_recovery` keeps the ssthresh of the CWR reduction (one reduction per window) | fast recovery reduces again (the endpoint's loss rules do not look at the ECN round) |
//! | ECE while in fast recovery or RTO recovery | ignored (`tcp_try_to_open` runs only in Open/Disorder/CWR) | the same |
//! | not-ECT data after ECT was seen | quick-ACK mode ("probably a retransmit") | not modelled |
//! | CE on data outside the window or already received | not looked at | looked at (such data is a retransmission, not-ECT, so it never carries CE here) |
//! | SYN fallback | `tcp_ecn_fallback` = 1: a retransmitted SYN has no ECE/CWR | the same |
//! | `tcp_ecn` = 2 (server accepts, client does not ask) | Linux's default | one switch per endpoint (`TcpConfig::ecn`): on, it both asks and accepts |
//! | AccECN, ECT(1)/L4S, DCTCP's per-mark reaction | available by sysctl or module | not modelled |

use crate::congestion::CongestionKind;
use crate::endpoint::{Role, TcpStats};
use crate::segment::Segment;

/// The ECN field of the IP header that carries a segment (RFC 3168 §5).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Codepoint {
    /// 00: not ECN-capable.
    #[default]
    NotEct,
    /// 01: ECN-capable transport, ECT(1).
    Ect1,
    /// 10: ECN-capable transport, ECT(0).
    Ect0,
    /// 11: congestion experienced.
    Ce,
}

impl Codepoint {
    /// The two bits as in the IP header.
    pub fn bits(self) -> u8 {
        match self {
            Codepoint::NotEct => 0,
            Codepoint::Ect1 => 1,
            Codepoint::Ect0 => 2,
            Codepoint::Ce => 3,
        }
    }

    /// The codepoint of the low two bits of `b`.
    pub fn from_bits(b: u8) -> Codepoint {
        match b & 3 {
            0 => Codepoint::NotEct,
            1 => Codepoint::Ect1,
            2 => Codepoint::Ect0,
            _ => Codepoint::Ce,
        }
    }

    /// ECT(0), ECT(1) or CE: the sender declared the transport ECN-capable.
    pub fn is_ect(self) -> bool {
        self != Codepoint::NotEct
    }
}

/// What a data arrival asks of the receiver's ACK timing (rule 3).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct EcnArrival {
    /// Acknowledge the next this many data segments at once (0: no change).
    pub quickacks: u32,
    /// Acknowledge this segment at once.
    pub ack_now: bool,
}

/// One endpoint's ECN state (see the module's rules).
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct EcnState {
    /// `TcpConfig::ecn`: this endpoint asks for and accepts ECN.
    enabled: bool,
    /// Negotiated on the handshake (rule 1).
    ok: bool,
    /// Receiver: echo ECE on everything sent until a CWR arrives (Linux `TCP_ECN_DEMAND_CWR`).
    demand_cwr: bool,
    /// Sender: the next new data segment carries CWR (Linux `TCP_ECN_QUEUE_CWR`).
    queue_cwr: bool,
    /// Sender: reducing for ECE until SND.UNA passes this (Linux's CWR state and `high_seq`).
    cwr_until: Option<u64>,
}

impl EcnState {
    pub fn new(enabled: bool) -> Self {
        EcnState {
            enabled,
            ..Self::default()
        }
    }

    /// Whether ECN was negotiated.
    pub fn negotiated(&self) -> bool {
        self.ok
    }

    /// Rule 1: the flags of our SYN or SYN-ACK. `retransmission`: a SYN sent again.
    pub fn on_syn_sent(&self, role: Role, retransmission: bool, seg: &mut Segment) {
        match role {
            Role::Client => {
                let setup = self.enabled && !retransmission;
                seg.ece = setup;
                seg.cwr = setup;
            }
            Role::Server => seg.ece = self.ok,
        }
    }

    /// Rule 1: the peer's SYN (server) or SYN-ACK (client) arrived.
    pub fn on_syn_received(&mut self, role: Role, seg: &Segment) {
        self.ok = self.enabled
            && match role {
                Role::Server => seg.ece && seg.cwr && !seg.ip_ecn.is_ect(),
                Role::Client => seg.ece && !seg.cwr,
            };
    }

    /// Rules 2 and 3: every segment after the SYN carries ECE while the receiver demands CWR.
    pub fn stamp(&self, seg: &mut Segment) {
        seg.ece = self.ok && self.demand_cwr;
    }

    /// Rule 2 and 4: a segment of new data is ECT(0), and carries a queued CWR.
    pub fn on_new_data(&mut self, seg: &mut Segment) {
        if !self.ok || seg.len == 0 {
            return;
        }
        seg.ip_ecn = Codepoint::Ect0;
        if self.queue_cwr {
            self.queue_cwr = false;
            seg.cwr = true;
        }
    }

    /// Rule 3: a segment with payload arrived.
    pub fn on_data_arrival(&mut self, seg: &Segment, stats: &mut TcpStats) -> EcnArrival {
        let mut out = EcnArrival::default();
        if !self.ok || seg.len == 0 {
            return out;
        }
        if seg.cwr {
            self.demand_cwr = false;
            out.ack_now = true;
        }
        if seg.ip_ecn == Codepoint::Ce {
            stats.ce_received += 1;
            if !self.demand_cwr {
                self.demand_cwr = true;
                out.quickacks = 2;
            }
        }
        out
    }

    /// Rule 4: the sender's cwnd is not to grow on this ACK (a reduction is in progress).
    pub fn reducing(&self, snd_una: u64) -> bool {
        self.cwr_until.is_some_and(|h| snd_una <= h)
    }

    /// Rule 4: an ACK arrived (SND.UNA and HighData after it). Returns the congestion
    /// event to give the controller, if this ACK makes the sender reduce.
    pub fn on_ack(
        &mut self,
        seg: &Segment,
        recovering: bool,
        snd_una: u64,
        snd_max: u64,
        stats: &mut TcpStats,
    ) -> Option<CongestionKind> {
        if !self.ok || !seg.ece || seg.flags.syn || recovering || self.reducing(snd_una) {
            return None;
        }
        self.cwr_until = Some(snd_max);
        self.queue_cwr = true;
        stats.ecn_reductions += 1;
        Some(CongestionKind::Ecn)
    }

    /// Rule 4: the sender reduced its window for a loss (fast recovery, RTO).
    pub fn on_loss_reduction(&mut self) {
        if self.ok {
            self.queue_cwr = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::Flags;

    fn data(seq: u64, ip_ecn: Codepoint, cwr: bool) -> Segment {
        Segment {
            seq,
            len: 1000,
            flags: Flags::ACK,
            ip_ecn,
            cwr,
            ..Segment::default()
        }
    }

    fn negotiated() -> EcnState {
        EcnState {
            enabled: true,
            ok: true,
            ..EcnState::default()
        }
    }

    #[test]
    fn codepoint_bits_round_trip() {
        for b in 0..4 {
            assert_eq!(Codepoint::from_bits(b).bits(), b);
        }
        assert!(!Codepoint::NotEct.is_ect());
        assert!(Codepoint::Ect0.is_ect() && Codepoint::Ect1.is_ect() && Codepoint::Ce.is_ect());
    }

    #[test]
    fn server_refuses_an_ect_syn_and_a_half_setup_syn() {
        let syn = |ece, cwr, ip_ecn| Segment {
            flags: Flags::SYN,
            ece,
            cwr,
            ip_ecn,
            ..Segment::default()
        };
        let mut s = EcnState::new(true);
        s.on_syn_received(Role::Server, &syn(true, true, Codepoint::NotEct));
        assert!(s.negotiated());
        s.on_syn_received(Role::Server, &syn(true, true, Codepoint::Ect0));
        assert!(!s.negotiated(), "a SYN must not be ECT (RFC 3168 §6.1.1)");
        s.on_syn_received(Role::Server, &syn(true, false, Codepoint::NotEct));
        assert!(!s.negotiated(), "ECE without CWR is no ECN-setup SYN");
        let mut c = EcnState::new(true);
        c.on_syn_received(Role::Client, &syn(true, true, Codepoint::NotEct));
        assert!(
            !c.negotiated(),
            "ECE and CWR on a SYN-ACK is no ECN-setup SYN-ACK"
        );
    }

    #[test]
    fn receiver_echoes_from_ce_until_cwr() {
        let mut st = TcpStats::default();
        let mut r = negotiated();
        let mut ack = Segment::default();
        r.stamp(&mut ack);
        assert!(!ack.ece);
        let a = r.on_data_arrival(&data(1, Codepoint::Ce, false), &mut st);
        assert_eq!(a.quickacks, 2, "the first CE asks for quick ACKs");
        let a = r.on_data_arrival(&data(1001, Codepoint::Ce, false), &mut st);
        assert_eq!(a.quickacks, 0, "already echoing");
        for seq in [2001, 3001] {
            r.on_data_arrival(&data(seq, Codepoint::Ect0, false), &mut st);
            r.stamp(&mut ack);
            assert!(ack.ece, "ECE on every ACK until CWR");
        }
        let a = r.on_data_arrival(&data(4001, Codepoint::Ect0, true), &mut st);
        assert!(a.ack_now);
        r.stamp(&mut ack);
        assert!(!ack.ece, "CWR ends the echo");
        // CWR and CE on one segment: CWR first, so the echo starts again.
        r.on_data_arrival(&data(5001, Codepoint::Ce, true), &mut st);
        r.stamp(&mut ack);
        assert!(ack.ece);
        assert_eq!(st.ce_received, 3);
    }

    #[test]
    fn nothing_happens_without_negotiation() {
        let mut st = TcpStats::default();
        let mut e = EcnState::new(true);
        let mut seg = data(1, Codepoint::NotEct, false);
        e.on_new_data(&mut seg);
        assert_eq!(seg.ip_ecn, Codepoint::NotEct);
        e.on_data_arrival(&data(1, Codepoint::Ce, false), &mut st);
        let mut ack = Segment::default();
        e.stamp(&mut ack);
        assert!(!ack.ece);
        let ece = Segment {
            ece: true,
            ..Segment::default()
        };
        assert_eq!(e.on_ack(&ece, false, 1, 100, &mut st), None);
        assert_eq!((st.ce_received, st.ecn_reductions), (0, 0));
    }

    #[test]
    fn sender_reduces_once_per_round_and_sets_cwr_once() {
        let mut st = TcpStats::default();
        let mut s = negotiated();
        let ece = Segment {
            flags: Flags::ACK,
            ece: true,
            ..Segment::default()
        };
        let plain = Segment {
            flags: Flags::ACK,
            ..Segment::default()
        };
        assert_eq!(s.on_ack(&plain, false, 1001, 10_001, &mut st), None);
        assert_eq!(
            s.on_ack(&ece, false, 1001, 10_001, &mut st),
            Some(CongestionKind::Ecn)
        );
        // A burst of ECE within the round (up to and including HighData 10 001) is one signal.
        for una in [2001, 5001, 10_001] {
            assert!(s.reducing(una));
            assert_eq!(s.on_ack(&ece, false, una, 12_001, &mut st), None);
        }
        let mut first = data(10_001, Codepoint::NotEct, false);
        s.on_new_data(&mut first);
        assert!(first.cwr && first.ip_ecn == Codepoint::Ect0);
        let mut second = data(11_001, Codepoint::NotEct, false);
        s.on_new_data(&mut second);
        assert!(!second.cwr, "CWR on one segment only");
        // Past the round, ECE reduces again; not in recovery.
        assert!(!s.reducing(10_002));
        assert_eq!(s.on_ack(&ece, true, 10_002, 20_001, &mut st), None);
        assert_eq!(
            s.on_ack(&ece, false, 10_002, 20_001, &mut st),
            Some(CongestionKind::Ecn)
        );
        assert_eq!(st.ecn_reductions, 2);
    }

    #[test]
    fn pure_acks_and_bare_fins_are_not_ect() {
        let mut s = negotiated();
        let mut ack = Segment {
            flags: Flags::ACK,
            ..Segment::default()
        };
        s.on_new_data(&mut ack);
        assert_eq!(ack.ip_ecn, Codepoint::NotEct);
        s.on_loss_reduction();
        let mut fin = Segment {
            flags: Flags::FIN_ACK,
            ..Segment::default()
        };
        s.on_new_data(&mut fin);
        assert!(!fin.cwr && fin.ip_ecn == Codepoint::NotEct);
        let mut seg = data(1, Codepoint::NotEct, false);
        s.on_new_data(&mut seg);
        assert!(seg.cwr, "a loss reduction queues CWR too");
    }
}
