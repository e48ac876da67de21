//! A plain link: serialisation at a fixed rate behind a drop-tail FIFO, a fixed propagation
//! delay, independent random loss and bit errors (independent or in bursts).
//!
//! Every packet's fate is known when it arrives (FIFO at a fixed rate), so the pipe emits it
//! at once with the instant it reaches the far end and needs no wake-ups of its own.
//!
//! | aspect | model | note |
//! |---|---|---|
//! | queue | drop-tail, limit counts packets in the link (waiting or being sent) | as Dummynet/netem `limit` |
//! | loss | Bernoulli per packet at the input | lost packets take no capacity |
//! | bit errors | Bernoulli per bit, or Gilbert–Elliott bursts | corrupted packets are delivered; the receiver's checksum decides |
//!
//! With a queue discipline ([`Pipe::with_queue`], the scenario's `aqm`), the pipe instead
//! keeps its packets in the discipline's queue and a transmitter takes the next one each
//! time it is free (a wake-up per packet, as a real interface's dequeue): the discipline's
//! limit counts the packets waiting, not the one on the wire (as Linux's qdiscs); bit errors
//! are drawn when a packet is sent.

use crate::queue::{QueueDisc, QueueStats};
use crate::{BitErrors, DropReason, Link, LinkChange, LinkEvent, LinkSample, LinkStats, Packet};
use airlink_engine::{Duration, Instant, RngStream};
use std::collections::VecDeque;

/// A queue limit in packets or bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    Packets(u32),
    Bytes(u64),
}

impl QueueLimit {
    /// Whether a queue holding `packets` packets of `bytes` bytes has no room for `len` more.
    pub fn is_full(self, packets: usize, bytes: u64, len: u64) -> bool {
        match self {
            QueueLimit::Packets(n) => packets >= n as usize,
            QueueLimit::Bytes(b) => bytes + len > b,
        }
    }
}

/// Parameters of a [`Pipe`].
#[derive(Clone, Debug, PartialEq)]
pub struct PipeParams {
    /// Serialisation rate in bit/s; `None` = infinitely fast (no queue).
    pub rate_bps: Option<u64>,
    pub delay: Duration,
    pub queue_limit: QueueLimit,
    pub loss: f64,
    pub bit_error_rate: f64,
    /// Mean length of an error burst in bits; `None`: independent bit errors (see [`BitErrors`]).
    pub error_burst_bits: Option<u32>,
}

impl Default for PipeParams {
    fn default() -> Self {
        PipeParams {
            rate_bps: None,
            delay: Duration::ZERO,
            queue_limit: QueueLimit::Packets(1000),
            loss: 0.0,
            bit_error_rate: 0.0,
            error_burst_bits: None,
        }
    }
}

impl PipeParams {
    /// A timed change's values over these (a pipe has no radio channel to change).
    pub fn apply(&mut self, c: &LinkChange) -> Result<(), String> {
        if c.mean_snr_db.is_some() {
            return Err("a pipe has no radio channel: it cannot change a mean SNR".into());
        }
        self.rate_bps = c.rate_bps.or(self.rate_bps);
        self.delay = c.delay.unwrap_or(self.delay);
        self.queue_limit = c.queue_limit.unwrap_or(self.queue_limit);
        self.loss = c.loss.unwrap_or(self.loss);
        self.bit_error_rate = c.bit_error_rate.unwrap_or(self.bit_error_rate);
        Ok(())
    }
}

pub struct Pipe<P> {
    params: PipeParams,
    rng: RngStream,
    errors: BitErrors,
    /// Departure instants and sizes of packets still in the link's queue or on the wire.
    backlog: VecDeque<(Instant, u32)>,
    backlog_bytes: u64,
    last_departure: Instant,
    outbox: VecDeque<(Instant, P)>,
    events: VecDeque<LinkEvent>,
    stats: LinkStats,
    /// The queue discipline, when the pipe has one; its transmitter is busy until `last_departure`.
    qdisc: Option<QueueDisc<P>>,
}

impl<P: Packet> Pipe<P> {
    pub fn new(params: PipeParams, rng: RngStream) -> Self {
        Pipe {
            params,
            rng,
            errors: BitErrors::default(),
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            last_departure: Instant::ZERO,
            outbox: VecDeque::new(),
            events: VecDeque::new(),
            stats: LinkStats::default(),
            qdisc: None,
        }
    }

    /// Puts a queue discipline in front of the transmitter (a pipe with a rate only).
    pub fn with_queue(mut self, qdisc: QueueDisc<P>) -> Self {
        assert!(
            self.params.rate_bps.is_some(),
            "a queue discipline needs a rate"
        );
        self.qdisc = Some(qdisc);
        self
    }

