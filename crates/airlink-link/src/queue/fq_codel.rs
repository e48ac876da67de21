//! FQ-CoDel (RFC 8290): packets hashed by their 5-tuple into `flows` queues, each under its
//! own CoDel, served by deficit round robin with a quantum of bytes, new (sparse) flows before
//! old ones.
//!
//! - Enqueue (§4.1): the packet joins its queue; a queue that was not in either list joins the
//!   tail of the new list with a deficit of one quantum. Over the limit, packets are dropped
//!   from the head of the queue with the most bytes ("fattest"), until half of its bytes or
//!   `drop_batch` packets are gone (Linux's `fq_codel_drop`).
//! - Dequeue (§4.2): the head queue of the new list, else of the old list. A queue whose
//!   deficit is spent gets another quantum and moves to the tail of the old list; otherwise
//!   CoDel dequeues from it and its deficit pays for the packet. A queue that CoDel leaves
//!   empty moves from the new list to the old list's tail (when the old list is not empty,
//!   so that a flow cannot stay "new" by emptying itself) or leaves the lists.
//!
//! | aspect | here | Linux (`sch_fq_codel`) |
//! |---|---|---|
//! | flow hash | the packet's 5-tuple hash mixed with a seed drawn from the queue's named stream, scaled to `flows` | `skb_get_hash` (jhash of the 5-tuple with a boot-time random seed), `reciprocal_scale` |
//! | per-flow CoDel | [`super::codel`]: exact `interval/√count`, MAXPACKET = largest packet seen | Newton's fixed-point √, device MTU |
//! | limit | the link's `queue` (packets or bytes) | `limit` 10240 packets, and `memory_limit` 32 MB |
//! | classifiers, `ce_threshold` | absent | tc filters, CE marking above a sojourn threshold |
//! | defaults | flows 1024, quantum 1514 B, target 5 ms, interval 100 ms, ecn on, drop_batch 64 | the same |

use super::codel::{codel_dequeue, CodelParams, CodelVars};
use super::{Discipline, Ledger, QueueDrop, Queued};
use crate::Packet;
use airlink_engine::{Instant, RngStream};
use std::collections::VecDeque;

/// FQ-CoDel's parameters (RFC 8290 §5; Linux's defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct FqCodelParams {
    /// Number of flow queues. Default 1024.
    pub flows: u32,
    /// Bytes a queue may send per round. Default 1514 (an Ethernet frame).
    pub quantum: u32,
    /// Each queue's CoDel (target 5 ms, interval 100 ms, ECN on by default, as Linux's).
    pub codel: CodelParams,
    /// Most packets dropped from the fattest queue at one overflow. Default 64.
    pub drop_batch: u32,
}

