//! UDP media streams with iperf 2 accounting.
//!
//! - [`MediaSource`]: an application that offers datagrams on an exact schedule (CBR, or VBR
//!   from a looping list of frame sizes), between a start and a stop time, optionally capped by
//!   a sender rate limit (a handheld's CPU). Shared by [`UdpSender`] and the DCCP endpoint.
//! - [`UdpSender`]: a source that stamps each datagram with an id and its send time, as iperf
//!   writes them into the payload.
//! - [`IperfReceiver`] (alias [`UdpReceiver`]): iperf 2's jitter, loss and reordering counters
//!   (spec `models.md` D.8), per-interval reports and totals. DCCP receivers reuse it for the
//!   same accounting of DCCP iperf flows (\[S3\]).
//!
//! # Driver contract
//! Sender: at `poll_timeout()` call `poll_transmit(now)` until `None` (every datagram due at or
//! before `now` comes out, stamped with its due time if the driver woke late — the schedule never
//! drifts). Receiver: `handle_datagram(now, &d)` per arrival; `handle_timeout(now)` at
//! `poll_timeout()` closes intervals; drain `poll_report()`; `totals()` any time.
//!
//! # References and deviations
//! iperf 2.0.4 `src/Reporter.c` (accounting), RFC 3550 §6.4.1 (jitter).
//!
//! | topic | iperf 2 | here |
//! |---|---|---|
//! | datagram ids | 32-bit, first datagram id 0 (id 0 is then skipped by the receiver) | `u64`, first id **1**, so "datagram count = highest id" counts every datagram sent |
//! | jitter | `double` seconds, from `gettimeofday` µs | `f64` nanoseconds from integer-ns transit times |
//! | interval reports | relative to the first datagram | aligned to multiples of the interval on the run clock, so flows line up in time series |
//! | trailing losses | invisible (count = highest id received) | same |

use airlink_engine::{Duration, Instant};
use std::collections::VecDeque;
use std::fmt;

/// IPv4 header without options, bytes.
pub const IP_HEADER_LEN: u32 = 20;
/// UDP header, bytes.
pub const UDP_HEADER_LEN: u32 = 8;

/// One simulated UDP datagram: iperf's payload header fields and the payload size.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct UdpDatagram {
    /// iperf datagram id, 1 for the first datagram of a flow.
    pub id: u64,
    /// When the sender wrote it (iperf's timestamp in the payload).
    pub sent_at: Instant,
    /// UDP payload bytes.
    pub payload: u32,
}

impl UdpDatagram {
    /// Size of the IP packet: 20 B IP + 8 B UDP + payload.
    pub fn wire_len(&self) -> u32 {
        IP_HEADER_LEN + UDP_HEADER_LEN + self.payload
    }
}

/// What the application offers.
#[derive(Clone, Debug, PartialEq)]
pub enum Traffic {
    /// Constant bit rate: `payload`-byte datagrams every 8·payload/`rate_bps` seconds
    /// (iperf `-u -b rate -l payload`; the rate counts payload bits, as iperf does).
    Cbr { payload: u32, rate_bps: u64 },
    /// Variable bit rate: frame *j* of `frames[j mod len]` bytes at `j / fps` seconds, split
    /// into datagrams of at most `max_payload` bytes that are offered back to back.
    Vbr {
        frames: Vec<u32>,
        fps: f64,
        max_payload: u32,
    },
}

/// A sender-side rate limit (e.g. the CPU of a handheld, \[S3\] §4): datagrams due faster than
/// this leave at this rate instead, behind schedule.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum RateCap {
    /// At most this many datagrams per second.
    PacketsPerSec(f64),
    /// At most this many payload bits per second.
    BitsPerSec(u64),
}

/// Configuration of a [`MediaSource`].
#[derive(Clone, Debug, PartialEq)]
pub struct UdpSourceConfig {
    pub traffic: Traffic,
    /// First datagram's due time. Default 0.
    pub start: Instant,
    /// Nothing is offered at or after this instant. Default `None` (never stops).
    pub stop: Option<Instant>,
    /// Sender rate limit. Default `None`.
    pub cap: Option<RateCap>,
}

