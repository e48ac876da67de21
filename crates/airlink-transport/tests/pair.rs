//! Two endpoints in virtual time: delivery, completion, goodput, loss patterns.

mod harness;

use airlink_engine::{Duration, Instant};
use airlink_transport::congestion::afc_window;
use airlink_transport::{CongestionConfig, Recovery, TcpConfig, TcpState};
use harness::{LinkConfig, Pair, WindowChange};
use proptest::prelude::*;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

/// Runs a download to the end and checks the invariants every transfer must satisfy.
fn complete(pair: &mut Pair, bytes: u64) {
    pair.download(bytes);
    let quiet = pair.run(Instant::from_millis(100_000_000), 5_000_000);
    assert!(
        quiet,
        "did not finish: now {}, steps {}, client {:?}, server {:?}",
        pair.now,
        pair.steps,
        pair.client.state(),
        pair.server.state()
    );
    assert_eq!(pair.client_app.delivered, bytes, "bytes delivered");
    assert_eq!(pair.client.stats().bytes_delivered, bytes);
    assert_eq!(pair.server.stats().bytes_acked, bytes);
    assert!(pair.client_app.connected && pair.server_app.connected);
    assert!(pair.client_app.peer_closed && pair.server_app.peer_closed);
    assert!(
        pair.client_app.closed && pair.server_app.closed,
        "client {:?} server {:?}",
        pair.client.state(),
        pair.server.state()
    );
    assert_eq!(pair.server.state(), TcpState::TimeWait);
    assert_eq!(pair.client.state(), TcpState::Closed);
    assert_eq!(pair.client.poll_timeout(), None);
    assert_eq!(pair.server.poll_timeout(), None);
}

#[test]
fn lossless_download_smoke() {
    let mut p = Pair::new(
        TcpConfig::default(),
        TcpConfig::default(),
        LinkConfig::delay(ms(50)).rate(1_000_000),
        LinkConfig::delay(ms(50)).rate(10_000_000),
        1,
    );
    complete(&mut p, 1_000_000);
    let s = p.server.stats();
    assert_eq!(s.retransmitted_segments, 0, "{s:?}");
    // Delayed ACKs: about one ACK per two data segments.
    let acks = p.client.stats().pure_acks_sent;
    assert!(
        acks * 2 <= s.data_segments_sent + 4 && acks * 2 + 4 >= s.data_segments_sent,
        "{acks} ACKs for {} segments",
        s.data_segments_sent
    );
}

#[derive(Clone, Debug)]
struct Case {
    bytes: u64,
    sack_client: bool,
    sack_server: bool,
    recovery: Recovery,
    /// Index into [`CongestionConfig::names`].
    policy: usize,
    delay_ms: u64,
    rate_kbps: u64,
    loss_down: f64,
    loss_up: f64,
    reorder: f64,
    drop_down: Vec<u64>,
    drop_up: Vec<u64>,
    drop_fins_down: u32,
    drop_fins_up: u32,
    retx_loss: f64,
    ack_every: u32,
    timestamps: bool,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        (
            1u64..150_000,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            0..CongestionConfig::names().len(),
            1u64..200,
            200u64..20_000,
        ),
        (
            0.0..0.25f64,
            0.0..0.25f64,
            0.0..0.3f64,
            prop::collection::vec(0u64..80, 0..6),
            prop::collection::vec(0u64..40, 0..6),
        ),
        (
            0u32..3,
            0u32..3,
            0.0..0.5f64,
            1u32..4,
            any::<bool>(),
            any::<u64>(),
        ),
    )
        .prop_map(|(a, b, c)| Case {
            bytes: a.0,
            sack_client: a.1,
            sack_server: a.2,
            recovery: if a.3 {
                Recovery::NewReno
            } else {
                Recovery::Reno
            },
            policy: a.4,
            delay_ms: a.5,
            rate_kbps: a.6,
            loss_down: b.0,
            loss_up: b.1,
            reorder: b.2,
            drop_down: b.3,
            drop_up: b.4,
            drop_fins_down: c.0,
            drop_fins_up: c.1,
            retx_loss: c.2,
            ack_every: c.3,
            timestamps: c.4,
            seed: c.5,
        })
}

/// The built-in policy number `i`, default parameters.
fn policy(i: usize) -> CongestionConfig {
    CongestionConfig::from_name(CongestionConfig::names()[i]).unwrap()
}

