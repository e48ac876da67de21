//! The TCP dumbbell: link packet transmissions per wall second, simulated
//! seconds per wall second, and memory per flow, for 1 and 10 flows over 10 Mbit/s,
//! 100 Mbit/s and 1 Gbit/s bottlenecks, 100 s simulated. Each case runs once (a 1 Gbit/s
//! case is seconds of work); the figures are printed, not asserted.
use airlink_scenario::Scenario;
use airlink_sim::{dumbbell::dumbbell_toml, Simulation};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

#[path = "../tests/support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{Counting, PEAK};

#[global_allocator]
static ALLOC: Counting = Counting;

fn main() {
    // `cargo bench -- --quick` runs 10 s instead of 100 s.
    let seconds = if std::env::args().any(|a| a == "--quick") {
        10
    } else {
        100
    };
    println!("dumbbell, {seconds} s simulated, RTT 22 ms, queue 1 BDP, MSS 1448, SACK");
    println!(
        "{:>12} {:>6} {:>10} {:>14} {:>12} {:>12} {:>14}",
        "bottleneck",
        "flows",
        "wall s",
        "link pkts/s",
        "sim s/wall s",
        "goodput Mb/s",
        "peak heap/flow"
    );
    for rate in [10_000_000u64, 100_000_000, 1_000_000_000] {
        for flows in [1u32, 10] {
            let scenario =
                Scenario::from_toml(&dumbbell_toml(rate, flows, seconds, 22), "dumbbell.toml")
                    .unwrap();
            let base = counting_alloc::reset_peak();
            #[allow(clippy::disallowed_methods)] // a benchmark measures the wall clock
            let start = Instant::now();
            let mut sim = Simulation::new(&scenario, false).unwrap();
            sim.run();
            let wall = start.elapsed().as_secs_f64();
            let peak = PEAK.load(Relaxed) - base;
            let summary = sim.summary();
            let transmissions: u64 = summary.links.iter().map(|l| l.packets_out).sum();
            let goodput: f64 = summary.flows.iter().filter_map(|f| f.goodput_bps).sum();
            println!(
                "{:>10} M {flows:>6} {wall:>10.2} {:>14.0} {:>12.1} {:>12.1} {:>12.0} kB",
                rate / 1_000_000,
                transmissions as f64 / wall,
                summary.sim_time_s / wall,
                goodput / 1e6,
                peak as f64 / flows as f64 / 1e3,
            );
        }
    }
}
