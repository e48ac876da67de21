//! Queue disciplines: what a link's queue keeps, drops or marks, and in which order it hands
//! packets to the link's transmitter.
//!
//! [`QueueDisc`] is the one home of a queue's accounting (packets and bytes held, drops and
//! marks by reason, the sojourn time of each packet it hands out); a [`Discipline`] is only
//! its rule, one file each, as ns-3's `QueueDisc` base class and its subclasses:
//!
//! | kind | file | reference |
//! |---|---|---|
//! | `droptail` | [`droptail`] | a FIFO that refuses what exceeds its limit |
//! | `codel` | [`codel`] | RFC 8289 |
//! | `fq_codel` | [`fq_codel`] | RFC 8290 |
//! | `pie` | [`pie`] | RFC 8033 |
//! | `red` | [`red`] | Floyd & Jacobson 1993; gentle mode, Floyd 2000 |
//!
//! The contract between the two: [`QueueDisc`] counts a packet in when it hands it to
//! [`Discipline::enqueue`] and out when [`Discipline::dequeue`] returns it or when the
//! discipline gives it to [`Ledger::drop`]; a discipline never loses a packet any other way, so
//! the counts are right by construction. Time is an argument of every call; the disciplines
//! that draw (PIE, RED, FQ-CoDel's hash perturbation) own a named stream. Nothing in the
//! per-packet path allocates once the queues have grown to their working size.

pub mod codel;
pub mod droptail;
pub mod fq_codel;
pub mod pie;
pub mod red;
mod sojourn;

pub use codel::{Codel, CodelParams};
pub use droptail::DropTail;
pub use fq_codel::{FqCodel, FqCodelParams};
pub use pie::{Pie, PieParams};
pub use red::{Red, RedParams};
pub use sojourn::SojournHistogram;

use crate::{Packet, QueueLimit};
use airlink_engine::{Duration, Instant, RngStream};
use std::collections::VecDeque;

/// A packet in a queue, with the instant it entered.
#[derive(Clone, Debug)]
pub struct Queued<P> {
    pub pkt: P,
    pub enqueued: Instant,
}

/// Why a queue discipline let go of a packet it did not hand to the transmitter.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QueueDrop {
    /// The queue was over its limit.
    Overflow,
    /// The discipline's rule dropped it (CoDel's control law, PIE's or RED's probability).
    Aqm,
}

/// Which discipline, with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum AqmConfig {
    DropTail,
    Codel(CodelParams),
    FqCodel(FqCodelParams),
    Pie(PieParams),
    Red(RedParams),
}

impl AqmConfig {
    /// The name used in scenarios and results.
    pub fn kind(&self) -> &'static str {
        match self {
            AqmConfig::DropTail => "droptail",
            AqmConfig::Codel(_) => "codel",
            AqmConfig::FqCodel(_) => "fq_codel",
            AqmConfig::Pie(_) => "pie",
            AqmConfig::Red(_) => "red",
        }
    }
}

/// A queue's counters, for the results.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueStats {
    /// The discipline's kind.
    pub kind: &'static str,
    pub overflow_drops: u64,
    pub aqm_drops: u64,
    /// ECT packets marked CE instead of dropped.
    pub aqm_marks: u64,
    /// Time from enqueue to dequeue of every packet handed to the transmitter.
    pub sojourn: SojournHistogram,
}

/// The queue's accounting, handed to the discipline on every call: the backlog, the limit, and
/// the drops and marks it records.
pub struct Ledger<P> {
    pub limit: QueueLimit,
    packets: u32,
    bytes: u64,
    /// The largest packet seen (CoDel's MAXPACKET, as Linux's `maxpacket`).
    max_packet: u32,
    /// Drops not yet collected by the link: (packet, reason).
    dropped: VecDeque<(P, QueueDrop)>,
    stats: QueueStats,
}

impl<P: Packet> Ledger<P> {
    /// Packets held (the one being counted in included).
    pub fn packets(&self) -> u32 {
        self.packets
    }
    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn max_packet(&self) -> u32 {
        self.max_packet
    }
    /// True when the backlog exceeds the limit.
    pub fn over_limit(&self) -> bool {
        match self.limit {
            QueueLimit::Packets(n) => self.packets > n,
            QueueLimit::Bytes(b) => self.bytes > b,
        }
    }
    /// Lets go of a packet the discipline held (or was offered).
    pub fn drop(&mut self, item: Queued<P>, reason: QueueDrop) {
        self.packets -= 1;
        self.bytes -= item.pkt.wire_len() as u64;
        match reason {
            QueueDrop::Overflow => self.stats.overflow_drops += 1,
            QueueDrop::Aqm => self.stats.aqm_drops += 1,
        }
        self.dropped.push_back((item.pkt, reason));
    }
    /// Marks the packet Congestion Experienced if it is ECN-capable; false (nothing changed)
    /// if it is not, so the caller drops it instead.
    pub fn mark(&mut self, item: &mut Queued<P>) -> bool {
        if !item.pkt.ecn().is_ect() {
            return false;
        }
        item.pkt.set_ce();
        self.stats.aqm_marks += 1;
        true
    }
}

/// A queue discipline's rule; see the module documentation for the contract.
pub trait Discipline<P: Packet>: Send {
    /// Takes a packet arriving at `now` (already counted in `ledger`): keeps it, or gives it
    /// (or another) to [`Ledger::drop`].
    fn enqueue(&mut self, now: Instant, item: Queued<P>, ledger: &mut Ledger<P>);
    /// The next packet for the transmitter at `now`, if any (dropping on the way as the rule
    /// says). The returned packet is still counted in `ledger`; [`QueueDisc`] counts it out.
    fn dequeue(&mut self, now: Instant, ledger: &mut Ledger<P>) -> Option<Queued<P>>;
}

