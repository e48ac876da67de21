//! A host's service budget (a handheld's CPU and driver, \[S3\] §4): the host serves the
//! packets it sends one at a time, each taking a service time, holds at most a small send
//! buffer of packets that wait for service or are being served, and pays for the packets it
//! receives. One budget belongs to one host and is shared by all its flows (`airlink-net`'s
//! `host_budget` gives each of the host's flow ends its share of the buffer).
//!
//! # Rules
//!
//! 1. Two resources serve a packet, each first come first served: the host's per-packet work
//!    (its CPU: 1/`packets_per_sec` a packet) and its per-byte path (its bus and driver:
//!    8·`bytes`/`bits_per_sec`); either limit may be absent, not both. A packet accepted at
//!    `now` leaves the host (reaches its network interface's link) when both are done with it,
//!    and not before the packet accepted before it. With packets of one size this is the
//!    larger of the two service times after the previous departure. The bytes are whatever
//!    the caller counts (the IP packet's size: the host pushes IP packets).
//! 2. A full buffer: UDP's datagram is **dropped** at the sender ([`DeviceLimit::offer`]
//!    returns `None`); it already has its iperf id, so the receiver counts it lost, as in
//!    \[S3\]'s Transmitted/Lost columns. TCP and DCCP senders **block**: the driver asks
//!    [`DeviceLimit::has_room`] before it takes the next packet from the endpoint, and
//!    otherwise waits until [`DeviceLimit::sender_wake`]; no packet is lost at the sender.
//! 3. A packet the host **receives** costs per-packet work too ([`DeviceLimit::charge_received`],
//!    [`DeviceLimit::set_receive_cost`]; default: a sent packet's, 1/`packets_per_sec`): a
//!    CPU-bound handheld pays per packet in both directions. The work delays the packets the
//!    host accepts after it; those already accepted keep their departures.
//!
//! Closed forms (tested here and in `airlink-sim/tests/host_budget.rs`): a CPU-bound host of
//! P packets/s that receives λ packets/s at a cost c each sends (1 − λc)·P; a sender that
//! receives r feedback packets per data packet at a sent packet's cost sends P/(1 + r) (the
//! DCCP study's CCID-2, r ≈ 0.35-0.4, below UDP, r = 0).
//!
//! | reference | what airlink takes |
//! |---|---|
//! | \[S3\] Melo de Sales et al., "Measuring DCCP against TCP and UDP with wireless mobile devices" (Linux Symposium 2008), §4, Table 3 | CPU-bound Internet tablets (Nokia N800) as senders: UDP's 2956 kbit/s of 512-byte datagrams is the tablet's packet rate; TCP's larger packets reach 3.1-3.9 Mbit/s |
//!
//! # Deviations
//!
//! | a real handheld | here |
//! |---|---|
//! | the kernel, driver and applications share the CPU by a scheduler, with interrupts and timer jitter | one deterministic FIFO per resource: no variation between runs (the study's 95 % intervals come from that variation) |
//! | receiving costs the CPU before the application sees the packet | the received packet reaches its endpoint at once; its work only delays what the host sends next |
//! | one device queue shared by all sockets (`txqueuelen`), plus a send buffer per socket | one buffer per host, each flow end holding its share of it (⌊buffer/ends⌋, at least 1) |
//! | a host also spends work on packets it forwards | a budget serves the host's own flows; forwarding (an access point, a router) is a link's end and costs nothing |
//! | the buffer size is the tablet's (unknown) | `buffer` defaults to 4 packets (assumption: the study's stalled senders suggest a small one) |
//!
//! Sans-IO and deterministic: no clock, no randomness; `now` never decreases between calls.

use airlink_engine::{Duration, Instant};
use std::collections::VecDeque;
use std::fmt;

/// Send buffer of [`DeviceLimitConfig::new`], packets: small, as the study's stalled
/// senders suggest (assumption: the study does not give it).
pub const DEFAULT_BUFFER_PACKETS: u32 = 4;

/// A host's service rate and send buffer.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct DeviceLimitConfig {
    /// At most this many packets per second.
    pub packets_per_sec: Option<f64>,
    /// At most this many bits per second.
    pub bits_per_sec: Option<u64>,
    /// Packets the host holds (waiting or in service); at least 1.
    pub buffer_packets: u32,
}

impl DeviceLimitConfig {
    /// A limit in packets/s and/or bits/s with the default buffer.
    pub fn new(packets_per_sec: Option<f64>, bits_per_sec: Option<u64>) -> Self {
        DeviceLimitConfig {
            packets_per_sec,
            bits_per_sec,
            buffer_packets: DEFAULT_BUFFER_PACKETS,
        }
    }

