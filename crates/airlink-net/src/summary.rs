//! The run summary: per flow and per link counters, serialised with a fixed field order so
//! that the same seed gives byte-identical JSON.

use airlink_link::{CellUserStats, Link, LinkStats, Packet};
use airlink_phy::Modulation;
use serde::Serialize;
use std::collections::BTreeMap;

/// A simulation's summary (`summary.json`): the run, then per flow and per link counters.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Summary {
    pub scenario: String,
    pub seed: u64,
    /// Every flow completed (see [`FlowSummary::completed`]).
    pub completed: bool,
    pub sim_time_s: f64,
    pub events: u64,
    pub flows: Vec<FlowSummary>,
    pub links: Vec<LinkSummary>,
}

/// One flow's counters, as its sender and receiver saw them.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct FlowSummary {
    pub id: u32,
    /// The scenario's name for the flow, if it gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub protocol: &'static str,
    pub congestion: &'static str,
    /// Bytes the application set out to transfer (`None`: until the stop time).
    pub bytes_requested: Option<u64>,
    /// Bytes delivered in order to the receiving application.
    pub bytes_delivered: u64,
    /// A flow with a size delivered all its bytes before the stop time; a flow without one
    /// (it runs until the stop time by design) delivered data.
    pub completed: bool,
    pub start_s: f64,
    /// Time of the last delivery to the application.
    pub end_s: Option<f64>,
    pub duration_s: Option<f64>,
    /// Application goodput from the flow's start to its last delivery.
    pub goodput_bps: Option<f64>,
    /// Goodput between the deliveries that first reached 10 % and 90 % of the transfer:
    /// the steady rate, without connection set-up and slow start.
    pub goodput_steady_bps: Option<f64>,
    /// Packets the sender transmitted (data and control; TCP segments, DCCP packets, UDP
    /// datagrams), and of them retransmissions (TCP only: DCCP and UDP never retransmit).
    pub segments_sent: u64,
    pub data_segments_sent: u64,
    pub retransmissions: u64,
    /// The flow's packets lost on links, either direction: dropped there (queue, random
    /// loss) or delivered corrupted and caught by the receiver's checksum. Counted by the
    /// simulator, which knows each packet's flow; `null` in emulation.
    pub link_losses: Option<u64>,
    /// TCP data segments (or FINs) that reached the receiver when it already had them,
    /// counted at the receiver: retransmissions that were not needed.
    pub spurious_retransmissions: u64,
    /// Retransmitted over all data segments sent, in per cent.
    pub retransmission_pct: f64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    /// Packets of the flow dropped by a receiver's checksum (bit errors).
    pub checksum_drops: u64,
    /// With a `device` limit: packets its host refused (UDP datagrams dropped at the sender).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_drops: Option<u64>,
    /// What iperf would report at the client (UDP and DCCP flows).
    pub iperf: Option<IperfSummary>,
    /// ECN's counts, for a flow with `ecn = true` (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn: Option<EcnSummary>,
}

/// A TCP flow's ECN (RFC 3168) counts.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct EcnSummary {
    /// Whether both ends agreed to use ECN on the handshake.
    pub negotiated: bool,
    /// Data segments that reached the receiver marked Congestion Experienced.
    pub ce_marks_received: u64,
    /// The sender's window reductions for an ECN-Echo (at most one per round trip).
    pub ece_reductions: u64,
}

/// iperf's receiver totals (spec D.8).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct IperfSummary {
    /// Datagrams the sender numbered (the highest id received).
    pub datagrams: u64,
    pub received: u64,
    pub lost: u64,
    pub loss_pct: f64,
    pub out_of_order: u64,
    /// RFC 3550 interarrival jitter at the end of the flow.
    pub jitter_ms: f64,
    /// Payload throughput from the first to the last arrival.
    pub throughput_bps: f64,
}

