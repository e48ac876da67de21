use super::*;
use crate::units::QueueLimit;

const MINIMAL: &str = r#"
[downlink.ofdm4g]
modulation = "4qam"

[[flow]]
bytes = "1 MB"
"#;

fn err(text: &str) -> ScenarioError {
    Scenario::from_toml(text, "bad.toml").unwrap_err()
}

#[test]
fn ofdm_defaults_are_the_wipemu_study() {
    let s = Scenario::from_toml(MINIMAL, "scenarios/x.toml").unwrap();
    assert_eq!(s.name, "x");
    let Some(LinkModel::Ofdm4g(o)) = &s.downlink else {
        panic!()
    };
    assert_eq!(o.queue, QueueLimit::Packets(50));
    assert_eq!(
        (o.bins_per_second, o.symbols_per_frame, o.subbands),
        (1500, 108, 25)
    );
    assert_eq!(o.arq_delay.0, airlink_engine::Duration::from_millis(2));
    assert_eq!(o.channel.mean_snr.0, 16.0);
    assert_eq!(o.channel.shadowing_pole, 0.74);
    // The uplink is not the study's: left out, it is filled in (symmetric) when built.
    assert!(s.uplink.is_none());
    assert_eq!(s.flow[0].bytes.unwrap().0, 1_000_000);
    assert_eq!(
        (s.flow[0].app(), s.flow[0].congestion()),
        (App::Bulk, Congestion::Newreno)
    );
}

#[test]
fn unknown_keys_are_refused_with_their_place() {
    let e = err("[downlink.ofdm4g]\nmodulation = \"4qam\"\nqueue_size = 50\n\n[[flow]]\n");
    assert_eq!((e.line, e.column), (Some(3), Some(1)));
    assert!(
        e.message.contains("unknown field `queue_size`"),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("expected one of") || e.message.contains("expected"),
        "{}",
        e.message
    );
    assert!(e.to_string().starts_with("bad.toml:3:1: "));
}

#[test]
fn impossible_values_are_refused_with_their_place() {
    let cases = [
        ("[downlink.ofdm4g]\nqueue = 0\n[[flow]]\n", 2, 9, "at least 1 packet"),
        ("[downlink.pipe]\nrate = \"-2 Mbit/s\"\n[[flow]]\n", 2, 8, "positive"),
        ("[downlink.pipe]\nloss = 1.5\n[[flow]]\n", 2, 8, "[0, 1]"),
        ("[downlink.pipe]\nbit_error_rate = 0.6\n[[flow]]\n", 2, 18, "bit error rate 0.6: expected a bit error rate: a number in [0, 0.5]"),
        ("[uplink.pipe]\nbit_error_rate = -1e-6\n[[flow]]\n", 2, 18, "[0, 0.5]"),
        ("[downlink.pipe]\nbit_error_rate = \"60 %\"\n[[flow]]\n", 2, 18, "[0, 0.5]"),
        ("[downlink.pipe]\nerror_burst_bits = 0\n[[flow]]\n", 2, 20, "nonzero"),
        ("[downlink.pipe]\n[[flow]]\n[[change]]\nat = \"1 s\"\nlink = \"downlink\"\nset = { bit_error_rate = 0.7 }\n", 6, 26, "[0, 0.5]"),
        ("[downlink.ofdm4g]\nmodulation = \"512qam\"\n[[flow]]\n", 2, 14, "unknown modulation"),
        ("[wired]\ndelay = \"100\"\n[downlink.pipe]\n[[flow]]\n", 2, 9, "needs a unit"),
        ("[downlink.ofdm5g]\n[[flow]]\n", 1, 11, "unknown variant"),
        ("[downlink.pipe]\n[[flow]]\ncongestion = \"vegas\"\n", 3, 14, "unknown variant `vegas`"),
        ("[downlink.ofdm4g]\nstatic_subband = 25\n[[flow]]\n", 2, 18, "expected 0 to 24"),
        ("[downlink.ofdm4g.channel]\nprediction_nmse = 1.5\n[[flow]]\n", 2, 19, "outside [0, 1)"),
        ("[downlink.pipe]\n[[flow]]\n[[flow]]\n[flow.tcp]\nmtu = 20\n", 5, 7, "not a usable MTU"),
        // The second flow's table, not the first one's.
        ("[downlink.pipe]\n[[flow]]\n[flow.tcp]\nmtu = 1500\n[[flow]]\n[flow.tcp]\nmtu = 20\n", 7, 7, "not a usable MTU"),
        ("[downlink.pipe]\n[[flow]]\n[flow.tcp]\ntick = \"120 min\"\n", 4, 8, "expected a time from 0 ns to"),
        ("[downlink.pipe]\n[[flow]]\ncongestion = \"vegas\"\n", 3, 14, "`veno`, `afc`"),
        ("[downlink.pipe]\n[[flow]]\nprotocol = \"dccp\"\nccid = 4\n", 4, 8, "expected 2 (TCP-like) or 3"),
        ("[downlink.pipe]\n[[flow]]\nprotocol = \"udp\"\ncongestion = \"cubic\"\nrate = \"1 Mbit/s\"\n", 4, 14, "applies only to tcp flows"),
        ("[downlink.pipe]\n[[flow]]\nprotocol = \"udp\"\nrate = \"1 Mbit/s\"\necn = true\n", 5, 7, "`ecn` applies only to tcp flows"),
        ("[downlink.pipe]\n[[flow]]\nprotocol = \"dccp\"\necn = true\n", 4, 7, "`ecn` applies only to tcp flows"),
        ("[downlink.pipe]\n[[flow]]\necn = \"yes\"\n", 3, 7, "expected true or false"),
        // A key the file leaves out is reported at its flow's header.
        ("[downlink.pipe]\n[[flow]]\nprotocol = \"udp\"\n", 2, 1, "needs `rate`"),
        ("[downlink.pipe]\n[[flow]]\napp = \"file\"\n", 3, 7, "needs `bytes`"),
        ("[downlink.pipe]\n[[flow]]\nprotocol = \"udp\"\napp = \"bulk\"\n", 4, 7, "cbr or vbr"),
        ("[downlink.pipe]\n[[flow]]\ncongestion = \"cubic\"\n[flow.cubic]\nbeta = 1.2\n", 5, 8, "outside (0, 1)"),
        ("[downlink.pipe]\n[[flow]]\n[flow.veno]\nbeta = 3\n", 3, 1, "applies only to congestion = \"veno\""),
        ("[downlink.pipe]\n[[flow]]\nprotocol = \"udp\"\nrate = \"1 Mbit/s\"\npacket_size = \"0 B\"\n", 5, 15, "expected 1 to 65507 B"),
        ("[downlink.pipe]\n[[flow]]\nprotocol = \"udp\"\nrate = \"1 Mbit/s\"\nstart = \"5 s\"\nstop = \"2 s\"\n", 6, 8, "stops before it starts"),
        ("[downlink.pipe]\n[[flow]]\nstart = \"3 s\"\nstop = \"2 s\"\n", 4, 8, "stops before it starts"),
        ("[downlink.pipe]\n[[flow]]\n[flow.device]\nbuffer = 2\n", 3, 1, "expected a `rate` (bit/s) or a `packet_rate`"),
        ("[downlink.pipe]\n[[flow]]\n[flow.device]\nrate = \"3 Mbit/s\"\nbuffer = 0\n", 5, 10, "0 packets: expected 1 to 10000"),
        ("[downlink.pipe]\n[[flow]]\n[flow.device]\nrate = \"3 Mbit/s\"\nbuffer = -1\n", 5, 10, "expected a whole number from 0 to 4294967295"),
        // A device limit of 0 or less, written inline or as a table.
        ("[downlink.pipe]\n[[flow]]\ndevice = { rate = \"0 bit/s\" }\n", 3, 19, "a rate must be positive"),
        ("[downlink.pipe]\n[[flow]]\n[flow.device]\nrate = \"-3 Mbit/s\"\n", 4, 8, "a rate must be positive"),
        ("[downlink.pipe]\n[[flow]]\n[flow.device]\npacket_rate = 0\n", 4, 15, "0 packets per second: expected more than 0"),
        ("[downlink.pipe]\n[[flow]]\n[flow.device]\npacket_rate = -1\n", 4, 15, "-1 packets per second: expected more than 0"),
        ("[downlink.pipe]\n[[flow]]\ndevice = { packet_rate = 0 }\n", 3, 10, "flow.0.device.packet_rate: 0 packets per second"),
    ];
    for (text, line, column, what) in cases {
        let e = err(text);
        assert_eq!(
            (e.line, e.column),
            (Some(line), Some(column)),
            "{text}: {e}"
        );
        assert!(e.message.contains(what), "{text}: {}", e.message);
    }
}

