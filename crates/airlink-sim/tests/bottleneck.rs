//! The plain bottleneck against independent references: TCP throughput under random loss
//! against the Padhye-Firoiu-Towsley-Kurose (PFTK) formula, and fairness between flows of
//! the same protocol sharing a drop-tail queue.
use airlink_scenario::Scenario;
use airlink_sim::{Simulation, Summary};

fn run(text: &str) -> Summary {
    let s = Scenario::from_toml(text, "bottleneck.toml").unwrap();
    let mut sim = Simulation::new(&s, false).unwrap();
    sim.run();
    sim.summary()
}

/// PFTK (SIGCOMM 1998, eq. 33) in packets per second: p loss probability, b packets acked
/// per ACK, t0 the retransmission timeout, w_max the receiver window in packets.
fn pftk_packets_per_s(p: f64, rtt: f64, b: f64, t0: f64, w_max: f64) -> f64 {
    let denominator = rtt * (2.0 * b * p / 3.0).sqrt()
        + t0 * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p);
    (w_max / rtt).min(1.0 / denominator)
}

/// One greedy flow over a fast link that loses data packets at random with probability
/// `loss`; returns (measured, PFTK) goodput in packets per second.
fn random_loss_run(congestion: &str, loss: f64, one_way_ms: u64, seed: u64) -> (f64, f64) {
    let text = format!(
        r#"
seed = {seed}
stop = "300 s"
sample_interval = "0 s"
# PFTK models RFC 5681's ACK counting with delayed ACKs (b = 2): the classic stack.
tcp_preset = "classic"
[wired]
delay = "{one_way_ms} ms"
[downlink.pipe]
rate = "1 Gbit/s"
loss = {loss}
[uplink.pipe]
[[flow]]
congestion = "{congestion}"
[flow.tcp]
sack = false
rto_min = "200 ms"
rwnd = "64 MB"
"#
    );
    let s = run(&text);
    let f = &s.flows[0];
    let mss = 1460.0;
    let measured = f.bytes_delivered as f64 / mss / (s.sim_time_s - f.start_s);
    // The flow's own timeout: with a constant RTT, RTTVAR decays and the RTO sits at SRTT plus
    // the 200 ms floor on the variance term.
    let rtt = 2.0 * one_way_ms as f64 / 1e3;
    let t0 = rtt + 0.2;
    (
        measured,
        pftk_packets_per_s(loss, rtt, 2.0, t0, f64::INFINITY),
    )
}

/// PFTK's own validation (their Figs. 7-12) shows measured/predicted within roughly 0.7 to
/// 1.4 over this range; the formula ignores slow start and models recovery coarsely, and it
/// takes T0 as given (here SRTT + 200 ms, the RTO of a constant RTT, not its backed-off
/// values, so the formula overestimates a little at high loss, where timeouts dominate).
/// Measured here: 0.70 to 1.00, mean 0.86 (0.66 to 0.99, mean 0.83, before the RTO floor
/// moved to the variance term and the timer restarted on fast retransmit).
/// We hold every point to [0.6, 1.25], the mean to [0.75, 1.1], and NewReno, which recovers
/// several losses per window without a timeout, to at least Reno's throughput.
#[test]
fn reno_and_newreno_under_random_loss_follow_pftk() {
    let mut ratios = Vec::new();
    let mut report = String::new();
    for &one_way in &[25, 100] {
        for &loss in &[0.002, 0.01, 0.03] {
            let mut measured = Vec::new();
            for congestion in ["reno", "newreno"] {
                let (m, pftk) = random_loss_run(congestion, loss, one_way, 1);
                let ratio = m / pftk;
                report += &format!("{congestion} rtt {} ms p {loss}: {m:.1} pkt/s, PFTK {pftk:.1}, ratio {ratio:.3}\n", 2 * one_way);
                ratios.push(ratio);
                measured.push(m);
            }
            assert!(measured[1] >= measured[0], "NewReno below Reno\n{report}");
        }
    }
    println!("{report}");
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    assert!(ratios.iter().all(|r| (0.6..=1.25).contains(r)), "{report}");
    assert!((0.75..=1.1).contains(&mean), "mean ratio {mean}\n{report}");
}

fn jain(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    sum * sum / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>())
}

#[test]
fn jain_index_is_the_textbook_one() {
    // Spec E's vectors.
    assert_eq!(jain(&[1.0, 1.0, 1.0, 1.0]), 1.0);
    assert_eq!(jain(&[1.0, 0.0, 0.0, 0.0]), 0.25);
    assert!((jain(&[3.0, 1.0]) - 0.8).abs() < 1e-12);
    assert!((jain(&[100.0, 200.0, 300.0]) - 0.857143).abs() < 1e-6);
}

/// Two greedy flows of one protocol over a 10 Mbit/s, 40 ms bottleneck with one
/// bandwidth-delay product of drop-tail queue (50 kB), the second starting 2 s later; each
/// flow's goodput over its own lifetime.
fn two_flows(congestion: &str) -> (f64, f64) {
    let text = format!(
        r#"
stop = "120 s"
sample_interval = "0 s"
[access]
rate = "1 Gbit/s"
delay = "1 ms"
[wired]
delay = "19 ms"
[downlink.pipe]
rate = "10 Mbit/s"
queue = "50 kB"
[uplink.pipe]
[[flow]]
congestion = "{congestion}"
[flow.tcp]
rwnd = "4 MB"
[[flow]]
congestion = "{congestion}"
start = "2 s"
[flow.tcp]
rwnd = "4 MB"
"#
    );
    let s = run(&text);
    let rate = |i: usize| s.flows[i].goodput_bps.unwrap();
    (rate(0), rate(1))
}

#[test]
fn two_flows_of_one_protocol_share_a_bottleneck_fairly() {
    for congestion in ["newreno", "cubic"] {
        let (a, b) = two_flows(congestion);
        let j = jain(&[a, b]);
        println!(
            "{congestion}: {:.3} and {:.3} Mbit/s, Jain {j:.4}",
            a / 1e6,
            b / 1e6
        );
        // Together they fill the link (goodput is below 10 Mbit/s by the 40 B of headers
        // per 1500 B and the start-up).
        assert!(a + b > 8.5e6 && a + b < 10e6, "{congestion}: {a} + {b}");
        assert!(j >= 0.95, "{congestion}: Jain {j}");
    }
}
