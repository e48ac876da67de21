//! The network that airlink's two drivers step: built once from a scenario, it holds the
//! named links (any link model), the flows and each flow's path in each direction, the order
//! of simultaneous events, the metrics tables, and the run summary.
//!
//! The simulator (`airlink-sim`: virtual clock, event queue) and the emulator (`airlink-emu`:
//! wall clock, TUN devices) both build a [`Network`] with [`Network::build`] and move packets
//! along its [`paths`](Network::paths); neither knows the shape of the topology.
//!
//! # The order of simultaneous events
//! Both drivers process events in the order of the key `(time, rank, source, seq)`:
//! 1. `time`: the instant the event is due (a driver calls a model with the due instant, never
//!    with a later wake-up time);
//! 2. `rank` ([`order`]): packet arrivals, then component wake-ups, then flow starts, then
//!    timed changes, then samples;
//! 3. `source`: the id of the component that caused it ([`order::link_source`],
//!    [`order::endpoint_source`]);
//! 4. `seq`: FIFO among what is still tied.

pub mod aqm;
pub mod build;
pub mod event;
pub mod flow;
pub mod host_budget;
pub mod impair_build;
pub mod metrics;
pub mod model;
pub mod moot;
pub mod outage;
pub mod step;
pub mod summary;

use airlink_engine::Instant;
pub use airlink_link::Direction;
use airlink_link::LinkChange;
pub use build::{BuildError, BuiltLink};
pub use event::{EventKind, NO_FLOW};
pub use flow::Flow;
pub use outage::Outages;
pub use step::{ChangeError, Routed, Sink, Stepper};
pub use summary::{FlowSummary, IperfSummary, LinkSummary, Summary};

/// Index of a link in a [`Network`].
pub type LinkId = u16;

/// The rank of each event class at equal times, and the source ids that break the next tie.
pub mod order {
    /// A packet arriving at a link or an endpoint.
    pub const ARRIVE: u8 = 0;
    /// A component's timer (link or endpoint).
    pub const WAKE: u8 = 1;
    /// A flow starting.
    pub const START: u8 = 2;
    /// A scheduled change of the network.
    pub const CHANGE: u8 = 3;
    /// A sample of the time series (observation only).
    pub const SAMPLE: u8 = 4;

    /// Source id of a link.
    pub fn link_source(link: super::LinkId) -> u32 {
        link as u32
    }

    /// Source id of one end of a flow: after every link id.
    pub fn endpoint_source(flow: u32, side: airlink_transport::Role) -> u32 {
        0x1_0000 + 2 * flow + (side == airlink_transport::Role::Server) as u32
    }
}

/// The links a flow crosses, server to client and client to server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowPath {
    pub down: Vec<LinkId>,
    pub up: Vec<LinkId>,
}

/// A timed change of the network (a scenario's `[[change]]`).
#[derive(Clone, Debug, PartialEq)]
pub enum NetChange {
    /// New values of some of a link's parameters.
    Set {
        link: LinkId,
        change: LinkChange,
    },
    /// A link goes down: the packets in it and arriving at it are lost, or kept until it is up.
    Down {
        link: LinkId,
        keep: bool,
    },
    Up {
        link: LinkId,
    },
    /// A flow moves to other links (a hand-off). A packet on its way keeps its hop count: past
    /// the point where the paths part, it continues on the new path.
    Path {
        flow: u32,
        down: Option<Vec<LinkId>>,
        up: Option<Vec<LinkId>>,
    },
}

impl NetChange {
    /// The kind of its row in `events.parquet`.
    pub fn kind(&self) -> EventKind {
        match self {
            NetChange::Set { .. } => EventKind::LinkChange,
            NetChange::Down { .. } => EventKind::LinkDown,
            NetChange::Up { .. } => EventKind::LinkUp,
            NetChange::Path { .. } => EventKind::PathChange,
        }
    }
}

impl NetChange {
    /// The link it changes (none: a path change).
    pub fn link(&self) -> Option<LinkId> {
        match self {
            NetChange::Set { link, .. } | NetChange::Down { link, .. } | NetChange::Up { link } => {
                Some(*link)
            }
            NetChange::Path { .. } => None,
        }
    }

    /// The flow of its row in `events.parquet`: the moved flow's, or [`NO_FLOW`].
    pub fn flow(&self) -> u32 {
        match self {
            NetChange::Path { flow, .. } => *flow,
            _ => NO_FLOW,
        }
    }
}

/// A change and its instant.
#[derive(Clone, Debug, PartialEq)]
pub struct TimedChange {
    pub at: Instant,
    pub change: NetChange,
}

/// A scenario's links and flows' paths, for packets of type `P` (the simulator's or the
/// emulator's: the same models carry both).
pub struct Network<P> {
    pub links: Vec<BuiltLink<P>>,
    /// Each scenario flow's path, by flow index.
    pub paths: Vec<FlowPath>,
    /// The path of traffic that is no scenario flow's (in emulation, what the applications in
    /// the namespaces send): the shared links.
    pub shared: FlowPath,
    /// The scenario's timed changes in time order (the file's order at equal times).
    pub changes: Vec<TimedChange>,
}
