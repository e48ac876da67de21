//! BBR v1 in the two-endpoint harness: its documented properties on a 10 Mbit/s, 40 ms RTT
//! path (Cardwell et al. 2016; Linux `tcp_bbr.c`).

mod harness;

use airlink_engine::{Duration, Instant};
use airlink_transport::{CongestionConfig, ControllerProbe, TcpConfig};
use harness::{LinkConfig, LoggedFactory, Pair};
use std::sync::Arc;

const RATE_BPS: u64 = 10_000_000;
const MSS: f64 = 1460.0;
/// The bottleneck's payload rate, bytes/s (IP packets of MSS + 40 bytes).
const PAYLOAD_RATE: f64 = RATE_BPS as f64 / 8.0 * MSS / (MSS + 40.0);
const RTT: f64 = 0.040;
const BDP: f64 = PAYLOAD_RATE * RTT;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn cfg(cc: CongestionConfig) -> TcpConfig {
    TcpConfig {
        rwnd: u32::MAX,
        initial_window: Some(10),
        congestion: cc,
        ..TcpConfig::default()
    }
}

/// A bulk download for `secs` over a 10 Mbit/s bottleneck of `queue` packets with random
/// loss `loss`, 20 ms each way.
fn bulk(
    cc: CongestionConfig,
    down: LinkConfig,
    secs: u64,
    seed: u64,
) -> (Pair, Arc<LoggedFactory>) {
    let up = LinkConfig::delay(ms(20));
    let mut p = Pair::new(cfg(cc.clone()), cfg(cc.clone()), up, down, seed);
    let log = p.log_server(cfg(cc));
    p.record = true;
    p.download(u64::MAX / 4);
    p.run(Instant::from_millis(secs * 1000), u64::MAX);
    (p, log)
}

fn bottleneck(queue: usize, loss: f64) -> LinkConfig {
    LinkConfig {
        queue_packets: queue,
        loss,
        ..LinkConfig::delay(ms(20)).rate(RATE_BPS)
    }
}

/// Payload bytes/s the client received between `a` and `b` seconds.
fn goodput(p: &Pair, a: f64, b: f64) -> f64 {
    let at = |t: f64| {
        let t = Instant::from_nanos((t * 1e9) as u64);
        let i = p.client_app.deliveries.partition_point(|&(x, _)| x <= t);
        if i == 0 {
            0
        } else {
            p.client_app.deliveries[i - 1].1
        }
    };
    (at(b) - at(a)) as f64 / (b - a)
}

fn probes(log: &LoggedFactory) -> Vec<(Instant, ControllerProbe)> {
    log.probes.lock().unwrap().clone()
}

