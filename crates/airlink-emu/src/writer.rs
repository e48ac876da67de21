//! The writer thread: pcap files and time series, fed by the datapath through a bounded
//! channel so that disk I/O never touches the timed path ([S0] section 4.1).

use crate::port::Facing;
use airlink_link::{LinkEvent, LinkSample};
use airlink_net::metrics::{EventSeries, LinkSeries, Table};
use airlink_net::EventKind;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};

/// What the datapath hands to the writer.
pub enum Record {
    /// A packet at a port: `outgoing` = sent by the host behind it (read by airlink).
    Packet {
        port: Facing,
        outgoing: bool,
        mono_ns: u64,
        orig_len: u32,
        data: Vec<u8>,
    },
    Sample {
        time_ns: u64,
        link: &'static str,
        sample: LinkSample,
    },
    Event {
        event: LinkEvent,
        link: &'static str,
    },
    Malformed {
        port: Facing,
        mono_ns: u64,
        len: u32,
    },
    /// A timed change, or a packet an outage lost (kinds as in simulation); `live`: a change
    /// made through the control socket.
    NetEvent {
        time_ns: u64,
        kind: EventKind,
        link: &'static str,
        flow: u32,
        bytes: u32,
        live: bool,
    },
    /// A packet dropped on arrival: its direction's links held their byte bound already.
    LimitDrop {
        port: Facing,
        mono_ns: u64,
        len: u32,
    },
}

impl Record {
    /// Bytes the record holds beyond its fixed size (what the channel's byte bound counts).
    pub fn bytes(&self) -> u64 {
        match self {
            Record::Packet { data, .. } => data.len() as u64,
            _ => 0,
        }
    }
}

/// Time series collected by the writer until the controller drains them: the `links` and
/// `events` tables, as the simulator's recorder defines them.
#[derive(Default)]
pub struct Series {
    links: LinkSeries,
    events: EventSeries,
}

/// Rows the series hold at most until drained (72 bytes a row: 19 MB, 38 MB as their vectors
/// grow; over half a second of what the writer takes at full speed, and a drain comes every
/// 0.5 s). A drop storm logs a row per packet: rows beyond are counted as lost, not held.
pub const MAX_SERIES_ROWS: usize = 1 << 18;

impl Series {
    fn rows(&self) -> usize {
        self.links.rows() + self.events.rows()
    }

    /// Hands over the buffered rows as the simulator's `links` and `events` tables.
    pub fn drain(&mut self) -> Vec<(&'static str, Table)> {
        vec![("links", self.links.take()), ("events", self.events.take())]
    }

    #[allow(clippy::too_many_arguments)] // one per column
    fn event(
        &mut self,
        time_ns: u64,
        kind: EventKind,
        link: &'static str,
        flow: u32,
        bytes: u32,
        bits: u32,
        live: bool,
    ) {
        let at = airlink_engine::Instant::from_nanos(time_ns);
        self.events
            .push_row(at, kind, link, flow, bytes, bits, live);
    }
}

pub(crate) type Pcap = PcapWriter<BufWriter<File>>;

/// Opens a pcap file of raw IP packets with nanosecond timestamps.
pub fn open_pcap(path: &Path, snaplen: u32) -> Result<Pcap, String> {
    let file = File::create(path)
        .map_err(|e| format!("cannot write the pcap file {}: {e}", path.display()))?;
    let header = PcapHeader {
        snaplen: snaplen.max(1),
        datalink: DataLink::RAW,
        ts_resolution: TsResolution::NanoSecond,
        endianness: Endianness::native(),
        ..Default::default()
    };
    PcapWriter::with_header(BufWriter::with_capacity(1 << 20, file), header)
        .map_err(|e| format!("cannot write the pcap file {}: {e}", path.display()))
}

