//! General topologies in simulation: the shorthand chain written out as hosts and links runs
//! the very same run, and a dumbbell shares its bottleneck as TCP theory says.
use airlink_scenario::{HostConfig, LinkConfig, LinkModel, Scenario};
use airlink_sim::Simulation;

const VALIDATION: &str = include_str!("../../../scenarios/wipemu/validation.toml");
const DUMBBELL_RTT: &str = include_str!("../../../scenarios/topology/dumbbell-rtt.toml");

fn summary_json(s: &Scenario) -> String {
    let mut sim = Simulation::new(s, false).unwrap();
    sim.run();
    sim.summary_json()
}

/// The resolved shorthand scenario rewritten in the general form, link for link.
fn general_form(shorthand: &Scenario) -> Scenario {
    let r = airlink_net::build::resolve(shorthand).unwrap();
    let mut g = r.clone();
    let (wired, down, up) = (
        r.wired.clone().unwrap(),
        r.downlink.clone().unwrap(),
        r.uplink.clone().unwrap(),
    );
    (g.wired, g.downlink, g.uplink) = (None, None, None);
    for host in ["server", "gateway", "client"] {
        g.host.insert(host.into(), HostConfig::default());
    }
    let link = |from: &str, to: &str, model: LinkModel| {
        let mut l = LinkConfig {
            from: from.into(),
            to: to.into(),
            pipe: None,
            gprs: None,
            trace: None,
            ofdm4g: None,
            cell: None,
            wlan: None,
            leo: None,
            impair: None,
            netem: None,
        };
        match model {
            LinkModel::Pipe(p) => l.pipe = Some(p),
            LinkModel::Gprs(g) => l.gprs = Some(g),
            LinkModel::Trace(t) => l.trace = Some(t),
            LinkModel::Ofdm4g(o) => l.ofdm4g = Some(o),
            LinkModel::Cell(c) => l.cell = Some(c),
            LinkModel::Wlan(w) => l.wlan = Some(w),
            LinkModel::Leo(x) => l.leo = Some(x),
        }
        l
    };
    g.link.insert(
        "wired.down".into(),
        link("server", "gateway", LinkModel::Pipe(wired.clone())),
    );
    g.link
        .insert("downlink".into(), link("gateway", "client", down));
    g.link
        .insert("uplink".into(), link("client", "gateway", up));
    g.link.insert(
        "wired.up".into(),
        link("gateway", "server", LinkModel::Pipe(wired)),
    );
    g
}

#[test]
fn the_shorthand_written_out_as_hosts_and_links_is_the_same_run() {
    let s = Scenario::from_toml(VALIDATION, "validation.toml")
        .unwrap()
        .with_overrides(&["flow.0.bytes=400 kB".into()])
        .unwrap();
    let g = general_form(&s);
    assert!(g.is_general() && g.topology().is_ok());
    assert_eq!(summary_json(&s), summary_json(&g));
}

#[test]
fn the_shorter_round_trip_takes_the_larger_share_of_a_dumbbell() {
    for seed in 1..=3 {
        let s = Scenario::from_toml(DUMBBELL_RTT, "dumbbell-rtt.toml")
            .unwrap()
            .with_overrides(&[format!("seed={seed}")])
            .unwrap();
        let mut sim = Simulation::new(&s, false).unwrap();
        sim.run();
        let sum = sim.summary();
        let goodput = |i: usize| sum.flows[i].goodput_bps.unwrap();
        let (near, far) = (goodput(0), goodput(1));
        // Together they fill the bottleneck ...
        assert!(
            near + far > 0.9 * 10e6 * 1460.0 / 1500.0,
            "seed {seed}: {near} + {far}"
        );
        // ... and the 20 ms flow gets more than the 110 ms one (CUBIC's RTT-independent growth
        // narrows the gap Reno's 1/RTT law would give, but does not close it).
        assert!(near > 1.2 * far, "seed {seed}: near {near}, far {far}");
        let names: Vec<&str> = sum.links.iter().map(|l| l.name).collect();
        assert_eq!(
            names,
            [
                "near-in",
                "near-out",
                "far-in",
                "far-out",
                "bottleneck",
                "return"
            ]
        );
        // Each server's link carries its own flow's segments, and nothing else.
        assert_eq!(
            sum.links[0].packets_in, sum.flows[0].segments_sent,
            "seed {seed}"
        );
        assert_eq!(
            sum.links[2].packets_in, sum.flows[1].segments_sent,
            "seed {seed}"
        );
    }
}

