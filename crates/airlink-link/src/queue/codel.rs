//! CoDel, "Controlled Delay" (RFC 8289): drop at dequeue when the sojourn time has stayed
//! above `target` for at least `interval`, then at intervals that shrink as
//! `interval/√count` while it stays there.
//!
//! The state machine follows RFC 8289 §5 (and Linux's `include/net/codel_impl.h`, whose
//! shape it shares so that FQ-CoDel can run one instance per flow queue): `first_above_time`
//! arms when the sojourn first exceeds `target` with more than one packet's bytes left
//! behind; once it has stayed above for `interval` the head is dropped and the drop state
//! entered; in the drop state the next drop is due at `drop_next`, and every drop sets
//! `drop_next += interval/√count`. Re-entering the drop state soon (within 16 intervals) after
//! leaving it resumes from `count − lastcount` drops instead of 1 (RFC 8289 §5.5). With `ecn`,
//! an ECN-capable packet is marked CE instead of dropped and is sent.
//!
//! | aspect | here | Linux (`sch_codel`, `codel_impl.h`) |
//! |---|---|---|
//! | `interval/√count` | exact (floating point) | Newton's iteration on a 16-bit fixed-point reciprocal √ |
//! | "at least a packet's bytes behind" | the largest packet seen (RFC 8289 MAXPACKET) | the device MTU |
//! | time | nanoseconds | 1.024 µs units (`codel_time_t`) |
//! | `ce_threshold` | absent | marks ECT packets above a sojourn threshold |
//! | limit | the link's `queue` | `limit`, default 1000 packets |
//! | defaults | target 5 ms, interval 100 ms, ecn off | the same |

use super::{Discipline, Ledger, QueueDrop, Queued};
use crate::Packet;
use airlink_engine::{Duration, Instant};
use std::collections::VecDeque;

/// CoDel's parameters (RFC 8289 §4.2–4.3; Linux's defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct CodelParams {
    /// Acceptable standing sojourn time. Default 5 ms.
    pub target: Duration,
    /// Window over which the sojourn must stay above `target` (about a worst-case RTT).
    /// Default 100 ms.
    pub interval: Duration,
    /// Mark ECN-capable packets instead of dropping them. Default off (Linux `codel`).
    pub ecn: bool,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            ecn: false,
        }
    }
}

/// One queue's CoDel state (RFC 8289 §5's variables).
#[derive(Clone, Debug, Default)]
pub struct CodelVars {
    /// Drops (or marks) since entering the drop state.
    count: u32,
    /// `count` when the drop state was last entered.
    lastcount: u32,
    dropping: bool,
    /// When the sojourn, above target since just before, will have been so for an interval.
    first_above_time: Option<Instant>,
    /// When the next drop is due in the drop state.
    drop_next: Instant,
}

/// RFC 8289's control law: the next drop after `t` is `interval/√count` later.
pub(crate) fn control_law(t: Instant, interval: Duration, count: u32) -> Instant {
    t + Duration::from_nanos((interval.as_nanos() as f64 / (count.max(1) as f64).sqrt()) as u64)
}

/// RFC 8289's `dodequeue`'s verdict on the packet just taken: may it be dropped?
fn should_drop<P: Packet>(
    vars: &mut CodelVars,
    params: &CodelParams,
    now: Instant,
    item: Option<&Queued<P>>,
    ledger: &Ledger<P>,
) -> bool {
    let Some(item) = item else {
        vars.first_above_time = None;
        return false;
    };
    let sojourn = now.saturating_since(item.enqueued);
    // The packet is still counted in the ledger: what it leaves behind is the rest.
    let behind = ledger.bytes() - item.pkt.wire_len() as u64;
    if sojourn < params.target || behind <= ledger.max_packet() as u64 {
        vars.first_above_time = None;
        return false;
    }
    match vars.first_above_time {
        None => {
            vars.first_above_time = Some(now + params.interval);
            false
        }
        Some(t) => now >= t,
    }
}

