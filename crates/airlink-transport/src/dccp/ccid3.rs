//! CCID 3, TCP-Friendly Rate Control (RFC 4342, RFC 5348): sender and receiver halves.
//!
//! | RFC 4342/5348, Linux `ccid3.c` | here |
//! |---|---|
//! | X = 1 packet/s before feedback; nofeedback timer 2 s | same |
//! | first feedback (p = 0): X = W_init/R, W_init = min(4s, max(2s, 4380 B)) | same (`rfc3390_initial`; off: s/R as RFC 3448 and Linux 2.6.25) |
//! | p > 0: X = max(min(X_calc, 2·X_recv), s/t_mbi) | same, with the latest X_recv (RFC 5348 keeps a set and uses its maximum) |
//! | p = 0: once per R, X = max(min(2X, 2·X_recv), W_init/R) | same |
//! | R ← 0.9R + 0.1R_sample, sample = now − send time of the Ack Number − Elapsed Time | same |
//! | nofeedback timer max(4R, 2s/X); expiry: Linux rules (spec D.7) | same |
//! | packets paced with t_ipi = s/X, t_nom += t_ipi | same (no early-send allowance δ); after idle, t_nom restarts from now |
//! | s = mean packet size | EWMA of payloads with weight 0.1 (Linux `tfrc_ewma(s, len, 9)`) |
//! | window counter CCVal +1 per R/4, at most +5 per packet | same |
//! | receiver: loss after 3 later packets; NDP Count excludes non-data packets | same |
//! | loss events: CCVal difference > 4 from the event's first loss starts a new event (Linux) | same; a lost packet takes the CCVal of the next packet received |
//! | receiver RTT from CCVal | sample when the counter moved by ≥ 4: Δt·4/Δccval, EWMA 0.9 |
//! | first loss interval from X_recv over the last RTT (RFC 5348 §6.3.1) | X_recv since the last feedback (Linux), with the receiver's R; before any receiver R sample: the number of packets received so far (A) |
//! | feedback once per RTT (CCVal moved by > 3, Linux), at once on a new loss event, on the first packet | same, plus a safety net: after 1 s without feedback while data arrived (A) |
//! | Loss Intervals option | not sent: the receiver computes p (Loss Event Rate option), as Linux |

use super::tfrc::{self, LossIntervals, T_MBI};
use airlink_engine::{Duration, Instant};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// CCID-3 parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Ccid3Config {
    /// Nofeedback timer before the first feedback. Default 2 s (RFC 5348 §4.2).
    pub initial_nofeedback: Duration,
    /// Slow-start floor W_init/R (RFC 5348 §4.2, spec D.7) when true (default); s/R (RFC 3448,
    /// Linux 2.6.25) when false.
    pub rfc3390_initial: bool,
    /// Receiver: feedback after this long without one while data arrived (A). Default 1 s.
    pub feedback_fallback: Duration,
}

impl Default for Ccid3Config {
    fn default() -> Self {
        Ccid3Config {
            initial_nofeedback: Duration::from_secs(2),
            rfc3390_initial: true,
            feedback_fallback: Duration::from_secs(1),
        }
    }
}

/// Counters of the CCID-3 sender.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ccid3SenderStats {
    pub feedbacks: u64,
    pub nofeedback_expiries: u64,
}

/// The CCID-3 sender.
#[derive(Clone, Debug)]
pub struct Ccid3Sender {
    cfg: Ccid3Config,
    /// Allowed rate, bytes/s.
    x: f64,
    x_recv: f64,
    x_calc: f64,
    p: f64,
    /// RTT estimate, seconds.
    r: Option<f64>,
    /// Mean packet size, bytes.
    s: f64,
    had_feedback: bool,
    t_ld: Instant,
    t_nom: Instant,
    nofb_at: Option<Instant>,
    ccval: u8,
    t_last_wc: Instant,
    hist: VecDeque<(u64, Instant)>,
    stats: Ccid3SenderStats,
}

