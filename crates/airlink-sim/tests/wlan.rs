//! The 802.11g WLAN as a scenario link: a shared medium whose stations are hosts, carrying
//! both directions of every flow through it, and stations handing off between access points.
use airlink_link::{bianchi_saturation_bps, WlanParams};
use airlink_scenario::Scenario;
use airlink_sim::Simulation;

const HOSTS: &str = r#"
[host.server]
[host.ap1]
[host.ap2]
[host.sta1]
[host.sta2]

[link.bss1]
from = "ap1"
wlan = { stations = ["sta1", "sta2"] }

[link.bss2]
from = "ap2"
wlan = { stations = [] }

[link.ap1-up]
from = "ap1"
to = "server"
pipe = { rate = "1 Gbit/s", delay = "1 ms" }

[link.ap1-down]
from = "server"
to = "ap1"
pipe = { rate = "1 Gbit/s", delay = "1 ms" }

[link.ap2-up]
from = "ap2"
to = "server"
pipe = { rate = "1 Gbit/s", delay = "1 ms" }

[link.ap2-down]
from = "server"
to = "ap2"
pipe = { rate = "1 Gbit/s", delay = "1 ms" }
"#;

fn scenario(body: &str) -> Scenario {
    Scenario::from_toml(&format!("stop = \"20 s\"\n{HOSTS}{body}"), "wlan.toml")
        .unwrap_or_else(|e| panic!("{e}"))
}

fn run(s: &Scenario) -> airlink_sim::Summary {
    let mut sim = Simulation::new(s, false).unwrap();
    sim.run();
    sim.summary()
}

#[test]
fn two_saturating_udp_stations_share_the_medium_as_bianchi_predicts() {
    // Two stations each offer 40 Mbit/s of 1470-byte datagrams (1498-byte IP packets) up to
    // the wired side: the medium is saturated by two nodes.
    let s = scenario(
        r#"
[[flow]]
protocol = "udp"
server = "sta1"
client = "server"
rate = "40 Mbit/s"
[[flow]]
protocol = "udp"
server = "sta2"
client = "server"
rate = "40 Mbit/s"
"#,
    );
    let sum = run(&s);
    let ip_bps: f64 = sum
        .flows
        .iter()
        .map(|f| f.goodput_bps.unwrap() * 1498.0 / 1470.0)
        .sum();
    let model = bianchi_saturation_bps(&WlanParams::default(), 2, 1498);
    println!(
        "two stations: {:.2} Mbit/s of IP packets, Bianchi {:.2} Mbit/s",
        ip_bps / 1e6,
        model / 1e6
    );
    assert!(
        (ip_bps / model - 1.0).abs() < 0.05,
        "{ip_bps} against {model}"
    );
    let share = sum.flows[0].goodput_bps.unwrap() / sum.flows[1].goodput_bps.unwrap();
    assert!(
        (share - 1.0).abs() < 0.05,
        "DCF is fair between equal stations: {share}"
    );
}

#[test]
fn a_tcp_download_shares_the_medium_with_its_own_acks() {
    let s = scenario(
        r#"
[[flow]]
server = "server"
client = "sta1"
congestion = "cubic"
"#,
    );
    let sum = run(&s);
    let goodput = sum.flows[0].goodput_bps.unwrap();
    // Data alone would get one node's saturation throughput (1500-byte packets, 1448 B of
    // payload each with timestamps); the station's ACKs take part of the air.
    let alone = bianchi_saturation_bps(&WlanParams::default(), 1, 1500) * 1448.0 / 1500.0;
    println!(
        "TCP download {:.2} Mbit/s, data alone {:.2} Mbit/s",
        goodput / 1e6,
        alone / 1e6
    );
    assert!(
        goodput > 0.7 * alone && goodput < 0.95 * alone,
        "{goodput} against {alone}"
    );
    let bss = sum.links.iter().find(|l| l.name == "bss1").unwrap();
    assert_eq!(bss.model, "wlan");
    assert!(
        bss.packets_in > 2 * bss.frames_sent / 3,
        "both directions cross the one medium"
    );
}

const HANDOFF: &str = r#"
[[flow]]
name = "down"
server = "server"
client = "sta1"
congestion = "cubic"

[[handoff]]
at = "8 s"
station = "sta1"
from = "bss1"
to = "bss2"
outage = "200 ms"
"#;

#[test]
fn a_station_hands_off_its_flow_goes_on_through_the_new_access_point() {
    let mut lost_at_ap1 = Vec::new();
    for lost in ["1", "0"] {
        let s = scenario(&format!("{HANDOFF}queued_lost = {lost}\n"));
        let mut sim = Simulation::new(&s, false).unwrap();
        sim.run();
        let sum = sim.summary();
        let link = |n: &str| sum.links.iter().find(|l| l.name == n).unwrap().clone();
        let (bss1, bss2) = (link("bss1"), link("bss2"));
        // The download's packets cross bss1 until 8 s, then bss2.
        assert!(
            bss1.packets_out > 10_000 && bss2.packets_out > 10_000,
            "{} {}",
            bss1.packets_out,
            bss2.packets_out
        );
        assert!(sum.flows[0].goodput_bps.unwrap() > 10e6);
        lost_at_ap1.push(bss1.loss_drops);
        // Same seed, same run.
        let mut again = Simulation::new(&s, false).unwrap();
        again.run();
        assert_eq!(again.summary_json(), sim.summary_json());
    }
    // Dropping what ap1 queued for the station loses a window's worth; keeping it loses only
    // the few packets that reach ap1 after the station left (on the wire to it then).
    println!("lost at ap1: {lost_at_ap1:?}");
    assert!(
        lost_at_ap1[0] > lost_at_ap1[1] + 50 && lost_at_ap1[1] < 10,
        "{lost_at_ap1:?}"
    );
}

