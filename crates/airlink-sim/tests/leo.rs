//! The LEO access link in a run: `[downlink.leo]` alone runs (every key has a default), the RTT
//! never beats the physical bound, and it jumps at the reconfiguration instants (12, 27, 42,
//! 57 s after the start) and is smooth between them.
use airlink_scenario::Scenario;
use airlink_sim::Simulation;

#[test]
fn rtt_changes_at_reconfigurations_and_is_smooth_between() {
    // A window-limited flow keeps the queue empty, so its RTT samples are the propagation.
    let text = "stop = \"70 s\"\nsample_interval = \"0 s\"\n[wired]\ndelay = \"1 ms\"\n[downlink.leo]\n[uplink.leo]\n[[flow]]\ncongestion = \"cubic\"\n[flow.tcp]\nrwnd = \"30 kB\"\n";
    let s = Scenario::from_toml(text, "leo.toml").unwrap();
    let mut sim = Simulation::new(&s, true).unwrap();
    sim.run();
    let r = &sim.recorder().rtt;
    let samples: Vec<(f64, f64)> = r
        .time_ns
        .iter()
        .zip(&r.rtt_us)
        .map(|(&t, &v)| (t as f64 / 1e9, v / 1e3))
        .collect();
    assert!(samples.len() > 1000);
    // Up and down through 550 km at least, plus 2 ms of wire.
    let bound_ms = 4.0 * 550e3 / 299_792_458.0 * 1e3 + 2.0;
    let min = samples.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
    assert!(min >= bound_ms, "{min} < {bound_ms}");
    let instants = [12.0, 27.0, 42.0, 57.0];
    // The lowest RTT in each 0.5 s window: smooth within an epoch, a step across an instant.
    let window = |from: f64| {
        samples
            .iter()
            .filter(|s| s.0 >= from && s.0 < from + 0.5)
            .map(|s| s.1)
            .fold(f64::INFINITY, f64::min)
    };
    let mut steps = 0;
    for &t in &instants {
        // Samples can carry an RTT measured before the instant for up to one RTT after it.
        let (before, after) = (window(t - 0.6), window(t + 0.2));
        println!("{t} s: {before:.3} ms before, {after:.3} ms after");
        if (after - before).abs() > 0.3 {
            steps += 1;
        }
        let (a, b) = (window(t + 3.0), window(t + 3.5));
        assert!((a - b).abs() < 0.3, "at {t} s + 3: {a} vs {b}");
    }
    // The highest-elevation rule keeps a satellite that is still the highest, so not every
    // instant changes it (with this run's phase, one of four does).
    assert!(steps >= 1, "{steps} steps at the instants");
}

#[test]
fn bad_leo_keys_are_refused_at_their_place() {
    let text = "[downlink.leo]\nterminal_lat = 95\n[[flow]]\n";
    let e = Scenario::from_toml(text, "leo.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("leo.toml:2:") && e.contains("expected -90 to 90"),
        "{e}"
    );
}
