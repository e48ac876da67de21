//! UDP CBR/VBR over the datagram harness with iperf accounting, and DCCP flows measured the
//! same way ([S3] used iperf for both).

mod dgram_harness;

use airlink_engine::{Duration, Instant, RngStream};
use airlink_transport::dccp::{Ccid, DccpApp, DccpConfig, QueuePolicy};
use airlink_transport::{DccpEvent, IperfReceiver, RateCap, UdpSender, UdpSourceConfig};
use dgram_harness::{DccpPair, Pipe, PipeConfig};

fn secs(x: u64) -> Instant {
    Instant::from_millis(1000 * x)
}

/// Runs a UDP sender into `pipe` and an iperf receiver; returns (receiver, pipe, sent).
fn run_udp(
    cfg: UdpSourceConfig,
    pipe: PipeConfig,
    seed: u64,
) -> (IperfReceiver, Pipe<airlink_transport::UdpDatagram>, u64) {
    let mut tx = UdpSender::new(cfg).unwrap();
    let mut pipe = Pipe::new(pipe, RngStream::derive(seed, "udp"));
    let mut rx = IperfReceiver::new(Some(Duration::from_secs(1)));
    loop {
        let next = [tx.poll_timeout(), pipe.next_due(), rx.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        let Some(now) = next else { break };
        while let Some(d) = pipe.pop_due(now) {
            rx.handle_datagram(now, &d);
        }
        while let Some(d) = tx.poll_transmit(now) {
            pipe.push(now, d);
        }
        if rx.poll_timeout().is_some_and(|t| t <= now) {
            rx.handle_timeout(now);
        }
    }
    let sent = tx.stats().datagrams_sent;
    (rx, pipe, sent)
}

#[test]
fn cbr_over_lossless_path_counts_exactly_with_zero_jitter() {
    // [S3]: 1424-byte datagrams; 3 Mbit/s for 10 s over a 6 Mbit/s, 30 ms path.
    let cfg = UdpSourceConfig {
        stop: Some(secs(10)),
        ..UdpSourceConfig::cbr(1424, 3_000_000)
    };
    let pipe = PipeConfig {
        rate_bps: 6_000_000,
        ..PipeConfig::delay(Duration::from_millis(30))
    };
    let (mut rx, _, sent) = run_udp(cfg, pipe, 1);
    let t = rx.totals();
    assert_eq!(sent, 2634, "⌈10 s / 3.797 ms⌉");
    assert_eq!(
        (t.datagrams, t.received, t.lost, t.out_of_order),
        (sent, sent, 0, 0)
    );
    assert_eq!(t.jitter_ms, 0.0);
    let reps: Vec<_> = std::iter::from_fn(|| rx.poll_report()).collect();
    assert_eq!(reps.len(), 12, "data in [0, 11) s, then one quiet interval");
    assert_eq!(reps[11].received, 0);
    assert_eq!(reps.iter().map(|r| r.received).sum::<u64>(), sent);
    for r in &reps[1..9] {
        // 263 or 264 datagrams per second: 3.0 Mbit/s of payload ± one datagram.
        assert!((r.throughput_bps - 3e6).abs() <= 1424.0 * 8.0, "{r:?}");
    }
}

#[test]
fn seeded_loss_is_reported_exactly() {
    let cfg = UdpSourceConfig {
        stop: Some(secs(20)),
        ..UdpSourceConfig::cbr(512, 1_000_000)
    };
    let pipe = PipeConfig {
        loss: 0.03,
        ..PipeConfig::delay(Duration::from_millis(20))
    };
    let (rx, pipe, sent) = run_udp(cfg, pipe, 42);
    let t = rx.totals();
    // Losses after the last datagram received are invisible to iperf (count = highest id).
    let trailing = sent - t.datagrams;
    assert!(pipe.lost_random > 100);
    assert_eq!(t.lost + trailing, pipe.lost_random);
    assert_eq!(t.received + t.lost, t.datagrams);
}

#[test]
fn capped_vbr_sender_falls_behind_its_schedule() {
    // 25 frames/s of 12 kB (2.4 Mbit/s) split into 1400-byte datagrams; the CPU allows
    // 150 datagrams/s, so 9 datagrams × 25 = 225/s of demand is cut to 150/s.
    let cfg = UdpSourceConfig {
        stop: Some(secs(10)),
        cap: Some(RateCap::PacketsPerSec(150.0)),
        ..UdpSourceConfig::vbr(vec![12_000], 25.0, 1400)
    };
    let (rx, _, sent) = run_udp(cfg, PipeConfig::delay(Duration::from_millis(5)), 1);
    assert_eq!(sent, 1500);
    assert_eq!(rx.totals().lost, 0);
}

fn dccp_source(ccid: Ccid, policy: QueuePolicy) -> DccpPair {
    // CBR 2 Mbit/s of 512-byte packets into a 1 Mbit/s bottleneck.
    let cfg = DccpConfig {
        ccid,
        app: DccpApp::Source(UdpSourceConfig {
            stop: Some(secs(30)),
            ..UdpSourceConfig::cbr(512, 2_000_000)
        }),
        queue_policy: policy,
        packet_size: 512,
        ..Default::default()
    };
    let up = PipeConfig {
        rate_bps: 1_000_000,
        queue_packets: 20,
        ..PipeConfig::delay(Duration::from_millis(20))
    };
    let mut p = DccpPair::new(
        cfg,
        DccpConfig::default(),
        up,
        PipeConfig::delay(Duration::from_millis(20)),
        5,
    );
    p.connect();
    p.run(secs(40));
    p
}

fn iperf_of(p: &DccpPair) -> IperfReceiver {
    let mut rx = IperfReceiver::new(None);
    for (t, ev) in &p.server_view.delivered {
        if let DccpEvent::Delivered {
            bytes,
            app: Some(h),
            ..
        } = ev
        {
            rx.record(*t, h.id, h.sent_at, *bytes);
        }
    }
    rx
}

#[test]
fn dccp_send_queue_policies_and_iperf_accounting() {
    for ccid in [Ccid::TcpLike, Ccid::Tfrc] {
        let drop = dccp_source(ccid, QueuePolicy::DropNewest);
        let st = drop.client.stats();
        let it = iperf_of(&drop).totals();
        println!(
            "{ccid:?} drop-newest: offered {}, queue drops {}, link drops {}, iperf {:?}",
            st.app_offered, st.queue_drops, drop.up.lost_queue, it
        );
        assert_eq!(st.app_offered, 14_649, "2 Mbit/s of 512 B for 30 s");
        assert!(st.queue_drops > 5_000, "the CCID holds the source back");
        // iperf at the receiver sees queue drops and link drops as loss (plus the trailing
        // ids dropped after the last delivered one).
        let trailing = st.app_offered - it.datagrams;
        assert_eq!(
            it.lost + trailing,
            st.queue_drops + drop.up.lost_queue + drop.up.lost_random
        );
        assert!(
            it.throughput_bps > 0.6e6 && it.throughput_bps < 1.0e6,
            "{}",
            it.throughput_bps
        );

        let block = dccp_source(ccid, QueuePolicy::Block);
        let st = block.client.stats();
        assert_eq!(st.queue_drops, 0);
        assert!(
            st.app_offered < 10_000,
            "a blocked writer falls behind: {}",
            st.app_offered
        );
        let it = iperf_of(&block).totals();
        assert_eq!(it.lost, block.up.lost_queue, "only the link loses packets");
    }
}