impl Default for FqCodelParams {
    fn default() -> Self {
        FqCodelParams {
            flows: 1024,
            quantum: 1514,
            codel: CodelParams {
                ecn: true,
                ..CodelParams::default()
            },
            drop_batch: 64,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum List {
    New,
    Old,
}

struct FlowQueue<P> {
    packets: VecDeque<Queued<P>>,
    bytes: u64,
    deficit: i64,
    codel: CodelVars,
    list: Option<List>,
}

pub struct FqCodel<P> {
    params: FqCodelParams,
    perturbation: u64,
    queues: Vec<FlowQueue<P>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
}

/// A 64-bit finaliser (SplitMix64's): every input bit affects every output bit.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl<P> FqCodel<P> {
    pub fn new(params: FqCodelParams, mut rng: RngStream) -> Self {
        assert!(params.flows > 0 && params.quantum > 0);
        let queues = (0..params.flows)
            .map(|_| FlowQueue {
                packets: VecDeque::new(),
                bytes: 0,
                deficit: 0,
                codel: CodelVars::default(),
                list: None,
            })
            .collect();
        FqCodel {
            perturbation: rng.next_u64(),
            params,
            queues,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
        }
    }

    /// The queue a packet with this 5-tuple hash goes to.
    pub fn classify(&self, flow_hash: u32) -> u32 {
        let h = (mix(flow_hash as u64 ^ self.perturbation) >> 32) as u32;
        // Linux's reciprocal_scale: the hash's position in [0, 2^32) scaled to [0, flows).
        ((h as u64 * self.params.flows as u64) >> 32) as u32
    }

    fn list(&mut self, l: List) -> &mut VecDeque<u32> {
        match l {
            List::New => &mut self.new_flows,
            List::Old => &mut self.old_flows,
        }
    }

    /// The queue holding the most bytes (the lowest index among equals, as Linux's scan).
    fn fattest(&self) -> usize {
        let mut best = 0;
        for (i, q) in self.queues.iter().enumerate() {
            if q.bytes > self.queues[best].bytes {
                best = i;
            }
        }
        best
    }
}

impl<P: Packet + Send> Discipline<P> for FqCodel<P> {
    fn enqueue(&mut self, _now: Instant, item: Queued<P>, ledger: &mut Ledger<P>) {
        let idx = self.classify(item.pkt.flow_hash());
        let quantum = self.params.quantum as i64;
        let q = &mut self.queues[idx as usize];
        q.bytes += item.pkt.wire_len() as u64;
        q.packets.push_back(item);
        if q.list.is_none() {
            q.list = Some(List::New);
            q.deficit = quantum;
            self.new_flows.push_back(idx);
        }
        if !ledger.over_limit() {
            return;
        }
        let fat = self.fattest();
        let q = &mut self.queues[fat];
        let threshold = q.bytes / 2;
        let (mut dropped_bytes, mut dropped) = (0u64, 0u32);
        while let Some(head) = q.packets.pop_front() {
            let len = head.pkt.wire_len() as u64;
            q.bytes -= len;
            dropped_bytes += len;
            dropped += 1;
            ledger.drop(head, QueueDrop::Overflow);
            if dropped >= self.params.drop_batch || dropped_bytes >= threshold {
                break;
            }
        }
    }

    fn dequeue(&mut self, now: Instant, ledger: &mut Ledger<P>) -> Option<Queued<P>> {
        loop {
            let (list, idx) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (List::New, i),
                (None, Some(&i)) => (List::Old, i),
                (None, None) => return None,
            };
            let quantum = self.params.quantum as i64;
            let q = &mut self.queues[idx as usize];
            if q.deficit <= 0 {
                q.deficit += quantum;
                q.list = Some(List::Old);
                self.list(list).pop_front();
                self.old_flows.push_back(idx);
                continue;
            }
            let FlowQueue {
                packets,
                bytes,
                codel,
                ..
            } = q;
            let item = codel_dequeue(codel, &self.params.codel, now, ledger, || {
                let it = packets.pop_front();
                if let Some(it) = &it {
                    *bytes -= it.pkt.wire_len() as u64;
                }
                it
            });
            match item {
                Some(item) => {
                    q.deficit -= item.pkt.wire_len() as i64;
                    return Some(item);
                }
                None => {
                    self.list(list).pop_front();
                    if list == List::New && !self.old_flows.is_empty() {
                        self.queues[idx as usize].list = Some(List::Old);
                        self.old_flows.push_back(idx);
                    } else {
                        self.queues[idx as usize].list = None;
                    }
                }
            }
        }
    }
}

/// The longest a sparse flow's packet waits behind `bulk` backlogged flows: each may send one
/// quantum, overrun by up to one packet less a byte, before it (RFC 8290 §1.3), for the tests.
#[cfg(test)]
fn round_time(bulk: u32, quantum: u32, packet: u32, rate_bps: u64) -> airlink_engine::Duration {
    airlink_engine::Duration::for_bits(bulk as u64 * (quantum + packet - 1) as u64 * 8, rate_bps)
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;
    use crate::testing::TestPacket;
    use airlink_engine::Duration;

    fn fq(limit: QueueLimit) -> (QueueDisc<TestPacket>, FqCodel<TestPacket>) {
        let rng = RngStream::derive(1, "queue");
        let p = FqCodelParams::default();
        (
            QueueDisc::new(&AqmConfig::FqCodel(p.clone()), limit, None, rng.clone()),
            FqCodel::new(p, rng),
        )
    }

    fn pkt(id: u32, flow: u32, len: u32) -> TestPacket {
        let mut p = TestPacket::new(id, len);
        p.flow = flow;
        p
    }

    fn order(q: &mut QueueDisc<TestPacket>, now: Instant, n: usize) -> Vec<u32> {
        (0..n)
            .filter_map(|_| q.dequeue(now))
            .map(|(p, _)| p.flow)
            .collect()
    }

    /// RFC 8290 §4.2: a new flow is served before the old ones, for one quantum; a flow that
    /// spends its quantum goes to the tail of the old list.
    #[test]
    fn new_flows_first_then_round_robin_by_quantum() {
        let (mut q, classes) = fq(QueueLimit::Packets(1000));
        let distinct: std::collections::BTreeSet<u32> = (0..3)
            .map(|f| classes.classify(pkt(0, f, 1).flow_hash()))
            .collect();
        assert_eq!(distinct.len(), 3, "the test's flows share a queue");
        let t = Instant::ZERO;
        for i in 0..6 {
            q.enqueue(t, pkt(i, 0, 1000));
            q.enqueue(t, pkt(i, 1, 1000));
        }
        // Both new with a quantum of 1514 B: two 1000-B packets each (the deficit goes negative
        // on the second), flow 0 first.
        assert_eq!(order(&mut q, t, 4), [0, 0, 1, 1]);
        // Both now old; a sparse packet of flow 2 arrives: it goes first.
        q.enqueue(t, pkt(9, 2, 100));
        assert_eq!(order(&mut q, t, 5), [2, 0, 0, 1, 1]);
        // Flow 2 emptied in the new list while old flows waited: it moved to the old list's
        // tail (old = 1, 2, 0, flow 1's deficit spent), so a second packet of it waits its turn
        // there: flow 1 gets a quantum and goes behind, flow 2 sends, then flow 0 and flow 1.
        q.enqueue(t, pkt(10, 2, 100));
        assert_eq!(order(&mut q, t, 3), [2, 0, 1]);
    }

    /// A flow whose queue emptied and left both lists comes back as new (sparse-flow priority).
    #[test]
    fn a_flow_that_left_the_lists_returns_as_new() {
        let (mut q, _) = fq(QueueLimit::Packets(1000));
        let t = Instant::ZERO;
        q.enqueue(t, pkt(0, 2, 100));
        assert_eq!(order(&mut q, t, 2), [2]);
        for i in 0..4 {
            q.enqueue(t, pkt(i, 0, 1500));
        }
        assert_eq!(order(&mut q, t, 1), [0]);
        q.enqueue(t, pkt(5, 2, 100));
        // Flow 0 is still new with deficit 14 > 0, so it sends once more; then flow 2.
        assert_eq!(order(&mut q, t, 3), [0, 2, 0]);
    }

    #[test]
    fn overflow_drops_from_the_fattest_queue() {
        let (mut q, _) = fq(QueueLimit::Packets(20));
        let t = Instant::ZERO;
        for i in 0..18 {
            q.enqueue(t, pkt(i, 0, 1000));
        }
        q.enqueue(t, pkt(100, 1, 100));
        q.enqueue(t, pkt(101, 1, 100));
        // The 21st packet (flow 1's third) overflows: flow 0 (18 kB) loses half its bytes from its head.
        q.enqueue(t, pkt(102, 1, 100));
        let dropped: Vec<(u32, u32)> = std::iter::from_fn(|| q.poll_drop())
            .map(|(p, _)| (p.flow, p.id))
            .collect();
        assert_eq!(dropped, (0..9).map(|i| (0, i)).collect::<Vec<_>>());
        assert_eq!(q.packets(), 12);
        assert_eq!(q.stats().overflow_drops, 9);
    }

    /// A sparse flow's packets wait at most about one round of the bulk flows' quanta, however
    /// long the bulk flows' own queues are.
    #[test]
    fn a_sparse_flow_is_isolated_from_bulk_flows() {
        let (mut q, _) = fq(QueueLimit::Packets(10_000));
        let rate = 10_000_000u64;
        let tx = Duration::for_bits(1500 * 8, rate);
        let mut t = Instant::ZERO;
        let mut id = 0;
        let mut worst = Duration::ZERO;

        // Four bulk flows keep 200 packets each queued; a sparse packet every 20 ms.
        for f in 0..4 {
            for _ in 0..200 {
                q.enqueue(t, pkt(id, f, 1500));
                id += 1;
            }
        }
        for step in 0..20_000u64 {
            let (p, sojourn) = q.dequeue(t).expect("always backlogged");
            if p.flow == 9 {
                worst = worst.max(sojourn);
            } else {
                q.enqueue(t, pkt(id, p.flow, 1500));
                id += 1;
            }
            if step % 160 == 0 {
                q.enqueue(t, pkt(id, 9, 100));
                id += 1;
            }
            t += tx;
        }
        assert!(worst > Duration::ZERO);
        // Behind at most a round of the bulk flows (their queues, drained by CoDel to a few
        // packets, can each come back as new), plus the packet on the wire when it arrived.
        assert!(
            worst <= round_time(4, 1514, 1500, rate) + tx,
            "sparse sojourn {worst:?}"
        );
    }
}