/// The writer's final word: errors met while writing.
#[derive(Clone, Debug, Default)]
pub struct WriterReport {
    pub pcap_records: u64,
    /// Rows of the time series lost because they held [`MAX_SERIES_ROWS`] undrained already.
    pub rows_lost: u64,
    /// CPU time of the writer thread (s).
    pub cpu_s: f64,
    pub errors: Vec<String>,
}

/// The writer's pause between two looks at the channel while records flow (the channel holds
/// 65 536 records: 0.2 s at 300 k records/s).
const WRITER_NAP: std::time::Duration = std::time::Duration::from_millis(2);

/// Runs the writer until the channel closes. `origin_mono` maps monotonic time to the run's
/// time axis; `realtime_offset` (realtime - monotonic) dates the pcap records.
pub fn run(
    rx: Receiver<Record>,
    record_bytes: Arc<AtomicU64>,
    mut client: Option<Pcap>,
    mut server: Option<Pcap>,
    series: Arc<Mutex<Series>>,
    origin_mono: u64,
    realtime_offset: i128,
) -> WriterReport {
    let mut report = WriterReport::default();
    let mut local = Series::default();
    let mut flush_rows = 0usize;
    let push = |local: &mut Series, series: &Arc<Mutex<Series>>, lost: &mut u64| {
        let mut s = series.lock().unwrap_or_else(|p| p.into_inner());
        let full = s.rows() + local.rows() > MAX_SERIES_ROWS;
        if full {
            *lost += local.rows() as u64;
        }
        if full {
            *local = Series::default();
        } else {
            s.links.append(&mut local.links);
            s.events.append(&mut local.events);
        }
    };
    let cpu0 = crate::timing::thread_cpu_ns();
    // While records flow, take them in naps of WRITER_NAP instead of waiting for each one: a
    // parked receiver costs the datapath a futex wake-up per record (8 % of its time at
    // 100 k packets/s). When a nap found nothing, park until the next record.
    let mut flowing = false;
    loop {
        let next = if flowing {
            match rx.try_recv() {
                Ok(r) => Ok(r),
                Err(std::sync::mpsc::TryRecvError::Empty) => {
                    std::thread::sleep(WRITER_NAP);
                    rx.try_recv().map_err(|e| match e {
                        std::sync::mpsc::TryRecvError::Empty => {
                            std::sync::mpsc::RecvTimeoutError::Timeout
                        }
                        std::sync::mpsc::TryRecvError::Disconnected => {
                            std::sync::mpsc::RecvTimeoutError::Disconnected
                        }
                    })
                }
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
                }
            }
        } else {
            rx.recv_timeout(std::time::Duration::from_millis(200))
        };
        let r = match next {
            Ok(r) => {
                flowing = true;
                r
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                flowing = false;
                push(&mut local, &series, &mut report.rows_lost);
                flush_rows = 0;
                continue;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        };
        record_bytes.fetch_sub(r.bytes(), Ordering::Relaxed);
        match r {
            Record::Packet {
                port,
                mono_ns,
                orig_len,
                data,
                ..
            } => {
                let w = match port {
                    Facing::Client => client.as_mut(),
                    Facing::Server => server.as_mut(),
                };
                if let Some(w) = w {
                    let wall = (mono_ns as i128 + realtime_offset).max(0) as u64;
                    let ts = std::time::Duration::from_nanos(wall);
                    if let Err(e) = w.write_packet(&PcapPacket::new(ts, orig_len, &data)) {
                        if report.errors.len() < 10 {
                            report.errors.push(format!("pcap: {e}"));
                        }
                    } else {
                        report.pcap_records += 1;
                    }
                }
            }
            Record::Sample {
                time_ns,
                link,
                sample,
            } => {
                let at = airlink_engine::Instant::from_nanos(time_ns);
                local.links.push(at, link, &sample);
                flush_rows += 1;
            }
            Record::Event { event, link } => match event {
                LinkEvent::Drop {
                    at,
                    flow,
                    bytes,
                    reason,
                } => {
                    local.event(
                        at.as_nanos(),
                        EventKind::Drop(reason),
                        link,
                        flow,
                        bytes,
                        0,
                        false,
                    );
                    flush_rows += 1;
                }
                LinkEvent::ArqGaveUp {
                    at,
                    flow,
                    bit_errors,
                } => {
                    local.event(
                        at.as_nanos(),
                        EventKind::ArqGaveUp,
                        link,
                        flow,
                        0,
                        bit_errors,
                        false,
                    );
                    flush_rows += 1;
                }
                // The scenario's event log is the simulator's (`slots`, `segments`).
                LinkEvent::Served { .. } => {}
            },
            Record::NetEvent {
                time_ns,
                kind,
                link,
                flow,
                bytes,
                live,
            } => {
                local.event(time_ns, kind, link, flow, bytes, 0, live);
                flush_rows += 1;
            }
            Record::Malformed { port, mono_ns, len } | Record::LimitDrop { port, mono_ns, len } => {
                let link = port.as_str();
                let kind = if matches!(r, Record::Malformed { .. }) {
                    EventKind::Malformed
                } else {
                    EventKind::InFlightLimit
                };
                local.event(
                    mono_ns.saturating_sub(origin_mono),
                    kind,
                    link,
                    0,
                    len,
                    0,
                    false,
                );
                flush_rows += 1;
            }
        }
        if flush_rows >= 1024 {
            push(&mut local, &series, &mut report.rows_lost);
            flush_rows = 0;
        }
    }
    push(&mut local, &series, &mut report.rows_lost);
    for (name, w) in [("client", client), ("server", server)] {
        if let Some(w) = w {
            let mut inner = w.into_writer();
            if let Err(e) = std::io::Write::flush(&mut inner) {
                report.errors.push(format!("{name}.pcap: {e}"));
            }
        }
    }
    report.cpu_s = crate::timing::thread_cpu_ns().saturating_sub(cpu0) as f64 * 1e-9;
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undrained_rows_are_bounded_and_counted_as_lost() {
        let (tx, rx) = std::sync::mpsc::sync_channel(1 << 16);
        let series = Arc::new(Mutex::new(Series::default()));
        let writer = {
            let series = series.clone();
            std::thread::spawn(move || {
                run(rx, Arc::new(AtomicU64::new(0)), None, None, series, 0, 0)
            })
        };
        let sent = MAX_SERIES_ROWS + 10_000;
        for i in 0..sent {
            let r = Record::NetEvent {
                time_ns: i as u64,
                kind: EventKind::Outage,
                link: "downlink",
                flow: 0,
                bytes: 100,
                live: false,
            };
            tx.send(r).unwrap();
        }
        drop(tx);
        let report = writer.join().unwrap();
        let kept = series.lock().unwrap().rows();
        assert!(kept <= MAX_SERIES_ROWS, "{kept}");
        assert_eq!(kept as u64 + report.rows_lost, sent as u64);
    }

    #[test]
    fn emulation_writes_the_links_and_events_tables_of_simulation() {
        let mut sim = airlink_net::metrics::Recorder {
            enabled: true,
            ..Default::default()
        };
        let sim: Vec<_> = sim
            .drain()
            .into_iter()
            .filter(|(name, _)| matches!(*name, "links" | "events"))
            .collect();
        let columns = |tables: &[(&'static str, Table)]| -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
            tables
                .iter()
                .map(|(name, t)| {
                    let cols = t.columns.iter().map(|(c, v)| (*c, v.arrow_type())).collect();
                    (*name, cols)
                })
                .collect()
        };
        let emu = Series::default().drain();
        assert_eq!(columns(&emu), columns(&sim));
        let events = &columns(&emu)[1].1;
        assert!(
            events.contains(&("live", "uint64")) && events.contains(&("wall_time_ns", "uint64"))
        );
    }
}
