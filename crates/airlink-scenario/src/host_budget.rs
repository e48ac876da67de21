//! A host's service budget in scenario files: `[host.NAME] device = { ... }`, and its
//! shorthand `[flow.device]`, which sets the budget of the host the flow's data comes from.
//!
//! A host has one budget, shared by every flow that starts or ends at it (the DCCP study's
//! tablets: one CPU serves whatever the host sends and receives). So a budget is set once per
//! host: by its `[host.NAME] device`, or by the `device` of flows from it. Two settings of one
//! host's budget must say the same thing (the copies of a flow, a flow that repeats its host's
//! table); otherwise the later one is refused, naming `[host.NAME] device`.
//!
//! What the budget does is the device model's (`airlink_transport::device`).

use crate::{Direction, Scenario, MAX_PACKET_RATE};

pub use crate::schema::DeviceConfig;

/// One host's budget, as the scenario sets it.
#[derive(Clone, Debug, PartialEq)]
pub struct HostBudget {
    /// The host's name (`"server"` or `"server.N"` and `"client"` with the shorthand).
    pub host: String,
    pub device: DeviceConfig,
    /// The key that set it first (`host.tab1.device`, `flow.0.device`).
    pub set_by: Vec<String>,
}

impl DeviceConfig {
    /// Checks one device table; the key path returned is relative to the table.
    pub(crate) fn validate(&self) -> Result<(), (Vec<String>, String)> {
        let at = |k: &str| vec![k.to_string()];
        match (self.rate, self.packet_rate) {
            (None, None) => {
                return Err((
                    vec![],
                    "expected a `rate` (bit/s) or a `packet_rate` (packets/s), or both".into(),
                ))
            }
            (Some(r), _) if r.0 == 0 => {
                return Err((at("rate"), "expected a positive rate".into()))
            }
            (Some(r), _) => crate::check_rate(r).map_err(|m| (at("rate"), m))?,
            _ => {}
        }
        if let Some(pps) = self
            .packet_rate
            .filter(|r| !(*r > 0.0 && *r <= MAX_PACKET_RATE))
        {
            return Err((
                at("packet_rate"),
                format!(
                    "{pps} packets per second: expected more than 0, at most {MAX_PACKET_RATE}"
                ),
            ));
        }
        if !(1..=10_000).contains(&self.buffer) {
            return Err((
                at("buffer"),
                format!("{} packets: expected 1 to 10000", self.buffer),
            ));
        }
        if let Some(cost) = self.receive_cost {
            if cost.0 > airlink_engine::Duration::from_secs(1) {
                return Err((
                    at("receive_cost"),
                    format!("{cost}: expected at most 1 s of work per received packet"),
                ));
            }
        }
        Ok(())
    }
}

impl Scenario {
    /// The hosts at the two ends of flow `i`: the one its data comes from and the one it goes
    /// to (with the shorthand: `server`, `server.N` behind an `access` link, and `client`; an
    /// upload's data comes from `client`).
    pub fn flow_hosts(&self, i: usize) -> (String, String) {
        let f = &self.flow[i];
        if self.is_general() {
            let server = f.server.as_deref().unwrap_or("server").to_string();
            let client = f.client.as_deref().unwrap_or("client").to_string();
            return (server, client);
        }
        let server = if self.access.is_some() {
            format!("server.{i}")
        } else {
            "server".to_string()
        };
        match f.direction.unwrap_or_default() {
            Direction::Down => (server, "client".to_string()),
            Direction::Up => ("client".to_string(), server),
        }
    }

