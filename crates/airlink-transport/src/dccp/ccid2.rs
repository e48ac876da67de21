//! CCID 2, TCP-like congestion control (RFC 4341), sender half.
//!
//! Window in packets: at most `cwnd` data packets in `pipe` (sent, neither acknowledged nor
//! lost). Acknowledgements come as Ack Vectors.
//!
//! | RFC 4341 / Linux `ccid2.c` | here |
//! |---|---|
//! | initial cwnd min(4, max(2, ⌊4380/s⌋)) | same, s = `packet_size` hint or the first payload |
//! | slow start +1 per acked packet; CA +1 per cwnd acked | same |
//! | loss: not acked while ≥ 3 later packets acked (NUMDUPACK) | same, counting acked data packets |
//! | halve once per window: cwnd = ⌊cwnd/2⌋ (≥ 1), ssthresh = max(cwnd, 2) (Linux) | same; a loss among packets sent before the last reduction does not reduce again |
//! | RTO per RFC 6298 with back-off; expiry: ssthresh = max(cwnd/2, 2), cwnd = 1, pipe = 0, Ack Ratio 1 | same; outstanding packets are then counted lost, late acks for them ignored |
//! | RTT sample per acked packet | one sample per Ack, from the newest newly acked packet |
//! | Ack Ratio R ≤ ⌈cwnd/2⌉; adaptive: double on ack loss, −1 after cwnd²/(R²−R) packets | fixed (default 2) or adaptive, always clamped to [1, ⌈cwnd/2⌉], sent as Change L(Ack Ratio) when it changes; ack loss = gaps in the peer's sequence numbers |

use super::ackvec::{AckState, Run};
use crate::rtt::RttEstimator;
use airlink_engine::{Duration, Instant};
use std::collections::VecDeque;

/// How the sender sets the receiver's Ack Ratio.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AckRatioMode {
    /// This ratio, clamped to ⌈cwnd/2⌉ (RFC 4341 §6.1.1).
    Fixed(u16),
    /// RFC 4341 §6.1.2 as in early Linux: double on ack loss, decrease by one after
    /// cwnd²/(R²−R) acknowledged packets without ack loss.
    Adaptive,
}

/// CCID-2 parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Ccid2Config {
    /// Default `Fixed(2)` (RFC 4340 §11.3 default Ack Ratio; spec D.7 simulation default).
    pub ack_ratio: AckRatioMode,
    /// RTO before the first sample. Default 3 s (Linux `ccid2.c` of 2.6.25 (r)).
    pub rto_init: Duration,
    /// RTO floor. Default 1 s (RFC 6298 (2.4), which RFC 4341 §5 refers to).
    pub rto_min: Duration,
    /// RTO ceiling. Default 64 s (Linux `DCCP_RTO_MAX` (r)).
    pub rto_max: Duration,
    /// Later acknowledged packets that make an unacknowledged one lost. Default 3.
    pub dupthresh: u32,
    /// Receiver: send an Ack at most this long after an unacknowledged data packet even if
    /// fewer than Ack Ratio arrived. Default 200 ms (A: RFC 4341 is silent; TCP's delayed-ACK
    /// bound, so a lone last packet does not wait for an RTO).
    pub ack_delay: Duration,
}

impl Default for Ccid2Config {
    fn default() -> Self {
        Ccid2Config {
            ack_ratio: AckRatioMode::Fixed(2),
            rto_init: Duration::from_secs(3),
            rto_min: Duration::from_secs(1),
            rto_max: Duration::from_secs(64),
            dupthresh: 3,
            ack_delay: Duration::from_millis(200),
        }
    }
}

#[derive(Copy, Clone, Debug)]
struct Sent {
    seq: u64,
    at: Instant,
    acked: bool,
    lost: bool,
}

/// Counters of the CCID-2 sender.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ccid2Stats {
    /// Data packets found lost from Ack Vectors.
    pub lost_packets: u64,
    /// Window halvings.
    pub congestion_events: u64,
    pub timeouts: u64,
    /// Peer packets (acks) missing from its sequence.
    pub ack_losses: u64,
}

/// The CCID-2 sender.
#[derive(Clone, Debug)]
pub struct Ccid2Sender {
    cfg: Ccid2Config,
    cwnd: u32,
    ssthresh: u32,
    pipe: u32,
    ca_acked: u32,
    hist: VecDeque<Sent>,
    rtt: RttEstimator,
    rto_at: Option<Instant>,
    /// Highest sequence number sent at the last reduction.
    reduced_at: Option<u64>,
    high_sent: u64,
    ratio: u16,
    ratio_sent: Option<u16>,
    acked_since_ack_loss: u64,
    peer_high: Option<u64>,
    stats: Ccid2Stats,
}

