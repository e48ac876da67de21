//! ECN end to end (RFC 3168) at a CoDel bottleneck: with `aqm = { kind = "codel", ecn = true }`
//! a CUBIC flow that negotiated ECN is marked instead of dropped, echoes the marks, reduces
//! once per round trip and keeps its goodput; without ECN on the flow the same discipline
//! drops. Figures: `cargo test --release -p airlink-sim --test ecn -- --nocapture`.
use airlink_net::aqm::AqmSummary;
use airlink_scenario::Scenario;
use airlink_sim::{Simulation, Summary};

/// One CUBIC bulk flow over 20 Mbit/s, 40 ms RTT, a 1000-packet buffer under CoDel that marks
/// ECN-capable packets; `ecn` on the flow or not.
fn bottleneck(ecn: bool) -> String {
    format!(
        r#"
seed = 1
stop = "20 s"
sample_interval = "0 s"
[wired]
delay = "15 ms"
[downlink.pipe]
rate = "20 Mbit/s"
delay = "5 ms"
queue = 1000
aqm = {{ kind = "codel", ecn = true }}
[uplink.pipe]
delay = "5 ms"
[[flow]]
congestion = "cubic"
ecn = {ecn}
[flow.tcp]
rwnd = "64 MB"
"#
    )
}

fn run(text: &str) -> Summary {
    let s = Scenario::from_toml(text, "ecn.toml").unwrap();
    let mut sim = Simulation::new(&s, false).unwrap();
    sim.run();
    sim.summary()
}

fn downlink_aqm(s: &Summary) -> AqmSummary {
    let l = s.links.iter().find(|l| l.name == "downlink").unwrap();
    l.aqm.clone().expect("the downlink has a discipline")
}

#[test]
fn codel_marks_an_ecn_flow_instead_of_dropping_it() {
    let (with, without) = (run(&bottleneck(true)), run(&bottleneck(false)));
    let (q_with, q_without) = (downlink_aqm(&with), downlink_aqm(&without));
    let (f_with, f_without) = (&with.flows[0], &without.flows[0]);
    let goodput = |s: &Summary| s.flows[0].goodput_bps.unwrap();
    let ecn = f_with.ecn.clone().expect("an ECN flow reports its counts");
    eprintln!(
        "ecn = true : marks {} aqm drops {} overflow {} | CE received {} ECE reductions {} \
         retransmissions {} | goodput {:.3} Mbit/s | sojourn p50 {:?} ms p95 {:?} ms",
        q_with.aqm_marks,
        q_with.aqm_drops,
        q_with.overflow_drops,
        ecn.ce_marks_received,
        ecn.ece_reductions,
        f_with.retransmissions,
        goodput(&with) / 1e6,
        q_with.sojourn_p50_ms,
        q_with.sojourn_p95_ms,
    );
    eprintln!(
        "ecn = false: marks {} aqm drops {} overflow {} | fast recoveries {} retransmissions {} \
         | goodput {:.3} Mbit/s | sojourn p50 {:?} ms p95 {:?} ms",
        q_without.aqm_marks,
        q_without.aqm_drops,
        q_without.overflow_drops,
        f_without.fast_recoveries,
        f_without.retransmissions,
        goodput(&without) / 1e6,
        q_without.sojourn_p50_ms,
        q_without.sojourn_p95_ms,
    );
    // With ECN: marks, no drops, no loss recovery; every mark reached the receiver and was
    // echoed; a burst of marks within a round trip is one reduction.
    assert!(ecn.negotiated);
    assert!(q_with.aqm_marks > 0, "{q_with:?}");
    assert_eq!(
        (q_with.aqm_drops, q_with.overflow_drops),
        (0, 0),
        "{q_with:?}"
    );
    assert_eq!(ecn.ce_marks_received, q_with.aqm_marks);
    assert!(ecn.ece_reductions > 0 && ecn.ece_reductions <= ecn.ce_marks_received);
    assert_eq!((f_with.retransmissions, f_with.fast_recoveries), (0, 0));
    // Without ECN on the flow the discipline drops: no marks, the sender recovers losses.
    assert!(f_without.ecn.is_none());
    assert_eq!(q_without.aqm_marks, 0);
    assert!(q_without.aqm_drops > 0, "{q_without:?}");
    assert!(f_without.fast_recoveries > 0);
    // CoDel holds the standing queue near its 5-ms target either way, and the goodput is the
    // same within a few per cent.
    assert!(q_with.sojourn_p50_ms.unwrap() < 5.0, "{q_with:?}");
    let ratio = goodput(&with) / goodput(&without);
    assert!((0.97..1.03).contains(&ratio), "goodput ratio {ratio}");
}

/// A flow without ECN writes nothing of it in the summary (the goldens do not move).
#[test]
fn the_summary_mentions_ecn_only_for_flows_that_ask() {
    let s = Scenario::from_toml(&bottleneck(false), "ecn.toml").unwrap();
    let mut sim = Simulation::new(&s, false).unwrap();
    sim.run_until(airlink_engine::Instant::from_millis(500));
    let json = sim.summary_json();
    assert!(!json.contains("ce_marks_received"), "{json}");
    let s = Scenario::from_toml(&bottleneck(true), "ecn.toml").unwrap();
    let mut sim = Simulation::new(&s, false).unwrap();
    sim.run_until(airlink_engine::Instant::from_millis(500));
    let json = sim.summary_json();
    assert!(json.contains("\"negotiated\": true"), "{json}");
}