    /// Every host's budget, in the order they are first set (hosts, then flows): each once, or
    /// the key that sets one a second time with other values and why.
    pub fn host_budgets(&self) -> Result<Vec<HostBudget>, (Vec<String>, String)> {
        let key = |parts: &[&str]| parts.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut out: Vec<HostBudget> = Vec::new();
        let mut set = |host: String, device: &DeviceConfig, at: Vec<String>| {
            if let Some(b) = out.iter().find(|b| b.host == host) {
                if &b.device != device {
                    let home = if self.is_general() {
                        format!("set it once, as `[host.{host}] device = {{ ... }}`")
                    } else {
                        format!("with the shorthand, set it on one flow from `{host}` (or give each flow a host of its own with [host] and [link] tables and `[host.NAME] device`)")
                    };
                    return Err((
                        at,
                        format!(
                            "host `{host}` has one service budget, shared by every flow it sends or receives, and {} sets it to other values already: {home}",
                            b.set_by.join(".")
                        ),
                    ));
                }
                return Ok(());
            }
            out.push(HostBudget {
                host,
                device: device.clone(),
                set_by: at,
            });
            Ok(())
        };
        for (name, h) in &self.host {
            if let Some(d) = &h.device {
                set(name.clone(), d, key(&["host", name, "device"]))?;
            }
        }
        for (i, f) in self.flow.iter().enumerate() {
            if let Some(d) = &f.device {
                set(
                    self.flow_hosts(i).0,
                    d,
                    key(&["flow", &i.to_string(), "device"]),
                )?;
            }
        }
        Ok(out)
    }

