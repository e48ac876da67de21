//! Delivery-rate sampling (draft-cheng-iccrg-delivery-rate-estimation-02; Linux
//! `tcp_rate.c`), a shared part of the TCP endpoint usable by any controller.
//!
//! # Rules
//!
//! 1. **Connection state** `C`: `delivered` (payload bytes the peer reported received,
//!    cumulatively or by SACK: the sum of RFC 6937 DeliveredData), `delivered_time` (when it
//!    last grew), `first_sent_time` (send time of the newest packet delivered so far), `lost`
//!    (bytes marked lost, see the endpoint), `app_limited` (0, or the value of `delivered`
//!    after which the current application-limited period ends).
//! 2. **On every data transmission** (new or retransmitted) the packet keeps a snapshot
//!    [`TxSnapshot`] of `C`; if nothing was outstanding, `first_sent_time` and
//!    `delivered_time` restart at now (`tcp_rate_skb_sent`).
//! 3. **On delivery** of a packet (cumulatively acknowledged, or wholly SACKed, each at most
//!    once) the sample takes the snapshot of the *most recently sent* packet the ACK delivered
//!    (send time, then end sequence breaks ties): `prior_delivered`, `prior_time`,
//!    `is_app_limited`, and the send phase `send_elapsed = P.sent − P.first_sent_time`
//!    (`tcp_rate_skb_delivered`).
//! 4. **Per ACK** (`tcp_rate_gen`): `C.app_limited` ends once `C.delivered` passed it; the
//!    sample's `delivered = C.delivered − prior_delivered`, `interval = max(send_elapsed,
//!    now − prior_time)`; an interval shorter than the connection's minimum RTT gives no rate
//!    (ACK compression would inflate it); rate = delivered / interval.
//! 5. **Application-limited** (draft §3.4, `tcp_rate_check_app_limited`): whenever the
//!    sender runs out of things to send — less than one SMSS of unsent data, no
//!    retransmission owed, and pipe below cwnd — `C.app_limited = C.delivered + pipe` (at
//!    least 1): samples from packets sent until that is delivered are marked app-limited.
//!
//! # Deviations
//!
//! | draft / Linux | here |
//! |---|---|
//! | counts in packets (`tp->delivered`) | bytes; the rate is payload bytes per second |
//! | app-limited checked when the application writes | checked after every input's transmissions, when the sender has nothing to send (the same moments for a sans-IO endpoint) |
//! | a partially acknowledged TSO skb | a partially acknowledged segment (a retransmission covering part of it) contributes its snapshot; it is delivered again with the rest |
//! | `rs->rtt_us` from the RTT estimator's samples | the RTT of the most recently sent packet this ACK delivered, none if it was retransmitted (Karn) |

use airlink_engine::{Duration, Instant};

/// What a packet remembers of the connection when it was (re)sent (draft §3.2: P.delivered,
/// P.delivered_time, P.first_sent_time, P.is_app_limited).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TxSnapshot {
    pub delivered: u64,
    /// `None`: the packet was already counted as delivered (SACKed).
    pub delivered_time: Option<Instant>,
    pub first_sent: Instant,
    pub app_limited: bool,
}

/// The sender's recovery state, as a controller sees it (Linux `icsk_ca_state`, without
/// Disorder and CWR).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum CaState {
    #[default]
    Open,
    /// Fast recovery (NewReno, Reno or SACK).
    Recovery,
    /// After a retransmission timeout, until recovered.
    Loss,
}

/// One ACK's delivery-rate sample (draft §3.3, Linux `struct rate_sample`), handed to
/// [`CongestionController::on_rate_sample`](crate::CongestionController::on_rate_sample) on
/// every ACK that found data outstanding.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct RateSample {
    /// C.delivered after this ACK: payload bytes delivered over the connection.
    pub delivered_total: u64,
    /// When C.delivered last grew (C.delivered_time).
    pub delivered_time: Option<Instant>,
    /// C.lost after this ACK: bytes marked lost over the connection.
    pub lost_total: u64,
    /// Bytes this ACK newly acknowledged or SACKed (`acked_sacked`).
    pub newly_delivered: u64,
    /// Bytes newly marked lost while processing this ACK (`losses`).
    pub newly_lost: u64,
    /// C.delivered when the sampled packet was sent (`prior_delivered`); `None` when this ACK
    /// delivered no packet with a snapshot (no sample).
    pub prior_delivered: Option<u64>,
    /// Bytes delivered over the interval (C.delivered − prior_delivered).
    pub delivered: u64,
    /// max(send phase, ACK phase); `None` when no valid sample (none taken, or shorter than
    /// the minimum RTT).
    pub interval: Option<Duration>,
    /// delivered / interval, payload bytes per second (`None` without a valid interval).
    pub delivery_rate: Option<f64>,
    /// The sampled packet was sent in an application-limited period.
    pub is_app_limited: bool,
    /// The sampled packet was a retransmission.
    pub is_retrans: bool,
    /// RTT of the most recently sent packet this ACK delivered (not for retransmissions).
    pub rtt: Option<Duration>,
    /// The connection's smallest RTT sample.
    pub min_rtt: Option<Duration>,
    /// Smoothed RTT.
    pub srtt: Option<Duration>,
    /// Bytes in flight (RFC 6675 pipe) before this ACK.
    pub prior_in_flight: u64,
    /// Bytes in flight after this ACK.
    pub in_flight: u64,
    /// Recovery state after this ACK.
    pub ca_state: CaState,
    /// Sender maximum segment size.
    pub smss: u64,
}

