//! Counters and sampled time series, buffered column by column until the caller drains them
//! (so memory is bounded by the drain interval, not the run length). Column names carry units.

use airlink_engine::Instant;

/// A column of a table.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    Str(Vec<&'static str>),
}

/// A table: named columns of equal length.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub columns: Vec<(&'static str, Column)>,
}

impl Table {
    pub fn rows(&self) -> usize {
        match self.columns.first() {
            None => 0,
            Some((_, Column::U64(v))) => v.len(),
            Some((_, Column::I64(v))) => v.len(),
            Some((_, Column::F64(v))) => v.len(),
            Some((_, Column::Str(v))) => v.len(),
        }
    }
}

/// Per-flow samples, every `sample_interval`.
#[derive(Default)]
pub struct FlowSeries {
    pub time_ns: Vec<u64>,
    pub flow: Vec<u64>,
    pub cwnd_bytes: Vec<u64>,
    pub ssthresh_bytes: Vec<u64>,
    pub inflight_bytes: Vec<u64>,
    pub delivered_bytes: Vec<u64>,
    pub srtt_us: Vec<f64>,
    pub rto_us: Vec<f64>,
    /// Segments retransmitted so far (the sender's view of its losses).
    pub retransmissions: Vec<u64>,
    /// TCP-AFC's SACK_OK flag: 1, 0, or -1 for controllers without one.
    pub sack_ok: Vec<i64>,
    /// TCP-AFC's congestion distance Cd of the last reduction (NaN if none).
    pub congestion_distance_segments: Vec<f64>,
    /// Veno's backlog estimate N (NaN for other controllers).
    pub backlog_segments: Vec<f64>,
}

/// Every RTT sample a sender takes.
#[derive(Default)]
pub struct RttSeries {
    pub time_ns: Vec<u64>,
    pub flow: Vec<u64>,
    pub rtt_us: Vec<f64>,
}

/// Per-link samples, every `sample_interval`.
#[derive(Default)]
pub struct LinkSeries {
    pub time_ns: Vec<u64>,
    pub link: Vec<&'static str>,
    pub queue_packets: Vec<u64>,
    pub queue_bytes: Vec<u64>,
    pub snr_db: Vec<f64>,
    pub predicted_snr_db: Vec<f64>,
    pub modulation_bits: Vec<i64>,
    pub subband: Vec<i64>,
}

/// Drops and other events, as they happen.
#[derive(Default)]
pub struct EventSeries {
    pub time_ns: Vec<u64>,
    pub kind: Vec<&'static str>,
    pub link: Vec<&'static str>,
    pub flow: Vec<u64>,
    pub bytes: Vec<u64>,
    pub bit_errors: Vec<u64>,
}

impl EventSeries {
    pub fn push(&mut self, at: Instant, kind: &'static str, link: &'static str, flow: u32, bytes: u32, bit_errors: u32) {
        self.time_ns.push(at.as_nanos());
        self.kind.push(kind);
        self.link.push(link);
        self.flow.push(flow as u64);
        self.bytes.push(bytes as u64);
        self.bit_errors.push(bit_errors as u64);
    }
}

/// All series of a run.
#[derive(Default)]
pub struct Recorder {
    /// Off for runs that only want the summary (sweeps): nothing is buffered.
    pub enabled: bool,
    pub flows: FlowSeries,
    pub rtt: RttSeries,
    pub links: LinkSeries,
    pub events: EventSeries,
}

macro_rules! take_table {
    ($s:expr, $($col:ident : $kind:ident),*) => {
        Table { columns: vec![$((stringify!($col), Column::$kind(std::mem::take(&mut $s.$col)))),*] }
    };
}

impl Recorder {
    /// Hands over everything buffered so far as named tables, and empties the buffers.
    pub fn drain(&mut self) -> Vec<(&'static str, Table)> {
        let f = &mut self.flows;
        let flows = take_table!(f, time_ns: U64, flow: U64, cwnd_bytes: U64, ssthresh_bytes: U64, inflight_bytes: U64, delivered_bytes: U64, srtt_us: F64, rto_us: F64, retransmissions: U64, sack_ok: I64, congestion_distance_segments: F64, backlog_segments: F64);
        let r = &mut self.rtt;
        let rtt = take_table!(r, time_ns: U64, flow: U64, rtt_us: F64);
        let l = &mut self.links;
        let links = take_table!(l, time_ns: U64, link: Str, queue_packets: U64, queue_bytes: U64, snr_db: F64, predicted_snr_db: F64, modulation_bits: I64, subband: I64);
        let e = &mut self.events;
        let events = take_table!(e, time_ns: U64, kind: Str, link: Str, flow: U64, bytes: U64, bit_errors: U64);
        vec![("flows", flows), ("rtt", rtt), ("links", links), ("events", events)]
    }
}
