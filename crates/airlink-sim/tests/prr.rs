//! PRR's reduction bound (RFC 9937) under a drop rate that does not let up: behind PIE, which
//! raises its drop probability for as long as the queue stays above its reference delay, a
//! sender that keeps sending twice what gets through is never told otherwise. With RFC 6937's
//! unconditional slow-start bound airlink's NewReno did exactly that (54,203 segments sent for
//! 24,913 through a 10 Mbit/s link in 30 s, PIE dropping 54 %); with RFC 9937's conservative
//! bound (the extra segment only on an ACK that advances SND.UNA with no new loss, as Linux)
//! it sends what gets through, and PIE drops about 1 in 25 (ns-3's NewReno behind ns-3's PIE
//! on the same path: 107 drops, `airlink validate aqm`).
use airlink_scenario::Scenario;
use airlink_sim::Simulation;

#[test]
fn a_sender_behind_pie_sends_what_gets_through() {
    let text = r#"
seed = 1
stop = "30 s"
tcp_preset = "linux"
sample_interval = "0 s"
[downlink.pipe]
rate = "10 Mbit/s"
delay = "20 ms"
queue = 1000
aqm = "pie"
[uplink.pipe]
delay = "20 ms"
[[flow]]
congestion = "newreno"
"#;
    let s = Scenario::from_toml(text, "prr.toml").unwrap();
    let mut sim = Simulation::new(&s, false).unwrap();
    sim.run();
    let summary = sim.summary();
    let down = summary.links.iter().find(|l| l.name == "downlink").unwrap();
    let flow = &summary.flows[0];
    let sent_per_through = flow.segments_sent as f64 / down.packets_out as f64;
    let drop_share = down.queue_drops as f64 / down.packets_in as f64;
    assert!(
        sent_per_through < 1.1,
        "{sent_per_through} ({flow:?}, {down:?})"
    );
    assert!(drop_share < 0.05, "{drop_share} ({down:?})");
    // And the link stays busy: PRR's conservative bound does not starve it.
    assert!(flow.goodput_bps.unwrap() > 8.5e6, "{flow:?}");
}
