//! End-to-end checks through real namespaces (need root; skipped with a note otherwise).
//! No timed assertions: counts, orderings and lower bounds only.

use airlink_emu::{EmuOptions, Emulation, Role};
use airlink_scenario::Scenario;

fn can_emulate() -> bool {
    let ok = airlink_emu::doctor::checks()
        .iter()
        .filter(|c| c.required)
        .all(|c| c.ok);
    if !ok {
        eprintln!(
            "skipped: this machine cannot create namespaces and TUN devices (see `airlink doctor`)"
        );
    }
    ok
}

const PIPES: &str = r#"
sample_interval = "50 ms"
[wired]
delay = "10 ms"
[downlink.pipe]
delay = "10 ms"
rate = "10 Mbit/s"
[uplink.pipe]
delay = "20 ms"
[[flow]]
"#;

#[test]
fn ping_crosses_both_paths_and_never_beats_the_delay() {
    if !can_emulate() {
        return;
    }
    let s = Scenario::from_toml(PIPES, "pipes.toml").unwrap();
    let dir = std::env::temp_dir().join(format!("airlink-emu-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut emu = Emulation::start(
        &s,
        &EmuOptions {
            pcap_dir: Some(dir.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    let out = std::fs::File::create(dir.join("ping.txt")).unwrap();
    let mut child = emu
        .spawn(
            Role::Client,
            "ping -n -c 5 -i 0.05 $AIRLINK_SERVER",
            Some(out),
            None,
            true,
        )
        .unwrap();
    let status = child.wait().unwrap();
    let text = std::fs::read_to_string(dir.join("ping.txt")).unwrap();
    assert!(status.success(), "{text}");
    let rtts: Vec<f64> = text
        .lines()
        .filter_map(|l| l.split("time=").nth(1))
        .map(|t| t.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(rtts.len(), 5, "{text}");
    // 10 + 10 down, 20 + 10 up: never below 50 ms.
    assert!(rtts.iter().all(|&r| r >= 50.0), "{rtts:?}");
    let summary = emu.stop();
    assert_eq!(summary.links.len(), 4);
    for l in &summary.links {
        assert!(l.packets_out >= 5, "{l:?}");
    }
    // Only the pings: IPv6 is off before the devices exist.
    assert_eq!(
        summary.datapath.downlink.packets,
        5,
        "{}",
        summary.to_json()
    );
    let series = emu.drain();
    assert!(series
        .iter()
        .any(|(name, t)| *name == "links" && t.rows() > 0));
    // Both pcaps hold the 5 requests and 5 replies.
    for side in ["client", "server"] {
        let len = std::fs::metadata(dir.join(format!("{side}.pcap")))
            .unwrap()
            .len();
        assert!(len > 24 + 10 * 16, "{side}.pcap has {len} bytes");
    }
    if std::env::var_os("AIRLINK_KEEP").is_none() {
        std::fs::remove_dir_all(&dir).ok();
    }
}
