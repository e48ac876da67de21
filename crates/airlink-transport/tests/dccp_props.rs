//! Property tests: DCCP never retransmits data, CCID-3 respects 2·X_recv, Ack Vectors round
//! trip, network input never panics.

mod dgram_harness;

use airlink_engine::{Duration, Instant};
use airlink_transport::dccp::ackvec::{decode, encode, AckState, AckVectorBuffer};
use airlink_transport::dccp::{tfrc, Ccid, DccpApp, DccpConfig, DccpPacket, PacketType};
use airlink_transport::{DccpEndpoint, Role};
use dgram_harness::{DccpPair, PipeConfig};
use proptest::prelude::*;
use std::collections::HashSet;

fn pair(ccid: Ccid, up_drop: Vec<bool>, down_drop: Vec<bool>, loss: f64, seed: u64) -> DccpPair {
    let cfg = DccpConfig {
        ccid,
        app: DccpApp::Greedy { payload: 1000 },
        request_timeout: Duration::from_millis(300),
        ..Default::default()
    };
    let up = PipeConfig {
        rate_bps: 4_000_000,
        queue_packets: 20,
        loss,
        drop: up_drop,
        ..PipeConfig::delay(Duration::from_millis(15))
    };
    let down = PipeConfig {
        drop: down_drop,
        loss,
        ..PipeConfig::delay(Duration::from_millis(15))
    };
    let mut p = DccpPair::new(cfg, DccpConfig::default(), up, down, seed);
    p.connect();
    p
}

