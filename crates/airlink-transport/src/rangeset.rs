//! A set of disjoint byte ranges `[start, end)` over `u64`, kept merged (no two ranges touch).
//!
//! Used for the receiver's reassembly queue and the sender's SACK scoreboard. Every operation is
//! O(log n) plus the number of ranges it merges or removes, so the cost per segment does not
//! grow with the window.

use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Included, Unbounded};

#[derive(Clone, Debug, Default)]
pub(crate) struct RangeSet {
    /// start -> end
    map: BTreeMap<u64, u64>,
    /// Bytes covered.
    total: u64,
}

/// What [`RangeSet::insert`] changed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Inserted {
    /// Bytes newly covered.
    pub added: u64,
    /// Bytes newly covered below the probe position.
    pub added_below: u64,
    /// The (maximal) range that now contains the inserted one.
    pub merged: (u64, u64),
}

/// Bytes of `[s, e)` below `p`.
#[inline]
fn below(s: u64, e: u64, p: u64) -> u64 {
    e.min(p).saturating_sub(s)
}

impl RangeSet {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Number of ranges.
    #[inline]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Bytes covered.
    #[inline]
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn clear(&mut self) {
        self.map.clear();
        self.total = 0;
    }

    pub fn first(&self) -> Option<(u64, u64)> {
        self.map.first_key_value().map(|(&s, &e)| (s, e))
    }

    pub fn last(&self) -> Option<(u64, u64)> {
        self.map.last_key_value().map(|(&s, &e)| (s, e))
    }

    pub fn pop_first(&mut self) -> Option<(u64, u64)> {
        let (s, e) = self.map.pop_first()?;
        self.total -= e - s;
        Some((s, e))
    }

    /// The last range starting at or before `x` (it contains `x` iff its end is above `x`).
    pub fn at_or_before(&self, x: u64) -> Option<(u64, u64)> {
        self.map.range(..=x).next_back().map(|(&s, &e)| (s, e))
    }

    pub fn contains(&self, x: u64) -> bool {
        self.at_or_before(x).is_some_and(|(_, e)| e > x)
    }

    /// Start of the first range starting strictly after `x`.
    pub fn next_start_after(&self, x: u64) -> Option<u64> {
        self.map
            .range((Excluded(x), Unbounded))
            .next()
            .map(|(&s, _)| s)
    }