/// Every policy: Reno (Reno recovery, no SACK), NewReno (no SACK), SACK (Reno policy),
/// CUBIC, Veno and TCP-AFC, as (policy index, recovery, SACK).
fn variant(i: usize) -> (usize, Recovery, bool) {
    match i {
        0 => (0, Recovery::Reno, false),
        1 => (0, Recovery::NewReno, false),
        2 => (0, Recovery::NewReno, true),
        _ => (i - 2, Recovery::NewReno, true),
    }
}

const VARIANTS: usize = 6;

fn build(c: &Case) -> Pair {
    let cfg = |sack: bool| TcpConfig {
        sack,
        recovery: c.recovery,
        congestion: policy(c.policy),
        ack_every: c.ack_every,
        timestamps: c.timestamps,
        ..TcpConfig::default()
    };
    let mut down = LinkConfig::delay(ms(c.delay_ms)).rate(c.rate_kbps * 1000);
    down.loss = c.loss_down;
    down.reorder = c.reorder;
    down.reorder_extra = ms(c.delay_ms);
    down.drop_indices = c.drop_down.clone();
    down.drop_fins = c.drop_fins_down;
    down.retx_loss = c.retx_loss;
    down.queue_packets = 30;
    let mut up = LinkConfig::delay(ms(c.delay_ms));
    up.loss = c.loss_up;
    up.reorder = c.reorder;
    up.reorder_extra = ms(c.delay_ms);
    up.drop_indices = c.drop_up.clone();
    up.drop_fins = c.drop_fins_up;
    Pair::new(cfg(c.sack_client), cfg(c.sack_server), up, down, c.seed)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Under any loss and reordering (SYN, SYN-ACK, FINs, retransmissions and ACKs included)
    /// every byte arrives in order exactly once and both sides close.
    #[test]
    fn every_byte_delivered_once_under_loss(c in case()) {
        let mut p = build(&c);
        p.check = true;
        complete(&mut p, c.bytes);
    }

    /// Each of the six variants, under an arbitrary set of dropped packets in both directions
    /// (many holes per window, lost retransmissions), delivers every byte in order exactly once.
    #[test]
    fn every_variant_survives_arbitrary_drop_sets(v in 0..VARIANTS, bytes in 1u64..600_000,
                                                  drop_down in prop::collection::vec(0u64..500, 0..40),
                                                  drop_up in prop::collection::vec(0u64..250, 0..20),
                                                  retx_loss in 0.0..0.5f64, delay in 1u64..100,
                                                  rate_mbps in 1u64..20, seed in any::<u64>()) {
        let (pol, recovery, sack) = variant(v);
        let cfg = TcpConfig {
            sack,
            recovery,
            rwnd: 128 * 1024,
            congestion: policy(pol),
            ..TcpConfig::default()
        };
        let mut down = LinkConfig::delay(ms(delay)).rate(rate_mbps * 1_000_000);
        down.drop_indices = drop_down;
        down.retx_loss = retx_loss;
        let mut up = LinkConfig::delay(ms(delay));
        up.drop_indices = drop_up;
        let mut p = Pair::new(cfg.clone(), cfg, up, down, seed);
        p.check = true;
        complete(&mut p, bytes);
    }

    /// Longer transfers at realistic loss rates with drop-tail queues and a larger window:
    /// many recovery episodes with several holes each.
    #[test]
    fn bulk_transfers_with_queue_drops_and_random_loss(bytes in 200_000u64..1_500_000, loss in 0.0..0.03f64,
                                                       queue in 5usize..120, rate_mbps in 1u64..50, delay in 5u64..150,
                                                       v in 0..VARIANTS, reorder in 0.0..0.05f64,
                                                       seed in any::<u64>()) {
        let (pol, recovery, sack) = variant(v);
        let cfg = TcpConfig {
            sack,
            recovery,
            rwnd: 256 * 1024,
            congestion: policy(pol),
            ..TcpConfig::default()
        };
        let mut down = LinkConfig::delay(ms(delay)).rate(rate_mbps * 1_000_000);
        down.queue_packets = queue;
        down.loss = loss;
        down.reorder = reorder;
        down.reorder_extra = ms(5);
        let mut up = LinkConfig::delay(ms(delay));
        up.loss = loss / 2.0;
        let mut p = Pair::new(cfg.clone(), cfg, up, down, seed);
        p.check = true;
        complete(&mut p, bytes);
    }

    /// A lossless, order-keeping path never causes a retransmission.
    #[test]
    fn no_spurious_retransmissions_without_loss(bytes in 1u64..400_000, delay in 1u64..300, rate_mbps in 1u64..100,
                                                v in 0..VARIANTS, seed in any::<u64>()) {
        let (pol, recovery, sack) = variant(v);
        let cfg = TcpConfig {
            sack,
            recovery,
            congestion: policy(pol),
            ..TcpConfig::default()
        };
        let mut p = Pair::new(cfg.clone(), cfg, LinkConfig::delay(ms(delay)), LinkConfig::delay(ms(delay)).rate(rate_mbps * 1_000_000), seed);
        complete(&mut p, bytes);
        prop_assert_eq!(p.server.stats().retransmitted_segments, 0);
        prop_assert_eq!(p.client.stats().retransmitted_segments, 0);
        prop_assert_eq!(p.server.stats().timeouts, 0);
        prop_assert_eq!(p.client.stats().duplicate_segments, 0);
    }
}