/// RFC 8289's `dequeue` over the queue that `pop` takes packets from: drops (to `ledger`)
/// and marks as the control law says, and returns the packet to send.
pub(crate) fn codel_dequeue<P: Packet>(
    vars: &mut CodelVars,
    params: &CodelParams,
    now: Instant,
    ledger: &mut Ledger<P>,
    mut pop: impl FnMut() -> Option<Queued<P>>,
) -> Option<Queued<P>> {
    let mut item = pop();
    let drop = should_drop(vars, params, now, item.as_ref(), ledger);
    let Some(mut head) = item.take() else {
        vars.dropping = false;
        return None;
    };
    if vars.dropping {
        if !drop {
            vars.dropping = false;
        }
        while vars.dropping && now >= vars.drop_next {
            vars.count += 1;
            if params.ecn && ledger.mark(&mut head) {
                vars.drop_next = control_law(vars.drop_next, params.interval, vars.count);
                return Some(head);
            }
            ledger.drop(head, QueueDrop::Aqm);
            let next = pop();
            if !should_drop(vars, params, now, next.as_ref(), ledger) {
                vars.dropping = false;
            } else {
                vars.drop_next = control_law(vars.drop_next, params.interval, vars.count);
            }
            match next {
                Some(n) => head = n,
                None => return None,
            }
        }
    } else if drop {
        if !(params.ecn && ledger.mark(&mut head)) {
            ledger.drop(head, QueueDrop::Aqm);
            let next = pop();
            // For its side effect on `first_above_time`: the drop state starts regardless.
            should_drop(vars, params, now, next.as_ref(), ledger);
            match next {
                Some(n) => head = n,
                None => {
                    enter_drop_state(vars, params, now);
                    return None;
                }
            }
        }
        enter_drop_state(vars, params, now);
    }
    Some(head)
}

fn enter_drop_state(vars: &mut CodelVars, params: &CodelParams, now: Instant) {
    vars.dropping = true;
    // Resume near the last drop rate if the drop state was left only recently (§5.5).
    let delta = vars.count.wrapping_sub(vars.lastcount);
    let recent = now < vars.drop_next + params.interval.saturating_mul(16);
    vars.count = if delta > 1 && recent { delta } else { 1 };
    vars.lastcount = vars.count;
    vars.drop_next = control_law(now, params.interval, vars.count);
}

/// A single FIFO under CoDel.
pub struct Codel<P> {
    params: CodelParams,
    vars: CodelVars,
    fifo: VecDeque<Queued<P>>,
}

impl<P> Codel<P> {
    pub fn new(params: CodelParams) -> Self {
        Codel {
            params,
            vars: CodelVars::default(),
            fifo: VecDeque::new(),
        }
    }
}

impl<P: Packet + Send> Discipline<P> for Codel<P> {
    fn enqueue(&mut self, _now: Instant, item: Queued<P>, ledger: &mut Ledger<P>) {
        if ledger.over_limit() {
            ledger.drop(item, QueueDrop::Overflow);
        } else {
            self.fifo.push_back(item);
        }
    }