/// Deep buffer (4 BDP): STARTUP finds the pipe full after the bandwidth stopped growing for
/// three rounds; cwnd grows by the data acknowledged (doubling per round, as `bbr_set_cwnd`
/// does before the pipe is full), so the delivery rate reaches the bottleneck in round
/// ⌈log2(BDP/IW)⌉ + 1 and the pipe is found full three rounds later, ≈ log2(BDP/IW) + 4
/// (the 2.89 pacing gain is not what limits the early rounds: log_2.89(BDP/IW) + 3 ≈ 4.1
/// would need cwnd to grow 2.89× per round). DRAIN empties the queue STARTUP built, and in
/// PROBE_BW each 5/4 phase adds 0.25 BDP to the queue per min RTT it lasts (at least one,
/// and until inflight reaches 5/4 BDP plus the quantum budget: 0.25–0.45 BDP), the rest of the cycle keeping
/// only the send-quantum allowance (3 quanta of 2 segments, ≈ 0.18 BDP here), with the link
/// busy (goodput ≥ 90 %).
#[test]
fn startup_drain_probe_bw_on_a_deep_buffer() {
    let queue = (4.0 * BDP / MSS) as usize;
    let cc = CongestionConfig::Bbr;
    let mut p = Pair::new(
        cfg(cc.clone()),
        cfg(cc.clone()),
        LinkConfig::delay(ms(20)),
        bottleneck(queue, 0.0),
        1,
    );
    let log = p.log_server(cfg(cc));
    p.record = true;
    p.download(u64::MAX / 4);
    // (time, packets queued at the bottleneck, mode, pacing gain) after every step.
    let mut trace = Vec::new();
    while p.now < Instant::from_millis(20_000) && p.step() {
        let pr = p.server.controller().probe();
        trace.push((p.now, p.down.backlog(p.now) as f64, pr.mode, pr.pacing_gain));
    }
    let probes = probes(&log);
    let first = |mode: &str| probes.iter().find(|(_, pr)| pr.mode == Some(mode));
    let (t_drain, drain) = first("drain").expect("DRAIN entered");
    let (t_bw, _) = first("probe_bw").expect("PROBE_BW entered");
    let rounds = drain.rounds.unwrap() as f64;
    let expect = (BDP / (10.0 * MSS)).log2() + 4.0;
    eprintln!(
        "full pipe in round {rounds} (expected ≈ {expect:.2}) at {t_drain}; PROBE_BW at {t_bw}"
    );
    assert!(
        rounds >= expect.floor() && rounds <= expect.ceil() + 1.0,
        "full pipe in round {rounds}, expected about {expect:.2}"
    );
    assert!(*t_bw < *t_drain + ms(200), "DRAIN lasted till {t_bw}");
    // The bandwidth estimate is the bottleneck's payload rate.
    let bw = probes.last().unwrap().1.bandwidth.unwrap();
    assert!(
        (bw / PAYLOAD_RATE - 1.0).abs() < 0.02,
        "bw {bw}, want {PAYLOAD_RATE}"
    );
    // Queue in PROBE_BW, in BDPs: the rise over each 5/4 phase, the mean elsewhere.
    let bdp_pkts = BDP / MSS;
    let mut rises = Vec::new();
    let (mut cruise_sum, mut cruise_n) = (0.0, 0.0);
    let mut phase_start: Option<f64> = None;
    let mut phase_max = 0.0f64;
    for &(t, q, mode, gain) in &trace {
        if t < *t_bw + ms(1000) || mode != Some("probe_bw") {
            continue;
        }
        if gain == Some(1.25) {
            let s = *phase_start.get_or_insert(q);
            phase_max = phase_max.max(q - s);
        } else {
            if phase_start.take().is_some() {
                rises.push(phase_max / bdp_pkts);
                phase_max = 0.0;
            }
            cruise_sum += q;
            cruise_n += 1.0;
        }
    }
    let cruise = cruise_sum / cruise_n / bdp_pkts;
    let mean_rise = rises.iter().sum::<f64>() / rises.len() as f64;
    eprintln!(
        "PROBE_BW: {} probes, queue rise {mean_rise:.3} BDP per 5/4 phase (min {:.3}, max {:.3}), mean queue {cruise:.3} BDP otherwise",
        rises.len(),
        rises.iter().cloned().fold(f64::MAX, f64::min),
        rises.iter().cloned().fold(0.0, f64::max)
    );
    assert!(rises.len() > 40);
    assert!((0.25..=0.45).contains(&mean_rise), "rise {mean_rise} BDP");
    assert!(cruise < 0.25, "queue between probes {cruise} BDP");
    let g = goodput(&p, 2.0, 20.0);
    eprintln!("goodput {:.3} of the bottleneck", g / PAYLOAD_RATE);
    assert!(g >= 0.9 * PAYLOAD_RATE, "goodput {g} B/s");
}

