//! The calibrated cell of the TCP-PF study: over placements of 21 users (spec C.1's defaults),
//! the distribution of each user's mean SINR and mean feasible rate over a 25 s run, and how
//! often each rate of the set is feasible.
//!
//! `cargo run -p airlink-link --release --example cell_calibration [EDGE_SNR_DB] [PLACEMENTS]`
//! (defaults 0 dB and 50). Placement p uses run seed p, as a study's run p would.
use airlink_channel::{CellChannel, CellChannelConfig};
use airlink_engine::RngStream;
use airlink_link::RateSet;

fn quantiles(mut v: Vec<f64>) -> String {
    v.sort_by(f64::total_cmp);
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    format!(
        "min {:7.1}  p10 {:7.1}  p25 {:7.1}  median {:7.1}  p75 {:7.1}  p90 {:7.1}  max {:7.1}",
        q(0.0),
        q(0.1),
        q(0.25),
        q(0.5),
        q(0.75),
        q(0.9),
        q(1.0)
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let edge: f64 = args
        .next()
        .map_or(0.0, |a| a.parse().expect("EDGE_SNR_DB is a number"));
    let placements: u64 = args
        .next()
        .map_or(50, |a| a.parse().expect("PLACEMENTS is a whole number"));
    let cfg = CellChannelConfig {
        edge_snr_db: edge,
        ..CellChannelConfig::study()
    };
    let rates = RateSet::study();
    let slots = 25 * cfg.slots_per_second;

    let (mut mean_snr, mut mean_sinr, mut mean_rate) = (Vec::new(), Vec::new(), Vec::new());
    // Slots at each rate index (0 = no rate); users by the interval of the rate set their mean
    // rate falls in (0 = below the lowest rate).
    let mut per_rate = vec![0u64; rates.len() + 1];
    let mut users_by_mean_rate = vec![0u64; rates.len() + 1];
    for seed in 1..=placements {
        let mut cell = CellChannel::new(&cfg, RngStream::derive(seed, "cell")).expect("valid cell");
        for i in 0..cfg.users {
            let (mut lin, mut rate) = (0.0, 0.0);
            for n in 0..slots {
                let (sinr, est) = cell.sinr_db(i, n);
                lin += 10f64.powf(sinr / 10.0);
                let k = rates.select(est);
                per_rate[k.map_or(0, |k| k + 1)] += 1;
                rate += k.map_or(0.0, |k| rates.rate_bps(k) as f64);
            }
            let r = rate / slots as f64;
            mean_snr.push(cell.users()[i].mean_snr_db);
            mean_sinr.push(10.0 * (lin / slots as f64).log10());
            mean_rate.push(r / 1e3);
            let reached = (0..rates.len()).rposition(|k| r >= rates.rate_bps(k) as f64);
            users_by_mean_rate[reached.map_or(0, |k| k + 1)] += 1;
        }
    }
    let total_users = mean_rate.len() as f64;
    let total_slots: u64 = per_rate.iter().sum();
    println!(
        "cell: {} users, radius {} m, edge SNR {edge} dB, {placements} placements, 25 s each",
        cfg.users, cfg.radius_m
    );
    println!("path-loss mean SNR (dB):   {}", quantiles(mean_snr));
    println!("mean true SINR (dB):       {}", quantiles(mean_sinr));
    println!("mean feasible rate (kb/s): {}", quantiles(mean_rate));
    println!("\nrate (kb/s)  threshold (dB)  share of slots it is the feasible rate");
    for (k, slots_at) in per_rate.iter().enumerate() {
        let (name, th) = match k {
            0 => ("none".to_string(), "-".to_string()),
            _ => (
                (rates.rate_bps(k - 1) / 1000).to_string(),
                format!("{:.2}", rates.threshold_db(k - 1)),
            ),
        };
        println!(
            "{name:>11}  {th:>14}  {:>6.3}",
            *slots_at as f64 / total_slots as f64
        );
    }
    println!("\nusers' mean rate (kb/s)  share of users");
    for (k, users) in users_by_mean_rate.iter().enumerate() {
        let lo = if k == 0 {
            0
        } else {
            rates.rate_bps(k - 1) / 1000
        };
        let hi = if k == rates.len() {
            format!("{lo}]")
        } else {
            format!("{})", rates.rate_bps(k) / 1000)
        };
        println!(
            "{:>23}  {:>6.3}",
            format!("[{lo}, {hi}"),
            *users as f64 / total_users
        );
    }
}