/// A link's queue: a discipline behind one accounting.
pub struct QueueDisc<P> {
    discipline: Box<dyn Discipline<P>>,
    ledger: Ledger<P>,
}

impl<P: Packet + Send + 'static> QueueDisc<P> {
    /// A queue of `config`'s kind holding at most `limit`; `rng` is the queue's named stream
    /// (drawn from by PIE, RED and FQ-CoDel's perturbation only); `rate_bps` is the link's
    /// (mean) rate, for RED's idle-time decay.
    pub fn new(
        config: &AqmConfig,
        limit: QueueLimit,
        rate_bps: Option<u64>,
        rng: RngStream,
    ) -> Self {
        let discipline: Box<dyn Discipline<P>> = match config {
            AqmConfig::DropTail => Box::new(DropTail::new()),
            AqmConfig::Codel(p) => Box::new(Codel::new(p.clone())),
            AqmConfig::FqCodel(p) => Box::new(FqCodel::new(p.clone(), rng)),
            AqmConfig::Pie(p) => Box::new(Pie::new(p.clone(), rng)),
            AqmConfig::Red(p) => Box::new(Red::new(p.clone(), rate_bps, rng)),
        };
        QueueDisc {
            discipline,
            ledger: Ledger {
                limit,
                packets: 0,
                bytes: 0,
                max_packet: 0,
                dropped: VecDeque::new(),
                stats: QueueStats {
                    kind: config.kind(),
                    ..Default::default()
                },
            },
        }
    }
}

impl<P: Packet> QueueDisc<P> {
    pub fn enqueue(&mut self, now: Instant, pkt: P) {
        let len = pkt.wire_len();
        self.ledger.packets += 1;
        self.ledger.bytes += len as u64;
        self.ledger.max_packet = self.ledger.max_packet.max(len);
        self.discipline
            .enqueue(now, Queued { pkt, enqueued: now }, &mut self.ledger);
    }

    /// The next packet to transmit at `now`, with the time it waited.
    pub fn dequeue(&mut self, now: Instant) -> Option<(P, Duration)> {
        let item = self.discipline.dequeue(now, &mut self.ledger)?;
        self.ledger.packets -= 1;
        self.ledger.bytes -= item.pkt.wire_len() as u64;
        let sojourn = now.saturating_since(item.enqueued);
        self.ledger.stats.sojourn.record(sojourn);
        Some((item.pkt, sojourn))
    }

    /// A packet the queue dropped since the last call, with why.
    pub fn poll_drop(&mut self) -> Option<(P, QueueDrop)> {
        self.ledger.dropped.pop_front()
    }

    /// Hands the drops since the last call to a link's counters and event log, at `at`.
    pub fn report_drops(
        &mut self,
        at: Instant,
        stats: &mut crate::LinkStats,
        events: &mut VecDeque<crate::LinkEvent>,
    ) {
        while let Some((pkt, why)) = self.ledger.dropped.pop_front() {
            let reason = match why {
                QueueDrop::Overflow => crate::DropReason::Queue,
                QueueDrop::Aqm => crate::DropReason::Aqm,
            };
            stats.record_drop(events, at, pkt.flow(), pkt.wire_len(), reason);
        }
    }

    pub fn packets(&self) -> u32 {
        self.ledger.packets
    }
    pub fn bytes(&self) -> u64 {
        self.ledger.bytes
    }
    pub fn is_empty(&self) -> bool {
        self.ledger.packets == 0
    }
    pub fn set_limit(&mut self, limit: QueueLimit) {
        self.ledger.limit = limit;
    }
    pub fn stats(&self) -> &QueueStats {
        &self.ledger.stats
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::testing::TestPacket;

    pub fn queue(config: AqmConfig, limit: QueueLimit) -> QueueDisc<TestPacket> {
        QueueDisc::new(
            &config,
            limit,
            Some(10_000_000),
            RngStream::derive(1, "queue"),
        )
    }

    /// Every discipline keeps the books: what went in is what came out plus what it dropped.
    #[test]
    fn every_discipline_accounts_for_every_packet() {
        let configs = [
            AqmConfig::DropTail,
            AqmConfig::Codel(CodelParams::default()),
            AqmConfig::FqCodel(FqCodelParams::default()),
            AqmConfig::Pie(PieParams::default()),
            AqmConfig::Red(RedParams::default()),
        ];
        for config in configs {
            let mut q = queue(config.clone(), QueueLimit::Packets(50));
            let (mut out, mut dropped) = (0u64, 0u64);
            let mut t = Instant::ZERO;
            // Two packets in per packet out: a standing overload.
            for i in 0..20_000u32 {
                let mut p = TestPacket::new(i, 500 + (i % 7) * 100);
                p.flow = i % 5;
                q.enqueue(t, p);
                if i % 2 == 0 && q.dequeue(t).is_some() {
                    out += 1;
                }
                while q.poll_drop().is_some() {
                    dropped += 1;
                }
                t += Duration::from_micros(700);
            }
            assert_eq!(out + dropped + q.packets() as u64, 20_000, "{config:?}");
            let s = q.stats();
            assert_eq!(s.overflow_drops + s.aqm_drops, dropped, "{config:?}");
            assert_eq!(s.sojourn.count(), out);
            assert!(q.packets() <= 50, "{config:?}");
            let held: u64 = std::iter::from_fn(|| q.dequeue(t))
                .map(|(p, _)| p.len as u64)
                .sum();
            assert_eq!(q.bytes(), 0);
            assert!(held > 0 || q.packets() == 0);
        }
    }
}
