//! airlink's own UDP packet source and sink for the emulator's benchmarks.
//!
//! iperf3 cannot keep a 100 Mbit/s link's queue full with 72-byte payloads (one `send` per
//! packet and its own pacing reach about a quarter of that); this sender uses `sendmmsg` and
//! paces on absolute `CLOCK_MONOTONIC` deadlines, so it offers an exact rate: packet `k` is due
//! at `start + k · gap` (computed from `k`, never accumulated), and each wake-up sends everything
//! already due in one `sendmmsg`, so a late wake-up or a VM stall is made up at once.
//!
//! Payload: `b"ALUG"`, the sequence number (u64, big endian), then zeros. The receiver counts
//! packets and bytes, kernel arrival times of the first and last packet (`SO_TIMESTAMPNS`),
//! sequence gaps and reordering; anything shorter or without the magic is counted as malformed.
//!
//! Rates count IP bytes (payload + 28 bytes of IPv4 and UDP header), as the emulated links do.

use serde::Serialize;
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;

/// Magic at the start of every payload.
pub const MAGIC: &[u8; 4] = b"ALUG";
/// The smallest payload that holds the magic and the sequence number.
pub const MIN_PAYLOAD: usize = 12;
/// The largest UDP payload over IPv4.
pub const MAX_PAYLOAD: usize = 65_507;
/// The receiver's pause between two reads that found less than a batch.
const RECV_NAP_NS: u64 = 1_000_000;
/// `setsockopt(SOL_UDP, UDP_SEGMENT)`: the segment size of UDP GSO (Linux 4.18).
const UDP_SEGMENT: libc::c_int = 103;
/// IPv4 (20) and UDP (8) headers: what a payload costs on an IP link on top of its size.
pub const IP_UDP_OVERHEAD: usize = 28;

/// What to send.
#[derive(Clone, Debug)]
pub struct SendConfig {
    pub to: SocketAddrV4,
    /// UDP payload bytes per packet.
    pub payload: usize,
    /// Offered rate in bit/s counting IP bytes; 0 = as fast as possible.
    pub rate_bps: u64,
    pub duration_ns: u64,
    /// Packets per `sendmmsg` at most.
    pub batch: usize,
    /// Let the kernel cut messages of several packets apart (UDP GSO), when it can.
    pub gso: bool,
}

impl SendConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !(MIN_PAYLOAD..=MAX_PAYLOAD).contains(&self.payload) {
            return Err(format!("payload size {} B: must be {MIN_PAYLOAD}..={MAX_PAYLOAD} B (magic and sequence number)", self.payload));
        }
        if self.batch == 0 || self.batch > 1024 {
            return Err(format!(
                "batch {}: must be 1..=1024 (the kernel's UIO_MAXIOV)",
                self.batch
            ));
        }
        if self.duration_ns == 0 {
            return Err("duration must be positive".into());
        }
        if self.to.port() == 0 {
            return Err(format!(
                "destination {}: port 0 is not a destination",
                self.to
            ));
        }
        Ok(())
    }
}

/// The pacing schedule: packet `k` is due `k · bits · 1e9 / rate` ns after the start. Exact
/// integer arithmetic from `k`, so there is no accumulated rounding over long runs.
#[derive(Copy, Clone, Debug)]
pub struct Pacing {
    /// Bits per packet on an IP link.
    bits: u128,
    rate_bps: u128,
}

impl Pacing {
    pub fn new(payload: usize, rate_bps: u64) -> Pacing {
        assert!(rate_bps > 0, "a paced schedule needs a rate");
        Pacing {
            bits: ((payload + IP_UDP_OVERHEAD) * 8) as u128,
            rate_bps: rate_bps as u128,
        }
    }

    /// Offset (ns after the start) at which packet `k` (0-based) is due.
    pub fn due_ns(&self, k: u64) -> u64 {
        // Rounded up: packet k is never sent before its exact instant.
        (k as u128 * self.bits * 1_000_000_000).div_ceil(self.rate_bps) as u64
    }

    /// How many packets are due at `elapsed_ns` after the start (packets 0..n).
    pub fn due_count(&self, elapsed_ns: u64) -> u64 {
        (elapsed_ns as u128 * self.rate_bps / (self.bits * 1_000_000_000)) as u64 + 1
    }

