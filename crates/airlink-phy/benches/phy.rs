//! Per-frame PHY costs on the link's hot path: error probabilities of one frame, the adaptive
//! modulation choice, bit-error injection; and (off the hot path) building a table.
use airlink_engine::RngStream;
use airlink_phy::{
    db_to_lin, frame_error_prob, inject_symbol_errors, inject_symbol_errors_given_error,
    symbol_error_prob, Modulation, ModulationTable, OddKModel, SwitchingRule,
};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use std::hint::black_box;

fn per_frame(c: &mut Criterion) {
    let mut g = c.benchmark_group("phy_per_frame");
    let snrs: Vec<f64> = (0..64).map(|i| db_to_lin(i as f64 * 0.5)).collect();
    g.bench_function("ser_fer_64_frames", |b| {
        b.iter(|| {
            let mut acc = 0.0;
            for (i, &s) in snrs.iter().enumerate() {
                let m = Modulation::ALL[i % 8];
                acc +=
                    frame_error_prob(symbol_error_prob(m, black_box(s), OddKModel::Generic), 108);
            }
            acc
        })
    });
    let table = ModulationTable::new(
        &Modulation::ALL,
        SwitchingRule::MaxThroughput,
        db_to_lin(16.0),
        0.1,
        108,
        OddKModel::Generic,
    )
    .unwrap();
    g.bench_function("select_64_frames", |b| {
        b.iter(|| {
            snrs.iter()
                .map(|&s| table.select(black_box(s)).bits())
                .sum::<u32>()
        })
    });
    for (name, ps) in [("inject_ps_1e-3", 1e-3), ("inject_ps_0.05", 0.05)] {
        g.bench_function(name, |b| {
            let mut rng = RngStream::derive(1, "bench");
            b.iter(|| {
                let mut x = 0u64;
                inject_symbol_errors(black_box(ps), 108, 4, &mut rng, |bit| x ^= bit);
                x
            })
        });
    }
    g.bench_function("inject_given_error_ps_1e-3", |b| {
        let mut rng = RngStream::derive(1, "bench");
        b.iter(|| {
            let mut x = 0u64;
            inject_symbol_errors_given_error(black_box(1e-3), 108, 4, &mut rng, |bit| x ^= bit);
            x
        })
    });
    g.finish();
}

fn table_build(c: &mut Criterion) {
    let mut g = c.benchmark_group("phy_table_build");
    g.sample_size(10);
    for (name, eps) in [
        ("max_throughput_nmse_0", 0.0),
        ("max_throughput_nmse_0.1", 0.1),
    ] {
        g.bench_function(name, |b| {
            b.iter_batched(
                || (),
                |_| {
                    ModulationTable::new(
                        &Modulation::ALL,
                        SwitchingRule::MaxThroughput,
                        db_to_lin(16.0),
                        black_box(eps),
                        108,
                        OddKModel::Generic,
                    )
                    .unwrap()
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.bench_function("target_ber_1e-3", |b| {
        b.iter(|| {
            ModulationTable::new(
                &Modulation::ALL,
                SwitchingRule::TargetBer(black_box(1e-3)),
                1.0,
                0.0,
                108,
                OddKModel::Generic,
            )
            .unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, per_frame, table_build);
criterion_main!(benches);