/// Goodput over the interval, bit/s, from the receiver's delivery series.
fn goodput(p: &Pair, from: Instant, to: Instant) -> f64 {
    let at = |t: Instant| {
        let i = p.client_app.deliveries.partition_point(|&(x, _)| x <= t);
        if i == 0 {
            0
        } else {
            p.client_app.deliveries[i - 1].1
        }
    };
    (at(to) - at(from)) as f64 * 8.0 / to.saturating_since(from).as_secs_f64()
}

/// A lossless 10 Mbit/s, 100 ms RTT path with a window above the BDP: after slow start the
/// goodput is the link rate times 1460/1500.
#[test]
fn goodput_reaches_link_rate_after_slow_start() {
    let cfg = TcpConfig {
        rwnd: 1 << 20,
        ..TcpConfig::default()
    };
    let mut p = Pair::new(
        cfg.clone(),
        cfg,
        LinkConfig::delay(ms(50)).rate(10_000_000),
        LinkConfig::delay(ms(50)).rate(10_000_000),
        7,
    );
    p.record = true;
    complete(&mut p, 25_000_000);
    let ideal = 10e6 * 1460.0 / 1500.0;
    let g = goodput(
        &p,
        Instant::from_secs_f64(3.0),
        Instant::from_secs_f64(18.0),
    );
    assert!(
        g > 0.995 * ideal && g <= ideal * 1.0001,
        "goodput {g:.0} bit/s vs {ideal:.0}"
    );
    assert_eq!(p.server.stats().retransmitted_segments, 0);
}

/// WIPEMU [S1] shape: 1.296 Mbit/s downlink (8 bits/symbol, no framing), 200 ms RTT, 50-packet
/// gateway queue, 20 kbit/s uplink, Linux 2.4 settings. Delayed ACKs keep the uplink below
/// capacity (spec G: 86 % load); ACK-per-segment would cap the downlink.
#[test]
fn wipemu_shape_needs_delayed_acks() {
    let run = |ack_every: u32| {
        let cfg = TcpConfig {
            ack_every,
            ..TcpConfig::linux_2_4()
        };
        let mut down = LinkConfig::delay(ms(100)).rate(1_296_000);
        down.queue_packets = 50;
        let up = LinkConfig::delay(ms(100)).rate(20_000);
        let mut p = Pair::new(cfg.clone(), cfg, up, down, 3);
        p.record = true;
        complete(&mut p, 3_000_000);
        let g = goodput(
            &p,
            Instant::from_secs_f64(4.0),
            Instant::from_secs_f64(14.0),
        );
        (g, p)
    };
    let (g2, p2) = run(2);
    let ideal = 1_296_000.0 * 1460.0 / 1500.0;
    assert!(
        g2 > 0.99 * ideal,
        "goodput with delayed ACKs {g2:.0} vs {ideal:.0}"
    );
    assert_eq!(
        p2.server.stats().retransmitted_segments,
        0,
        "the 64 KiB window fits the 50-packet queue"
    );
    let (g1, _) = run(1);
    assert!(
        g1 < 0.75 * g2,
        "ACK every segment: {g1:.0} bit/s should be uplink-bound (vs {g2:.0})"
    );
}

// ---------------------------------------------------------------------------- Veno and AFC

const MSS: u64 = 1460;