    /// Packets in a run of `duration_ns`: those due strictly before its end.
    pub fn total(&self, duration_ns: u64) -> u64 {
        if duration_ns == 0 {
            0
        } else {
            self.due_count(duration_ns - 1)
        }
    }
}

/// What the sender did.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct SendReport {
    pub packets: u64,
    /// Payload bytes and IP bytes (payload + 28 per packet) sent.
    pub payload_bytes: u64,
    pub ip_bytes: u64,
    pub payload_size: usize,
    pub requested_rate_bps: u64,
    /// Seconds from the first packet's due instant to the end of the last `sendmmsg`.
    pub seconds: f64,
    /// IP bit/s over the run's nominal duration (what the schedule offered).
    pub offered_rate_bps: f64,
    pub sendmmsg_calls: u64,
    /// Packets the kernel refused (ENOBUFS, ECONNREFUSED from an ICMP error, ...), counted and skipped.
    pub send_errors: u64,
    /// Latest a paced packet was sent after its due instant, in microseconds.
    pub max_late_us: f64,
    /// Packets per message (UDP GSO); 1 = one message per packet.
    pub gso_segments: usize,
}

fn monotonic_ns() -> u64 {
    crate::timing::monotonic_ns()
}

fn sleep_until(mono_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (mono_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (mono_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: valid timespec; EINTR just returns early and the loop re-checks the clock.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

/// Sends the configured stream; blocks for the duration.
/// Sends until the configured end, or soon after `stop` is set (a signal to the process).
pub fn send(cfg: &SendConfig, stop: &std::sync::atomic::AtomicBool) -> Result<SendReport, String> {
    cfg.validate()?;
    let sock = UdpSocket::bind("0.0.0.0:0").map_err(|e| format!("bind: {e}"))?;
    sock.connect(cfg.to)
        .map_err(|e| format!("connect to {}: {e}", cfg.to))?;
    let fd = sock.as_raw_fd();
    // A larger send buffer absorbs the bursts after a stall; refused sizes keep the default.
    let sndbuf: libc::c_int = 4 << 20;
    // SAFETY: valid socket and option value.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&sndbuf as *const libc::c_int).cast(),
            4,
        )
    };

    // UDP GSO: one message carries up to 64 packets of `payload` bytes that the kernel cuts
    // apart below the socket, so a packet costs one pass through UDP and IP per message, not
    // per packet (the sender shares two cores with the emulator). Without it, one per message.
    let max_segs = if cfg.gso {
        (65_000 / cfg.payload).clamp(1, 64)
    } else {
        1
    };
    let gso_size = cfg.payload as libc::c_int;
    // SAFETY: valid socket and option value; refused (old kernel) means no GSO.
    let segs = if max_segs > 1
        && unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_UDP,
                UDP_SEGMENT,
                (&gso_size as *const libc::c_int).cast(),
                4,
            )
        } == 0
    {
        max_segs
    } else {
        1
    };
    let mut buf = vec![0u8; cfg.batch * cfg.payload];
    for p in buf.chunks_mut(cfg.payload) {
        p[..4].copy_from_slice(MAGIC);
    }
    let n_msgs = cfg.batch.div_ceil(segs);
    let mut iovs: Vec<libc::iovec> = (0..n_msgs)
        .map(|m| libc::iovec {
            iov_base: buf[m * segs * cfg.payload..].as_mut_ptr().cast(),
            iov_len: 0,
        })
        .collect();
    // SAFETY: mmsghdr is plain data; zero is a valid (empty) value.
    let mut msgs: Vec<libc::mmsghdr> = vec![unsafe { std::mem::zeroed() }; n_msgs];
    for (m, iov) in msgs.iter_mut().zip(iovs.iter_mut()) {
        m.msg_hdr.msg_iov = iov;
        m.msg_hdr.msg_iovlen = 1;
    }

    let pacing = (cfg.rate_bps > 0).then(|| Pacing::new(cfg.payload, cfg.rate_bps));
    let mut r = SendReport {
        payload_size: cfg.payload,
        requested_rate_bps: cfg.rate_bps,
        ..Default::default()
    };
    let start = monotonic_ns();
    let end = start + cfg.duration_ns;
    let total = pacing.map(|p| p.total(cfg.duration_ns));
    let mut seq: u64 = 0;
    let mut max_late = 0u64;
    loop {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let now = monotonic_ns();
        let due = match (pacing, total) {
            (Some(p), Some(t)) => {
                if seq >= t {
                    break;
                }
                let d = p.due_count(now - start).min(t);
                if d <= seq {
                    sleep_until(start + p.due_ns(seq));
                    continue;
                }
                max_late = max_late.max(now - (start + p.due_ns(seq)));
                d
            }
            _ => {
                if now >= end {
                    break;
                }
                seq + cfg.batch as u64
            }
        };
        // Everything due now, in batches of at most `batch`.
        while seq < due {
            let n = ((due - seq) as usize).min(cfg.batch);
            for (i, p) in buf.chunks_mut(cfg.payload).take(n).enumerate() {
                p[4..12].copy_from_slice(&(seq + i as u64).to_be_bytes());
            }
            let m = n.div_ceil(segs);
            for (j, iov) in iovs.iter_mut().take(m).enumerate() {
                iov.iov_len = (n - j * segs).min(segs) * cfg.payload;
            }
            // SAFETY: msgs point into buf/iovs, which live and stay in place for the call.
            let rc = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), m as libc::c_uint, 0) };
            r.sendmmsg_calls += 1;
            let sent = if rc < 0 {
                let e = std::io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    // The first packet was refused: count it and move on (the stream keeps its schedule).
                    Some(libc::ENOBUFS)
                    | Some(libc::ECONNREFUSED)
                    | Some(libc::EAGAIN)
                    | Some(libc::EHOSTUNREACH)
                    | Some(libc::ENETUNREACH) => {
                        let k = n.min(segs) as u64;
                        r.send_errors += k;
                        seq += k;
                        continue;
                    }
                    _ => return Err(format!("sendmmsg to {}: {e}", cfg.to)),
                }
            } else {
                (rc as usize * segs).min(n) as u64
            };
            r.packets += sent;
            seq += sent;
        }
    }
    let finished = monotonic_ns();
    r.payload_bytes = r.packets * cfg.payload as u64;
    r.ip_bytes = r.packets * (cfg.payload + IP_UDP_OVERHEAD) as u64;
    r.seconds = (finished - start) as f64 * 1e-9;
    r.offered_rate_bps = r.ip_bytes as f64 * 8.0 / (cfg.duration_ns as f64 * 1e-9);
    r.max_late_us = max_late as f64 / 1000.0;
    r.gso_segments = segs;
    Ok(r)
}

