//! Trace-driven links that vary their delay and loss: a TCP flow's RTT follows a delay trace,
//! and runs differ between seeds exactly when the trace link draws (random start or loss).
use airlink_scenario::Scenario;
use airlink_sim::Simulation;
use std::path::{Path, PathBuf};

/// A folder holding the given files, for scenarios that name them.
fn folder(name: &str, files: &[(&str, String)]) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("airlink-trace-links-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (f, text) in files {
        std::fs::write(dir.join(f), text).unwrap();
    }
    dir
}

/// 24 Mbit/s: two 1500-B opportunities per ms.
fn capacity() -> String {
    "1\n1\n".into()
}

fn run(dir: &Path, trace_keys: &str, seed: u64, stop_s: u32) -> Simulation {
    let text = format!(
        "seed = {seed}\nstop = \"{stop_s} s\"\nsample_interval = \"0 s\"\n[wired]\ndelay = \"1 ms\"\n[downlink.trace]\nfile = \"cap.trace\"\n{trace_keys}\n[[flow]]\ncongestion = \"cubic\"\n"
    );
    let s = Scenario::from_toml(&text, dir.join("s.toml").to_str().unwrap()).unwrap();
    let mut sim = Simulation::new(&s, true).unwrap();
    sim.run();
    sim
}

#[test]
fn rtt_follows_a_delay_trace_stepping_from_20_to_80_ms() {
    // Two columns: 20 ms from 0, 80 ms from 5 s (held to 10 s, as long as the row before).
    let dir = folder(
        "step",
        &[
            ("cap.trace", capacity()),
            ("delay.txt", "0 20\n5000 80\n".into()),
        ],
    );
    let mut sim = run(&dir, "delay_file = \"delay.txt\"\nqueue = 20", 1, 10);
    let r = &sim.recorder().rtt;
    let (mut before, mut after) = (f64::INFINITY, f64::INFINITY);
    for (&t, &rtt) in r.time_ns.iter().zip(&r.rtt_us) {
        let s = t as f64 / 1e9;
        if (1.0..5.0).contains(&s) {
            before = before.min(rtt);
        } else if s >= 5.5 {
            after = after.min(rtt);
        }
    }
    // Base RTT: 2·1 ms wired + the trace delay + one opportunity (≤ 1 ms) + the uplink.
    assert!((22_000.0..24_000.0).contains(&before), "before {before} us");
    assert!((82_000.0..84_000.0).contains(&after), "after {after} us");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn delivered(sim: &Simulation) -> u64 {
    sim.summary().flows[0].bytes_delivered
}

#[test]
fn seeds_differ_with_random_start_or_loss_and_are_identical_without() {
    // A capacity trace of 1 s: 24 Mbit/s for 500 ms, then 3 Mbit/s.
    let mut cap = String::new();
    for ms in 1..=1000 {
        let n = if ms <= 500 { 2 } else { (ms % 4 == 0) as u32 };
        for _ in 0..n {
            cap.push_str(&format!("{ms}\n"));
        }
    }
    let dir = folder(
        "seeds",
        &[("cap.trace", cap), ("delay", "20\n20\n60\n60\n".into())],
    );
    let plain = "delay_file = \"delay\"\ndelay_interval = \"250 ms\"";
    let by_seed =
        |keys: &str| -> Vec<u64> { (1..=4).map(|s| delivered(&run(&dir, keys, s, 3))).collect() };
    let same = by_seed(plain);
    assert!(same.iter().all(|&b| b == same[0]), "{same:?}");
    let shifted = by_seed(&format!("{plain}\nrandom_start = true"));
    assert!(shifted.windows(2).any(|w| w[0] != w[1]), "{shifted:?}");
    let lossy = by_seed(&format!("{plain}\nloss = 0.01"));
    assert!(lossy.windows(2).any(|w| w[0] != w[1]), "{lossy:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_trace_keys_are_refused_where_they_stand() {
    let text = "[downlink.trace]\nfile = \"a\"\nloss = 0.1\nloss_file = \"l\"\n[[flow]]\n";
    let e = Scenario::from_toml(text, "t.toml").unwrap_err().to_string();
    assert!(e.contains("t.toml:4:") && e.contains("loss_file"), "{e}");
    let text = "[downlink.trace]\nfile = \"a\"\nformat = \"csv\"\ndelay_file = \"d\"\n[[flow]]\n";
    let e = Scenario::from_toml(text, "t.toml").unwrap_err().to_string();
    assert!(e.contains("t.toml:4:") && e.contains("CSV"), "{e}");
    let text = "[downlink.trace]\nfile = \"a\"\nformat = \"tsv\"\n[[flow]]\n";
    let e = Scenario::from_toml(text, "t.toml").unwrap_err().to_string();
    assert!(e.contains("t.toml:3:"), "{e}");
}

#[test]
fn a_csv_trace_gives_rate_delay_and_loss() {
    let dir = folder(
        "csv",
        &[(
            "cap.trace",
            "time_s,rate_mbps,delay_ms,loss\n0,12,30,0\n1,12,30,0\n".into(),
        )],
    );
    let mut sim = run(&dir, "format = \"csv\"", 1, 5);
    let min_rtt = sim
        .recorder()
        .rtt
        .rtt_us
        .iter()
        .cloned()
        .fold(f64::INFINITY, f64::min);
    // 2 ms wired + 30 ms + serving (one opportunity per ms at 12 Mbit/s).
    assert!((32_000.0..34_000.0).contains(&min_rtt), "{min_rtt}");
    let goodput = sim.summary().flows[0].goodput_bps.unwrap();
    assert!(goodput > 0.8 * 12e6 * 1460.0 / 1500.0, "{goodput}");
    std::fs::remove_dir_all(&dir).unwrap();
}
