//! A sender that does not use its congestion window does not grow it (RFC 7661; Linux
//! `tcp_is_cwnd_limited`): held back by its host (a device limit), by its application or by
//! the receiver's window, every congestion control keeps cwnd within a small multiple of what
//! it has in flight, however long it runs; and a bulk sender that cwnd holds back is never
//! told otherwise while it has data to send.

mod harness;

use airlink_engine::{Duration, Instant, RngStream};
use airlink_transport::{
    CongestionConfig, DeviceLimit, DeviceLimitConfig, Role, TcpConfig, TcpEndpoint,
};
use harness::{LinkConfig, Pair, Pipe};

fn secs(x: u64) -> Instant {
    Instant::from_millis(1000 * x)
}

/// The window policies fed by `AckEvent::app_limited` (BBR sizes cwnd from its bandwidth
/// model, its app-limited rule is the rate sampler's).
fn policies() -> Vec<CongestionConfig> {
    CongestionConfig::names()
        .iter()
        .filter(|&&n| n != "bbr")
        .map(|n| n.parse().unwrap())
        .collect()
}

/// What holds the sender back.
#[derive(Copy, Clone, Debug)]
enum Limit {
    /// Its host serves 3 Mbit/s of IP packets (`[flow.device]`).
    Device,
    /// The application writes one SMSS every 10 ms (1.2 Mbit/s).
    App,
    /// The receiver offers 16 KB (1.3 Mbit/s at this RTT).
    Rwnd,
}

/// Largest cwnd and largest in-flight of a download held back by `limit` for `dur` over a
/// 100 Mbit/s, 40 ms round trip, and the payload rate of its second half, bit/s.
fn held_back(cc: CongestionConfig, limit: Limit, dur: Instant) -> (u64, u64, f64) {
    let mut cfg = TcpConfig {
        congestion: cc,
        ..TcpConfig::default()
    };
    if let Limit::Rwnd = limit {
        cfg.rwnd = 16_384;
    }
    let mut server = TcpEndpoint::new(cfg.clone(), Role::Server);
    let mut client = TcpEndpoint::new(cfg, Role::Client);
    let link = LinkConfig::delay(Duration::from_millis(20)).rate(100_000_000);
    let mut down = Pipe::new(link.clone(), RngStream::derive(1, "down"));
    let mut up = Pipe::new(link, RngStream::derive(1, "up"));
    let mut dev = DeviceLimit::new(DeviceLimitConfig::new(None, Some(3_000_000))).unwrap();
    let tick = Duration::from_millis(10);
    let mut write_at = match limit {
        Limit::App => Some(Instant::ZERO),
        _ => {
            server.send(Instant::ZERO, 1 << 40);
            None
        }
    };
    let mut now = Instant::ZERO;
    client.connect(now);
    let (mut max_cwnd, mut max_flight, mut at_half) = (0, 0, None);
    while now < dur {
        if write_at.is_some_and(|t| t <= now) {
            server.send(now, server.smss() as u64);
            write_at = Some(now + tick);
        }
        while let Some(seg) = client.poll_transmit(now) {
            up.push(now, seg);
        }
        loop {
            if let Limit::Device = limit {
                // The sender takes a segment only when its host has room for it.
                if !dev.has_room(now) {
                    break;
                }
                let Some(seg) = server.poll_transmit(now) else {
                    break;
                };
                let leave = dev.offer(now, seg.wire_len()).expect("room");
                down.push(leave, seg);
            } else {
                let Some(seg) = server.poll_transmit(now) else {
                    break;
                };
                down.push(now, seg);
            }
        }
        max_flight = max_flight.max(server.bytes_in_flight());
        max_cwnd = max_cwnd.max(server.cwnd());
        while client.poll_event().is_some() {}
        while server.poll_event().is_some() {}
        let server_timer = match limit {
            Limit::Device => dev.sender_wake(now, server.poll_timeout()),
            _ => server.poll_timeout(),
        };
        let next = [
            down.next_due(),
            up.next_due(),
            client.poll_timeout(),
            server_timer,
            write_at,
        ];
        now = now.max(
            next.into_iter()
                .flatten()
                .min()
                .expect("the sender never goes quiet"),
        );
        if at_half.is_none() && now.as_nanos() >= dur.as_nanos() / 2 {
            at_half = Some((now, client.stats().bytes_delivered));
        }
        while let Some(seg) = down.pop_due(now) {
            client.handle_segment(now, &seg);
        }
        while let Some(seg) = up.pop_due(now) {
            server.handle_segment(now, &seg);
        }
        if client.poll_timeout().is_some_and(|t| t <= now) {
            client.handle_timeout(now);
        }
        if server_timer.is_some_and(|t| t <= now) {
            server.handle_timeout(now);
        }
    }
    let (t, bytes) = at_half.unwrap();
    let rate = 8.0 * (client.stats().bytes_delivered - bytes) as f64
        / now.saturating_since(t).as_secs_f64();
    assert_eq!(
        server.stats().retransmitted_segments,
        0,
        "{limit:?}: a lossless path"
    );
    (max_cwnd, max_flight, rate)
}

