//! Bit-error injection for a frame delivered with errors (spec A.5).
//!
//! A frame is N symbols of k bits; bit `s·k + j` (j < k) belongs to symbol `s`. Each symbol is in
//! error independently with probability Ps; an erroneous symbol flips exactly one of its k bits,
//! chosen uniformly (Gray mapping, nearest-neighbour error), so the bit error rate is Ps/k.
//!
//! Draws: positions of errored symbols come from geometric skips (one uniform per errored
//! symbol, plus one to end the frame) and one `below(k)` per errored symbol, so the cost is
//! proportional to the number of errors, not to N.
//!
//! References: \[S1\] (frames delivered with errors after the last retransmission).
//!
//! | deviation / assumption | where |
//! |---|---|
//! | one uniformly chosen bit per errored symbol (not the exact Gray error pattern) | A.5 (A) |
//! | conditioned variant with Ps = 0 (an impossible condition) places one error uniformly: the Ps → 0 limit | (A) |

use airlink_engine::RngStream;

/// Number of error-free symbols before the next error: Geometric(ps) on {0, 1, …} by inversion,
/// ⌊ln U / ln(1 − ps)⌋ with U ∈ (0, 1]. Returns `u64::MAX` when it exceeds `limit`.
#[inline]
fn geometric_skip(ln_q: f64, limit: u64, rng: &mut RngStream) -> u64 {
    let g = (rng.uniform_open0().ln() / ln_q).floor();
    if g >= limit as f64 {
        u64::MAX
    } else {
        g as u64
    }
}

/// Flips one uniformly chosen bit of symbol `sym`.
#[inline]
fn flip_one_bit(sym: u64, k: u32, rng: &mut RngStream, flip: &mut impl FnMut(u64)) {
    flip(sym * k as u64 + rng.below(k as u64));
}

/// Errors for symbols `start..n`, i.i.d. with `ps`; returns how many symbols were in error.
fn iid_from(
    start: u64,
    ps: f64,
    n: u64,
    k: u32,
    rng: &mut RngStream,
    flip: &mut impl FnMut(u64),
) -> u32 {
    let mut errors = 0;
    if ps >= 1.0 {
        for s in start..n {
            flip_one_bit(s, k, rng, flip);
            errors += 1;
        }
        return errors;
    }
    let ln_q = (-ps).ln_1p();
    let mut s = start;
    while s < n {
        let skip = geometric_skip(ln_q, n - s, rng);
        if skip == u64::MAX {
            break;
        }
        s += skip;
        flip_one_bit(s, k, rng, flip);
        errors += 1;
        s += 1;
    }
    errors
}

/// Injects i.i.d. symbol errors into a frame of `n_symbols` symbols of `bits_per_symbol` bits:
/// calls `flip(bit_index)` once per errored symbol, in increasing order, and returns the
/// number of errored symbols. `ps ≤ 0` draws nothing and injects nothing.
pub fn inject_symbol_errors(
    ps: f64,
    n_symbols: u32,
    bits_per_symbol: u32,
    rng: &mut RngStream,
    mut flip: impl FnMut(u64),
) -> u32 {
    assert!(bits_per_symbol > 0, "bits_per_symbol must be positive");
    debug_assert!(!ps.is_nan(), "symbol error probability is NaN");
    if ps <= 0.0 || n_symbols == 0 {
        return 0;
    }
    iid_from(0, ps, n_symbols as u64, bits_per_symbol, rng, &mut flip)
}