impl UdpSourceConfig {
    /// CBR from t = 0, never stopping, uncapped.
    pub fn cbr(payload: u32, rate_bps: u64) -> Self {
        UdpSourceConfig {
            traffic: Traffic::Cbr { payload, rate_bps },
            start: Instant::ZERO,
            stop: None,
            cap: None,
        }
    }

    /// VBR from t = 0, never stopping, uncapped.
    pub fn vbr(frames: Vec<u32>, fps: f64, max_payload: u32) -> Self {
        UdpSourceConfig {
            traffic: Traffic::Vbr {
                frames,
                fps,
                max_payload,
            },
            start: Instant::ZERO,
            stop: None,
            cap: None,
        }
    }

    pub fn validate(&self) -> Result<(), SourceConfigError> {
        match &self.traffic {
            Traffic::Cbr { payload, rate_bps } => {
                if *payload == 0 {
                    return Err(SourceConfigError::ZeroPayload);
                }
                if *rate_bps == 0 {
                    return Err(SourceConfigError::BadRate);
                }
            }
            Traffic::Vbr {
                frames,
                fps,
                max_payload,
            } => {
                if frames.is_empty() || frames.iter().all(|&f| f == 0) {
                    return Err(SourceConfigError::EmptyTrace);
                }
                if *max_payload == 0 {
                    return Err(SourceConfigError::ZeroPayload);
                }
                if !(fps.is_finite() && *fps > 0.0) {
                    return Err(SourceConfigError::BadRate);
                }
            }
        }
        match self.cap {
            Some(RateCap::PacketsPerSec(r)) if !(r.is_finite() && r > 0.0) => {
                Err(SourceConfigError::BadCap)
            }
            Some(RateCap::BitsPerSec(0)) => Err(SourceConfigError::BadCap),
            _ => match self.stop {
                Some(stop) if stop < self.start => Err(SourceConfigError::StopBeforeStart),
                _ => Ok(()),
            },
        }
    }
}

/// Why a [`UdpSourceConfig`] cannot be used.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SourceConfigError {
    /// A payload size (CBR `payload`, VBR `max_payload`) is 0.
    ZeroPayload,
    /// The CBR rate is 0, or the VBR frame rate is not a positive finite number.
    BadRate,
    /// The VBR trace is empty or all zero.
    EmptyTrace,
    /// The rate cap is not positive and finite.
    BadCap,
    /// `stop` precedes `start`.
    StopBeforeStart,
}

impl fmt::Display for SourceConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ZeroPayload => "payload size must be at least 1 byte",
            Self::BadRate => "rate must be positive and finite",
            Self::EmptyTrace => "VBR trace must hold at least one non-empty frame",
            Self::BadCap => "sender rate cap must be positive and finite",
            Self::StopBeforeStart => "stop time must not precede start time",
        })
    }
}

impl std::error::Error for SourceConfigError {}

/// An application offering datagrams on an absolute schedule (sans-IO).
#[derive(Clone, Debug)]
pub struct MediaSource {
    cfg: UdpSourceConfig,
    /// Index of the next CBR datagram or VBR frame.
    k: u64,
    /// VBR: bytes of frame `k` not yet offered (0 = frame not started).
    frame_left: u32,
    /// When the last datagram was taken and its payload (for the cap).
    last: Option<(Instant, u32)>,
    done: bool,
}

impl MediaSource {
    pub fn new(cfg: UdpSourceConfig) -> Result<Self, SourceConfigError> {
        cfg.validate()?;
        let mut s = MediaSource {
            cfg,
            k: 0,
            frame_left: 0,
            last: None,
            done: false,
        };
        s.skip_empty_frames();
        Ok(s)
    }

    pub fn config(&self) -> &UdpSourceConfig {
        &self.cfg
    }

    /// Scheduled time of datagram/frame `k` (before the cap), from the start — no drift.
    fn scheduled(&self, k: u64) -> Instant {
        match &self.cfg.traffic {
            Traffic::Cbr { payload, rate_bps } => {
                let bits = k.saturating_mul(8 * *payload as u64);
                self.cfg.start + Duration::for_bits(bits, *rate_bps)
            }
            Traffic::Vbr { fps, .. } => self.cfg.start + Duration::from_secs_f64(k as f64 / *fps),
        }
    }