impl Ccid3Sender {
    /// `s`: initial packet size estimate, bytes (replaced by the payload sizes sent).
    pub fn new(cfg: Ccid3Config, s: u32) -> Self {
        let s = s.max(1) as f64;
        Ccid3Sender {
            cfg,
            x: s,
            x_recv: 0.0,
            x_calc: 0.0,
            p: 0.0,
            r: None,
            s,
            had_feedback: false,
            t_ld: Instant::ZERO,
            t_nom: Instant::ZERO,
            nofb_at: None,
            ccval: 0,
            t_last_wc: Instant::ZERO,
            hist: VecDeque::new(),
            stats: Ccid3SenderStats::default(),
        }
    }

    /// Allowed sending rate X, bytes/s.
    pub fn rate(&self) -> f64 {
        self.x
    }
    /// The latest X_recv reported (or lowered by the nofeedback timer), bytes/s.
    pub fn x_recv(&self) -> f64 {
        self.x_recv
    }
    pub fn p(&self) -> f64 {
        self.p
    }
    pub fn rtt(&self) -> Option<Duration> {
        self.r.map(Duration::from_secs_f64)
    }
    pub fn had_feedback(&self) -> bool {
        self.had_feedback
    }
    /// Mean packet size s, bytes.
    pub fn packet_size(&self) -> f64 {
        self.s
    }
    pub fn stats(&self) -> &Ccid3SenderStats {
        &self.stats
    }

    /// The slow-start floor W_init/R (or s/R), bytes/s.
    pub fn initial_rate(&self) -> f64 {
        let r = self.r.unwrap_or(1.0).max(1e-9);
        if self.cfg.rfc3390_initial {
            tfrc::initial_window(self.s) / r
        } else {
            self.s / r
        }
    }

    fn t_ipi(&self) -> Duration {
        Duration::from_secs_f64(self.s / self.x)
    }

    /// Earliest instant the next data packet may go.
    pub fn next_send(&self) -> Instant {
        self.t_nom
    }

    /// The nofeedback timer.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.nofb_at
    }

    /// A data packet with `payload` bytes left with sequence number `seq`; returns its CCVal.
    pub fn on_sent(&mut self, now: Instant, seq: u64, payload: u32) -> u8 {
        self.s = 0.9 * self.s + 0.1 * payload.max(1) as f64;
        if let Some(r) = self.r {
            let quarter = r / 4.0;
            let n = (now.saturating_since(self.t_last_wc).as_secs_f64() / quarter) as u64;
            if n > 0 {
                self.ccval = ((self.ccval as u64 + n.min(5)) % 16) as u8;
                self.t_last_wc = now;
            }
        } else {
            self.t_last_wc = now;
        }
        let ipi = self.t_ipi();
        self.t_nom = if now > self.t_nom + ipi {
            now + ipi // idle (application-limited): no catch-up burst
        } else {
            self.t_nom + ipi
        };
        if self.nofb_at.is_none() {
            self.nofb_at = Some(now + self.cfg.initial_nofeedback);
        }
        self.hist.push_back((seq, now));
        if self.hist.len() > 1 << 14 {
            self.hist.pop_front();
        }
        self.ccval
    }

    fn min_rate(&self) -> f64 {
        self.s / T_MBI
    }

    fn nofeedback_interval(&self) -> Duration {
        let two_ipi = 2.0 * self.s / self.x;
        match self.r {
            Some(r) => Duration::from_secs_f64((4.0 * r).max(two_ipi)),
            None => self
                .cfg
                .initial_nofeedback
                .max(Duration::from_secs_f64(two_ipi)),
        }
    }

    /// Feedback arrived: Ack Number `ackno`, receive rate, loss event rate, elapsed time.
    pub fn on_feedback(
        &mut self,
        now: Instant,
        ackno: u64,
        x_recv: f64,
        p: f64,
        elapsed: Duration,
    ) {
        let sent = self
            .hist
            .iter()
            .rev()
            .find(|&&(s, _)| s == ackno)
            .map(|&(_, at)| at);
        if let Some(at) = sent {
            let sample = now
                .saturating_since(at)
                .saturating_sub(elapsed)
                .as_secs_f64();
            let sample = sample.max(1e-6);
            self.r = Some(self.r.map_or(sample, |r| 0.9 * r + 0.1 * sample));
            self.hist.retain(|&(s, _)| s > ackno);
        }
        let Some(r) = self.r else { return };
        self.stats.feedbacks += 1;
        self.x_recv = if x_recv.is_finite() {
            x_recv.max(0.0)
        } else {
            0.0
        };
        self.p = if p.is_finite() {
            p.clamp(0.0, 1.0)
        } else {
            0.0
        };
        if self.p > 0.0 {
            self.x_calc = tfrc::throughput(self.s, r, self.p);
            self.x = self.x_calc.min(2.0 * self.x_recv).max(self.min_rate());
        } else if !self.had_feedback || now.saturating_since(self.t_ld).as_secs_f64() >= r {
            self.x = (2.0 * self.x)
                .min(2.0 * self.x_recv)
                .max(self.initial_rate());
            self.t_ld = now;
        }
        self.had_feedback = true;
        self.nofb_at = Some(now + self.nofeedback_interval());
    }

    /// The nofeedback timer expired (Linux `ccid3_hc_tx_no_feedback_timer`, spec D.7).
    pub fn on_timeout(&mut self, now: Instant) {
        if self.nofb_at.is_none_or(|t| now < t) {
            return;
        }
        self.stats.nofeedback_expiries += 1;
        if !self.had_feedback || self.p == 0.0 {
            self.x = (self.x / 2.0).max(self.min_rate());
        } else {
            if self.x_calc > 2.0 * self.x_recv {
                self.x_recv = (self.x_recv / 2.0).max(self.s / (2.0 * T_MBI));
            } else {
                self.x_recv = self.x_calc / 4.0;
            }
            self.x = self.x_calc.min(2.0 * self.x_recv).max(self.min_rate());
        }
        self.nofb_at = Some(now + self.nofeedback_interval());
    }
}

