//! The writer thread: pcap files and time series, fed by the datapath through a bounded
//! channel so that disk I/O never touches the timed path ([S0] section 4.1).

use airlink_link::{LinkEvent, LinkSample};
use airlink_net::metrics::{Column, Table};
use airlink_net::EventKind;
/// Which end a packet was seen at: the flow end whose TUN device (or side) it crossed.
pub use airlink_net::Side;
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
    /// A packet at a TUN device: `outgoing` = sent by the application (read by airlink).
    Packet {
        side: Side,
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
        side: Side,
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
        side: Side,
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

/// Time series collected by the writer until the controller drains them.
#[derive(Default)]
pub struct Series {
    l_time: Vec<u64>,
    l_link: Vec<&'static str>,
    l_qp: Vec<u64>,
    l_qb: Vec<u64>,
    l_snr: Vec<f64>,
    l_psnr: Vec<f64>,
    l_mod: Vec<i64>,
    l_sub: Vec<i64>,
    e_time: Vec<u64>,
    e_kind: Vec<&'static str>,
    e_link: Vec<&'static str>,
    e_flow: Vec<u64>,
    e_bytes: Vec<u64>,
    e_bits: Vec<u64>,
    e_live: Vec<u64>,
}

/// Rows the series hold at most until drained (72 bytes a row: 19 MB, 38 MB as their vectors
/// grow; over half a second of what the writer takes at full speed, and a drain comes every
/// 0.5 s). A drop storm logs a row per packet: rows beyond are counted as lost, not held.
pub const MAX_SERIES_ROWS: usize = 1 << 18;

impl Series {
    fn rows(&self) -> usize {
        self.l_time.len() + self.e_time.len()
    }

    /// Hands over the buffered rows as the simulator's `links` and `events` tables.
    pub fn drain(&mut self) -> Vec<(&'static str, Table)> {
        use std::mem::take as t;
        let links = Table {
            columns: vec![
                ("time_ns", Column::U64(t(&mut self.l_time))),
                ("link", Column::Str(t(&mut self.l_link))),
                ("queue_packets", Column::U64(t(&mut self.l_qp))),
                ("queue_bytes", Column::U64(t(&mut self.l_qb))),
                ("snr_db", Column::F64(t(&mut self.l_snr))),
                ("predicted_snr_db", Column::F64(t(&mut self.l_psnr))),
                ("modulation_bits", Column::I64(t(&mut self.l_mod))),
                ("subband", Column::I64(t(&mut self.l_sub))),
            ],
        };
        let events = Table {
            columns: vec![
                ("time_ns", Column::U64(t(&mut self.e_time))),
                ("kind", Column::Str(t(&mut self.e_kind))),
                ("link", Column::Str(t(&mut self.e_link))),
                ("flow", Column::U64(t(&mut self.e_flow))),
                ("bytes", Column::U64(t(&mut self.e_bytes))),
                ("bit_errors", Column::U64(t(&mut self.e_bits))),
                ("live", Column::U64(t(&mut self.e_live))),
            ],
        };
        vec![("links", links), ("events", events)]
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
        self.e_time.push(time_ns);
        self.e_kind.push(kind.as_str());
        self.e_link.push(link);
        self.e_flow.push(flow as u64);
        self.e_bytes.push(bytes as u64);
        self.e_bits.push(bits as u64);
        self.e_live.push(live as u64);
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
        macro_rules! mv { ($($f:ident),*) => { $( if full { local.$f.clear() } else { s.$f.append(&mut local.$f) } )* } }
        mv!(
            l_time, l_link, l_qp, l_qb, l_snr, l_psnr, l_mod, l_sub, e_time, e_kind, e_link,
            e_flow, e_bytes, e_bits, e_live
        );
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
                side,
                mono_ns,
                orig_len,
                data,
                ..
            } => {
                let w = match side {
                    Side::Client => client.as_mut(),
                    Side::Server => server.as_mut(),
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
                local.l_time.push(time_ns);
                local.l_link.push(link);
                local.l_qp.push(sample.queue_packets as u64);
                local.l_qb.push(sample.queue_bytes);
                let r = sample.radio;
                local.l_snr.push(r.map_or(f64::NAN, |r| r.snr_db));
                local
                    .l_psnr
                    .push(r.map_or(f64::NAN, |r| r.predicted_snr_db));
                local.l_mod.push(r.map_or(-1, |r| r.modulation_bits as i64));
                local.l_sub.push(r.map_or(-1, |r| r.subband as i64));
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
            Record::Malformed { side, mono_ns, len } | Record::LimitDrop { side, mono_ns, len } => {
                let link = match side {
                    Side::Client => "client",
                    Side::Server => "server",
                };
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
}
