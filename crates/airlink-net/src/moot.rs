//! Choices of a TCP flow that cannot change its run, said before it runs (`airlink check`,
//! `airlink run`), so nobody compares two runs that differ only in them:
//!
//! - `congestion = "reno"` while SACK is on: with SACK, loss recovery is RFC 6675's for every
//!   control, so Reno's early exit from fast recovery (RFC 5681 against RFC 6582) never
//!   happens and `reno` runs as `newreno` (the kernel's `reno` is that too);
//! - a receive window the path holds whole (its bandwidth-delay product plus its queues): the
//!   window never overflows a queue, so slow start ends at the receive window and stays there;
//!   the congestion control acts only after the link's own losses, and CUBIC, NewReno and Reno
//!   give the same run where there are none.

use airlink_scenario as sc;
use airlink_transport::TcpConfig;

/// What a flow's path holds, bytes: its bandwidth-delay product and its rated queues.
pub struct PathHolds {
    pub bdp: u64,
    pub queued: u64,
}

/// One sentence per choice of flow `i` that cannot matter.
pub fn moot_choices(
    i: usize,
    f: &sc::FlowConfig,
    c: &TcpConfig,
    holds: Option<PathHolds>,
) -> Vec<String> {
    let mut out = Vec::new();
    if f.congestion == Some(sc::Congestion::Reno) && c.sack {
        out.push(format!(
            "flow {i}: congestion = \"reno\" runs as \"newreno\" while tcp.sack is on (SACK \
             recovery, RFC 6675, replaces Reno's): set flow.{i}.tcp.sack = false for RFC 5681 \
             Reno, or write \"newreno\""
        ));
    }
    if let Some(h) = holds {
        let room = h.bdp + h.queued;
        if (c.rwnd as u64) <= room {
            out.push(format!(
                "flow {i}: tcp.rwnd = {} fits in what the path holds ({} B in flight at its \
                 bottleneck rate + {} B of queues): the window never overflows a queue, so \
                 the receive window, not congestion = \"{}\", sets the rate and CUBIC, NewReno \
                 and Reno give the same run apart from the link's own losses; set \
                 flow.{i}.tcp.rwnd above {} to let the congestion control matter",
                sc::units::DataSize(c.rwnd as u64),
                h.bdp,
                h.queued,
                congestion_label(f.congestion()),
                sc::units::DataSize(room)
            ));
        }
    }
    out
}

fn congestion_label(c: sc::Congestion) -> String {
    serde_json::to_value(c)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(toml: &str) -> sc::FlowConfig {
        let text = format!("[downlink.pipe]\nrate = \"10 Mbit/s\"\n[[flow]]\n{toml}");
        sc::Scenario::from_toml(&text, "t.toml").unwrap().flow[0].clone()
    }

    #[test]
    fn reno_with_sack_is_newreno() {
        let f = flow("congestion = \"reno\"\n");
        let c = crate::build::tcp_config(&f).unwrap();
        let w = moot_choices(0, &f, &c, None);
        assert_eq!(w.len(), 1);
        assert!(w[0].starts_with("flow 0: congestion = \"reno\" runs as \"newreno\""));
        assert!(w[0].contains("flow.0.tcp.sack = false"));
        let f = flow("congestion = \"reno\"\n[flow.tcp]\nsack = false\n");
        let c = crate::build::tcp_config(&f).unwrap();
        assert!(moot_choices(0, &f, &c, None).is_empty());
        // newreno is what the user gets anyway: nothing to say.
        let f = flow("congestion = \"newreno\"\n");
        let c = crate::build::tcp_config(&f).unwrap();
        assert!(moot_choices(0, &f, &c, None).is_empty());
    }

    #[test]
    fn a_window_the_path_holds_makes_the_control_moot() {
        let f = flow("congestion = \"cubic\"\n[flow.tcp]\nrwnd = \"64 KiB\"\n");
        let c = crate::build::tcp_config(&f).unwrap();
        let holds = |bdp, queued| Some(PathHolds { bdp, queued });
        // 65536 B against 50000 + 15536: held whole (the boundary counts).
        let w = moot_choices(3, &f, &c, holds(50_000, 15_536));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("flow 3: tcp.rwnd = 65536 B fits in what the path holds (50000 B in flight at its bottleneck rate + 15536 B of queues)"), "{}", w[0]);
        assert!(w[0].contains("not congestion = \"cubic\""));
        assert!(w[0].contains("flow.3.tcp.rwnd above"));
        // One byte more than the path holds: the window overflows its queue, the control acts.
        assert!(moot_choices(3, &f, &c, holds(50_000, 15_535)).is_empty());
    }
}
