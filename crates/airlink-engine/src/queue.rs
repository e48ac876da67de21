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
//! How it is stored (none of this changes the order): events wait in FIFO *lanes*, each
//! holding events of one `(rank, source)` pair. An event whose time is not before the last
//! one in its pair's lane is appended there, so the lane stays sorted by key (same rank and
//! source, non-decreasing time, increasing seq) and only its first event needs a place in the
//! heap. A link delivers its packets in time order, so the thousands of packets in flight in
//! a simulation wait in a few lanes, written and read in sequence, and the heap holds about
//! one small key per component. The lanes are a fixed table probed from a hash of the pair
//! (no map, no allocation per pair); an event that finds neither a lane of its pair's nor an
//! empty one, or that would break its lane's order (a timer moved earlier), waits in a slab
//! with its own key in the heap. Before, whole events sat in the heap: a simulator's events
//! carry packets of well over 100 bytes, and moving those at every level of every sift cost
//! more than the rest of a packet's handling.

use crate::time::Instant;
use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};

/// The total-order key of an event.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EventKey {
    pub time: Instant,
    pub rank: u8,
    pub source: u32,
    pub seq: u64,
}

/// A heap entry: the key with `rank` and `source` packed into one word (`rank` above
/// `source`, so the packed word orders as the pair does), and where the event waits: at the
/// front of lane `at`, or in slab slot `at`. The derived order is lexicographic over the
/// fields in this order; `at` and `in_lane` never decide, since `seq` is unique.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct HeapKey {
    time: Instant,
    rank_source: u64,
    seq: u64,
    at: u32,
    in_lane: bool,
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

/// Events of the `(rank, source)` pair `owner`, in key order, with their times and seqs; the
/// first one's key is in the heap. A lane changes owner only when empty. `last` is the time of
/// the last event appended, kept here so that probing a lane does not touch its events.
struct Lane<E> {
    owner: u64,
    last: Instant,
    events: VecDeque<(Instant, u64, E)>,
}

/// Number of lanes (a power of two), and how many an event may look at, from its pair's
/// hash on, for one its pair owns or an empty one. A simulation has a few pairs per link and
/// flow; events that find no lane are still ordered right, through the slab.
const LANES: usize = 1024;
const PROBES: usize = 4;

/// The first lane of a packed `(rank, source)` word: the top bits of a multiplicative
/// (Fibonacci) hash, which spreads small consecutive ids.
fn lane_index(rank_source: u64) -> usize {
    (rank_source.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - LANES.trailing_zeros())) as usize
}

/// A min-queue of events keyed by [`EventKey`].
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<HeapKey>>,
    lanes: Box<[Lane<E>]>,
    /// Events out of their lane, indexed by `HeapKey::at`; `None` marks a free slot.
    slab: Vec<Option<E>>,
    /// Free slots of `slab`, reused before it grows.
    free: Vec<u32>,
    len: usize,
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
        EventQueue {
            heap: BinaryHeap::new(),
            lanes: (0..LANES)
                .map(|_| Lane {
                    owner: 0,
                    last: Instant::ZERO,
                    events: VecDeque::new(),
                })
                .collect(),
            slab: Vec::new(),
            free: Vec::new(),
            len: 0,
            next_seq: 0,
            now: Instant::ZERO,
        }
    }

    /// Schedules `event` at `time`. Panics if `time` is before the last popped event: a model
    /// that schedules into the past has a causality bug, and silently reordering would hide it.
    pub fn push(&mut self, time: Instant, rank: u8, source: u32, event: E) -> EventKey {
        assert!(
            time >= self.now,
            "event scheduled in the past ({time} < {})",
            self.now
        );
        let rank_source = (rank as u64) << 32 | source as u64;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.len += 1;
        // A lane this pair owns decides (append, or the slab if out of order); else the
        // first empty lane is taken.
        let mut lane_at = None;
        for at in (lane_index(rank_source)..).take(PROBES).map(|i| i % LANES) {
            let lane = &mut self.lanes[at];
            if lane.events.is_empty() {
                lane.owner = rank_source;
                lane_at = Some(at);
                break;
            }
            if lane.owner == rank_source {
                lane_at = (time >= lane.last).then_some(at);
                break;
            }
        }
        let entry = match lane_at {
            Some(at) => {
                let lane = &mut self.lanes[at];
                lane.last = time;
                lane.events.push_back((time, seq, event));
                let entry = HeapKey {
                    time,
                    rank_source,
                    seq,
                    at: at as u32,
                    in_lane: true,
                };
                // Only a lane's first event has its key in the heap.
                if lane.events.len() == 1 {
                    self.heap.push(Reverse(entry));
                }
                entry
            }
            None => {
                let slot = match self.free.pop() {
                    Some(slot) => {
                        self.slab[slot as usize] = Some(event);
                        slot
                    }
                    None => {
                        self.slab.push(Some(event));
                        u32::try_from(self.slab.len() - 1).expect("fewer than 2^32 pending events")
                    }
                };
                let entry = HeapKey {
                    time,
                    rank_source,
                    seq,
                    at: slot,
                    in_lane: false,
                };
                self.heap.push(Reverse(entry));
                entry
            }
        };
        entry.key()
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<(EventKey, E)> {
        let mut top = self.heap.peek_mut()?;
        let Reverse(entry) = *top;
        let event = if entry.in_lane {
            let lane = &mut self.lanes[entry.at as usize].events;
            let (_, _, event) = lane.pop_front().expect("a lane in the heap is not empty");
            match lane.front() {
                // The lane's next event takes its place: one sift instead of a pop and a push.
                Some(&(time, seq, _)) => *top = Reverse(HeapKey { time, seq, ..entry }),
                None => {
                    PeekMut::pop(top);
                }
            }
            event
        } else {
            PeekMut::pop(top);
            self.free.push(entry.at);
            self.slab[entry.at as usize]
                .take()
                .expect("a queued slot holds its event")
        };
        self.len -= 1;
        self.now = entry.time;
        Some((entry.key(), event))
    }

    /// Key of the earliest pending event.
    pub fn peek_key(&self) -> Option<EventKey> {
        self.heap.peek().map(|Reverse(e)| e.key())
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(e)| e.time)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
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
            [
                "earlier",
                "arrival from 2 (first)",
                "arrival from 2 (second)",
                "arrival from 5",
                "timer"
            ]
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
        /// ranges so that ties on time, on (time, rank) and on (time, rank, source) are common,
        /// plus sources from a range wider than the lane table so that pairs share lanes;
        /// long runs of pops empty the queue so lanes change owner and slots are reused.
        #[test]
        fn pops_match_a_sorted_reference(ops in prop::collection::vec(
            prop_oneof![
                3 => (0u64..50, 0u8..3, prop_oneof![Just(0u32), Just(1), Just(u32::MAX), 0..4 * LANES as u32]).prop_map(Some),
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
                        reference.sort_by_key(|a| std::cmp::Reverse(a.0)); // least key last
                        prop_assert_eq!(q.pop(), reference.pop());
                    }
                }
                prop_assert_eq!(q.len(), reference.len());
                reference.sort_by_key(|a| a.0);
                prop_assert_eq!(q.peek_time(), reference.first().map(|(k, _)| k.time));
            }
            reference.sort_by_key(|a| std::cmp::Reverse(a.0));
            while let Some(expected) = reference.pop() {
                prop_assert_eq!(q.pop(), Some(expected));
            }
            prop_assert!(q.pop().is_none());
        }
    }
}
