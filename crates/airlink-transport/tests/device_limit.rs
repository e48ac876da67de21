//! A sending host's device limit ([S3]'s CPU-bound tablets) under each protocol: UDP loses its
//! excess at the sender and iperf counts it lost; TCP and DCCP senders block and lose nothing.
//! The device counts IP bytes; the paths here are fast, so the device is the bottleneck.

mod harness;

use airlink_engine::{Duration, Instant, RngStream};
use airlink_transport::dccp::{Ccid, DccpApp, DccpConfig};
use airlink_transport::{
    DccpEndpoint, DeviceLimit, DeviceLimitConfig, IperfReceiver, Role, TcpConfig, TcpEndpoint,
    UdpSender, UdpSourceConfig,
};
use harness::{LinkConfig, Pipe};
use std::collections::VecDeque;

const LIMIT_BPS: u64 = 3_000_000;

fn secs(x: u64) -> Instant {
    Instant::from_millis(1000 * x)
}

fn device() -> DeviceLimit {
    DeviceLimit::new(DeviceLimitConfig::new(None, Some(LIMIT_BPS))).unwrap()
}

#[test]
fn udp_beyond_the_device_limit_is_lost_at_the_sender_and_counted_lost_by_iperf() {
    // 512-byte datagrams (540 B on the wire) at 12 Mbit/s of payload for 30 s, a 3 Mbit/s
    // host, a lossless 20 ms path.
    let cfg = UdpSourceConfig {
        stop: Some(secs(30)),
        ..UdpSourceConfig::cbr(512, 12_000_000)
    };
    let mut tx = UdpSender::new(cfg).unwrap();
    let mut dev = device();
    let delay = Duration::from_millis(20);
    let mut path = VecDeque::new();
    let mut rx = IperfReceiver::new(Some(Duration::from_secs(1)));
    while let Some(now) = [tx.poll_timeout(), path.front().map(|p: &(Instant, _)| p.0)]
        .into_iter()
        .flatten()
        .min()
    {
        while path.front().is_some_and(|p: &(Instant, _)| p.0 <= now) {
            let (_, d) = path.pop_front().unwrap();
            rx.handle_datagram(now, &d);
        }
        while let Some(d) = tx.poll_transmit(now) {
            if let Some(leave) = dev.offer(now, d.wire_len()) {
                path.push_back((leave + delay, d));
            }
        }
    }
    let t = rx.totals();
    let sent = tx.stats().datagrams_sent;
    let s = dev.stats();
    assert_eq!(s.packets_accepted + s.packets_refused, sent);
    assert_eq!(t.received, s.packets_accepted);
    // iperf counts every id up to the highest received: the refused ones show as lost.
    assert!(
        t.datagrams + 4 >= sent && t.lost + 4 >= s.packets_refused,
        "{t:?} {s:?}"
    );
    assert_eq!(t.datagrams, t.received + t.lost);
    // The host passes 3 Mbit/s of 540-byte packets of the 12.66 Mbit/s offered: 76.3 % lost.
    let expected = 1.0 - LIMIT_BPS as f64 / (12e6 * 540.0 / 512.0);
    let lost = t.lost as f64 / t.datagrams as f64;
    assert!(
        (lost - expected).abs() < 0.002,
        "lost {lost}, expected {expected}"
    );
    let goodput = 8.0 * 512.0 * t.received as f64 / 30.0;
    assert!(
        (goodput / (LIMIT_BPS as f64 * 512.0 / 540.0) - 1.0).abs() < 0.01,
        "goodput {goodput}"
    );
}

