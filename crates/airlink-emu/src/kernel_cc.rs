//! The kernel's TCP congestion control in the two namespaces, chosen by the scenario's flows:
//! the `congestion` a flow runs with airlink's TCP in simulation is the one the kernel's TCP
//! runs in emulation, so one key describes both.
//!
//! The namespaces get one default (`net.ipv4.tcp_congestion_control`): that of the first TCP
//! flow, or airlink's default (`newreno`) when the scenario has none. An application picks
//! another per socket (`TCP_CONGESTION`; iperf3's `-C`), which is what a flow whose control
//! differs from the first one's needs: the emulation says so in its warnings.
//!
//! | airlink | kernel | note |
//! |---|---|---|
//! | `reno`, `newreno` | `reno` | the kernel's `reno` recovers as NewReno (RFC 6582), with SACK when negotiated |
//! | `cubic` | `cubic` | |
//! | `bbr` | `bbr` | BBR v1 in both |
//! | `veno` | `veno` | when the kernel has the module |
//! | `afc` | none | TCP-AFC exists only in airlink: run it with airlink's own TCP |

use airlink_scenario::{Congestion, Protocol, Scenario};

/// The kernel's name for an airlink congestion control, if it has one.
pub fn kernel_name(c: Congestion) -> Option<&'static str> {
    match c {
        Congestion::Reno | Congestion::Newreno => Some("reno"),
        Congestion::Cubic => Some("cubic"),
        Congestion::Bbr => Some("bbr"),
        Congestion::Veno => Some("veno"),
        Congestion::Afc => None,
    }
}

/// airlink's name of a congestion control, as a scenario writes it.
fn scenario_name(c: Congestion) -> String {
    serde_json::to_value(c)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// What the namespaces' default congestion control is, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelChoice {
    /// The flow it comes from (None: no TCP flow, airlink's default).
    pub flow: Option<usize>,
    pub congestion: Congestion,
    /// The kernel's name; None when the kernel has no counterpart.
    pub kernel: Option<&'static str>,
    /// Flows whose control differs from the namespaces' default: one sentence each.
    pub others: Vec<String>,
}

impl KernelChoice {
    /// The choice a scenario makes.
    pub fn of(s: &Scenario) -> KernelChoice {
        let tcp: Vec<(usize, Congestion)> = s
            .flow
            .iter()
            .enumerate()
            .filter(|(_, f)| f.protocol == Protocol::Tcp)
            .map(|(i, f)| (i, f.congestion()))
            .collect();
        let (flow, congestion) = match tcp.first() {
            Some(&(i, c)) => (Some(i), c),
            None => (None, Congestion::Newreno),
        };
        let kernel = kernel_name(congestion);
        let others = tcp
            .iter()
            .filter(|(_, c)| kernel_name(*c) != kernel)
            .map(|&(i, c)| {
                let want = kernel_name(c).unwrap_or("(none: airlink's own TCP only)");
                format!(
                    "flow {i}: congestion = \"{}\", but the namespaces' default is flow {}'s \"{}\": \
                     the kernel's TCP runs this flow with {want} only if its application chooses it \
                     per socket (iperf3 -C {want}, setsockopt TCP_CONGESTION)",
                    scenario_name(c),
                    flow.unwrap_or(0),
                    kernel.unwrap_or("?"),
                )
            })
            .collect();
        KernelChoice {
            flow,
            congestion,
            kernel,
            others,
        }
    }

    /// Where the choice comes from, for messages: `flow 0: congestion = "cubic"`.
    pub fn origin(&self) -> String {
        match self.flow {
            Some(i) => format!(
                "flow {i}: congestion = \"{}\"",
                scenario_name(self.congestion)
            ),
            None => format!(
                "no TCP flow: airlink's default congestion = \"{}\"",
                scenario_name(self.congestion)
            ),
        }
    }

    /// Why the kernel's TCP cannot run the choice: `available` is the kernel's list.
    pub fn refusal(&self, available: &str, why: &str) -> String {
        let has = match self.kernel {
            Some(k) => format!("the kernel has no \"{k}\" ({why})"),
            None => "the kernel has no counterpart".into(),
        };
        format!(
            "{}: {has}; available here: {}. Choose one of those for the kernel's TCP, or run \
             the flows with airlink's own TCP (`airlink emulate` without --client/--server)",
            self.origin(),
            available.trim()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(flows: &str) -> Scenario {
        let text = format!("[downlink.pipe]\nrate = \"10 Mbit/s\"\ndelay = \"10 ms\"\n{flows}");
        Scenario::from_toml(&text, "t.toml").unwrap()
    }

    #[test]
    fn first_tcp_flow_chooses() {
        let s = scenario("[[flow]]\nprotocol = \"udp\"\nrate = \"1 Mbit/s\"\n[[flow]]\ncongestion = \"cubic\"\n[[flow]]\ncongestion = \"bbr\"\n[[flow]]\ncongestion = \"cubic\"\n");
        let c = KernelChoice::of(&s);
        assert_eq!((c.flow, c.kernel), (Some(1), Some("cubic")));
        assert_eq!(c.others.len(), 1);
        assert!(
            c.others[0].starts_with(
                "flow 2: congestion = \"bbr\", but the namespaces' default is flow 1's \"cubic\""
            ),
            "{}",
            c.others[0]
        );
        assert!(c.others[0].contains("iperf3 -C bbr"));
    }

    #[test]
    fn default_is_newreno_as_the_kernels_reno() {
        let c = KernelChoice::of(&scenario("[[flow]]\n"));
        assert_eq!(
            (c.flow, c.congestion, c.kernel),
            (Some(0), Congestion::Newreno, Some("reno"))
        );
        // reno and newreno are one kernel control: no note.
        let c = KernelChoice::of(&scenario(
            "[[flow]]\ncongestion = \"reno\"\n[[flow]]\ncongestion = \"newreno\"\n",
        ));
        assert!(c.others.is_empty());
        let c = KernelChoice::of(&scenario(
            "[[flow]]\nprotocol = \"udp\"\nrate = \"1 Mbit/s\"\n",
        ));
        assert_eq!((c.flow, c.kernel), (None, Some("reno")));
    }

    #[test]
    fn afc_has_no_kernel_counterpart() {
        let c = KernelChoice::of(&scenario("[[flow]]\ncongestion = \"afc\"\n"));
        assert_eq!(c.kernel, None);
        let m = c.refusal("reno cubic bbr\n", "");
        assert_eq!(m, "flow 0: congestion = \"afc\": the kernel has no counterpart; available here: reno cubic bbr. Choose one of those for the kernel's TCP, or run the flows with airlink's own TCP (`airlink emulate` without --client/--server)");
    }
}