/// What to receive.
#[derive(Clone, Debug)]
pub struct RecvConfig {
    pub bind: SocketAddrV4,
    /// Stop this long after starting, at the latest.
    pub duration_ns: u64,
    /// Stop when nothing arrived for this long after the first packet (0 = only the duration).
    pub idle_ns: u64,
    pub batch: usize,
    /// A file created once the socket is bound: a sender that waits for it loses nothing to a
    /// receiver that is still starting (seconds on a busy machine).
    pub ready: Option<std::path::PathBuf>,
}

impl RecvConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.batch == 0 || self.batch > 1024 {
            return Err(format!("batch {}: must be 1..=1024", self.batch));
        }
        if self.duration_ns == 0 {
            return Err("duration must be positive".into());
        }
        Ok(())
    }
}

/// What the receiver counted.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct RecvReport {
    /// Packets with airlink's magic and a sequence number.
    pub packets: u64,
    pub payload_bytes: u64,
    /// IP bytes of those packets (payload + 28 each).
    pub ip_bytes: u64,
    /// Packets too short or without the magic (counted, otherwise ignored).
    pub malformed: u64,
    /// Lowest and highest sequence number seen.
    pub first_seq: Option<u64>,
    pub last_seq: Option<u64>,
    /// Sequence numbers skipped on arrival (a packet with seq > next expected).
    pub gaps: u64,
    /// Packets that arrived with seq below the next expected one (reordered or duplicated).
    pub reordered: u64,
    /// Sequence numbers between the lowest and the highest never received (clamped at 0).
    pub lost: u64,
    /// Kernel arrival times (CLOCK_REALTIME s) of the first and last counted packet.
    pub first_arrival_s: Option<f64>,
    pub last_arrival_s: Option<f64>,
    /// IP bit/s between the first and last arrival (bytes after the first packet).
    pub rate_bps: Option<f64>,
    pub packets_per_s: Option<f64>,
    /// Why it stopped: "duration" or "idle".
    pub stopped_by: String,
    #[serde(skip)]
    next_seq: u64,
    #[serde(skip)]
    ip_bytes_after_first: u64,
    #[serde(skip)]
    first_ns: u64,
    #[serde(skip)]
    last_ns: u64,
}