    /// Starts the transmissions due by `now`: each time the transmitter is free and the queue
    /// holds packets, the discipline hands over the next one at the instant it became free.
    fn serve(&mut self, now: Instant, rate: u64) {
        while self.qdisc.as_ref().is_some_and(|q| !q.is_empty()) && self.last_departure <= now {
            let at = self.last_departure;
            let next = self.qdisc.as_mut().and_then(|q| q.dequeue(at));
            self.collect_queue_drops(at);
            let Some((pkt, _)) = next else {
                break;
            };
            self.last_departure = at + Duration::for_bits(pkt.wire_len() as u64 * 8, rate);
            let due = (self.last_departure + self.params.delay).max(now);
            self.send(pkt, due);
        }
    }

    /// A packet on its way out, due at the far end at `due`: bit errors, counters, the outbox.
    fn send(&mut self, mut pkt: P, due: Instant) {
        let len = pkt.wire_len();
        if self.errors.apply(
            &mut pkt,
            self.params.bit_error_rate,
            self.params.error_burst_bits,
            &mut self.rng,
        ) > 0
        {
            self.stats.packets_corrupted += 1;
        }
        self.stats.packets_out += 1;
        self.stats.bytes_out += len as u64;
        self.outbox.push_back((due, pkt));
    }

    fn collect_queue_drops(&mut self, at: Instant) {
        if let Some(q) = self.qdisc.as_mut() {
            q.report_drops(at, &mut self.stats, &mut self.events);
        }
    }

    fn forget_departed(&mut self, now: Instant) {
        while let Some(&(t, len)) = self.backlog.front() {
            if t > now {
                break;
            }
            self.backlog.pop_front();
            self.backlog_bytes -= len as u64;
        }
    }

    fn drop_packet(&mut self, now: Instant, pkt: &P, reason: DropReason) {
        let (flow, bytes) = (pkt.flow(), pkt.wire_len());
        self.stats
            .record_drop(&mut self.events, now, flow, bytes, reason);
    }
}

impl<P: Packet> Link<P> for Pipe<P> {
    /// Packets already in the pipe keep the schedule they were given at their arrival (as
    /// netem's); the new values apply to packets arriving from `now` on.
    fn change(&mut self, _now: Instant, c: &LinkChange) -> Result<(), String> {
        self.params.apply(c)?;
        if let (Some(q), Some(limit)) = (self.qdisc.as_mut(), c.queue_limit) {
            q.set_limit(limit);
        }
        Ok(())
    }

    fn enqueue(&mut self, now: Instant, pkt: P) {
        self.stats.packets_in += 1;
        if self.rng.bernoulli(self.params.loss) {
            self.drop_packet(now, &pkt, DropReason::Loss);
            return;
        }
        if let (Some(_), Some(rate)) = (&self.qdisc, self.params.rate_bps) {
            // Transmissions due before the arrival start first, so no packet leaves before it came.
            self.serve(now, rate);
            if let Some(q) = self.qdisc.as_mut() {
                q.enqueue(now, pkt);
            }
            self.collect_queue_drops(now);
            self.last_departure = self.last_departure.max(now);
            self.serve(now, rate);
            return;
        }
        let len = pkt.wire_len();
        let leaves = match self.params.rate_bps {
            None => now,
            Some(rate) => {
                self.forget_departed(now);
                let limit = self.params.queue_limit;
                if limit.is_full(self.backlog.len(), self.backlog_bytes, len as u64) {
                    self.drop_packet(now, &pkt, DropReason::Queue);
                    return;
                }
                let start = self.last_departure.max(now);
                let departure = start + Duration::for_bits(len as u64 * 8, rate);
                self.last_departure = departure;
                self.backlog.push_back((departure, len));
                self.backlog_bytes += len as u64;
                departure
            }
        };
        self.send(pkt, leaves + self.params.delay);
    }

