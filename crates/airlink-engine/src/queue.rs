//! The event queue of the discrete-event engine.
//!
//! Events are ordered by the key `(time, rank, source, seq)`:
//! - `time`: when the event is due;
//! - `rank`: the event's class (lower runs first at the same time), e.g. packet arrivals
//!   before timer wake-ups, so that a packet and a timeout due together see a fixed order;
//! - `source`: the id of the component that caused the event;
//! - `seq`: the insertion counter, which breaks every remaining tie in FIFO order.
//!
//! The key is a total order, so a run is a pure function of its inputs.
//!
//! The heap holds only compact keys (32 bytes) and the events sit in a slab beside it: a
//! simulator's events carry whole packets (well over 100 bytes), and moving those at every
//! level of every sift cost more than the rest of a packet's handling put together.

use crate::time::Instant;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The total-order key of an event.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EventKey {
    pub time: Instant,
    pub rank: u8,
    pub source: u32,
    pub seq: u64,
}

/// A heap entry: the key with `rank` and `source` packed into one word (`rank` above
/// `source`, so the packed word orders as the pair does), and the event's slab index. The
/// derived order is lexicographic over the fields in this order; `slot` never decides,
/// since `seq` is unique.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct HeapKey {
    time: Instant,
    rank_source: u64,
    seq: u64,
    slot: u32,
}

impl HeapKey {
    fn key(&self) -> EventKey {
        EventKey {
            time: self.time,
            rank: (self.rank_source >> 32) as u8,
            source: self.rank_source as u32,
            seq: self.seq,
        }
    }
}

/// A min-queue of events keyed by [`EventKey`].
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<HeapKey>>,
    /// Event storage, indexed by `HeapKey::slot`; `None` marks a free slot.
    events: Vec<Option<E>>,
    /// Free slots of `events`, reused before the slab grows.
    free: Vec<u32>,
    next_seq: u64,
    /// Time of the last popped event: pushing an event earlier than this is a model bug.
    now: Instant,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::new(), events: Vec::new(), free: Vec::new(), next_seq: 0, now: Instant::ZERO }
    }

    /// Schedules `event` at `time`. Panics if `time` is before the last popped event: a model
    /// that schedules into the past has a causality bug, and silently reordering would hide it.
    pub fn push(&mut self, time: Instant, rank: u8, source: u32, event: E) -> EventKey {
        assert!(time >= self.now, "event scheduled in the past ({time} < {})", self.now);
        let slot = match self.free.pop() {
            Some(slot) => {
                self.events[slot as usize] = Some(event);
                slot
            }
            None => {
                let slot = u32::try_from(self.events.len()).expect("more than 2^32 pending events");
                self.events.push(Some(event));
                slot
            }
        };
        let entry = HeapKey { time, rank_source: (rank as u64) << 32 | source as u64, seq: self.next_seq, slot };
        self.next_seq += 1;
        self.heap.push(Reverse(entry));
        entry.key()
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<(EventKey, E)> {
        let Reverse(entry) = self.heap.pop()?;
        let event = self.events[entry.slot as usize].take().expect("a queued slot holds its event");
        self.free.push(entry.slot);
        self.now = entry.time;
        Some((entry.key(), event))
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(e)| e.time)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Time of the last popped event (the engine's current time).
    pub fn now(&self) -> Instant {
        self.now
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn simultaneous_events_follow_rank_source_then_fifo() {
        let mut q = EventQueue::new();
        let t = Instant::from_millis(1);
        q.push(t, 1, 0, "timer");
        q.push(t, 0, 5, "arrival from 5");
        q.push(t, 0, 2, "arrival from 2 (first)");
        q.push(t, 0, 2, "arrival from 2 (second)");
        q.push(Instant::ZERO, 9, 9, "earlier");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(
            order,
            ["earlier", "arrival from 2 (first)", "arrival from 2 (second)", "arrival from 5", "timer"]
        );
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn scheduling_into_the_past_is_a_bug() {
        let mut q = EventQueue::new();
        q.push(Instant::from_millis(2), 0, 0, ());
        q.pop();
        q.push(Instant::from_millis(1), 0, 0, ());
    }

    proptest! {
        /// Whatever the insertion order, events come out in non-decreasing time, and events
        /// that were pending together come out in key order.
        #[test]
        fn events_never_run_out_of_order(ops in prop::collection::vec((0u64..1000, 0u8..3, 0u32..4, any::<bool>()), 1..400)) {
            let mut q = EventQueue::new();
            let mut last: Option<EventKey> = None;
            for (dt, rank, src, pop) in ops {
                let t = q.now() + crate::Duration::from_nanos(dt);
                q.push(t, rank, src, ());
                if pop {
                    let (k, _) = q.pop().unwrap();
                    if let Some(l) = last { prop_assert!(k.time >= l.time); }
                    last = Some(k);
                }
            }
            while let Some((k, _)) = q.pop() {
                // No pushes any more: the rest drains in strict key order.
                if let Some(l) = last { prop_assert!(k.time >= l.time); }
                last = Some(k);
            }
        }

        /// Under any interleaving of pushes and pops, the queue pops exactly what a plain
        /// reference pops: the least `(time, rank, source, seq)` key among the pending events,
        /// with the event pushed under that key. Ranks, sources and delays are drawn from small
        /// ranges so that ties on time, on (time, rank) and on (time, rank, source) are common;
        /// long runs of pops empty the queue so slots are freed and reused.
        #[test]
        fn pops_match_a_sorted_reference(ops in prop::collection::vec(
            prop_oneof![
                3 => (0u64..50, 0u8..3, prop_oneof![Just(0u32), Just(1), Just(u32::MAX)]).prop_map(Some),
                2 => Just(None),
            ],
            1..600,
        )) {
            let mut q = EventQueue::new();
            let mut reference: Vec<(EventKey, usize)> = Vec::new();
            for (i, op) in ops.into_iter().enumerate() {
                match op {
                    Some((dt, rank, source)) => {
                        let key = q.push(q.now() + crate::Duration::from_nanos(dt), rank, source, i);
                        prop_assert_eq!((key.rank, key.source), (rank, source));
                        reference.push((key, i));
                    }
                    None => {
                        reference.sort_by(|a, b| b.0.cmp(&a.0)); // least key last
                        prop_assert_eq!(q.pop(), reference.pop());
                    }
                }
                prop_assert_eq!(q.len(), reference.len());
                reference.sort_by(|a, b| a.0.cmp(&b.0));
                prop_assert_eq!(q.peek_time(), reference.first().map(|(k, _)| k.time));
            }
            reference.sort_by(|a, b| b.0.cmp(&a.0));
            while let Some(expected) = reference.pop() {
                prop_assert_eq!(q.pop(), Some(expected));
            }
            prop_assert!(q.pop().is_none());
        }
    }
}
