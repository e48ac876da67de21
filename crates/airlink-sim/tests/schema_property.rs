//! Property test over the whole scenario schema: every scenario that validation accepts runs
//! to its stop time (up to 2 s) with a bounded number of events and bounded peak heap (measured
//! by a counting allocator, as the dumbbell bench does), within its `memory_budget`. Values are
//! drawn log-uniformly across each key's domain and a little beyond it, so refusals are
//! exercised too; every refusal must say where in the file it is. A path without a rate runs as
//! fast as its windows allow (bounded by window / round trip); flows come in copies, and names
//! carry any characters.
//!
//! `PROPTEST_CASES=N` runs more cases (5000 for the figures in the project notes); the test prints
//! how many were accepted and run, and the largest event count and heap seen.

use airlink_scenario::Scenario;
use airlink_sim::Simulation;
use proptest::prelude::*;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Mutex;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{Counting, PEAK};

#[global_allocator]
static ALLOC: Counting = Counting;

/// Peak heap a 2 s run may use above what was live before it: validation bounds every queue,
/// delay line and window to 500000 packets of about 250 B each.
const MAX_HEAP: usize = 1 << 30;
/// The longest simulated time an accepted scenario runs.
const RUN_S: u64 = 2;
/// Each scenario's `memory_budget`: a run over it stops, and the test fails.
const BUDGET: &str = "1 GB";

/// A value spread log-uniformly over [lo, hi].
fn log_between(lo: f64, hi: f64) -> impl Strategy<Value = f64> {
    (lo.ln()..=hi.ln()).prop_map(f64::exp)
}

fn rate() -> impl Strategy<Value = String> {
    // Up to 20 Gbit/s: the domain ends at 10.
    log_between(1e3, 2e10).prop_map(|r| format!("{} bit/s", r.round().max(1.0)))
}

fn duration(hi_s: f64) -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0 s".to_string()),
        log_between(1e-6, hi_s).prop_map(|s| format!("{s:.6} s"))
    ]
}

fn queue() -> impl Strategy<Value = String> {
    prop_oneof![
        log_between(1.0, 1.2e6).prop_map(|n| format!("{}", n.round() as u64)),
        log_between(100.0, 1.2e9).prop_map(|b| format!("\"{} B\"", b.round() as u64)),
    ]
}

fn probability() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just("0".to_string()),
        2 => log_between(1e-7, 0.5).prop_map(|p| format!("{p:e}")),
        1 => (0.0..=100.0f64).prop_map(|p| format!("\"{p:.3} %\"")),
        1 => Just("1".to_string()),
    ]
}

fn pipe(name: &str, must_rate: bool) -> impl Strategy<Value = String> {
    let name = name.to_string();
    let rate = if must_rate {
        rate().prop_map(Some).boxed()
    } else {
        proptest::option::weighted(0.6, rate()).boxed()
    };
    (rate, duration(20.0), queue(), probability(), probability()).prop_map(
        move |(rate, delay, queue, loss, ber)| {
            let mut t = format!("[{name}]\ndelay = \"{delay}\"\nqueue = {queue}\nloss = {loss}\n");
            // Bit errors on most links would lose nearly every packet; keep them rare.
            if ber.len() < 8 {
                t += &format!("bit_error_rate = {ber}\n");
            }
            if let Some(r) = rate {
                t += &format!("rate = \"{r}\"\n");
            }
            t
        },
    )
}

