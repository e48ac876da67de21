//! Counters and sampled time series, buffered column by column until the caller drains them
//! (so memory is bounded by the drain interval, not the run length). Column names carry units.

use crate::EventKind;
use airlink_engine::Instant;
use airlink_link::LinkSample;
use airlink_transport::udp::IntervalReport;

/// A column of a table.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    Str(Vec<&'static str>),
}

impl Column {
    /// Its type in Arrow's names.
    pub fn arrow_type(&self) -> &'static str {
        match self {
            Column::U64(_) => "uint64",
            Column::I64(_) => "int64",
            Column::F64(_) => "float64",
            Column::Str(_) => "string",
        }
    }
}

/// A table: named columns of equal length.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub columns: Vec<(&'static str, Column)>,
}

impl Table {
    /// Appends the rows of a table with the same columns.
    ///
    /// # Panics
    /// If the columns differ in name or type.
    pub fn append(&mut self, other: Table) {
        assert_eq!(
            self.columns.len(),
            other.columns.len(),
            "tables with different columns"
        );
        for ((name, a), (other_name, b)) in self.columns.iter_mut().zip(other.columns) {
            assert_eq!(*name, other_name, "tables with different columns");
            match (a, b) {
                (Column::U64(a), Column::U64(b)) => a.extend(b),
                (Column::I64(a), Column::I64(b)) => a.extend(b),
                (Column::F64(a), Column::F64(b)) => a.extend(b),
                (Column::Str(a), Column::Str(b)) => a.extend(b),
                _ => panic!("column {name} has different types"),
            }
        }
    }

    /// The column named `name`.
    pub fn column_mut(&mut self, name: &str) -> Option<&mut Column> {
        self.columns
            .iter_mut()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| c)
    }

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