    pub fn validate(&self) -> Result<(), DeviceLimitError> {
        match (self.packets_per_sec, self.bits_per_sec) {
            (None, None) => return Err(DeviceLimitError::NoRate),
            (Some(p), _) if !(p.is_finite() && p > 0.0) => return Err(DeviceLimitError::BadRate),
            (_, Some(0)) => return Err(DeviceLimitError::BadRate),
            _ => {}
        }
        if self.buffer_packets == 0 {
            return Err(DeviceLimitError::NoBuffer);
        }
        Ok(())
    }
}

/// Why a [`DeviceLimitConfig`] cannot be used.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DeviceLimitError {
    /// Neither a packet rate nor a bit rate.
    NoRate,
    /// A rate that is not positive and finite.
    BadRate,
    /// A send buffer of 0 packets.
    NoBuffer,
}

impl fmt::Display for DeviceLimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NoRate => "a device limit needs a packet rate or a bit rate",
            Self::BadRate => "a device limit's rate must be positive and finite",
            Self::NoBuffer => "a device's send buffer must hold at least 1 packet",
        })
    }
}

impl std::error::Error for DeviceLimitError {}

/// Counters of a [`DeviceLimit`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    pub packets_accepted: u64,
    pub bytes_accepted: u64,
    /// Packets refused because the send buffer was full (UDP drops them).
    pub packets_refused: u64,
    pub bytes_refused: u64,
}

/// The host's service queue; see the module documentation.
#[derive(Clone, Debug)]
pub struct DeviceLimit {
    cfg: DeviceLimitConfig,
    /// When the per-packet work and the per-byte path are free again.
    cpu_free: Instant,
    bus_free: Instant,
    /// The per-packet work of a received packet.
    receive_cost: Duration,
    /// Departure instants of the packets accepted, oldest first (those still in the host and
    /// possibly some that left; only the last `buffer_packets` matter).
    departures: VecDeque<Instant>,
    stats: DeviceStats,
}

impl DeviceLimit {
    pub fn new(cfg: DeviceLimitConfig) -> Result<Self, DeviceLimitError> {
        cfg.validate()?;
        let receive_cost = cfg
            .packets_per_sec
            .map_or(Duration::ZERO, |r| Duration::from_secs_f64(1.0 / r));
        Ok(DeviceLimit {
            cfg,
            cpu_free: Instant::ZERO,
            bus_free: Instant::ZERO,
            receive_cost,
            departures: VecDeque::new(),
            stats: DeviceStats::default(),
        })
    }

    /// The per-packet work a received packet costs (default: a sent packet's).
    pub fn set_receive_cost(&mut self, cost: Duration) {
        self.receive_cost = cost;
    }

    pub fn receive_cost(&self) -> Duration {
        self.receive_cost
    }

    /// A packet arrived at the host at `now`: its per-packet work delays the packets the host
    /// accepts after it (those already accepted keep their departures).
    pub fn charge_received(&mut self, now: Instant) {
        if !self.receive_cost.is_zero() {
            self.cpu_free = self.cpu_free.max(now) + self.receive_cost;
        }
    }

    pub fn config(&self) -> &DeviceLimitConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &DeviceStats {
        &self.stats
    }

    /// Service time of a packet of `bytes`.
    pub fn service_time(&self, bytes: u32) -> Duration {
        let per_packet = self
            .cfg
            .packets_per_sec
            .map_or(Duration::ZERO, |r| Duration::from_secs_f64(1.0 / r));
        let per_bit = self
            .cfg
            .bits_per_sec
            .map_or(Duration::ZERO, |b| Duration::for_bits(8 * bytes as u64, b));
        per_packet.max(per_bit)
    }

    /// Packets in the host at `now` (accepted, not yet departed).
    pub fn in_host(&self, now: Instant) -> usize {
        self.departures.len() - self.departures.partition_point(|&d| d <= now)
    }

    /// Whether a packet offered at `now` would be accepted.
    pub fn has_room(&self, now: Instant) -> bool {
        self.in_host(now) < self.cfg.buffer_packets as usize
    }

    /// While the buffer is full at `now`: when the next packet leaves and makes room (a
    /// blocked sender's wake-up). `None` when there is room.
    pub fn wake_at(&self, now: Instant) -> Option<Instant> {
        if self.has_room(now) {
            return None;
        }
        let n = self.departures.len();
        Some(self.departures[n - self.cfg.buffer_packets as usize])
    }

    /// A blocking sender's next wake-up, given its endpoint's `poll_timeout`: while the buffer
    /// is full, no earlier than the departure that makes room (a sending timer that is due
    /// cannot send before then, and would otherwise fire again and again at `now`).
    pub fn sender_wake(&self, now: Instant, endpoint_timeout: Option<Instant>) -> Option<Instant> {
        match (self.wake_at(now), endpoint_timeout) {
            (Some(room), Some(t)) => Some(room.max(t)),
            (room, t) => room.or(t),
        }
    }