impl Ccid2Sender {
    /// `s`: packet size used for the initial window, bytes.
    pub fn new(cfg: Ccid2Config, s: u32) -> Self {
        let cwnd = (4380 / s.max(1)).clamp(2, 4);
        let rtt = RttEstimator::new(cfg.rto_init, cfg.rto_min, cfg.rto_max, Duration::ZERO);
        let ratio = match cfg.ack_ratio {
            AckRatioMode::Fixed(r) => r.max(1),
            AckRatioMode::Adaptive => 2,
        };
        let mut c = Ccid2Sender {
            cfg,
            cwnd,
            ssthresh: u32::MAX,
            pipe: 0,
            ca_acked: 0,
            hist: VecDeque::new(),
            rtt,
            rto_at: None,
            reduced_at: None,
            high_sent: 0,
            ratio,
            ratio_sent: Some(2),
            acked_since_ack_loss: 0,
            peer_high: None,
            stats: Ccid2Stats::default(),
        };
        c.clamp_ratio();
        c
    }

    pub fn cwnd(&self) -> u32 {
        self.cwnd
    }
    pub fn ssthresh(&self) -> u32 {
        self.ssthresh
    }
    pub fn pipe(&self) -> u32 {
        self.pipe
    }
    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }
    pub fn rto(&self) -> Duration {
        self.rtt.rto()
    }
    pub fn ack_ratio(&self) -> u16 {
        self.ratio
    }
    pub fn stats(&self) -> &Ccid2Stats {
        &self.stats
    }

    pub fn can_send(&self) -> bool {
        self.pipe < self.cwnd
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        self.rto_at
    }

    /// The Ack Ratio to announce on the next packet, if it changed since last announced.
    pub fn take_ack_ratio_change(&mut self) -> Option<u16> {
        (self.ratio_sent != Some(self.ratio)).then(|| {
            self.ratio_sent = Some(self.ratio);
            self.ratio
        })
    }

    fn clamp_ratio(&mut self) {
        let max = self.cwnd.div_ceil(2).clamp(1, u16::MAX as u32) as u16;
        let want = match self.cfg.ack_ratio {
            AckRatioMode::Fixed(r) => r.max(1),
            AckRatioMode::Adaptive => self.ratio,
        };
        self.ratio = want.clamp(1, max);
    }

    pub fn on_sent(&mut self, now: Instant, seq: u64) {
        self.hist.push_back(Sent {
            seq,
            at: now,
            acked: false,
            lost: false,
        });
        self.high_sent = seq;
        self.pipe += 1;
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rtt.rto());
        }
    }

    /// A packet from the receiver with sequence number `peer_seq` arrived; `runs` is its
    /// decoded Ack Vector (empty if none).
    pub fn on_ack(&mut self, now: Instant, peer_seq: u64, runs: &[Run]) {
        match self.peer_high {
            Some(h) if peer_seq > h + 1 => {
                self.stats.ack_losses += peer_seq - h - 1;
                if self.cfg.ack_ratio == AckRatioMode::Adaptive {
                    self.ratio = self.ratio.saturating_mul(2);
                    self.acked_since_ack_loss = 0;
                    self.clamp_ratio();
                }
            }
            _ => {}
        }
        self.peer_high = Some(self.peer_high.map_or(peer_seq, |h| h.max(peer_seq)));

        let mut newly = 0u32;
        let mut newest: Option<Instant> = None;
        for run in runs {
            if run.state == AckState::NotReceived {
                continue;
            }
            let lo = run.low();
            let start = self.hist.partition_point(|s| s.seq < lo);
            for s in self.hist.range_mut(start..) {
                if s.seq > run.high {
                    break;
                }
                if s.acked {
                    continue;
                }
                s.acked = true;
                if s.lost {
                    continue; // declared lost (or timed out) before: pipe already reduced
                }
                newly += 1;
                newest = Some(newest.map_or(s.at, |t: Instant| t.max(s.at)));
            }
        }
        if newly == 0 {
            self.detect_losses();
            self.prune();
            return;
        }
        self.pipe -= newly;
        if let Some(at) = newest {
            self.rtt.on_sample(now.saturating_since(at));
        }
        for _ in 0..newly {
            if self.cwnd < self.ssthresh {
                self.cwnd += 1;
            } else {
                self.ca_acked += 1;
                if self.ca_acked >= self.cwnd {
                    self.cwnd += 1;
                    self.ca_acked = 0;
                }
            }
        }
        if self.cfg.ack_ratio == AckRatioMode::Adaptive {
            self.acked_since_ack_loss += newly as u64;
            let r = self.ratio as u64;
            let w = self.cwnd as u64;
            if r > 1 && self.acked_since_ack_loss >= w * w / (r * r - r) {
                self.ratio -= 1;
                self.acked_since_ack_loss = 0;
            }
        }
        self.detect_losses();
        self.clamp_ratio();
        self.rto_at = (self.pipe > 0).then(|| now + self.rtt.rto());
        self.prune();
    }

    fn detect_losses(&mut self) {
        let mut later = 0u32;
        let mut lost = Vec::new();
        for (i, s) in self.hist.iter().enumerate().rev() {
            if s.acked {
                later += 1;
            } else if !s.lost && later >= self.cfg.dupthresh {
                lost.push(i);
            }
        }
        for i in lost.into_iter().rev() {
            let s = &mut self.hist[i];
            s.lost = true;
            self.pipe -= 1;
            self.stats.lost_packets += 1;
            let seq = s.seq;
            if self.reduced_at.is_none_or(|r| seq > r) {
                self.cwnd = (self.cwnd / 2).max(1);
                self.ssthresh = self.cwnd.max(2);
                self.ca_acked = 0;
                self.reduced_at = Some(self.high_sent);
                self.stats.congestion_events += 1;
            }
        }
    }

    fn prune(&mut self) {
        while self.hist.front().is_some_and(|s| s.acked || s.lost) {
            self.hist.pop_front();
        }
    }

    /// The retransmission timer expired (call at or after [`poll_timeout`](Self::poll_timeout)).
    pub fn on_timeout(&mut self, now: Instant) {
        if self.rto_at.is_none_or(|t| now < t) {
            return;
        }
        self.rto_at = None;
        self.stats.timeouts += 1;
        self.ssthresh = (self.cwnd / 2).max(2);
        self.cwnd = 1;
        self.ca_acked = 0;
        self.pipe = 0;
        for s in self.hist.iter_mut() {
            s.lost = true;
        }
        self.reduced_at = Some(self.high_sent);
        self.rtt.back_off();
        self.clamp_ratio();
        self.prune();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(high: u64, len: u64) -> Run {
        Run {
            high,
            len,
            state: AckState::Received,
        }
    }

    #[test]
    fn slow_start_loss_and_rto() {
        let mut c = Ccid2Sender::new(Ccid2Config::default(), 1424);
        assert_eq!(c.cwnd(), 3);
        let t0 = Instant::ZERO;
        for seq in 1..=3 {
            c.on_sent(t0, seq);
        }
        assert!(!c.can_send());
        let t1 = Instant::from_millis(100);
        c.on_ack(t1, 10, &[run(3, 3)]);
        assert_eq!((c.cwnd(), c.pipe()), (6, 0));
        assert_eq!(c.srtt(), Some(Duration::from_millis(100)));
        for seq in 4..=9 {
            c.on_sent(t1, seq);
        }
        // 4 lost, 5..8 acked: 4 has ≥ 3 later acks → lost, halve once.
        let v = [
            run(8, 4),
            Run {
                high: 4,
                len: 1,
                state: AckState::NotReceived,
            },
        ];
        c.on_ack(Instant::from_millis(200), 11, &v);
        assert_eq!(c.stats().lost_packets, 1);
        assert_eq!(c.stats().congestion_events, 1);
        assert_eq!((c.cwnd(), c.ssthresh(), c.pipe()), (5, 5, 1));
        let rto = c.poll_timeout().unwrap();
        c.on_timeout(rto);
        assert_eq!((c.cwnd(), c.ssthresh(), c.pipe()), (1, 2, 0));
        assert_eq!(c.ack_ratio(), 1, "R ≤ ⌈cwnd/2⌉");
        assert_eq!(c.take_ack_ratio_change(), Some(1));
        assert_eq!(c.take_ack_ratio_change(), None);
    }

    #[test]
    fn adaptive_ack_ratio_doubles_on_ack_loss_within_half_cwnd() {
        let cfg = Ccid2Config {
            ack_ratio: AckRatioMode::Adaptive,
            ..Default::default()
        };
        let mut c = Ccid2Sender::new(cfg, 1424);
        for seq in 1..=3 {
            c.on_sent(Instant::ZERO, seq);
        }
        c.on_ack(Instant::from_millis(50), 10, &[run(3, 3)]);
        assert_eq!((c.cwnd(), c.ack_ratio()), (6, 2));
        c.on_ack(Instant::from_millis(60), 12, &[]); // peer packet 11 (an Ack) is missing
        assert_eq!(c.stats().ack_losses, 1);
        assert_eq!(c.ack_ratio(), 3, "2·2 clamped to ⌈6/2⌉");
        assert_eq!(c.take_ack_ratio_change(), Some(3));
    }
}
