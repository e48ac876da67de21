//! RFC 5681 AIMD window policy, shared by Reno and NewReno (they differ only in recovery,
//! which the endpoint runs).

use super::{
    newreno_exit_window, AckEvent, CongestionController, CongestionEvent, CongestionKind,
    ControllerInit, RecoveryExit, RecoveryKind,
};
use airlink_engine::Instant;

/// RFC 5681 slow start and congestion avoidance; RFC 5681 eq. (4) on loss. With
/// `count_delivered`, growth counts delivered bytes as Linux's `tcp_reno_cong_avoid` does.
/// No growth on an app-limited ACK ([`AckEvent::app_limited`], RFC 7661).
#[derive(Clone, Debug)]
pub struct Reno {
    smss: u64,
    cwnd: u64,
    ssthresh: u64,
    count_delivered: bool,
    /// Bytes delivered in congestion avoidance not yet turned into cwnd (RFC 3465
    /// `bytes_acked`; Linux `snd_cwnd_cnt`, in segments there).
    ca_acked: u64,
}

impl Reno {
    pub fn new(init: &ControllerInit) -> Self {
        Reno {
            smss: init.smss.max(1),
            cwnd: init.initial_window.max(1),
            ssthresh: init.initial_ssthresh,
            count_delivered: init.count_delivered,
            ca_acked: 0,
        }
    }

    /// Linux `tcp_slow_start` then `tcp_cong_avoid_ai(cwnd)`, in bytes: slow start adds the
    /// delivered bytes up to ssthresh, the rest counts towards one SMSS per cwnd delivered.
    fn grow_counting(&mut self, delivered: u64) {
        let mut left = delivered;
        if self.cwnd < self.ssthresh {
            let add = left.min(self.ssthresh - self.cwnd);
            self.cwnd += add;
            left -= add;
            if left == 0 {
                return;
            }
        }
        self.ca_acked += left;
        if self.ca_acked >= self.cwnd {
            let segments = self.ca_acked / self.cwnd;
            self.ca_acked -= segments * self.cwnd;
            self.cwnd += segments * self.smss;
        }
    }

    /// Sets both windows (for policies built on Reno that reduce on their own terms).
    pub(crate) fn set_windows(&mut self, cwnd: u64, ssthresh: u64) {
        self.cwnd = cwnd;
        self.ssthresh = ssthresh;
    }

    /// RFC 5681 eq. (4): max(FlightSize/2, 2·SMSS).
    fn half(&self, flight: u64) -> u64 {
        (flight / 2).max(2 * self.smss)
    }
}

impl CongestionController for Reno {
    fn on_ack(&mut self, _now: Instant, ack: &AckEvent) {
        // No growth of a window the sender does not use (Linux `tcp_reno_cong_avoid`).
        if ack.in_recovery || ack.acked_bytes == 0 || ack.app_limited {
            return;
        }
        if self.count_delivered {
            self.grow_counting(ack.delivered_bytes);
            return;
        }
        if self.cwnd < self.ssthresh {
            // Slow start (RFC 5681 eq. 2).
            self.cwnd += ack.acked_bytes.min(self.smss);
        } else {
            // Congestion avoidance (RFC 5681 eq. 3), at least one byte per ACK.
            self.cwnd += (self.smss * self.smss / self.cwnd).max(1);
        }
    }

    fn on_congestion_event(&mut self, _now: Instant, ev: &CongestionEvent<'_>) {
        self.ca_acked = 0;
        match ev.kind {
            CongestionKind::FastRetransmit | CongestionKind::Ecn => {
                self.ssthresh = self.half(ev.flight_size);
                self.cwnd = self.ssthresh;
            }
            CongestionKind::Timeout { consecutive } => {
                // ssthresh is held when the same data times out again (RFC 5681 §3.1).
                if consecutive == 0 {
                    self.ssthresh = self.half(ev.flight_size);
                }
                self.cwnd = self.smss; // loss window LW = 1 SMSS
            }
        }
    }