    /// Offers a packet of `bytes` at `now`: the instant it leaves the host, or `None` if the
    /// send buffer is full (the packet is refused: UDP drops it).
    pub fn offer(&mut self, now: Instant, bytes: u32) -> Option<Instant> {
        if !self.has_room(now) {
            self.stats.packets_refused += 1;
            self.stats.bytes_refused += bytes as u64;
            return None;
        }
        let per_packet = self
            .cfg
            .packets_per_sec
            .map_or(Duration::ZERO, |r| Duration::from_secs_f64(1.0 / r));
        let per_bit = self
            .cfg
            .bits_per_sec
            .map_or(Duration::ZERO, |b| Duration::for_bits(8 * bytes as u64, b));
        self.cpu_free = self.cpu_free.max(now) + per_packet;
        self.bus_free = self.bus_free.max(now) + per_bit;
        // Departures keep their order (the interface sends what the host hands it in turn).
        let leave = self
            .cpu_free
            .max(self.bus_free)
            .max(self.departures.back().copied().unwrap_or(now));
        self.departures.push_back(leave);
        // Only the last `buffer_packets` departures can still be in the host.
        while self.departures.len() > self.cfg.buffer_packets as usize {
            self.departures.pop_front();
        }
        self.stats.packets_accepted += 1;
        self.stats.bytes_accepted += bytes as u64;
        Some(leave)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(x: u64) -> Instant {
        Instant::from_micros(x)
    }

    #[test]
    fn packets_leave_one_service_time_apart_and_the_buffer_bounds_the_host() {
        // 1 Mbit/s: a 125-byte packet takes 1 ms; buffer 2.
        let mut d = DeviceLimit::new(DeviceLimitConfig {
            buffer_packets: 2,
            ..DeviceLimitConfig::new(None, Some(1_000_000))
        })
        .unwrap();
        assert_eq!(d.service_time(125), Duration::from_millis(1));
        assert_eq!(d.offer(us(0), 125), Some(us(1000)));
        assert_eq!(d.offer(us(0), 125), Some(us(2000)));
        assert!(!d.has_room(us(999)));
        assert_eq!(d.wake_at(us(999)), Some(us(1000)));
        assert_eq!(
            d.sender_wake(us(999), Some(us(500))),
            Some(us(1000)),
            "a due send waits for room"
        );
        assert_eq!(d.sender_wake(us(999), Some(us(5000))), Some(us(5000)));
        assert_eq!(d.sender_wake(us(999), None), Some(us(1000)));
        assert_eq!(d.offer(us(999), 125), None, "buffer full");
        assert!(d.has_room(us(1000)));
        assert_eq!(d.wake_at(us(1000)), None);
        assert_eq!(d.sender_wake(us(1000), Some(us(500))), Some(us(500)));
        assert_eq!(
            d.offer(us(1000), 125),
            Some(us(3000)),
            "queued behind the second"
        );
        // Idle host: service starts at once.
        assert_eq!(d.offer(us(10_000), 250), Some(us(12_000)));
        assert_eq!(
            d.stats(),
            &DeviceStats {
                packets_accepted: 4,
                bytes_accepted: 625,
                packets_refused: 1,
                bytes_refused: 125
            }
        );
    }

    #[test]
    fn the_slower_of_the_packet_and_bit_limits_sets_the_service_time() {
        let d = DeviceLimit::new(DeviceLimitConfig::new(Some(1000.0), Some(8_000_000))).unwrap();
        // 1000 packets/s = 1 ms; 8 Mbit/s: 500 B = 0.5 ms, 1500 B = 1.5 ms.
        assert_eq!(d.service_time(500), Duration::from_millis(1));
        assert_eq!(d.service_time(1500), Duration::from_micros(1500));
    }

    #[test]
    fn an_overloaded_host_accepts_its_service_rate_and_refuses_the_rest() {
        // 12 Mbit/s of 540-byte packets offered to a 3 Mbit/s host: 3/4 refused.
        let mut d = DeviceLimit::new(DeviceLimitConfig::new(None, Some(3_000_000))).unwrap();
        let gap = Duration::for_bits(540 * 8, 12_000_000);
        let mut t = Instant::ZERO;
        let mut last = Instant::ZERO;
        for _ in 0..100_000 {
            if let Some(leave) = d.offer(t, 540) {
                assert!(leave >= last && leave > t);
                last = leave;
            }
            t += gap;
        }
        let s = d.stats();
        let refused = s.packets_refused as f64 / 100_000.0;
        assert!((refused - 0.75).abs() < 0.001, "refused {refused}");
        let rate = 8.0 * s.bytes_accepted as f64 / last.as_secs_f64();
        assert!((rate / 3e6 - 1.0).abs() < 0.001, "rate {rate}");
    }

    #[test]
    fn a_received_packet_costs_a_sent_packets_work_and_slows_the_sends_behind_it() {
        // 1000 packets/s and 8 Mbit/s: a 500-byte packet is CPU-bound (1 ms), its bytes 0.5 ms.
        let mut d = DeviceLimit::new(DeviceLimitConfig {
            buffer_packets: 100,
            ..DeviceLimitConfig::new(Some(1000.0), Some(8_000_000))
        })
        .unwrap();
        assert_eq!(
            d.receive_cost(),
            Duration::from_millis(1),
            "a sent packet's per-packet work"
        );
        assert_eq!(d.offer(us(0), 500), Some(us(1000)));
        d.charge_received(us(0));
        assert_eq!(
            d.offer(us(0), 500),
            Some(us(3000)),
            "behind the received packet's work"
        );
        // One received packet per data packet halves a CPU-bound sender: n sends take 2n ms.
        let mut t = us(3000);
        for _ in 0..1000 {
            d.charge_received(t);
            t = d.offer(t, 500).unwrap();
        }
        assert_eq!(t, us(3000 + 2 * 1_000_000));
        // A byte-bound sender (1500 B: 1.5 ms of bytes, 1 ms of work) absorbs a received packet
        // per two sent: the work (2 + 1 ms per 3 ms) stays within the bytes' 3 ms.
        let mut b = DeviceLimit::new(DeviceLimitConfig {
            buffer_packets: 10_000,
            ..DeviceLimitConfig::new(Some(1000.0), Some(8_000_000))
        })
        .unwrap();
        let mut t = Instant::ZERO;
        for k in 0..1000 {
            if k % 2 == 0 {
                b.charge_received(Instant::ZERO);
            }
            t = b.offer(Instant::ZERO, 1500).unwrap();
        }
        assert_eq!(t, us(1500 * 1000));
        // No cost: nothing changes.
        b.set_receive_cost(Duration::ZERO);
        b.charge_received(t);
        assert_eq!(b.offer(t, 1500), Some(t + Duration::from_micros(1500)));
    }

    #[test]
    fn a_busy_host_sends_what_its_received_packets_leave_of_its_time() {
        // P = 1000 packets/s, λ = 400 received/s at c each, sends offered far beyond the host:
        // it sends (1 − λc)·P a second.
        for (cost_us, want) in [
            (None, 600.0),
            (Some(500), 800.0),
            (Some(0), 1000.0),
            (Some(2000), 200.0),
        ] {
            let mut d = DeviceLimit::new(DeviceLimitConfig::new(Some(1000.0), None)).unwrap();
            if let Some(c) = cost_us {
                d.set_receive_cost(Duration::from_micros(c));
            }
            let (mut sent, mut last) = (0u64, Instant::ZERO);
            for step in 0..100_000u64 {
                let now = us(step * 100); // 10 s in steps of 0.1 ms
                if step % 25 == 0 {
                    d.charge_received(now); // every 2.5 ms
                }
                if let Some(leave) = d.offer(now, 540) {
                    sent += 1;
                    last = leave;
                }
            }
            let rate = sent as f64 / last.as_secs_f64();
            assert!(
                (rate / want - 1.0).abs() < 0.01,
                "cost {cost_us:?}: {rate} against {want}"
            );
        }
    }

    #[test]
    fn bad_limits_are_refused() {
        assert_eq!(
            DeviceLimit::new(DeviceLimitConfig::new(None, None)).err(),
            Some(DeviceLimitError::NoRate)
        );
        assert_eq!(
            DeviceLimit::new(DeviceLimitConfig::new(Some(0.0), None)).err(),
            Some(DeviceLimitError::BadRate)
        );
        assert_eq!(
            DeviceLimit::new(DeviceLimitConfig::new(Some(-5.0), None)).err(),
            Some(DeviceLimitError::BadRate)
        );
        assert_eq!(
            DeviceLimit::new(DeviceLimitConfig::new(Some(f64::NAN), None)).err(),
            Some(DeviceLimitError::BadRate)
        );
        assert_eq!(
            DeviceLimit::new(DeviceLimitConfig::new(None, Some(0))).err(),
            Some(DeviceLimitError::BadRate)
        );
        let no_buffer = DeviceLimitConfig {
            buffer_packets: 0,
            ..DeviceLimitConfig::new(None, Some(1))
        };
        assert_eq!(
            DeviceLimit::new(no_buffer).err(),
            Some(DeviceLimitError::NoBuffer)
        );
    }
}
