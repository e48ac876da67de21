//! Users that arrive: a flow whose start is drawn starts at its draw, which depends on the run
//! seed and the flow's index only, so every scheduler compared under one seed sees the same
//! arrivals (the TCP-PF study's users, whose transfers begin at different times).
use airlink_scenario::Scenario;
use airlink_sim::{Simulation, Summary};

const TCP_PF: &str = include_str!("../../../scenarios/cell/tcp-pf.toml");

fn run(overrides: &[String]) -> (Scenario, Summary) {
    let s = Scenario::from_toml(TCP_PF, "cell.toml")
        .unwrap()
        .with_overrides(overrides)
        .unwrap();
    let mut sim = Simulation::new(&s, false).unwrap();
    sim.run();
    (s, sim.summary())
}

#[test]
fn drawn_starts_are_the_same_under_every_scheduler_and_each_flow_starts_at_its_own() {
    let mut set: Vec<String> = (0..21)
        .map(|i| format!("flow.{i}.start={{uniform=[\"0 s\", \"3 s\"]}}"))
        .collect();
    set.extend(["stop=\"4 s\"".to_string(), "seed=7".to_string()]);
    let mut starts = Vec::new();
    for scheduler in ["pf", "tcp-pf", "max"] {
        let mut o = set.clone();
        o.push(format!("downlink.cell.scheduler={scheduler}"));
        let (s, sum) = run(&o);
        let these: Vec<f64> = sum.flows.iter().map(|f| f.start_s).collect();
        for (i, f) in s.flow.iter().enumerate() {
            assert_eq!(
                these[i],
                f.start.time(7, i).0.as_secs_f64(),
                "{scheduler} user {i}"
            );
        }
        starts.push(these);
    }
    assert!(starts.iter().all(|s| *s == starts[0]));
    // Spread over the interval, not all at one instant.
    let (lo, hi) = starts[0]
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &s| (lo.min(s), hi.max(s)));
    assert!(lo < 1.0 && hi > 2.0 && hi <= 3.0, "{lo} .. {hi}");
    // Another seed, other arrivals.
    let mut o = set.clone();
    o.push("seed=8".into());
    let (_, other) = run(&o);
    assert_ne!(
        other.flows.iter().map(|f| f.start_s).collect::<Vec<_>>(),
        starts[0]
    );
}
