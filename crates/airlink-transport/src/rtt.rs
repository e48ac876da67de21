//! Round-trip time estimation and the retransmission timeout (RFC 6298).
//!
//! | RFC 6298 | here |
//! |---|---|
//! | (2.1) RTO = initial value before any sample | `rto_init` |
//! | (2.2) first sample R: SRTT = R, RTTVAR = R/2 | same |
//! | (2.3) RTTVAR ← ¾RTTVAR + ¼\|SRTT − R'\| then SRTT ← ⅞SRTT + ⅛R' | same, integer nanoseconds (exact for the spec vectors) |
//! | RTO = SRTT + max(G, 4·RTTVAR) | same; `G` = `clock_granularity`. G = 200 ms reproduces Linux's floor of `rto_min` on the variance term (r) |
//! | (2.4) RTO < 1 s SHOULD be rounded up to 1 s | `rto_min` (default 200 ms as Linux; the RFC preset uses 1 s) |
//! | (2.5) a maximum of at least 60 s MAY be placed | `rto_max` |
//! | (5.5) back-off RTO ← 2·RTO | [`RttEstimator::back_off`], capped at `rto_max` |
//! | Karn: keep the backed-off RTO until a valid sample | back-off cleared only by [`RttEstimator::on_sample`]; the endpoint never samples retransmitted segments |

use airlink_engine::Duration;

/// SRTT/RTTVAR estimator and RTO computation (RFC 6298).
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    latest: Option<Duration>,
    min_rtt: Option<Duration>,
    /// RTO before clamping and back-off: `rto_init` until the first sample.
    base: Duration,
    backoff: u32,
    rto_min: Duration,
    rto_max: Duration,
    granularity: Duration,
}

impl RttEstimator {
    pub fn new(
        rto_init: Duration,
        rto_min: Duration,
        rto_max: Duration,
        granularity: Duration,
    ) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            latest: None,
            min_rtt: None,
            base: rto_init,
            backoff: 0,
            rto_min,
            rto_max,
            granularity,
        }
    }

    /// Takes a valid RTT sample (RFC 6298 2.2/2.3) and clears the back-off (Karn).
    pub fn on_sample(&mut self, r: Duration) {
        let rn = r.as_nanos();
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = Duration::from_nanos(rn / 2);
            }
            Some(srtt) => {
                let s = srtt.as_nanos();
                // RTTVAR first, with the old SRTT (the order the RFC prescribes).
                let var = (3 * self.rttvar.as_nanos() as u128 + s.abs_diff(rn) as u128) / 4;
                let srtt = (7 * s as u128 + rn as u128) / 8;
                self.rttvar = Duration::from_nanos(var as u64);
                self.srtt = Some(Duration::from_nanos(srtt as u64));
            }
        }
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        self.base = self.unclamped_rto();
        self.backoff = 0;
    }

    /// SRTT + max(G, 4·RTTVAR) before the min/max clamp; `rto_init` before any sample.
    pub fn unclamped_rto(&self) -> Duration {
        match self.srtt {
            None => self.base,
            Some(srtt) => srtt + self.granularity.max(self.rttvar.saturating_mul(4)),
        }
    }

    /// The current timer value: clamped to [`rto_min`, `rto_max`] and backed off.
    pub fn rto(&self) -> Duration {
        let clamped = self.base.max(self.rto_min).min(self.rto_max);
        let backed = clamped.saturating_mul(1u64 << self.backoff.min(40));
        backed.min(self.rto_max)
    }

    /// RTO ← 2·RTO (RFC 6298 5.5), up to `rto_max`.
    pub fn back_off(&mut self) {
        if self.rto() < self.rto_max {
            self.backoff += 1;
        }
    }

    /// Number of back-offs in force.
    pub fn backoff_count(&self) -> u32 {
        self.backoff
    }

    /// RFC 6298 5.7: after a SYN timed out and with no sample yet, data transmission starts
    /// with an RTO of at least `rto` (3 s) and no back-off.
    pub fn restart_after_syn_timeout(&mut self, rto: Duration) {
        if self.srtt.is_none() {
            self.base = self.base.max(rto);
        }
        self.backoff = 0;
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }
    pub fn latest(&self) -> Option<Duration> {
        self.latest
    }
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    /// Spec "Test vectors D": samples 100, 200, 150 ms.
    #[test]
    fn rfc6298_vector() {
        let mut e = RttEstimator::new(
            Duration::from_secs(1),
            Duration::ZERO,
            Duration::from_secs(60),
            Duration::ZERO,
        );
        assert_eq!(e.rto(), Duration::from_secs(1));
        let expect = [
            (100_000_000, 50_000_000, 300_000_000),
            (112_500_000, 62_500_000, 362_500_000),
            (117_187_500, 56_250_000, 342_187_500),
        ];
        for (r, (srtt, var, rto)) in [100, 200, 150].into_iter().zip(expect) {
            e.on_sample(ms(r));
            assert_eq!(e.srtt().unwrap().as_nanos(), srtt);
            assert_eq!(e.rttvar().as_nanos(), var);
            assert_eq!(e.unclamped_rto().as_nanos(), rto);
        }
    }

    #[test]
    fn clamp_backoff_and_karn() {
        let mut e = RttEstimator::new(
            Duration::from_secs(1),
            ms(200),
            Duration::from_secs(120),
            Duration::ZERO,
        );
        e.on_sample(ms(10));
        assert_eq!(e.rto(), ms(200), "rto_min applies");
        e.back_off();
        e.back_off();
        assert_eq!(e.rto(), ms(800));
        for _ in 0..20 {
            e.back_off();
        }
        assert_eq!(e.rto(), Duration::from_secs(120));
        e.on_sample(ms(10));
        assert_eq!(e.rto(), ms(200), "a valid sample clears the back-off");
        // Granularity floors the variance term (Linux-like with G = rto_min).
        let mut g = RttEstimator::new(
            Duration::from_secs(3),
            ms(200),
            Duration::from_secs(120),
            ms(200),
        );
        g.on_sample(ms(300));
        assert_eq!(g.rto(), ms(300 + 600));
        g.on_sample(ms(300));
        assert_eq!(g.rto(), ms(300 + 450));
        for _ in 0..30 {
            g.on_sample(ms(300));
        }
        assert_eq!(g.rto(), ms(500), "SRTT + G once the variance has decayed");
    }
}