    fn dequeue(&mut self, now: Instant, ledger: &mut Ledger<P>) -> Option<Queued<P>> {
        let fifo = &mut self.fifo;
        codel_dequeue(&mut self.vars, &self.params, now, ledger, || {
            fifo.pop_front()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::queue;
    use super::super::*;
    use super::control_law;
    use crate::testing::TestPacket;
    use crate::Ecn;

    const STEP: Duration = Duration::from_micros(100);
    /// Dequeues start here, so the sojourn stays near 100 ms (less 100 µs per drop).
    const START: Instant = Instant::from_millis(100);

    /// Holds the sojourn near 100 ms (one packet in and one out every 100 µs once 20 ms are
    /// queued) and returns the instants of CoDel's drops (or marks) and whether each was a mark.
    fn drops_under_standing_delay(ecn: bool) -> Vec<(Instant, bool)> {
        let mut q = queue(
            AqmConfig::Codel(CodelParams {
                ecn,
                ..Default::default()
            }),
            QueueLimit::Packets(10_000),
        );
        let mut out = Vec::new();
        let mut marks_seen = 0;
        for step in 0..30_000u64 {
            let t = Instant::from_nanos(step * STEP.as_nanos());
            let mut p = TestPacket::new(step as u32, 1000);
            p.ecn = if ecn { Ecn::Ect0 } else { Ecn::NotEct };
            q.enqueue(t, p);
            if t >= START {
                if let Some((p, _)) = q.dequeue(t) {
                    if p.ecn == Ecn::Ce {
                        out.push((t, true));
                    }
                }
            }
            while let Some((_, reason)) = q.poll_drop() {
                assert_eq!(reason, QueueDrop::Aqm);
                out.push((t, false));
            }
            marks_seen = q.stats().aqm_marks;
        }
        assert_eq!(marks_seen as usize, out.iter().filter(|d| d.1).count());
        out
    }

    /// RFC 8289: the first drop comes an interval after the sojourn first exceeds the target;
    /// then drop k+1 comes interval/√k after the instant drop k was due.
    #[test]
    fn drops_follow_the_control_law() {
        let drops = drops_under_standing_delay(false);
        assert!(drops.len() > 100, "{} drops", drops.len());
        let interval = Duration::from_millis(100);
        // The sojourn exceeds 5 ms from the first dequeue on.
        let mut due = START + interval;
        for (k, &(at, marked)) in drops.iter().enumerate() {
            assert!(!marked);
            // Dequeues happen every 100 µs: a drop falls on the first one at or after its due time.
            let expected =
                Instant::from_nanos(due.as_nanos().div_ceil(STEP.as_nanos()) * STEP.as_nanos());
            assert_eq!(at, expected, "drop {k}");
            due = control_law(due, interval, k as u32 + 1);
        }
    }

    #[test]
    fn with_ecn_it_marks_on_the_same_schedule_and_drops_nothing() {
        let marks = drops_under_standing_delay(true);
        assert!(marks.iter().all(|&(_, marked)| marked));
        let drops = drops_under_standing_delay(false);
        // Marking leaves the queue longer, so the schedules part after the first few.
        assert_eq!(
            marks[..3].iter().map(|d| d.0).collect::<Vec<_>>(),
            drops[..3].iter().map(|d| d.0).collect::<Vec<_>>()
        );
    }

    #[test]
    fn no_drop_while_the_sojourn_stays_below_target_or_a_packet_is_left() {
        let mut q = queue(
            AqmConfig::Codel(CodelParams::default()),
            QueueLimit::Packets(1000),
        );
        // A single packet waiting 1 s at a time: long sojourn, but nothing left behind.
        for i in 0..100u64 {
            let t = Instant::from_millis(i * 1000);
            q.enqueue(t, TestPacket::new(i as u32, 1500));
            assert!(q.dequeue(t + Duration::from_millis(999)).is_some());
        }
        // A queue of 3 packets drained within 4 ms of their arrival: below target.
        for i in 0..1000u64 {
            let t = Instant::from_secs_f64(200.0) + Duration::from_millis(i * 4);
            for k in 0..3 {
                q.enqueue(t, TestPacket::new(k, 1500));
            }
            for k in 1..=3 {
                assert!(q.dequeue(t + Duration::from_millis(k)).is_some());
            }
        }
        assert_eq!(q.stats().aqm_drops, 0);
    }

    #[test]
    fn the_control_law_spacing_is_interval_over_the_root_of_count() {
        let t = Instant::from_millis(1000);
        let i = Duration::from_millis(100);
        assert_eq!(control_law(t, i, 1), Instant::from_millis(1100));
        assert_eq!(control_law(t, i, 4), Instant::from_millis(1050));
        assert_eq!(control_law(t, i, 100), Instant::from_millis(1010));
    }
}