#[test]
fn syntax_errors_have_a_place_too() {
    let e = err("[downlink.pipe\n");
    assert_eq!(e.line, Some(1));
}

#[test]
fn a_scenario_without_flows_is_refused() {
    let e = err("flow = []\n[downlink.pipe]\n");
    assert!(e.message.contains("at least one"), "{e}");
}

#[test]
fn overrides_change_values_and_are_validated() {
    let s = Scenario::from_toml(MINIMAL, "x.toml").unwrap();
    let t = s
        .with_overrides(&[
            "downlink.ofdm4g.arq_max_retransmissions=3".into(),
            "downlink.ofdm4g.channel.prediction_nmse=0.1".into(),
            "wired.delay=50 ms".into(),
            "flow.0.tcp.sack=false".into(),
            "seed=7".into(),
        ])
        .unwrap();
    let Some(LinkModel::Ofdm4g(o)) = &t.downlink else {
        panic!()
    };
    assert_eq!(o.arq_max_retransmissions, 3);
    assert_eq!(o.channel.prediction_nmse, 0.1);
    assert_eq!(
        t.wired.as_ref().unwrap().delay.0,
        airlink_engine::Duration::from_millis(50)
    );
    assert_eq!(t.flow[0].tcp.sack, Some(false));
    assert_eq!(t.seed, 7);

    let e = s
        .with_overrides(&["downlink.ofdm4g.arq_max=3".into()])
        .unwrap_err();
    assert!(e.to_string().contains("unknown"), "{e}");
    let e = s
        .with_overrides(&["downlink.ofdm4g.channel.prediction_nmse=2".into()])
        .unwrap_err();
    assert!(e.to_string().contains("outside [0, 1)"), "{e}");
    let e = s.with_overrides(&["seed".into()]).unwrap_err();
    assert!(e.to_string().contains("key=value"), "{e}");
    // The message names the override at fault, not just "--set".
    let e = s
        .with_overrides(&["seed=4".into(), "flow.0.tcp.mtu=20".into()])
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("--set flow.0.tcp.mtu=20: flow.0.tcp.mtu: 20 is not a usable MTU"),
        "{e}"
    );
}

#[test]
fn resolved_scenarios_round_trip() {
    let s = Scenario::from_toml(MINIMAL, "x.toml").unwrap();
    let text = s.to_toml();
    let again = Scenario::from_toml(&text, "x.toml").unwrap();
    assert_eq!(text, again.to_toml());
}

#[test]
fn the_emulation_table_is_strict_and_optional() {
    let s = Scenario::from_toml(MINIMAL, "x.toml").unwrap();
    assert_eq!(s.emulation, EmulationConfig::default());
    assert_eq!(s.emulation.mtu, 1500);
    let text = format!("{MINIMAL}\n[emulation]\nmtu = 9000\nsysctl = {{ \"net.ipv4.tcp_timestamps\" = 0, \"net.ipv4.tcp_sack\" = \"1\" }}\n");
    let s = Scenario::from_toml(&text, "x.toml").unwrap();
    assert_eq!(s.emulation.mtu, 9000);
    assert_eq!(s.emulation.sysctl["net.ipv4.tcp_timestamps"], "0");
    // The resolved scenario keeps the table and parses again.
    let again = Scenario::from_toml(&s.to_toml(), "again.toml").unwrap();
    assert_eq!(again.emulation, s.emulation);

    let e = err(&format!("{MINIMAL}\n[emulation]\nqdisc = \"fq\"\n"));
    assert!(e.message.contains("unknown field `qdisc`"), "{e}");
    let e = err(&format!(
        "{MINIMAL}\n[emulation]\nsysctl = {{ \"kernel.pid_max\" = 5 }}\n"
    ));
    assert!(e.message.contains("not a per-namespace sysctl"), "{e}");
    assert!(e.line.is_some());
    let e = err(&format!("{MINIMAL}\n[emulation]\nmtu = 20\n"));
    assert!(e.message.contains("expected 68 to 65535"), "{e}");
}

/// The second key for the kernel's congestion control is gone: a file or an override that
/// still uses it is told where the choice lives now, at the key's place.
#[test]
fn emulation_congestion_points_at_the_flows_key() {
    let e = err(&format!(
        "{MINIMAL}\n[emulation]\nmtu = 1500\ncongestion = \"cubic\"\n"
    ));
    assert!(
        e.message.starts_with("emulation.congestion: removed: each [[flow]]'s `congestion` now sets the kernel's congestion control in emulation too"),
        "{e}"
    );
    assert!(e.message.contains("--set flow.0.congestion=cubic"), "{e}");
    assert_eq!(
        e.snippet.as_deref(),
        Some("congestion = \"cubic\""),
        "placed at the key: {e}"
    );
    let s = Scenario::from_toml(MINIMAL, "x.toml").unwrap();
    let e = s
        .with_overrides(&["emulation.congestion=cubic".into()])
        .unwrap_err();
    assert!(
        e.message.contains("removed: each [[flow]]'s `congestion`"),
        "{e}"
    );
    assert_eq!(e.source, "--set emulation.congestion=cubic");
}

/// The default TCP preset is `linux`; a scenario's `tcp_preset` sets it for every flow that
/// names none (also flows an override brings), and `default` is still read as `classic`.
#[test]
fn tcp_preset_defaults_and_pins() {
    let flows = |s: &Scenario| {
        s.flow
            .iter()
            .map(FlowConfig::tcp_preset)
            .collect::<Vec<_>>()
    };
    let two =
        "[downlink.pipe]\nrate = \"1 Mbit/s\"\n[[flow]]\n[[flow]]\n[flow.tcp]\npreset = \"rfc\"\n";
    let s = Scenario::from_toml(two, "x.toml").unwrap();
    assert_eq!(flows(&s), [TcpPreset::Linux, TcpPreset::Rfc]);
    let pinned =
        Scenario::from_toml(&format!("tcp_preset = \"classic\"\n{two}"), "x.toml").unwrap();
    assert_eq!(flows(&pinned), [TcpPreset::Classic, TcpPreset::Rfc]);
    let old = Scenario::from_toml(&format!("tcp_preset = \"default\"\n{two}"), "x.toml").unwrap();
    assert_eq!(flows(&old), [TcpPreset::Classic, TcpPreset::Rfc]);
    // An override of the whole flow list keeps the file's pin; one of the pin moves it.
    let replaced = pinned
        .with_overrides(&["flow=[{ congestion = \"cubic\" }]".into()])
        .unwrap();
    assert_eq!(flows(&replaced), [TcpPreset::Classic]);
    let moved = pinned
        .with_overrides(&["tcp_preset=linux-2.4".into()])
        .unwrap();
    assert_eq!(flows(&moved), [TcpPreset::Linux24, TcpPreset::Rfc]);
}