impl RecvReport {
    /// Accounts one datagram of `payload` arriving at `arrival_ns` (any clock, consistently).
    pub fn account(&mut self, payload: &[u8], arrival_ns: u64) {
        if payload.len() < MIN_PAYLOAD || &payload[..4] != MAGIC {
            self.malformed += 1;
            return;
        }
        let seq = u64::from_be_bytes(payload[4..12].try_into().expect("8 bytes"));
        let ip = (payload.len() + IP_UDP_OVERHEAD) as u64;
        if self.packets == 0 {
            self.first_ns = arrival_ns;
            self.first_seq = Some(seq);
            self.last_seq = Some(seq);
            self.next_seq = seq;
        } else {
            self.ip_bytes_after_first += ip;
        }
        self.packets += 1;
        self.payload_bytes += payload.len() as u64;
        self.ip_bytes += ip;
        self.last_ns = arrival_ns;
        self.first_seq = self.first_seq.map(|s| s.min(seq));
        self.last_seq = self.last_seq.map(|s| s.max(seq));
        if seq >= self.next_seq {
            self.gaps += seq - self.next_seq;
            self.next_seq = seq + 1;
        } else {
            self.reordered += 1;
        }
    }

    /// Fills in the derived figures.
    pub fn finish(&mut self) {
        if let (Some(a), Some(b)) = (self.first_seq, self.last_seq) {
            self.lost = (b - a + 1).saturating_sub(self.packets);
        }
        if self.packets > 0 {
            self.first_arrival_s = Some(self.first_ns as f64 * 1e-9);
            self.last_arrival_s = Some(self.last_ns as f64 * 1e-9);
        }
        if self.packets > 1 && self.last_ns > self.first_ns {
            let s = (self.last_ns - self.first_ns) as f64 * 1e-9;
            self.rate_bps = Some(self.ip_bytes_after_first as f64 * 8.0 / s);
            self.packets_per_s = Some((self.packets - 1) as f64 / s);
        }
    }
}

/// Receives until the duration passed or the stream went idle.
/// Receives until the configured end or idle time, or soon after `stop` is set.
pub fn recv(cfg: &RecvConfig, stop: &std::sync::atomic::AtomicBool) -> Result<RecvReport, String> {
    cfg.validate()?;
    let sock =
        UdpSocket::bind(SocketAddr::V4(cfg.bind)).map_err(|e| format!("bind {}: {e}", cfg.bind))?;
    let fd = sock.as_raw_fd();
    let on: libc::c_int = 1;
    let rcvbuf: libc::c_int = 16 << 20;
    // SAFETY: valid socket and option values. SO_RCVBUFFORCE needs CAP_NET_ADMIN; without it the
    // plain SO_RCVBUF (capped by rmem_max) is the fallback.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            4,
        );
        if libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&rcvbuf as *const libc::c_int).cast(),
            4,
        ) != 0
        {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&rcvbuf as *const libc::c_int).cast(),
                4,
            );
        }
    }
    const CMSG_SPACE: usize = 64; // one timespec cmsg
    let mut bufs = vec![vec![0u8; MAX_PAYLOAD + 1]; cfg.batch];
    let mut ctrl = vec![[0u64; CMSG_SPACE / 8]; cfg.batch];
    let mut iovs: Vec<libc::iovec> = bufs
        .iter_mut()
        .map(|b| libc::iovec {
            iov_base: b.as_mut_ptr().cast(),
            iov_len: b.len(),
        })
        .collect();
    // SAFETY: plain data, zero is valid.
    let mut msgs: Vec<libc::mmsghdr> = vec![unsafe { std::mem::zeroed() }; cfg.batch];
    if let Some(ready) = &cfg.ready {
        std::fs::write(ready, b"")
            .map_err(|e| format!("cannot create the ready file {}: {e}", ready.display()))?;
    }

    let mut r = RecvReport::default();
    let start = monotonic_ns();
    let end = start + cfg.duration_ns;
    let mut last_arrival_mono: Option<u64> = None;
    let mut napping = false;
    loop {
        let now = monotonic_ns();
        if now >= end {
            r.stopped_by = "duration".into();
            break;
        }
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            r.stopped_by = "signal".into();
            break;
        }
        if let Some(t) = last_arrival_mono {
            if cfg.idle_ns > 0 && now >= t + cfg.idle_ns {
                r.stopped_by = "idle".into();
                break;
            }
        }
        // After a batch that was not full, nap briefly before asking again instead of waiting
        // for the next packet: a sleeping receiver is woken by every packet, and that wake-up
        // runs in the sender of the packet (here the emulator's datapath). Kernel timestamps
        // keep the arrival times exact.
        if napping {
            sleep_until(now + RECV_NAP_NS);
            napping = false;
        }
        for (i, m) in msgs.iter_mut().enumerate() {
            m.msg_hdr.msg_iov = &mut iovs[i];
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_control = ctrl[i].as_mut_ptr().cast();
            m.msg_hdr.msg_controllen = CMSG_SPACE as _;
            m.msg_len = 0;
        }
        // SAFETY: msgs point into bufs/iovs/ctrl, alive and in place for the call.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                cfg.batch as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n <= 0 {
            // Nothing queued: wait for data at most until the next stop check.
            let mut wait_ns = end - now;
            if let (Some(t), true) = (last_arrival_mono, cfg.idle_ns > 0) {
                wait_ns = wait_ns.min((t + cfg.idle_ns).saturating_sub(now));
            }
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // At most 50 ms: `stop` is looked at between waits.
            let ms = wait_ns.div_ceil(1_000_000).min(50) as libc::c_int;
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut pfd, 1, ms) };
            continue;
        }
        napping = (n as usize) < cfg.batch;
        let user_now = crate::timing::realtime_ns();
        last_arrival_mono = Some(monotonic_ns());
        for i in 0..n as usize {
            let len = msgs[i].msg_len as usize;
            let at = kernel_timestamp(&msgs[i].msg_hdr).unwrap_or(user_now);
            r.account(&bufs[i][..len.min(bufs[i].len())], at);
        }
    }
    r.finish();
    Ok(r)
}