/// Per-ACK accumulator of the packet sampled (draft `rs` during `UpdateRateSample`).
#[derive(Copy, Clone, Debug, Default)]
struct Pending {
    has: bool,
    prior_delivered: u64,
    prior_time: Option<Instant>,
    is_app_limited: bool,
    is_retrans: bool,
    send_elapsed: Duration,
    sent: Instant,
    end_seq: u64,
}

/// The connection's rate-sampling state (draft §3.1).
#[derive(Clone, Debug, Default)]
pub(crate) struct RateSampler {
    pub delivered: u64,
    pub delivered_time: Option<Instant>,
    first_sent_time: Instant,
    /// 0 = not application-limited; else the `delivered` value that ends the period.
    app_limited: u64,
    /// Bytes marked lost so far.
    pub lost: u64,
    pending: Pending,
    last: RateSample,
}

impl RateSampler {
    /// A packet leaves; `idle`: nothing was outstanding before it.
    pub fn on_sent(&mut self, now: Instant, idle: bool) -> TxSnapshot {
        if idle {
            self.first_sent_time = now;
            self.delivered_time = Some(now);
        }
        TxSnapshot {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent: self.first_sent_time,
            app_limited: self.app_limited != 0,
        }
    }

    /// A packet sent at `sent` (ending at `end_seq`) was delivered by the ACK being processed.
    pub fn on_delivered(&mut self, tx: &TxSnapshot, sent: Instant, end_seq: u64, retrans: bool) {
        let Some(prior_time) = tx.delivered_time else {
            return;
        };
        let p = &self.pending;
        if !p.has || sent > p.sent || (sent == p.sent && end_seq > p.end_seq) {
            self.pending = Pending {
                has: true,
                prior_delivered: tx.delivered,
                prior_time: Some(prior_time),
                is_app_limited: tx.app_limited,
                is_retrans: retrans,
                send_elapsed: sent.saturating_since(tx.first_sent),
                sent,
                end_seq,
            };
            self.first_sent_time = sent;
        }
    }

    /// Closes the ACK's sample (draft `GenerateRateSample`). `delivered_data` is the ACK's
    /// DeliveredData; `lost_before` C.lost before the ACK.
    #[allow(clippy::too_many_arguments)]
    pub fn generate(
        &mut self,
        now: Instant,
        delivered_data: u64,
        lost_before: u64,
        min_rtt: Option<Duration>,
        srtt: Option<Duration>,
        prior_in_flight: u64,
        in_flight: u64,
        ca_state: CaState,
        smss: u64,
    ) -> &RateSample {
        if delivered_data > 0 {
            self.delivered += delivered_data;
            self.delivered_time = Some(now);
        }
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        let p = std::mem::take(&mut self.pending);
        let mut rs = RateSample {
            delivered_total: self.delivered,
            delivered_time: self.delivered_time,
            lost_total: self.lost,
            newly_delivered: delivered_data,
            newly_lost: self.lost - lost_before.min(self.lost),
            min_rtt,
            srtt,
            prior_in_flight,
            in_flight,
            ca_state,
            smss,
            ..RateSample::default()
        };
        if let (true, Some(prior_time)) = (p.has, p.prior_time) {
            rs.prior_delivered = Some(p.prior_delivered);
            rs.delivered = self.delivered.saturating_sub(p.prior_delivered);
            rs.is_app_limited = p.is_app_limited;
            rs.is_retrans = p.is_retrans;
            if !p.is_retrans {
                rs.rtt = Some(now.saturating_since(p.sent));
            }
            let interval = p.send_elapsed.max(now.saturating_since(prior_time));
            if interval >= min_rtt.unwrap_or(Duration::ZERO) && interval > Duration::ZERO {
                rs.interval = Some(interval);
                rs.delivery_rate = Some(rs.delivered as f64 / interval.as_secs_f64());
            }
        }
        self.last = rs;
        &self.last
    }

    /// The sender ran out of data while `pipe` bytes are in flight (rule 5).
    pub fn mark_app_limited(&mut self, pipe: u64) {
        self.app_limited = (self.delivered + pipe).max(1);
    }

    /// The last ACK's sample.
    pub fn last(&self) -> &RateSample {
        &self.last
    }
}