const RATE_STEP: &str = include_str!("../../../scenarios/topology/rate-step.toml");
const HANDOFF: &str = include_str!("../../../scenarios/topology/handoff.toml");

/// Bytes delivered to the client between two instants (s), from the flow series.
fn delivered_between(text: &str, overrides: &[&str], from_s: f64, to_s: f64) -> f64 {
    let s = Scenario::from_toml(text, "t.toml")
        .unwrap()
        .with_overrides(&overrides.iter().map(|o| o.to_string()).collect::<Vec<_>>())
        .unwrap();
    let mut sim = Simulation::new(&s, true).unwrap();
    sim.run();
    let tables = sim.recorder().drain();
    let flows = &tables.iter().find(|(name, _)| *name == "flows").unwrap().1;
    let col = |name: &str| match &flows.columns.iter().find(|(n, _)| *n == name).unwrap().1 {
        airlink_net::metrics::Column::U64(v) => v.clone(),
        _ => panic!("{name} is not u64"),
    };
    let (time, delivered) = (col("time_ns"), col("delivered_bytes"));
    let at = |t: f64| delivered[time.iter().position(|&ns| ns as f64 >= t * 1e9).unwrap()] as f64;
    at(to_s) - at(from_s)
}

#[test]
fn throughput_follows_a_rate_step_within_a_few_round_trips() {
    // 10 Mbit/s, 2 Mbit/s from 20 s, 10 Mbit/s from 40 s; the round trip is 60 ms plus queueing
    // (100 packets: 0.12 s at 10 Mbit/s, 0.6 s at 2 Mbit/s).
    let payload = 1448.0 / 1500.0;
    let rate = |a: f64, b: f64| delivered_between(RATE_STEP, &[], a, b) * 8.0 / (b - a);
    let before = rate(15.0, 20.0);
    let low = rate(21.0, 40.0);
    let after = rate(41.0, 60.0);
    assert!(before > 0.9 * 10e6 * payload, "{before}");
    // After the step the queue drains at the new rate within a second, then holds it.
    assert!((0.9 * 2e6 * payload..2e6).contains(&low), "{low}");
    assert!(after > 0.9 * 10e6 * payload, "{after}");
    // One second after the fall, the rate is already the new one.
    assert!(rate(20.7, 21.0) < 2.2e6);
}

#[test]
fn a_handoff_loses_what_the_old_link_held_unless_it_is_kept() {
    let run = |overrides: &[&str]| {
        let s = Scenario::from_toml(HANDOFF, "h.toml")
            .unwrap()
            .with_overrides(&overrides.iter().map(|o| o.to_string()).collect::<Vec<_>>())
            .unwrap();
        let mut sim = Simulation::new(&s, false).unwrap();
        sim.run();
        sim.summary()
    };
    let lost = run(&[]);
    let link = |s: &airlink_sim::Summary, name: &str| {
        s.links.iter().find(|l| l.name == name).unwrap().clone()
    };
    // Access point 1 held a queue and packets in flight when it went down: all lost, and they
    // are the flow's link losses together with the queue drops.
    let ap1 = link(&lost, "ap1-down");
    assert!(ap1.outage_drops > 20, "{}", ap1.outage_drops);
    let queue_drops: u64 = lost.links.iter().map(|l| l.queue_drops).sum();
    let outages: u64 = lost.links.iter().map(|l| l.outage_drops).sum();
    assert_eq!(lost.flows[0].link_losses, Some(queue_drops + outages));
    // The flow goes on over access point 2 at its lower rate.
    assert!(link(&lost, "ap2-down").packets_out > 5000);
    // Kept: nothing is lost to the outage; the held packets reach the phone when the link is
    // back at 30 s, the stop: so the losses are only the queues'.
    let kept = run(&["change.0.packets=\"kept\"", "change.1.packets=\"kept\""]);
    assert_eq!(kept.links.iter().map(|l| l.outage_drops).sum::<u64>(), 0);
    assert_eq!(
        kept.flows[0].link_losses,
        Some(kept.links.iter().map(|l| l.queue_drops).sum())
    );
}