fn ccid_strategy() -> impl Strategy<Value = Ccid> {
    prop_oneof![Just(Ccid::TcpLike), Just(Ccid::Tfrc)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Each data sequence number leaves the sender at most once, and the receiver delivers
    /// only packets that were sent, each once. No data packet's header is longer than the
    /// bound the scenario's MTU check relies on.
    #[test]
    fn data_is_never_retransmitted(
        ccid in ccid_strategy(),
        up in prop::collection::vec(prop::bool::weighted(0.15), 0..400),
        down in prop::collection::vec(prop::bool::weighted(0.15), 0..200),
        loss in 0.0..0.05f64,
        seed in any::<u64>(),
    ) {
        let mut p = pair(ccid, up, down, loss, seed);
        p.run(Instant::from_millis(4000));
        let mut seqs = HashSet::new();
        let mut ids = HashSet::new();
        for (_, pk) in p.client_sent.iter().filter(|(_, pk)| pk.kind.carries_data()) {
            prop_assert!(seqs.insert(pk.seq), "seq {} sent twice", pk.seq);
            prop_assert!(ids.insert(pk.app.unwrap().id), "app id sent twice");
            prop_assert!(pk.header_len() <= DccpPacket::MAX_DATA_HEADER_LEN, "{:?}", pk);
        }
        let mut got = HashSet::new();
        for (_, ev) in &p.server_view.delivered {
            if let airlink_transport::DccpEvent::Delivered { seq, .. } = ev {
                prop_assert!(seqs.contains(seq) && got.insert(*seq));
            }
        }
        prop_assert_eq!(got.len() as u64, p.server.stats().data_packets_received);
    }

    /// After the first feedback, X ≤ max(2·X_recv, floor) at every instant, where the floor is
    /// s/t_mbi when p > 0 and the initial rate W_init/R in slow start (RFC 5348 §4.3).
    #[test]
    fn ccid3_rate_within_twice_x_recv(
        up in prop::collection::vec(prop::bool::weighted(0.1), 0..600),
        down in prop::collection::vec(prop::bool::weighted(0.3), 0..100),
        loss in 0.0..0.05f64,
        seed in any::<u64>(),
    ) {
        let mut p = pair(Ccid::Tfrc, up, down, loss, seed);
        let mut violation = None;
        let mut checked = 0u64;
        p.run_checked(Instant::from_millis(6000), |p| {
            let Some(tx) = p.client.ccid3_sender() else { return };
            if !tx.had_feedback() {
                return;
            }
            checked += 1;
            let floor = if tx.p() > 0.0 {
                tx.packet_size() / tfrc::T_MBI
            } else {
                tx.initial_rate()
            };
            let bound = (2.0 * tx.x_recv()).max(floor) * (1.0 + 1e-9);
            if tx.rate() > bound && violation.is_none() {
                violation = Some((p.now, tx.rate(), tx.x_recv(), tx.p()));
            }
        });
        prop_assert!(violation.is_none(), "{:?}", violation);
        prop_assert!(checked > 0 || p.client.ccid3_sender().is_none_or(|t| !t.had_feedback()));
    }

    /// Encoding then decoding an Ack Vector gives back the states (within the byte limit).
    #[test]
    fn ack_vector_round_trip(
        states in prop::collection::vec(
            prop_oneof![Just(AckState::Received), Just(AckState::NotReceived), Just(AckState::EcnMarked)],
            1..2000,
        ),
        max_bytes in 1usize..=253,
        extra in 0u64..1000,
    ) {
        let ack = states.len() as u64 - 1 + extra;
        let (bytes, covered) = encode(states.iter().copied(), max_bytes);
        prop_assert!(bytes.len() <= max_bytes);
        let runs = decode(ack, &bytes).unwrap();
        let mut back = Vec::new();
        let mut expect_high = ack;
        for r in &runs {
            prop_assert_eq!(r.high, expect_high);
            back.extend(std::iter::repeat_n(r.state, r.len as usize));
            expect_high = r.high.wrapping_sub(r.len);
        }
        prop_assert_eq!(back.len() as u64, covered);
        prop_assert_eq!(&back[..], &states[..back.len()]);
        if bytes.len() < max_bytes {
            prop_assert_eq!(back.len(), states.len(), "everything fits");
        }
    }

    /// The receiver buffer reports exactly the arrivals between its base and GSR.
    #[test]
    fn ack_vector_buffer_matches_arrivals(arrivals in prop::collection::vec(0u64..500, 1..300)) {
        let mut b = AckVectorBuffer::new(253);
        let mut seen = HashSet::new();
        for &s in &arrivals {
            b.record(s);
            seen.insert(s);
        }
        let (ack, v) = b.build(1_000_000).unwrap();
        prop_assert_eq!(ack, *seen.iter().max().unwrap());
        for r in decode(ack, &v).unwrap() {
            for s in r.low()..=r.high {
                let rec = r.state == AckState::Received;
                prop_assert_eq!(rec, seen.contains(&s), "seq {}", s);
            }
        }
    }

    /// Arbitrary packets never panic an endpoint; invalid ones are counted.
    #[test]
    fn garbage_never_panics(
        pkts in prop::collection::vec(
            (0usize..7, 0u64..50, prop::option::of(0u64..60), 0u32..2000,
             prop::option::of(prop::collection::vec(any::<u8>(), 0..20)), prop::option::of(0u8..6)),
            1..60,
        ),
        role_server in any::<bool>(),
    ) {
        let role = if role_server { Role::Server } else { Role::Client };
        let mut ep = DccpEndpoint::new(DccpConfig { app: DccpApp::Greedy { payload: 100 }, ..Default::default() }, role);
        let mut now = Instant::ZERO;
        ep.connect(now);
        while ep.poll_transmit(now).is_some() {}
        let kinds = [PacketType::Request, PacketType::Response, PacketType::Data, PacketType::Ack,
                     PacketType::DataAck, PacketType::Close, PacketType::Reset];
        for (k, seq, ack, payload, av, ccid) in pkts {
            now += Duration::from_millis(7);
            let mut p = DccpPacket::new(kinds[k], seq);
            p.ack = ack;
            p.payload = payload;
            p.ack_vector = av;
            p.ccid = ccid;
            ep.handle_packet(now, &p);
            while ep.poll_transmit(now).is_some() {}
            if let Some(t) = ep.poll_timeout() {
                ep.handle_timeout(t.max(now));
                now = now.max(t);
                while ep.poll_transmit(now).is_some() {}
            }
            while ep.poll_event().is_some() {}
        }
    }
}
