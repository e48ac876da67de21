//! A trace-driven link: the capacity is a recorded list of delivery opportunities, in the
//! format of Mahimahi's `mm-link` traces.
//!
//! A trace file has one integer per line: a millisecond timestamp at which the link may
//! deliver up to 1500 bytes (a repeated timestamp is several opportunities in the same
//! millisecond). Timestamps never decrease; the trace repeats with a period equal to its last
//! timestamp, so `0 ... T` covers `[0, T)` and then starts again at `T`.
//!
//! | aspect | model | note |
//! |---|---|---|
//! | opportunity | 1500 bytes at the instant `k·T + t_i` | Mahimahi uses 1504 (MTU plus a tunnel header) |
//! | packets across opportunities | a packet's bytes are served from consecutive opportunities; it leaves at the one serving its last byte; an opportunity's unused bytes serve the next packet | as Mahimahi's `LinkQueue` |
//! | idle link | unused opportunities are lost | as Mahimahi |
//! | arrival at an opportunity's instant | the packet may use it | |
//! | queue | drop-tail, counts packets waiting (not yet fully served) | |
//! | delay | fixed, plus a delay series (LeoReplayer's one-way delay per 10 ms, or `time value` rows) taken when the opportunity completes the packet | Mahimahi puts a fixed `mm-delay` in a separate shell; LeoReplayer varies it per 10 ms |
//! | delay falling faster than packets are spaced | the later packet waits behind the earlier (FIFO) unless `reorder` | a path keeps order; netem-style reordering on request |
//! | loss | a probability (constant or a series), drawn when the packet is served: it used its capacity | Mahimahi's `mm-loss` drops before the link |
//! | random start | a whole-ms offset uniform over the capacity trace's period, the same for the delay and loss series | off by default, so runs are the same for every seed |
//! | LeoReplayer capacity | the same timestamps, each line carrying a configurable number of bytes | |
//!
//! Series files and the CSV form are described in `trace_series`.
//!
//! With a queue discipline ([`TraceLink::with_queue`], the scenario's `aqm`), packets wait in
//! the discipline's queue and the link takes the next one when the one it serves is complete:
//! the discipline's limit counts the waiting packets, not the one in service.

use crate::queue::{QueueDisc, QueueStats};
use crate::trace_series::Series;
use crate::{DropReason, Link, LinkEvent, LinkSample, LinkStats, Packet, QueueLimit};
use airlink_engine::{Duration, Instant, RngStream};
use std::collections::VecDeque;
use std::fmt;

/// The largest trace file read: 64 MiB (about 8 million opportunities).
pub const MAX_TRACE_BYTES: u64 = 64 << 20;
/// The largest timestamp: 30 days, the longest run.
pub const MAX_TIMESTAMP_MS: u64 = 30 * 86_400_000;

/// Bytes one delivery opportunity can carry.
pub const OPPORTUNITY_BYTES: u32 = 1500;

/// A parsed trace: opportunity offsets within one period, and the period.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// The file's timestamps in milliseconds (non-decreasing, the last one is the period).
    /// Repetition `k` has its opportunities at `k·period + offsets_ms[i]`, as in Mahimahi
    /// (so a trace starting at 0 has two opportunities at each period boundary).
    offsets_ms: Vec<u64>,
    period_ms: u64,
    /// Bytes each opportunity carries: [`OPPORTUNITY_BYTES`] in Mahimahi's traces, the
    /// per-line rate of LeoReplayer's.
    opportunity_bytes: u32,
}

/// Why a trace was refused: the file and line, what was found and what was expected.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceError {
    pub source: String,
    /// 1-based line, when the problem has one.
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}", self.source, self.message),
            None => write!(f, "{}: {}", self.source, self.message),
        }
    }
}

impl std::error::Error for TraceError {}

