//! DCCP over the datagram harness: handshake, transfer, CCID behaviour against references.

mod dgram_harness;
mod harness;

use airlink_engine::{Duration, Instant};
use airlink_transport::dccp::PacketType;
use airlink_transport::dccp::{tfrc, Ccid, DccpApp, DccpConfig};
use dgram_harness::{DccpPair, PipeConfig};

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}
fn secs(x: u64) -> Instant {
    Instant::from_millis(1000 * x)
}

fn greedy(ccid: Ccid, payload: u32) -> DccpConfig {
    DccpConfig {
        ccid,
        app: DccpApp::Greedy { payload },
        ..Default::default()
    }
}

fn link(rate_bps: u64, delay: Duration, queue: usize, loss: f64) -> PipeConfig {
    PipeConfig {
        rate_bps,
        queue_packets: queue,
        loss,
        ..PipeConfig::delay(delay)
    }
}

/// Payload bytes the client sent in data packets within [a, b).
fn sent_bytes(p: &DccpPair, a: Instant, b: Instant) -> u64 {
    p.client_sent
        .iter()
        .filter(|(t, pk)| *t >= a && *t < b && pk.kind.carries_data())
        .map(|(_, pk)| pk.payload as u64)
        .sum()
}

#[test]
fn ccid3_steady_rate_follows_the_tfrc_equation() {
    // 1 % random loss, no queueing loss (fast link), RTT 100 ms, s = 1000 B.
    let mut p = DccpPair::new(
        greedy(Ccid::Tfrc, 1000),
        DccpConfig::default(),
        link(100_000_000, ms(50), 0, 0.01),
        PipeConfig::delay(ms(50)),
        7,
    );
    p.connect();
    let mut ps = Vec::new();
    let mut rs = Vec::new();
    let mut next = secs(100);
    p.run_checked(secs(300), |p| {
        if p.now >= next {
            next += Duration::from_secs(1);
            ps.push(p.server.ccid3_receiver().unwrap().p());
            rs.push(
                p.client
                    .ccid3_sender()
                    .unwrap()
                    .rtt()
                    .unwrap()
                    .as_secs_f64(),
            );
        }
    });
    let n = ps.len() as f64;
    let (p_mean, r_mean) = (ps.iter().sum::<f64>() / n, rs.iter().sum::<f64>() / n);
    let sent = sent_bytes(&p, secs(100), secs(300)) as f64 / 200.0;
    let x = tfrc::throughput(1000.0, r_mean, p_mean);
    println!("p = {p_mean:.5}, R = {r_mean:.4} s, sent {sent:.0} B/s, X(p,R) = {x:.0} B/s");
    // The loss-event rate is at most the packet loss rate (losses within an RTT merge).
    assert!(p_mean > 0.005 && p_mean <= 0.011, "p = {p_mean}");
    // Tolerance 25 %: p fluctuates around its mean and X(p) is convex, so the time-average
    // of X(p(t)) exceeds X(mean p); X_recv clamps and slow-start episodes add noise.
    assert!((sent / x - 1.0).abs() < 0.25, "sent {sent} vs equation {x}");
}

#[test]
fn ccid2_fills_a_lossless_path_and_halves_on_queue_loss() {
    let mut p = DccpPair::new(
        greedy(Ccid::TcpLike, 1000),
        DccpConfig::default(),
        link(2_000_000, ms(20), 30, 0.0),
        PipeConfig::delay(ms(20)),
        1,
    );
    p.connect();
    p.run(secs(20));
    assert!(p.client_view.connected && p.server_view.connected);
    // 2 Mbit/s of 1036-byte packets for ~20 s.
    let util = p.server_view.bytes() as f64 * 1036.0 / 1000.0 * 8.0 / 20.0 / 2e6;
    println!("CCID-2 utilisation {util:.3}, {:?}", p.client.ccid_state());
    assert!(util > 0.9, "utilisation {util}");
    let st = p.client.ccid2_sender().unwrap().stats().clone();
    assert_eq!(
        st.lost_packets, p.up.lost_queue,
        "every queue drop found from Ack Vectors"
    );
    assert!(st.congestion_events >= 1 && st.congestion_events < st.lost_packets);
    assert_eq!(p.server.stats().data_lost, p.up.lost_queue);
    // The server trims its Ack Vector state on Ack-of-Ack: Acks stay small.
    let acks = p.server.stats().acks_sent;
    let ack_bytes = p.server.stats().wire_bytes_sent as f64 / acks as f64;
    assert!(ack_bytes < 60.0, "mean Ack size {ack_bytes}");
}