/// The `SO_TIMESTAMPNS` arrival time (CLOCK_REALTIME ns) of a received message, if present.
fn kernel_timestamp(h: &libc::msghdr) -> Option<u64> {
    // SAFETY: the CMSG macros walk the control buffer the kernel filled in, within controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(seq: u64, size: usize) -> Vec<u8> {
        let mut p = vec![0u8; size];
        p[..4].copy_from_slice(MAGIC);
        p[4..12].copy_from_slice(&seq.to_be_bytes());
        p
    }

    #[test]
    fn pacing_offers_the_exact_rate() {
        // 100-byte IP packets (72 B payload) at 10 Mbit/s: one every 80 us.
        let p = Pacing::new(72, 10_000_000);
        assert_eq!(p.due_ns(0), 0);
        assert_eq!(p.due_ns(1), 80_000);
        assert_eq!(p.due_ns(12_500), 1_000_000_000);
        assert_eq!(p.due_count(0), 1);
        assert_eq!(p.due_count(79_999), 1);
        assert_eq!(p.due_count(80_000), 2);
        // 4 s: packets 0..49999 are due before the end, packet 50000 at it.
        assert_eq!(p.total(4_000_000_000), 50_000);
    }

    #[test]
    fn pacing_does_not_accumulate_rounding() {
        // 9.6 kbit/s with 100-byte packets: 83.333... ms per packet, not representable in ns.
        let p = Pacing::new(72, 9_600);
        assert_eq!(p.due_ns(1), 83_333_334); // rounded up: never early
        assert_eq!(p.due_ns(3), 250_000_000); // exact again at multiples, no drift
        assert_eq!(p.due_ns(3_000_000), 250_000_000_000_000);
        // Every packet's due instant agrees with the count of due packets.
        for k in [1u64, 2, 7, 1000, 123_457] {
            assert_eq!(p.due_count(p.due_ns(k)), k + 1, "k = {k}");
            assert_eq!(p.due_count(p.due_ns(k) - 1), k, "k = {k}");
        }
    }

    #[test]
    fn pacing_at_high_rates_counts_every_packet() {
        // 120 Mbit/s of 100-byte packets for 4 s: 600 000 packets, 150 000 per second.
        let p = Pacing::new(72, 120_000_000);
        assert_eq!(p.total(4_000_000_000), 600_000);
        assert_eq!(p.total(1), 1);
        assert_eq!(p.total(0), 0);
    }

    #[test]
    fn receiver_counts_gaps_reordering_and_malformed_packets() {
        let mut r = RecvReport::default();
        for (seq, t) in [
            (10u64, 1_000u64),
            (11, 2_000),
            (14, 3_000),
            (12, 4_000),
            (15, 5_000),
        ] {
            r.account(&packet(seq, 72), t);
        }
        r.account(b"short", 6_000);
        r.account(&[0u8; 72], 7_000);
        let mut wrong = packet(16, 72);
        wrong[0] = b'X';
        r.account(&wrong, 8_000);
        r.finish();
        assert_eq!(r.packets, 5);
        assert_eq!(r.malformed, 3);
        assert_eq!(r.payload_bytes, 5 * 72);
        assert_eq!(r.ip_bytes, 500);
        assert_eq!((r.first_seq, r.last_seq), (Some(10), Some(15)));
        assert_eq!(r.gaps, 2); // 12 and 13 were missing when 14 came
        assert_eq!(r.reordered, 1); // 12 came late
        assert_eq!(r.lost, 1); // 13 never came
                               // Rate between the first and last counted packet: 4 x 800 bits in 4 us.
        assert!(
            (r.rate_bps.unwrap() - 800e6).abs() < 1.0,
            "{:?}",
            r.rate_bps
        );
        assert!(
            (r.packets_per_s.unwrap() - 1e6).abs() < 1e-3,
            "{:?}",
            r.packets_per_s
        );
        assert_eq!(r.last_arrival_s, Some(5e-6));
    }

    #[test]
    fn receiver_without_packets_reports_nothing() {
        let mut r = RecvReport::default();
        r.account(&[], 1);
        r.finish();
        assert_eq!((r.packets, r.malformed, r.lost), (0, 1, 0));
        assert_eq!(r.rate_bps, None);
    }

    #[test]
    fn bad_settings_are_refused_with_the_reason() {
        let ok = SendConfig {
            to: "127.0.0.1:9".parse().unwrap(),
            payload: 72,
            rate_bps: 0,
            duration_ns: 1,
            batch: 32,
            gso: true,
        };
        assert!(ok.validate().is_ok());
        let e = SendConfig {
            payload: 8,
            ..ok.clone()
        }
        .validate()
        .unwrap_err();
        assert!(e.contains("payload size 8 B"), "{e}");
        assert!(SendConfig {
            batch: 0,
            ..ok.clone()
        }
        .validate()
        .unwrap_err()
        .contains("batch"));
        assert!(SendConfig {
            to: "127.0.0.1:0".parse().unwrap(),
            ..ok.clone()
        }
        .validate()
        .unwrap_err()
        .contains("port 0"));
    }

    #[test]
    fn loopback_send_and_receive_agree() {
        // Paced, 20 000 packets/s for 0.2 s over loopback, with and without UDP GSO: every
        // packet arrives, in order.
        for gso in [false, true] {
            let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
            let port = probe.local_addr().unwrap().port();
            drop(probe);
            let rx = std::thread::spawn(move || {
                recv(
                    &RecvConfig {
                        bind: format!("127.0.0.1:{port}").parse().unwrap(),
                        duration_ns: 10_000_000_000,
                        idle_ns: 500_000_000,
                        batch: 64,
                        ready: None,
                    },
                    &Default::default(),
                )
            });
            std::thread::sleep(std::time::Duration::from_millis(100));
            let cfg = SendConfig {
                to: format!("127.0.0.1:{port}").parse().unwrap(),
                payload: 72,
                rate_bps: 16_000_000,
                duration_ns: 200_000_000,
                batch: 64,
                gso,
            };
            let s = send(&cfg, &Default::default()).unwrap();
            let r = rx.join().unwrap().unwrap();
            assert_eq!(s.packets, 4000, "gso {gso}");
            assert_eq!(s.send_errors, 0);
            assert_eq!(s.gso_segments > 1, gso);
            assert_eq!(r.packets, 4000, "gso {gso}");
            assert_eq!(
                (
                    r.first_seq,
                    r.last_seq,
                    r.lost,
                    r.gaps,
                    r.malformed,
                    r.reordered
                ),
                (Some(0), Some(3999), 0, 0, 0, 0)
            );
            assert_eq!(r.stopped_by, "idle");
        }
    }
}