/// What the receiver wants to tell the sender.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct FeedbackDue {
    pub x_recv: f64,
    pub p: f64,
}

/// Counters of the CCID-3 receiver.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ccid3ReceiverStats {
    /// Data packets found lost (3 later packets arrived).
    pub lost_packets: u64,
    pub loss_events: u64,
    pub feedbacks: u64,
}

/// The CCID-3 receiver.
#[derive(Clone, Debug)]
pub struct Ccid3Receiver {
    cfg: Ccid3Config,
    s: f64,
    r: Option<f64>,
    rtt_ref: Option<(i64, Instant)>,
    /// (raw CCVal, unwrapped) of the highest-sequence packet.
    last_cc: Option<(u8, i64)>,
    highest: Option<u64>,
    /// Lowest sequence number whose fate (received, lost, non-data) is not settled.
    unresolved: u64,
    pending: BTreeMap<u64, i64>,
    nondata: BTreeSet<u64>,
    intervals: LossIntervals,
    /// First lost sequence number and unwrapped CCVal of the current loss event.
    event: Option<(u64, i64)>,
    received: u64,
    bytes_since_fb: u64,
    last_fb: Option<(Instant, i64)>,
    x_recv: f64,
    due: bool,
    stats: Ccid3ReceiverStats,
}

impl Ccid3Receiver {
    pub fn new(cfg: Ccid3Config) -> Self {
        Ccid3Receiver {
            cfg,
            s: 0.0,
            r: None,
            rtt_ref: None,
            last_cc: None,
            highest: None,
            unresolved: 0,
            pending: BTreeMap::new(),
            nondata: BTreeSet::new(),
            intervals: LossIntervals::new(),
            event: None,
            received: 0,
            bytes_since_fb: 0,
            last_fb: None,
            x_recv: 0.0,
            due: false,
            stats: Ccid3ReceiverStats::default(),
        }
    }

