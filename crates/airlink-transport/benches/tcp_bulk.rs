//! Packets per wall second through the two-endpoint harness (sender + receiver + pipes) for a
//! bulk transfer with random loss, at windows from 64 to 16 384 segments. A flat figure across
//! windows shows the per-ACK cost (SACK scoreboard, pipe, NextSeg, reassembly) does not grow
//! with the window.
//!
//! `fixed_window/*` uses a controller that holds cwnd at W segments (the trait is public, so
//! the bench plugs one in), keeping W segments in flight despite 1 % loss; `newreno_sack`,
//! `cubic_sack`, `veno_sack` and `afc_sack` are the built-in controllers on a 1 Gbit/s, 20 ms
//! RTT path with 0.01 % loss.

#[path = "../tests/harness/mod.rs"]
mod harness;

use airlink_engine::{Duration, Instant};
use airlink_transport::{
    AckEvent, CongestionConfig, CongestionController, CongestionEvent, ControllerFactory,
    ControllerInit, CubicConfig, Role, TcpConfig, TcpEndpoint,
};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use harness::{LinkConfig, Pair};
use std::sync::Arc;

#[derive(Debug)]
struct Fixed(u64);
impl CongestionController for Fixed {
    fn on_ack(&mut self, _: Instant, _: &AckEvent) {}
    fn on_congestion_event(&mut self, _: Instant, _: &CongestionEvent<'_>) {}
    fn window(&self) -> u64 {
        self.0
    }
    fn ssthresh(&self) -> u64 {
        self.0
    }
    fn name(&self) -> &'static str {
        "fixed"
    }
}
#[derive(Debug)]
struct FixedFactory(u64);
impl ControllerFactory for FixedFactory {
    fn build(&self, _: Instant, init: &ControllerInit) -> Box<dyn CongestionController> {
        Box::new(Fixed(self.0 * init.smss))
    }
}

fn pair(window_segs: Option<u64>, cc: CongestionConfig, loss: f64, rate_bps: u64) -> Pair {
    let cfg = TcpConfig {
        rwnd: u32::MAX,
        congestion: cc,
        ..TcpConfig::default()
    };
    let mut down = LinkConfig::delay(Duration::from_millis(10)).rate(rate_bps);
    down.loss = loss;
    let up = LinkConfig::delay(Duration::from_millis(10));
    let mut p = Pair::new(cfg.clone(), cfg.clone(), up, down, 1);
    if let Some(w) = window_segs {
        p.server = TcpEndpoint::with_controller(cfg, Role::Server, Arc::new(FixedFactory(w)));
    }
    p
}

/// Runs a transfer of `bytes`; returns packets carried by both pipes.
fn run(mut p: Pair, bytes: u64) -> u64 {
    p.download(bytes);
    let quiet = p.run(Instant::from_secs_f64(1e6), u64::MAX);
    assert!(
        quiet && p.client_app.delivered == bytes,
        "transfer did not complete"
    );
    p.up.carried + p.down.carried
}

fn bulk(c: &mut Criterion) {
    let bytes = 100_000 * 1460;
    let mut g = c.benchmark_group("tcp_bulk");
    g.sample_size(10);
    g.measurement_time(std::time::Duration::from_secs(8));
    let mut cases: Vec<(String, Box<dyn Fn() -> Pair>)> = Vec::new();
    for w in [64u64, 1024, 16_384] {
        cases.push((
            format!("fixed_window/{w}_segs_loss_1pct"),
            Box::new(move || pair(Some(w), CongestionConfig::Reno, 0.01, 0)),
        ));
    }
    // Baseline without loss: what the window costs by memory footprint alone.
    for w in [64u64, 16_384] {
        cases.push((
            format!("fixed_window/{w}_segs_lossless"),
            Box::new(move || pair(Some(w), CongestionConfig::Reno, 0.0, 0)),
        ));
    }
    cases.push((
        "newreno_sack/1gbps_loss_1e-4".into(),
        Box::new(|| pair(None, CongestionConfig::Reno, 1e-4, 1_000_000_000)),
    ));
    cases.push((
        "cubic_sack/1gbps_loss_1e-4".into(),
        Box::new(|| {
            pair(
                None,
                CongestionConfig::Cubic(CubicConfig::default()),
                1e-4,
                1_000_000_000,
            )
        }),
    ));
    for name in ["veno", "afc"] {
        cases.push((
            format!("{name}_sack/1gbps_loss_1e-4"),
            Box::new(move || {
                let cc = CongestionConfig::from_name(name).expect("built-in policy");
                pair(None, cc, 1e-4, 1_000_000_000)
            }),
        ));
    }
    for (name, make) in cases {
        let packets = run(make(), bytes);
        g.throughput(Throughput::Elements(packets));
        g.bench_function(name, |b| b.iter(|| run(make(), bytes)));
    }
    g.finish();
}

criterion_group!(benches, bulk);
criterion_main!(benches);
