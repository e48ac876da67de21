//! Two endpoints in virtual time: delivery, completion, goodput, loss patterns.

mod harness;

use airlink_engine::{Duration, Instant};
use airlink_transport::{CongestionConfig, CubicConfig, Recovery, TcpConfig, TcpState};
use harness::{LinkConfig, Pair};
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
    cubic: bool,
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
            any::<bool>(),
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
            cubic: a.4,
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

fn build(c: &Case) -> Pair {
    let cfg = |sack: bool| TcpConfig {
        sack,
        recovery: c.recovery,
        congestion: if c.cubic {
            CongestionConfig::Cubic(CubicConfig::default())
        } else {
            CongestionConfig::Reno
        },
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
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Under any loss and reordering (SYN, SYN-ACK, FINs, retransmissions and ACKs included)
    /// every byte arrives in order exactly once and both sides close.
    #[test]
    fn every_byte_delivered_once_under_loss(c in case()) {
        let mut p = build(&c);
        p.check = true;
        complete(&mut p, c.bytes);
    }

    /// Longer transfers at realistic loss rates with drop-tail queues and a larger window:
    /// many recovery episodes with several holes each.
    #[test]
    fn bulk_transfers_with_queue_drops_and_random_loss(bytes in 200_000u64..1_500_000, loss in 0.0..0.03f64,
                                                       queue in 5usize..120, rate_mbps in 1u64..50, delay in 5u64..150,
                                                       sack in any::<bool>(), cubic in any::<bool>(), reorder in 0.0..0.05f64,
                                                       seed in any::<u64>()) {
        let cfg = TcpConfig {
            sack,
            rwnd: 256 * 1024,
            congestion: if cubic { CongestionConfig::Cubic(CubicConfig::default()) } else { CongestionConfig::Reno },
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
                                                sack in any::<bool>(), cubic in any::<bool>(), seed in any::<u64>()) {
        let cfg = TcpConfig {
            sack,
            congestion: if cubic { CongestionConfig::Cubic(CubicConfig::default()) } else { CongestionConfig::Reno },
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