    /// Current loss event rate p.
    pub fn p(&self) -> f64 {
        let i0 = match (self.event, self.highest) {
            (Some((start, _)), Some(h)) => (h.saturating_sub(start) + 1) as f64,
            _ => 0.0,
        };
        self.intervals.p(i0)
    }
    /// X_recv of the last feedback, bytes/s.
    pub fn x_recv(&self) -> f64 {
        self.x_recv
    }
    /// The receiver's RTT estimate from the window counter.
    pub fn rtt(&self) -> Option<Duration> {
        self.r.map(Duration::from_secs_f64)
    }
    pub fn loss_intervals(&self) -> &LossIntervals {
        &self.intervals
    }
    pub fn stats(&self) -> &Ccid3ReceiverStats {
        &self.stats
    }

    /// A data packet arrived.
    pub fn on_data(&mut self, now: Instant, seq: u64, ccval: u8, payload: u32, ndp: u32) {
        let ccval = ccval & 0x0f;
        self.s = if self.received == 0 {
            payload as f64
        } else {
            0.9 * self.s + 0.1 * payload as f64
        };
        self.received += 1;
        self.bytes_since_fb += payload as u64;
        let in_order = self.highest.is_none_or(|h| seq > h);
        let cc = match self.last_cc {
            None => ccval as i64,
            Some((raw, u)) if in_order => u + ((ccval + 16 - raw) % 16) as i64,
            Some((raw, u)) => u - ((raw + 16 - ccval) % 16) as i64,
        };
        let first = self.highest.is_none();
        if first {
            self.unresolved = seq;
        }
        if in_order {
            self.last_cc = Some((ccval, cc));
            self.highest = Some(seq);
            self.sample_rtt(now, cc);
        }
        if seq < self.unresolved {
            return; // already settled (declared lost): too late to count
        }
        for k in 1..=ndp as u64 {
            match seq.checked_sub(k) {
                Some(n) if n >= self.unresolved => {
                    self.nondata.insert(n);
                }
                _ => break,
            }
        }
        self.pending.insert(seq, cc);
        self.resolve(now);
        if first {
            self.due = true;
        }
        if let Some((_, fcc)) = self.last_fb {
            if cc - fcc > 3 {
                self.due = true;
            }
        }
    }

    fn sample_rtt(&mut self, now: Instant, cc: i64) {
        match self.rtt_ref {
            Some((rcc, t)) if cc - rcc >= 4 => {
                let sample = now.saturating_since(t).as_secs_f64() * 4.0 / (cc - rcc) as f64;
                if sample > 0.0 {
                    self.r = Some(self.r.map_or(sample, |r| 0.9 * r + 0.1 * sample));
                }
                self.rtt_ref = Some((cc, now));
            }
            Some(_) => {}
            None => self.rtt_ref = Some((cc, now)),
        }
    }

    fn resolve(&mut self, now: Instant) {
        loop {
            let n = self.unresolved;
            if self.pending.remove(&n).is_some() || self.nondata.remove(&n) {
                self.unresolved += 1;
                continue;
            }
            if self.pending.len() < 3 {
                break;
            }
            let next_cc = self.pending.values().next().copied().unwrap_or(0);
            self.on_loss(now, n, next_cc);
            self.unresolved += 1;
        }
    }

    fn on_loss(&mut self, now: Instant, seq: u64, cc: i64) {
        self.stats.lost_packets += 1;
        match self.event {
            Some((_, ecc)) if cc - ecc <= 4 => {}
            Some((start, _)) => {
                self.intervals.push(seq.saturating_sub(start).max(1) as f64);
                self.new_event(seq, cc);
            }
            None => {
                let first = match (self.r, self.last_fb) {
                    (Some(r), Some((t, _))) if now > t && self.s > 0.0 => {
                        let x = self.bytes_since_fb as f64 / now.saturating_since(t).as_secs_f64();
                        1.0 / tfrc::inverse(self.s, r, x.max(self.s / T_MBI))
                    }
                    _ => self.received.max(1) as f64,
                };
                self.intervals.push(first);
                self.new_event(seq, cc);
            }
        }
    }

    fn new_event(&mut self, seq: u64, cc: i64) {
        self.event = Some((seq, cc));
        self.stats.loss_events += 1;
        self.due = true;
    }