fn ofdm4g() -> impl Strategy<Value = String> {
    (
        queue(),
        log_between(1.0, 2e5),
        log_between(1.0, 2e5),
        log_between(1.0, 2048.0),
        prop_oneof![Just("static"), Just("best")],
        prop_oneof![Just("adaptive"), Just("bpsk"), Just("16qam"), Just("256qam")],
        0u32..40,
        log_between(8.0, 2048.0),
        (-60.0..110.0f64, 0.0..1200.0f64, log_between(1e6, 4e11), log_between(0.001, 2e4), 0.0..0.99f64, 0.0..35.0f64, any::<bool>()),
    )
        .prop_map(|(queue, bins, symbols, subbands, alloc, modulation, arq, sinusoids, (snr, kmh, carrier, spacing, nmse, sigma, errors))| {
            let subbands = subbands.round() as u64;
            format!(
                "[downlink.ofdm4g]\nqueue = {queue}\nbins_per_second = {}\nsymbols_per_frame = {}\nsubbands = {subbands}\n\
                 static_subband = {}\nallocation = \"{alloc}\"\nmodulation = \"{modulation}\"\narq_max_retransmissions = {arq}\n\
                 channel_errors = {errors}\n[downlink.ofdm4g.channel]\nsinusoids = {}\nmean_snr = \"{snr:.1} dB\"\nspeed = \"{kmh:.1} km/h\"\n\
                 carrier = \"{carrier:.0} Hz\"\nshadowing_spacing = \"{spacing} m\"\nprediction_nmse = {nmse:.3}\nshadowing_sigma = \"{sigma:.1} dB\"\n",
                bins.round() as u64,
                symbols.round() as u64,
                subbands / 2,
                sinusoids.round() as u64,
            )
        })
}

fn trace(dir: std::path::PathBuf) -> impl Strategy<Value = String> {
    (
        proptest::collection::vec(0u64..4, 1..200),
        duration(10.0),
        queue(),
    )
        .prop_map(move |(counts, delay, queue)| {
            let mut text = String::new();
            for (ms, n) in counts.iter().enumerate() {
                for _ in 0..*n {
                    text += &format!("{}\n", ms + 1);
                }
            }
            text += &format!("{}\n", counts.len() + 1);
            let path = dir.join(format!(
                "t{}.trace",
                text.len() ^ counts.iter().sum::<u64>() as usize
            ));
            std::fs::write(&path, &text).unwrap();
            format!(
                "[downlink.trace]\nfile = {:?}\ndelay = \"{delay}\"\nqueue = {queue}\n",
                path.to_str().unwrap()
            )
        })
}

fn flow() -> impl Strategy<Value = String> {
    let tcp = (
        prop_oneof![
            Just("reno"),
            Just("newreno"),
            Just("cubic"),
            Just("veno"),
            Just("afc")
        ],
        prop_oneof![Just("default"), Just("rfc"), Just("linux-2.4")],
        proptest::option::of(log_between(1.0, 1e9)),
        proptest::option::of(68u32..9001),
        proptest::option::of(log_between(1.0, 2e9)),
        proptest::option::of(1u32..1200),
        proptest::option::of(1u32..1200),
        any::<bool>(),
    )
        .prop_map(|(cc, preset, bytes, mtu, rwnd, iw, ack, ts)| {
            let mut t = format!("[[flow]]\nprotocol = \"tcp\"\ncongestion = \"{cc}\"\n");
            if let Some(b) = bytes {
                t += &format!("bytes = \"{} B\"\n", b.round() as u64);
            }
            t += &format!("[flow.tcp]\npreset = \"{preset}\"\ntimestamps = {ts}\n");
            if let Some(m) = mtu {
                t += &format!("mtu = {m}\n");
            }
            if let Some(w) = rwnd {
                t += &format!("rwnd = \"{} B\"\n", w.round() as u64);
            }
            if let Some(w) = iw {
                t += &format!("initial_window = {w}\n");
            }
            if let Some(a) = ack {
                t += &format!("ack_every = {a}\n");
            }
            t
        });
    let media = (
        prop_oneof![Just("udp"), Just("dccp")],
        prop_oneof![Just(2u8), Just(3u8)],
        prop_oneof![Just("cbr"), Just("vbr"), Just("bulk")],
        rate(),
        log_between(1.0, 70_000.0),
        proptest::collection::vec(log_between(1.0, 200_000.0), 1..6),
        log_between(0.1, 20_000.0),
        log_between(2e-4, 5.0).prop_map(|s| format!("{s:.6} s")),
    )
        .prop_map(|(proto, ccid, app, rate, size, frames, fps, report)| {
            let app = if proto == "udp" && app == "bulk" { "cbr" } else { app };
            let mut t = format!("[[flow]]\nprotocol = \"{proto}\"\napp = \"{app}\"\npacket_size = \"{} B\"\nreport_interval = \"{report}\"\n", size.round() as u64);
            if proto == "dccp" {
                t += &format!("ccid = {ccid}\n");
            }
            match app {
                "cbr" => t += &format!("rate = \"{rate}\"\n"),
                "vbr" => {
                    let f: Vec<String> = frames.iter().map(|b| format!("\"{} B\"", b.round() as u64)).collect();
                    t += &format!("frame_sizes = [{}]\nframe_rate = {fps:.3}\n", f.join(", "));
                }
                _ => {}
            }
            t
        });
    let name = proptest::option::weighted(
        0.2,
        proptest::collection::vec(
            prop_oneof![
                8 => proptest::char::range('a', 'z'),
                1 => Just('\u{202E}'),
                1 => Just('\u{2067}'),
                1 => Just('\u{200F}'),
                1 => proptest::char::any(),
            ],
            1..6,
        ),
    );
    let copies =
        prop_oneof![12 => Just(1u32), 4 => 2u32..20, 2 => Just(300u32), 1 => Just(1001u32)];
    (prop_oneof![tcp, media], name, copies).prop_map(|(flow, name, copies)| {
        let (head, tail) = flow.split_once('\n').expect("[[flow]] line");
        let mut extra = String::new();
        if let Some(name) = name {
            // Raw characters (TOML has no Rust escapes); quotes and backslashes would end the string.
            let name: String = name
                .into_iter()
                .map(|c| if matches!(c, '"' | '\\') { '_' } else { c })
                .collect();
            extra += &format!("name = \"{name}\"\n");
        }
        if copies > 1 {
            extra += &format!("copies = {copies}\n");
        }
        format!("{head}\n{extra}{tail}")
    })
}