/// Shallow buffer (0.25 BDP) and 1 % random loss: BBR v1 does not take loss as a congestion
/// signal (its rate follows the delivery rate), so goodput stays ≥ 80 % of the bottleneck,
/// while CUBIC's window is cut at every loss (≈ 1.22/√p segments per RTT for Reno's law).
#[test]
fn bbr_keeps_goodput_under_random_loss_where_cubic_collapses() {
    let queue = (0.25 * BDP / MSS).round() as usize;
    let (bbr, _) = bulk(CongestionConfig::Bbr, bottleneck(queue, 0.01), 30, 3);
    let (cubic, _) = bulk(
        CongestionConfig::from_name("cubic").unwrap(),
        bottleneck(queue, 0.01),
        30,
        3,
    );
    let gb = goodput(&bbr, 5.0, 30.0) / PAYLOAD_RATE;
    let gc = goodput(&cubic, 5.0, 30.0) / PAYLOAD_RATE;
    eprintln!(
        "1 % loss, {queue}-packet queue: goodput BBR {gb:.3}, CUBIC {gc:.3} of the bottleneck"
    );
    assert!(gb >= 0.8, "BBR {gb}");
    assert!(gc < 0.6, "CUBIC {gc}");
}

/// On a path whose RTT never falls below its first samples, the min-RTT filter expires every
/// 10 s (plus the time PROBE_RTT takes): PROBE_RTT comes about every 10.2 s, holds cwnd at
/// 4 packets for at least 200 ms, then PROBE_BW resumes.
#[test]
fn probe_rtt_every_ten_seconds() {
    let (_, log) = bulk(CongestionConfig::Bbr, bottleneck(1000, 0.0), 45, 2);
    let probes = probes(&log);
    let mut entries = Vec::new();
    let mut exits = Vec::new();
    for w in probes.windows(2) {
        let (a, b) = (w[0].1.mode, w[1].1.mode);
        if a != Some("probe_rtt") && b == Some("probe_rtt") {
            entries.push(w[1].0);
        }
        if a == Some("probe_rtt") && b != Some("probe_rtt") {
            exits.push(w[1].0);
            assert_eq!(b, Some("probe_bw"));
        }
    }
    eprintln!("PROBE_RTT entered at {entries:?}, left at {exits:?}");
    assert!(entries.len() >= 3, "{entries:?}");
    assert!(entries[0] > Instant::from_millis(10_000) && entries[0] < Instant::from_millis(10_500));
    for w in entries.windows(2) {
        let gap = w[1].saturating_since(w[0]).as_secs_f64();
        assert!((10.0..10.6).contains(&gap), "PROBE_RTT {gap} s apart");
    }
    for (a, b) in entries.iter().zip(&exits) {
        let d = b.saturating_since(*a).as_secs_f64();
        assert!((0.2..0.4).contains(&d), "PROBE_RTT lasted {d} s");
    }
}

/// A token-bucket policer at 2 Mbit/s in front of the 10 Mbit/s bottleneck: loss ≥ 20 % over
/// intervals of 4+ rounds at a steady rate makes BBR use its long-term bandwidth (`lt_bw`),
/// which is the policer's rate.
#[test]
fn policer_triggers_long_term_bandwidth() {
    let police_bps = 2_000_000u64;
    let down = LinkConfig {
        police: Some((police_bps, 30_000)),
        ..bottleneck(1000, 0.0)
    };
    let (p, log) = bulk(CongestionConfig::Bbr, down, 20, 4);
    let probes = probes(&log);
    let lt = probes
        .iter()
        .find_map(|(t, pr)| pr.lt_bandwidth.map(|b| (*t, b)));
    let (t, lt_bw) = lt.expect("lt_bw in use");
    let police_payload = police_bps as f64 / 8.0 * MSS / (MSS + 40.0);
    eprintln!(
        "lt_bw {:.0} B/s from {t} (policer {police_payload:.0} B/s payload); policed {} packets",
        lt_bw, p.down.policed
    );
    assert!((lt_bw / police_payload - 1.0).abs() < 0.15, "lt_bw {lt_bw}");
    let g = goodput(&p, 5.0, 20.0);
    assert!(g >= 0.85 * police_payload, "goodput {g}");
}
