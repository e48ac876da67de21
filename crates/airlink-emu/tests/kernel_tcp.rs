//! The kernel's TCP sampled from inside a real emulation (needs root and iperf3; skipped with
//! a note otherwise). No timed assertions: what the rows say, not when they came.

use airlink_emu::{EmuOptions, Emulation, Role};
use airlink_net::metrics::{Column, Table};
use airlink_scenario::Scenario;

fn can_emulate() -> bool {
    let ok = airlink_emu::doctor::checks()
        .iter()
        .filter(|c| c.required)
        .all(|c| c.ok);
    let iperf3 = std::process::Command::new("iperf3")
        .arg("--version")
        .output()
        .is_ok();
    if !ok || !iperf3 {
        eprintln!("skipped: this machine cannot emulate or has no iperf3 (see `airlink doctor`)");
    }
    ok && iperf3
}

/// A 60 ms round trip: 10 ms wired each way, 10 ms down, 30 ms up.
const PATH: &str = r#"
[wired]
delay = "10 ms"
[downlink.pipe]
delay = "10 ms"
rate = "20 Mbit/s"
[uplink.pipe]
delay = "30 ms"
[[flow]]
port = 5301
congestion = "cubic"
"#;
const PATH_RTT_US: f64 = 60_000.0;
/// iperf3 sends whole 128 KiB blocks: 2 MiB is what it sends when asked for it.
const BYTES: u64 = 2 << 20;

fn u64s<'a>(t: &'a Table, name: &str) -> &'a [u64] {
    match t.columns.iter().find(|(n, _)| *n == name) {
        Some((_, Column::U64(v))) => v,
        other => panic!("column {name}: {other:?}"),
    }
}

fn f64s<'a>(t: &'a Table, name: &str) -> &'a [f64] {
    match t.columns.iter().find(|(n, _)| *n == name) {
        Some((_, Column::F64(v))) => v,
        other => panic!("column {name}: {other:?}"),
    }
}

fn strs<'a>(t: &'a Table, name: &str) -> &'a [&'static str] {
    match t.columns.iter().find(|(n, _)| *n == name) {
        Some((_, Column::Str(v))) => v,
        other => panic!("column {name}: {other:?}"),
    }
}

#[test]
fn a_kernel_download_is_sampled_with_its_cwnd_rtt_and_acked_bytes() {
    if !can_emulate() {
        return;
    }
    let s = Scenario::from_toml(PATH, "kernel.toml").unwrap();
    let mut emu = Emulation::start(&s, &EmuOptions::default()).unwrap();
    let mut server = emu
        .spawn(Role::Server, "iperf3 -s -1 -p 5301", None, None, true)
        .unwrap();
    // The server sends (-R): the download crosses the 20 Mbit/s downlink.
    let mut client = None;
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut c = emu
            .spawn(
                Role::Client,
                &format!("iperf3 -c $AIRLINK_SERVER -p 5301 -R -n {BYTES}"),
                None,
                None,
                true,
            )
            .unwrap();
        if c.wait().unwrap().success() {
            client = Some(());
            break;
        }
    }
    assert!(client.is_some(), "iperf3 never completed");
    let _ = server.wait();
    // The live state (`airlink top`) holds the flow's latest kernel sample: the data
    // connection's, the one that acknowledged the most.
    let state: serde_json::Value =
        serde_json::from_str(&emu.control(r#"{"op": "state"}"#)).unwrap();
    let kernel = &state["flows"][0]["kernel"];
    assert!(kernel["cwnd_bytes"].as_f64().unwrap() >= 1448.0, "{state}");
    assert!(
        kernel["srtt_ms"].as_f64().unwrap() >= PATH_RTT_US / 1e3 * 0.99,
        "{state}"
    );
    assert!(
        kernel["delivered_bytes"].as_u64().unwrap() > BYTES / 2,
        "{state}"
    );
    emu.stop();
    let mut flows: Vec<Table> = emu
        .drain()
        .into_iter()
        .filter(|(n, _)| *n == "flows")
        .map(|(_, t)| t)
        .collect();
    let mut table = flows.remove(0);
    for t in flows {
        table.append(t);
    }
    let flow = u64s(&table, "flow");
    let connection = u64s(&table, "connection");
    let acked = u64s(&table, "bytes_acked");
    assert!(!flow.is_empty(), "no kernel TCP rows");
    assert!(
        flow.iter().all(|&f| f == 0),
        "the flow on port 5301 is flow 0"
    );
    // The data connection: the one that acknowledged the most (the other is iperf3's control).
    let (data, _) = connection
        .iter()
        .zip(acked)
        .max_by_key(|(_, &a)| a)
        .unwrap();
    let side = strs(&table, "side");
    let time = u64s(&table, "time_ns");
    let rows: Vec<usize> = (0..flow.len())
        .filter(|&i| connection[i] == *data && side[i] == "server")
        .collect();
    assert!(rows.len() >= 3, "{} samples of the transfer", rows.len());
    // iperf3's client writes a 37-byte cookie on the data connection first: its end counts
    // as a sender until the download outgrows that, and never had more acknowledged.
    assert!((0..flow.len())
        .filter(|&i| connection[i] == *data && side[i] == "client")
        .all(|i| acked[i] <= 38));
    let srtt = f64s(&table, "srtt_us");
    let cwnd = f64s(&table, "cwnd_bytes");
    let min_rtt = f64s(&table, "min_rtt_us");
    let delivered = u64s(&table, "delivered_bytes");
    for &i in &rows {
        // Every RTT sample crosses the whole path; the emulator never delivers early.
        assert!(srtt[i] >= PATH_RTT_US * 0.99, "srtt {} µs", srtt[i]);
        assert!(
            min_rtt[i] >= PATH_RTT_US * 0.99,
            "min_rtt {} µs",
            min_rtt[i]
        );
        assert!(cwnd[i] >= 1448.0, "cwnd {}", cwnd[i]);
        assert_eq!(delivered[i], acked[i], "the server accepted the connection");
    }
    // Acknowledged bytes only grow, over time, to what was sent (less what the last sample,
    // taken before the connection closed, had not yet seen acknowledged).
    for w in rows.windows(2) {
        assert!(time[w[1]] > time[w[0]]);
        assert!(acked[w[1]] >= acked[w[0]]);
    }
    let last = *rows.last().unwrap();
    assert!(acked[last] <= BYTES + 1, "{} acked", acked[last]);
    assert!(
        acked[last] as f64 >= 0.5 * BYTES as f64,
        "{} of {BYTES} acked at the last sample",
        acked[last]
    );
    // CUBIC grew its window from the initial 10 segments.
    let max_cwnd = rows.iter().map(|&i| cwnd[i]).fold(0.0, f64::max);
    assert!(max_cwnd > 10.0 * 1448.0, "max cwnd {max_cwnd}");
}