    fn on_recovery_exit(&mut self, _now: Instant, exit: &RecoveryExit) {
        if exit.kind == RecoveryKind::NewReno {
            self.cwnd = newreno_exit_window(self.ssthresh, exit.flight_size, self.smss);
        }
        // Reno and SACK recovery leave cwnd = ssthresh, which it already is.
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn name(&self) -> &'static str {
        "reno"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(bytes: u64) -> AckEvent {
        AckEvent {
            ack: 0,
            acked_bytes: bytes,
            sacked_bytes: 0,
            delivered_bytes: bytes,
            rtt: None,
            srtt: None,
            min_rtt: None,
            in_flight: 0,
            high_data: 0,
            in_recovery: false,
            app_limited: false,
        }
    }

    #[test]
    fn slow_start_then_avoidance_then_halving() {
        let t = Instant::ZERO;
        let mut r = Reno::new(&ControllerInit {
            smss: 1000,
            initial_window: 3000,
            initial_ssthresh: 5000,
            count_delivered: false,
        });
        r.on_ack(t, &ack(2000));
        assert_eq!(r.window(), 4000, "slow start adds at most one SMSS per ACK");
        r.on_ack(t, &ack(500));
        assert_eq!(r.window(), 4500);
        r.on_ack(t, &ack(1000));
        assert_eq!(r.window(), 5500);
        r.on_ack(t, &ack(1000));
        assert_eq!(r.window(), 5500 + 1_000_000 / 5500);
        let ev = CongestionEvent {
            kind: CongestionKind::FastRetransmit,
            flight_size: 9000,
            in_flight: 9000,
            loss: None,
        };
        r.on_congestion_event(t, &ev);
        assert_eq!((r.window(), r.ssthresh()), (4500, 4500));
        let ev = CongestionEvent {
            kind: CongestionKind::Timeout { consecutive: 0 },
            flight_size: 1000,
            in_flight: 0,
            loss: None,
        };
        r.on_congestion_event(t, &ev);
        assert_eq!(
            (r.window(), r.ssthresh()),
            (1000, 2000),
            "floor of 2 SMSS, LW = 1 SMSS"
        );
    }

    /// One round trip of a bulk transfer with delayed ACKs: the window's segments acknowledged
    /// two per ACK (the last alone if the window is odd).
    fn round(r: &mut Reno, smss: u64) {
        let segments = r.window() / smss;
        for i in (0..segments).step_by(2) {
            r.on_ack(Instant::ZERO, &ack(smss * (segments - i).min(2)));
        }
    }

    fn reno(count_delivered: bool, cwnd_segs: u64, ssthresh_segs: u64) -> Reno {
        Reno::new(&ControllerInit {
            smss: 1000,
            initial_window: cwnd_segs * 1000,
            initial_ssthresh: ssthresh_segs * 1000,
            count_delivered,
        })
    }

    /// Congestion avoidance with delayed ACKs: Linux (`tcp_cong_avoid_ai`, one segment per
    /// cwnd of acknowledged segments) grows exactly one segment per round trip; RFC 5681's
    /// SMSS²/cwnd per ACK half a segment, as there are half as many ACKs as segments.
    #[test]
    fn avoidance_with_delayed_acks_grows_one_segment_per_rtt_when_counting() {
        let mut linux = reno(true, 20, 20);
        let mut rfc = reno(false, 20, 20);
        for n in 1..=10 {
            round(&mut linux, 1000);
            round(&mut rfc, 1000);
            assert_eq!(linux.window(), (20 + n) * 1000, "round {n}");
        }
        let rfc = rfc.window() as f64 / 1000.0;
        assert!(
            (24.5..25.5).contains(&rfc),
            "RFC 5681: {rfc} segments after 10 rounds"
        );
    }

    /// Slow start with delayed ACKs: counting doubles cwnd per round trip (Linux
    /// `tcp_slow_start`), RFC 5681's one SMSS per ACK multiplies it by 1.5. Reaching ssthresh
    /// in the middle of an ACK, the rest of the ACK counts for congestion avoidance.
    #[test]
    fn slow_start_doubles_per_rtt_when_counting() {
        let mut linux = reno(true, 10, 1000);
        let mut rfc = reno(false, 10, 1000);
        for _ in 0..3 {
            round(&mut linux, 1000);
            round(&mut rfc, 1000);
        }
        assert_eq!(linux.window(), 80_000);
        // 10 -> 15 -> 23 -> 35 (an odd window's last ACK covers one segment).
        assert_eq!(rfc.window(), 35_000);
        let mut r = reno(true, 10, 11);
        r.on_ack(Instant::ZERO, &ack(2000));
        assert_eq!(r.window(), 11_000, "slow start stops at ssthresh");
        for _ in 0..5 {
            r.on_ack(Instant::ZERO, &ack(2000));
        }
        // 1000 + 10 000 bytes counted in avoidance at cwnd 11 000: one segment.
        assert_eq!(r.window(), 12_000);
        // A loss forgets the avoidance count.
        let ev = CongestionEvent {
            kind: CongestionKind::FastRetransmit,
            flight_size: 24_000,
            in_flight: 24_000,
            loss: None,
        };
        r.on_congestion_event(Instant::ZERO, &ev);
        assert_eq!(r.window(), 12_000);
        for _ in 0..5 {
            r.on_ack(Instant::ZERO, &ack(2000));
        }
        assert_eq!(r.window(), 12_000, "10 000 bytes are less than a window");
        r.on_ack(Instant::ZERO, &ack(2000));
        assert_eq!(r.window(), 13_000);
    }

    /// Counting uses what the ACK newly delivered, not the cumulative ACK's jump over data
    /// that was SACKed before (Linux `acked_sacked`): after a hole is filled, cwnd does not
    /// leap by the whole SACKed run.
    #[test]
    fn counting_uses_delivered_not_cumulative_bytes() {
        let mut r = reno(true, 2, 100);
        let mut a = ack(40_000);
        a.delivered_bytes = 1000;
        r.on_ack(Instant::ZERO, &a);
        assert_eq!(r.window(), 3000);
    }
}
