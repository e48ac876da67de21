//! netem's impairments on a `[link.NAME]`: the string and the table give the same run, a run
//! depends on its seed, corruption reaches the receiver's checksum, and bad options are refused
//! where they stand.
use airlink_scenario::Scenario;
use airlink_sim::Simulation;

fn scenario(seed: u64, impair: &str) -> String {
    format!(
        r#"seed = {seed}
stop = "20 s"
sample_interval = "0 s"
[host.server]
[host.client]
[link.down]
from = "server"
to = "client"
pipe = {{ rate = "10 Mbit/s", delay = "5 ms", queue = 100 }}
{impair}
[link.up]
from = "client"
to = "server"
pipe = {{ delay = "5 ms" }}
[[flow]]
server = "server"
client = "client"
congestion = "cubic"
"#
    )
}

fn run(text: &str) -> Simulation {
    let s = Scenario::from_toml(text, "netem.toml").unwrap();
    let mut sim = Simulation::new(&s, true).unwrap();
    sim.run();
    sim
}

#[test]
fn the_netem_string_and_the_table_give_the_same_run() {
    let string = run(&scenario(
        1,
        r#"netem = "delay 20ms 5ms distribution normal loss 1% duplicate 1% corrupt 0.5%""#,
    ));
    let table = run(&scenario(
        1,
        r#"impair = { delay = "20 ms", jitter = "5 ms", distribution = "normal", loss = "1 %", duplicate = "1 %", corrupt = "0.5 %" }"#,
    ));
    assert_eq!(string.summary_json(), table.summary_json());
    let other = run(&scenario(
        2,
        r#"netem = "delay 20ms 5ms distribution normal loss 1% duplicate 1% corrupt 0.5%""#,
    ));
    assert_ne!(string.summary_json(), other.summary_json());
    let f = &string.summary().flows[0];
    assert!(f.bytes_delivered > 1_000_000, "{f:?}");
    // Corrupted packets reach the client, whose checksum drops them: they are retransmitted.
    assert!(f.retransmissions > 0);
}

#[test]
fn rtt_follows_the_netem_delay() {
    let mut sim = run(&scenario(1, r#"netem = "delay 40ms""#));
    let r = &sim.recorder().rtt;
    let min = r.rtt_us.iter().cloned().fold(f64::INFINITY, f64::min);
    // 5 + 40 ms down, 5 ms up, plus serialising at 10 Mbit/s (at most 1.2 ms).
    assert!((50_000.0..51_300.0).contains(&min), "{min}");
}

#[test]
fn bad_netem_options_are_refused_by_name_at_their_place() {
    let text = scenario(1, r#"netem = "delay 10ms limit 100""#);
    let e = Scenario::from_toml(&text, "netem.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("netem.toml:10:") && e.contains("`limit`"), "{e}");
    let text = scenario(1, r#"impair = { delay = "10 ms", jitter_ms = 3 }"#);
    let e = Scenario::from_toml(&text, "netem.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("netem.toml:10:") && e.contains("jitter_ms"),
        "{e}"
    );
    let text = scenario(1, r#"impair = { reorder = "5 %" }"#);
    let e = Scenario::from_toml(&text, "netem.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("netem.toml:10:") && e.contains("delay"), "{e}");
}