fn ccid2_goodput(loss: f64, seed: u64) -> f64 {
    let mut p = DccpPair::new(
        greedy(Ccid::TcpLike, 1460),
        DccpConfig::default(),
        link(10_000_000, ms(25), 100, loss),
        PipeConfig::delay(ms(25)),
        seed,
    );
    p.connect();
    p.run(secs(60));
    p.server_view.bytes_between(secs(10), secs(60)) as f64 * 8.0 / 50.0
}

fn tcp_goodput(loss: f64, seed: u64) -> f64 {
    use airlink_transport::TcpConfig;
    let up = harness::LinkConfig {
        loss,
        queue_packets: 100,
        ..harness::LinkConfig::delay(ms(25)).rate(10_000_000)
    };
    let mut p = harness::Pair::new(
        TcpConfig::default(),
        TcpConfig::default(),
        harness::LinkConfig::delay(ms(25)),
        up,
        seed,
    );
    p.record = true;
    p.download(1 << 40);
    p.run(secs(60), u64::MAX);
    let d = &p.client_app.deliveries;
    let at = |t: Instant| {
        d.iter()
            .take_while(|(x, _)| *x < t)
            .last()
            .map_or(0, |x| x.1)
    };
    (at(secs(60)) - at(secs(10))) as f64 * 8.0 / 50.0
}

#[test]
fn ccid2_throughput_falls_with_loss_like_tcp() {
    let mut last = f64::INFINITY;
    for loss in [0.0, 0.005, 0.02, 0.05] {
        let d = ccid2_goodput(loss, 3);
        let t = tcp_goodput(loss, 3);
        println!(
            "loss {loss}: CCID-2 {:.0} kbit/s, TCP SACK {:.0} kbit/s",
            d / 1e3,
            t / 1e3
        );
        assert!(d < last, "goodput must fall with loss");
        last = d;
        // Same AIMD in packets: within a factor of two of TCP (DCCP has no retransmissions
        // and its RTO floor is 1 s against Linux TCP's 200 ms, so it is not identical).
        assert!(d > 0.5 * t && d < 2.0 * t, "CCID-2 {d} vs TCP {t}");
    }
}

#[test]
fn handshake_survives_lost_request_and_response_and_closes() {
    let mut up = PipeConfig::delay(ms(10));
    up.drop = vec![true]; // the first Request
    let mut down = PipeConfig::delay(ms(10));
    down.drop = vec![true]; // the first Response
    let mut cfg = greedy(Ccid::Tfrc, 500);
    cfg.request_timeout = ms(500);
    let mut p = DccpPair::new(cfg, DccpConfig::default(), up, down, 1);
    p.connect();
    p.run(secs(3));
    let requests: Vec<u64> = p
        .client_sent
        .iter()
        .filter(|(_, pk)| pk.kind == PacketType::Request)
        .map(|(t, _)| t.as_nanos() / 1_000_000)
        .collect();
    assert_eq!(requests, [0, 500, 1500], "backed-off Requests");
    assert!(p.client_view.connected && p.server_view.connected);
    assert!(p.server_view.bytes() > 0);
    p.client.close(p.now);
    p.flush_client();
    p.run(secs(10));
    assert!(p.client_view.closed && !p.client_view.reset);
    assert!(p.server_view.peer_closed && p.server_view.closed);
    assert!(p.client.poll_timeout().is_none() && p.server.poll_timeout().is_none());
}