/// Runs a download of `bytes` with `cc` at the sender; returns (goodput bit/s over the whole
/// transfer, the sender's loss reactions, the pair).
fn transfer(
    cfg: TcpConfig,
    down: LinkConfig,
    bytes: u64,
    seed: u64,
) -> (f64, Vec<WindowChange>, Pair) {
    let up = LinkConfig::delay(down.delay);
    let mut p = Pair::new(cfg.clone(), cfg.clone(), up, down, seed);
    let log = p.log_server(cfg);
    p.record = true;
    complete(&mut p, bytes);
    let end = p.client_app.deliveries.last().map(|d| d.0).unwrap();
    let g = bytes as f64 * 8.0 / end.as_secs_f64();
    let log = log.log.lock().unwrap().clone();
    (g, log, p)
}

fn with(cc: CongestionConfig) -> TcpConfig {
    TcpConfig {
        rwnd: 1 << 20,
        congestion: cc,
        ..TcpConfig::default()
    }
}

fn fast(log: &[WindowChange]) -> impl Iterator<Item = &WindowChange> {
    log.iter().filter(|c| c.cause == "fast")
}

/// An uncongested 10 Mbit/s path, 100 ms RTT, no queueing (the window stays below the BDP
/// of 83 segments), 1 % random loss: Veno sees N < β at its losses and cuts to 4/5, Reno
/// halves; Veno's goodput is clearly higher.
#[test]
fn veno_backs_off_less_than_reno_under_random_loss() {
    let (mut gv, mut gr) = (0.0, 0.0);
    let (mut gentle, mut total) = (0, 0);
    for seed in 1..=4 {
        let mut down = LinkConfig::delay(ms(50)).rate(10_000_000);
        down.loss = 0.01;
        let (g, log, _) = transfer(with(policy(2)), down.clone(), 4_000_000, seed);
        gv += g / 4.0;
        for c in fast(&log) {
            total += 1;
            if c.backlog_before.is_some_and(|n| n < 3.0) {
                gentle += 1;
                let ratio = c.ssthresh_after as f64 / c.cwnd_before as f64;
                assert!(
                    (ratio - 0.8).abs() < 0.01 || c.ssthresh_after == 2 * MSS,
                    "{c:?}"
                );
            }
        }
        let (g, _, _) = transfer(with(CongestionConfig::Reno), down, 4_000_000, seed);
        gr += g / 4.0;
    }
    eprintln!("random loss 1 %: veno {gv:.0} bit/s, reno {gr:.0} bit/s; veno: {gentle} of {total} reductions by 4/5");
    assert!(
        gentle * 10 >= total * 9,
        "{gentle} of {total} losses taken as random"
    );
    assert!(gv > 1.25 * gr, "veno {gv:.0} vs reno {gr:.0}");
}

/// A 2 Mbit/s bottleneck with a 15-packet drop-tail queue, no random loss: the losses are
/// queue overflows, Veno sees the backlog and halves like Reno; goodput is the same.
#[test]
fn veno_halves_like_reno_under_congestion() {
    let mut down = LinkConfig::delay(ms(20)).rate(2_000_000);
    down.queue_packets = 15;
    let (gv, log, _) = transfer(with(policy(2)), down.clone(), 5_000_000, 1);
    let (gr, rlog, _) = transfer(with(CongestionConfig::Reno), down, 5_000_000, 1);
    let halvings = fast(&log)
        .filter(|c| c.ssthresh_after as f64 <= 0.5 * c.cwnd_before as f64 + 1.0)
        .count();
    eprintln!(
        "congestion: veno {gv:.0} bit/s ({} reductions, {halvings} halvings), reno {gr:.0} bit/s ({} reductions)",
        fast(&log).count(),
        fast(&rlog).count()
    );
    assert!(fast(&log).count() >= 3);
    assert_eq!(halvings, fast(&log).count(), "{log:?}");
    assert!((gv / gr - 1.0).abs() < 0.05, "veno {gv:.0} vs reno {gr:.0}");
}

