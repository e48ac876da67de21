//! Per-bin channel cost on the link's hot path: all 25 WIPEMU sub-bands of a bin (best-channel
//! scheduling) and one sub-band of a bin (static allocation), bins in order; plus a lazily
//! evaluated channel that skips bins.
use airlink_channel::{OfdmChannel, OfdmChannelConfig};
use airlink_engine::RngStream;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;

const BINS: u64 = 1500; // one second of WIPEMU bins per iteration

fn per_bin(c: &mut Criterion) {
    let mut g = c.benchmark_group("ofdm_channel_wipemu");
    g.throughput(Throughput::Elements(BINS));
    let cfg = OfdmChannelConfig::wipemu();
    let mut ch = OfdmChannel::new(&cfg, RngStream::derive(1, "bench")).unwrap();
    let (mut t, mut p) = (vec![0.0; 25], vec![0.0; 25]);
    let mut next = 0u64;
    g.bench_function("snr_all_25_subbands_per_bin", |b| {
        b.iter(|| {
            for _ in 0..BINS {
                ch.snr_all(next, &mut t, &mut p);
                next += 1;
            }
            black_box(t[12] + p[12])
        })
    });
    let mut ch = OfdmChannel::new(&cfg, RngStream::derive(1, "bench")).unwrap();
    let mut next = 0u64;
    g.bench_function("snr_one_subband_per_bin", |b| {
        b.iter(|| {
            let mut acc = 0.0;
            for _ in 0..BINS {
                let (t, p) = ch.snr(next, 12);
                acc += t + p;
                next += 1;
            }
            acc
        })
    });
    let mut ch = OfdmChannel::new(&cfg, RngStream::derive(1, "bench")).unwrap();
    let mut next = 0u64;
    g.bench_function("snr_one_subband_every_10th_bin", |b| {
        b.iter(|| {
            let mut acc = 0.0;
            for _ in 0..BINS {
                let (t, p) = ch.snr(next, 12);
                acc += t + p;
                next += 10;
            }
            acc
        })
    });
    g.finish();
}

criterion_group!(benches, per_bin);
criterion_main!(benches);
