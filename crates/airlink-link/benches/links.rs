//! Per-packet cost of the link models.
use airlink_channel::{
    CellChannel, CellChannelConfig, OfdmChannel, OfdmChannelConfig, PredictionModel, TapProfile,
};
use airlink_engine::{Duration, Instant, RngStream};
use airlink_link::{
    CellDownlink, CellParams, Link, Ofdm4gDownlink, Ofdm4gModulation, Ofdm4gParams, Packet, Pipe,
    PipeParams, QueueLimit, SlotAllocation,
};
use airlink_phy::{Modulation, ModulationTable, OddKModel, SwitchingRule};
use airlink_sched::SchedulerConfig;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

struct P(u32);
impl Packet for P {
    fn wire_len(&self) -> u32 {
        self.0
    }
    fn flip_bit(&mut self, _bit: u64) {}
    fn flow(&self) -> u32 {
        0
    }
}

fn pipe(c: &mut Criterion) {
    let mut g = c.benchmark_group("pipe");
    g.throughput(Throughput::Elements(10_000));
    g.bench_function("enqueue_and_deliver_1500B_at_1Gbit", |b| {
        let params = PipeParams {
            rate_bps: Some(1_000_000_000),
            delay: Duration::from_millis(1),
            queue_limit: QueueLimit::Packets(100_000),
            loss: 0.0,
            bit_error_rate: 1e-7,
            error_burst_bits: None,
        };
        b.iter(|| {
            let mut p = Pipe::new(params.clone(), RngStream::derive(1, "bench"));
            let mut t = Instant::ZERO;
            let mut n = 0;
            for _ in 0..10_000 {
                p.enqueue(t, P(1500));
                n += p.poll_output().is_some() as u32;
                t += Duration::from_micros(12);
            }
            n
        })
    });
    g.finish();
}

fn ofdm4g(c: &mut Criterion) {
    let mut g = c.benchmark_group("ofdm4g");
    for (name, allocation) in [
        ("static", SlotAllocation::Static(12)),
        ("best_of_25", SlotAllocation::Best),
    ] {
        g.throughput(Throughput::Elements(200));
        g.bench_function(format!("200_packets_adaptive_{name}"), |b| {
            b.iter(|| {
                let cfg = OfdmChannelConfig {
                    mean_snr_db: 16.0,
                    speed_mps: 75.0 / 3.6,
                    carrier_hz: 1.9e9,
                    profile: TapProfile::wipemu_tu12(),
                    n_subbands: 25,
                    subband_spacing_hz: 200e3,
                    sinusoids: 16,
                    shadowing: None,
                    prediction_nmse: 0.0,
                    prediction_model: PredictionModel::Mmse,
                    bins_per_second: 1500,
                };
                let channel = OfdmChannel::new(&cfg, RngStream::derive(1, "c")).unwrap();
                let table = ModulationTable::new(
                    &Modulation::ALL,
                    SwitchingRule::MaxThroughput,
                    40.0,
                    0.0,
                    108,
                    OddKModel::Generic,
                )
                .unwrap();
                let params = Ofdm4gParams {
                    queue_limit: QueueLimit::Packets(1000),
                    bins_per_second: 1500,
                    symbols_per_frame: 108,
                    allocation,
                    modulation: Ofdm4gModulation::Adaptive(table),
                    odd_k: OddKModel::Generic,
                    arq_max_retransmissions: 30,
                    arq_delay: Duration::from_millis(2),
                    arq_remodulate: true,
                    channel_errors: true,
                };
                let mut link = Ofdm4gDownlink::new(params, channel, RngStream::derive(1, "l"));
                for _ in 0..200 {
                    link.enqueue(Instant::ZERO, P(1500));
                }
                let mut n = 0;
                while let Some(t) = link.poll_at() {
                    link.handle_timeout(t);
                    while link.poll_output().is_some() {
                        n += 1;
                    }
                }
                n
            })
        });
    }
    g.finish();
}

/// A 576-byte packet of flow (= user) `.0`.
struct CellPacket(u32);
impl Packet for CellPacket {
    fn wire_len(&self) -> u32 {
        576
    }
    fn flip_bit(&mut self, _bit: u64) {}
    fn flow(&self) -> u32 {
        self.0
    }
}

/// The TCP-PF study's cell: 21 users kept backlogged for 25 s (5001 slots).
fn cell(c: &mut Criterion) {
    let mut g = c.benchmark_group("cell");
    g.throughput(Throughput::Elements(5001));
    for name in SchedulerConfig::NAMES {
        g.bench_function(format!("21_users_25s_{name}"), |b| {
            b.iter(|| {
                let channel =
                    CellChannel::new(&CellChannelConfig::study(), RngStream::derive(1, "cell"))
                        .unwrap();
                let params = CellParams {
                    scheduler: SchedulerConfig::by_name(name).unwrap(),
                    ..CellParams::default()
                };
                let mut link = CellDownlink::new(
                    params,
                    channel,
                    (0..21).map(|u| (u, u as usize)).collect(),
                    RngStream::derive(1, "l"),
                )
                .unwrap();
                for k in 0..21 * 1500 {
                    link.enqueue(Instant::ZERO, CellPacket(k % 21));
                }
                link.handle_timeout(Instant::from_millis(25_000));
                std::iter::from_fn(|| link.poll_output()).count()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, pipe, ofdm4g, cell);
criterion_main!(benches);
