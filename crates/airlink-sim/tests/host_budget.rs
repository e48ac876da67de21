//! A host's service budget (`[host.NAME] device`): one budget shared by every flow at the host,
//! charged for what the host receives as well as what it sends. Closed forms: a host that
//! serves P packets a second and receives λ packets a second at a cost c each sends
//! (1 − λc)·P; a sender that receives r feedback packets per data packet at a sent packet's
//! cost sends P/(1 + r).
use airlink_scenario::Scenario;
use airlink_sim::{Simulation, Summary};

/// Host `h` sends to `x` and receives from `y`, over fast links that never limit.
const HOSTS: &str = "stop = \"20 s\"\n[host.h]\n[host.x]\n[host.y]\n\
    [link.hx]\nfrom = \"h\"\nto = \"x\"\npipe = { rate = \"100 Mbit/s\", delay = \"1 ms\" }\n\
    [link.xh]\nfrom = \"x\"\nto = \"h\"\npipe = { rate = \"100 Mbit/s\", delay = \"1 ms\" }\n\
    [link.yh]\nfrom = \"y\"\nto = \"h\"\npipe = { rate = \"100 Mbit/s\", delay = \"1 ms\" }\n\
    [link.hy]\nfrom = \"h\"\nto = \"y\"\npipe = { rate = \"100 Mbit/s\", delay = \"1 ms\" }\n";

/// 512-byte datagrams at 12 Mbit/s: far beyond any budget here.
const FLOOD: &str = "protocol = \"udp\", rate = \"12 Mbit/s\", packet_size = \"512 B\"";

fn run(extra: &str) -> Summary {
    let s = Scenario::from_toml(&format!("{HOSTS}{extra}"), "budget.toml").unwrap();
    let mut sim = Simulation::new(&s, false).unwrap();
    sim.run();
    sim.summary()
}

/// A UDP flow's datagrams received per second of the run.
fn datagrams_per_s(sum: &Summary, flow: usize) -> f64 {
    sum.flows[flow].iperf.as_ref().unwrap().received as f64 / 20.0
}

fn near(x: f64, want: f64, tolerance: f64) -> bool {
    (x / want - 1.0).abs() < tolerance
}

#[test]
fn two_flows_on_one_host_share_its_budget() {
    // Both from h, offered at the same instants: 1000 datagrams a second between them, half
    // each (each flow holds its share of the host's buffer).
    let shared = run(&format!(
        "[host.h.device]\npacket_rate = 1000\n\
         [[flow]]\nserver = \"h\"\nclient = \"x\"\n{}\n\
         [[flow]]\nserver = \"h\"\nclient = \"y\"\n{}\n",
        FLOOD.replace(", ", "\n"),
        FLOOD.replace(", ", "\n")
    ));
    let (a, b) = (datagrams_per_s(&shared, 0), datagrams_per_s(&shared, 1));
    println!("one host: {a:.1} + {b:.1} datagrams/s");
    assert!(near(a + b, 1000.0, 0.01), "{a} + {b}");
    assert!(near(a, 500.0, 0.01) && near(b, 500.0, 0.01), "{a}, {b}");
    // The same table on two hosts is two budgets: 1000 each (y's datagrams pass through h,
    // which forwards them at no cost: a budget serves the host's own flows).
    let apart = run(&format!(
        "[[flow]]\nserver = \"h\"\nclient = \"x\"\n{}\ndevice = {{ packet_rate = 1000 }}\n\
         [[flow]]\nserver = \"y\"\nclient = \"x\"\n{}\ndevice = {{ packet_rate = 1000 }}\n",
        FLOOD.replace(", ", "\n"),
        FLOOD.replace(", ", "\n")
    ));
    let (a, b) = (datagrams_per_s(&apart, 0), datagrams_per_s(&apart, 1));
    println!("two hosts: {a:.1}, {b:.1} datagrams/s");
    assert!(near(a, 1000.0, 0.01) && near(b, 1000.0, 0.01), "{a}, {b}");
    // Two TCP flows from one host share it too: their data packets together stay within it.
    let tcp = run("[host.h.device]\npacket_rate = 1000\n\
         [[flow]]\nserver = \"h\"\nclient = \"x\"\n[[flow]]\nserver = \"h\"\nclient = \"y\"\n");
    let data: u64 = tcp.flows.iter().map(|f| f.data_segments_sent).sum();
    let acks: u64 = ["xh", "yh"]
        .iter()
        .map(|l| tcp.links.iter().find(|k| k.name == *l).unwrap().packets_out)
        .sum();
    // Every packet h sends or receives costs 1 ms: 1000 of them a second, busy all the time.
    let per_s = (data + acks) as f64 / 20.0;
    println!("two TCP flows: {data} data, {acks} ACKs: {per_s:.1} packets/s of work");
    assert!(near(per_s, 1000.0, 0.01), "{per_s}");
    let each: Vec<u64> = tcp.flows.iter().map(|f| f.data_segments_sent).collect();
    println!("per flow: {each:?}");
    assert!(
        each.iter().all(|&d| d as f64 > 0.3 * data as f64),
        "{each:?}"
    );
    assert!(tcp.flows.iter().all(|f| f.sender_drops == Some(0)));
}

