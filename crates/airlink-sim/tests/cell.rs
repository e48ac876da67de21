//! A multi-user cell in simulation: its users are the flows through it, each with an uplink
//! of its own, and TCP over one user at a fixed SINR gets the rate the closed form gives.
use airlink_scenario::Scenario;
use airlink_sim::{Simulation, Summary};

const TCP_PF: &str = include_str!("../../../scenarios/cell/tcp-pf.toml");

fn run(text: &str, overrides: &[&str]) -> Summary {
    let s = Scenario::from_toml(text, "cell.toml")
        .unwrap()
        .with_overrides(&overrides.iter().map(|o| o.to_string()).collect::<Vec<_>>())
        .unwrap();
    let mut sim = Simulation::new(&s, false).unwrap();
    sim.run();
    sim.summary()
}

#[test]
fn every_flow_is_a_user_of_the_cell_with_an_uplink_of_its_own() {
    let sum = run(TCP_PF, &["stop=\"5 s\""]);
    let cell = sum.links.iter().find(|l| l.name == "downlink").unwrap();
    let users = cell.users.as_ref().expect("a cell's users");
    assert_eq!(users.len(), 21);
    // Every slot that served someone sent one frame.
    assert_eq!(
        users.iter().map(|u| u.slots_served).sum::<u64>(),
        cell.frames_sent
    );
    assert_eq!(
        users.iter().map(|u| u.frame_errors).sum::<u64>(),
        cell.frame_errors
    );
    let wired_up = sum.links.iter().find(|l| l.name == "wired.up").unwrap();
    let mut acks = 0;
    for (i, f) in sum.flows.iter().enumerate() {
        assert_eq!(f.name.as_deref(), Some(format!("user.{i}").as_str()));
        assert!(f.bytes_delivered > 0, "user {i} got nothing");
        // Its ACKs take its own uplink: about one per two segments (delayed ACKs).
        let up = sum
            .links
            .iter()
            .find(|l| l.name == format!("uplink.{i}"))
            .unwrap();
        assert!(
            up.packets_in * 3 > f.data_segments_sent && up.packets_in <= f.data_segments_sent + 3,
            "user {i}: {} ACKs for {} segments",
            up.packets_in,
            f.data_segments_sent
        );
        acks += up.packets_out;
    }
    // And nothing else's: the users' uplinks are all that feeds the way back to the server.
    assert!(
        wired_up.packets_in <= acks && wired_up.packets_in + 21 >= acks,
        "{} of {acks}",
        wired_up.packets_in
    );
}

/// One user, no fading and no estimation error, far above the top rate's threshold: every slot
/// carries 2560 kbit/s × 5 ms, a share `1 - FER` of them get through, and TCP's goodput is that
/// rate times its payload share of each packet.
#[test]
fn tcp_over_one_user_at_a_fixed_sinr_gets_the_rate_the_closed_form_gives() {
    let one_user = r#"
stop = "12 s"
[downlink.cell]
edge_snr = "20 dB"
fading = false
estimation_sigma = "0 dB"
frame_errors = "fixed"
[uplink.pipe]
rate = "1 Mbit/s"
[[flow]]
bytes = "3 MB"
"#;
    for fer in [0.0, 0.1] {
        let fer_override = format!("downlink.cell.frame_error_rate={fer}");
        let sum = run(one_user, &[fer_override.as_str()]);
        assert_eq!(sum.flows.len(), 1);
        // The default (linux) preset sends timestamps: 1448 B of payload per 1500 B packet.
        let expected = 2_560_000.0 * (1.0 - fer) * 1448.0 / 1500.0;
        let steady = sum.flows[0].goodput_steady_bps.unwrap();
        assert!(
            (steady / expected - 1.0).abs() < 0.01,
            "FER {fer}: {steady} against {expected}"
        );
        let user = &sum.links[1].users.as_ref().unwrap()[0];
        assert_eq!(user.mean_rate_bps, 2_560_000.0);
    }
}

#[test]
fn schedulers_compared_from_one_seed_see_the_same_users() {
    let sinr = |scheduler: &str| {
        let sum = run(
            TCP_PF,
            &[
                "stop=\"3 s\"",
                "downlink.cell.fading=false",
                &format!("downlink.cell.scheduler=\"{scheduler}\""),
            ],
        );
        sum.links[1]
            .users
            .as_ref()
            .unwrap()
            .iter()
            .map(|u| u.mean_sinr_db)
            .collect::<Vec<_>>()
    };
    let pf = sinr("pf");
    assert_eq!(pf, sinr("rr"));
    assert_eq!(pf, sinr("tcp-pf"));
    // The placement spans the cell: users from near the base station to its edge (0 dB).
    let (lo, hi) = pf
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    assert!(lo > -0.01 && lo < 3.0 && hi > 20.0, "{lo} .. {hi}");
}