#[test]
fn a_sender_held_back_by_its_host_application_or_receiver_keeps_cwnd_near_its_flight() {
    for limit in [Limit::Device, Limit::App, Limit::Rwnd] {
        for cc in policies() {
            let name = cc.name();
            let (cwnd, flight, rate) = held_back(cc, limit, secs(300));
            println!("{limit:?} {name}: cwnd ≤ {cwnd} B, in flight ≤ {flight} B, {rate:.0} bit/s");
            // The rate each limit allows, payload bit/s (SMSS 1460 B): 3 Mbit/s of 1500-byte
            // IP packets; one SMSS per 10 ms; the receiver's window (11 whole segments, sender
            // SWS avoidance) per 40 ms round trip, less the delayed ACKs' waits.
            let ok = match limit {
                Limit::Device => (rate / (3e6 * 1460.0 / 1500.0) - 1.0).abs() < 0.01,
                Limit::App => (rate / (1460.0 * 8.0 / 0.01) - 1.0).abs() < 0.01,
                Limit::Rwnd => {
                    flight == 11 * 1460
                        && (0.85..1.0).contains(&(rate / (flight as f64 * 8.0 / 0.04)))
                }
            };
            assert!(ok, "{limit:?} {name}: {rate} bit/s, {flight} B in flight");
            // Slow start may take cwnd to twice the flight (Linux lets it, so that cwnd is
            // ready when the limit lifts) plus what the last ACKs added; avoidance never
            // grows it. Before, 300 s of ACKs took it to tens of megabytes. The initial window
            // (10 segments) may exceed an application-limited flight.
            let bound = (2 * flight + 4 * 1448).max(10 * 1448);
            assert!(
                cwnd <= bound,
                "{limit:?} {name}: cwnd {cwnd} B with at most {flight} B in flight"
            );
        }
    }
}

#[test]
fn a_bulk_sender_that_cwnd_holds_back_grows_on_every_ack_until_its_data_runs_out() {
    // 8 MB through a 10 Mbit/s bottleneck with a 50-packet drop-tail queue and 1 % random
    // loss: slow start, fast recoveries, timeouts. The receiver's window never limits.
    const BYTES: u64 = 8_000_000;
    for cc in policies() {
        let name = cc.name();
        let cfg = TcpConfig {
            congestion: cc,
            rwnd: 4 << 20,
            ..TcpConfig::default()
        };
        let bottleneck = LinkConfig {
            queue_packets: 50,
            loss: 0.01,
            ..LinkConfig::delay(Duration::from_millis(20)).rate(10_000_000)
        };
        let mut pair = Pair::new(
            cfg.clone(),
            cfg.clone(),
            LinkConfig::delay(Duration::from_millis(20)),
            bottleneck,
            7,
        );
        let logged = pair.log_server(cfg);
        pair.download(BYTES);
        pair.run(secs(600), 10_000_000);
        assert_eq!(pair.client_app.delivered, BYTES, "{name}");
        assert!(
            pair.server.stats().fast_recoveries > 5,
            "{name}: {:?}",
            pair.server.stats()
        );
        let acks = logged.acks.lock().unwrap();
        // Until the last byte has been sent (HighData = 1 + BYTES), cwnd held the sender back.
        let before_end: Vec<_> = acks.iter().filter(|(high, _)| *high <= BYTES).collect();
        assert!(before_end.len() > 1000, "{name}: {} ACKs", before_end.len());
        let limited = before_end
            .iter()
            .filter(|(_, app_limited)| *app_limited)
            .count();
        assert_eq!(
            limited,
            0,
            "{name}: {limited} of {} ACKs app-limited",
            before_end.len()
        );
    }
}
