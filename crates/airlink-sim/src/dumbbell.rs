//! The TCP dumbbell the benchmarks use (and anyone comparing with other simulators): N
//! greedy senders on 1 Gbit/s, 1 ms access links share one bottleneck with a drop-tail queue
//! of one bandwidth-delay product; MSS 1448 (timestamps on), SACK on.

/// The dumbbell as a scenario file. `rtt_ms` is the base round-trip time of every flow.
pub fn dumbbell_toml(bottleneck_bps: u64, flows: u32, seconds: u32, rtt_ms: u32) -> String {
    // Access 1 ms each way; the rest of the one-way delay sits on the wired hop.
    let wired_ms = (rtt_ms / 2).saturating_sub(1);
    let bdp_bytes = bottleneck_bps * rtt_ms as u64 / 8 / 1000;
    let mut text = format!(
        r#"name = "dumbbell-{flows}x-{bottleneck_bps}bps"
stop = "{seconds} s"
sample_interval = "0 s"
[access]
rate = "1 Gbit/s"
delay = "1 ms"
[wired]
delay = "{wired_ms} ms"
[downlink.pipe]
rate = "{bottleneck_bps} bit/s"
queue = "{bdp_bytes} B"
[uplink.pipe]
"#
    );
    for i in 0..flows {
        // Starts 10 ms apart: simultaneous slow starts would synchronise the flows.
        text += &format!(
            "[[flow]]\nstart = \"{} ms\"\n[flow.tcp]\ntimestamps = true\nrwnd = \"64 MB\"\n",
            10 * i
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlink_scenario::Scenario;

    #[test]
    fn the_dumbbell_is_a_valid_scenario_with_one_bdp_of_queue() {
        let s =
            Scenario::from_toml(&dumbbell_toml(100_000_000, 10, 100, 22), "dumbbell.toml").unwrap();
        assert_eq!(s.flow.len(), 10);
        let Some(airlink_scenario::LinkModel::Pipe(p)) = &s.downlink else {
            panic!()
        };
        assert_eq!(p.queue, airlink_scenario::units::QueueLimit::Bytes(275_000));
    }
}
