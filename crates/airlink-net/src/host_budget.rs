//! A host's service budget in the network: one [`DeviceLimit`] per host that has one
//! (`[host.NAME] device`, or a flow's `device` for the host its data comes from), shared by
//! every flow that starts or ends at the host. Each of those flows' ends at the host sends
//! through it (data, ACKs, feedback) and is charged for each packet it receives.
//!
//! The shared limit is the only state flows share; each end keeps the packets of its own that
//! the host holds, in the order they leave, and counts its own refusals. Every driver calls a
//! flow's ends in its own specified order, so the flows' turns at a freed place in the host's
//! buffer follow that order (deterministic: no clock, no randomness).

use crate::build::BuildError;
use crate::flow::Flow;
use airlink_engine::Instant;
use airlink_scenario as sc;
use airlink_transport::{DeviceLimit, DeviceLimitConfig};
use airlink_transport::{Pdu, Role};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

/// One host's budget, shared by the ends of flows at that host.
#[derive(Clone, Debug)]
pub struct HostBudget {
    limit: Arc<Mutex<DeviceLimit>>,
}

impl HostBudget {
    pub fn new(limit: DeviceLimit) -> Self {
        HostBudget {
            limit: Arc::new(Mutex::new(limit)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, DeviceLimit> {
        // Only the thread that runs the flows ever takes it; a poisoned lock holds a valid limit.
        self.limit.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The packets the host took from its flows and the packets it refused, all flows together.
    pub fn stats(&self) -> airlink_transport::DeviceStats {
        self.lock().stats().clone()
    }
}

/// One end of a flow at a host with a budget.
#[derive(Debug)]
pub(crate) struct EndBudget {
    host: HostBudget,
    /// Places of the host's send buffer this end may hold: its share, ⌊buffer/ends⌋, at least
    /// one (one socket cannot fill the host while another waits: in a shared FIFO every place a
    /// departure frees would go to the end whose packet left, which the driver calls first).
    places: usize,
    /// This end's packets the host holds: the instant each leaves, oldest first.
    held: VecDeque<(Instant, Pdu)>,
    /// This end's packets the host refused (UDP datagrams that found its places full).
    pub(crate) refused: u64,
}

impl EndBudget {
    pub(crate) fn new(host: &HostBudget, places: usize) -> Self {
        EndBudget {
            host: host.clone(),
            places: places.max(1),
            held: VecDeque::new(),
            refused: 0,
        }
    }

    /// A packet reached this end at `now`: the host pays for it.
    pub(crate) fn charge_received(&self, now: Instant) {
        self.host.lock().charge_received(now);
    }

    /// This end's packets still in the host at `now`.
    fn in_host(&self, now: Instant) -> usize {
        self.held.iter().filter(|(t, _)| *t > now).count()
    }

    /// Takes the packets `next` gives while this end has a place (`drops`: every packet that
    /// is due, refusing what does not fit, as UDP's sender does); returns the next packet of
    /// this end that leaves the host by `now`.
    pub(crate) fn transmit(
        &mut self,
        now: Instant,
        drops: bool,
        mut next: impl FnMut() -> Option<Pdu>,
    ) -> Option<Pdu> {
        let mut in_host = self.in_host(now);
        while drops || in_host < self.places {
            let Some(pdu) = next() else {
                break;
            };
            if in_host >= self.places {
                self.refused += 1;
                continue;
            }
            // The host's buffer holds every end's places, so it never refuses here.
            if let Some(leaves) = self.host.lock().offer(now, pdu.wire_len()) {
                self.held.push_back((leaves, pdu));
                in_host += 1;
            } else {
                self.refused += 1;
            }
        }
        match self.held.front() {
            Some((t, _)) if *t <= now => self.held.pop_front().map(|(_, pdu)| pdu),
            _ => None,
        }
    }

    /// When this end needs its driver next, given its endpoint's own `endpoint` timeout: when
    /// its next held packet leaves; and, unless it waits for a place (`blocks` and all its
    /// places taken: a due send cannot send before one frees), the endpoint's.
    pub(crate) fn poll_timeout(&self, blocks: bool, endpoint: Option<Instant>) -> Option<Instant> {
        let leaves = self.held.front().map(|(t, _)| *t);
        let waits = blocks && self.held.len() >= self.places;
        earliest(if waits { None } else { endpoint }, leaves)
    }
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Gives each host's budget of `s` (validated) to the ends of `flows` (flow `i` is the
/// scenario's flow `i`) at that host.
pub fn attach<'a>(
    s: &sc::Scenario,
    flows: impl IntoIterator<Item = &'a mut Flow>,
) -> Result<(), BuildError> {
    let budgets = s
        .host_budgets()
        .map_err(|(key, m)| BuildError(format!("{}: {m}", key.join("."))))?;
    if budgets.is_empty() {
        return Ok(());
    }
    let mut flows: Vec<&mut Flow> = flows.into_iter().collect();
    let ends_at = |i: usize| {
        let (sender, receiver) = s.flow_hosts(i);
        [(Role::Server, sender), (Role::Client, receiver)]
    };
    for b in &budgets {
        let ends: Vec<(usize, Role)> = (0..flows.len())
            .flat_map(|i| ends_at(i).into_iter().map(move |(side, h)| (i, side, h)))
            .filter(|(_, _, h)| *h == b.host)
            .map(|(i, side, _)| (i, side))
            .collect();
        let cfg = DeviceLimitConfig {
            packets_per_sec: b.device.packet_rate,
            bits_per_sec: b.device.rate.map(|r| r.0),
            // Room for every end's places (one each, when there are more ends than places).
            buffer_packets: b.device.buffer.max(ends.len() as u32),
        };
        let mut limit = DeviceLimit::new(cfg)
            .map_err(|e| BuildError(format!("{}: {e}", b.set_by.join("."))))?;
        if let Some(cost) = b.device.receive_cost {
            limit.set_receive_cost(cost.0);
        }
        let host = HostBudget::new(limit);
        let places = b.device.buffer as usize / ends.len().max(1);
        for (i, side) in ends {
            flows[i].share_host_budget(side, &host, places);
        }
    }
    Ok(())
}