fn scenario(dir: std::path::PathBuf) -> impl Strategy<Value = String> {
    let downlink = prop_oneof![3 => pipe("downlink.pipe", true), 1 => pipe("downlink.pipe", false), 2 => ofdm4g(), 2 => trace(dir)];
    (
        downlink,
        pipe("wired", false),
        proptest::option::weighted(0.3, pipe("access", false)),
        proptest::option::weighted(0.5, pipe("uplink.pipe", false)),
        proptest::collection::vec(flow(), 1..4),
        prop_oneof![Just("0 s".to_string()), log_between(2e-4, 1.0).prop_map(|s| format!("{s:.6} s"))],
        prop_oneof![Just(RUN_S as f64), log_between(0.01, RUN_S as f64)],
    )
        .prop_map(|(down, wired, access, up, flows, sample, stop)| {
            let mut t = format!("stop = \"{stop:.3} s\"\nmemory_budget = \"{BUDGET}\"\nsample_interval = \"{sample}\"\n{down}{wired}");
            t += &access.unwrap_or_default();
            t += &up.unwrap_or_default();
            t += &flows.concat();
            t
        })
}

/// An upper bound on the events of a 2 s run of an accepted scenario, from the domain: every
/// packet costs a few events per link it crosses, and the links of rate r together carry at
/// most Σ r / (8 · 40 B) packets a second (40 B: the smallest IP packet the flows send); the OFDM
/// downlink also has its slots, sources their datagrams, and the sampler its ticks.
fn event_bound(s: &Scenario) -> u64 {
    let resolved = airlink_net::build::resolve(s).unwrap();
    let link_pps = |bps: u64| bps as f64 / (8.0 * 40.0);
    let capacity = airlink_net::build::downlink_capacity_bps(&resolved)
        .unwrap()
        .unwrap_or(0);
    let Some(airlink_scenario::LinkModel::Pipe(up)) = &resolved.uplink else {
        unreachable!("resolved")
    };
    let pipes = [resolved.wired.as_ref(), resolved.access.as_ref(), Some(up)];
    let mut pps = link_pps(capacity)
        + pipes
            .iter()
            .flatten()
            .filter_map(|p| p.rate)
            .map(|r| link_pps(r.0))
            .sum::<f64>();
    if let Some(airlink_scenario::LinkModel::Ofdm4g(o)) = &resolved.downlink {
        pps += o.bins_per_second as f64 * 2.0;
    }
    for f in &resolved.flow {
        pps += f.rate.map_or(0.0, |r| {
            r.0 as f64 / 8.0 / f.packet_size.map_or(1.0, |p| p.0 as f64)
        }) + f.frame_rate.unwrap_or(0.0) * 100.0;
    }
    let per_flow_paths = 4.0 + if resolved.access.is_some() { 2.0 } else { 0.0 };
    let samples = if resolved.sample_interval.0.is_zero() {
        0.0
    } else {
        1.0 / resolved.sample_interval.0.as_secs_f64()
    };
    // Without a rate on the way down, TCP sends a window per round trip.
    let down_rated = capacity > 0 || pipes[..2].iter().flatten().any(|p| p.rate.is_some());
    if !down_rated {
        let (wired, access) = (
            pipes[0].map_or(0.0, |p| p.delay.0.as_secs_f64()),
            pipes[1].map_or(0.0, |p| p.delay.0.as_secs_f64()),
        );
        let down = resolved
            .downlink
            .as_ref()
            .map_or(0.0, |d| d.delay().as_secs_f64());
        let rtt = (2.0 * wired + 2.0 * access + down + up.delay.0.as_secs_f64()).max(1e-3);
        pps += resolved
            .flow
            .iter()
            .filter_map(|f| f.tcp.rwnd)
            .map(|w| w.0 as f64 / 40.0 / rtt)
            .sum::<f64>();
    }
    let run_s = resolved.stop.0.as_secs_f64();
    (run_s * (pps * per_flow_paths * 4.0 * resolved.flow.len() as f64 + samples) + 1e6) as u64
}

