//! The kinds of rows in `events.parquet`, one name each, for both drivers.

use airlink_link::DropReason;

/// The `flow` of an event that concerns no flow (a link's change) in `events.parquet`.
pub const NO_FLOW: u32 = u32::MAX;

/// What an `events.parquet` row records.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A link dropped a packet.
    Drop(DropReason),
    /// A link's ARQ gave up on a frame: the packet left with bit errors.
    ArqGaveUp,
    /// A receiver's checksum caught a corrupted packet.
    ChecksumDrop,
    /// A flow started, or stopped at its `stop` time.
    FlowStart,
    FlowStop,
    /// A packet was lost to a link's outage.
    Outage,
    /// Timed or live changes of the network.
    LinkChange,
    LinkDown,
    LinkUp,
    PathChange,
    /// Emulation: a frame read from a side that was no IP packet.
    Malformed,
    /// Emulation: a packet dropped on arrival, its direction's links held their byte bound.
    InFlightLimit,
}

impl EventKind {
    /// The name in the `kind` column.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Drop(reason) => reason.as_str(),
            EventKind::ArqGaveUp => "arq_gave_up",
            EventKind::ChecksumDrop => "checksum_drop",
            EventKind::FlowStart => "flow_start",
            EventKind::FlowStop => "flow_stop",
            EventKind::Outage => "outage",
            EventKind::LinkChange => "link_change",
            EventKind::LinkDown => "link_down",
            EventKind::LinkUp => "link_up",
            EventKind::PathChange => "path_change",
            EventKind::Malformed => "malformed",
            EventKind::InFlightLimit => "in_flight_limit",
        }
    }
}
