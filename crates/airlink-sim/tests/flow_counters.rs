//! Per-flow loss counters named for what they count: link losses attributed to each flow by
//! the simulator, retransmissions, spurious retransmissions counted at the receiver.
use airlink_scenario::Scenario;
use airlink_sim::{Simulation, Summary};

fn run(text: &str) -> Summary {
    let s = Scenario::from_toml(text, "counters.toml").unwrap();
    let mut sim = Simulation::new(&s, false).unwrap();
    sim.run();
    sim.summary()
}

/// Two TCP flows (CUBIC and NewReno) and a UDP stream through one lossy, congested
/// bottleneck, each with its own access links: the flows' link losses add up to every drop
/// of every link, and a TCP flow retransmits about as many segments as it lost (none of
/// its ACKs are lost: the uplink is lossless), few of them spurious.
#[test]
fn link_losses_are_attributed_to_flows() {
    let s = run(r#"
stop = "60 s"
sample_interval = "0 s"
[access]
rate = "100 Mbit/s"
delay = "1 ms"
[wired]
delay = "10 ms"
[downlink.pipe]
rate = "4 Mbit/s"
delay = "100 ms"
queue = 60
loss = 0.01
[uplink.pipe]
rate = "4 Mbit/s"
delay = "100 ms"
[[flow]]
congestion = "cubic"
[flow.tcp]
rwnd = "1 MB"
[[flow]]
congestion = "newreno"
[flow.tcp]
rwnd = "1 MB"
[[flow]]
protocol = "udp"
rate = "500 kbit/s"
"#);
    let drops: u64 = s
        .links
        .iter()
        .map(|l| l.queue_drops + l.loss_drops + l.checksum_drops)
        .sum();
    let attributed: u64 = s.flows.iter().map(|f| f.link_losses.unwrap()).sum();
    assert_eq!(attributed, drops);
    for f in &s.flows[..2] {
        let lost = f.link_losses.unwrap();
        assert!(lost >= 20, "{f:?}");
        assert!(
            f.retransmissions >= lost * 9 / 10 && f.retransmissions <= lost * 11 / 10 + 2,
            "{f:?}"
        );
        assert!(
            f.spurious_retransmissions <= f.retransmissions - lost.min(f.retransmissions) + 2,
            "{f:?}"
        );
    }
    let udp = &s.flows[2];
    assert_eq!(udp.retransmissions, 0);
    assert_eq!(
        udp.link_losses,
        udp.iperf.as_ref().map(|i| i.lost),
        "a CBR stream's losses are iperf's"
    );
}
