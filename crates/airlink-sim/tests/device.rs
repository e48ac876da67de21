//! A sending host's own limit (`[flow.device]`, the DCCP study's handhelds): UDP loses what
//! its host cannot send, at the sender, and iperf counts it lost; TCP and DCCP wait for room
//! and lose nothing to it.
use airlink_scenario::Scenario;
use airlink_sim::{Simulation, Summary};

/// A 54 Mbit/s link that never limits; each flow's host serves 3 Mbit/s of IP packets.
fn run(flow: &str) -> Summary {
    let text = format!(
        "stop = \"20 s\"\n[wired]\ndelay = \"5 ms\"\n[downlink.pipe]\nrate = \"54 Mbit/s\"\ndelay = \"1 ms\"\n[[flow]]\n{flow}\n[flow.device]\nrate = \"3 Mbit/s\"\n"
    );
    let s = Scenario::from_toml(&text, "device.toml").unwrap();
    let mut sim = Simulation::new(&s, false).unwrap();
    sim.run();
    sim.summary()
}

#[test]
fn udp_beyond_its_host_is_lost_at_the_sender_and_counted_by_iperf() {
    let sum = run("protocol = \"udp\"\nrate = \"12 Mbit/s\"\npacket_size = \"512 B\"");
    let f = &sum.flows[0];
    let iperf = f.iperf.as_ref().unwrap();
    // The host sends 3 of the 12 Mbit/s offered (540-byte IP packets): three quarters are lost,
    // all of them at the sender, none on the links.
    let offered = 12e6 / (512.0 * 8.0) * 20.0;
    assert!(
        (iperf.datagrams as f64 / offered - 1.0).abs() < 0.01,
        "{} of {offered}",
        iperf.datagrams
    );
    assert!((iperf.loss_pct - 75.0).abs() < 1.5, "{} %", iperf.loss_pct);
    let dropped = f.sender_drops.unwrap();
    // (iperf cannot count the last ones, dropped while the last received were on their way:
    // no later datagram arrived to show them missing; 100 is 34 ms of the offered load.)
    assert!(
        iperf.lost <= dropped && dropped <= iperf.lost + 100,
        "iperf {} lost, host {dropped}",
        iperf.lost
    );
    assert_eq!(
        sum.links
            .iter()
            .map(|l| l.queue_drops + l.loss_drops)
            .sum::<u64>(),
        0
    );
    let expected = 3e6 * 512.0 / 540.0;
    assert!(
        (iperf.throughput_bps / expected - 1.0).abs() < 0.02,
        "{} against {expected}",
        iperf.throughput_bps
    );
}

#[test]
fn tcp_and_dccp_wait_for_their_host_and_lose_nothing_to_it() {
    for (flow, payload) in [
        ("congestion = \"cubic\"", 1448.0 + 0.0),
        ("protocol = \"dccp\"\nccid = 2", 1424.0),
        ("protocol = \"dccp\"\nccid = 3", 1424.0),
    ] {
        let sum = run(flow);
        let f = &sum.flows[0];
        assert_eq!(f.sender_drops, Some(0), "{flow}");
        assert_eq!(f.link_losses, Some(0), "{flow}");
        // Close to the host's rate in payload (the IP packet's headers are the rest).
        let goodput = f.goodput_bps.unwrap();
        assert!(
            goodput > 0.9 * 3e6 * payload / 1500.0 && goodput < 3e6,
            "{flow}: {goodput}"
        );
    }
}

#[test]
fn tcp_held_back_by_its_host_does_not_grow_its_window_beyond_use() {
    // Five minutes behind the 3 Mbit/s host: the sender never fills its window after slow
    // start, so cwnd stays near what it has in flight (it grew by a segment per ACK before).
    for cc in ["reno", "cubic", "veno"] {
        let text = format!(
            "stop = \"300 s\"\nsample_interval = \"1 s\"\n[wired]\ndelay = \"5 ms\"\n[downlink.pipe]\nrate = \"54 Mbit/s\"\ndelay = \"1 ms\"\n[[flow]]\ncongestion = \"{cc}\"\n[flow.device]\nrate = \"3 Mbit/s\"\n"
        );
        let s = Scenario::from_toml(&text, "device.toml").unwrap();
        let mut sim = Simulation::new(&s, true).unwrap();
        sim.run();
        let f = &sim.recorder().flows;
        let cwnd = f.cwnd_bytes.iter().cloned().fold(0.0, f64::max);
        let flight = f.inflight_bytes.iter().cloned().fold(0.0, f64::max);
        println!("{cc}: cwnd ≤ {cwnd} B, in flight ≤ {flight} B");
        assert!(flight > 4000.0, "{cc}: {flight} B in flight");
        assert!(
            cwnd <= 3.0 * flight,
            "{cc}: cwnd {cwnd} B with {flight} B in flight"
        );
        let goodput = sim.summary().flows[0].goodput_bps.unwrap();
        assert!(
            (goodput / (3e6 * 1460.0 / 1500.0) - 1.0).abs() < 0.01,
            "{cc}: {goodput}"
        );
    }
}
