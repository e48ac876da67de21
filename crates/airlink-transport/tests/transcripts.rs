//! Transcript tests: "at t = N deliver this segment, expect exactly these out".
//!
//! Segments are 1460 B; data segment i (from 0) covers [1 + 1460·i, 1 + 1460·(i+1)).

use airlink_engine::{Duration, Instant};
use airlink_transport::{
    CongestionKind, Flags, Recovery, Role, SackBlocks, Segment, TcpConfig, TcpEndpoint, TcpEvent,
};

const MSS: u64 = 1460;
const WND: u32 = 65_535;

fn t(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

/// Start of data segment i.
fn s(i: u64) -> u64 {
    1 + MSS * i
}

fn out(ep: &mut TcpEndpoint, now: Instant) -> Vec<Segment> {
    std::iter::from_fn(|| ep.poll_transmit(now)).collect()
}

/// (seq, len) of each segment, with FIN/SYN flags folded in as a marker.
fn data(v: &[Segment]) -> Vec<(u64, u32)> {
    v.iter().map(|x| (x.seq, x.len)).collect()
}

fn events(ep: &mut TcpEndpoint) -> Vec<TcpEvent> {
    std::iter::from_fn(|| ep.poll_event()).collect()
}

/// An ACK from the peer (whose own sequence number stays at 1).
fn ack(a: u64, sack: &[(u64, u64)]) -> Segment {
    Segment {
        seq: 1,
        ack: a,
        flags: Flags::ACK,
        wnd: WND,
        sack: SackBlocks::from_slice(sack),
        ..Segment::default()
    }
}

/// Data from the peer (a server sending to our client), ACKing our SYN.
fn seg_data(i: u64) -> Segment {
    Segment {
        seq: s(i),
        ack: 1,
        len: MSS as u32,
        flags: Flags::ACK,
        wnd: WND,
        ..Segment::default()
    }
}

fn syn(sack: bool) -> Segment {
    Segment {
        seq: 0,
        flags: Flags::SYN,
        wnd: WND,
        mss_option: Some(1460),
        sack_permitted: sack,
        ..Segment::default()
    }
}

/// A server with `bytes` to send, past the handshake at t = 100 ms (RTT sample 100 ms), and
/// what it sent then.
fn server(cfg: TcpConfig, sack: bool, bytes: u64) -> (TcpEndpoint, Vec<Segment>) {
    let mut ep = TcpEndpoint::new(cfg, Role::Server);
    ep.send(t(0), bytes);
    ep.handle_segment(t(0), &syn(sack));
    let synack = out(&mut ep, t(0));
    assert_eq!(synack.len(), 1);
    ep.handle_segment(t(100), &ack(1, &[]));
    let sent = out(&mut ep, t(100));
    assert_eq!(
        events(&mut ep),
        vec![
            TcpEvent::Connected,
            TcpEvent::RttSample {
                rtt: Duration::from_millis(100)
            }
        ]
    );
    (ep, sent)
}

/// A client past the handshake at t = 100 ms.
fn client(cfg: TcpConfig, sack: bool) -> TcpEndpoint {
    let mut ep = TcpEndpoint::new(cfg, Role::Client);
    ep.connect(t(0));
    out(&mut ep, t(0));
    let synack = Segment {
        flags: Flags::SYN_ACK,
        ack: 1,
        ..syn(sack)
    };
    ep.handle_segment(t(100), &synack);
    let o = out(&mut ep, t(100));
    assert_eq!(data(&o), vec![(1, 0)]);
    events(&mut ep);
    ep
}

#[test]
fn handshake() {
    let mut c = TcpEndpoint::new(TcpConfig::default(), Role::Client);
    let mut sv = TcpEndpoint::new(TcpConfig::default(), Role::Server);
    assert!(out(&mut c, t(0)).is_empty(), "nothing before connect");
    c.connect(t(0));
    let o = out(&mut c, t(0));
    let expect_syn = Segment {
        seq: 0,
        flags: Flags::SYN,
        wnd: 65_536,
        mss_option: Some(1460),
        sack_permitted: true,
        ack: 0,
        ..Segment::default()
    };
    assert_eq!(o, vec![expect_syn]);
    assert_eq!(o[0].header_len(), 48);
    assert_eq!(
        c.poll_timeout(),
        Some(t(1000)),
        "RTO before any sample: rto_init"
    );

    sv.handle_segment(t(50), &o[0]);
    let o = out(&mut sv, t(50));
    let expect_synack = Segment {
        flags: Flags::SYN_ACK,
        ack: 1,
        ..expect_syn
    };
    assert_eq!(o, vec![expect_synack]);

    c.handle_segment(t(100), &o[0]);
    let o = out(&mut c, t(100));
    assert_eq!(
        o,
        vec![Segment {
            seq: 1,
            ack: 1,
            flags: Flags::ACK,
            wnd: 65_536,
            ..Segment::default()
        }]
    );
    assert_eq!(
        events(&mut c),
        vec![
            TcpEvent::Connected,
            TcpEvent::RttSample {
                rtt: Duration::from_millis(100)
            }
        ]
    );
    assert!(c.sack_enabled());
    assert_eq!(c.poll_timeout(), None);

    sv.handle_segment(t(150), &o[0]);
    assert!(out(&mut sv, t(150)).is_empty());
    assert_eq!(
        events(&mut sv),
        vec![
            TcpEvent::Connected,
            TcpEvent::RttSample {
                rtt: Duration::from_millis(100)
            }
        ]
    );
    assert_eq!(sv.srtt(), Some(Duration::from_millis(100)));
    assert_eq!(sv.rto(), Duration::from_millis(300));
}

#[test]
fn lost_syn_ack_is_resent_on_duplicate_syn_and_karn_skips_the_sample() {
    let mut sv = TcpEndpoint::new(TcpConfig::default(), Role::Server);
    sv.handle_segment(t(0), &syn(true));
    assert_eq!(out(&mut sv, t(0)).len(), 1);
    // The SYN-ACK is lost; the client's SYN times out and comes again.
    sv.handle_segment(t(1000), &syn(true));
    let o = out(&mut sv, t(1000));
    assert_eq!((o.len(), o[0].flags), (1, Flags::SYN_ACK));
    sv.handle_segment(t(1100), &ack(1, &[]));
    assert_eq!(
        events(&mut sv),
        vec![TcpEvent::Connected],
        "no RTT sample from a retransmitted SYN-ACK"
    );
    assert_eq!(sv.rto(), Duration::from_secs(3), "RFC 6298 (5.7)");
    assert_eq!(sv.stats().retransmitted_segments, 1);
}

#[test]
fn slow_start_growth() {
    let (mut sv, sent) = server(TcpConfig::default(), false, 100 * MSS);
    assert_eq!(
        data(&sent),
        vec![(s(0), 1460), (s(1), 1460), (s(2), 1460)],
        "IW = 3 segments for SMSS 1460"
    );
    assert_eq!(sv.cwnd(), 3 * MSS);
    // A delayed ACK covering two segments: cwnd += 1 SMSS; 1 in flight, room for 3.
    sv.handle_segment(t(200), &ack(s(2), &[]));
    assert_eq!(sv.cwnd(), 4 * MSS);
    assert_eq!(
        data(&out(&mut sv, t(200))),
        vec![(s(3), 1460), (s(4), 1460), (s(5), 1460)]
    );
    // ACK of one segment: cwnd 5, in flight 3 → 2 more.
    sv.handle_segment(t(201), &ack(s(3), &[]));
    assert_eq!(sv.cwnd(), 5 * MSS);
    assert_eq!(
        data(&out(&mut sv, t(201))),
        vec![(s(6), 1460), (s(7), 1460)]
    );
    assert_eq!(sv.bytes_in_flight(), 5 * MSS);
    // RTO timer restarted by the ACK of new data: 201 ms + RTO (100 ms + 4·40.6 ms).
    let rto = sv.rto();
    assert_eq!(sv.poll_timeout(), Some(t(201) + rto));
}

#[test]
fn delayed_ack_timing() {
    let mut c = client(TcpConfig::default(), true);
    // First segment: no ACK yet, delayed-ACK timer at +200 ms.
    c.handle_segment(t(300), &seg_data(0));
    assert!(out(&mut c, t(300)).is_empty());
    assert_eq!(c.poll_timeout(), Some(t(500)));
    // Second segment: ACK at once.
    c.handle_segment(t(310), &seg_data(1));
    assert_eq!(data(&out(&mut c, t(310))), vec![(1, 0)]);
    assert_eq!(c.poll_timeout(), None);
    // A lone segment is ACKed when the timer fires, not before.
    c.handle_segment(t(320), &seg_data(2));
    assert!(out(&mut c, t(320)).is_empty());
    assert_eq!(c.poll_timeout(), Some(t(520)));
    c.handle_timeout(t(519));
    assert!(out(&mut c, t(519)).is_empty(), "not due yet");
    c.handle_timeout(t(520));
    let o = out(&mut c, t(520));
    assert_eq!((o.len(), o[0].ack), (1, s(3)));
    // Out of order: immediate ACK with SACK; filling the hole: immediate ACK.
    c.handle_segment(t(600), &seg_data(4));
    let o = out(&mut c, t(600));
    assert_eq!((o.len(), o[0].ack), (1, s(3)));
    assert_eq!(o[0].sack.as_slice(), &[(s(4), s(5))]);
    c.handle_segment(t(601), &seg_data(6));
    let o = out(&mut c, t(601));
    assert_eq!(
        o[0].sack.as_slice(),
        &[(s(6), s(7)), (s(4), s(5))],
        "most recent block first"
    );
    c.handle_segment(t(602), &seg_data(3));
    let o = out(&mut c, t(602));
    assert_eq!((o.len(), o[0].ack), (1, s(5)));
    assert_eq!(o[0].sack.as_slice(), &[(s(6), s(7))]);
    c.handle_segment(t(603), &seg_data(5));
    let o = out(&mut c, t(603));
    assert_eq!((o[0].ack, o[0].sack.len()), (s(7), 0));
    assert_eq!(c.stats().bytes_delivered, 7 * MSS);
    assert_eq!(events(&mut c), vec![TcpEvent::Delivered { bytes: 7 * MSS }]);
}

#[test]
fn delack_timer_is_rounded_up_to_the_tick() {
    let mut c = client(
        TcpConfig {
            tick: Duration::from_millis(10),
            ..TcpConfig::default()
        },
        false,
    );
    c.handle_segment(t(303), &seg_data(0));
    assert_eq!(c.poll_timeout(), Some(t(510)));
}

/// NewReno without SACK, IW 10: 3 dup ACKs, inflation, a partial ACK, the full ACK.
#[test]
fn newreno_fast_retransmit_partial_and_full_ack() {
    let cfg = TcpConfig {
        initial_window: Some(10),
        sack: false,
        ..TcpConfig::default()
    };
    let (mut sv, sent) = server(cfg, false, 100 * MSS);
    assert_eq!(sent.len(), 10);
    // Segments 0 and 2 are lost; 1, 3.. arrive and produce duplicate ACKs.
    sv.handle_segment(t(200), &ack(1, &[]));
    sv.handle_segment(t(201), &ack(1, &[]));
    assert!(out(&mut sv, t(201)).is_empty(), "no limited transmit");
    sv.handle_segment(t(202), &ack(1, &[]));
    assert_eq!(
        data(&out(&mut sv, t(202))),
        vec![(s(0), 1460)],
        "fast retransmit on the 3rd dup ACK"
    );
    assert_eq!(sv.ssthresh(), 5 * MSS, "max(FlightSize/2, 2 SMSS)");
    assert_eq!(sv.cwnd(), 5 * MSS);
    assert_eq!(
        events(&mut sv).last(),
        Some(&TcpEvent::Congestion {
            kind: CongestionKind::FastRetransmit
        })
    );
    // cwnd = ssthresh + 3 SMSS = 8 SMSS < FlightSize 10: each dup ACK adds one SMSS.
    sv.handle_segment(t(203), &ack(1, &[]));
    assert!(out(&mut sv, t(203)).is_empty(), "cwnd 9 SMSS, flight 10");
    sv.handle_segment(t(204), &ack(1, &[]));
    assert!(out(&mut sv, t(204)).is_empty(), "cwnd 10 SMSS, flight 10");
    sv.handle_segment(t(205), &ack(1, &[]));
    assert_eq!(
        data(&out(&mut sv, t(205))),
        vec![(s(10), 1460)],
        "cwnd 11 SMSS, flight 10"
    );
    sv.handle_segment(t(206), &ack(1, &[]));
    assert_eq!(data(&out(&mut sv, t(206))), vec![(s(11), 1460)]);
    // Partial ACK (segment 0 arrived, 2 still missing): segment 2 is retransmitted at once;
    // cwnd deflates by the 2 SMSS acknowledged and gains 1: 12 − 1 = 11 SMSS against a
    // flight of 10 SMSS, so one new segment follows.
    let rto_before = sv.poll_timeout();
    sv.handle_segment(t(300), &ack(s(2), &[]));
    assert_eq!(
        data(&out(&mut sv, t(300))),
        vec![(s(2), 1460), (s(12), 1460)]
    );
    assert_ne!(
        sv.poll_timeout(),
        rto_before,
        "the first partial ACK restarts the timer"
    );
    // A second partial ACK retransmits the next segment but does not restart the timer
    // (RFC 6582 "impatient" variant).
    let rto_armed = sv.poll_timeout();
    sv.handle_segment(t(310), &ack(s(3), &[]));
    assert_eq!(
        data(&out(&mut sv, t(310))),
        vec![(s(3), 1460), (s(13), 1460)]
    );
    assert_eq!(sv.poll_timeout(), rto_armed);
    assert_eq!(sv.stats().retransmitted_segments, 3);
    // Full ACK (≥ recover = segment 10): cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS)
    // = min(5, 2 + 1) SMSS (RFC 6582 option 1).
    sv.handle_segment(t(400), &ack(s(12), &[]));
    assert_eq!(sv.cwnd(), 3 * MSS);
    assert_eq!(data(&out(&mut sv, t(400))), vec![(s(14), 1460)]);
    assert_eq!(sv.stats().fast_recoveries, 1);
}

#[test]
fn reno_leaves_recovery_on_the_first_new_ack() {
    let cfg = TcpConfig {
        initial_window: Some(10),
        sack: false,
        recovery: Recovery::Reno,
        ..TcpConfig::default()
    };
    let (mut sv, _) = server(cfg, false, 100 * MSS);
    for i in 0..3 {
        sv.handle_segment(t(200 + i), &ack(1, &[]));
    }
    assert_eq!(data(&out(&mut sv, t(202))), vec![(s(0), 1460)]);
    // Partial ACK: Reno deflates to ssthresh and does not retransmit.
    sv.handle_segment(t(300), &ack(s(2), &[]));
    let o = out(&mut sv, t(300));
    assert!(
        o.iter().all(|x| x.seq >= s(10)),
        "no retransmission: {:?}",
        data(&o)
    );
    assert_eq!(sv.cwnd(), 5 * MSS);
    // Three more dup ACKs start a second recovery in the same window (no `recover` guard).
    for i in 0..3 {
        sv.handle_segment(t(301 + i), &ack(s(2), &[]));
    }
    assert_eq!(data(&out(&mut sv, t(303)))[0], (s(2), 1460));
    assert_eq!(sv.stats().fast_recoveries, 2);
}

/// RFC 6675: of 10 segments, 0 and 3 are lost; the others are SACKed one by one.
#[test]
fn sack_recovery_retransmits_holes_and_sends_new_data_per_nextseg() {
    let cfg = TcpConfig {
        initial_window: Some(10),
        ..TcpConfig::default()
    };
    let (mut sv, sent) = server(cfg, true, 100 * MSS);
    assert!(sv.sack_enabled());
    assert_eq!(sent.len(), 10);
    // The first two dup ACKs: pipe excludes SACKed data, so each lets one new segment out
    // (the effect of limited transmit, RFC 3042).
    sv.handle_segment(t(200), &ack(1, &[(s(1), s(2))]));
    assert_eq!(data(&out(&mut sv, t(200))), vec![(s(10), 1460)]);
    sv.handle_segment(t(201), &ack(1, &[(s(1), s(3))]));
    assert_eq!(data(&out(&mut sv, t(201))), vec![(s(11), 1460)]);
    // Third dup ACK: recovery. ssthresh = cwnd = FlightSize/2 = 6 SMSS; HighACK+1 resent.
    sv.handle_segment(t(202), &ack(1, &[(s(4), s(5)), (s(1), s(3))]));
    assert_eq!(data(&out(&mut sv, t(202))), vec![(s(0), 1460)]);
    assert_eq!((sv.cwnd(), sv.ssthresh()), (6 * MSS, 6 * MSS));
    // pipe = 12 outstanding − 3 SACKed − 1 lost (seg 0) + 1 retransmitted.
    assert_eq!(sv.bytes_in_flight(), 9 * MSS);
    // Seg 5 SACKed: seg 3 has one range of 2 SMSS above it, not lost. pipe 8.
    sv.handle_segment(t(203), &ack(1, &[(s(4), s(6)), (s(1), s(3))]));
    assert!(out(&mut sv, t(203)).is_empty());
    assert_eq!(sv.bytes_in_flight(), 8 * MSS);
    // Seg 6: 3 SMSS above seg 3, now lost: pipe = 12 − 5 − 2 + 1 = 6 = cwnd.
    sv.handle_segment(t(204), &ack(1, &[(s(4), s(7)), (s(1), s(3))]));
    assert!(out(&mut sv, t(204)).is_empty());
    assert_eq!(sv.bytes_in_flight(), 6 * MSS);
    // Seg 7: pipe 5 → NextSeg rule 1: the lost seg 3.
    sv.handle_segment(t(205), &ack(1, &[(s(4), s(8)), (s(1), s(3))]));
    assert_eq!(data(&out(&mut sv, t(205))), vec![(s(3), 1460)]);
    assert_eq!(sv.scoreboard().high_rxt(), s(4));
    // Seg 8: pipe 5 → no more lost data: rule 2, new data.
    sv.handle_segment(t(206), &ack(1, &[(s(4), s(9)), (s(1), s(3))]));
    assert_eq!(data(&out(&mut sv, t(206))), vec![(s(12), 1460)]);
    sv.handle_segment(t(207), &ack(1, &[(s(4), s(10)), (s(1), s(3))]));
    assert_eq!(data(&out(&mut sv, t(207))), vec![(s(13), 1460)]);
    // Retransmitted seg 0 arrives: partial ACK to seg 3. pipe = 11 − 6 − 1 + 1 = 5: one
    // segment, and rule 1 has nothing below HighRxt's successor: new data.
    sv.handle_segment(t(300), &ack(s(3), &[(s(4), s(10))]));
    assert_eq!(data(&out(&mut sv, t(300))), vec![(s(14), 1460)]);
    assert_eq!(sv.bytes_in_flight(), 6 * MSS);
    // Everything up to RecoveryPoint (seg 12) acknowledged: recovery ends, cwnd stays 6.
    sv.handle_segment(t(305), &ack(s(12), &[]));
    assert_eq!(sv.cwnd(), 6 * MSS);
    assert_eq!(sv.stats().fast_recoveries, 1);
    assert_eq!(sv.stats().retransmitted_segments, 2);
    assert_eq!(sv.stats().timeouts, 0);
}

#[test]
fn rto_backoff_doubles_and_karn_keeps_it() {
    let (mut sv, sent) = server(TcpConfig::default(), false, 100 * MSS);
    assert_eq!(sent.len(), 3);
    assert_eq!(sv.rto(), Duration::from_millis(300), "SRTT 100 + 4 × 50");
    assert_eq!(sv.poll_timeout(), Some(t(400)));
    // First expiry: retransmit segment 0 only (cwnd = 1 SMSS), RTO doubles.
    sv.handle_timeout(t(400));
    assert_eq!(data(&out(&mut sv, t(400))), vec![(s(0), 1460)]);
    assert_eq!(
        (sv.cwnd(), sv.ssthresh()),
        (MSS, 2 * MSS),
        "ssthresh = max(FlightSize/2, 2 SMSS)"
    );
    assert_eq!(sv.rto(), Duration::from_millis(600));
    assert_eq!(sv.poll_timeout(), Some(t(1000)));
    // Second expiry: doubles again; ssthresh is held.
    sv.handle_timeout(t(1000));
    assert_eq!(data(&out(&mut sv, t(1000))), vec![(s(0), 1460)]);
    assert_eq!(sv.rto(), Duration::from_millis(1200));
    assert_eq!(sv.poll_timeout(), Some(t(2200)));
    assert_eq!(sv.ssthresh(), 2 * MSS);
    events(&mut sv);
    // The ACK of the retransmitted segment: no RTT sample (Karn), the backed-off RTO stays;
    // slow start: cwnd 2, go-back retransmits segments 1 and 2.
    sv.handle_segment(t(1100), &ack(s(1), &[]));
    assert!(!events(&mut sv)
        .iter()
        .any(|e| matches!(e, TcpEvent::RttSample { .. })));
    assert_eq!(sv.rto(), Duration::from_millis(1200));
    assert_eq!(sv.cwnd(), 2 * MSS);
    assert_eq!(
        data(&out(&mut sv, t(1100))),
        vec![(s(1), 1460), (s(2), 1460)]
    );
    assert_eq!(sv.poll_timeout(), Some(t(2300)));
    assert_eq!(sv.stats().retransmitted_segments, 4);
    // Both go-back segments acked (retransmitted: still no sample); new data goes out.
    sv.handle_segment(t(1200), &ack(s(3), &[]));
    assert_eq!(sv.rto(), Duration::from_millis(1200));
    let o = out(&mut sv, t(1200));
    assert_eq!(data(&o)[0], (s(3), 1460), "new data after the go-back");
    // The first ACK of never-retransmitted data gives a sample and clears the back-off.
    sv.handle_segment(t(1300), &ack(s(4), &[]));
    assert_eq!(
        events(&mut sv),
        vec![TcpEvent::RttSample {
            rtt: Duration::from_millis(100)
        }]
    );
    assert!(sv.rto() < Duration::from_millis(1200));
    assert_eq!(sv.stats().timeouts, 2);
}

#[test]
fn fin_is_piggybacked_and_close_completes() {
    let cfg = TcpConfig::default();
    let mut sv = TcpEndpoint::new(cfg.clone(), Role::Server);
    sv.send(t(0), 2000);
    sv.close(t(0));
    sv.handle_segment(t(0), &syn(false));
    out(&mut sv, t(0));
    sv.handle_segment(t(100), &ack(1, &[]));
    let o = out(&mut sv, t(100));
    assert_eq!(data(&o), vec![(1, 1460), (1461, 540)]);
    assert!(
        o[1].flags.fin && !o[0].flags.fin,
        "FIN rides on the last data segment"
    );
    sv.handle_segment(t(200), &ack(2002, &[]));
    // The client's FIN.
    let fin = Segment {
        seq: 1,
        ack: 2002,
        flags: Flags::FIN_ACK,
        wnd: WND,
        ..Segment::default()
    };
    sv.handle_segment(t(210), &fin);
    let o = out(&mut sv, t(210));
    assert_eq!((o.len(), o[0].ack, o[0].flags), (1, 2, Flags::ACK));
    let ev = events(&mut sv);
    assert!(
        ev.contains(&TcpEvent::PeerClosed) && ev.contains(&TcpEvent::Closed),
        "{ev:?}"
    );
    assert_eq!(sv.poll_timeout(), None);
    // A retransmitted FIN is ACKed again (the lost-last-ACK case).
    sv.handle_segment(t(900), &fin);
    assert_eq!(out(&mut sv, t(900)).len(), 1);
}

#[test]
fn garbage_input_never_panics() {
    let (mut sv, _) = server(TcpConfig::default(), true, 10 * MSS);
    let weird = [
        Segment {
            seq: u64::MAX,
            ack: u64::MAX,
            len: u32::MAX,
            flags: Flags {
                syn: true,
                ack: true,
                fin: true,
                rst: false,
            },
            ..Segment::default()
        },
        Segment {
            seq: 5,
            ack: 1 << 40,
            flags: Flags::ACK,
            ..Segment::default()
        },
        ack(2, &[(0, u64::MAX), (10, 5), (s(1), s(1))]),
        Segment {
            seq: 1,
            ack: 1,
            len: u32::MAX,
            flags: Flags::FIN_ACK,
            ..Segment::default()
        },
        Segment {
            seq: 0,
            ack: 0,
            ..Segment::default()
        },
    ];
    for (i, w) in weird.iter().enumerate() {
        sv.handle_segment(t(200 + i as u64), w);
        out(&mut sv, t(200 + i as u64));
    }
    sv.handle_segment(
        t(300),
        &Segment {
            flags: Flags::RST,
            ..Segment::default()
        },
    );
    assert_eq!(events(&mut sv).last(), Some(&TcpEvent::Reset));
    assert!(out(&mut sv, t(300)).is_empty());
}

/// A retransmission stops where SACKed data begins (a peer SACKing part of a segment).
#[test]
fn retransmission_stops_at_sacked_data() {
    let (mut sv, sent) = server(TcpConfig::default(), true, 10 * MSS);
    assert_eq!(sent.len(), 3);
    // 2·1460 + 760 bytes SACKed above byte 1: more than 2 SMSS, so IsLost(HighACK + 1).
    sv.handle_segment(t(200), &ack(1, &[(701, s(3))]));
    let o = out(&mut sv, t(200));
    assert_eq!(data(&o)[0], (1, 700));
    assert_eq!(sv.stats().fast_recoveries, 1);
}