impl Trace {
    /// Parses the text of a Mahimahi trace; `source` names it in errors.
    ///
    /// Refused: a line that is not a non-negative integer (including a last line cut off
    /// in the middle of a number, e.g. `12a`), a timestamp smaller than the one before, an
    /// empty trace, a trace whose last timestamp is 0 (no period). Blank lines are refused
    /// too except at the very end: Mahimahi itself refuses them.
    pub fn parse(text: &str, source: &str) -> Result<Trace, TraceError> {
        let err = |line: Option<usize>, message: String| TraceError {
            source: source.into(),
            line,
            message,
        };
        let mut stamps = Vec::new();
        let body = text.trim_end_matches(['\n', '\r', ' ', '\t']);
        if body.is_empty() {
            return Err(err(
                None,
                "empty trace: expected one integer millisecond timestamp per line".into(),
            ));
        }
        for (i, raw) in body.lines().enumerate() {
            let line = raw.trim();
            let n = i + 1;
            // The line itself is never shown: a path may name a file that is no trace at all.
            let t: u64 = line.parse().ok().filter(|t| *t <= MAX_TIMESTAMP_MS).ok_or_else(|| {
                let found = match line.chars().position(|c| !c.is_ascii_digit()) {
                    _ if n == 1 => "this is not a Mahimahi trace: its first line is not".to_owned(),
                    Some(col) => format!("column {}: not a digit; expected", col + 1),
                    None if line.is_empty() => "an empty line; expected".to_owned(),
                    None => format!("a number above {MAX_TIMESTAMP_MS}; expected"),
                };
                err(Some(n), format!("{found} a non-negative integer number of milliseconds (at most {MAX_TIMESTAMP_MS})"))
            })?;
            if let Some(&prev) = stamps.last() {
                if t < prev {
                    // Neither number is shown: a trace's lines are its content.
                    return Err(err(Some(n), "its timestamp is before the previous one: expected non-decreasing timestamps".into()));
                }
            }
            stamps.push(t);
        }
        let period_ms = *stamps.last().expect("non-empty");
        if period_ms == 0 {
            return Err(err(Some(stamps.len()), "the last timestamp is 0: expected a positive last timestamp (it is the trace's period)".into()));
        }
        Ok(Trace {
            offsets_ms: stamps,
            period_ms,
            opportunity_bytes: OPPORTUNITY_BYTES,
        })
    }

    /// A trace from opportunity offsets within a period (non-decreasing, at most the period,
    /// at least one; the period positive).
    pub(crate) fn from_offsets(
        offsets_ms: Vec<u64>,
        period_ms: u64,
        opportunity_bytes: u32,
    ) -> Trace {
        debug_assert!(!offsets_ms.is_empty() && period_ms > 0);
        Trace {
            offsets_ms,
            period_ms,
            opportunity_bytes,
        }
    }

    /// The same trace with `bytes` per opportunity (LeoReplayer's traces give a line a rate
    /// of their own choosing instead of Mahimahi's 1500 bytes per ms).
    pub fn with_opportunity_bytes(mut self, bytes: u32) -> Trace {
        self.opportunity_bytes = bytes.max(1);
        self
    }

    pub fn opportunity_bytes(&self) -> u32 {
        self.opportunity_bytes
    }

    /// Reads and parses a trace file; see [`read_trace_text`].
    pub fn from_file(path: &std::path::Path) -> Result<Trace, TraceError> {
        let text = read_trace_text(path)?;
        Trace::parse(&text, &path.display().to_string())
    }

    pub fn period(&self) -> Duration {
        Duration::from_millis(self.period_ms)
    }

    /// Opportunities per period.
    pub fn opportunities(&self) -> usize {
        self.offsets_ms.len()
    }

    /// Mean capacity in bit/s.
    pub fn mean_rate_bps(&self) -> f64 {
        self.offsets_ms.len() as f64 * self.opportunity_bytes as f64 * 8.0
            / (self.period_ms as f64 * 1e-3)
    }

    /// The instant of opportunity number `n` (counting from the start of the run).
    fn instant(&self, n: u64) -> Instant {
        let per = self.offsets_ms.len() as u64;
        let ms = (n / per) * self.period_ms + self.offsets_ms[(n % per) as usize];
        Instant::from_millis(ms)
    }