    fn skip_empty_frames(&mut self) {
        if let Traffic::Vbr { frames, .. } = &self.cfg.traffic {
            while self.frame_left == 0 {
                let f = frames[(self.k % frames.len() as u64) as usize];
                if f > 0 {
                    self.frame_left = f;
                } else {
                    self.k += 1;
                }
            }
        }
    }

    fn next_payload(&self) -> u32 {
        match &self.cfg.traffic {
            Traffic::Cbr { payload, .. } => *payload,
            Traffic::Vbr { max_payload, .. } => self.frame_left.min(*max_payload),
        }
    }

    /// When the next datagram is offered (schedule, then the cap), `None` once stopped.
    pub fn next_due(&self) -> Option<Instant> {
        if self.done {
            return None;
        }
        let mut t = self.scheduled(self.k);
        if let (Some(cap), Some((at, len))) = (self.cfg.cap, self.last) {
            let gap = match cap {
                RateCap::PacketsPerSec(r) => Duration::from_secs_f64(1.0 / r),
                RateCap::BitsPerSec(b) => Duration::for_bits(8 * len as u64, b),
            };
            t = t.max(at + gap);
        }
        match self.cfg.stop {
            Some(stop) if t >= stop => None,
            _ => Some(t),
        }
    }

    /// Takes the next datagram if it is due at or before `now`: `(due time, payload)`.
    pub fn pop(&mut self, now: Instant) -> Option<(Instant, u32)> {
        let due = self.next_due();
        if due.is_none() {
            self.done = true;
        }
        let due = due.filter(|&t| t <= now)?;
        let len = self.next_payload();
        self.last = Some((due, len));
        match self.cfg.traffic {
            Traffic::Cbr { .. } => self.k += 1,
            Traffic::Vbr { .. } => {
                self.frame_left -= len;
                if self.frame_left == 0 {
                    self.k += 1;
                    self.skip_empty_frames();
                }
            }
        }
        Some((due, len))
    }
}

/// Counters of a [`UdpSender`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UdpSenderStats {
    pub datagrams_sent: u64,
    pub payload_bytes_sent: u64,
    pub wire_bytes_sent: u64,
}

/// An iperf UDP client (sans-IO): ids from 1, timestamps = due times.
#[derive(Clone, Debug)]
pub struct UdpSender {
    source: MediaSource,
    next_id: u64,
    stats: UdpSenderStats,
}

impl UdpSender {
    pub fn new(cfg: UdpSourceConfig) -> Result<Self, SourceConfigError> {
        Ok(UdpSender {
            source: MediaSource::new(cfg)?,
            next_id: 1,
            stats: UdpSenderStats::default(),
        })
    }

    /// The next datagram due at or before `now`.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<UdpDatagram> {
        let (due, payload) = self.source.pop(now)?;
        let d = UdpDatagram {
            id: self.next_id,
            sent_at: due,
            payload,
        };
        self.next_id += 1;
        self.stats.datagrams_sent += 1;
        self.stats.payload_bytes_sent += payload as u64;
        self.stats.wire_bytes_sent += d.wire_len() as u64;
        Some(d)
    }

    /// When the next datagram is due; `None` after the stop time.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.source.next_due()
    }

    pub fn stats(&self) -> &UdpSenderStats {
        &self.stats
    }
}

/// One interval's iperf line.
#[derive(Clone, Debug, PartialEq)]
pub struct IntervalReport {
    pub start: Instant,
    pub end: Instant,
    /// Payload bytes received in the interval.
    pub bytes: u64,
    /// Datagrams received in the interval.
    pub received: u64,
    /// Growth of the highest id in the interval (iperf's per-interval "total").
    pub datagrams: u64,
    /// Loss counted in the interval (raw gap count minus out-of-order when larger, as iperf).
    pub lost: u64,
    pub out_of_order: u64,
    /// Running jitter at the end of the interval, ms.
    pub jitter_ms: f64,
    /// Payload throughput, bit/s.
    pub throughput_bps: f64,
}

