//! Seeded random streams, one per component.
//!
//! A component's stream is derived from `(run seed, component name)` by a fixed, documented
//! function ([`derive_seed`]: FNV-1a over the name, mixed with the seed by SplitMix64), and the
//! generator is Xoshiro256++ seeded through SplitMix64. Both are fixed algorithms whose output
//! never changes between library versions, so a seed means the same run forever.

use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// SplitMix64 finaliser: a bijective 64-bit mixer.
#[inline]
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The 64-bit seed of the component called `name` in a run seeded with `run_seed`.
pub fn derive_seed(run_seed: u64, name: &str) -> u64 {
    splitmix64(splitmix64(run_seed) ^ fnv1a64(name.as_bytes()))
}

/// A component's private random stream.
#[derive(Clone, Debug)]
pub struct RngStream {
    rng: Xoshiro256PlusPlus,
    /// Kept so that counter-based draws ([`RngStream::hashed_uniform`]) can be made from it.
    key: u64,
}

impl RngStream {
    /// The stream of component `name` in the run seeded with `run_seed`.
    pub fn derive(run_seed: u64, name: &str) -> Self {
        Self::from_seed(derive_seed(run_seed, name))
    }

    pub fn from_seed(seed: u64) -> Self {
        RngStream {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            key: seed,
        }
    }

    /// A sub-stream for a part of this component (e.g. `"tap3"`), independent of how many
    /// draws this stream has made.
    pub fn substream(&self, name: &str) -> Self {
        Self::from_seed(splitmix64(self.key ^ fnv1a64(name.as_bytes())))
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// Uniform in [0, 1), 53 bits of precision.
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in (0, 1]: safe as the argument of `ln`.
    #[inline]
    pub fn uniform_open0(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p` (p outside [0, 1] is clamped).
    #[inline]
    pub fn bernoulli(&mut self, p: f64) -> bool {
        p > 0.0 && self.uniform() < p
    }

    /// Uniform integer in [0, n). `n` must be positive.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        // Lemire's multiply-shift; bias below 2^-64 * n, irrelevant for model use.
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Standard normal draw (Box–Muller, both outputs used in turn would need state; we take
    /// the cosine branch only so one call consumes exactly two u64 draws).
    #[inline]
    pub fn normal(&mut self) -> f64 {
        let u1 = self.uniform_open0();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// A counter-based uniform in [0, 1): the same `(stream, counter)` always gives the same
    /// value, whatever else was drawn. Models use it for per-slot noise that must not depend
    /// on which slots were evaluated (lazy evaluation keeps common random numbers).
    #[inline]
    pub fn hashed_uniform(&self, counter: u64) -> f64 {
        let z = splitmix64(self.key ^ splitmix64(counter));
        (z >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A counter-based standard normal pair (Box–Muller on two hashed uniforms).
    #[inline]
    pub fn hashed_normal_pair(&self, counter: u64) -> (f64, f64) {
        let u1 = 1.0 - self.hashed_uniform(counter.wrapping_mul(2));
        let u2 = self.hashed_uniform(counter.wrapping_mul(2).wrapping_add(1));
        let r = (-2.0 * u1.ln()).sqrt();
        let (s, c) = (std::f64::consts::TAU * u2).sin_cos();
        (r * c, r * s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOLDEN_CHANNEL_SEED: u64 = 0x479b5f56d41ca7f5; // computed independently in Python
    const GOLDEN_CHANNEL_FIRST_DRAW: u64 = 0x831973380fd05be6;

    #[test]
    fn derivation_is_stable_across_versions() {
        // Golden values: if these change, every stored result's seed means something else.
        assert_eq!(derive_seed(1, "channel"), derive_seed(1, "channel"));
        let mut s = RngStream::derive(42, "flow0");
        let first = s.next_u64();
        assert_eq!(first, RngStream::derive(42, "flow0").next_u64());
        assert_ne!(first, RngStream::derive(42, "flow1").next_u64());
        assert_ne!(first, RngStream::derive(43, "flow0").next_u64());
        assert_eq!(derive_seed(1, "channel"), GOLDEN_CHANNEL_SEED);
        assert_eq!(
            RngStream::derive(1, "channel").next_u64(),
            GOLDEN_CHANNEL_FIRST_DRAW
        );
    }

    #[test]
    fn uniform_and_normal_moments() {
        let mut s = RngStream::derive(7, "moments");
        let n = 200_000;
        let (mut m, mut v) = (0.0, 0.0);
        for _ in 0..n {
            let x = s.normal();
            m += x;
            v += x * x;
        }
        m /= n as f64;
        v = v / n as f64 - m * m;
        assert!(m.abs() < 0.01, "mean {m}");
        assert!((v - 1.0).abs() < 0.01, "variance {v}");
        let u: f64 = (0..n).map(|_| s.uniform()).sum::<f64>() / n as f64;
        assert!((u - 0.5).abs() < 0.005);
    }

    #[test]
    fn hashed_draws_depend_only_on_counter() {
        let s = RngStream::derive(3, "noise");
        let mut t = s.clone();
        for _ in 0..10 {
            t.next_u64();
        }
        assert_eq!(s.hashed_normal_pair(12345), t.hashed_normal_pair(12345));
        assert_ne!(s.hashed_uniform(1), s.hashed_uniform(2));
    }

    #[test]
    fn substreams_are_independent_of_draw_count() {
        let a = RngStream::derive(9, "chan");
        let mut b = a.clone();
        b.next_u64();
        assert_eq!(
            a.substream("tap1").next_u64(),
            b.substream("tap1").next_u64()
        );
    }
}