#[test]
fn trace_downlinks_parse_without_reading_the_file() {
    let text =
        "downlink.trace = { file = \"does/not/exist.trace\", delay = \"20 ms\" }\n[[flow]]\n";
    let s = Scenario::from_toml(text, "t.toml").unwrap();
    let Some(LinkModel::Trace(t)) = &s.downlink else {
        panic!()
    };
    assert_eq!(t.file, "does/not/exist.trace");
    assert_eq!(t.delay.0, airlink_engine::Duration::from_millis(20));
    assert_eq!(t.queue, QueueLimit::Packets(1000));
    let e = err("downlink.trace = { file = \"x\", rate = \"1 Mbit/s\" }\n[[flow]]\n");
    assert!(e.message.contains("unknown field `rate`"), "{e}");
}

#[test]
fn trace_files_are_found_next_to_the_scenario() {
    let text = "[downlink.trace]\nfile = \"traces/lte.down\"\n[[flow]]\n";
    let s = Scenario::from_toml(text, "scenarios/x/s.toml").unwrap();
    let Some(LinkModel::Trace(t)) = &s.downlink else {
        panic!()
    };
    assert_eq!(
        std::path::Path::new(&t.file),
        std::path::Path::new("scenarios/x/traces/lte.down")
    );
    let s = Scenario::from_toml(
        &text.replace("traces/lte.down", "/abs/lte.down"),
        "scenarios/x/s.toml",
    )
    .unwrap();
    let Some(LinkModel::Trace(t)) = &s.downlink else {
        panic!()
    };
    assert_eq!(t.file, "/abs/lte.down");
}

#[test]
fn every_key_is_documented_in_the_users_terms() {
    let keys = crate::keys::keys();
    assert!(keys.len() > 80, "{} keys", keys.len());
    for k in &keys {
        assert!(!k.doc.is_empty(), "{} has no documentation", k.key);
        for rust in ["u8", "u32", "u64", "f64", "Option", "struct", "sequence"] {
            assert!(
                !k.accepts.split_whitespace().any(|w| w == rust),
                "{}: {}",
                k.key,
                k.accepts
            );
        }
    }
    let find = |key: &str| {
        keys.iter()
            .find(|k| k.key == key)
            .unwrap_or_else(|| panic!("{key} is not listed"))
    };
    assert_eq!(find("downlink.ofdm4g.queue").default.as_deref(), Some("50"));
    assert_eq!(find("stop").default.as_deref(), Some("\"600 s\""));
    assert!(find("wired.delay").accepts.contains("ms"));
    assert!(find("flow.N.tcp.rwnd").doc.contains("does not bind"));
    assert!(find("downlink.pipe.loss").accepts.contains("%"));
    let ecn = find("flow.N.ecn");
    assert_eq!(ecn.default.as_deref(), Some("false"));
    assert!(ecn.doc.contains("RFC 3168") && ecn.doc.contains("Default false"));
}