    /// The number of the first opportunity at or after `t`.
    fn first_at_or_after(&self, t: Instant) -> u64 {
        let per = self.offsets_ms.len() as u64;
        let period_ns = self.period_ms * 1_000_000;
        let k = t.as_nanos() / period_ns;
        let within = t.as_nanos() - k * period_ns;
        let i = self.offsets_ms.partition_point(|&o| o * 1_000_000 < within) as u64;
        k * per + i
    }
}

/// Reads a trace file's text: a regular file (not a FIFO or a device, which could block or
/// never end) of at most [`MAX_TRACE_BYTES`], in UTF-8.
pub fn read_trace_text(path: &std::path::Path) -> Result<String, TraceError> {
    use std::io::Read;
    let source = path.display().to_string();
    let err = |message: String| TraceError {
        source: source.clone(),
        line: None,
        message,
    };
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        // Opening a FIFO for reading blocks until a writer appears; without waiting, the
        // type check below refuses it.
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options
        .open(path)
        .map_err(|e| err(format!("cannot read the trace: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| err(format!("cannot read the trace: {e}")))?;
    if !meta.is_file() {
        return Err(err("not a regular file: expected a trace file".into()));
    }
    if meta.len() > MAX_TRACE_BYTES {
        return Err(err(format!(
            "{} bytes: expected a trace of at most {MAX_TRACE_BYTES} bytes",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_TRACE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| err(format!("cannot read the trace: {e}")))?;
    if bytes.len() as u64 > MAX_TRACE_BYTES {
        return Err(err(format!(
            "expected a trace of at most {MAX_TRACE_BYTES} bytes"
        )));
    }
    let text =
        String::from_utf8(bytes).map_err(|_| err("this is not a trace: it is not text".into()))?;
    Ok(text)
}

/// Parameters of a [`TraceLink`].
#[derive(Clone, Debug, PartialEq)]
pub struct TraceParams {
    /// Fixed one-way delay after the opportunity that completes a packet.
    pub delay: Duration,
    pub queue_limit: QueueLimit,
    /// One-way delay over time in ms, added to `delay` (taken at the packet's departure from
    /// the queue).
    pub delay_ms: Option<Series>,
    /// Probability that a packet served by the link is lost (after using its capacity), or a
    /// series of it; the series wins.
    pub loss: f64,
    pub loss_series: Option<Series>,
    /// Start at a random offset (whole ms, uniform over the capacity trace's period) into the
    /// traces, drawn from the link's stream; `false` starts every run at the traces' start.
    pub random_start: bool,
    /// Let a packet overtake an earlier one when the delay drops by more than their spacing;
    /// `false` (default) holds it behind the earlier one, as a FIFO path does.
    pub reorder: bool,
}

impl Default for TraceParams {
    fn default() -> Self {
        TraceParams {
            delay: Duration::ZERO,
            queue_limit: QueueLimit::Packets(1000),
            delay_ms: None,
            loss: 0.0,
            loss_series: None,
            random_start: false,
            reorder: false,
        }
    }
}

/// A link whose capacity follows a [`Trace`]; see the module documentation.
pub struct TraceLink<P> {
    trace: Trace,
    params: TraceParams,
    /// The offset into the traces: trace time = run time + offset.
    offset: Duration,
    rng: RngStream,
    /// Waiting packets and the bytes of the head packet still to serve.
    queue: VecDeque<P>,
    queue_bytes: u64,
    head_left: u32,
    /// The next opportunity that has not been used or skipped.
    next_opp: u64,
    /// Due instant of the last packet out, so that a falling delay does not reorder.
    last_out: Instant,
    outbox: VecDeque<(Instant, P)>,
    events: VecDeque<LinkEvent>,
    stats: LinkStats,
    /// The queue discipline, when the link has one: `queue` then holds only the packet in service.
    qdisc: Option<QueueDisc<P>>,
}

impl<P: Packet> TraceLink<P> {
    /// A trace link drawing its start offset and losses from `rng` (it draws nothing when
    /// neither is asked for, so its runs are then the same for every seed).
    pub fn new(trace: Trace, params: TraceParams, mut rng: RngStream) -> Self {
        let offset = if params.random_start {
            Duration::from_millis(rng.below(trace.period_ms))
        } else {
            Duration::ZERO
        };
        TraceLink {
            trace,
            params,
            offset,
            rng,
            queue: VecDeque::new(),
            queue_bytes: 0,
            head_left: 0,
            next_opp: 0,
            last_out: Instant::ZERO,
            outbox: VecDeque::new(),
            events: VecDeque::new(),
            stats: LinkStats::default(),
            qdisc: None,
        }
    }

    /// Puts a queue discipline in front of the link.
    pub fn with_queue(mut self, qdisc: QueueDisc<P>) -> Self {
        self.qdisc = Some(qdisc);
        self
    }

    /// With a discipline and nothing in service: takes the next packet from it at `at`.
    fn take_next(&mut self, at: Instant) {
        let Some(q) = self.qdisc.as_mut() else {
            return;
        };
        if !self.queue.is_empty() {
            return;
        }
        let next = q.dequeue(at);
        q.report_drops(at, &mut self.stats, &mut self.events);
        if let Some((pkt, _)) = next {
            self.head_left = pkt.wire_len().max(1);
            self.queue_bytes += pkt.wire_len() as u64;
            self.queue.push_back(pkt);
        }
    }

    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// The offset into the traces at which the run starts.
    pub fn start_offset(&self) -> Duration {
        self.offset
    }

    /// The run instant of opportunity `n` of the trace clock.
    fn opportunity_at(&self, n: u64) -> Instant {
        Instant::from_nanos(self.trace.instant(n).as_nanos() - self.offset.as_nanos())
    }

    /// Serves the queue from one opportunity at `at`.
    fn use_opportunity(&mut self, at: Instant) {
        let mut budget = self.trace.opportunity_bytes;
        while budget > 0 {
            if self.queue.is_empty() {
                return;
            }
            let served = budget.min(self.head_left);
            budget -= served;
            self.head_left -= served;
            if self.head_left == 0 {
                let pkt = self.queue.pop_front().expect("non-empty");
                let len = pkt.wire_len();
                self.queue_bytes -= len as u64;
                self.depart(at, pkt);
                self.take_next(at);
                self.head_left = self.queue.front().map_or(0, |p| p.wire_len().max(1));
            }
        }
    }

    /// A packet served at `at`: lost, or out after the delay in force at `at`.
    fn depart(&mut self, at: Instant, pkt: P) {
        let trace_ns = at.as_nanos() + self.offset.as_nanos();
        let p = match &self.params.loss_series {
            Some(s) => s.at(trace_ns),
            None => self.params.loss,
        };
        if p > 0.0 && self.rng.bernoulli(p) {
            self.stats.record_drop(
                &mut self.events,
                at,
                pkt.flow(),
                pkt.wire_len(),
                DropReason::Loss,
            );
            return;
        }
        let extra = self.params.delay_ms.as_ref().map_or(Duration::ZERO, |s| {
            Duration::from_nanos((s.at(trace_ns) * 1e6).round() as u64)
        });
        let mut due = at + self.params.delay + extra;
        if !self.params.reorder {
            due = due.max(self.last_out);
        }
        self.last_out = self.last_out.max(due);
        self.stats.packets_out += 1;
        self.stats.bytes_out += pkt.wire_len() as u64;
        // Keep the outbox in order of due instants (only `reorder` can make one earlier).
        let i = self.outbox.partition_point(|(t, _)| *t <= due);
        self.outbox.insert(i, (due, pkt));
    }
}

impl<P: Packet> Link<P> for TraceLink<P> {
    fn enqueue(&mut self, now: Instant, pkt: P) {
        self.stats.packets_in += 1;
        if let Some(q) = self.qdisc.as_mut() {
            q.enqueue(now, pkt);
            q.report_drops(now, &mut self.stats, &mut self.events);
            if self.queue.is_empty() {
                // Opportunities that passed while the link was idle are lost.
                let trace_now = Instant::from_nanos(now.as_nanos() + self.offset.as_nanos());
                self.next_opp = self.next_opp.max(self.trace.first_at_or_after(trace_now));
                self.take_next(now);
            }
            return;
        }
        let len = pkt.wire_len();
        let full = self
            .params
            .queue_limit
            .is_full(self.queue.len(), self.queue_bytes, len as u64);
        if full {
            self.stats
                .record_drop(&mut self.events, now, pkt.flow(), len, DropReason::Queue);
            return;
        }
        if self.queue.is_empty() {
            // Opportunities that passed while the link was idle are lost.
            let trace_now = Instant::from_nanos(now.as_nanos() + self.offset.as_nanos());
            self.next_opp = self.next_opp.max(self.trace.first_at_or_after(trace_now));
            self.head_left = len.max(1);
        }
        self.queue_bytes += len as u64;
        self.queue.push_back(pkt);
    }

    fn poll_at(&self) -> Option<Instant> {
        (!self.queue.is_empty()).then(|| self.opportunity_at(self.next_opp))
    }

    fn handle_timeout(&mut self, now: Instant) {
        while !self.queue.is_empty() {
            let at = self.opportunity_at(self.next_opp);
            if at > now {
                break;
            }
            self.next_opp += 1;
            self.use_opportunity(at);
        }
    }

    fn poll_output(&mut self) -> Option<(Instant, P)> {
        self.outbox.pop_front()
    }

    fn poll_event(&mut self) -> Option<LinkEvent> {
        self.events.pop_front()
    }

    fn stats(&self) -> &LinkStats {
        &self.stats
    }

    fn queue_stats(&self) -> Option<&QueueStats> {
        self.qdisc.as_ref().map(|q| q.stats())
    }

    fn sample(&mut self, _now: Instant) -> LinkSample {
        let (p, b) = self
            .qdisc
            .as_ref()
            .map_or((0, 0), |q| (q.packets(), q.bytes()));
        LinkSample {
            queue_packets: self.queue.len() as u32 + p,
            queue_bytes: self.queue_bytes + b,
            radio: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestPacket;

    fn link(trace: Trace, params: TraceParams) -> TraceLink<TestPacket> {
        TraceLink::new(trace, params, RngStream::derive(1, "trace"))
    }

    fn run(link: &mut TraceLink<TestPacket>, until: Instant) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        while let Some(t) = link.poll_at() {
            if t > until {
                break;
            }
            link.handle_timeout(t);
            while let Some((at, p)) = link.poll_output() {
                out.push((at.as_nanos() / 1_000_000, p.id));
            }
        }
        out
    }

    #[test]
    fn parses_and_loops_with_the_last_timestamp_as_period() {
        let t = Trace::parse("1\n1\n3\n5\n", "t").unwrap();
        assert_eq!(t.period(), Duration::from_millis(5));
        assert_eq!(t.opportunities(), 4);
        let at: Vec<u64> = (0..8)
            .map(|n| t.instant(n).as_nanos() / 1_000_000)
            .collect();
        assert_eq!(at, [1, 1, 3, 5, 6, 6, 8, 10]);
        assert_eq!(t.first_at_or_after(Instant::from_micros(1500)), 2);
        assert_eq!(t.first_at_or_after(Instant::from_millis(6)), 4);
        assert_eq!(t.first_at_or_after(Instant::ZERO), 0);
        // 4 opportunities of 1500 B per 5 ms = 9.6 Mbit/s.
        assert!((t.mean_rate_bps() - 9.6e6).abs() < 1.0);
    }

    #[test]
    fn refuses_bad_traces_with_the_line_and_what_was_expected() {
        let e = Trace::parse("1\n2\nx3\n4\n", "a.trace").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(
            e.to_string()
                .starts_with("a.trace:3: column 1: not a digit; expected a non-negative integer"),
            "{e}"
        );
        // Not a trace at all: nothing of the file is shown.
        let e = Trace::parse("root:$6$secret:19000:0:99999:7:::\n", "/etc/shadow").unwrap_err();
        assert!(
            !e.to_string().contains("secret") && !e.to_string().contains("root"),
            "{e}"
        );
        assert!(e.message.contains("not a Mahimahi trace"), "{e}");
        assert!(Trace::parse("1\n99999999999999\n", "big")
            .unwrap_err()
            .message
            .contains("at most"));
        // A file cut in the middle of a line.
        let e = Trace::parse("10\n20\n3", "cut.trace").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(
            e.message.contains("before the previous one") && !e.message.contains("20"),
            "{e}"
        );
        let e = Trace::parse("10\n20\n2x", "cut.trace").unwrap_err();
        assert_eq!(
            (
                e.line,
                e.message.contains("expected a non-negative integer")
            ),
            (Some(3), true)
        );
        assert!(Trace::parse("", "e")
            .unwrap_err()
            .message
            .contains("empty trace"));
        assert!(Trace::parse("0\n0\n", "z")
            .unwrap_err()
            .message
            .contains("positive last timestamp"));
        assert!(Trace::parse("1\n\n2\n", "blank").unwrap_err().line == Some(2));
        assert!(Trace::parse("-1\n2\n", "neg").is_err());
        // Trailing newlines are fine.
        assert!(Trace::parse("1\n2\n\n\n", "ok").is_ok());
    }

    #[test]
    fn only_regular_files_of_bounded_size_are_read() {
        use std::path::Path;
        let e = Trace::from_file(Path::new("/dev/zero")).unwrap_err();
        assert!(e.message.contains("not a regular file"), "{e}");
        let dir = std::env::temp_dir().join(format!("airlink-trace-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A FIFO without a writer: refused at once instead of blocking.
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(Trace::from_file(&fifo)
            .unwrap_err()
            .message
            .contains("not a regular file"));
        let big = dir.join("big.trace");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(MAX_TRACE_BYTES + 1)
            .unwrap();
        assert!(Trace::from_file(&big)
            .unwrap_err()
            .message
            .contains("at most"));
        let binary = dir.join("binary.trace");
        std::fs::write(&binary, [0xff, 0xfe, b'\n']).unwrap();
        assert!(Trace::from_file(&binary)
            .unwrap_err()
            .message
            .contains("not text"));
        let good = dir.join("good.trace");
        std::fs::write(&good, "1\n2\n").unwrap();
        assert_eq!(Trace::from_file(&good).unwrap().opportunities(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn one_packet_per_opportunity_and_lost_opportunities_when_idle() {
        let trace = Trace::parse("1\n2\n3\n4\n", "t").unwrap();
        let mut l = link(
            trace,
            TraceParams {
                delay: Duration::from_millis(10),
                ..Default::default()
            },
        );
        for i in 0..3 {
            l.enqueue(Instant::ZERO, TestPacket::new(i, 1500));
        }
        // Opportunities at 1, 2, 3; then +10 ms delay.
        assert_eq!(
            run(&mut l, Instant::from_millis(100)),
            [(11, 0), (12, 1), (13, 2)]
        );
        // Idle until 9.5 ms: the opportunities at 4 ... 9 are lost; next is 10.
        l.enqueue(Instant::from_micros(9500), TestPacket::new(7, 100));
        assert_eq!(run(&mut l, Instant::from_millis(100)), [(20, 7)]);
    }

    #[test]
    fn small_packets_share_an_opportunity_and_big_ones_span_several() {
        let trace = Trace::parse("1\n2\n3\n4\n5\n6\n", "t").unwrap();
        let mut l = link(trace, TraceParams::default());
        l.enqueue(Instant::from_micros(500), TestPacket::new(0, 500));
        l.enqueue(Instant::from_micros(500), TestPacket::new(1, 500));
        l.enqueue(Instant::from_micros(500), TestPacket::new(2, 1000)); // 500 B at 1 ms, 500 at 2 ms
        l.enqueue(Instant::from_micros(500), TestPacket::new(3, 4000)); // 1000 at 2, 1500 at 3, 1500 at 4
        assert_eq!(
            run(&mut l, Instant::from_millis(100)),
            [(1, 0), (1, 1), (2, 2), (4, 3)]
        );
        assert_eq!(l.stats().packets_out, 4);
        assert_eq!(l.stats().bytes_out, 6000);
    }

    #[test]
    fn the_long_run_rate_is_the_trace_rate_and_the_queue_is_drop_tail() {
        let trace = Trace::parse("0\n3\n3\n7\n10\n", "t").unwrap(); // 5 per 10 ms
        let rate = trace.mean_rate_bps();
        let mut l = link(
            trace,
            TraceParams {
                queue_limit: QueueLimit::Packets(5),
                ..Default::default()
            },
        );
        for i in 0..10 {
            l.enqueue(Instant::ZERO, TestPacket::new(i, 1500));
        }
        assert_eq!(l.stats().queue_drops, 5);
        assert!(matches!(
            l.poll_event(),
            Some(LinkEvent::Drop {
                reason: DropReason::Queue,
                ..
            })
        ));
        run(&mut l, Instant::from_secs_f64(1.0));
        // Keep it saturated for 10 s and compare the delivered bytes with the trace's rate.
        let big = TraceParams {
            queue_limit: QueueLimit::Packets(100_000),
            ..Default::default()
        };
        let mut l = link(Trace::parse("0\n3\n3\n7\n10\n", "t").unwrap(), big);
        let mut last = 0;
        for i in 0..10_000u32 {
            l.enqueue(Instant::ZERO, TestPacket::new(i, 1500));
        }
        for (at, _) in run(&mut l, Instant::from_secs_f64(10.0)) {
            last = last.max(at);
        }
        let achieved = l.stats().bytes_out as f64 * 8.0 / 10.0;
        assert!(
            (achieved / rate - 1.0).abs() < 0.002,
            "{achieved} vs {rate}, last {last}"
        );
    }

    fn series(text: &str) -> Series {
        Series::parse(
            text,
            "s",
            crate::SeriesKind::DelayMs,
            Duration::from_millis(10),
        )
        .unwrap()
    }

    /// One 100-B packet per ms (an opportunity each ms serves it at once), delivered through a
    /// delay series; returns (sent ms, due ms) pairs.
    fn through(params: TraceParams, packets: u32) -> Vec<(u64, f64)> {
        let trace = Trace::parse("1\n", "t").unwrap();
        let mut l = link(trace, params);
        let mut out = Vec::new();
        for i in 0..packets {
            let now = Instant::from_millis(i as u64);
            l.enqueue(now, TestPacket::new(i, 100));
            let at = l.poll_at().expect("a packet waits");
            l.handle_timeout(at);
            while let Some((at, p)) = l.poll_output() {
                out.push((p.id as u64, at.as_nanos() as f64 / 1e6));
            }
        }
        out
    }

    #[test]
    fn a_delay_series_steps_the_delay_and_never_reorders_unless_asked() {
        // 80 ms for the first 10 ms, then 20 ms: a drop of 60 ms.
        let params = TraceParams {
            delay_ms: Some(series("0 80\n11 20\n22 20\n")),
            ..Default::default()
        };
        let out = through(params.clone(), 20);
        // Packet i is served at i + 1 ms.
        assert_eq!(out[0], (0, 81.0));
        assert_eq!(out[9], (9, 90.0));
        // Packets 10 ... 19 would be due at 31 ... 40 ms: held behind packet 9 (90 ms).
        assert!(out[10..].iter().all(|&(_, t)| t == 90.0), "{out:?}");
        assert!(out.windows(2).all(|w| w[0].1 <= w[1].1));
        let out = through(
            TraceParams {
                reorder: true,
                ..params
            },
            20,
        );
        assert_eq!(out.len(), 20);
        let due: std::collections::BTreeMap<u64, f64> = out.into_iter().collect();
        assert_eq!((due[&9], due[&10], due[&19]), (90.0, 31.0, 40.0));
    }

    #[test]
    fn the_delay_series_adds_to_the_fixed_delay() {
        let params = TraceParams {
            delay: Duration::from_millis(5),
            delay_ms: Some(series("20\n")),
            ..Default::default()
        };
        assert_eq!(through(params, 1), [(0, 26.0)]);
    }

    #[test]
    fn loss_drops_its_share_after_the_capacity_is_used() {
        let params = TraceParams {
            loss: 0.2,
            queue_limit: QueueLimit::Packets(100_000),
            ..Default::default()
        };
        let n = 50_000;
        let out = through(params, n);
        let lost = n as f64 - out.len() as f64;
        // Binomial: sd = sqrt(n·0.2·0.8) ≈ 89 packets; 5 sd.
        assert!((lost - 0.2 * n as f64).abs() < 450.0, "lost {lost}");
        // A loss series wins over the constant: none lost in the first 10 ms, all after.
        let params = TraceParams {
            loss: 0.2,
            loss_series: Some(
                Series::parse(
                    "0 0\n11 1\n",
                    "l",
                    crate::SeriesKind::Loss,
                    Duration::from_millis(10),
                )
                .unwrap(),
            ),
            ..Default::default()
        };
        let ids: Vec<u64> = through(params, 20).into_iter().map(|(i, _)| i).collect();
        assert_eq!(ids, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn random_start_shifts_every_trace_by_one_seeded_offset() {
        let make = |seed, random_start| {
            let trace = Trace::parse("1000\n", "t").unwrap();
            let params = TraceParams {
                delay_ms: Some(series("0 10\n500 90\n")),
                random_start,
                ..Default::default()
            };
            TraceLink::<TestPacket>::new(trace, params, RngStream::derive(seed, "trace"))
        };
        let offsets: Vec<u64> = (0..20)
            .map(|s| make(s, true).start_offset().as_nanos() / 1_000_000)
            .collect();
        assert!(offsets.iter().all(|&o| o < 1000));
        let distinct: std::collections::BTreeSet<_> = offsets.iter().collect();
        assert!(distinct.len() > 15, "{offsets:?}");
        assert!((0..20).all(|s| make(s, false).start_offset() == Duration::ZERO));
        // The first opportunity of the shifted trace is at 1000 − offset ms, and the delay
        // then is the series' value at 1000 ms of trace time (its start again: 10 ms).
        let mut l = make(3, true);
        let off = l.start_offset().as_nanos() / 1_000_000;
        l.enqueue(Instant::ZERO, TestPacket::new(0, 100));
        let at = l.poll_at().unwrap();
        assert_eq!(at, Instant::from_millis(1000 - off));
        l.handle_timeout(at);
        assert_eq!(
            l.poll_output().unwrap().0,
            Instant::from_millis(1000 - off + 10)
        );
    }

    #[test]
    fn leoreplayer_lines_carry_their_configured_bytes() {
        let trace = Trace::parse("1\n", "t")
            .unwrap()
            .with_opportunity_bytes(3000);
        assert!((trace.mean_rate_bps() - 24e6).abs() < 1.0);
        let mut l = link(trace, TraceParams::default());
        for i in 0..4 {
            l.enqueue(Instant::ZERO, TestPacket::new(i, 1500));
        }
        assert_eq!(
            run(&mut l, Instant::from_millis(10)),
            [(1, 0), (1, 1), (2, 2), (2, 3)]
        );
    }

    /// Behind a queue discipline that never drops, the link serves exactly as with its own queue.
    #[test]
    fn a_discipline_that_keeps_everything_serves_as_the_links_own_queue() {
        use crate::queue::{AqmConfig, QueueDisc};
        let trace = || Trace::parse("0\n3\n3\n7\n10\n", "t").unwrap();
        let q = QueueDisc::new(
            &AqmConfig::DropTail,
            QueueLimit::Packets(100_000),
            None,
            airlink_engine::RngStream::derive(1, "q"),
        );
        let mut own = TraceLink::new(
            trace(),
            TraceParams::default(),
            airlink_engine::RngStream::derive(1, "link"),
        );
        let mut queued = TraceLink::new(
            trace(),
            TraceParams::default(),
            airlink_engine::RngStream::derive(1, "link"),
        )
        .with_queue(q);
        let mut outs = [Vec::new(), Vec::new()];
        for (k, l) in [&mut own, &mut queued].into_iter().enumerate() {
            for i in 0..400u32 {
                let at = Instant::from_micros((i as u64 * 7919) % 1_000 + i as u64 * 2_000);
                while let Some(t) = l.poll_at().filter(|&t| t <= at) {
                    l.handle_timeout(t);
                }
                l.enqueue(at, TestPacket::new(i, 40 + (i * 37) % 1460));
            }
            outs[k] = run(l, Instant::from_secs_f64(100.0));
        }
        assert_eq!(outs[0].len(), 400);
        assert_eq!(outs[0], outs[1]);
    }
}
