//! Bounded memory: the time series pause the run for a drain when they are full (without
//! changing it), a run whose state outgrows its `memory_budget` stops saying what grew, and a
//! thousand copies of a flow fit in the default budget.
use airlink_net::metrics::{Column, Table};
use airlink_scenario::Scenario;
use airlink_sim::Simulation;

/// A 100 Mbit/s UDP flow into a 10 Mbit/s pipe: most datagrams are dropped, one event row each.
const OVERLOAD: &str = r#"
stop = "1 s"
[downlink.pipe]
rate = "10 Mbit/s"
delay = "5 ms"
queue = 50
[uplink.pipe]
delay = "5 ms"
[[flow]]
protocol = "udp"
rate = "100 Mbit/s"
"#;

fn sim(text: &str) -> Simulation {
    Simulation::new(&Scenario::from_toml(text, "test.toml").unwrap(), true).unwrap()
}

/// Runs in 250 ms chunks, draining after every return; the tables concatenated, and the most
/// rows seen at a drain.
fn drained(mut sim: Simulation) -> (Vec<(&'static str, Table)>, usize, String) {
    let mut tables: Vec<(&'static str, Table)> = Vec::new();
    let mut most = 0;
    let mut until = sim.now() + airlink_engine::Duration::from_millis(250);
    loop {
        let finished = sim.run_until(until);
        if sim.now() >= until {
            until = sim.now() + airlink_engine::Duration::from_millis(250);
        }
        most = most.max(sim.recorder().rows());
        for (name, table) in sim.recorder().drain() {
            match tables.iter_mut().find(|t| t.0 == name) {
                Some((_, all)) => all.append(table),
                None => tables.push((name, table)),
            }
        }
        if finished {
            return (tables, most, sim.summary_json());
        }
    }
}

fn rows(tables: &[(&'static str, Table)], name: &str) -> usize {
    tables.iter().find(|t| t.0 == name).unwrap().1.rows()
}

#[test]
fn full_series_pause_the_run_for_a_drain_without_changing_it() {
    let (whole, most_whole, summary_whole) = drained(sim(OVERLOAD));
    let drops = rows(&whole, "events");
    assert!(drops > 5000, "{drops} drop events");
    assert!(most_whole > 1000);
    let mut capped = sim(OVERLOAD);
    capped.drain_every(1000);
    let (parts, most, summary) = drained(capped);
    // One event adds a few rows at most (a sample: a row per flow and per link).
    assert!(most < 1000 + 10, "{most} rows buffered");
    assert_eq!(summary, summary_whole);
    assert_eq!(parts.len(), whole.len());
    for ((name, a), (other, b)) in parts.iter().zip(&whole) {
        assert_eq!(name, other);
        assert_eq!(a.rows(), b.rows(), "{name}");
        for ((col, x), (_, y)) in a.columns.iter().zip(&b.columns) {
            // NaN != NaN: compare the columns' debug text.
            assert!(format!("{x:?}") == format!("{y:?}"), "{name}.{col} differs");
        }
    }
    let Column::U64(times) = &parts.iter().find(|t| t.0 == "events").unwrap().1.columns[0].1 else {
        panic!("time_ns")
    };
    assert!(times.is_sorted());
}

#[test]
fn a_run_over_its_memory_budget_stops_saying_what_grew() {
    // Nobody drains: the drop events pile up until they pass 10 MB.
    let text = OVERLOAD.replace(
        "stop = \"1 s\"",
        "stop = \"60 s\"\nmemory_budget = \"10 MB\"",
    );
    let mut s = sim(&text);
    assert!(s.run_until(airlink_engine::Instant::FAR_FUTURE));
    let why = s.over_budget().expect("over budget").to_string();
    assert!(why.starts_with("run stopped at "), "{why}");
    assert!(why.contains("over memory_budget = \"10 MB\""), "{why}");
    assert!(
        why.contains("time-series rows not yet written (most in events: "),
        "{why}"
    );
    assert!(s.finished() && s.now() < airlink_engine::Instant::from_millis(60_000));
    // Draining as the runner does, the same run stays within the budget.
    let mut s = sim(&text.replace("stop = \"60 s\"", "stop = \"3 s\""));
    s.drain_every(10_000);
    while !s.run_until(airlink_engine::Instant::FAR_FUTURE) {
        s.recorder().drain();
    }
    assert_eq!(s.over_budget(), None);
}

#[test]
fn a_thousand_copies_of_a_small_flow_fit_the_default_budget() {
    // The classic stack's initial window of 3: a thousand initial windows of 10 would
    // overflow the queue at once, which is another test than this one of memory.
    let text = r#"
stop = "2 s"
tcp_preset = "classic"
[downlink.pipe]
rate = "100 Mbit/s"
delay = "5 ms"
[uplink.pipe]
delay = "5 ms"
[[flow]]
protocol = "tcp"
bytes = "20 kB"
copies = 1000
"#;
    let mut s = sim(text);
    s.drain_every(1 << 18);
    while !s.run_until(airlink_engine::Instant::FAR_FUTURE) {
        s.recorder().drain();
    }
    assert_eq!(s.over_budget(), None);
    let summary = s.summary();
    assert_eq!(summary.flows.len(), 1000);
    let done = summary.flows.iter().filter(|f| f.completed).count();
    assert!(
        done > 900,
        "{done} of 1000 copies delivered their 20 kB in 2 s"
    );
}