/// The flow's iperf summary.
#[derive(Clone, Debug, PartialEq)]
pub struct IperfTotals {
    /// Datagram count as iperf reports it: the highest id received.
    pub datagrams: u64,
    pub received: u64,
    pub bytes: u64,
    /// Reported loss: lost − out_of_order when lost > out_of_order, else lost.
    pub lost: u64,
    pub out_of_order: u64,
    pub jitter_ms: f64,
    /// First to last arrival.
    pub duration: Duration,
    /// Payload bytes·8 over `duration` (0 when shorter than one datagram).
    pub throughput_bps: f64,
}

fn reported_loss(lost: u64, ooo: u64) -> u64 {
    if lost > ooo {
        lost - ooo
    } else {
        lost
    }
}

#[derive(Clone, Debug, Default)]
struct Snapshot {
    bytes: u64,
    received: u64,
    highest: u64,
    lost: u64,
    ooo: u64,
}

/// iperf 2's receiver accounting (spec D.8), with interval reports.
#[derive(Clone, Debug)]
pub struct IperfReceiver {
    interval: Option<Duration>,
    highest: u64,
    last_transit: Option<i128>,
    jitter_ns: f64,
    lost: u64,
    ooo: u64,
    bytes: u64,
    received: u64,
    first_arrival: Option<Instant>,
    last_arrival: Option<Instant>,
    /// Start of the interval being accumulated, and the counters at its start.
    cur_start: Instant,
    at_start: Snapshot,
    reports: VecDeque<IntervalReport>,
}

/// The UDP receiver is iperf's receiver.
pub type UdpReceiver = IperfReceiver;

impl IperfReceiver {
    /// `interval`: length of the periodic reports (iperf `-i`), `None` for totals only.
    /// A zero interval is treated as `None`.
    pub fn new(interval: Option<Duration>) -> Self {
        IperfReceiver {
            interval: interval.filter(|d| !d.is_zero()),
            highest: 0,
            last_transit: None,
            jitter_ns: 0.0,
            lost: 0,
            ooo: 0,
            bytes: 0,
            received: 0,
            first_arrival: None,
            last_arrival: None,
            cur_start: Instant::ZERO,
            at_start: Snapshot::default(),
            reports: VecDeque::new(),
        }
    }

    pub fn handle_datagram(&mut self, now: Instant, d: &UdpDatagram) {
        self.record(now, d.id, d.sent_at, d.payload);
    }

