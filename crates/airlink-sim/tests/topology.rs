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
    let (wired, down, up) = (r.wired.clone().unwrap(), r.downlink.clone().unwrap(), r.uplink.clone().unwrap());
    (g.wired, g.downlink, g.uplink) = (None, None, None);
    for host in ["server", "gateway", "client"] {
        g.host.insert(host.into(), HostConfig::default());
    }
    let link = |from: &str, to: &str, model: LinkModel| {
        let mut l = LinkConfig { from: from.into(), to: to.into(), pipe: None, trace: None, ofdm4g: None };
        match model {
            LinkModel::Pipe(p) => l.pipe = Some(p),
            LinkModel::Trace(t) => l.trace = Some(t),
            LinkModel::Ofdm4g(o) => l.ofdm4g = Some(o),
        }
        l
    };
    g.link.insert("wired.down".into(), link("server", "gateway", LinkModel::Pipe(wired.clone())));
    g.link.insert("downlink".into(), link("gateway", "client", down));
    g.link.insert("uplink".into(), link("client", "gateway", up));
    g.link.insert("wired.up".into(), link("gateway", "server", LinkModel::Pipe(wired)));
    g
}

#[test]
fn the_shorthand_written_out_as_hosts_and_links_is_the_same_run() {
    let s = Scenario::from_toml(VALIDATION, "validation.toml").unwrap().with_overrides(&["flow.0.bytes=400 kB".into()]).unwrap();
    let g = general_form(&s);
    assert!(g.is_general() && g.topology().is_ok());
    assert_eq!(summary_json(&s), summary_json(&g));
}

#[test]
fn the_shorter_round_trip_takes_the_larger_share_of_a_dumbbell() {
    for seed in 1..=3 {
        let s = Scenario::from_toml(DUMBBELL_RTT, "dumbbell-rtt.toml").unwrap().with_overrides(&[format!("seed={seed}")]).unwrap();
        let mut sim = Simulation::new(&s, false).unwrap();
        sim.run();
        let sum = sim.summary();
        let goodput = |i: usize| sum.flows[i].goodput_bps.unwrap();
        let (near, far) = (goodput(0), goodput(1));
        // Together they fill the bottleneck ...
        assert!(near + far > 0.9 * 10e6 * 1460.0 / 1500.0, "seed {seed}: {near} + {far}");
        // ... and the 20 ms flow gets more than the 110 ms one (CUBIC's RTT-independent growth
        // narrows the gap Reno's 1/RTT law would give, but does not close it).
        assert!(near > 1.2 * far, "seed {seed}: near {near}, far {far}");
        let names: Vec<&str> = sum.links.iter().map(|l| l.name).collect();
        assert_eq!(names, ["near-in", "near-out", "far-in", "far-out", "bottleneck", "return"]);
        // Each server's link carries its own flow's segments, and nothing else.
        assert_eq!(sum.links[0].packets_in, sum.flows[0].segments_sent, "seed {seed}");
        assert_eq!(sum.links[2].packets_in, sum.flows[1].segments_sent, "seed {seed}");
    }
}
