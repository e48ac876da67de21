//! Loss recovery against what the receiver already has: retransmissions of data the receiver
//! holds (spurious, counted at the receiver) and timeouts where the RFCs would recover.

mod harness;

use airlink_engine::{Duration, Instant};
use airlink_transport::{CongestionConfig, TcpConfig};
use harness::{LinkConfig, Pair};

const MSS: u64 = 1460;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

/// Start of data segment i.
fn s(i: u64) -> u64 {
    1 + MSS * i
}

/// Six holes in the first window (more than the four SACK blocks an ACK carries), each hole's
/// first retransmission lost too and the first segment's second: two consecutive timeouts
/// with SACKed data above every hole. SACK information is kept across both (RFC 6675 §5.1),
/// so the receiver never gets a segment it already has.
#[test]
fn sacked_data_is_not_resent_after_consecutive_timeouts() {
    for cfg in [TcpConfig::default(), TcpConfig::rfc()] {
        let cfg = TcpConfig {
            initial_window: Some(16),
            ..cfg
        };
        let mut down = LinkConfig::delay(ms(50)).rate(10_000_000);
        down.drop_seq = vec![
            (s(0), 3),
            (s(2), 2),
            (s(4), 2),
            (s(6), 2),
            (s(8), 2),
            (s(10), 2),
        ];
        let mut p = Pair::new(cfg.clone(), cfg, LinkConfig::delay(ms(50)), down, 1);
        p.check = true;
        p.download(40 * MSS);
        assert!(p.run(Instant::from_secs_f64(600.0), 1_000_000));
        assert_eq!(p.client_app.delivered, 40 * MSS);
        let (sv, cl) = (p.server.stats(), p.client.stats());
        assert!(sv.timeouts >= 2, "{sv:?}");
        assert_eq!(cl.duplicate_segments, 0, "server {sv:?}");
        assert_eq!(sv.retransmitted_segments, p.down.dropped, "{sv:?}");
    }
}

/// Issue 10's case: 2 Mbit/s, 110 ms each way, a 60-packet queue, 1 % random loss on the way
/// down, a 1 MB window, 60 s of bulk transfer. Returns the pair after the run.
fn lossy_2mbit(cfg: TcpConfig, seed: u64) -> Pair {
    let cfg = TcpConfig {
        rwnd: 1_000_000,
        ..cfg
    };
    let mut down = LinkConfig::delay(ms(110)).rate(2_000_000);
    down.queue_packets = 60;
    down.loss = 0.01;
    let mut up = LinkConfig::delay(ms(110)).rate(2_000_000);
    up.queue_packets = 60;
    let mut p = Pair::new(cfg.clone(), cfg, up, down, seed);
    p.down.log_drops = true;
    p.download(1 << 40);
    p.run(Instant::from_secs_f64(60.0), u64::MAX);
    p
}

/// Data segments the link dropped that were retransmissions (their start below the highest
/// start dropped or seen before is not known to the pipe; a sequence number dropped twice is).
fn lost_retransmissions(p: &Pair) -> u64 {
    let mut seen = std::collections::HashSet::new();
    p.down
        .dropped_log
        .iter()
        .filter(|(_, s)| s.len > 0 && !seen.insert(s.seq))
        .count() as u64
}

/// RFC 6675 recovers every loss whose retransmission arrives: a timeout needs a lost
/// retransmission (or a slow-start overshoot whose queue outgrows the RTO). With Linux's RTO
/// floor on the variance term (the default preset) and RFC 6298's 1 s floor (the RFC preset),
/// the fast retransmission's ACK comes before the timer on this path, even when the third
/// duplicate ACK comes a round late; retransmissions then match link losses closely.
#[test]
fn no_spurious_timeouts_under_random_loss() {
    for (name, cfg) in [("default", TcpConfig::default()), ("rfc", TcpConfig::rfc())] {
        for cc in ["cubic", "reno"] {
            for seed in 1..=3 {
                let cfg = TcpConfig {
                    congestion: CongestionConfig::from_name(cc).unwrap(),
                    ..cfg.clone()
                };
                let p = lossy_2mbit(cfg, seed);
                let (sv, cl) = (p.server.stats(), p.client.stats());
                let lost_rx = lost_retransmissions(&p);
                let what = format!("{name} {cc} seed {seed}: lost {} (of them retransmissions {lost_rx}), {sv:?}, receiver duplicates {}", p.down.dropped, cl.duplicate_segments);
                assert!(sv.fast_recoveries >= 10, "{what}");
                assert!(sv.timeouts <= lost_rx + 1, "{what}");
                assert!(
                    sv.retransmitted_segments <= p.down.dropped + 3 * sv.timeouts,
                    "{what}"
                );
                assert!(cl.duplicate_segments <= 3 * sv.timeouts, "{what}");
            }
        }
    }
}