    fn poll_at(&self) -> Option<Instant> {
        match &self.qdisc {
            Some(q) if !q.is_empty() => Some(self.last_departure),
            _ => None,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if let Some(rate) = self.params.rate_bps {
            self.serve(now, rate);
        }
    }

    fn queue_stats(&self) -> Option<&QueueStats> {
        self.qdisc.as_ref().map(|q| q.stats())
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

    fn sample(&mut self, now: Instant) -> LinkSample {
        if let Some(q) = &self.qdisc {
            return LinkSample {
                queue_packets: q.packets(),
                queue_bytes: q.bytes(),
                radio: None,
            };
        }
        self.forget_departed(now);
        LinkSample {
            queue_packets: self.backlog.len() as u32,
            queue_bytes: self.backlog_bytes,
            radio: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestPacket;

    fn pipe(params: PipeParams) -> Pipe<TestPacket> {
        Pipe::new(params, RngStream::derive(1, "pipe"))
    }

    #[test]
    fn serialises_at_the_rate_then_adds_the_delay() {
        let mut p = pipe(PipeParams {
            rate_bps: Some(1_000_000),
            delay: Duration::from_millis(10),
            ..Default::default()
        });
        // Three 1250-byte packets at once: 10 ms each on the wire.
        for i in 0..3 {
            p.enqueue(Instant::ZERO, TestPacket::new(i, 1250));
        }
        let times: Vec<u64> = std::iter::from_fn(|| p.poll_output())
            .map(|(t, _)| t.as_nanos() / 1_000_000)
            .collect();
        assert_eq!(times, [20, 30, 40]);
        // A packet after the link went idle starts at once.
        p.enqueue(Instant::from_millis(100), TestPacket::new(9, 1250));
        assert_eq!(p.poll_output().unwrap().0, Instant::from_millis(120));
    }

    #[test]
    fn drop_tail_counts_packets_in_the_link() {
        let mut p = pipe(PipeParams {
            rate_bps: Some(8_000),
            queue_limit: QueueLimit::Packets(2),
            ..Default::default()
        });
        for i in 0..4 {
            p.enqueue(Instant::ZERO, TestPacket::new(i, 1000)); // 1 s each
        }
        assert_eq!(p.stats().queue_drops, 2);
        assert_eq!(p.sample(Instant::from_millis(500)).queue_packets, 2);
        assert_eq!(p.sample(Instant::from_millis(1000)).queue_packets, 1);
        // After the first left, one more fits.
        p.enqueue(Instant::from_millis(1000), TestPacket::new(5, 1000));
        assert_eq!(p.stats().queue_drops, 2);
        let drops: Vec<_> = std::iter::from_fn(|| p.poll_event()).collect();
        assert!(drops.iter().all(|e| matches!(
            e,
            LinkEvent::Drop {
                reason: DropReason::Queue,
                ..
            }
        )));
        assert_eq!(drops.len(), 2);
    }

    /// With a queue discipline the pipe sends back to back at its rate, one wake-up per packet.
    #[test]
    fn with_a_queue_discipline_the_transmitter_dequeues_when_free() {
        use crate::queue::{AqmConfig, CodelParams, QueueDisc};
        let params = PipeParams {
            rate_bps: Some(1_000_000),
            delay: Duration::from_millis(10),
            ..Default::default()
        };
        let q = QueueDisc::new(
            &AqmConfig::Codel(CodelParams::default()),
            QueueLimit::Packets(2),
            params.rate_bps,
            RngStream::derive(1, "q"),
        );
        let mut p = pipe(params).with_queue(q);
        // The first goes on the wire at once; two wait; the fourth overflows the limit of 2.
        for i in 0..4 {
            p.enqueue(Instant::ZERO, TestPacket::new(i, 1250));
        }
        assert_eq!(p.stats().queue_drops, 1);
        let mut times = Vec::new();
        while let Some(t) = p.poll_at() {
            p.handle_timeout(t);
        }
        while let Some((t, pkt)) = p.poll_output() {
            times.push((pkt.id, t.as_nanos() / 1_000_000));
        }
        assert_eq!(times, [(0, 20), (1, 30), (2, 40)]);
        let s = p.queue_stats().unwrap();
        assert_eq!((s.overflow_drops, s.sojourn.count()), (1, 3));
        assert_eq!(s.sojourn.quantile(1.0).unwrap().as_nanos() / 1_000_000, 20);
    }

    #[test]
    fn a_rate_step_applies_to_packets_arriving_after_it() {
        let mut p = pipe(PipeParams {
            rate_bps: Some(1_000_000),
            ..Default::default()
        });
        p.enqueue(Instant::ZERO, TestPacket::new(0, 1250)); // 10 ms at 1 Mbit/s
        p.change(
            Instant::from_millis(1),
            &LinkChange {
                rate_bps: Some(500_000),
                delay: Some(Duration::from_millis(5)),
                ..Default::default()
            },
        )
        .unwrap();
        p.enqueue(Instant::from_millis(1), TestPacket::new(1, 1250)); // 20 ms at 0.5 Mbit/s, after the first
        let times: Vec<u64> = std::iter::from_fn(|| p.poll_output())
            .map(|(t, _)| t.as_nanos() / 1_000_000)
            .collect();
        assert_eq!(times, [10, 35]);
    }

    #[test]
    fn byte_limits_and_random_loss() {
        let mut p = pipe(PipeParams {
            rate_bps: Some(8_000),
            queue_limit: QueueLimit::Bytes(2500),
            ..Default::default()
        });
        for i in 0..3 {
            p.enqueue(Instant::ZERO, TestPacket::new(i, 1000));
        }
        assert_eq!(p.stats().queue_drops, 1);

        let mut lossy = pipe(PipeParams {
            loss: 0.25,
            ..Default::default()
        });
        for i in 0..40_000 {
            lossy.enqueue(Instant::ZERO, TestPacket::new(i, 100));
        }
        let rate = lossy.stats().loss_drops as f64 / 40_000.0;
        assert!((rate - 0.25).abs() < 0.01, "{rate}");
    }
}