#[test]
fn tcp_behind_the_device_limit_blocks_and_gets_the_limit_without_loss() {
    // A bulk download from a 3 Mbit/s server over a lossless 20 ms, 100 Mbit/s path.
    let mut server = TcpEndpoint::new(TcpConfig::default(), Role::Server);
    let mut client = TcpEndpoint::new(TcpConfig::default(), Role::Client);
    let mut down = Pipe::new(
        LinkConfig::delay(Duration::from_millis(20)).rate(100_000_000),
        RngStream::derive(1, "down"),
    );
    let mut up = Pipe::new(
        LinkConfig::delay(Duration::from_millis(20)).rate(100_000_000),
        RngStream::derive(1, "up"),
    );
    let mut dev = device();
    let mut now = Instant::ZERO;
    server.send(now, 1 << 40);
    client.connect(now);
    let mut at_5s = None;
    while now < secs(30) {
        while let Some(seg) = client.poll_transmit(now) {
            up.push(now, seg);
        }
        // The sender takes a segment only when the host has room for it.
        while dev.has_room(now) {
            let Some(seg) = server.poll_transmit(now) else {
                break;
            };
            let leave = dev.offer(now, seg.wire_len()).expect("room");
            down.push(leave, seg);
        }
        while client.poll_event().is_some() {}
        while server.poll_event().is_some() {}
        let next = [
            down.next_due(),
            up.next_due(),
            client.poll_timeout(),
            dev.sender_wake(now, server.poll_timeout()),
        ];
        now = now.max(
            next.into_iter()
                .flatten()
                .min()
                .expect("a bulk transfer never goes quiet"),
        );
        if at_5s.is_none() && now >= secs(5) {
            at_5s = Some(client.stats().bytes_delivered);
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
        if dev
            .sender_wake(now, server.poll_timeout())
            .is_some_and(|t| t <= now)
        {
            server.handle_timeout(now);
        }
    }
    let goodput = 8.0 * (client.stats().bytes_delivered - at_5s.unwrap()) as f64 / 25.0;
    let smss = server.smss() as f64;
    // 3 Mbit/s of IP packets carry 3 × MSS / (MSS + headers) Mbit/s of data.
    let expected = LIMIT_BPS as f64 * smss / (smss + 52.0);
    assert!(
        (goodput / expected - 1.0).abs() < 0.03,
        "goodput {goodput}, expected {expected}"
    );
    assert_eq!(server.stats().retransmitted_segments, 0);
    assert_eq!(
        (dev.stats().packets_refused, down.dropped, up.dropped),
        (0, 0, 0)
    );
}

#[test]
fn dccp_behind_the_device_limit_blocks_and_gets_the_limit_without_loss() {
    for ccid in [Ccid::TcpLike, Ccid::Tfrc] {
        // A greedy 512-byte DCCP sender on a 3 Mbit/s client, a lossless 20 ms path.
        let cfg = DccpConfig {
            ccid,
            app: DccpApp::Greedy { payload: 512 },
            ..Default::default()
        };
        let mut client = DccpEndpoint::new(cfg, Role::Client);
        let mut server = DccpEndpoint::new(
            DccpConfig {
                ccid,
                ..Default::default()
            },
            Role::Server,
        );
        let delay = Duration::from_millis(20);
        let (mut up, mut down): (VecDeque<(Instant, _)>, VecDeque<(Instant, _)>) =
            (VecDeque::new(), VecDeque::new());
        let mut dev = device();
        let mut now = Instant::ZERO;
        client.connect(now);
        let mut at_10s = None;
        while now < secs(40) {
            while dev.has_room(now) {
                let Some(p) = client.poll_transmit(now) else {
                    break;
                };
                let leave = dev.offer(now, p.wire_len()).expect("room");
                up.push_back((leave + delay, p));
            }
            while let Some(p) = server.poll_transmit(now) {
                down.push_back((now + delay, p));
            }
            while client.poll_event().is_some() {}
            while server.poll_event().is_some() {}
            let next = [
                up.front().map(|p| p.0),
                down.front().map(|p| p.0),
                dev.sender_wake(now, client.poll_timeout()),
                server.poll_timeout(),
            ];
            now = now.max(
                next.into_iter()
                    .flatten()
                    .min()
                    .expect("a greedy sender never goes quiet"),
            );
            if at_10s.is_none() && now >= secs(10) {
                at_10s = Some(server.stats().payload_bytes_delivered);
            }
            while up.front().is_some_and(|p| p.0 <= now) {
                server.handle_packet(now, &up.pop_front().unwrap().1);
            }
            while down.front().is_some_and(|p| p.0 <= now) {
                client.handle_packet(now, &down.pop_front().unwrap().1);
            }
            if dev
                .sender_wake(now, client.poll_timeout())
                .is_some_and(|t| t <= now)
            {
                client.handle_timeout(now);
            }
            if server.poll_timeout().is_some_and(|t| t <= now) {
                server.handle_timeout(now);
            }
        }
        let goodput =
            8.0 * (server.stats().payload_bytes_delivered - at_10s.unwrap()) as f64 / 30.0;
        let wire = client.stats().wire_bytes_sent as f64 / client.stats().data_packets_sent as f64;
        let expected = LIMIT_BPS as f64 * 512.0 / wire;
        println!("{ccid:?}: {goodput:.0} bit/s, expected {expected:.0}");
        assert!(
            (goodput / expected - 1.0).abs() < 0.05,
            "{ccid:?}: goodput {goodput}, expected {expected}"
        );
        assert_eq!(
            (
                server.stats().data_lost,
                client.stats().queue_drops,
                dev.stats().packets_refused
            ),
            (0, 0, 0),
            "{ccid:?}"
        );
    }
}