    /// Every device table is valid, and each host's budget is set once.
    pub(crate) fn validate_host_budgets(&self) -> Result<(), (Vec<String>, String)> {
        for (name, h) in &self.host {
            if let Some(d) = &h.device {
                d.validate().map_err(|(k, m)| {
                    (
                        [&["host".to_string(), name.clone(), "device".into()][..], &k].concat(),
                        m,
                    )
                })?;
            }
        }
        self.host_budgets().map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use crate::Scenario;

    /// Three hosts: `h` sends to `x` and receives from `y`.
    const HOSTS: &str = "[host.h]\n[host.x]\n[host.y]\n\
        [link.hx]\nfrom = \"h\"\nto = \"x\"\npipe = { rate = \"100 Mbit/s\" }\n\
        [link.xh]\nfrom = \"x\"\nto = \"h\"\npipe = { rate = \"100 Mbit/s\" }\n\
        [link.yh]\nfrom = \"y\"\nto = \"h\"\npipe = { rate = \"100 Mbit/s\" }\n\
        [link.hy]\nfrom = \"h\"\nto = \"y\"\npipe = { rate = \"100 Mbit/s\" }\n";

    fn parse(extra: &str) -> Result<Scenario, crate::ScenarioError> {
        Scenario::from_toml(&format!("{HOSTS}{extra}"), "s.toml")
    }

    fn line_of(text: &str, needle: &str) -> usize {
        format!("{HOSTS}{text}")
            .lines()
            .position(|l| l.contains(needle))
            .unwrap()
            + 1
    }

    #[test]
    fn a_host_budget_is_shared_by_the_flows_at_the_host() {
        let s = parse(
            "[host.h.device]\npacket_rate = 720\n\
             [[flow]]\nserver = \"h\"\nclient = \"x\"\n\
             [[flow]]\nserver = \"y\"\nclient = \"h\"\n",
        )
        .unwrap();
        let b = s.host_budgets().unwrap();
        assert_eq!(b.len(), 1);
        assert_eq!(
            (b[0].host.as_str(), b[0].device.packet_rate),
            ("h", Some(720.0))
        );
        assert_eq!(b[0].device.buffer, 4, "the default buffer");
        assert_eq!(b[0].device.receive_cost, None, "a sent packet's cost");
        assert_eq!(s.flow_hosts(0), ("h".into(), "x".into()));
        assert_eq!(s.flow_hosts(1), ("y".into(), "h".into()));
    }

    #[test]
    fn a_flow_device_is_its_data_senders_host_budget() {
        // The same table twice (or the host's own) is one budget; other values are refused at
        // the later key, naming [host.NAME] device.
        let same = "[[flow]]\nserver = \"h\"\nclient = \"x\"\ndevice = { packet_rate = 500 }\n\
                    [[flow]]\nserver = \"h\"\nclient = \"y\"\ndevice = { packet_rate = 500 }\n";
        let b = parse(same).unwrap().host_budgets().unwrap();
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].set_by, ["flow", "0", "device"]);
        let other = "[[flow]]\nserver = \"h\"\nclient = \"x\"\ndevice = { packet_rate = 500 }\n\
                     [[flow]]\nserver = \"h\"\nclient = \"y\"\ndevice = { packet_rate = 600 }\n";
        let e = parse(other).unwrap_err();
        assert_eq!(e.line, Some(line_of(other, "600")), "{e}");
        assert!(
            e.message.contains("flow.0.device sets it to other values"),
            "{e}"
        );
        assert!(e.message.contains("`[host.h] device = { ... }`"), "{e}");
        let host = "[host.h.device]\npacket_rate = 500\nreceive_cost = \"1 ms\"\n\
                    [[flow]]\nserver = \"h\"\nclient = \"x\"\ndevice = { packet_rate = 500 }\n";
        let e = parse(host).unwrap_err();
        assert_eq!(e.line, Some(line_of(host, "device = {")), "{e}");
        assert!(e.message.contains("host.h.device sets it"), "{e}");
        // Each flow from a host of its own keeps a budget of its own.
        let apart = "[[flow]]\nserver = \"h\"\nclient = \"x\"\ndevice = { packet_rate = 500 }\n\
                     [[flow]]\nserver = \"y\"\nclient = \"h\"\ndevice = { packet_rate = 600 }\n";
        let b = parse(apart).unwrap().host_budgets().unwrap();
        assert_eq!(
            b.iter().map(|b| b.host.as_str()).collect::<Vec<_>>(),
            ["h", "y"]
        );
    }

    #[test]
    fn the_shorthand_names_its_hosts_and_refuses_two_budgets_for_the_server() {
        let down =
            "[downlink.pipe]\nrate = \"10 Mbit/s\"\n[[flow]]\ndevice = { rate = \"3 Mbit/s\" }\n\
                    [[flow]]\ndirection = \"up\"\ndevice = { rate = \"2 Mbit/s\" }\n";
        let s = Scenario::from_toml(down, "s.toml").unwrap();
        assert_eq!(s.flow_hosts(0), ("server".into(), "client".into()));
        assert_eq!(s.flow_hosts(1), ("client".into(), "server".into()));
        assert_eq!(s.host_budgets().unwrap().len(), 2);
        let two =
            "[downlink.pipe]\nrate = \"10 Mbit/s\"\n[[flow]]\ndevice = { rate = \"3 Mbit/s\" }\n\
                   [[flow]]\ndevice = { rate = \"2 Mbit/s\" }\n";
        let e = Scenario::from_toml(two, "s.toml").unwrap_err();
        assert_eq!((e.line, e.column), (Some(6), Some(10)), "{e}");
        assert!(
            e.message.contains("host `server` has one service budget"),
            "{e}"
        );
        assert!(
            e.message.contains("set it on one flow from `server`"),
            "{e}"
        );
        // Behind access links each flow has a server of its own.
        let access = "[access]\ndelay = \"5 ms\"\n[downlink.pipe]\nrate = \"10 Mbit/s\"\n[[flow]]\ndevice = { rate = \"3 Mbit/s\" }\n\
                      [[flow]]\ndevice = { rate = \"2 Mbit/s\" }\n";
        let s = Scenario::from_toml(access, "s.toml").unwrap();
        assert_eq!(s.flow_hosts(1).0, "server.1");
        assert_eq!(s.host_budgets().unwrap().len(), 2);
    }

    #[test]
    fn bad_host_budgets_are_refused_where_they_are_written() {
        for (text, what) in [
            (
                "[host.h.device]\nbuffer = 2\n",
                "expected a `rate` (bit/s) or a `packet_rate`",
            ),
            ("[host.h.device]\npacket_rate = 0\n", "0 packets per second"),
            (
                "[host.h.device]\nrate = \"0 bit/s\"\n",
                "a rate must be positive",
            ),
            (
                "[host.h.device]\npacket_rate = 10\nbuffer = 0\n",
                "0 packets: expected 1 to 10000",
            ),
            (
                "[host.h.device]\npacket_rate = 10\nreceive_cost = \"2 s\"\n",
                "expected at most 1 s",
            ),
            (
                "[host.h.device]\npacket_rate = 10\nspeed = 3\n",
                "unknown field `speed`",
            ),
        ] {
            let full = format!("{text}[[flow]]\nserver = \"h\"\nclient = \"x\"\n");
            let e = parse(&full).unwrap_err();
            let last = text.lines().count();
            let want = if what.starts_with("expected a `rate`") {
                1
            } else {
                last
            };
            assert_eq!(
                e.line,
                Some(line_of(&full, text.lines().nth(want - 1).unwrap())),
                "{text}: {e}"
            );
            assert!(e.message.contains(what), "{text}: {e}");
        }
    }
}