    /// Ranges starting below `x`, highest first.
    pub fn iter_rev_below(&self, x: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.map.range(..x).rev().map(|(&s, &e)| (s, e))
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, u64)> + '_ {
        self.map.iter().map(|(&s, &e)| (s, e))
    }

    /// Ranges overlapping `[a, b)`, clipped to it.
    pub fn iter_within(&self, a: u64, b: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        let first = self.at_or_before(a).map_or(a, |(s, _)| s);
        self.map
            .range(first..)
            .map(|(&s, &e)| (s, e))
            .take_while(move |&(s, _)| s < b)
            .filter_map(move |(s, e)| {
                let (s, e) = (s.max(a), e.min(b));
                (s < e).then_some((s, e))
            })
    }

    /// Bytes covered within `[a, b)`: O(log n + ranges in it).
    pub fn covered_in(&self, a: u64, b: u64) -> u64 {
        if a >= b {
            return 0;
        }
        self.iter_within(a, b).map(|(s, e)| e - s).sum()
    }

    /// Adds `[start, end)` (empty ranges are ignored) and merges what it touches.
    ///
    /// The common cases touch the map once or twice: a range already covered (a SACK block
    /// repeated in the next ACK) changes nothing; a range extending an existing one updates
    /// that entry in place.
    pub fn insert(&mut self, start: u64, end: u64, probe: u64) -> Inserted {
        if start >= end {
            return Inserted {
                added: 0,
                added_below: 0,
                merged: (start, start),
            };
        }
        // Fastest path: at or above the highest range (in-order arrivals above the holes, the
        // newest SACK block) — no key search needed.
        if let Some(mut last) = self.map.last_entry() {
            let (ls, le) = (*last.key(), *last.get());
            if start >= ls && start <= le {
                if end <= le {
                    return Inserted {
                        added: 0,
                        added_below: 0,
                        merged: (ls, le),
                    };
                }
                *last.get_mut() = end;
                let added = end - le;
                self.total += added;
                return Inserted {
                    added,
                    added_below: below(le, end, probe),
                    merged: (ls, end),
                };
            }
            if start > le {
                self.map.insert(start, end);
                self.total += end - start;
                return Inserted {
                    added: end - start,
                    added_below: below(start, end, probe),
                    merged: (start, end),
                };
            }
        }
        let pred = self.at_or_before(start).filter(|&(_, e)| e >= start);
        if let Some((s, e)) = pred {
            if e >= end {
                return Inserted {
                    added: 0,
                    added_below: 0,
                    merged: (s, e),
                };
            }
        }
        // The merged range keeps the predecessor's key if it touches, else starts at `start`.
        let (ms, mut me) = pred.map_or((start, end), |(s, e)| (s, e.max(end)));
        let (mut absorbed, mut absorbed_below) =
            pred.map_or((0, 0), |(s, e)| (e - s, below(s, e, probe)));
        // Every other range starting inside (ms, me] overlaps or touches the new one.
        while let Some((&s, &e)) = self.map.range((Excluded(ms), Included(me))).next() {
            me = me.max(e);
            absorbed += e - s;
            absorbed_below += below(s, e, probe);
            self.map.remove(&s);
        }
        match self.map.get_mut(&ms) {
            Some(v) => *v = me,
            None => {
                self.map.insert(ms, me);
            }
        }
        let added = (me - ms) - absorbed;
        self.total += added;
        Inserted {
            added,
            added_below: below(ms, me, probe) - absorbed_below,
            merged: (ms, me),
        }
    }

    /// Removes everything below `x`; returns the bytes removed.
    pub fn remove_below(&mut self, x: u64) -> u64 {
        let mut removed = 0;
        while let Some((&s, &e)) = self.map.first_key_value() {
            if s >= x {
                break;
            }
            self.map.pop_first();
            if e > x {
                self.map.insert(x, e);
                removed += x - s;
                break;
            }
            removed += e - s;
        }
        self.total -= removed;
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn merges_overlapping_and_touching_ranges() {
        let mut r = RangeSet::new();
        assert_eq!(r.insert(10, 20, 0).added, 10);
        assert_eq!(r.insert(30, 40, 0).added, 10);
        let ins = r.insert(20, 30, 25);
        assert_eq!(
            ins,
            Inserted {
                added: 10,
                added_below: 5,
                merged: (10, 40)
            }
        );
        assert_eq!(r.len(), 1);
        assert_eq!(r.insert(5, 50, 100).added, 15);
        assert_eq!(r.total(), 45);
        assert_eq!(r.remove_below(20), 15);
        assert_eq!(r.first(), Some((20, 50)));
        assert_eq!(r.covered_in(0, 25), 5);
        assert!(r.contains(49) && !r.contains(50));
    }

    proptest! {
        /// The set agrees with a bitmap under any sequence of inserts and front removals.
        #[test]
        fn agrees_with_a_bitmap(ops in prop::collection::vec((0u64..200, 1u64..30, any::<bool>()), 1..60),
                                probe in 0u64..230) {
            let mut r = RangeSet::new();
            let mut bits = [false; 256];
            for (s, l, remove) in ops {
                if remove {
                    let removed = r.remove_below(s);
                    let expect = bits[..s as usize].iter().filter(|&&b| b).count() as u64;
                    prop_assert_eq!(removed, expect);
                    bits[..s as usize].iter_mut().for_each(|b| *b = false);
                } else {
                    let e = s + l;
                    let ins = r.insert(s, e, probe);
                    let new = (s..e).filter(|&i| !bits[i as usize]).count() as u64;
                    let new_below = (s..e.min(probe)).filter(|&i| !bits[i as usize]).count() as u64;
                    prop_assert_eq!(ins.added, new);
                    prop_assert_eq!(ins.added_below, new_below);
                    (s..e).for_each(|i| bits[i as usize] = true);
                }
                prop_assert_eq!(r.total(), bits.iter().filter(|&&b| b).count() as u64);
                // Ranges are disjoint, non-touching and exactly the set bits.
                let mut prev_end = None;
                for (s, e) in r.iter() {
                    prop_assert!(s < e);
                    if let Some(p) = prev_end { prop_assert!(s > p); }
                    prev_end = Some(e);
                    prop_assert!((s..e).all(|i| bits[i as usize]));
                }
                prop_assert_eq!(r.covered_in(probe / 2, probe), bits[(probe / 2) as usize..probe as usize].iter().filter(|&&b| b).count() as u64);
            }
        }
    }
}
