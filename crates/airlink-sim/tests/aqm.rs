//! Queue disciplines at a bottleneck under TCP, against what their RFCs say they do: CoDel
//! and FQ-CoDel hold the standing sojourn near `target` under a bulk CUBIC flow (RFC 8289 §1,
//! RFC 8290 §1), PIE near its reference delay (RFC 8033 §1), and FQ-CoDel keeps a sparse flow
//! out of a bulk flow's queue (RFC 8290 §1.3); drop-tail lets the queue fill.
use airlink_net::metrics::Column;
use airlink_scenario::Scenario;
use airlink_sim::{Simulation, Summary};

/// One CUBIC bulk flow (and optionally a sparse TCP flow limited to two segments in flight)
/// over 20 Mbit/s, 40 ms RTT, a 1000-packet buffer, with the given `aqm` value.
fn bottleneck(aqm: Option<&str>, sparse: bool, seconds: u32) -> String {
    let aqm = aqm.map_or(String::new(), |a| format!("aqm = {a}\n"));
    let mut text = format!(
        r#"
seed = 1
# The preset these thresholds were measured with (with `linux`, the sparse flow's p95 under
# FQ-CoDel is 2.0 ms, at the threshold: not yet looked into).
tcp_preset = "classic"
stop = "{seconds} s"
sample_interval = "0 s"
[wired]
delay = "15 ms"
[downlink.pipe]
rate = "20 Mbit/s"
delay = "5 ms"
queue = 1000
{aqm}
[uplink.pipe]
delay = "5 ms"
[[flow]]
congestion = "cubic"
[flow.tcp]
rwnd = "64 MB"
"#
    );
    if sparse {
        // A receive window of two segments: a ping-like flow, a couple of packets per round trip.
        text += "[[flow]]\nstart = \"1 s\"\n[flow.tcp]\nrwnd = \"3 kB\"\n";
    }
    text
}

/// The summary and each flow's RTT samples (ms) after `from_s`.
fn run(text: &str, from_s: f64) -> (Summary, Vec<Vec<f64>>) {
    let s = Scenario::from_toml(text, "aqm.toml").unwrap();
    let mut sim = Simulation::new(&s, true).unwrap();
    sim.run();
    let mut rtts = vec![Vec::new(); s.flow.len()];
    for (name, table) in sim.recorder().drain() {
        if name != "rtt" {
            continue;
        }
        let col = |n: &str| table.columns.iter().find(|c| c.0 == n).map(|c| c.1.clone());
        let (Some(Column::U64(t)), Some(Column::U64(f)), Some(Column::F64(r))) =
            (col("time_ns"), col("flow"), col("rtt_us"))
        else {
            panic!("rtt table columns")
        };
        for i in 0..t.len() {
            if t[i] as f64 * 1e-9 >= from_s {
                rtts[f[i] as usize].push(r[i] / 1000.0);
            }
        }
    }
    (sim.summary(), rtts)
}

fn quantile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
}

fn downlink_aqm(s: &Summary) -> airlink_net::aqm::AqmSummary {
    let l = s.links.iter().find(|l| l.name == "downlink").unwrap();
    l.aqm.clone().expect("the downlink has a discipline")
}

/// RFC 8289 §1: CoDel keeps the standing queue near `target` (5 ms) where drop-tail lets a
/// bulk flow fill its whole buffer (here half a second), and the link stays busy.
#[test]
fn codel_holds_the_sojourn_near_target_under_bulk_cubic() {
    let (tail, tail_rtt) = run(&bottleneck(Some("\"droptail\""), false, 20), 5.0);
    let (codel, codel_rtt) = run(&bottleneck(Some("\"codel\""), false, 20), 5.0);
    let (t, c) = (downlink_aqm(&tail), downlink_aqm(&codel));
    assert!(t.sojourn_p50_ms.unwrap() > 300.0, "drop-tail {t:?}");
    assert!(c.sojourn_p50_ms.unwrap() < 5.0, "codel {c:?}");
    assert!(c.sojourn_p95_ms.unwrap() < 15.0, "codel {c:?}");
    assert!(c.aqm_drops > 0 && c.overflow_drops == 0, "{c:?}");
    assert!(quantile(&codel_rtt[0], 0.5) < 50.0);
    assert!(quantile(&tail_rtt[0], 0.5) > 300.0);
    // CoDel costs little throughput against the full buffer.
    let goodput = |s: &Summary| s.flows[0].goodput_bps.unwrap();
    assert!(
        goodput(&codel) > 0.85 * goodput(&tail),
        "{} vs {}",
        goodput(&codel),
        goodput(&tail)
    );
}

