//! Drop-tail: a FIFO that refuses an arriving packet that would take it over its limit.
//!
//! | aspect | here | Linux (`pfifo`/`bfifo`) |
//! |---|---|---|
//! | limit | the link's `queue`, in packets or bytes | `limit` in packets (`pfifo`) or bytes (`bfifo`) |
//! | what it counts | packets waiting, not the one being sent | the same |
//!
//! A link without an `aqm` key keeps its own built-in drop-tail (for the pipe the limit counts
//! the packet on the wire too, as Dummynet/netem do); `aqm = "droptail"` is this one, the
//! baseline the other disciplines are compared with.

use super::{Discipline, Ledger, QueueDrop, Queued};
use crate::Packet;
use airlink_engine::Instant;
use std::collections::VecDeque;

pub struct DropTail<P> {
    fifo: VecDeque<Queued<P>>,
}

impl<P> DropTail<P> {
    pub fn new() -> Self {
        DropTail {
            fifo: VecDeque::new(),
        }
    }
}

impl<P> Default for DropTail<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: Packet + Send> Discipline<P> for DropTail<P> {
    fn enqueue(&mut self, _now: Instant, item: Queued<P>, ledger: &mut Ledger<P>) {
        if ledger.over_limit() {
            ledger.drop(item, QueueDrop::Overflow);
        } else {
            self.fifo.push_back(item);
        }
    }

    fn dequeue(&mut self, _now: Instant, _ledger: &mut Ledger<P>) -> Option<Queued<P>> {
        self.fifo.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::queue;
    use super::super::*;
    use crate::testing::TestPacket;

    #[test]
    fn refuses_what_exceeds_the_limit_and_keeps_the_order() {
        let mut q = queue(AqmConfig::DropTail, QueueLimit::Bytes(2500));
        for i in 0..3 {
            q.enqueue(Instant::ZERO, TestPacket::new(i, 1000));
        }
        assert_eq!(
            q.poll_drop().map(|(p, r)| (p.id, r)),
            Some((2, QueueDrop::Overflow))
        );
        q.enqueue(Instant::ZERO, TestPacket::new(3, 500));
        let ids: Vec<u32> = std::iter::from_fn(|| q.dequeue(Instant::ZERO))
            .map(|(p, _)| p.id)
            .collect();
        assert_eq!(ids, [0, 1, 3]);
    }
}
