//! Symbol, bit and frame error probabilities of uncoded M-QAM on an AWGN channel (spec A.1–A.5).
//!
//! SNR arguments are γ = Es/N0 per symbol, linear (spec A.1).
//!
//! References: Proakis, *Digital Communications*, and Goldsmith, *Wireless Communications*
//! (square-QAM SER, A.2); \[CY02\] Cho & Yoon, IEEE Trans. Commun. 50(7) 2002 (exact Gray BER, A.4);
//! \[ZYW10\] Zhang/Yu/Wei, EURASIP JWCN 2010:917954 (cross QAM, A.3); \[S1\] (frame = 108 symbols,
//! one flat bin).
//!
//! | deviation / assumption | where |
//! |---|---|
//! | odd k (8, 32, 128) default to the square formula with non-integer √M (`generic`): ≈ +20 % SER for 32 at 20 dB vs cross, 1.09 dB optimistic for 8 vs 4×2 rect | A.3 (A) |
//! | `cross` uses the rectangular-cell approximation (ignores diagonal edges at the cut corners; within 6 % of exact for SER ≥ 1e-8) | A.3 |
//! | `cross` for 8-QAM falls back to `rect` (no 8-point cross constellation) | A.3 (A) |
//! | default BER = Ps/k (one bit per symbol error, Gray), too low at low SNR for large M | A.4 |
//! | symbol errors within a frame are i.i.d. (bin assumed flat) | A.5, \[S1\] |

use crate::modulation::{Modulation, OddKModel};
use crate::special::q_function;

/// Symbol error probability Ps of `m` at SNR `snr_lin` (γ = Es/N0, linear).
///
/// Negative SNR is treated as 0 (Ps = 1 − 1/M for the square formulas).
pub fn symbol_error_prob(m: Modulation, snr_lin: f64, odd: OddKModel) -> f64 {
    debug_assert!(!snr_lin.is_nan(), "SNR is NaN");
    let g = snr_lin.max(0.0);
    use Modulation::*;
    match (m, odd) {
        (Bpsk, _) => q_function((2.0 * g).sqrt()),
        (Qam4 | Qam16 | Qam64 | Qam256, _) | (Qam8 | Qam32 | Qam128, OddKModel::Generic) => {
            square_ser(m.order() as f64, g)
        }
        (Qam8, OddKModel::Rect | OddKModel::Cross) => rect_ser(4.0, 2.0, g),
        (Qam32, OddKModel::Rect) => rect_ser(8.0, 4.0, g),
        (Qam128, OddKModel::Rect) => rect_ser(16.0, 8.0, g),
        (Qam32, OddKModel::Cross) => cross_ser(&CROSS_32, g),
        (Qam128, OddKModel::Cross) => cross_ser(&CROSS_128, g),
    }
}

/// Square M-QAM (A.2): a = 2(1 − M^-½)·Q(√(3γ/(M−1))), Ps = 2a − a² (written a(2 − a)).
#[inline]
fn square_ser(m: f64, g: f64) -> f64 {
    let a = 2.0 * (1.0 - m.sqrt().recip()) * q_function((3.0 * g / (m - 1.0)).sqrt());
    a * (2.0 - a)
}

/// I×J rectangular QAM (A.3 `rect`), exact: Ps = 1 − (1−p_I)(1−p_J) = p_I + p_J − p_I·p_J.
#[inline]
fn rect_ser(i: f64, j: f64, g: f64) -> f64 {
    let q = q_function((6.0 * g / (i * i + j * j - 2.0)).sqrt());
    let (pi, pj) = (2.0 * (1.0 - i.recip()) * q, 2.0 * (1.0 - j.recip()) * q);
    pi + pj - pi * pj
}

/// Neighbour counts of a cross constellation (A.3 `cross`).
struct CrossConstellation {
    /// M.
    m: f64,
    /// Σ_i (h_i + v_i): horizontal plus vertical nearest neighbours over all points.
    sum_h_plus_v: f64,
    /// Σ_i h_i·v_i.
    sum_hv: f64,
}

