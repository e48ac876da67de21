//! A pipe that delivers in fixed units of `unit` bytes instead of whole packets: the same link
//! modelled at a finer granularity, as the Seawind study's §3.2 divides a GPRS link into IP
//! packets, LLC frames (~200 B) and RLC blocks (~25 B).
//!
//! The link sends one unit after another while it has data, each taking `8·unit/rate`; a unit
//! carries up to `unit` bytes from the head of the queue, the tail of one packet and the head
//! of the next alike (RLC blocks carry several LLC frames with length indicators); when the
//! queue runs dry the unit leaves part empty (padding) but still takes its full time. A
//! packet leaves, after the propagation delay, at the end of the unit holding its last byte;
//! bytes arriving while a unit is on the air wait for the next one. Unlike [`crate::Pipe`],
//! the link therefore needs a wake-up per unit ([`Link::poll_at`]): in emulation the
//! datapath runs on the unit's clock, the point of the study's granularity argument.
//!
//! Unit boundaries of a busy period are computed from its start (`start + k·unit time`), so
//! rounding never accumulates. Loss, bit errors and the queue limit are the pipe's.
//!
//! With a queue discipline ([`Granular::with_queue`], the scenario's `aqm`), packets wait in
//! the discipline's queue and a unit with room takes the next one from it when the bytes
//! before it are sent: the discipline's limit counts the packets not yet begun.

use crate::queue::{QueueDisc, QueueStats};
use crate::{
    BitErrors, DropReason, Link, LinkChange, LinkEvent, LinkSample, LinkStats, Packet, PipeParams,
};
use airlink_engine::{Duration, Instant, RngStream};
use std::collections::VecDeque;

pub struct Granular<P> {
    params: PipeParams,
    rate_bps: u64,
    unit_bytes: u32,
    rng: RngStream,
    errors: BitErrors,
    /// Packets not yet wholly sent, with their bytes still to send.
    queue: VecDeque<(P, u32)>,
    /// Packets whose last byte is in the unit on the air.
    finishing: Vec<P>,
    finishing_bytes: u64,
    /// The unit on the air ends at this instant.
    unit_end: Option<Instant>,
    /// It began at this instant and has room for this many more bytes arriving at that instant.
    unit_start: Instant,
    room: u32,
    /// The current busy period: its start, rate and units begun.
    period: (Instant, u64, u64),
    outbox: VecDeque<(Instant, P)>,
    events: VecDeque<LinkEvent>,
    stats: LinkStats,
    /// The queue discipline, when the link has one: `queue` then holds only the packet begun.
    qdisc: Option<QueueDisc<P>>,
}