/// One link's counters, as its model kept them.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct LinkSummary {
    pub name: &'static str,
    pub model: &'static str,
    pub packets_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    pub queue_drops: u64,
    pub loss_drops: u64,
    pub frames_sent: u64,
    pub frame_errors: u64,
    pub arq_retransmissions: u64,
    pub packets_given_up: u64,
    /// Packets this link corrupted that a receiver's checksum then dropped.
    pub checksum_drops: u64,
    /// Packets lost because the link was down (a timed change), queued, in flight or arriving.
    pub outage_drops: u64,
    /// Radio time spent in each modulation (only the modulations used).
    pub time_in_modulation_s: BTreeMap<&'static str, f64>,
    /// A multi-user cell's users, by index (user i is the i-th flow through the cell).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub users: Option<Vec<CellUserSummary>>,
    /// The queue discipline's drops, marks and sojourn times (a link with an `aqm`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aqm: Option<crate::aqm::AqmSummary>,
}

/// One user of a multi-user cell.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct CellUserSummary {
    /// Slots that served the user, and the frames of those that failed.
    pub slots_served: u64,
    pub frame_errors: u64,
    /// MAC throughput: payload bits that got through per second of the cell's activity.
    pub mac_throughput_bps: f64,
    /// MAC throughput counted as scheduled: rate × slot of every slot that served the user, per
    /// second of the cell's activity; and the slot fill, delivered over scheduled bits of the
    /// error-free slots (null before the first).
    pub mac_scheduled_bps: f64,
    pub slot_fill: Option<f64>,
    /// Mean true SINR (of the linear mean) and mean feasible rate over the cell's active slots.
    pub mean_sinr_db: f64,
    pub mean_rate_bps: f64,
    /// The interval between two of the user's turns: mean, standard deviation, largest.
    pub interval_mean_s: f64,
    pub interval_std_s: f64,
    pub interval_max_s: f64,
}

impl CellUserSummary {
    fn new(u: &CellUserStats, slot_s: f64) -> CellUserSummary {
        let (mean, square) = u.interval_moments();
        let active_s = u.slots_observed as f64 * slot_s;
        CellUserSummary {
            slots_served: u.slots_served,
            frame_errors: u.frame_errors,
            mac_throughput_bps: if active_s > 0.0 {
                u.bits_delivered as f64 / active_s
            } else {
                0.0
            },
            mac_scheduled_bps: if active_s > 0.0 {
                u.bits_scheduled as f64 / active_s
            } else {
                0.0
            },
            slot_fill: u.slot_fill(),
            mean_sinr_db: u.mean_sinr_db(),
            mean_rate_bps: u.mean_rate_bps(),
            interval_mean_s: mean * slot_s,
            interval_std_s: (square - mean * mean).max(0.0).sqrt() * slot_s,
            interval_max_s: u.interval_max as f64 * slot_s,
        }
    }
}

impl LinkSummary {
    /// A link's summary from its model's counters; `checksum_drops` is what the driver
    /// attributed to it (the simulator sees the receivers' checksums, the emulator does not).
    pub fn of<P: Packet>(
        name: &'static str,
        model: &'static str,
        link: &dyn Link<P>,
        checksum_drops: u64,
    ) -> LinkSummary {
        let users = link.cell_stats().map(|c| {
            c.users
                .iter()
                .map(|u| CellUserSummary::new(u, c.slot_duration_s))
                .collect()
        });
        LinkSummary {
            users,
            aqm: link.queue_stats().map(crate::aqm::AqmSummary::of),
            ..LinkSummary::new(name, model, link.stats(), checksum_drops)
        }
    }

    fn new(
        name: &'static str,
        model: &'static str,
        s: &LinkStats,
        checksum_drops: u64,
    ) -> LinkSummary {
        let time_in_modulation_s = Modulation::ALL
            .iter()
            .filter(|m| s.slots_per_modulation[m.bits() as usize - 1] > 0)
            .map(|m| {
                (
                    m.name(),
                    s.slots_per_modulation[m.bits() as usize - 1] as f64 * s.slot_duration_s,
                )
            })
            .collect();
        LinkSummary {
            name,
            model,
            packets_in: s.packets_in,
            packets_out: s.packets_out,
            bytes_out: s.bytes_out,
            queue_drops: s.queue_drops,
            loss_drops: s.loss_drops,
            frames_sent: s.frames_sent,
            frame_errors: s.frame_errors,
            arq_retransmissions: s.arq_retransmissions,
            packets_given_up: s.packets_given_up,
            checksum_drops,
            outage_drops: 0,
            time_in_modulation_s,
            users: None,
            aqm: None,
        }
    }
}

impl Summary {
    /// The summary as JSON (stable field order, so equal runs give equal bytes).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("summaries serialise")
    }
}