/// 32-cross: 6×6 odd grid less 1×1 corners. Counts checked from the geometry in the tests.
const CROSS_32: CrossConstellation = CrossConstellation {
    m: 32.0,
    sum_h_plus_v: 104.0,
    sum_hv: 88.0,
};
/// 128-cross: 12×12 odd grid less 2×2 corners.
const CROSS_128: CrossConstellation = CrossConstellation {
    m: 128.0,
    sum_h_plus_v: 464.0,
    sum_hv: 424.0,
};

/// Ps ≈ 1 − (1/M)·Σ_i (1 − h_i q)(1 − v_i q) expanded as (Σ(h+v)·q − Σhv·q²)/M, which avoids
/// the cancellation of 1 − (…) at high SNR; q = Q(√(3γ/(31M/32 − 1))).
#[inline]
fn cross_ser(c: &CrossConstellation, g: f64) -> f64 {
    let q = q_function((3.0 * g / (31.0 * c.m / 32.0 - 1.0)).sqrt());
    (c.sum_h_plus_v * q - c.sum_hv * q * q) / c.m
}

/// Bit error probability with Gray mapping, default model Pb = Ps/k (A.4).
#[inline]
pub fn bit_error_prob(m: Modulation, snr_lin: f64, odd: OddKModel) -> f64 {
    symbol_error_prob(m, snr_lin, odd) / m.bits() as f64
}

/// Exact Gray-mapped BER of BPSK and square M-QAM (\[CY02\], A.4); `None` for odd k, where no
/// exact Gray expression is implemented.
pub fn bit_error_prob_exact_gray(m: Modulation, snr_lin: f64) -> Option<f64> {
    if m == Modulation::Bpsk {
        return Some(symbol_error_prob(m, snr_lin, OddKModel::Generic));
    }
    if !m.is_square() {
        return None;
    }
    let g = snr_lin.max(0.0);
    let big_m = m.order() as u64;
    let sqrt_m = 1u64 << (m.bits() / 2); // √M
    let l = m.bits() / 2; // L = log2 √M
    let d = (3.0 * g / (big_m - 1) as f64).sqrt();
    let mut pb = 0.0;
    for j in 1..=l {
        let w = 1u64 << (j - 1); // 2^(j−1)
                                 // Upper index (1 − 2^−j)·√M − 1, an integer since 2^j divides √M.
        let i_max = sqrt_m - sqrt_m / (1 << j) - 1;
        let mut p = 0.0;
        for i in 0..=i_max {
            let t = i * w; // i·2^(j−1)
            let sign = if (t / sqrt_m) & 1 == 0 { 1.0 } else { -1.0 };
            // ⌊t/√M + ½⌋ in integers: ⌊(2t + √M) / (2√M)⌋.
            let weight = w as f64 - ((2 * t + sqrt_m) / (2 * sqrt_m)) as f64;
            p += sign * weight * 2.0 * q_function((2 * i + 1) as f64 * d);
        }
        pb += p / sqrt_m as f64;
    }
    Some(pb / l as f64)
}

/// Frame error probability of `n_symbols` i.i.d. symbols with error probability `ps` (A.5):
/// 1 − (1 − Ps)^N computed as −expm1(N·log1p(−Ps)), accurate for tiny Ps.
#[inline]
pub fn frame_error_prob(ps: f64, n_symbols: u32) -> f64 {
    if n_symbols == 0 || ps <= 0.0 {
        return 0.0;
    }
    -(n_symbols as f64 * (-ps.min(1.0)).ln_1p()).exp_m1()
}

/// Probability that all `n_symbols` symbols are correct, (1 − Ps)^N.
#[inline]
pub fn frame_success_prob(ps: f64, n_symbols: u32) -> f64 {
    if n_symbols == 0 || ps <= 0.0 {
        return 1.0;
    }
    (n_symbols as f64 * (-ps.min(1.0)).ln_1p()).exp()
}

/// dB to linear power ratio.
#[inline]
pub fn db_to_lin(db: f64) -> f64 {
    10f64.powf(db / 10.0)
}