/// RFC 8290 §1.3: a sparse flow sharing an FQ-CoDel queue with a bulk flow sees almost no
/// queueing (it is served from the new-flows list), where CoDel alone makes it wait behind the
/// bulk flow's standing queue, and drop-tail behind the whole buffer.
#[test]
fn fq_codel_isolates_a_sparse_flow_from_a_bulk_flow() {
    let base_ms = 40.0;
    let sparse_p95 = |aqm: &str| {
        let (s, rtt) = run(&bottleneck(Some(aqm), true, 20), 5.0);
        assert!(s.flows[1].bytes_delivered > 0);
        (
            quantile(&rtt[1], 0.95) - base_ms,
            quantile(&rtt[0], 0.95) - base_ms,
        )
    };
    let (fq, fq_bulk) = sparse_p95("\"fq_codel\"");
    let (codel, _) = sparse_p95("\"codel\"");
    let (tail, _) = sparse_p95("\"droptail\"");
    // Within about two packet times at 20 Mbit/s (1.2 ms) plus the sender's own ACK clocking.
    assert!(fq < 2.0, "fq_codel: the sparse flow queues {fq} ms");
    assert!(fq < fq_bulk, "the bulk flow queues {fq_bulk} ms");
    assert!(codel > 2.0 * fq, "codel {codel} ms vs fq_codel {fq} ms");
    assert!(tail > 300.0, "drop-tail {tail} ms");
}

/// RFC 8033 §1: PIE keeps the queueing delay near its reference (15 ms) on average.
#[test]
fn pie_holds_the_delay_near_its_reference() {
    let (s, _) = run(&bottleneck(Some("\"pie\""), false, 30), 5.0);
    let p = downlink_aqm(&s);
    let (mean, p50) = (p.sojourn_mean_ms.unwrap(), p.sojourn_p50_ms.unwrap());
    assert!((7.5..=22.5).contains(&mean), "{p:?}");
    assert!((7.5..=22.5).contains(&p50), "{p:?}");
    assert!(p.aqm_drops > 0);
}

/// The figures of the AQM docs page: every discipline on one bottleneck, 60 s.
/// `cargo test --release -p airlink-sim --test aqm -- --ignored --nocapture`
#[test]
#[ignore]
fn figures() {
    println!("| aqm | bulk RTT p50 (ms) | p95 | sparse RTT p50 | p95 | goodput (Mbit/s) | sojourn p50 / p95 / p99 (ms) | overflow / aqm drops / marks |");
    println!("|---|---|---|---|---|---|---|---|");
    for aqm in [
        "\"droptail\"",
        "\"codel\"",
        "\"fq_codel\"",
        "\"pie\"",
        "\"red\"",
        "{ kind = \"red\", min_th = 20, max_th = 60 }",
    ] {
        for sparse in [false, true] {
            let (s, rtts) = run(&bottleneck(Some(aqm), sparse, 60), 10.0);
            let a = downlink_aqm(&s);
            let sp = if sparse {
                format!(
                    "{:.1} | {:.1}",
                    quantile(&rtts[1], 0.5),
                    quantile(&rtts[1], 0.95)
                )
            } else {
                "- | -".into()
            };
            println!(
                "| {aqm} | {:.1} | {:.1} | {sp} | {:.2} | {:.1} / {:.1} / {:.1} | {} / {} / {} |",
                quantile(&rtts[0], 0.5),
                quantile(&rtts[0], 0.95),
                s.flows[0].goodput_bps.unwrap_or(0.0) / 1e6,
                a.sojourn_p50_ms.unwrap_or(f64::NAN),
                a.sojourn_p95_ms.unwrap_or(f64::NAN),
                a.sojourn_p99_ms.unwrap_or(f64::NAN),
                a.overflow_drops,
                a.aqm_drops,
                a.aqm_marks,
            );
        }
    }
}