/// As [`inject_symbol_errors`], but conditioned on at least one symbol error: for a frame known
/// to be in error (e.g. ARQ gave up on it). The first errored symbol F is drawn from the
/// truncated geometric law P(F = f) = Ps(1−Ps)^f / (1 − (1−Ps)^N), f < N, by inversion; the
/// symbols after it are i.i.d. Always returns ≥ 1 when `n_symbols > 0`.
pub fn inject_symbol_errors_given_error(
    ps: f64,
    n_symbols: u32,
    bits_per_symbol: u32,
    rng: &mut RngStream,
    mut flip: impl FnMut(u64),
) -> u32 {
    assert!(bits_per_symbol > 0, "bits_per_symbol must be positive");
    debug_assert!(!ps.is_nan(), "symbol error probability is NaN");
    if n_symbols == 0 {
        return 0;
    }
    let n = n_symbols as u64;
    let first = if ps <= 0.0 {
        // The condition has probability 0; use the Ps → 0 limit (uniform position).
        rng.below(n)
    } else if ps >= 1.0 {
        0
    } else {
        // P(F ≤ f) = (1 − (1−Ps)^(f+1)) / FER  ⇒  F = ⌊ln(1 − U·FER) / ln(1 − Ps)⌋, U ∈ [0, 1).
        let ln_q = (-ps).ln_1p();
        let fer = -(n as f64 * ln_q).exp_m1();
        let f = ((-rng.uniform() * fer).ln_1p() / ln_q).floor();
        (f.max(0.0) as u64).min(n - 1) // rounding can reach N when U is near 1
    };
    flip_one_bit(first, bits_per_symbol, rng, &mut flip);
    1 + iid_from(first + 1, ps.max(0.0), n, bits_per_symbol, rng, &mut flip)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error_prob::frame_error_prob;
    use proptest::prelude::*;

    fn collect(ps: f64, n: u32, k: u32, seed: u64, given_error: bool) -> Vec<u64> {
        let mut rng = RngStream::derive(seed, "inject");
        let mut bits = Vec::new();
        let count = if given_error {
            inject_symbol_errors_given_error(ps, n, k, &mut rng, |b| bits.push(b))
        } else {
            inject_symbol_errors(ps, n, k, &mut rng, |b| bits.push(b))
        };
        assert_eq!(count as usize, bits.len());
        bits
    }

    proptest! {
        #[test]
        fn conditioned_variant_never_yields_an_error_free_frame(
            ps in prop_oneof![Just(0.0), 1e-12..1e-3f64, 1e-3..1.0f64, Just(1.0)],
            n in 1u32..300, k in 1u32..=8, seed in any::<u64>(),
        ) {
            let bits = collect(ps, n, k, seed, true);
            prop_assert!(!bits.is_empty());
            check_shape(&bits, n, k)?;
        }

        #[test]
        fn unconditional_variant_is_well_formed(
            ps in 0.0..=1.0f64, n in 0u32..300, k in 1u32..=8, seed in any::<u64>(),
        ) {
            let bits = collect(ps, n, k, seed, false);
            check_shape(&bits, n, k)?;
            if ps == 1.0 {
                prop_assert_eq!(bits.len(), n as usize);
            }
        }
    }

    /// Bits are inside the frame, strictly increasing, and at most one per symbol.
    fn check_shape(bits: &[u64], n: u32, k: u32) -> Result<(), TestCaseError> {
        let k = k as u64;
        for w in bits.windows(2) {
            prop_assert!(
                w[0] / k < w[1] / k,
                "two flips in one symbol or out of order: {:?}",
                bits
            );
        }
        if let Some(&last) = bits.last() {
            prop_assert!(last < n as u64 * k);
        }
        Ok(())
    }

    #[test]
    fn unconditional_ber_is_ps_over_k() {
        // Frames chosen so that ≈ 40 000 symbol errors are expected: σ ≈ 0.5 %.
        for (seed, (ps, k, frames)) in
            [(0.02, 4u32, 20_000u32), (1e-3, 1, 370_000), (0.3, 8, 1_250)]
                .into_iter()
                .enumerate()
        {
            let n = 108u32;
            let mut rng = RngStream::derive(seed as u64, "ber");
            let mut flipped = 0u64;
            let mut per_pos = vec![0u64; k as usize];
            for _ in 0..frames {
                inject_symbol_errors(ps, n, k, &mut rng, |b| {
                    flipped += 1;
                    per_pos[(b % k as u64) as usize] += 1;
                });
            }
            let ber = flipped as f64 / (frames as f64 * (n * k) as f64);
            assert!(
                (ber / (ps / k as f64) - 1.0).abs() < 0.02,
                "Ps {ps}, k {k}: BER {ber}"
            );
            // The flipped bit is uniform over the symbol's k bits.
            for c in &per_pos {
                let share = *c as f64 / (flipped as f64 / k as f64);
                assert!((share - 1.0).abs() < 0.05, "Ps {ps}, k {k}: {per_pos:?}");
            }
        }
    }

    #[test]
    fn conditioned_variant_has_the_conditional_law() {
        // E[#errors | ≥ 1] = N·Ps / FER, and the first errored symbol F has the truncated
        // geometric law P(F = f) = Ps(1−Ps)^f / FER.
        let (ps, n, k) = (0.005, 108u32, 2u32);
        let fer = frame_error_prob(ps, n);
        let mean_first_want: f64 = (0..n)
            .map(|f| f as f64 * ps * (1.0 - ps).powi(f as i32) / fer)
            .sum();
        let mut rng = RngStream::derive(2, "cond");
        let frames = 40_000;
        let (mut total, mut first_sum) = (0u64, 0u64);
        for _ in 0..frames {
            let mut first = None;
            total += inject_symbol_errors_given_error(ps, n, k, &mut rng, |b| {
                first.get_or_insert(b / k as u64);
            }) as u64;
            first_sum += first.unwrap();
        }
        let mean = total as f64 / frames as f64;
        let want = n as f64 * ps / fer;
        // σ of the means: ≈ 0.5 % and ≈ 0.4 % of their values.
        assert!((mean / want - 1.0).abs() < 0.02, "mean {mean} want {want}");
        let mean_first = first_sum as f64 / frames as f64;
        assert!(
            (mean_first / mean_first_want - 1.0).abs() < 0.015,
            "first {mean_first} want {mean_first_want}"
        );
    }

    #[test]
    fn same_stream_same_errors() {
        assert_eq!(
            collect(0.1, 108, 6, 9, false),
            collect(0.1, 108, 6, 9, false)
        );
        assert_eq!(collect(0.1, 108, 6, 9, true), collect(0.1, 108, 6, 9, true));
        assert!(collect(0.0, 108, 6, 9, false).is_empty());
    }
}
