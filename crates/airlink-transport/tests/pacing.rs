//! The endpoint's pacer and delivery-rate sampling, with controllers that hold a fixed window
//! and (optionally) a fixed pacing rate.

mod harness;

use airlink_engine::{Duration, Instant};
use airlink_transport::{
    AckEvent, CongestionController, CongestionEvent, ControllerFactory, ControllerInit, TcpConfig,
};
use harness::{LinkConfig, Pair};
use std::sync::Arc;

#[derive(Debug, Clone, Copy)]
struct Fixed {
    window: u64,
    rate: Option<u64>,
    quantum: u64,
}
impl CongestionController for Fixed {
    fn on_ack(&mut self, _: Instant, _: &AckEvent) {}
    fn on_congestion_event(&mut self, _: Instant, _: &CongestionEvent<'_>) {}
    fn window(&self) -> u64 {
        self.window
    }
    fn ssthresh(&self) -> u64 {
        self.window
    }
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn pacing_rate(&self) -> Option<u64> {
        self.rate
    }
    fn send_quantum(&self) -> u64 {
        self.quantum
    }
}
#[derive(Debug)]
struct FixedFactory(Fixed);
impl ControllerFactory for FixedFactory {
    fn build(&self, _: Instant, _: &ControllerInit) -> Box<dyn CongestionController> {
        Box::new(self.0)
    }
}

fn cfg() -> TcpConfig {
    TcpConfig {
        rwnd: u32::MAX,
        ..TcpConfig::default()
    }
}

/// The server's data segments as they left: (time, payload length).
fn departures(p: &Pair) -> Vec<(Instant, u64)> {
    p.down
        .sent_log
        .iter()
        .filter(|(_, s)| s.len > 0)
        .map(|(t, s)| (*t, s.len as u64))
        .collect()
}

/// A paced sender with a window far above the path's: after the first 10 segments (not
/// paced, as Linux), each segment leaves len / rate after the previous one, to the
/// nanosecond (the simulator wakes the endpoint exactly at its pacing timer); a quantum of
/// three segments sends them in back-to-back triples 3·len / rate apart.
#[test]
fn pacer_spaces_segments_at_the_rate() {
    for quantum_segs in [1u64, 3] {
        let rate = 1_000_000; // payload bytes/s
        let mut p = Pair::new(
            cfg(),
            cfg(),
            LinkConfig::delay(Duration::from_millis(20)),
            LinkConfig::delay(Duration::from_millis(20)),
            1,
        );
        let fixed = Fixed {
            window: 10_000_000,
            rate: Some(rate),
            quantum: quantum_segs * 1460,
        };
        p.server = airlink_transport::TcpEndpoint::with_controller(
            cfg(),
            airlink_transport::Role::Server,
            Arc::new(FixedFactory(fixed)),
        );
        p.down.log_sends = true;
        let bytes = 1_000_000;
        p.download(bytes);
        assert!(p.run(Instant::from_millis(100_000), 10_000_000));
        assert_eq!(p.client_app.delivered, bytes);
        let d = departures(&p);
        assert!(d.len() > 600, "{} segments", d.len());
        // The initial window leaves at once.
        assert!(d[..9].iter().all(|&(t, _)| t == d[0].0));
        let mut burst_start = 9;
        for i in 10..d.len() {
            let gap = d[i].0.saturating_since(d[i - 1].0).as_nanos();
            if (i - 9) % quantum_segs as usize == 0 {
                // A new burst: the previous burst's bytes at the rate.
                let bytes: u64 = d[burst_start..i].iter().map(|x| x.1).sum();
                let want = bytes * 1_000_000_000 / rate;
                assert!(
                    gap.abs_diff(want) <= 1,
                    "quantum {quantum_segs}: segment {i}: gap {gap} ns, want {want} ns"
                );
                burst_start = i;
            } else {
                assert_eq!(gap, 0, "quantum {quantum_segs}: segment {i} inside a burst");
            }
        }
        // Overall: the payload after the first burst left at the pacing rate.
        let (t0, t1) = (d[9].0, d.last().unwrap().0);
        let paced: u64 = d[9..d.len() - 1].iter().map(|x| x.1).sum();
        let r = paced as f64 / t1.saturating_since(t0).as_secs_f64();
        assert!((r / rate as f64 - 1.0).abs() < 0.01, "rate {r}");
        assert_eq!(p.server.poll_timeout(), None, "no pacing timer left");
    }
}

/// A window of twice the bandwidth-delay product over a 10 Mbit/s bottleneck keeps its queue
/// busy: every rate sample outside the start is the bottleneck's payload rate,
/// rate·MSS/(MSS + 40) / 8 bytes/s, and none is app-limited.
#[test]
fn rate_samples_equal_the_bottleneck_rate() {
    let rate_bps = 10_000_000u64;
    let mut p = Pair::new(
        cfg(),
        cfg(),
        LinkConfig::delay(Duration::from_millis(20)),
        LinkConfig::delay(Duration::from_millis(20)).rate(rate_bps),
        1,
    );
    let fixed = Fixed {
        window: 100 * 1460, // BDP ≈ 50 kB
        rate: None,
        quantum: 0,
    };
    let log = p.log_server_with(cfg(), Arc::new(FixedFactory(fixed)));
    let bytes = 5_000_000;
    p.download(bytes);
    assert!(p.run(Instant::from_millis(100_000), 10_000_000));
    assert_eq!(p.client_app.delivered, bytes);
    let header = 40.0;
    let want = rate_bps as f64 / 8.0 * 1460.0 / (1460.0 + header);
    let samples = log.samples.lock().unwrap();
    let steady: Vec<_> = samples
        .iter()
        .filter(|(t, _)| *t > Instant::from_millis(500) && *t < Instant::from_millis(3500))
        .collect();
    assert!(steady.len() > 500, "{} samples", steady.len());
    for (t, rs) in &steady {
        let got = rs.delivery_rate.expect("a valid sample");
        assert!(
            (got / want - 1.0).abs() < 0.005,
            "at {t}: {got} B/s, want {want}: {rs:?}"
        );
        assert!(!rs.is_app_limited);
        assert!(rs.interval.unwrap() >= rs.min_rtt.unwrap());
    }
    let last = samples.last().unwrap().1;
    assert_eq!(last.delivered_total, bytes + 1, "payload and FIN");
    assert_eq!(last.lost_total, 0);
}