/// Isolated random losses (one packet in 150, so one per several windows) on an uncongested
/// path: AFC never reduces cwnd and SACK_OK stays true; SACK Reno halves at every loss.
#[test]
fn afc_ignores_isolated_random_losses() {
    let mut down = LinkConfig::delay(ms(50)).rate(10_000_000);
    down.drop_indices = (1..=20).map(|i| 150 * i).collect();
    let cfg = TcpConfig {
        rwnd: 64 * 1024,
        ..with(policy(3))
    };
    let (ga, log, pa) = transfer(cfg.clone(), down.clone(), 5_000_000, 1);
    let reno = TcpConfig {
        congestion: CongestionConfig::Reno,
        ..cfg
    };
    let (gr, rlog, pr) = transfer(reno, down, 5_000_000, 1);
    eprintln!(
        "isolated losses: afc {ga:.0} bit/s ({} episodes), sack reno {gr:.0} bit/s ({} halvings)",
        fast(&log).count(),
        fast(&rlog).count()
    );
    assert_eq!(pa.server.stats().timeouts, 0);
    assert_eq!(fast(&log).count(), 20, "{log:?}");
    for c in &log {
        assert_eq!(c.cwnd_after, c.cwnd_before, "{c:?}");
        assert_eq!(c.probe_after.sack_ok, Some(true), "{c:?}");
    }
    assert_eq!(pa.server.controller().probe().sack_ok, Some(true));
    assert_eq!(pr.server.stats().fast_recoveries, 20);
    for c in fast(&rlog) {
        assert!(c.cwnd_after <= c.cwnd_before / 2 + MSS, "{c:?}");
    }
    assert!(ga > gr, "afc {ga:.0} vs sack reno {gr:.0}");
}

/// Two packets lost `d` segments apart in one window: one fast recovery, with Cd = d and
/// cwnd_{n+1} = cwnd_n/2 + Cd⁴/(2·cwnd_n³). Two losses farther apart than the window
/// (≈ 29 segments at packet 500) are single losses of two windows: no reduction.
#[test]
fn afc_two_holes_in_one_window_reduce_per_formula() {
    let run = |first: u64, d: u64| {
        let mut down = LinkConfig::delay(ms(50)).rate(10_000_000);
        down.drop_indices = vec![first, first + d];
        let cfg = TcpConfig {
            initial_ssthresh: Some(20 * MSS),
            ..with(policy(3))
        };
        let (_, log, p) = transfer(cfg, down, 2_000_000, 1);
        assert_eq!(p.server.stats().timeouts, 0);
        assert_eq!(p.server.stats().fast_recoveries, 1 + (d > 29) as u64);
        log
    };
    let log = run(500, 40);
    assert!(log.iter().all(|c| c.cwnd_after == c.cwnd_before), "{log:?}");
    assert_eq!(log.last().unwrap().probe_after.sack_ok, Some(true));
    for (first, d) in [(300u64, 20u64), (300, 8), (500, 25)] {
        let log = run(first, d);
        let cuts: Vec<_> = log
            .iter()
            .filter(|c| c.cwnd_after != c.cwnd_before)
            .collect();
        assert_eq!(cuts.len(), 1, "{log:?}");
        let c = cuts[0];
        let w = c.cwnd_before as f64 / MSS as f64;
        let want = (afc_window(w, d as f64) * MSS as f64).round() as u64;
        eprintln!(
            "two holes {d} apart: cwnd {w:.2} -> {:.4} segments (Cd {:?})",
            c.cwnd_after as f64 / MSS as f64,
            c.probe_after.congestion_distance
        );
        assert_eq!(c.probe_after.congestion_distance, Some(d as f64));
        assert_eq!(c.probe_after.sack_ok, Some(false));
        assert_eq!((c.cwnd_after, c.ssthresh_after), (want, want), "{c:?}");
    }
}

/// No bit errors, a congested bottleneck (drop-tail overflow): AFC behaves like TCP — its
/// goodput is within 15 % of SACK NewReno's.
#[test]
fn afc_like_sack_newreno_when_congested() {
    for (rate, queue, delay) in [
        (2_000_000u64, 20usize, 50u64),
        (5_000_000, 10, 20),
        (1_000_000, 8, 100),
    ] {
        let mut down = LinkConfig::delay(ms(delay)).rate(rate);
        down.queue_packets = queue;
        let (ga, log, _) = transfer(with(policy(3)), down.clone(), 3_000_000, 1);
        let (gr, rlog, _) = transfer(with(CongestionConfig::Reno), down, 3_000_000, 1);
        let cuts = log.iter().filter(|c| c.cwnd_after < c.cwnd_before).count();
        eprintln!(
            "congested {rate} bit/s, queue {queue}, {delay} ms: afc {ga:.0} bit/s ({cuts} reductions in {} episodes), sack newreno {gr:.0} bit/s ({} reductions)",
            fast(&log).count(),
            fast(&rlog).count()
        );
        assert!(cuts >= 1);
        assert!(
            (ga / gr - 1.0).abs() < 0.15,
            "afc {ga:.0} vs sack newreno {gr:.0}"
        );
    }
}