#[test]
fn the_shipped_study_scenario_builds_and_its_flows_move_at_the_hand_offs() {
    let text = include_str!("../../../scenarios/wlan/dccp-handoff.toml");
    let s = Scenario::from_toml(text, "dccp-handoff.toml").unwrap();
    let net = airlink_net::Network::<airlink_sim::SimPacket>::build(
        &airlink_net::build::resolve(&s).unwrap(),
    )
    .unwrap();
    let moves: Vec<(f64, u32)> = net
        .changes
        .iter()
        .filter_map(|c| match c.change {
            airlink_sim::NetChange::Path { flow, .. } => Some((c.at.as_secs_f64(), flow)),
            _ => None,
        })
        .collect();
    // tab1 (the TCP sender) and tab2 (the first DCCP sender) hand off; tab3 and tab4 stay.
    assert_eq!(moves, [(100.0, 0), (100.0, 1), (200.0, 0), (200.0, 1)]);
}

#[test]
fn bad_hand_offs_and_wlans_are_refused_where_they_are_written() {
    // Each error points at the line `at` (the last line with that text).
    let bad = |body: &str, at: &str, what: &str| {
        let text = format!("stop = \"20 s\"\n{HOSTS}{body}");
        let line = text
            .lines()
            .enumerate()
            .filter(|l| l.1 == at)
            .last()
            .unwrap()
            .0
            + 1;
        let e = Scenario::from_toml(&text, "wlan.toml").expect_err(body);
        assert_eq!(e.line, Some(line), "{body}: {e}");
        assert!(e.to_string().contains(what), "{body}: {e}");
        assert!(e.column.is_some());
    };
    let h = |at: &str, station: &str, from: &str, to: &str| {
        format!("[[handoff]]\nat = \"{at}\"\nstation = \"{station}\"\nfrom = \"{from}\"\nto = \"{to}\"\n")
    };
    let flow = "[[flow]]\nserver = \"server\"\nclient = \"sta1\"\n";
    bad(
        &format!("{flow}{}", h("19.99 s", "sta1", "bss1", "bss2")),
        "at = \"19.99 s\"",
        "ends after the run's stop",
    );
    bad(
        &format!("{flow}{}", h("5 s", "sta9", "bss1", "bss2")),
        "station = \"sta9\"",
        "no host named \"sta9\"",
    );
    bad(
        &format!("{flow}{}", h("5 s", "server", "bss1", "bss2")),
        "station = \"server\"",
        "is not a station of \"bss1\"",
    );
    bad(
        &format!("{flow}{}", h("5 s", "sta1", "bss1", "ap1-up")),
        "to = \"ap1-up\"",
        "no WLAN named \"ap1-up\"",
    );
    bad(
        &format!("{flow}{}", h("5 s", "sta1", "bss7", "bss2")),
        "from = \"bss7\"",
        "no WLAN named \"bss7\"",
    );
    let overlap = format!(
        "{flow}{}outage = \"1 s\"\n{}",
        h("5 s", "sta1", "bss1", "bss2"),
        h("5.5 s", "sta1", "bss2", "bss1")
    );
    bad(&overlap, "at = \"5.5 s\"", "within the outage of handoff 0");
    // A station already moved is no longer the old WLAN's.
    let twice = format!(
        "{flow}{}{}",
        h("5 s", "sta1", "bss1", "bss2"),
        h("9 s", "sta1", "bss1", "bss2")
    );
    bad(
        &twice,
        "station = \"sta1\"",
        "is not a station of \"bss1\" at 9 s",
    );
}

#[test]
fn bad_wlan_tables_are_refused_where_they_are_written() {
    let cases = [
        ("[host.a]\n[host.b]\n[link.w]\nfrom = \"a\"\nwlan = { stations = [\"b\"], phy_rate = \"11 Mbit/s\" }\n", 5, "expected an ERP-OFDM rate"),
        ("[host.a]\n[host.b]\n[link.w]\nfrom = \"a\"\nto = \"b\"\nwlan = { stations = [\"b\"] }\n", 5, "instead of `to`"),
        ("[host.a]\n[host.b]\n[link.w]\nfrom = \"a\"\nwlan = { stations = [\"c\"] }\n", 5, "no host named \"c\""),
        ("[host.a]\n[host.b]\n[link.w]\nfrom = \"a\"\nwlan = { stations = [\"b\"], cw_min = 0 }\n", 5, "contention window"),
        ("[downlink.wlan]\nstations = [\"a\"]\n", 1, "expected it in a [link.NAME] table"),
    ];
    for (links, line, what) in cases {
        let text = format!("{links}[[flow]]\nserver = \"a\"\nclient = \"b\"\n");
        let text = if links.starts_with("[downlink") {
            format!("{links}[[flow]]\n")
        } else {
            text
        };
        let e = Scenario::from_toml(&text, "w.toml").expect_err(links);
        assert!(e.to_string().contains(what), "{links}: {e}");
        assert_eq!(e.line, Some(line), "{links}: {e}");
    }
}