    /// The safety-net feedback deadline.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.last_fb {
            Some((t, _)) if self.bytes_since_fb > 0 && !self.due => {
                Some(t + self.cfg.feedback_fallback)
            }
            _ => None,
        }
    }

    pub fn on_timeout(&mut self, now: Instant) {
        if self.poll_timeout().is_some_and(|t| t <= now) {
            self.due = true;
        }
    }

    /// Feedback to send now, if due; resets the receive-rate measurement.
    pub fn poll_feedback(&mut self, now: Instant) -> Option<FeedbackDue> {
        if !self.due {
            return None;
        }
        self.due = false;
        let cc = self.last_cc.map_or(0, |(_, u)| u);
        if let Some((t, _)) = self.last_fb {
            let dt = now.saturating_since(t).as_secs_f64();
            if dt > 0.0 {
                self.x_recv = self.bytes_since_fb as f64 / dt;
            }
        }
        self.last_fb = Some((now, cc));
        self.bytes_since_fb = 0;
        self.stats.feedbacks += 1;
        Some(FeedbackDue {
            x_recv: self.x_recv,
            p: self.p(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant::from_millis(x)
    }

    #[test]
    fn sender_start_and_slow_start() {
        let mut tx = Ccid3Sender::new(Ccid3Config::default(), 1000);
        assert_eq!(tx.next_send(), Instant::ZERO);
        tx.on_sent(Instant::ZERO, 1, 1000);
        assert_eq!(tx.next_send(), ms(1000), "1 packet/s before feedback");
        assert_eq!(tx.poll_timeout(), Some(ms(2000)));
        tx.on_feedback(ms(100), 1, 0.0, 0.0, Duration::ZERO);
        assert!(
            (tx.rate() - 4000.0 / 0.1).abs() < 1e-6,
            "W_init/R = 4000 B / 100 ms"
        );
        assert_eq!(tx.poll_timeout(), Some(ms(500)), "max(4R, 2s/X)");
        tx.on_sent(ms(150), 2, 1000);
        tx.on_feedback(ms(250), 2, 30_000.0, 0.0, Duration::ZERO);
        assert!((tx.rate() - 60_000.0).abs() < 1e-6, "min(2X, 2X_recv)");
        tx.on_feedback(ms(300), 2, 100_000.0, 0.0, Duration::ZERO);
        assert!((tx.rate() - 60_000.0).abs() < 1e-6, "not again within R");
        tx.on_feedback(ms(360), 2, 100_000.0, 0.01, Duration::ZERO);
        let x = tfrc::throughput(1000.0, 0.1, 0.01);
        assert!((tx.rate() - x).abs() < 1e-6, "equation rate {x}");
    }

    #[test]
    fn nofeedback_halves_before_feedback() {
        let mut tx = Ccid3Sender::new(Ccid3Config::default(), 1000);
        tx.on_sent(Instant::ZERO, 1, 1000);
        tx.on_timeout(ms(2000));
        assert_eq!(tx.rate(), 500.0);
        assert_eq!(tx.poll_timeout(), Some(ms(6000)), "max(2 s, 2s/X = 4 s)");
    }

    #[test]
    fn receiver_detects_loss_after_three() {
        let mut rx = Ccid3Receiver::new(Ccid3Config::default());
        rx.on_data(ms(0), 10, 0, 100, 0);
        assert!(rx.poll_feedback(ms(0)).is_some(), "initial feedback");
        for (i, seq) in [11, 13, 14].into_iter().enumerate() {
            rx.on_data(ms(10 * i as u64 + 10), seq, 0, 100, 0);
        }
        assert_eq!(rx.stats().lost_packets, 0, "only 2 later packets");
        rx.on_data(ms(50), 15, 0, 100, 0);
        assert_eq!((rx.stats().lost_packets, rx.stats().loss_events), (1, 1));
        assert!(
            rx.poll_feedback(ms(50)).is_some(),
            "at once on a new loss event"
        );
        assert!(rx.p() > 0.0);
        // NDP count: 17 and 18 were non-data, so the gap is no loss.
        for seq in [16, 19, 20, 21, 22] {
            rx.on_data(ms(60), seq, 0, 100, if seq == 19 { 2 } else { 0 });
        }
        assert_eq!(rx.stats().lost_packets, 1);
    }
}
