//! A change that moves a flow onto a cell: the cell has a user for it from the start (once it
//! had users only for the flows that started on it, and the run panicked).
use airlink_engine::Instant;
use airlink_scenario::Scenario;
use airlink_sim::Simulation;

const SCENARIO: &str = include_str!("../../../tests/scenarios/cell-path-change.toml");

#[test]
fn a_flow_moved_onto_a_cell_is_served_there() {
    let s = Scenario::from_toml(SCENARIO, "cell-path-change.toml").unwrap();
    let mut sim = Simulation::new(&s, true).unwrap();
    // The change is at 2 s; by 3 s the pipe's short queue has long drained.
    sim.run_until(Instant::from_nanos(3_000_000_000));
    let at_3s = sim.summary().flows[0].bytes_delivered;
    sim.run();
    let sum = sim.summary();
    assert!(at_3s > 0, "flow a starts on the pipe");
    assert!(
        sum.flows[0].bytes_delivered > at_3s,
        "flow a goes on through the cell"
    );
    assert!(sum.flows[1].bytes_delivered > 0);
    let events = &sim.recorder().events;
    let change = events
        .kind
        .iter()
        .position(|k| *k == "path_change")
        .expect("the change is logged");
    assert_eq!(events.flow[change], 0, "with the flow it moves");
}
