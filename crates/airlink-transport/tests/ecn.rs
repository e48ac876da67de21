//! ECN end to end between two endpoints (RFC 3168 §6.1): the handshake, ECT on new data only,
//! the echo of a CE mark until CWR, and one window reduction per round trip.
//!
//! The path is lossless and marks on demand: each round the server's data reaches the client
//! (some segments marked CE on the way), the client's ACKs reach the server 10 ms later.

use airlink_engine::Instant;
use airlink_transport::{Codepoint, Role, Segment, TcpConfig, TcpEndpoint, TcpEvent};

const MSS: u64 = 1460;

fn t(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

fn cfg(ecn: bool) -> TcpConfig {
    TcpConfig {
        ecn,
        ack_every: 1,
        initial_window: Some(10),
        ..TcpConfig::default()
    }
}

fn drain(ep: &mut TcpEndpoint, now: Instant) -> Vec<Segment> {
    std::iter::from_fn(|| ep.poll_transmit(now)).collect()
}

struct Pair {
    client: TcpEndpoint,
    server: TcpEndpoint,
    now_ms: u64,
    syn: Segment,
    syn_ack: Segment,
    /// The server's data not yet delivered.
    in_flight: Vec<Segment>,
}

impl Pair {
    /// Connects, then the server's application writes plenty.
    fn new(client_ecn: bool, server_ecn: bool) -> Pair {
        let mut client = TcpEndpoint::new(cfg(client_ecn), Role::Client);
        let mut server = TcpEndpoint::new(cfg(server_ecn), Role::Server);
        client.connect(t(0));
        let syn = drain(&mut client, t(0))[0];
        server.handle_segment(t(10), &syn);
        let syn_ack = drain(&mut server, t(10))[0];
        client.handle_segment(t(20), &syn_ack);
        for a in drain(&mut client, t(20)) {
            server.handle_segment(t(30), &a);
        }
        server.send(t(30), 10_000 * MSS);
        let in_flight = drain(&mut server, t(30));
        Pair {
            client,
            server,
            now_ms: 30,
            syn,
            syn_ack,
            in_flight,
        }
    }

    /// One round trip: the data in flight reaches the client, segment i marked CE where
    /// `ce(i)` (if it is ECN-capable, as an AQM would) and lost where `lost(i)`; the ACKs reach
    /// the server. Returns (the data as delivered, the ACKs); the server's answer is in flight.
    fn round(
        &mut self,
        ce: impl Fn(usize) -> bool,
        lost: impl Fn(usize) -> bool,
    ) -> (Vec<Segment>, Vec<Segment>) {
        let (at_client, at_server) = (t(self.now_ms + 10), t(self.now_ms + 20));
        self.now_ms += 20;
        let mut delivered = Vec::new();
        let mut acks = Vec::new();
        for (i, mut seg) in std::mem::take(&mut self.in_flight).into_iter().enumerate() {
            if lost(i) {
                continue;
            }
            if ce(i) && seg.ip_ecn.is_ect() {
                seg.ip_ecn = Codepoint::Ce;
            }
            self.client.handle_segment(at_client, &seg);
            delivered.push(seg);
            acks.extend(drain(&mut self.client, at_client));
        }
        for a in &acks {
            self.server.handle_segment(at_server, a);
            self.in_flight.extend(drain(&mut self.server, at_server));
        }
        (delivered, acks)
    }

    fn reductions(&self) -> u64 {
        self.server.stats().ecn_reductions
    }
}

fn none(_: usize) -> bool {
    false
}

#[test]
fn ecn_is_used_only_when_both_ends_ask() {
    for (c, s) in [(true, true), (true, false), (false, true), (false, false)] {
        let mut p = Pair::new(c, s);
        assert_eq!(
            (p.syn.ece, p.syn.cwr),
            (c, c),
            "ECN-setup SYN iff the client asks"
        );
        assert_eq!(p.syn.ip_ecn, Codepoint::NotEct, "a SYN is never ECT");
        assert_eq!(
            (p.syn_ack.ece, p.syn_ack.cwr),
            (c && s, false),
            "ECN-setup SYN-ACK iff both ask"
        );
        assert_eq!(p.client.ecn_enabled(), c && s);
        assert_eq!(p.server.ecn_enabled(), c && s);
        let expect = if c && s {
            Codepoint::Ect0
        } else {
            Codepoint::NotEct
        };
        assert_eq!(p.in_flight.len(), 10);
        assert!(p.in_flight.iter().all(|d| d.len > 0 && d.ip_ecn == expect));
        let (_, acks) = p.round(|_| true, none);
        assert!(
            acks.iter()
                .all(|a| a.len == 0 && a.ip_ecn == Codepoint::NotEct),
            "pure ACKs are never ECT"
        );
        assert_eq!(p.client.stats().ce_received, if c && s { 10 } else { 0 });
        assert_eq!(p.reductions(), if c && s { 1 } else { 0 });
    }
}

#[test]
fn a_retransmitted_syn_gives_up_ecn() {
    let mut client = TcpEndpoint::new(cfg(true), Role::Client);
    let mut server = TcpEndpoint::new(cfg(true), Role::Server);
    client.connect(t(0));
    let lost = drain(&mut client, t(0));
    assert!(lost[0].ece && lost[0].cwr);
    let rto = client.poll_timeout().unwrap();
    client.handle_timeout(rto);
    let again = drain(&mut client, rto)[0];
    assert!(
        !again.ece && !again.cwr,
        "ECN fallback on the retransmitted SYN"
    );
    server.handle_segment(rto, &again);
    let syn_ack = drain(&mut server, rto)[0];
    client.handle_segment(rto, &syn_ack);
    assert!(!client.ecn_enabled() && !server.ecn_enabled());
}

#[test]
fn the_receiver_echoes_a_mark_until_cwr() {
    let mut p = Pair::new(true, true);
    let cwnd_before = p.server.cwnd();
    // One CE mark, on the first segment: every ACK of the round echoes it.
    let (_, acks) = p.round(|i| i == 0, none);
    assert_eq!(acks.len(), 10);
    assert!(acks.iter().all(|a| a.ece), "ECE until CWR arrives");
    assert_eq!(p.client.stats().ce_received, 1);
    // The sender reduced once (Reno: half the flight after the first ACK, 9 segments) and
    // its first new segment carries CWR, the others not.
    assert_eq!(p.reductions(), 1);
    assert_eq!(p.server.ssthresh(), 9 * MSS / 2);
    assert!(p.server.cwnd() < cwnd_before + 10 * MSS);
    let congestion: Vec<_> = std::iter::from_fn(|| p.server.poll_event())
        .filter(|e| matches!(e, TcpEvent::Congestion { .. }))
        .collect();
    assert_eq!(congestion.len(), 1);
    assert!(p.in_flight[0].cwr && p.in_flight[1..].iter().all(|d| !d.cwr));
    assert_eq!(p.server.stats().retransmitted_segments, 0);
    // CWR reached the client: no more echo.
    let (_, acks) = p.round(none, none);
    assert!(!acks.is_empty() && acks.iter().all(|a| !a.ece));
    assert_eq!(p.reductions(), 1);
}

#[test]
fn a_burst_of_marks_reduces_once_per_round_trip() {
    let mut p = Pair::new(true, true);
    let (_, acks) = p.round(|_| true, none);
    assert!(acks.iter().all(|a| a.ece));
    assert_eq!(p.client.stats().ce_received, 10);
    assert_eq!(p.reductions(), 1, "ten marks in one window are one signal");
    let ssthresh = p.server.ssthresh();
    assert_eq!(
        p.server.cwnd(),
        ssthresh,
        "cwnd = ssthresh, nothing grew since"
    );
    // A clean round: the reduction's round ends, nothing more.
    p.round(none, none);
    assert_eq!(p.reductions(), 1);
    // Marks in a later round: one more reduction.
    p.round(|_| true, none);
    assert_eq!(p.reductions(), 2);
    assert!(p.server.ssthresh() < ssthresh);
}

#[test]
fn no_echo_no_reduction() {
    let mut p = Pair::new(true, true);
    let cwnd = p.server.cwnd();
    for _ in 0..4 {
        let (data, acks) = p.round(none, none);
        assert!(data.iter().all(|d| d.ip_ecn == Codepoint::Ect0 && !d.cwr));
        assert!(acks.iter().all(|a| !a.ece));
    }
    assert_eq!(p.reductions(), 0);
    assert_eq!(p.server.ssthresh(), u64::MAX);
    assert!(p.server.cwnd() > cwnd, "slow start went on");
}

#[test]
fn retransmissions_are_not_ect_and_a_loss_queues_cwr() {
    let mut p = Pair::new(true, true);
    // The first segment is lost: SACKs trigger a fast retransmission.
    p.round(none, |i| i == 0);
    let at = p.in_flight.iter().position(|d| d.seq == 1).unwrap();
    let rexmit = p.in_flight[at];
    assert_eq!(rexmit.ip_ecn, Codepoint::NotEct);
    assert!(!rexmit.cwr);
    assert_eq!(p.server.stats().fast_recoveries, 1);
    // New data sent before recovery (SACKed segments leave the pipe) has no CWR; the first
    // sent after the reduction has.
    assert!(p.in_flight[..at].iter().all(|d| !d.cwr));
    let after = &p.in_flight[at + 1..];
    assert!(!after.is_empty());
    assert!(after[0].cwr, "the loss reduction is announced too");
    assert!(after[1..].iter().all(|d| !d.cwr));
    assert!(p
        .in_flight
        .iter()
        .all(|d| d.seq == 1 || d.ip_ecn == Codepoint::Ect0));
    assert_eq!(p.reductions(), 0);
}
