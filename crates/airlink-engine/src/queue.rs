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

use crate::time::Instant;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// The total-order key of an event.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EventKey {
    pub time: Instant,
    pub rank: u8,
    pub source: u32,
    pub seq: u64,
}

struct Entry<E> {
    key: EventKey,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.cmp(&other.key)
    }
}

/// A min-queue of events keyed by [`EventKey`].
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
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
        EventQueue { heap: BinaryHeap::new(), next_seq: 0, now: Instant::ZERO }
    }

    /// Schedules `event` at `time`. Panics if `time` is before the last popped event: a model
    /// that schedules into the past has a causality bug, and silently reordering would hide it.
    pub fn push(&mut self, time: Instant, rank: u8, source: u32, event: E) -> EventKey {
        assert!(time >= self.now, "event scheduled in the past ({time} < {})", self.now);
        let key = EventKey { time, rank, source, seq: self.next_seq };
        self.next_seq += 1;
        self.heap.push(Reverse(Entry { key, event }));
        key
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<(EventKey, E)> {
        let Reverse(Entry { key, event }) = self.heap.pop()?;
        self.now = key.time;
        Some((key, event))
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(e)| e.key.time)
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
    }
}