/// Linear power ratio to dB.
#[inline]
pub fn lin_to_db(lin: f64) -> f64 {
    10.0 * lin.log10()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Modulation::*;

    /// Relative agreement to the 4–5 significant digits the spec prints.
    #[track_caller]
    fn close(got: f64, want: f64, rel_tol: f64) {
        assert!(
            ((got - want) / want).abs() <= rel_tol,
            "got {got:e}, want {want:e}"
        );
    }

    const G: OddKModel = OddKModel::Generic;

    #[test]
    fn ser_at_16_and_10_db() {
        let at16 = [
            2.2674e-19, 2.7981e-10, 4.6782e-05, 7.1520e-03, 8.0103e-02, 2.7322e-01, 5.1393e-01,
            7.1151e-01,
        ];
        let at10 = [
            3.8721e-06, 1.5648e-03, 4.9074e-02, 2.2203e-01, 4.6381e-01, 6.7383e-01, 8.1642e-01,
            9.0133e-01,
        ];
        for (i, m) in Modulation::ALL.into_iter().enumerate() {
            close(symbol_error_prob(m, db_to_lin(16.0), G), at16[i], 2e-4);
            close(symbol_error_prob(m, db_to_lin(10.0), G), at10[i], 2e-4);
        }
    }

    #[test]
    fn ser_limits() {
        assert_eq!(symbol_error_prob(Bpsk, 0.0, G), 0.5);
        for m in Modulation::ALL.into_iter().skip(1) {
            // γ = 0: uniform guess among M points under the square formula.
            let ps = symbol_error_prob(m, 0.0, G);
            close(ps, 1.0 - 1.0 / m.order() as f64, 1e-12);
            assert_eq!(symbol_error_prob(m, -3.0, G), ps);
            assert!(symbol_error_prob(m, 1e6, G) < 1e-300);
        }
        // QPSK: Ps = 2Q − Q² exactly.
        let q = q_function(db_to_lin(7.0).sqrt());
        close(
            symbol_error_prob(Qam4, db_to_lin(7.0), G),
            2.0 * q - q * q,
            1e-14,
        );
    }

    #[test]
    fn fer_vectors() {
        let fer = |m, db| frame_error_prob(symbol_error_prob(m, db_to_lin(db), G), 108);
        close(fer(Qam16, 20.0), 1.2538e-03, 2e-4);
        close(fer(Qam32, 20.0), 2.8249e-01, 2e-4);
        close(fer(Qam4, 15.0), 2.0220e-06, 2e-4);
        close(fer(Qam8, 15.0), 3.1874e-02, 2e-4);
        close(fer(Bpsk, 10.0), 4.1810e-04, 2e-4);
        assert_eq!(frame_error_prob(0.3, 0), 0.0);
        assert_eq!(frame_error_prob(1.0, 5), 1.0);
        // No cancellation for tiny Ps: FER ≈ N·Ps.
        close(frame_error_prob(1e-18, 108), 1.08e-16, 1e-12);
        close(frame_success_prob(0.01, 108), 0.99f64.powi(108), 1e-12);
    }

    #[test]
    fn goodput_pick_at_16_db() {
        let want = [1.0000, 2.0000, 2.9849, 1.8425, 0.0006];
        let good: Vec<f64> = Modulation::ALL[..5]
            .iter()
            .map(|&m| {
                m.bits() as f64 * frame_success_prob(symbol_error_prob(m, db_to_lin(16.0), G), 108)
            })
            .collect();
        for (g, w) in good.iter().zip(want) {
            assert!((g - w).abs() < 5e-5, "{good:?}");
        }
        let best = (0..5).max_by(|&a, &b| good[a].total_cmp(&good[b])).unwrap();
        assert_eq!(Modulation::ALL[best], Qam8);
    }

    #[test]
    fn rect_and_cross_vectors() {
        close(
            symbol_error_prob(Qam8, db_to_lin(15.0), OddKModel::Rect),
            1.4590e-03,
            2e-4,
        );
        close(
            symbol_error_prob(Qam32, db_to_lin(20.0), OddKModel::Rect),
            8.9915e-03,
            2e-4,
        );
        close(
            symbol_error_prob(Qam32, db_to_lin(20.0), OddKModel::Cross),
            2.5421e-03,
            2e-4,
        );
        close(
            symbol_error_prob(Qam32, db_to_lin(25.0), OddKModel::Cross),
            3.0423e-08,
            2e-4,
        );
        close(
            symbol_error_prob(Qam128, db_to_lin(25.0), OddKModel::Cross),
            9.9128e-03,
            2e-4,
        );
        // Within 6 % of the exact (grid-integrated) cross SER.
        close(
            symbol_error_prob(Qam32, db_to_lin(20.0), OddKModel::Cross),
            2.551e-03,
            0.06,
        );
        close(
            symbol_error_prob(Qam128, db_to_lin(25.0), OddKModel::Cross),
            9.865e-03,
            0.06,
        );
        // 8-QAM has no cross form: Cross == Rect.
        let g = db_to_lin(12.0);
        assert_eq!(
            symbol_error_prob(Qam8, g, OddKModel::Cross),
            symbol_error_prob(Qam8, g, OddKModel::Rect)
        );
        // Square formats ignore the odd-k model; rect with I = J reduces to the square formula.
        for odd in [OddKModel::Rect, OddKModel::Cross] {
            assert_eq!(
                symbol_error_prob(Qam64, g, odd),
                symbol_error_prob(Qam64, g, G)
            );
        }
        close(rect_ser(4.0, 4.0, g), square_ser(16.0, g), 1e-14);
    }

    /// Σ(h+v) and Σhv of the cross constellations, recounted from their geometry.
    #[test]
    fn cross_neighbour_counts_from_geometry() {
        for (c, side, corner) in [(&CROSS_32, 6i32, 1i32), (&CROSS_128, 12, 2)] {
            // Points on the odd grid ±1, ±3, … of a side×side square, corner×corner blocks cut.
            let inside = |x: i32, y: i32| {
                if x.abs() > side - 1 || y.abs() > side - 1 {
                    return false;
                }
                let (ix, iy) = ((x + side - 1) / 2, (y + side - 1) / 2); // column/row 0..side
                let edge = |i: i32| i < corner || i >= side - corner;
                !(edge(ix) && edge(iy))
            };
            let (mut n, mut s1, mut s2) = (0, 0, 0);
            for x in (-(side - 1)..side).step_by(2) {
                for y in (-(side - 1)..side).step_by(2) {
                    if !inside(x, y) {
                        continue;
                    }
                    n += 1;
                    let h = inside(x - 2, y) as i32 + inside(x + 2, y) as i32;
                    let v = inside(x, y - 2) as i32 + inside(x, y + 2) as i32;
                    s1 += h + v;
                    s2 += h * v;
                }
            }
            assert_eq!(n as f64, c.m);
            assert_eq!(s1 as f64, c.sum_h_plus_v);
            assert_eq!(s2 as f64, c.sum_hv);
        }
    }

    #[test]
    fn exact_gray_ber_vectors() {
        close(
            bit_error_prob_exact_gray(Qam16, db_to_lin(10.0)).unwrap(),
            5.8993e-02,
            2e-4,
        );
        close(
            bit_error_prob_exact_gray(Qam64, db_to_lin(15.0)).unwrap(),
            6.4159e-02,
            2e-4,
        );
        close(
            bit_error_prob_exact_gray(Qam256, db_to_lin(20.0)).unwrap(),
            6.5423e-02,
            2e-4,
        );
        // Ps/k is too low at low SNR (A.4): 256-QAM at 10 dB, 0.113 vs 0.237.
        close(bit_error_prob(Qam256, db_to_lin(10.0), G), 0.113, 0.01);
        close(
            bit_error_prob_exact_gray(Qam256, db_to_lin(10.0)).unwrap(),
            0.237,
            0.01,
        );
        // QPSK exact Gray BER is Q(√γ); BPSK is Ps.
        let g = db_to_lin(6.0);
        close(
            bit_error_prob_exact_gray(Qam4, g).unwrap(),
            q_function(g.sqrt()),
            1e-14,
        );
        close(
            bit_error_prob_exact_gray(Bpsk, g).unwrap(),
            q_function((2.0 * g).sqrt()),
            1e-14,
        );
        assert_eq!(bit_error_prob_exact_gray(Qam32, g), None);
        // At high SNR the exact BER approaches Ps/k.
        let g = db_to_lin(30.0);
        close(
            bit_error_prob_exact_gray(Qam64, g).unwrap(),
            bit_error_prob(Qam64, g, G),
            0.01,
        );
    }
}
