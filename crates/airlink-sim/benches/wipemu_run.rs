//! Wall time of whole simulation runs: the WIPEMU bulk transfer (3 MB over the adaptive
//! 4G downlink), static and best-of-25 allocation.
use airlink_scenario::Scenario;
use airlink_sim::Simulation;
use criterion::{criterion_group, criterion_main, Criterion};

const ADAPTIVE: &str = include_str!("../../../scenarios/wipemu/adaptive.toml");

fn wipemu(c: &mut Criterion) {
    let base = Scenario::from_toml(ADAPTIVE, "adaptive.toml").unwrap();
    let mut g = c.benchmark_group("wipemu_run");
    g.sample_size(10);
    for allocation in ["static", "best"] {
        let s = base
            .with_overrides(&[format!("downlink.ofdm4g.allocation={allocation}")])
            .unwrap();
        g.bench_function(format!("adaptive_{allocation}_3MB"), |b| {
            b.iter(|| {
                let mut sim = Simulation::new(&s, false).unwrap();
                sim.run();
                sim.summary().events
            })
        });
    }
    g.finish();
}

criterion_group!(benches, wipemu);
criterion_main!(benches);