#[derive(Default)]
struct Tally {
    accepted: u64,
    refused: u64,
    max_events: u64,
    max_heap: usize,
}

static TALLY: Mutex<Tally> = Mutex::new(Tally {
    accepted: 0,
    refused: 0,
    max_events: 0,
    max_heap: 0,
});

fn tmp_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("airlink-schema-property-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn accepted_scenarios_run_two_seconds_in_bounded_events_and_memory(text in scenario(tmp_dir())) {
        let s = match Scenario::from_toml(&text, "generated.toml") {
            Ok(s) => s,
            Err(e) => {
                // Every refusal says where: the file, line and column.
                prop_assert!(e.line.is_some() && e.to_string().starts_with(&format!("generated.toml:{}:", e.line.unwrap())), "no place: {e}\nin\n{text}");
                if std::env::var_os("AIRLINK_PROPTEST_REASONS").is_some() {
                    eprintln!("refused: {}", e.message);
                }
                TALLY.lock().unwrap().refused += 1;
                return Ok(());
            }
        };
        // A scenario can still be refused when built (a trace too fast, say): also a clean refusal.
        let base = counting_alloc::reset_peak();
        let mut sim = match Simulation::new(&s, true) {
            Ok(sim) => sim,
            Err(e) => {
                if std::env::var_os("AIRLINK_PROPTEST_REASONS").is_some() {
                    eprintln!("refused when built: {e}");
                }
                TALLY.lock().unwrap().refused += 1;
                return Ok(());
            }
        };
        let bound = event_bound(&s);
        let mut t = airlink_engine::Instant::ZERO;
        let step = airlink_engine::Duration::from_millis(10);
        while !sim.run_until(t) {
            let events = sim.summary().events;
            prop_assert!(events <= bound, "{events} events > {bound} by {t:?} in\n{text}");
            // The runner drains the series every chunk; do the same so they do not count.
            sim.recorder().drain();
            let heap = PEAK.load(Relaxed).saturating_sub(base);
            prop_assert!(heap <= MAX_HEAP, "{heap} B of heap at {t:?} in\n{text}");
            t += step;
        }
        prop_assert_eq!(sim.over_budget(), None, "in\n{}", text);
        let summary = sim.summary();
        prop_assert!(summary.sim_time_s <= s.stop.0.as_secs_f64() + 1e-9);
        let mut tally = TALLY.lock().unwrap();
        tally.accepted += 1;
        tally.max_events = tally.max_events.max(summary.events);
        tally.max_heap = tally.max_heap.max(PEAK.load(Relaxed).saturating_sub(base));
        eprintln!(
            "schema property: {} accepted and run for {RUN_S} s, {} refused; at most {} events and {:.1} MB of heap in one run",
            tally.accepted, tally.refused, tally.max_events, tally.max_heap as f64 / 1e6
        );
    }
}
