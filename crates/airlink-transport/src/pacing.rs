//! The TCP endpoint's pacer: data segments leave no faster than the controller's pacing rate,
//! in bursts of at most its send quantum (Linux internal TCP pacing, `tcp_wstamp_ns`,
//! `tcp_pacing_check`, `tcp_update_skb_after_send`).
//!
//! # Rules
//!
//! 1. A controller paces by returning a rate from
//!    [`pacing_rate`](crate::CongestionController::pacing_rate) (payload bytes per second);
//!    `None` (the default) means no pacing, and the endpoint then does exactly what it did
//!    without a pacer (no state is touched, no timer is set).
//! 2. The pacer keeps a release time. A burst may begin once the release time has come; the
//!    segments the endpoint emits at that same instant belong to the burst while it holds at
//!    most [`send_quantum`](crate::CongestionController::send_quantum) bytes (at least one
//!    SMSS). Every data segment sent moves the release time on by `len / rate`; a burst that
//!    begins late (the driver woke after the release time) is forgiven up to half of its first
//!    segment's time (Linux: "take into account OS jitter").
//! 3. The first 10 data segments of a connection are not paced (sch_fq's and Linux's
//!    `data_segs_out >= 10` rule): the initial window leaves at once.
//! 4. What is paced: new data and the retransmissions chosen under cwnd (RFC 6675 NextSeg,
//!    RACK's lost retransmissions). Forced retransmissions (fast retransmit, RTO, NewReno's
//!    partial ACK), zero-window probes and pure ACKs are not held back, but data among them
//!    still moves the release time.
//! 5. When the pacer holds back a segment the sender could otherwise send, the endpoint's
//!    [`poll_timeout`](crate::TcpEndpoint::poll_timeout) includes the release time, so every
//!    driver that honours endpoint timers paces without knowing about it.
//!
//! # Deviations
//!
//! | Linux | here |
//! |---|---|
//! | charges `skb->len` (payload and TCP header) | charges payload bytes, the unit of the controllers' rates |
//! | TSO builds a burst of up to the autosized quantum from what is available at once | the segments polled at one instant, up to the quantum |

use airlink_engine::{Duration, Instant};

/// Data segments of a connection that go unpaced (rule 3).
pub const UNPACED_SEGMENTS: u64 = 10;

#[derive(Clone, Debug, Default)]
pub(crate) struct Pacer {
    /// Earliest start of the next burst (Linux `tcp_wstamp_ns`).
    release: Instant,
    /// Instant and bytes of the current burst.
    burst_at: Option<Instant>,
    burst_bytes: u64,
    /// Data segments sent (Linux `data_segs_out`).
    segments: u64,
}

impl Pacer {
    /// Whether a segment of `smss` bytes may leave now.
    pub fn allows(&self, now: Instant, smss: u64, quantum: u64) -> bool {
        self.release <= now || self.in_burst(now, smss, quantum)
    }

    fn in_burst(&self, now: Instant, len: u64, quantum: u64) -> bool {
        self.burst_at == Some(now) && self.burst_bytes + len <= quantum
    }

    /// When the next burst may begin.
    pub fn release(&self) -> Instant {
        self.release
    }

    /// A data segment of `len` payload bytes left at `now`, pacing at `rate` bytes/s.
    pub fn on_sent(&mut self, now: Instant, len: u64, rate: u64, quantum: u64) {
        self.segments += 1;
        if self.segments < UNPACED_SEGMENTS || rate == 0 {
            self.release = self.release.max(now);
            return;
        }
        let mut len_ns = (len as u128 * 1_000_000_000 / rate as u128) as u64;
        if self.in_burst(now, len, quantum) {
            self.burst_bytes += len;
        } else {
            let prior = self.release;
            self.release = self.release.max(now);
            let credit = self.release.saturating_since(prior).as_nanos();
            len_ns -= (len_ns / 2).min(credit);
            self.burst_at = Some(now);
            self.burst_bytes = len;
        }
        self.release += Duration::from_nanos(len_ns);
    }
}
