//! A fixed-size histogram of sojourn times, for percentiles without storing each packet.
//!
//! Log-linear buckets (as HdrHistogram's): below 2^SUB ns one bucket per nanosecond, above it
//! 2^SUB buckets per power of two, so a percentile is within 1/2^SUB (about 1.6 %) of the true
//! value; the reported value is the bucket's midpoint.

use airlink_engine::Duration;

/// Sub-buckets per power of two, as a power of two.
const SUB: u32 = 6;
const BUCKETS: usize = ((64 - SUB as usize) + 1) << SUB;

#[derive(Clone, Debug, PartialEq)]
pub struct SojournHistogram {
    counts: Box<[u64]>,
    count: u64,
    sum_ns: u128,
}

impl Default for SojournHistogram {
    fn default() -> Self {
        SojournHistogram {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            count: 0,
            sum_ns: 0,
        }
    }
}

fn bucket(ns: u64) -> usize {
    if ns < 1 << SUB {
        return ns as usize;
    }
    let exp = 63 - ns.leading_zeros(); // ≥ SUB
    let shift = exp - SUB;
    let sub = (ns >> shift) as usize & ((1 << SUB) - 1);
    (((shift + 1) as usize) << SUB) + sub
}

/// The lowest value and width of bucket `i`.
fn bounds(i: usize) -> (u64, u64) {
    if i < 1 << SUB {
        return (i as u64, 1);
    }
    let shift = (i >> SUB) as u32 - 1;
    let sub = (i & ((1 << SUB) - 1)) as u64;
    (((1 << SUB) + sub) << shift, 1 << shift)
}

impl SojournHistogram {
    pub fn record(&mut self, d: Duration) {
        self.counts[bucket(d.as_nanos())] += 1;
        self.count += 1;
        self.sum_ns += d.as_nanos() as u128;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn mean(&self) -> Option<Duration> {
        (self.count > 0).then(|| Duration::from_nanos((self.sum_ns / self.count as u128) as u64))
    }

    /// The `q`-quantile (0 ≤ q ≤ 1): the midpoint of the bucket holding the ⌈q·n⌉-th smallest
    /// value; `None` when nothing was recorded.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (low, width) = bounds(i);
                return Some(Duration::from_nanos(low + width / 2));
            }
        }
        unreachable!("the counts add up to count")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order() {
        let mut last = 0;
        for ns in (0..100_000u64).chain([u64::MAX / 3, u64::MAX]) {
            let b = bucket(ns);
            assert!(b >= last && b < BUCKETS);
            let (low, width) = bounds(b);
            assert!(
                low <= ns && ns - low < width,
                "{ns}: bucket {b} = [{low}, +{width})"
            );
            last = b;
        }
    }

    #[test]
    fn quantiles_of_a_uniform_sample_are_within_the_resolution() {
        let mut h = SojournHistogram::default();
        for ms in 1..=1000u64 {
            h.record(Duration::from_millis(ms));
        }
        for (q, want) in [(0.5, 500.0), (0.95, 950.0), (0.99, 990.0)] {
            let got = h.quantile(q).unwrap().as_millis_f64();
            assert!((got / want - 1.0).abs() < 1.0 / 64.0, "q{q}: {got} ms");
        }
        assert_eq!(h.mean().unwrap(), Duration::from_micros(500_500));
        assert_eq!(SojournHistogram::default().quantile(0.5), None);
    }
}