/// The Rust type of a column kind.
macro_rules! column_type {
    (U64) => { u64 };
    (I64) => { i64 };
    (F64) => { f64 };
    (Str) => { &'static str };
}

/// A table's buffered columns, declared once: the struct (a `Vec` per column, pushed by hand)
/// and what every table does with them (count, append, hand over, measure).
macro_rules! series {
    ($(#[$meta:meta])* $name:ident { $($(#[$cmeta:meta])* $col:ident : $kind:ident),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Default)]
        pub struct $name {
            $($(#[$cmeta])* pub $col: Vec<column_type!($kind)>,)*
        }

        impl $name {
            pub fn rows(&self) -> usize {
                self.time_ns.len()
            }

            /// Moves `other`'s rows to the end of these.
            pub fn append(&mut self, other: &mut $name) {
                $(self.$col.append(&mut other.$col);)*
            }

            /// The table: the rows so far, taken out.
            pub fn take(&mut self) -> Table {
                Table {
                    columns: vec![$((stringify!($col), Column::$kind(std::mem::take(&mut self.$col)))),*],
                }
            }

            /// Bytes the buffers hold (their capacity: what they have allocated).
            pub fn held_bytes(&self) -> usize {
                0 $(+ self.$col.capacity() * std::mem::size_of::<column_type!($kind)>())*
            }
        }
    };
}

/// One flow's state at a sampling instant, whatever its protocol; NaN (or -1) where the
/// protocol has no such quantity.
#[derive(Clone, Debug)]
pub struct FlowSample {
    /// TCP and CCID-2 (packets × packet size) congestion window and threshold, bytes.
    pub cwnd_bytes: f64,
    pub ssthresh_bytes: f64,
    /// Data in flight (TCP's pipe, CCID-2's pipe × packet size), bytes.
    pub inflight_bytes: f64,
    /// CCID-3's allowed sending rate, bit/s.
    pub rate_bps: f64,
    /// CCID-3's loss event rate p.
    pub loss_event_rate: f64,
    pub srtt_us: f64,
    pub rto_us: f64,
    /// TCP segments retransmitted so far (0 for DCCP and UDP, which never retransmit).
    pub retransmissions: u64,
    /// TCP data segments (or FINs) that reached the receiver when it already had them,
    /// counted at the receiver.
    pub spurious_retransmissions: u64,
    /// TCP retransmission timeouts and fast-recovery episodes so far.
    pub timeouts: u64,
    pub fast_recoveries: u64,
    /// The flow's packets (either direction) that links dropped or delivered corrupted, as
    /// the simulator counts them; -1 where nobody counts them (emulation).
    pub link_losses: i64,
    /// Losses the protocol itself detected: DCCP packets its CCID (or its receiver) found
    /// lost, UDP datagrams iperf counted lost; 0 for TCP (see `retransmissions`).
    pub detected_losses: u64,
    /// TCP-AFC's SACK_OK flag: 1, 0, or -1 for controllers without one.
    pub sack_ok: i64,
    /// TCP-AFC's congestion distance Cd of the last reduction, segments.
    pub congestion_distance_segments: f64,
    /// Veno's backlog estimate N, segments.
    pub backlog_segments: f64,
    /// TCP's pacing rate (payload), bit/s; NaN while the controller does not pace.
    pub pacing_rate_bps: f64,
}

series! {
    /// Per-flow samples, every `sample_interval`.
    FlowSeries {
        time_ns: U64,
        flow: U64,
        delivered_bytes: U64,
        cwnd_bytes: F64,
        ssthresh_bytes: F64,
        inflight_bytes: F64,
        rate_bps: F64,
        loss_event_rate: F64,
        srtt_us: F64,
        rto_us: F64,
        retransmissions: U64,
        spurious_retransmissions: U64,
        timeouts: U64,
        fast_recoveries: U64,
        link_losses: I64,
        detected_losses: U64,
        sack_ok: I64,
        congestion_distance_segments: F64,
        backlog_segments: F64,
        pacing_rate_bps: F64,
    }
}

impl FlowSeries {
    pub fn push(&mut self, at: Instant, flow: u32, delivered: u64, s: &FlowSample) {
        self.time_ns.push(at.as_nanos());
        self.flow.push(flow as u64);
        self.delivered_bytes.push(delivered);
        self.cwnd_bytes.push(s.cwnd_bytes);
        self.ssthresh_bytes.push(s.ssthresh_bytes);
        self.inflight_bytes.push(s.inflight_bytes);
        self.rate_bps.push(s.rate_bps);
        self.loss_event_rate.push(s.loss_event_rate);
        self.srtt_us.push(s.srtt_us);
        self.rto_us.push(s.rto_us);
        self.retransmissions.push(s.retransmissions);
        self.spurious_retransmissions
            .push(s.spurious_retransmissions);
        self.timeouts.push(s.timeouts);
        self.fast_recoveries.push(s.fast_recoveries);
        self.link_losses.push(s.link_losses);
        self.detected_losses.push(s.detected_losses);
        self.sack_ok.push(s.sack_ok);
        self.congestion_distance_segments
            .push(s.congestion_distance_segments);
        self.backlog_segments.push(s.backlog_segments);
        self.pacing_rate_bps.push(s.pacing_rate_bps);
    }
}

series! {
    /// iperf's interval reports of UDP and DCCP receivers.
    IntervalSeries {
        /// End of the interval.
        time_ns: U64,
        flow: U64,
        interval_s: F64,
        bytes: U64,
        throughput_bps: F64,
        received: U64,
        lost: U64,
        out_of_order: U64,
        jitter_ms: F64,
    }
}

impl IntervalSeries {
    pub fn push(&mut self, flow: u32, r: &IntervalReport) {
        self.time_ns.push(r.end.as_nanos());
        self.flow.push(flow as u64);
        self.interval_s
            .push(r.end.saturating_since(r.start).as_secs_f64());
        self.bytes.push(r.bytes);
        self.throughput_bps.push(r.throughput_bps);
        self.received.push(r.received);
        self.lost.push(r.lost);
        self.out_of_order.push(r.out_of_order);
        self.jitter_ms.push(r.jitter_ms);
    }
}

series! {
    /// Every RTT sample a sender takes.
    RttSeries {
        time_ns: U64,
        flow: U64,
        rtt_us: F64,
    }
}

series! {
    /// Per-link samples, every `sample_interval`.
    LinkSeries {
        time_ns: U64,
        link: Str,
        queue_packets: U64,
        queue_bytes: U64,
        snr_db: F64,
        predicted_snr_db: F64,
        modulation_bits: I64,
        subband: I64,
    }
}

impl LinkSeries {
    /// A link's sample; NaN and -1 in the radio columns of links without a radio.
    pub fn push(&mut self, at: Instant, link: &'static str, s: &LinkSample) {
        self.time_ns.push(at.as_nanos());
        self.link.push(link);
        self.queue_packets.push(s.queue_packets as u64);
        self.queue_bytes.push(s.queue_bytes);
        let r = s.radio;
        self.snr_db.push(r.map_or(f64::NAN, |r| r.snr_db));
        self.predicted_snr_db
            .push(r.map_or(f64::NAN, |r| r.predicted_snr_db));
        self.modulation_bits
            .push(r.map_or(-1, |r| r.modulation_bits as i64));
        self.subband.push(r.map_or(-1, |r| r.subband as i64));
    }
}

series! {
    /// Drops and other events, as they happen.
    EventSeries {
        time_ns: U64,
        kind: Str,
        link: Str,
        flow: U64,
        bytes: U64,
        bit_errors: U64,
        /// 1: a change made through an emulation's control socket; 0 otherwise (always in
        /// simulation).
        live: U64,
        /// Emulation: the wall clock at the event's emulated instant, ns since the epoch (filled
        /// in when the table is handed over); 0 in simulation.
        wall_time_ns: U64,
    }
}

impl EventSeries {
    pub fn push(
        &mut self,
        at: Instant,
        kind: EventKind,
        link: &'static str,
        flow: u32,
        bytes: u32,
        bit_errors: u32,
    ) {
        self.push_row(at, kind, link, flow, bytes, bit_errors, false);
    }

    /// A row, `live` or not.
    #[allow(clippy::too_many_arguments)] // one per column
    pub fn push_row(
        &mut self,
        at: Instant,
        kind: EventKind,
        link: &'static str,
        flow: u32,
        bytes: u32,
        bit_errors: u32,
        live: bool,
    ) {
        self.time_ns.push(at.as_nanos());
        self.kind.push(kind.as_str());
        self.link.push(link);
        self.flow.push(flow as u64);
        self.bytes.push(bytes as u64);
        self.bit_errors.push(bit_errors as u64);
        self.live.push(live as u64);
        self.wall_time_ns.push(0);
    }
}

series! {
    /// The TCP servers' view, event by event (with the scenario's `event_log`): each data segment
    /// sent (`sent`: its first byte's sequence number and payload), each ACK received (`ack`: the
    /// cumulative ACK), each retransmission timeout (`timeout`, seq and bytes 0),
    /// with the sender's cwnd after the event. Sequence numbers count from the SYN (0), so data
    /// byte k (from 1) is sequence number k.
    SegmentSeries {
        time_ns: U64,
        flow: U64,
        kind: Str,
        seq: U64,
        bytes: U64,
        cwnd_bytes: F64,
    }
}

/// What a `segments` row records.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SegmentKind {
    /// A data segment sent.
    Sent,
    /// An ACK received.
    Ack,
    /// A retransmission timeout.
    Timeout,
}

impl SegmentKind {
    /// The name in the `kind` column.
    pub fn as_str(self) -> &'static str {
        match self {
            SegmentKind::Sent => "sent",
            SegmentKind::Ack => "ack",
            SegmentKind::Timeout => "timeout",
        }
    }
}

impl SegmentSeries {
    pub fn push(
        &mut self,
        at: Instant,
        flow: u32,
        kind: SegmentKind,
        seq: u64,
        bytes: u32,
        cwnd_bytes: f64,
    ) {
        self.time_ns.push(at.as_nanos());
        self.flow.push(flow as u64);
        self.kind.push(kind.as_str());
        self.seq.push(seq);
        self.bytes.push(bytes as u64);
        self.cwnd_bytes.push(cwnd_bytes);
    }
}

series! {
    /// Every slot a cell served (with the scenario's `event_log`): the slot's start and index, the
    /// user (the flows through the cell, in order, are users 0, 1, …), its rate and whether the
    /// frame failed (1) or not (0).
    SlotSeries {
        time_ns: U64,
        link: Str,
        slot: U64,
        user: U64,
        rate_bps: F64,
        frame_error: U64,
    }
}

/// All series of a run.
#[derive(Default)]
pub struct Recorder {
    /// Off for runs that only want the summary (sweeps): nothing is buffered.
    pub enabled: bool,
    /// Also the event-by-event tables `segments` and `slots` (only while `enabled`).
    pub event_log: bool,
    pub flows: FlowSeries,
    pub intervals: IntervalSeries,
    pub rtt: RttSeries,
    pub links: LinkSeries,
    pub events: EventSeries,
    pub segments: SegmentSeries,
    pub slots: SlotSeries,
}

impl Recorder {
    /// Rows buffered since the last drain, over every table.
    pub fn rows(&self) -> usize {
        self.tables().iter().map(|t| t.1).sum()
    }

    /// The largest table buffered since the last drain and its rows (for saying what grew).
    pub fn largest(&self) -> (&'static str, usize) {
        self.tables()
            .into_iter()
            .max_by_key(|t| t.1)
            .expect("tables")
    }

    fn tables(&self) -> [(&'static str, usize); 7] {
        [
            ("flows", self.flows.rows()),
            ("intervals", self.intervals.rows()),
            ("rtt", self.rtt.rows()),
            ("links", self.links.rows()),
            ("events", self.events.rows()),
            ("segments", self.segments.rows()),
            ("slots", self.slots.rows()),
        ]
    }

    /// Bytes the buffers hold (allocated, so up to twice the rows' size while they grow).
    pub fn held_bytes(&self) -> usize {
        self.flows.held_bytes()
            + self.intervals.held_bytes()
            + self.rtt.held_bytes()
            + self.links.held_bytes()
            + self.events.held_bytes()
            + self.segments.held_bytes()
            + self.slots.held_bytes()
    }

    /// Hands over everything buffered so far as named tables, and empties the buffers.
    pub fn drain(&mut self) -> Vec<(&'static str, Table)> {
        let mut tables = vec![
            ("flows", self.flows.take()),
            ("intervals", self.intervals.take()),
            ("rtt", self.rtt.take()),
            ("links", self.links.take()),
            ("events", self.events.take()),
        ];
        if self.event_log {
            tables.push(("segments", self.segments.take()));
            tables.push(("slots", self.slots.take()));
        }
        tables
    }

    /// The columns of every table both modes write, and their Arrow types ("uint64",
    /// "int64", "float64", "string"): the one definition the Python package reads.
    pub fn schema() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
        let mut all = Recorder {
            enabled: true,
            event_log: true,
            ..Default::default()
        };
        all.drain()
            .into_iter()
            .map(|(name, table)| {
                let columns = table
                    .columns
                    .iter()
                    .map(|(column, values)| (*column, values.arrow_type()))
                    .collect();
                (name, columns)
            })
            .collect()
    }

    /// Whether the event-by-event tables are being recorded.
    pub fn logs_events(&self) -> bool {
        self.enabled && self.event_log
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_names_every_table_and_gives_a_name_one_type() {
        let schema = Recorder::schema();
        let tables: Vec<&str> = schema.iter().map(|t| t.0).collect();
        assert_eq!(
            tables,
            [
                "flows",
                "intervals",
                "rtt",
                "links",
                "events",
                "segments",
                "slots"
            ]
        );
        let mut types = std::collections::BTreeMap::new();
        for (table, columns) in &schema {
            assert_eq!(columns[0], ("time_ns", "uint64"), "{table}");
            for &(column, ty) in columns {
                assert_eq!(*types.entry(column).or_insert(ty), ty, "{table}.{column}");
            }
        }
        let events = &schema[4].1;
        assert!(events.contains(&("live", "uint64")));
        assert!(events.contains(&("wall_time_ns", "uint64")));
    }
}
