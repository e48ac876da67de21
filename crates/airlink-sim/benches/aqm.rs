//! The cost of a queue discipline: simulator nanoseconds per link transmission on the TCP
//! dumbbell (100 Mbit/s bottleneck, 22 ms RTT, one BDP of queue) with the pipe's own
//! drop-tail queue against FQ-CoDel, for 1, 100 and 1000 flows. Each case runs once; the
//! figures are printed, not asserted. `cargo bench -p airlink-sim --bench aqm [-- --quick]`.
use airlink_scenario::Scenario;
use airlink_sim::{dumbbell::dumbbell_toml, Simulation};
use std::time::Instant;

fn main() {
    let seconds = if std::env::args().any(|a| a == "--quick") {
        5
    } else {
        20
    };
    println!("dumbbell, 100 Mbit/s, {seconds} s simulated: ns of wall time per link transmission");
    println!(
        "{:>6} {:>10} {:>12} {:>14} {:>12}",
        "flows", "aqm", "wall s", "transmissions", "ns/tx"
    );
    for flows in [1u32, 100, 1000] {
        for aqm in ["", "fq_codel", "codel"] {
            let mut text = dumbbell_toml(100_000_000, flows, seconds, 22);
            if !aqm.is_empty() {
                text = text.replacen(
                    "[uplink.pipe]",
                    &format!("aqm = \"{aqm}\"\n[uplink.pipe]"),
                    1,
                );
            }
            let scenario = Scenario::from_toml(&text, "dumbbell.toml").unwrap();
            #[allow(clippy::disallowed_methods)] // a benchmark measures the wall clock
            let start = Instant::now();
            let mut sim = Simulation::new(&scenario, false).unwrap();
            sim.run();
            let wall = start.elapsed().as_secs_f64();
            let transmissions: u64 = sim.summary().links.iter().map(|l| l.packets_out).sum();
            println!(
                "{flows:>6} {:>10} {wall:>12.2} {transmissions:>14} {:>12.0}",
                if aqm.is_empty() { "drop-tail" } else { aqm },
                wall * 1e9 / transmissions as f64
            );
        }
    }
}