impl<P: Packet> Granular<P> {
    /// `params.rate_bps` is required; `unit_bytes > 0`.
    pub fn new(params: PipeParams, unit_bytes: u32, rng: RngStream) -> Self {
        let rate_bps = params.rate_bps.expect("a granular link has a rate");
        assert!(unit_bytes > 0, "a unit has at least one byte");
        Granular {
            params,
            rate_bps,
            unit_bytes,
            rng,
            errors: BitErrors::default(),
            queue: VecDeque::new(),
            finishing: Vec::new(),
            finishing_bytes: 0,
            unit_end: None,
            unit_start: Instant::ZERO,
            room: 0,
            period: (Instant::ZERO, 0, 0),
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

    /// True while packets wait (in the link's queue or its discipline's).
    fn waiting(&self) -> bool {
        !self.queue.is_empty() || self.qdisc.as_ref().is_some_and(|q| !q.is_empty())
    }

    /// The time one unit takes at the current rate.
    pub fn unit_time(&self) -> Duration {
        Duration::for_bits(self.unit_bytes as u64 * 8, self.rate_bps)
    }

    fn drop_packet(&mut self, now: Instant, pkt: &P, reason: DropReason) {
        let (flow, bytes) = (pkt.flow(), pkt.wire_len());
        self.stats
            .record_drop(&mut self.events, now, flow, bytes, reason);
    }

    /// Puts the next unit on the air at `at`, filled from the head of the queue.
    fn start_unit(&mut self, at: Instant) {
        let (start, rate, units) = self.period;
        let continues = self.unit_end == Some(at) && rate == self.rate_bps;
        let (start, units) = if continues { (start, units) } else { (at, 0) };
        let end =
            start + Duration::for_bits((units + 1) * self.unit_bytes as u64 * 8, self.rate_bps);
        self.period = (start, self.rate_bps, units + 1);
        self.unit_end = Some(end);
        self.unit_start = at;
        self.room = self.unit_bytes;
        self.stats.frames_sent += 1;
        self.fill();
    }

    /// Moves bytes from the head of the queue into the unit's remaining room.
    fn fill(&mut self) {
        while self.room > 0 {
            if self.queue.is_empty() {
                // With a discipline, the unit's room takes its next packet now.
                let at = self.unit_start;
                let Some(q) = self.qdisc.as_mut() else {
                    break;
                };
                let next = q.dequeue(at);
                q.report_drops(at, &mut self.stats, &mut self.events);
                let Some((pkt, _)) = next else {
                    break;
                };
                let len = pkt.wire_len();
                self.queue.push_back((pkt, len));
            }
            let Some((_, left)) = self.queue.front_mut() else {
                break;
            };
            let take = self.room.min(*left);
            *left -= take;
            self.room -= take;
            if *left == 0 {
                let (pkt, _) = self.queue.pop_front().expect("front exists");
                self.finishing_bytes += pkt.wire_len() as u64;
                self.finishing.push(pkt);
            }
        }
    }

    fn packets_in_link(&self) -> usize {
        self.queue.len() + self.finishing.len()
    }

    fn bytes_in_link(&self) -> u64 {
        // Bytes of packets not yet delivered, whole (the queue limit counts packets as the pipe's).
        self.queue
            .iter()
            .map(|(p, _)| p.wire_len() as u64)
            .sum::<u64>()
            + self.finishing_bytes
    }
}

impl<P: Packet> Link<P> for Granular<P> {
    /// As the pipe's: the unit on the air keeps its end; the new rate applies from the next unit.
    fn change(&mut self, _now: Instant, c: &LinkChange) -> Result<(), String> {
        self.params.apply(c)?;
        self.rate_bps = c.rate_bps.unwrap_or(self.rate_bps);
        if let (Some(q), Some(limit)) = (self.qdisc.as_mut(), c.queue_limit) {
            q.set_limit(limit);
        }
        Ok(())
    }

    fn enqueue(&mut self, now: Instant, mut pkt: P) {
        self.stats.packets_in += 1;
        if self.rng.bernoulli(self.params.loss) {
            self.drop_packet(now, &pkt, DropReason::Loss);
            return;
        }
        let len = pkt.wire_len();
        let full = self.params.queue_limit.is_full(
            self.packets_in_link(),
            self.bytes_in_link(),
            len as u64,
        );
        if full && self.qdisc.is_none() {
            self.drop_packet(now, &pkt, DropReason::Queue);
            return;
        }
        if self.errors.apply(
            &mut pkt,
            self.params.bit_error_rate,
            self.params.error_burst_bits,
            &mut self.rng,
        ) > 0
        {
            self.stats.packets_corrupted += 1;
        }
        match self.qdisc.as_mut() {
            Some(q) => {
                q.enqueue(now, pkt);
                q.report_drops(now, &mut self.stats, &mut self.events);
            }
            None => self.queue.push_back((pkt, len)),
        }
        match self.unit_end {
            None => self.start_unit(now),
            // Bytes arriving at the instant a unit begins still make it (same-instant arrivals
            // are not ordered against the unit's start).
            Some(_) if now == self.unit_start => self.fill(),
            Some(_) => {}
        }
    }

    fn poll_at(&self) -> Option<Instant> {
        self.unit_end
    }

    fn handle_timeout(&mut self, now: Instant) {
        while let Some(end) = self.unit_end.filter(|&e| e <= now) {
            for pkt in std::mem::take(&mut self.finishing) {
                self.stats.packets_out += 1;
                self.stats.bytes_out += pkt.wire_len() as u64;
                self.outbox.push_back((end + self.params.delay, pkt));
            }
            self.finishing_bytes = 0;
            if !self.waiting() {
                self.unit_end = None;
            } else {
                self.start_unit(end);
            }
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
            queue_packets: self.packets_in_link() as u32 + p,
            queue_bytes: self.bytes_in_link() + b,
            radio: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestPacket;
    use crate::{Pipe, QueueLimit};

    fn link(rate: u64, unit: u32) -> Granular<TestPacket> {
        Granular::new(
            PipeParams {
                rate_bps: Some(rate),
                ..Default::default()
            },
            unit,
            RngStream::derive(1, "granular"),
        )
    }

    /// Drives a link like the engine: arrivals at their instants, timers when due; returns the
    /// (id, departure ms) of every packet and the number of wake-ups.
    fn drive(
        l: &mut impl Link<TestPacket>,
        arrivals: &[(u64, u32, u32)],
    ) -> (Vec<(u32, f64)>, usize) {
        let mut out = Vec::new();
        let mut wakeups = 0;
        let mut next = 0;
        loop {
            let timer = l.poll_at();
            let arrival = arrivals.get(next).map(|a| Instant::from_micros(a.0));
            match (timer, arrival) {
                (None, None) => break,
                (Some(t), a) if a.is_none_or(|a| t < a) => {
                    wakeups += 1;
                    l.handle_timeout(t);
                }
                (_, Some(a)) => {
                    let (_, id, len) = arrivals[next];
                    l.enqueue(a, TestPacket::new(id, len));
                    next += 1;
                }
                _ => unreachable!("a timer without arrivals is taken above"),
            }
            while let Some((t, p)) = l.poll_output() {
                out.push((p.id, t.as_nanos() as f64 / 1e6));
            }
        }
        (out, wakeups)
    }

    /// Behind a queue discipline that never drops, the link serves exactly as with its own
    /// queue: the discipline changes what waits, not the server.
    #[test]
    fn a_discipline_that_keeps_everything_serves_as_the_links_own_queue() {
        use crate::queue::{AqmConfig, QueueDisc};
        let arrivals: Vec<(u64, u32, u32)> = (0..300u32)
            .map(|i| {
                (
                    (i as u64 * 7919) % 50_000 + i as u64 * 300,
                    i,
                    40 + (i * 37) % 1460,
                )
            })
            .collect();
        let mut arrivals = arrivals;
        arrivals.sort();
        let q = QueueDisc::new(
            &AqmConfig::DropTail,
            QueueLimit::Packets(100_000),
            None,
            RngStream::derive(1, "q"),
        );
        let (own, _) = drive(&mut link(64_000, 25), &arrivals);
        let (queued, _) = drive(&mut link(64_000, 25).with_queue(q), &arrivals);
        assert_eq!(own.len(), 300);
        assert_eq!(own, queued);
    }

    #[test]
    fn a_packet_leaves_with_the_unit_holding_its_last_byte() {
        // 8 kbit/s: a 200-byte unit takes 200 ms. 1000 B = 5 units; 100 B waits for a whole unit.
        let (out, wakeups) = drive(&mut link(8_000, 200), &[(0, 0, 1000)]);
        assert_eq!((out, wakeups), (vec![(0, 1000.0)], 5));
        let (out, _) = drive(&mut link(8_000, 200), &[(0, 0, 100)]);
        assert_eq!(out, [(0, 200.0)]);
        // Two 100-B packets arriving together share one unit.
        let (out, _) = drive(&mut link(8_000, 200), &[(0, 0, 100), (0, 1, 100)]);
        assert_eq!(out, [(0, 200.0), (1, 200.0)]);
        // A packet arriving while a unit is on the air waits for the next unit.
        let (out, _) = drive(&mut link(8_000, 200), &[(0, 0, 100), (50_000, 1, 100)]);
        assert_eq!(out, [(0, 200.0), (1, 400.0)]);
        // Packets pack across unit boundaries: 300 + 100 B end in the second unit.
        let (out, _) = drive(&mut link(8_000, 200), &[(0, 0, 300), (0, 1, 100)]);
        assert_eq!(out, [(0, 400.0), (1, 400.0)]);
    }

    #[test]
    fn back_to_back_the_rate_is_the_pipes_and_each_packet_is_late_by_less_than_a_unit() {
        // 200 packets of 1000 B at 53.6 kbit/s, unit 30 B (GPRS CS-2 x 4 timeslots, RLC blocks).
        let arrivals: Vec<_> = (0..200).map(|i| (0, i, 1000)).collect();
        let rate = 53_600;
        let (fine, wakeups) = drive(&mut link(rate, 30), &arrivals);
        let mut pipe = Pipe::new(
            PipeParams {
                rate_bps: Some(rate),
                ..Default::default()
            },
            RngStream::derive(1, "p"),
        );
        let (whole, _) = drive(&mut pipe, &arrivals);
        let unit_ms = 30.0 * 8.0 / rate as f64 * 1e3;
        for ((a, t), (b, u)) in fine.iter().zip(&whole) {
            assert_eq!(a, b);
            assert!(*t >= *u - 1e-3 && *t < u + unit_ms, "{t} vs {u}");
        }
        // 200 000 B in 30-B units: ⌈200000/30⌉ wake-ups, no rounding drift over 30 s.
        assert_eq!(wakeups, 6667);
        let last = fine.last().unwrap().1;
        assert!((last - 6667.0 * unit_ms).abs() < 1e-3, "{last}");
    }

    #[test]
    fn queue_limit_loss_and_delay_are_the_pipes() {
        let mut l = Granular::new(
            PipeParams {
                rate_bps: Some(8_000),
                delay: Duration::from_millis(100),
                queue_limit: QueueLimit::Packets(2),
                ..Default::default()
            },
            200,
            RngStream::derive(1, "g"),
        );
        for i in 0..3 {
            l.enqueue(Instant::ZERO, TestPacket::new(i, 400));
        }
        assert_eq!(l.stats().queue_drops, 1);
        assert_eq!(l.sample(Instant::ZERO).queue_packets, 2);
        let (out, _) = drive(&mut l, &[]);
        assert_eq!(out, [(0, 500.0), (1, 900.0)]);
        assert_eq!(l.stats().frames_sent, 4);
    }
}
