//! The TCP-AFC study's satellite experiments (scenarios/afc/geo.toml): a 20 MB file over a
//! 2 Mbit/s GEO link with bit errors, TCP-AFC against SACK TCP, throughput at each stage of
//! the transfer (the study's Table 2); and without bit errors, against a competing TCP flow,
//! AFC behaves like TCP.
use airlink_net::metrics::Column;
use airlink_scenario::Scenario;
use airlink_sim::Simulation;

const GEO: &str = include_str!("../../../scenarios/afc/geo.toml");

/// Table 2's stages, MB.
const STAGES: [f64; 7] = [0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 20.0];

/// Throughput (bytes/s since the start) when delivery first reached each stage.
fn stages(congestion: &str, ber: f64) -> Vec<f64> {
    let s = Scenario::from_toml(GEO, "geo.toml").unwrap();
    let s = s
        .with_overrides(&[
            format!("flow.0.congestion={congestion}"),
            format!("downlink.pipe.bit_error_rate={ber}"),
            format!("uplink.pipe.bit_error_rate={ber}"),
        ])
        .unwrap();
    let mut sim = Simulation::new(&s, true).unwrap();
    let mut reached = vec![f64::NAN; STAGES.len()];
    loop {
        let done = sim.run_until(sim.now() + airlink_engine::Duration::from_secs(10));
        for (name, table) in sim.recorder().drain() {
            if name != "flows" {
                continue;
            }
            let col = |n: &str| {
                table
                    .columns
                    .iter()
                    .find(|(c, _)| *c == n)
                    .map(|(_, v)| v.clone())
                    .unwrap()
            };
            let (Column::U64(time), Column::U64(delivered)) =
                (col("time_ns"), col("delivered_bytes"))
            else {
                panic!()
            };
            for (t, d) in time.iter().zip(&delivered) {
                for (i, mb) in STAGES.iter().enumerate() {
                    if reached[i].is_nan() && *d as f64 >= mb * 1e6 {
                        reached[i] = *d as f64 / (*t as f64 / 1e9);
                    }
                }
            }
        }
        if done {
            break;
        }
    }
    // The run ends at the last delivery, possibly between two samples.
    let f = &sim.summary().flows[0];
    assert!(f.completed, "{congestion} at BER {ber} did not finish");
    *reached.last_mut().unwrap() = f.goodput_bps.unwrap() / 8.0;
    reached
}

/// The study counted 90 (TCP) and 93 (AFC) losses in a 20 MB transfer at its nominal BER of
/// 1e-5: a packet loss rate of about 0.65 %, which is a bit error rate of 5.4e-7 on 1500-byte
/// packets, not 1e-5 (11.3 % of packets). Its Table 2: TCP 74 → 36 kB/s, AFC 78 → 82 kB/s,
/// AFC/TCP 2.26 at 20 MB. At the error rate its loss count implies, airlink gives nearly the
/// same (measured, seed 1: TCP 24-34 kB/s, AFC 75-112 kB/s, 2.70 at 20 MB); at a literal 1e-5 both
/// collapse into timeouts and AFC gains less.
#[test]
fn afc_keeps_its_rate_where_sack_tcp_collapses() {
    let tcp = stages("newreno", 5.4e-7);
    let afc = stages("afc", 5.4e-7);
    for (i, mb) in STAGES.iter().enumerate() {
        println!(
            "{mb:>4} MB: TCP {:>7.0} B/s  AFC {:>7.0} B/s  ratio {:.2}",
            tcp[i],
            afc[i],
            afc[i] / tcp[i]
        );
    }
    let ratio = afc[6] / tcp[6];
    assert!((1.7..=3.2).contains(&ratio), "AFC/TCP at 20 MB: {ratio}");
    // From 1 MB on, AFC is ahead at every stage, as in the study.
    assert!(
        (1..STAGES.len()).all(|i| afc[i] > 1.3 * tcp[i]),
        "{tcp:?} {afc:?}"
    );

    let tcp = stages("newreno", 1e-5);
    let afc = stages("afc", 1e-5);
    println!(
        "BER 1e-5, 20 MB: TCP {:.0} B/s, AFC {:.0} B/s",
        tcp[6], afc[6]
    );
    assert!(afc[6] > tcp[6], "{tcp:?} {afc:?}");
}

/// Without bit errors, against a competing SACK TCP flow, the only losses are the modem
/// queue's: AFC should take about TCP's share. It does with a buffer of one bandwidth-delay
/// product or more (measured: +20 % at 100 packets, +6 % at 200), where an overflow costs a
/// flow several packets and so a second hole. With smaller buffers a flow loses one packet
/// per overflow, which AFC's rule takes for a random loss: it then gets 25-45 % more than TCP
/// (20-50 packets). The study does not give its modem's buffer.
#[test]
fn afc_behaves_like_tcp_under_congestion() {
    let run = |congestion: &str, queue: u32| {
        let s = Scenario::from_toml(GEO, "geo.toml").unwrap();
        let mut s = s
            .with_overrides(&[
                format!("flow.0.congestion={congestion}"),
                "downlink.pipe.bit_error_rate=0".into(),
                "uplink.pipe.bit_error_rate=0".into(),
                format!("downlink.pipe.queue={queue}"),
            ])
            .unwrap();
        let mut competitor = s.flow[0].clone();
        competitor.congestion = Some(airlink_scenario::Congestion::Newreno);
        s.flow.push(competitor);
        let mut sim = Simulation::new(&s, false).unwrap();
        sim.run();
        let summary = sim.summary();
        let rate = |i: usize| summary.flows[i].goodput_bps.unwrap();
        (rate(0), rate(1))
    };
    for queue in [100, 200] {
        let (tcp, other_with_tcp) = run("newreno", queue);
        let (afc, other_with_afc) = run("afc", queue);
        println!("queue {queue}: TCP {tcp:.0} vs TCP {other_with_tcp:.0} bit/s; AFC {afc:.0} vs TCP {other_with_afc:.0} bit/s");
        assert!(
            (afc / tcp - 1.0).abs() < 0.25,
            "queue {queue}: AFC {afc} vs TCP {tcp}"
        );
        assert!(
            other_with_afc / other_with_tcp > 0.8,
            "queue {queue}: the competitor {other_with_afc} vs {other_with_tcp}"
        );
    }
}