#[test]
fn every_key_of_a_full_scenario_is_listed() {
    // A scenario with every optional table present; each of its keys must be in `keys()`.
    let text = r#"
[access]
rate = "1 Mbit/s"
[downlink.ofdm4g]
[uplink.pipe]
rate = "1 Mbit/s"
[emulation]
mtu = 1500
[[flow]]
congestion = "cubic"
[flow.cubic]
"#;
    let s = Scenario::from_toml(text, "full.toml").unwrap();
    let doc: toml::Table = toml::from_str(&s.to_toml()).unwrap();
    let keys: std::collections::BTreeSet<String> =
        crate::keys::keys().into_iter().map(|k| k.key).collect();
    fn leaves(prefix: &str, v: &toml::Value, out: &mut Vec<String>) {
        match v {
            toml::Value::Table(t) => {
                for (k, v) in t {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    if !matches!(v, toml::Value::Array(a) if a.iter().all(|x| x.is_table())) {
                        out.push(key.clone());
                    }
                    leaves(&key, v, out);
                }
            }
            toml::Value::Array(a) if a.iter().all(|x| x.is_table()) => {
                for x in a {
                    leaves(&format!("{prefix}.N"), x, out);
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    leaves("", &toml::Value::Table(doc), &mut found);
    for k in found {
        assert!(keys.contains(&k), "{k} is not listed by `keys`");
    }
}

/// A dumbbell in the general form: two servers behind a router, one client.
const DUMBBELL: &str = r#"
[host.near]
[host.far]
[host.router]
[host.client]

[link.near-in]
from = "near"
to = "router"
pipe = { delay = "5 ms" }

[link.near-out]
from = "router"
to = "near"
pipe = { delay = "5 ms" }

[link.far-in]
from = "far"
to = "router"
pipe = { delay = "50 ms" }

[link.far-out]
from = "router"
to = "far"
pipe = { delay = "50 ms" }

[link.bottleneck]
from = "router"
to = "client"
[link.bottleneck.pipe]
rate = "10 Mbit/s"
delay = "5 ms"

[link.return]
from = "client"
to = "router"
pipe = { rate = "10 Mbit/s", delay = "5 ms" }

[[flow]]
server = "near"

[[flow]]
server = "far"
"#;

#[test]
fn general_topologies_route_each_flow_along_the_only_shortest_path() {
    let s = Scenario::from_toml(DUMBBELL, "d.toml").unwrap();
    let t = s.topology().unwrap();
    let names: Vec<&str> = t.links.iter().map(|l| l.name.as_str()).collect();
    // The file's order, not the alphabet's.
    assert_eq!(
        names,
        [
            "near-in",
            "near-out",
            "far-in",
            "far-out",
            "bottleneck",
            "return"
        ]
    );
    let path = |p: &Vec<usize>| p.iter().map(|&l| names[l]).collect::<Vec<_>>();
    assert_eq!(
        (path(&t.paths[0].0), path(&t.paths[0].1)),
        (vec!["near-in", "bottleneck"], vec!["return", "near-out"])
    );
    assert_eq!(
        (path(&t.paths[1].0), path(&t.paths[1].1)),
        (vec!["far-in", "bottleneck"], vec!["return", "far-out"])
    );
    assert_eq!(t.links[4].key, ["link", "bottleneck", "pipe"]);
}

#[test]
fn the_shorthand_is_the_same_chain_of_links() {
    let s = Scenario::from_toml("[downlink.pipe]\nrate = \"1 Mbit/s\"\n[uplink.trace]\nfile = \"up.trace\"\n[access]\ndelay = \"1 ms\"\n[[flow]]\n[[flow]]\n", "dir/s.toml").unwrap();
    let t = s.topology().unwrap();
    let names: Vec<&str> = t.links.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "wired.down",
            "downlink",
            "uplink",
            "wired.up",
            "access.0.down",
            "access.0.up",
            "access.1.down",
            "access.1.up"
        ]
    );
    assert_eq!(
        t.paths,
        vec![
            (vec![4, 0, 1], vec![2, 3, 5]),
            (vec![6, 0, 1], vec![2, 3, 7])
        ]
    );
    // Any model on the uplink, its trace file found beside the scenario.
    let Some(LinkModel::Trace(up)) = &s.uplink else {
        panic!()
    };
    assert_eq!(up.file, "dir/up.trace");
}

#[test]
fn bad_topologies_are_refused_at_their_place() {
    let with = |extra: &str| format!("{DUMBBELL}{extra}");
    let flow0 = |k: &str, v: &str| {
        DUMBBELL.replacen(
            "[[flow]]\nserver = \"near\"\n",
            &format!("[[flow]]\nserver = \"near\"\n{k} = {v}\n"),
            1,
        )
    };
    let cases: Vec<(String, usize, &str)> = vec![
        (
            flow0("path", r#"["near-in", "nowhere"]"#),
            41,
            "no link named \"nowhere\"",
        ),
        (
            flow0("path", r#"["far-in", "bottleneck"]"#),
            41,
            "starts at \"far\"",
        ),
        (flow0("path", r#"["near-in"]"#), 41, "ends at \"router\""),
        (
            flow0("return_path", r#"["return", "near-out", "near-in"]"#),
            41,
            "returns to \"router\"",
        ),
        (flow0("client", r#""mars""#), 41, "no host named \"mars\""),
        (flow0("client", r#""near""#), 41, "both \"near\""),
        (
            DUMBBELL.replacen(
                "to = \"router\"\npipe = { delay = \"5 ms\" }",
                "to = \"routr\"\npipe = { delay = \"5 ms\" }",
                1,
            ),
            9,
            "no host named \"routr\"",
        ),
        (with("[host.lonely]\n"), 44, "has no link"),
        (
            with("[link.extra]\nfrom = \"far\"\nto = \"near\"\n"),
            44,
            "0 models",
        ),
        (
            with("[link.extra]\nfrom = \"far\"\nto = \"far\"\npipe = {}\n"),
            46,
            "two different hosts",
        ),
        (with("[downlink.pipe]\n"), 44, "shorthand"),
        // A second way from the router to the client: which one is the file's to say.
        (
            with("[link.detour]\nfrom = \"router\"\nto = \"client\"\npipe = {}\n"),
            40,
            "several equally short paths",
        ),
        // Nothing leaves the client: no way back (reported at the flow, which names no client).
        (
            DUMBBELL.replace(
                "[link.return]\nfrom = \"client\"\nto = \"router\"",
                "[link.return]\nfrom = \"router\"\nto = \"near\"",
            ),
            39,
            "no path of links from \"client\"",
        ),
    ];
    for (text, line, needle) in cases {
        let e = err(&text);
        assert!(e.message.contains(needle), "{needle}: {}", e.message);
        assert_eq!(e.line, Some(line), "{needle}: {e}");
    }
    // Shorthand flows have no hosts to name.
    let e = err("[downlink.pipe]\nrate = \"1 Mbit/s\"\n[[flow]]\nserver = \"a\"\n");
    assert!(
        e.message
            .contains("applies only to scenarios with [host] and [link] tables"),
        "{}",
        e.message
    );
    assert_eq!(e.line, Some(4));
    let e = err("[[flow]]\n");
    assert!(
        e.message.contains("expected a [downlink.MODEL] table"),
        "{}",
        e.message
    );
}

#[test]
fn timed_changes_are_checked_before_anything_runs() {
    let step = "stop = \"60 s\"\n[downlink.pipe]\nrate = \"10 Mbit/s\"\n[[flow]]\n[[change]]\n";
    let ok = Scenario::from_toml(&format!("{step}at = \"20 s\"\nlink = \"downlink\"\nset = {{ rate = \"2 Mbit/s\", delay = \"5 ms\" }}\n"), "s.toml").unwrap();
    assert_eq!(
        ok.change[0].set.as_ref().unwrap().names(),
        ["rate", "delay"]
    );
    let cases: Vec<(String, usize, &str)> = vec![
        (format!("{step}at = \"61 s\"\nlink = \"downlink\"\nstate = \"down\"\n"), 6, "after the scenario's stop"),
        (format!("{step}at = \"1 s\"\nlink = \"downlnk\"\nstate = \"down\"\n"), 7, "no link named \"downlnk\""),
        (format!("{step}at = \"1 s\"\nlink = \"uplink\"\nstate = \"up\"\n"), 8, "already up"),
        (format!("{step}at = \"1 s\"\nlink = \"uplink\"\n"), 7, "expected either `set`"),
        (format!("{step}at = \"1 s\"\n"), 6, "expected a `link` or a `flow`"),
        (format!("{step}at = \"1 s\"\nlink = \"downlink\"\nset = {{ rate = \"0 bit/s\" }}\n"), 8, "rate"),
        (format!("{step}at = \"1 s\"\nlink = \"downlink\"\nset = {{}}\n"), 8, "at least one parameter"),
        (format!("{step}at = \"1 s\"\nflow = 0\npath = [\"downlink\"]\n"), 7, "needs named hosts"),
        (format!("{step}at = \"1 s\"\nflow = 3\npath = [\"downlink\"]\n"), 7, "flow 3 does not exist"),
        // A trace link's rate is its trace: it cannot be set.
        (
            "[downlink.trace]\nfile = \"x.trace\"\n[[flow]]\n[[change]]\nat = \"1 s\"\nlink = \"downlink\"\nset = { rate = \"1 Mbit/s\" }\n".into(),
            7,
            "this trace link cannot change its `rate` while it runs: it can change none",
        ),
        (format!("{DUMBBELL}[[change]]\nat = \"1 s\"\nflow = 1\npath = [\"near-in\", \"bottleneck\"]\n"), 47, "starts at \"near\""),
        (format!("{DUMBBELL}[[change]]\nat = \"1 s\"\nflow = \"far\"\npath = [\"far-in\", \"bottleneck\"]\n"), 46, "no flow named \"far\": no flow has a name"),
        (format!("{DUMBBELL}[[change]]\nat = \"1 s\"\nflow = -1\npath = [\"far-in\", \"bottleneck\"]\n"), 46, "expected a flow's name, or its index"),
        // A pipe has no channel; an OFDM channel's mean SNR is all that model can change.
        (format!("{step}at = \"1 s\"\nlink = \"downlink\"\nset = {{ mean_snr = \"3 dB\" }}\n"), 8, "this pipe link cannot change its `mean_snr`"),
        (
            "[downlink.ofdm4g]\n[[flow]]\n[[change]]\nat = \"1 s\"\nlink = \"downlink\"\nset = { mean_snr = \"300 dB\" }\n".into(),
            6,
            "300 dB: expected -50 dB to 100 dB",
        ),
        (
            "[downlink.ofdm4g]\n[[flow]]\n[[change]]\nat = \"1 s\"\nlink = \"downlink\"\nset = { rate = \"1 Mbit/s\" }\n".into(),
            6,
            "this ofdm4g link cannot change its `rate` while it runs: it can change mean_snr",
        ),
    ];
    for (text, line, needle) in cases {
        let e = err(&text);
        assert!(e.message.contains(needle), "{needle}: {}", e.message);
        assert_eq!(e.line, Some(line), "{needle}: {e}");
    }
}

#[test]
fn flows_have_unique_names_that_changes_may_use() {
    let named = DUMBBELL.replacen(
        "[[flow]]\nserver = \"near\"\n",
        "[[flow]]\nname = \"near\"\nserver = \"near\"\n",
        1,
    );
    let handoff = format!(
        "{named}[[change]]\nat = \"1 s\"\nflow = \"near\"\npath = [\"near-in\", \"bottleneck\"]\n"
    );
    let s = Scenario::from_toml(&handoff, "s.toml").unwrap();
    assert_eq!(s.flow_index(s.change[0].flow.as_ref().unwrap()), Some(0));
    let twice = named.replacen(
        "[[flow]]\nserver = \"far\"\n",
        "[[flow]]\nname = \"near\"\nserver = \"far\"\n",
        1,
    );
    let e = err(&twice);
    assert!(
        e.message.contains("flow 0 is named \"near\" already"),
        "{}",
        e.message
    );
    assert_eq!(e.line, Some(44), "{e}");
}

#[test]
fn a_cell_gives_each_flow_an_uplink_and_copies_make_its_users() {
    let cell = "[downlink.cell]\nscheduler = \"tcp-pf\"\n[uplink.pipe]\nrate = \"64 kbit/s\"\n[[flow]]\nname = \"user\"\ncopies = 3\n[[flow]]\n";
    let s = Scenario::from_toml(cell, "c.toml").unwrap();
    let names: Vec<_> = s.flow.iter().map(|f| f.name.clone()).collect();
    assert_eq!(
        names,
        [
            Some("user.0".into()),
            Some("user.1".into()),
            Some("user.2".into()),
            None
        ]
    );
    let t = s.topology().unwrap();
    let links: Vec<&str> = t.links.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        links,
        [
            "wired.down",
            "downlink",
            "uplink.0",
            "wired.up",
            "uplink.1",
            "uplink.2",
            "uplink.3"
        ]
    );
    assert_eq!(t.paths[0], (vec![0, 1], vec![2, 3]));
    assert_eq!(t.paths[2], (vec![0, 1], vec![5, 3]));
    let cases: Vec<(String, usize, &str)> = vec![
        // The fourth flow is the second table's.
        (
            format!("{cell}stop = \"0 s\"\n"),
            9,
            "flow.1.stop: the flow stops before it starts",
        ),
        (
            cell.replace("copies = 3", "copies = 0"),
            7,
            "0: expected 1 to 1000 copies",
        ),
        (
            "[downlink.pipe]\nrate = \"1 Mbit/s\"\n[uplink.cell]\n[[flow]]\n".into(),
            3,
            "a cell is a base station's downlink",
        ),
        (
            "[downlink.cell]\nomega = 2\n[[flow]]\n".into(),
            2,
            "outside (0, 1]",
        ),
        (
            "[downlink.cell]\nalpha = 0\n[[flow]]\n".into(),
            2,
            "0 is outside (0, 1]",
        ),
        (
            "[downlink.cell]\nbeta = 1.5\n[[flow]]\n".into(),
            2,
            "1.5 is outside (0, 1]",
        ),
        (
            "[downlink.cell]\nradius = \"-2 km\"\n[[flow]]\n".into(),
            2,
            "a distance must be positive",
        ),
        (
            "[downlink.cell]\nslot = \"0 ms\"\n[[flow]]\n".into(),
            2,
            "expected a slot from",
        ),
        (
            "[downlink.cell]\nrates = []\n[[flow]]\n".into(),
            2,
            "0 rates: expected 1 to 64",
        ),
        (
            "[downlink.cell]\nrates = [\"640 kbit/s\", \"320 kbit/s\"]\n[[flow]]\n".into(),
            2,
            "320 kbit/s after 640 kbit/s: expected rates in increasing order",
        ),
        (
            "[downlink.cell]\nscheduler = \"fastest\"\n[[flow]]\n".into(),
            2,
            "unknown variant `fastest`, expected one of `rr`, `max`, `pf`, `tcp-pf`, `tcp-max`",
        ),
    ];
    for (text, line, needle) in cases {
        let e = err(&text);
        assert!(e.message.contains(needle), "{needle}: {}", e.message);
        assert_eq!(e.line, Some(line), "{needle}: {e}");
    }
    // A cell on the way back from a client is refused where the flow's return is decided.
    let back = format!("{DUMBBELL}[link.air]\nfrom = \"client\"\nto = \"far\"\ncell = {{}}\n")
        .replace(
            "[[flow]]\nserver = \"far\"\n",
            "[[flow]]\nserver = \"far\"\nreturn_path = [\"air\"]\n",
        );
    let e = err(&back);
    assert!(
        e.message
            .contains("a cell carries its base station's downlink only"),
        "{}",
        e.message
    );
}

#[test]
fn live_changes_get_the_timed_changes_checks_against_the_links_down_now() {
    let s = Scenario::from_toml(
        "[downlink.pipe]\nrate = \"10 Mbit/s\"\n[uplink.pipe]\n[[flow]]\n",
        "x.toml",
    )
    .unwrap();
    let change =
        |text: &str| -> ChangeConfig { toml::from_str(&format!("at = \"0 s\"\n{text}")).unwrap() };
    assert!(s
        .validate_live_change(
            &change("link = \"downlink\"\nset = { rate = \"2 Mbit/s\" }"),
            &[]
        )
        .is_ok());
    // The key path is the change's own, without `change.N`.
    let (key, m) = s
        .validate_live_change(
            &change("link = \"downlink\"\nset = { mean_snr = \"9 dB\" }"),
            &[],
        )
        .unwrap_err();
    assert_eq!((key, m.as_str()), (vec!["set".to_string()], "this pipe link cannot change its `mean_snr` while it runs: it can change rate, delay, queue, loss, bit_error_rate"));
    let (key, _) = s
        .validate_live_change(
            &change("link = \"downlink\"\nset = { delay = \"100000 s\" }"),
            &[],
        )
        .unwrap_err();
    assert_eq!(key, ["set", "delay"]);
    // Down and up alternate with what is down now, not with the start of the run.
    let down = change("link = \"uplink\"\nstate = \"down\"");
    let up = change("link = \"uplink\"\nstate = \"up\"");
    assert!(s.validate_live_change(&down, &[]).is_ok());
    assert_eq!(
        s.validate_live_change(&down, &["uplink"]).unwrap_err().1,
        "link \"uplink\" is already down then"
    );
    assert!(s.validate_live_change(&up, &["uplink"]).is_ok());
    assert_eq!(
        s.validate_live_change(&up, &[]).unwrap_err().1,
        "link \"uplink\" is already up then"
    );
    assert_eq!(
        s.find_flow(&FlowRef::Index(2)).unwrap_err(),
        "flow 2 does not exist: the scenario has 1 ([[flow]] tables count from 0)"
    );
}

#[test]
fn a_gprs_link_is_a_pipe_at_its_rlc_data_rate_in_its_granularity() {
    let gprs = |extra: &str| {
        let s = Scenario::from_toml(&format!("[downlink.gprs]\n{extra}\n[[flow]]\n"), "g.toml")
            .unwrap();
        let Some(LinkModel::Gprs(g)) = s.downlink else {
            panic!()
        };
        g.pipe()
    };
    // CS-2: 30 B of RLC data per 20-ms block per timeslot; 4 timeslots by default.
    let ip = gprs("");
    assert_eq!((ip.rate.unwrap().0, ip.unit), (48_000, None));
    assert_eq!(
        (ip.delay.0, ip.queue),
        (Duration::from_millis(300), QueueLimit::Packets(30))
    );
    assert_eq!(gprs("granularity = \"rlc\"").unit.unwrap().0, 30);
    // A 200-B LLC frame takes 7 whole CS-2 blocks.
    assert_eq!(gprs("granularity = \"llc\"").unit.unwrap().0, 210);
    assert_eq!(
        gprs("granularity = \"llc\"\nllc_frame = \"100 B\"\ncoding_scheme = \"CS-4\"")
            .unit
            .unwrap()
            .0,
        100
    );
    let cs1 = gprs("coding_scheme = \"CS-1\"\ntimeslots = 1\ngranularity = \"60 B\"");
    assert_eq!((cs1.rate.unwrap().0, cs1.unit.unwrap().0), (8_000, 60));
    assert_eq!(
        gprs("coding_scheme = \"CS-4\"\ntimeslots = 8")
            .rate
            .unwrap()
            .0,
        160_000
    );
}

#[test]
fn gprs_refusals_name_the_key() {
    for (extra, line, column, what) in [
        ("coding_scheme = \"CS-5\"", 2, 17, "unknown variant `CS-5`"),
        ("timeslots = 9", 2, 13, "expected 1 to 8"),
        ("timeslots = 0", 2, 13, "expected 1 to 8"),
        (
            "granularity = \"100 B\"",
            2,
            15,
            "100 B is not a whole number of CS-2 RLC blocks (30 B each)",
        ),
        ("granularity = \"bit\"", 2, 15, "\"ip\", \"llc\", \"rlc\""),
        (
            "granularity = \"llc\"\nllc_frame = \"0 B\"",
            3,
            13,
            "expected 1 B to",
        ),
    ] {
        let e = err(&format!("[downlink.gprs]\n{extra}\n[[flow]]\n"));
        assert_eq!(
            (e.line, e.column),
            (Some(line), Some(column)),
            "{extra}: {e}"
        );
        assert!(e.message.contains(what), "{extra}: {e}");
    }
}

/// The (line, column) of the value on the last line of `text` that is `line`.
fn value_place(text: &str, line: &str) -> (Option<usize>, Option<usize>) {
    let n = text
        .lines()
        .enumerate()
        .filter(|l| l.1 == line)
        .last()
        .unwrap_or_else(|| panic!("no line {line:?}"))
        .0
        + 1;
    (Some(n), Some(line.find('=').unwrap() + 3))
}

#[test]
fn a_dccp_packet_larger_than_the_mtu_is_refused_at_its_size() {
    let dccp = |extra: &str| {
        format!("[downlink.pipe]\nrate = \"10 Mbit/s\"\n[[flow]]\nprotocol = \"dccp\"\n{extra}")
    };
    // The default (1424 B, the study's largest) and the largest that fits 1500 B pass.
    for ok in [
        "",
        "packet_size = \"1424 B\"\n",
        "packet_size = \"1444 B\"\n",
        "ccid = 2\npacket_size = \"1444 B\"\n",
    ] {
        Scenario::from_toml(&dccp(ok), "ok.toml").unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    let text = dccp("packet_size = \"1600 B\"\n");
    let e = err(&text);
    assert_eq!(
        (e.line, e.column),
        value_place(&text, "packet_size = \"1600 B\""),
        "{e}"
    );
    assert_eq!(
        e.to_string().lines().next().unwrap(),
        "bad.toml:5:15: flow.0.packet_size: a DCCP packet of 1600 B payload is 1656 B with its headers (IP 20 B, DCCP up to 36 B), \
         more than the MTU of 1500 B ([emulation] mtu): DCCP never fragments; use at most 1444 B"
    );
    let e = err(&dccp(
        "app = \"cbr\"\nrate = \"1 Mbit/s\"\npacket_size = \"1445 B\"\n",
    ));
    assert!(e.message.ends_with("is 1501 B with its headers (IP 20 B, DCCP up to 36 B), more than the MTU of 1500 B ([emulation] mtu): DCCP never fragments; use at most 1444 B"), "{e}");
    // A larger MTU admits it; a smaller one refuses even the default, at the flow's table.
    Scenario::from_toml(
        &format!(
            "{}[emulation]\nmtu = 9000\n",
            dccp("packet_size = \"1600 B\"\n")
        ),
        "jumbo.toml",
    )
    .unwrap();
    let small = format!("[emulation]\nmtu = 1280\n{}", dccp(""));
    let e = err(&small);
    assert_eq!((e.line, e.column), (Some(5), Some(1)), "{e}");
    assert!(
        e.message.contains(
            "a DCCP packet of 1424 B payload (the default packet_size) is 1480 B with its headers"
        ),
        "{e}"
    );
    assert!(e.message.ends_with("more than the MTU of 1280 B ([emulation] mtu): DCCP never fragments; set packet_size to at most 1224 B"), "{e}");
    // A VBR frame is cut into datagrams of packet_size: large frames pass, and a frame below
    // packet_size that does not fit is refused at the frames.
    Scenario::from_toml(
        &dccp("app = \"vbr\"\nframe_sizes = [\"12 kB\", \"3 kB\"]\nframe_rate = 25\n"),
        "vbr.toml",
    )
    .unwrap();
    let vbr = format!(
        "[emulation]\nmtu = 1280\n{}",
        dccp("app = \"vbr\"\nframe_sizes = [\"200 B\", \"1300 B\"]\nframe_rate = 25\n")
    );
    let e = err(&vbr);
    assert_eq!(
        (e.line, e.column),
        value_place(&vbr, "frame_sizes = [\"200 B\", \"1300 B\"]"),
        "{e}"
    );
    assert!(e.message.contains("flow.0.frame_sizes: a frame of 1300 B is one DCCP packet, which is 1356 B with its headers"), "{e}");
    assert!(
        e.message.ends_with(
            "use frames of at most 1224 B, or a packet_size of at most 1224 B to cut them"
        ),
        "{e}"
    );
    // UDP may be fragmented by IP: not refused.
    Scenario::from_toml("[downlink.pipe]\nrate = \"10 Mbit/s\"\n[[flow]]\nprotocol = \"udp\"\nrate = \"1 Mbit/s\"\npacket_size = \"1600 B\"\n", "udp.toml").unwrap();
    // A copy's error is its table's.
    let copies = format!(
        "{}[[flow]]\nprotocol = \"dccp\"\ncopies = 2\npacket_size = \"1500 B\"\n",
        dccp("")
    );
    let e = err(&copies);
    assert_eq!(
        (e.line, e.column),
        value_place(&copies, "packet_size = \"1500 B\""),
        "{e}"
    );
    assert!(
        e.message
            .starts_with("flow.1.packet_size: a DCCP packet of 1500 B payload"),
        "{e}"
    );
}

#[test]
fn overrides_that_make_a_dccp_packet_too_large_are_refused_by_name() {
    let s = Scenario::from_toml(
        "[downlink.pipe]\nrate = \"10 Mbit/s\"\n[[flow]]\nprotocol = \"dccp\"\n",
        "x.toml",
    )
    .unwrap();
    assert!(s
        .with_overrides(&["flow.0.packet_size=1444 B".into()])
        .is_ok());
    let e = s
        .with_overrides(&["seed=3".into(), "flow.0.packet_size=1600 B".into()])
        .unwrap_err();
    assert_eq!(e.line, None);
    assert_eq!(
        e.to_string(),
        "--set flow.0.packet_size=1600 B: flow.0.packet_size: a DCCP packet of 1600 B payload is 1656 B with its headers \
         (IP 20 B, DCCP up to 36 B), more than the MTU of 1500 B ([emulation] mtu): DCCP never fragments; use at most 1444 B"
    );
    let e = s
        .with_overrides(&["emulation.mtu=1400".into()])
        .unwrap_err();
    assert!(e.to_string().starts_with("--set emulation.mtu=1400: flow.0.packet_size: a DCCP packet of 1424 B payload (the default packet_size)"), "{e}");
    assert!(
        e.to_string().ends_with("set packet_size to at most 1344 B"),
        "{e}"
    );
}

/// Two access points, each a WLAN, and a server behind both; `sta1` starts with `bss1`.
const WLANS: &str = r#"stop = "20 s"
[host.server]
[host.ap1]
[host.ap2]
[host.sta1]

[link.bss1]
from = "ap1"
wlan = { stations = ["sta1"] }

[link.bss2]
from = "ap2"
wlan = { stations = [] }

[link.ap1-up]
from = "ap1"
to = "server"
pipe = { delay = "1 ms" }

[link.ap1-down]
from = "server"
to = "ap1"
pipe = { delay = "1 ms" }

[link.ap2-up]
from = "ap2"
to = "server"
pipe = { delay = "1 ms" }

[link.ap2-down]
from = "server"
to = "ap2"
pipe = { delay = "1 ms" }

[[flow]]
server = "server"
client = "sta1"
"#;

#[test]
fn bad_hand_offs_are_refused_at_their_key_with_line_and_column() {
    let h = |at: &str, station: &str, from: &str, to: &str| {
        format!("[[handoff]]\nat = \"{at}\"\nstation = \"{station}\"\nfrom = \"{from}\"\nto = \"{to}\"\n")
    };
    let good = format!(
        "{WLANS}{}{}",
        h("5 s", "sta1", "bss1", "bss2"),
        h("10 s", "sta1", "bss2", "bss1")
    );
    let s = Scenario::from_toml(&good, "w.toml").unwrap();
    assert_eq!(s.topology().unwrap().handoffs.len(), 2);
    // (the scenario's hand-offs, the line the error is on, what it says)
    let cases: Vec<(String, &str, &str)> = vec![
        // Outside the run: before it (no negative times), at or after its end, or an outage past it.
        (h("-1 s", "sta1", "bss1", "bss2"), "at = \"-1 s\"", "a duration cannot be negative"),
        (h("25 s", "sta1", "bss1", "bss2"), "at = \"25 s\"", "handoff.0.at: 25 s plus the outage (50 ms) ends after the run's stop (20 s): expected a hand-off within the run"),
        (h("20 s", "sta1", "bss1", "bss2"), "at = \"20 s\"", "ends after the run's stop (20 s)"),
        (format!("{}outage = \"2 s\"\n", h("19 s", "sta1", "bss1", "bss2")), "at = \"19 s\"", "19 s plus the outage (2 s) ends after the run's stop"),
        (format!("{}outage = \"0 s\"\n", h("5 s", "sta1", "bss1", "bss2")), "outage = \"0 s\"", "handoff.0.outage: expected a positive outage"),
        // Overlapping outages of one station, whatever the order in the file.
        (
            format!("{}outage = \"1 s\"\n{}", h("5 s", "sta1", "bss1", "bss2"), h("5.5 s", "sta1", "bss2", "bss1")),
            "at = \"5.5 s\"",
            "handoff.1.at: 5.5 s is within the outage of handoff 0 (until 6 s): expected the station's hand-offs not to overlap",
        ),
        (
            format!("{}{}outage = \"1 s\"\n", h("5.5 s", "sta1", "bss2", "bss1"), h("5 s", "sta1", "bss1", "bss2")),
            "at = \"5.5 s\"",
            "handoff.0.at: 5.5 s is within the outage of handoff 1 (until 6 s)",
        ),
        // A station that does not exist, or is not in `from` then.
        (h("5 s", "sta9", "bss1", "bss2"), "station = \"sta9\"", "handoff.0.station: no host named \"sta9\": expected one of"),
        (h("5 s", "server", "bss1", "bss2"), "station = \"server\"", "\"server\" is not a station of \"bss1\" at 5 s: its stations then are \"sta1\""),
        (h("5 s", "sta1", "bss2", "bss1"), "station = \"sta1\"", "\"sta1\" is not a station of \"bss2\" at 5 s: its stations then are none"),
        (
            format!("{}{}", h("5 s", "sta1", "bss1", "bss2"), h("9 s", "sta1", "bss1", "bss2")),
            "station = \"sta1\"",
            "handoff.1.station: \"sta1\" is not a station of \"bss1\" at 9 s",
        ),
        // An access point's WLAN that does not exist, or a link that is not a WLAN.
        (h("5 s", "sta1", "bss7", "bss2"), "from = \"bss7\"", "handoff.0.from: no WLAN named \"bss7\": expected one of \"bss1\", \"bss2\""),
        (h("5 s", "sta1", "bss1", "ap2-down"), "to = \"ap2-down\"", "handoff.0.to: no WLAN named \"ap2-down\""),
        (h("5 s", "sta1", "ap1", "bss2"), "from = \"ap1\"", "no WLAN named \"ap1\""),
        (h("5 s", "sta1", "bss1", "bss1"), "to = \"bss1\"", "the station stays with \"bss1\": expected another WLAN"),
    ];
    for (handoffs, line, what) in cases {
        let text = format!("{WLANS}{handoffs}");
        let e = err(&text);
        assert_eq!((e.line, e.column), value_place(&text, line), "{what}: {e}");
        assert!(e.message.contains(what), "{what}: {e}");
        assert!(e.to_string().starts_with(&format!(
            "bad.toml:{}:{}: ",
            e.line.unwrap(),
            e.column.unwrap()
        )));
    }
    // A hand-off needs WLANs: the shorthand has none.
    let e = err(&format!(
        "[downlink.pipe]\nrate = \"1 Mbit/s\"\n[[flow]]\n{}",
        h("1 s", "client", "downlink", "uplink")
    ));
    assert_eq!((e.line, e.column), (Some(4), Some(1)), "{e}");
    assert!(
        e.message.contains("hand-offs move stations between WLANs"),
        "{e}"
    );
}

#[test]
fn names_with_bidirectional_text_controls_are_refused_where_they_are() {
    for c in [
        '\u{202E}', '\u{202A}', '\u{2066}', '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}',
    ] {
        let text = format!("name = \"run{c}1\"\n[downlink.pipe]\nrate = \"1 Mbit/s\"\n[[flow]]\nname = \"a{c}b\"\nbytes = \"1 MB\"\n");
        let e = err(&text);
        assert_eq!((e.line, e.column), (Some(1), Some(8)), "{e}");
        assert!(e.message.contains(&format!("U+{:04X}", c as u32)), "{e}");
        let e = err(&text.replace(&format!("run{c}1"), "run1"));
        assert_eq!((e.line, e.column), (Some(5), Some(8)), "{e}");
        assert!(
            e.message.starts_with("flow.0.name: ")
                && e.message.contains("bidirectional-text control"),
            "{e}"
        );
    }
    // Other scripts are names like any.
    Scenario::from_toml("name = \"שלום-x\"\n[downlink.pipe]\nrate = \"1 Mbit/s\"\n[[flow]]\nname = \"流\"\nbytes = \"1 MB\"\n", "ok.toml").unwrap();
}

#[test]
fn dccp_bulk_needs_a_rate_on_its_way_down() {
    let flow = "[[flow]]\nprotocol = \"dccp\"\nccid = 2\n";
    // No rate anywhere: refused at the flow, saying what to add.
    let text = format!("stop = \"5 s\"\n[downlink.pipe]\n[uplink.pipe]\ndelay = \"5 ms\"\n{flow}");
    let e = err(&text);
    assert_eq!((e.line, e.column), (Some(6), Some(12)), "{e}");
    assert!(
        e.message.starts_with("flow.0.protocol: ")
            && e.message.contains("expected a `rate` on [downlink.pipe]"),
        "{e}"
    );
    // The same with copies: the error is at the table.
    let e = err(&format!("{text}copies = 3\n"));
    assert_eq!(e.line, Some(6), "{e}");
    // A rate on any link of the way down, or a source with a rate: accepted.
    for ok in [
        text.replace(
            "[downlink.pipe]\n",
            "[downlink.pipe]\nrate = \"1 Mbit/s\"\n",
        ),
        text.replace(
            "[downlink.pipe]\n",
            "[wired]\nrate = \"1 Mbit/s\"\n[downlink.pipe]\n",
        ),
        format!("{text}app = \"cbr\"\nrate = \"1 Mbit/s\"\n"),
        text.replace("\"dccp\"\nccid = 2", "\"tcp\""),
    ] {
        Scenario::from_toml(&ok, "ok.toml").unwrap_or_else(|e| panic!("{e}\n{ok}"));
    }
    // A rate on the way up does not slow the data.
    let e = err(&text.replace("[uplink.pipe]\n", "[uplink.pipe]\nrate = \"1 Mbit/s\"\n"));
    assert!(e.message.starts_with("flow.0.protocol: "), "{e}");
}

#[test]
fn memory_budget_has_a_floor_and_a_default() {
    let s = Scenario::from_toml(MINIMAL, "ok.toml").unwrap();
    assert_eq!(s.memory_budget.0, 4_000_000_000);
    assert!(
        s.to_toml().contains("memory_budget = \"4 GB\""),
        "{}",
        s.to_toml()
    );
    let e = err(&format!("memory_budget = \"1 MB\"\n{MINIMAL}"));
    assert_eq!((e.line, e.column), (Some(1), Some(17)), "{e}");
    assert!(
        e.message
            .contains("memory_budget: 1 MB: expected at least 10 MB"),
        "{e}"
    );
}

#[test]
fn problems_found_when_building_are_placed_at_their_key_or_flow() {
    let text = "[downlink.trace]\nfile = \"x.trace\"\n[[flow]]\ncopies = 3\n[[flow]]\nprotocol = \"udp\"\n";
    let e = ScenarioError::placed("s.toml", text, "downlink.trace.file: cannot read it".into());
    assert_eq!((e.line, e.column), (Some(2), Some(8)), "{e}");
    // Flow 3 is the fourth flow: the second table, after three copies.
    let e = ScenarioError::placed("s.toml", text, "flow 3: device: too small".into());
    assert_eq!((e.line, e.column), (Some(6), Some(12)), "{e}");
    let e = ScenarioError::placed("s.toml", text, "a problem of the whole file".into());
    assert_eq!(e.line, None);
    assert_eq!(e.to_string(), "s.toml: a problem of the whole file");
}

#[test]
fn copies_can_be_overridden_from_set() {
    let cell = "[downlink.cell]\nscheduler = \"pf\"\n[uplink.pipe]\nrate = \"64 kbit/s\"\n[[flow]]\nname = \"user\"\ncopies = 21\n[[flow]]\nname = \"other\"\n";
    let s = Scenario::from_toml(cell, "c.toml").unwrap();
    assert_eq!(s.flow.len(), 22);
    let names = |s: &Scenario| {
        s.flow
            .iter()
            .map(|f| f.name.clone().unwrap_or_default())
            .collect::<Vec<_>>()
    };
    // Any copy's `copies` stands for its table: 21 users become 10, the other flow stays.
    for i in [0, 7, 20] {
        let o = s.with_overrides(&[format!("flow.{i}.copies=10")]).unwrap();
        let n = names(&o);
        assert_eq!(n.len(), 11, "flow.{i}: {n:?}");
        assert_eq!(n[0], "user.0");
        assert_eq!(n[9], "user.9");
        assert_eq!(n[10], "other");
    }
    // One copy: the table's name without a suffix; a flow that was no copy grows copies.
    assert_eq!(
        names(&s.with_overrides(&["flow.3.copies=1".into()]).unwrap()),
        ["user", "other"]
    );
    let o = s.with_overrides(&["flow.21.copies=2".into()]).unwrap();
    assert_eq!(o.flow.len(), 23);
    assert_eq!(names(&o)[21..], ["other.0", "other.1"]);
    // Overridden twice, it re-expands again; the copy's other overrides go with it.
    let twice = o
        .with_overrides(&["flow.0.copies=3".into(), "flow.0.start=\"1 s\"".into()])
        .unwrap();
    assert_eq!(twice.flow.len(), 5);
    assert!(twice.flow[..3]
        .iter()
        .all(|f| f.start.earliest().0 == Duration::from_secs(1)));
    // A whole list is expanded as a file's tables are.
    let o = s
        .with_overrides(&["flow=[{name=\"u\", copies=10}]".into()])
        .unwrap();
    assert_eq!(o.flow.len(), 10);
    assert_eq!(o.flow[9].name.as_deref(), Some("u.9"));
    // Refused with a reason: no copies, too many, two copies of one table.
    for (set, needle) in [
        (vec!["flow.0.copies=0"], "0: expected 1 to 1000 copies"),
        (vec!["flow.0.copies=2000"], "expected 1 to 1000 copies"),
        (
            vec!["flow.0.copies=2", "flow.1.copies=3"],
            "two copies of flow table 0 set `copies`",
        ),
    ] {
        let set: Vec<String> = set.into_iter().map(String::from).collect();
        let e = s.with_overrides(&set).unwrap_err();
        assert!(e.message.contains(needle), "{set:?}: {e}");
    }
}

#[test]
fn a_drawn_start_is_read_per_copy_and_refused_with_its_place_when_malformed() {
    let base = "[downlink.cell]\nscheduler = \"pf\"\n[uplink.pipe]\nrate = \"64 kbit/s\"\n[[flow]]\nname = \"user\"\ncopies = 4\n";
    let s = Scenario::from_toml(
        &format!("stop = \"25 s\"\n{base}start = {{ uniform = [\"0 s\", \"5 s\"] }}\n"),
        "c.toml",
    )
    .unwrap();
    let five = Duration::from_secs(5);
    for (i, f) in s.flow.iter().enumerate() {
        assert_eq!(f.start.earliest().0, Duration::ZERO);
        assert_eq!(f.start.latest().0, five);
        assert!(f.start.time(1, i).0 <= five);
    }
    // Copies draw apart (four equal draws of a continuous uniform would be a broken stream).
    let draws: std::collections::BTreeSet<_> = (0..4)
        .map(|i| s.flow[i].start.time(1, i))
        .map(|t| t.0)
        .collect();
    assert_eq!(draws.len(), 4);
    // It round-trips through the override path and can be set from `--set`.
    let o = Scenario::from_toml(base, "c.toml")
        .unwrap()
        .with_overrides(&["flow.2.start={uniform=[\"1 s\", \"2 s\"]}".into()])
        .unwrap();
    assert_eq!(o.flow[2].start.latest().0, Duration::from_secs(2));
    assert_eq!(o.flow[1].start.latest().0, Duration::ZERO);
    for (start, needle) in [
        (
            "{ uniform = [\"5 s\", \"1 s\"] }",
            "expected the earliest time first",
        ),
        (
            "{ normal = [\"0 s\", \"1 s\"] }",
            "unknown distribution \"normal\"",
        ),
        ("{ uniform = [\"0 s\"] }", "2"),
        ("{ uniform = [\"0 s\", \"5\"] }", "needs a unit"),
        ("{}", "an empty table"),
        ("3", "a time like"),
    ] {
        let text = format!("{base}start = {start}\n");
        let e = err(&text);
        assert_eq!(e.line, Some(8), "{start}: {e}");
        assert!(e.column.is_some(), "{start}: {e}");
        assert!(e.message.contains(needle), "{start}: {e}");
    }
    // The latest start must come before the scenario's stop.
    let e = err(&format!(
        "stop = \"4 s\"\n{base}start = {{ uniform = [\"0 s\", \"5 s\"] }}\n"
    ));
    assert!(
        e.message.contains("starts after the scenario's stop"),
        "{e}"
    );
    assert_eq!(e.line, Some(9), "{e}");
}

/// The shorthand's uploads: `direction = "up"` sends the data through the uplink and the
/// ACKs through the downlink; the general form and `port` refuse it, with the way to say it.
#[test]
fn shorthand_uploads_take_the_uplink() {
    let text = "[downlink.pipe]\nrate = \"10 Mbit/s\"\n[uplink.pipe]\nrate = \"1 Mbit/s\"\n[access]\ndelay = \"5 ms\"\n[[flow]]\n[[flow]]\ndirection = \"up\"\n";
    let s = Scenario::from_toml(text, "x.toml").unwrap();
    let t = s.topology().unwrap();
    let names = |p: &[usize]| {
        p.iter()
            .map(|&l| t.links[l].name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(&t.paths[0].0),
        ["access.0.down", "wired.down", "downlink"]
    );
    assert_eq!(names(&t.paths[1].0), ["uplink", "wired.up", "access.1.up"]);
    assert_eq!(
        names(&t.paths[1].1),
        ["access.1.down", "wired.down", "downlink"]
    );
    // The resolved scenario keeps the direction.
    let again = Scenario::from_toml(&s.to_toml(), "again.toml").unwrap();
    assert_eq!(again.flow[1].direction, Some(Direction::Up));

    let e = err("[downlink.pipe]\nrate = \"1 Mbit/s\"\n[[flow]]\nserver = \"client\"\n");
    assert!(
        e.message
            .ends_with("whose uploads say `direction = \"up\"`"),
        "{e}"
    );
    let e = err("[downlink.pipe]\nrate = \"1 Mbit/s\"\n[[flow]]\ndirection = \"sideways\"\n");
    assert!(
        e.message
            .contains("unknown variant `sideways`, expected `down` or `up`"),
        "{e}"
    );
    let e =
        err("[downlink.pipe]\nrate = \"1 Mbit/s\"\n[[flow]]\nport = 5201\ndirection = \"up\"\n");
    assert!(
        e.message
            .starts_with("flow.0.direction: `direction` is for airlink's own flows"),
        "{e}"
    );
    assert_eq!(e.line, Some(5));
    let general = "[host.a]\n[host.b]\n[link.ab]\nfrom = \"a\"\nto = \"b\"\npipe = { rate = \"1 Mbit/s\" }\n[link.ba]\nfrom = \"b\"\nto = \"a\"\npipe = { rate = \"1 Mbit/s\" }\n[[flow]]\nserver = \"a\"\nclient = \"b\"\ndirection = \"up\"\n";
    let e = err(general);
    assert!(
        e.message
            .starts_with("flow.0.direction: `direction` belongs to the shorthand"),
        "{e}"
    );
}