    /// Accounts one arrival of datagram `id`, written at `sent_at`, with `bytes` of payload.
    pub fn record(&mut self, now: Instant, id: u64, sent_at: Instant, bytes: u32) {
        self.close_intervals(now);
        let transit = now.as_nanos() as i128 - sent_at.as_nanos() as i128;
        if let Some(last) = self.last_transit {
            let d = (transit - last).abs() as f64;
            self.jitter_ns += (d - self.jitter_ns) / 16.0;
        }
        self.last_transit = Some(transit);
        if id != self.highest.wrapping_add(1) {
            if id < self.highest.wrapping_add(1) {
                self.ooo += 1;
            } else {
                self.lost += id - self.highest - 1;
            }
        }
        self.highest = self.highest.max(id);
        self.bytes += bytes as u64;
        self.received += 1;
        self.first_arrival.get_or_insert(now);
        self.last_arrival = Some(now);
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            bytes: self.bytes,
            received: self.received,
            highest: self.highest,
            lost: self.lost,
            ooo: self.ooo,
        }
    }

    /// Emits the reports of every interval that ended at or before `now`.
    fn close_intervals(&mut self, now: Instant) {
        let Some(iv) = self.interval else { return };
        if self.received == 0 {
            // Align the first interval with the first arrival's slot.
            self.cur_start = Instant::from_nanos(now.as_nanos() / iv.as_nanos() * iv.as_nanos());
            return;
        }
        while self.cur_start + iv <= now {
            let end = self.cur_start + iv;
            let s = self.snapshot();
            let a = &self.at_start;
            let bytes = s.bytes - a.bytes;
            self.reports.push_back(IntervalReport {
                start: self.cur_start,
                end,
                bytes,
                received: s.received - a.received,
                datagrams: s.highest - a.highest,
                lost: reported_loss(s.lost - a.lost, s.ooo - a.ooo),
                out_of_order: s.ooo - a.ooo,
                jitter_ms: self.jitter_ns * 1e-6,
                throughput_bps: bytes as f64 * 8.0 / iv.as_secs_f64(),
            });
            self.at_start = s;
            self.cur_start = end;
        }
    }

    /// End of the current interval while data arrived in it or in the previous one.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let iv = self.interval?;
        let last = self.last_arrival?;
        let end = self.cur_start + iv;
        (last + iv >= self.cur_start).then_some(end)
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        self.close_intervals(now);
    }

    pub fn poll_report(&mut self) -> Option<IntervalReport> {
        self.reports.pop_front()
    }

    /// Running jitter, ms.
    pub fn jitter_ms(&self) -> f64 {
        self.jitter_ns * 1e-6
    }

    pub fn totals(&self) -> IperfTotals {
        let duration = match (self.first_arrival, self.last_arrival) {
            (Some(a), Some(b)) => b - a,
            _ => Duration::ZERO,
        };
        IperfTotals {
            datagrams: self.highest,
            received: self.received,
            bytes: self.bytes,
            lost: reported_loss(self.lost, self.ooo),
            out_of_order: self.ooo,
            jitter_ms: self.jitter_ms(),
            duration,
            throughput_bps: if duration.is_zero() {
                0.0
            } else {
                self.bytes as f64 * 8.0 / duration.as_secs_f64()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant::from_millis(x)
    }

    /// Spec "Test vectors D": transits 100, 105, 101, 110, 100 ms.
    #[test]
    fn jitter_vector() {
        let mut r = IperfReceiver::new(None);
        let expect = [0.0, 0.3125, 0.54297, 1.07153, 1.62956];
        for (i, (transit, j)) in [100, 105, 101, 110, 100]
            .into_iter()
            .zip(expect)
            .enumerate()
        {
            let sent = ms(1000 * i as u64);
            r.record(
                sent + Duration::from_millis(transit),
                i as u64 + 1,
                sent,
                100,
            );
            assert!(
                (r.jitter_ms() - j).abs() < 5e-6,
                "{i}: {} vs {j}",
                r.jitter_ms()
            );
        }
    }

    #[test]
    fn loss_and_reordering_rules() {
        let mut r = IperfReceiver::new(None);
        // 1, 2, 5 (3 and 4 counted lost), 3 (out of order), 6.
        for id in [1, 2, 5, 3, 6] {
            r.record(ms(id * 10), id, ms(id * 10), 10);
        }
        let t = r.totals();
        assert_eq!((t.datagrams, t.received, t.out_of_order), (6, 5, 1));
        assert_eq!(t.lost, 1, "reported lost = 2 − 1");
        // When lost ≤ out_of_order the raw count stays.
        let mut r = IperfReceiver::new(None);
        for id in [2, 1] {
            r.record(ms(1), id, ms(0), 10);
        }
        assert_eq!((r.totals().lost, r.totals().out_of_order), (1, 1));
    }

    #[test]
    fn cbr_gap_is_8l_over_b_without_drift() {
        // 1424 B at 3 Mbit/s: 3.797333… ms, schedule from the start (no rounding build-up).
        let mut s = UdpSender::new(UdpSourceConfig::cbr(1424, 3_000_000)).unwrap();
        let mut last = Instant::ZERO;
        for k in 0..3001u64 {
            let due = s.poll_timeout().unwrap();
            let d = s.poll_transmit(due).unwrap();
            assert_eq!(d.id, k + 1);
            let exact = (k as u128 * 8 * 1424 * 1_000_000_000).div_ceil(3_000_000) as u64;
            assert_eq!(d.sent_at.as_nanos(), exact);
            last = d.sent_at;
        }
        assert_eq!(last, Instant::from_nanos(11_392_000_000));
        assert_eq!(s.stats().wire_bytes_sent, 3001 * (1424 + 28));
    }

    #[test]
    fn late_wakeup_releases_backlog_with_scheduled_stamps() {
        let mut s = UdpSender::new(UdpSourceConfig::cbr(1000, 8_000_000)).unwrap(); // 1 ms gap
        let got: Vec<_> = std::iter::from_fn(|| s.poll_transmit(ms(3))).collect();
        assert_eq!(got.len(), 4);
        assert_eq!(got[3].sent_at, ms(3));
        assert_eq!(s.poll_timeout(), Some(ms(4)));
    }

    #[test]
    fn vbr_splits_frames_and_loops() {
        let mut cfg = UdpSourceConfig::vbr(vec![3000, 0, 500], 25.0, 1400);
        cfg.stop = Some(ms(121));
        let mut s = MediaSource::new(cfg).unwrap();
        let mut got = Vec::new();
        while let Some(t) = s.next_due() {
            got.push(s.pop(t).unwrap());
        }
        let sizes: Vec<u32> = got.iter().map(|g| g.1).collect();
        assert_eq!(sizes, [1400, 1400, 200, 500, 1400, 1400, 200]);
        let times: Vec<u64> = got.iter().map(|g| g.0.as_nanos() / 1_000_000).collect();
        assert_eq!(
            times,
            [0, 0, 0, 80, 120, 120, 120],
            "the empty frame at 40 ms is skipped"
        );
    }

    #[test]
    fn cap_limits_rate_and_stop_ends() {
        let mut cfg = UdpSourceConfig::cbr(512, 10_000_000);
        cfg.cap = Some(RateCap::PacketsPerSec(500.0));
        cfg.stop = Some(ms(1000));
        let mut s = UdpSender::new(cfg).unwrap();
        let mut n = 0;
        while let Some(t) = s.poll_timeout() {
            while s.poll_transmit(t).is_some() {
                n += 1;
            }
        }
        assert_eq!(n, 500, "2 ms per datagram for 1 s");
        let mut cfg = UdpSourceConfig::cbr(1000, 80_000_000);
        cfg.cap = Some(RateCap::BitsPerSec(8_000_000));
        cfg.stop = Some(ms(10));
        let mut s = UdpSender::new(cfg).unwrap();
        let mut n = 0;
        while let Some(t) = s.poll_timeout() {
            while s.poll_transmit(t).is_some() {
                n += 1;
            }
        }
        assert_eq!(n, 10);
    }

    #[test]
    fn invalid_sources_are_refused() {
        let bad = [
            (
                UdpSourceConfig::cbr(0, 1000),
                SourceConfigError::ZeroPayload,
            ),
            (UdpSourceConfig::cbr(10, 0), SourceConfigError::BadRate),
            (
                UdpSourceConfig::vbr(vec![], 25.0, 1400),
                SourceConfigError::EmptyTrace,
            ),
            (
                UdpSourceConfig::vbr(vec![10], -1.0, 1400),
                SourceConfigError::BadRate,
            ),
            (
                UdpSourceConfig {
                    cap: Some(RateCap::PacketsPerSec(-3.0)),
                    ..UdpSourceConfig::cbr(10, 10)
                },
                SourceConfigError::BadCap,
            ),
            (
                UdpSourceConfig {
                    start: ms(5),
                    stop: Some(ms(1)),
                    ..UdpSourceConfig::cbr(10, 10)
                },
                SourceConfigError::StopBeforeStart,
            ),
        ];
        for (cfg, e) in bad {
            assert_eq!(UdpSender::new(cfg).unwrap_err(), e);
        }
    }

    #[test]
    fn interval_reports_align_and_go_quiet() {
        let mut r = IperfReceiver::new(Some(Duration::from_secs(1)));
        assert_eq!(r.poll_timeout(), None);
        for i in 0..20u64 {
            // 10 datagrams per second from 0.5 s to 2.4 s, id 7 lost.
            let t = ms(500 + 100 * i);
            if i + 1 != 7 {
                r.record(t, i + 1, t, 1000);
            }
        }
        while let Some(t) = r.poll_timeout() {
            r.handle_timeout(t);
        }
        let reps: Vec<_> = std::iter::from_fn(|| r.poll_report()).collect();
        assert_eq!(reps.len(), 4, "[0,1) [1,2) [2,3) and one quiet interval");
        assert_eq!(reps[0].start, Instant::ZERO);
        assert_eq!((reps[0].received, reps[0].bytes), (5, 5000));
        assert_eq!(
            (reps[1].received, reps[1].lost, reps[1].datagrams),
            (9, 1, 10)
        );
        assert_eq!(reps[1].throughput_bps, 72_000.0);
        assert_eq!(reps[2].received, 5);
        assert_eq!(reps[3].received, 0);
    }
}