#[test]
fn a_tcp_flow_that_stops_delivers_what_it_sent_and_logs_its_start_and_stop() {
    let overrides = [
        "stop=\"30 s\"",
        "change=[]",
        "flow.0.start=\"1 s\"",
        "flow.0.stop=\"10 s\"",
    ];
    // Nothing new after the stop: what arrives later is what was in flight or queued then
    // (at most the queue of 100 packets and a window in flight).
    assert!(
        delivered_between(RATE_STEP, &overrides, 2.0, 10.0)
            > 0.9 * 8.0 * 10e6 / 8.0 * 1448.0 / 1500.0
    );
    let tail = delivered_between(RATE_STEP, &overrides, 10.0, 30.0);
    assert!(tail < 250.0 * 1500.0, "{tail} bytes after the stop");
    let s = Scenario::from_toml(RATE_STEP, "t.toml")
        .unwrap()
        .with_overrides(&overrides.map(String::from))
        .unwrap();
    let mut sim = Simulation::new(&s, true).unwrap();
    sim.run();
    let sum = sim.summary();
    // The connection closed: everything the application wrote was delivered.
    assert!(sum.flows[0].completed);
    let tables = sim.recorder().drain();
    let events = &tables.iter().find(|(name, _)| *name == "events").unwrap().1;
    let column = |name: &str| {
        events
            .columns
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1
            .clone()
    };
    let (airlink_net::metrics::Column::Str(kinds), airlink_net::metrics::Column::U64(times)) =
        (column("kind"), column("time_ns"))
    else {
        panic!("event columns");
    };
    let logged: Vec<(&str, u64)> = kinds
        .iter()
        .zip(&times)
        .filter(|(k, _)| k.starts_with("flow_"))
        .map(|(k, t)| (*k, *t))
        .collect();
    assert_eq!(
        logged,
        [("flow_start", 1_000_000_000), ("flow_stop", 10_000_000_000)]
    );
}

const WIPEMU_ADAPTIVE: &str = include_str!("../../../scenarios/wipemu/adaptive.toml");

/// The sampled SNR of the downlink (dB), by sample.
fn downlink_snr(overrides: &[&str]) -> Vec<(u64, f64)> {
    let s = Scenario::from_toml(WIPEMU_ADAPTIVE, "a.toml")
        .unwrap()
        .with_overrides(&overrides.iter().map(|o| o.to_string()).collect::<Vec<_>>())
        .unwrap();
    let mut sim = Simulation::new(&s, true).unwrap();
    sim.run();
    let tables = sim.recorder().drain();
    let links = &tables.iter().find(|(name, _)| *name == "links").unwrap().1;
    let col = |name: &str| {
        links
            .columns
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1
            .clone()
    };
    use airlink_net::metrics::Column;
    let (Column::U64(time), Column::Str(link), Column::F64(snr)) =
        (col("time_ns"), col("link"), col("snr_db"))
    else {
        panic!("link columns")
    };
    time.iter()
        .zip(&link)
        .zip(&snr)
        .filter(|((_, l), _)| **l == "downlink")
        .map(|((t, _), s)| (*t, *s))
        .collect()
}

#[test]
fn a_mean_snr_change_shifts_the_same_fading_by_its_decibels() {
    let base = ["stop=\"20 s\"", "flow.0.bytes=\"2 MB\""];
    let before = downlink_snr(&base);
    let changed = downlink_snr(&[
        base[0],
        base[1],
        "change=[{at=\"10 s\", link=\"downlink\", set={mean_snr=\"6 dB\"}}]",
    ]);
    assert_eq!(before.len(), changed.len());
    let mut after = 0;
    for ((t, a), (_, b)) in before.iter().zip(&changed) {
        // The channel's draws do not depend on its mean: the same fades, 10 dB lower.
        let shift = if *t >= 10_000_000_000 { -10.0 } else { 0.0 };
        assert!(
            (b - a - shift).abs() < 1e-9,
            "at {t} ns: {a} dB then {b} dB"
        );
        after += (*t >= 10_000_000_000) as usize;
    }
    assert!(after > 50);
}