#[test]
fn a_received_packet_costs_what_the_setting_says() {
    // h floods x and receives 400 datagrams a second from y (1.6384 Mbit/s of 512 B): with a
    // cost c per received packet h has (1 − 400·c) of its second left for 1000 sends a second.
    for (cost, want) in [
        ("", 600.0),
        ("receive_cost = \"0.5 ms\"\n", 800.0),
        ("receive_cost = \"0 s\"\n", 1000.0),
    ] {
        let sum = run(&format!(
            "[host.h.device]\npacket_rate = 1000\n{cost}\
             [[flow]]\nserver = \"h\"\nclient = \"x\"\n{}\n\
             [[flow]]\nserver = \"y\"\nclient = \"h\"\nprotocol = \"udp\"\nrate = \"1.6384 Mbit/s\"\npacket_size = \"512 B\"\n",
            FLOOD.replace(", ", "\n")
        ));
        let (sent, received) = (datagrams_per_s(&sum, 0), datagrams_per_s(&sum, 1));
        println!("{cost:?}: h sends {sent:.1}/s, receives {received:.1}/s");
        assert!(near(received, 400.0, 0.001), "{received}");
        assert_eq!(
            sum.flows[1].iperf.as_ref().unwrap().lost,
            0,
            "what h receives is not limited"
        );
        assert!(near(sent, want, 0.01), "{cost:?}: {sent} against {want}");
    }
}

#[test]
fn feedback_lowers_a_senders_rate_to_its_closed_form() {
    // A sender that receives r feedback packets per data packet, each at a sent packet's cost,
    // sends P/(1 + r) data packets a second; UDP, which receives none, sends P.
    for flow in [
        "congestion = \"cubic\"",
        "protocol = \"dccp\"\nccid = 2",
        "protocol = \"dccp\"\nccid = 3",
        "protocol = \"udp\"\nrate = \"20 Mbit/s\"\npacket_size = \"1000 B\"",
    ] {
        let sum = run(&format!(
            "[host.h.device]\npacket_rate = 1000\n[[flow]]\nserver = \"h\"\nclient = \"x\"\n{flow}\n"
        ));
        let link = |name: &str| {
            sum.links
                .iter()
                .find(|l| l.name == name)
                .unwrap()
                .packets_out as f64
        };
        let r = link("xh") / link("hx");
        let sent = link("hx") / 20.0;
        let bound = 1000.0 / (1.0 + r);
        println!("{flow}: r = {r:.3}, {sent:.1} packets/s against {bound:.1}");
        if flow.contains("ccid = 3") {
            // TFRC sets its own rate, which does not keep the host busy: the bound, not more.
            assert!(
                sent <= bound && sent > 0.8 * bound,
                "{flow}: {sent} against {bound}"
            );
        } else {
            assert!(near(sent, bound, 0.01), "{flow}: {sent} against {bound}");
        }
        if flow.contains("udp") {
            assert_eq!(r, 0.0);
        } else {
            assert!(r > 0.05, "{flow}: r = {r}");
        }
    }
}
