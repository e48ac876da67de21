//! Adaptive modulation: choosing a format per frame from the *predicted* SNR (spec A.6).
//!
//! A [`ModulationTable`] is built once per (rule, γ̄, ε, N) and then answers
//! [`ModulationTable::select`] with a scan of at most 7 thresholds (≈ 2 ns). Building costs
//! ≈ 15 µs, except for the max-throughput rule with imperfect prediction (ε > 0): ≈ 20 ms
//! (release build), one 2001-point quadrature per root-finding step. The caller refreshes the
//! table when γ̄ moves (the spec suggests by more than 0.5 dB (A)): [`LocalSwitching`] keeps
//! tables on a 0.5 dB grid of the local mean γ̄·S; [`ModulationTable::mean_snr_lin`] says what
//! a table was built for.
//!
//! References: \[S1\] (predicted SNR chooses the format, true SNR decides errors; switching
//! levels "optimized to provide maximum throughput in each link layer frame"); \[SF04\] Sternad &
//! Falahati, PIMRC 2004 (throughput of error-free frames averaged over the pdf of the true
//! channel given the prediction; abstract only).
//!
//! | deviation / assumption | where |
//! |---|---|
//! | \[SF04\]'s own thresholds were not findable; they are recomputed from its stated criterion | A.6(b) |
//! | prediction error model: h = ĥ + e, e ~ CN(0, ε) independent of ĥ (non-central χ², 2 d.o.f.) | A.6(b), B.6 |
//! | the conditional expectation uses a 2001-point trapezoid over [max(0, s+ε−12σ), s+ε+12σ+10ε], its weights renormalised to sum to 1 (removes truncation and quadrature error of the density's mass) | A.6(b) (A) |
//! | thresholds are searched on [−30, 70] dB of predicted SNR (safeguarded false position to 1e-5 dB); a format that wins (loses) over the whole range switches at −∞ (never) | (A) |
//! | each adjacent pair's goodput difference is assumed to change sign once; formats that are never the argmax drop out (upper envelope) — checked against a brute-force argmax scan in the tests | (A) |
//! | target-BER rule uses Pb = Ps/k of the chosen odd-k model; below every threshold the lowest format of the set is used (no "do not send" option) | A.6(a) |

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use crate::error_prob::{bit_error_prob, db_to_lin, symbol_error_prob};
use crate::modulation::{Modulation, OddKModel};
use crate::special::i0e;

/// How the format is chosen from the predicted SNR.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum SwitchingRule {
    /// The largest M whose BER (Pb = Ps/k) at the predicted SNR is at most the target; the
    /// lowest format of the set if none qualifies.
    TargetBer(f64),
    /// argmax_M k·E[(1 − Ps_M(γ))^N | prediction]: throughput of error-free frames (\[SF04\]).
    MaxThroughput,
}

/// Why a [`ModulationTable`] could not be built.
#[derive(Clone, Debug, PartialEq)]
pub enum TableError {
    /// The modulation set is empty.
    EmptySet,
    /// The target BER is not in (0, 1).
    InvalidTargetBer(f64),
    /// The prediction NMSE is not in [0, 1).
    InvalidNmse(f64),
    /// The mean SNR is not positive and finite (needed when NMSE > 0).
    InvalidMeanSnr(f64),
    /// A frame of zero symbols has no errors, so no rule can discriminate.
    ZeroSymbols,
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableError::EmptySet => write!(f, "the modulation set is empty"),
            TableError::InvalidTargetBer(b) => write!(f, "target BER {b} is not in (0, 1)"),
            TableError::InvalidNmse(e) => write!(f, "prediction NMSE {e} is not in [0, 1)"),
            TableError::InvalidMeanSnr(g) => {
                write!(f, "mean SNR {g} (linear) is not positive and finite")
            }
            TableError::ZeroSymbols => write!(f, "frames must have at least one symbol"),
        }
    }
}

impl std::error::Error for TableError {}

/// Search range of the threshold bisections, predicted SNR in dB.
const DB_LO: f64 = -30.0;
const DB_HI: f64 = 70.0;
/// Root finding stops when the bracket is narrower than this (dB).
const DB_TOL: f64 = 1e-5;
/// Trapezoid points for the conditional expectation (spec: at least 2000).
const QUAD_POINTS: usize = 2001;

/// Selects a modulation from the predicted SNR by precomputed thresholds.
#[derive(Clone, Debug)]
pub struct ModulationTable {
    /// Formats in use, ascending; `levels[0]` is used below every threshold.
    levels: Vec<Modulation>,
    /// `thresholds_lin[i]`: predicted SNR (linear) from which `levels[i + 1]` is used. Ascending.
    thresholds_lin: Vec<f64>,
    /// The same in dB, as found (for reporting without a round trip).
    thresholds_db: Vec<f64>,
    rule: SwitchingRule,
    mean_snr_lin: f64,
    nmse: f64,
}

impl ModulationTable {
    /// Builds the table for the formats in `set` (order and duplicates do not matter).
    ///
    /// `mean_snr_lin` (γ̄) and `nmse` (ε) matter only for [`SwitchingRule::MaxThroughput`] with
    /// ε > 0, where the true normalised power x given the predicted s = γ̂/γ̄ has the pdf of
    /// spec A.6(b); `n_symbols` is the frame length N (108 in WIPEMU).
    pub fn new(
        set: &[Modulation],
        rule: SwitchingRule,
        mean_snr_lin: f64,
        nmse: f64,
        n_symbols: u32,
        odd: OddKModel,
    ) -> Result<Self, TableError> {
        let mut mods = set.to_vec();
        mods.sort();
        mods.dedup();
        if mods.is_empty() {
            return Err(TableError::EmptySet);
        }
        if !(0.0..1.0).contains(&nmse) {
            return Err(TableError::InvalidNmse(nmse));
        }
        let (levels, thresholds_db) = match rule {
            SwitchingRule::TargetBer(target) => {
                if !(target > 0.0 && target < 1.0) {
                    return Err(TableError::InvalidTargetBer(target));
                }
                target_ber_levels(&mods, target, odd)
            }
            SwitchingRule::MaxThroughput => {
                if n_symbols == 0 {
                    return Err(TableError::ZeroSymbols);
                }
                if nmse > 0.0 && !(mean_snr_lin > 0.0 && mean_snr_lin.is_finite()) {
                    return Err(TableError::InvalidMeanSnr(mean_snr_lin));
                }
                let mut eval = GoodputEval::new(mean_snr_lin, nmse, n_symbols, odd);
                max_throughput_levels(&mods, &mut eval)
            }
        };
        Ok(ModulationTable {
            levels,
            thresholds_lin: thresholds_db.iter().map(|&d| db_to_lin(d)).collect(),
            thresholds_db,
            rule,
            mean_snr_lin,
            nmse,
        })
    }

    /// The format for a frame whose predicted SNR is `predicted_snr_lin` (linear). NaN selects
    /// the lowest format.
    #[inline]
    pub fn select(&self, predicted_snr_lin: f64) -> Modulation {
        // ≤ 7 thresholds: a linear scan beats a binary search here.
        let i = self
            .thresholds_lin
            .iter()
            .take_while(|&&t| t <= predicted_snr_lin)
            .count();
        self.levels[i]
    }

    /// The formats that can be selected, ascending, each with the predicted SNR in dB from
    /// which it is used (the first is −∞). Formats of the set that never win are absent.
    pub fn thresholds_db(&self) -> Vec<(Modulation, f64)> {
        let starts = std::iter::once(f64::NEG_INFINITY).chain(self.thresholds_db.iter().copied());
        self.levels.iter().copied().zip(starts).collect()
    }

    /// The formats that can be selected, ascending.
    pub fn levels(&self) -> &[Modulation] {
        &self.levels
    }

    /// The rule the table was built with.
    pub fn rule(&self) -> SwitchingRule {
        self.rule
    }

    /// The mean SNR γ̄ (linear) the table was built for.
    pub fn mean_snr_lin(&self) -> f64 {
        self.mean_snr_lin
    }

    /// The prediction NMSE ε the table was built for.
    pub fn nmse(&self) -> f64 {
        self.nmse
    }
}

/// Step of the local mean SNR on which [`LocalSwitching`] builds its tables (dB): a table is
/// used within ±0.25 dB of the mean it was built for, inside the spec's 0.5 dB (A.6(b)).
pub const REFRESH_STEP_DB: f64 = 0.5;

/// The switching levels of one rule for whatever the *local* mean SNR is (γ̄ times the
/// shadowing, moved by timed changes): with imperfect prediction the max-throughput levels
/// depend on γ̄ (spec A.6(b): refresh them when it moves by more than 0.5 dB). Tables are built
/// on first use for the mean rounded to [`REFRESH_STEP_DB`] and kept, shared by every link (and
/// run) with the same rule: a pure memo, so results do not depend on which run built a table.
#[derive(Debug)]
pub struct LocalSwitching {
    set: Vec<Modulation>,
    rule: SwitchingRule,
    nmse: f64,
    n_symbols: u32,
    odd: OddKModel,
    tables: Mutex<HashMap<i64, Arc<ModulationTable>>>,
}

impl LocalSwitching {
    /// Checks the rule's parameters by building the table for `check_mean_snr_lin` (kept).
    pub fn new(
        set: &[Modulation],
        rule: SwitchingRule,
        nmse: f64,
        n_symbols: u32,
        odd: OddKModel,
        check_mean_snr_lin: f64,
    ) -> Result<Self, TableError> {
        let local = LocalSwitching {
            set: set.to_vec(),
            rule,
            nmse,
            n_symbols,
            odd,
            tables: Mutex::default(),
        };
        let step = Self::step_of(check_mean_snr_lin)
            .ok_or(TableError::InvalidMeanSnr(check_mean_snr_lin))?;
        let table = local.build(step)?;
        local
            .tables
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(step, Arc::new(table));
        Ok(local)
    }

    /// Whether the levels move with the mean at all: only max-throughput with ε > 0 does.
    pub fn depends_on_mean(&self) -> bool {
        self.rule == SwitchingRule::MaxThroughput && self.nmse > 0.0
    }

    /// The step (index on the [`REFRESH_STEP_DB`] grid) of a mean SNR; `None` if it is not
    /// positive and finite.
    pub fn step_of(mean_snr_lin: f64) -> Option<i64> {
        (mean_snr_lin > 0.0 && mean_snr_lin.is_finite())
            .then(|| (10.0 * mean_snr_lin.log10() / REFRESH_STEP_DB).round() as i64)
    }

    /// The table of grid step `step` (see [`Self::step_of`]).
    pub fn table(&self, step: i64) -> Arc<ModulationTable> {
        let mut tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        let table = tables.entry(step).or_insert_with(|| {
            Arc::new(
                self.build(step)
                    .expect("the parameters were checked when the set was made"),
            )
        });
        Arc::clone(table)
    }

    fn build(&self, step: i64) -> Result<ModulationTable, TableError> {
        let mean = db_to_lin(step as f64 * REFRESH_STEP_DB);
        ModulationTable::new(
            &self.set,
            self.rule,
            mean,
            self.nmse,
            self.n_symbols,
            self.odd,
        )
    }
}

/// Expected error-free throughput k·E[(1 − Ps(γ))^N | γ̂] in bits per symbol (A.6(b)).
///
/// With `nmse` = 0 the expectation collapses to γ = γ̂ and `mean_snr_lin` is unused.
pub fn expected_goodput(
    m: Modulation,
    predicted_snr_lin: f64,
    mean_snr_lin: f64,
    nmse: f64,
    n_symbols: u32,
    odd: OddKModel,
) -> f64 {
    let mut eval = GoodputEval::new(mean_snr_lin, nmse, n_symbols, odd);
    eval.prepare(predicted_snr_lin);
    eval.goodput(m)
}

/// Largest M with Pb(γ̂) ≤ target, as piecewise-constant levels.
fn target_ber_levels(
    mods: &[Modulation],
    target: f64,
    odd: OddKModel,
) -> (Vec<Modulation>, Vec<f64>) {
    // Pb is decreasing in γ, so M qualifies iff γ̂ ≥ its threshold (log domain: Pb spans 300 decades).
    let mut thr: Vec<(f64, Modulation)> = mods
        .iter()
        .map(|&m| {
            (
                crossing(DB_LO, |db| {
                    target.ln() - bit_error_prob(m, db_to_lin(db), odd).ln()
                }),
                m,
            )
        })
        .collect();
    thr.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut levels = vec![mods[0]];
    let mut starts = vec![f64::NEG_INFINITY];
    for (t, m) in thr {
        if t == f64::INFINITY || m <= *levels.last().unwrap() {
            continue; // never qualifies, or a larger format already applies from here
        }
        if t == *starts.last().unwrap() {
            *levels.last_mut().unwrap() = m;
        } else {
            levels.push(m);
            starts.push(t);
        }
    }
    starts.remove(0);
    (levels, starts)
}

/// Max-throughput levels: the upper envelope of the goodput curves.
fn max_throughput_levels(
    mods: &[Modulation],
    eval: &mut GoodputEval,
) -> (Vec<Modulation>, Vec<f64>) {
    upper_envelope(mods, |hi, lo, db| {
        eval.prepare(db_to_lin(db));
        eval.ln_goodput_ratio(hi, lo)
    })
}

/// Upper envelope of curves indexed by `mods` (ascending): `advantage(hi, lo, db)` is positive
/// where `hi` is strictly better than `lo`, assumed to change sign once, from ≤ 0 to > 0.
/// A curve that is overtaken by the next one before it takes over itself is never the argmax
/// and is dropped (the classic stack construction), so the result is strictly ascending.
fn upper_envelope(
    mods: &[Modulation],
    mut advantage: impl FnMut(Modulation, Modulation, f64) -> f64,
) -> (Vec<Modulation>, Vec<f64>) {
    // Stack of (format, dB from which it is used).
    let mut stack: Vec<(Modulation, f64)> = vec![(mods[0], f64::NEG_INFINITY)];
    for &m in &mods[1..] {
        loop {
            let (top, top_start) = *stack.last().unwrap();
            // Search above top_start only: a crossing at or below it means top never wins.
            let t = crossing(top_start.max(DB_LO), |db| advantage(m, top, db));
            if t == f64::INFINITY {
                break; // m never beats the current top: never selected
            }
            if t == f64::NEG_INFINITY {
                stack.pop();
                if stack.is_empty() {
                    stack.push((m, f64::NEG_INFINITY));
                    break;
                }
                continue;
            }
            stack.push((m, t));
            break;
        }
    }
    let levels = stack.iter().map(|&(m, _)| m).collect();
    let starts = stack[1..].iter().map(|&(_, t)| t).collect();
    (levels, starts)
}

/// Where `f` turns positive above `from`, assuming one sign change from ≤ 0 to > 0 in
/// [DB_LO, DB_HI]: −∞ if `f(from)` > 0 already, +∞ if `f` ≤ 0 (or NaN) up to DB_HI. Otherwise
/// the upper end of a final bracket of width ≤ DB_TOL (a point where `f` > 0).
///
/// Each evaluation of `f` may be a 2001-point quadrature, so this keeps them few (about 8–12
/// per threshold, against 27 for plain bisection): a bracket of ≤ 2 dB is found first — by
/// stepping up from `from` (adjacent thresholds are a few dB apart) or, from the bottom of the
/// range, by bisection — and then closed by Illinois false position, with a bisection step
/// whenever the secant point leaves the bracket or one end has been kept four times running.
fn crossing(from: f64, mut f: impl FnMut(f64) -> f64) -> f64 {
    const STEP_DB: f64 = 2.0;
    const MAX_STEPS: usize = 4;
    let (mut a, mut fa) = (from, f(from));
    if fa > 0.0 {
        return f64::NEG_INFINITY;
    }
    // Bracket [a, b] with f(a) ≤ 0 < f(b).
    let mut bracket = None;
    if from > DB_LO {
        for _ in 0..MAX_STEPS {
            let c = (a + STEP_DB).min(DB_HI);
            let fc = f(c);
            if fc > 0.0 {
                bracket = Some((c, fc));
                break;
            }
            (a, fa) = (c, fc);
            if c == DB_HI {
                return f64::INFINITY;
            }
        }
    }
    let (mut b, mut fb) = match bracket {
        Some(end) => end,
        None => {
            let fb = f(DB_HI);
            if fb.is_nan() || fb <= 0.0 {
                return f64::INFINITY;
            }
            (DB_HI, fb)
        }
    };
    let (mut last_moved_b, mut run) = (false, 0);
    for _ in 0..200 {
        if b - a <= DB_TOL {
            break;
        }
        let secant = a - fa * (b - a) / (fb - fa);
        let c = if b - a > STEP_DB || run >= 4 || !(secant > a && secant < b) {
            run = 0;
            0.5 * (a + b)
        } else {
            secant
        };
        let fc = f(c);
        let moved_b = fc > 0.0;
        if moved_b {
            (b, fb) = (c, fc);
        } else {
            (a, fa) = (c, fc);
        }
        if run > 0 && moved_b == last_moved_b {
            // The other end is stale: halve its value so the next secant reaches past the root.
            run += 1;
            if moved_b {
                fa *= 0.5;
            } else {
                fb *= 0.5;
            }
        } else {
            run = 1;
        }
        last_moved_b = moved_b;
    }
    b
}

/// E[(1 − Ps(γ))^N | γ̂] by quadrature over the conditional law of the true SNR γ.
struct GoodputEval {
    mean_snr_lin: f64,
    nmse: f64,
    n_symbols: u32,
    odd: OddKModel,
    /// True SNR nodes (linear) and their probability weights (summing to 1).
    gammas: Vec<f64>,
    weights: Vec<f64>,
}

impl GoodputEval {
    fn new(mean_snr_lin: f64, nmse: f64, n_symbols: u32, odd: OddKModel) -> Self {
        let cap = if nmse > 0.0 { QUAD_POINTS } else { 1 };
        GoodputEval {
            mean_snr_lin,
            nmse,
            n_symbols,
            odd,
            gammas: Vec::with_capacity(cap),
            weights: Vec::with_capacity(cap),
        }
    }

    /// Sets up the nodes for predicted SNR `pred` (linear).
    fn prepare(&mut self, pred: f64) {
        self.gammas.clear();
        self.weights.clear();
        if self.nmse == 0.0 {
            self.gammas.push(pred);
            self.weights.push(1.0);
            return;
        }
        let eps = self.nmse;
        let s = pred / self.mean_snr_lin;
        // f(x|s) = (1/ε)·exp(−(x+s)/ε)·I0(2√(sx)/ε) = (1/ε)·exp(−(√x−√s)²/ε)·i0e(2√(sx)/ε);
        // the constant 1/ε cancels in the normalisation.
        let sigma = (eps * (2.0 * s + eps)).sqrt();
        let lo = (s + eps - 12.0 * sigma).max(0.0);
        let hi = s + eps + 12.0 * sigma + 10.0 * eps;
        let h = (hi - lo) / (QUAD_POINTS - 1) as f64;
        let sqrt_s = s.sqrt();
        let mut total = 0.0;
        for i in 0..QUAD_POINTS {
            let x = lo + h * i as f64;
            let sx = x.sqrt();
            let d = sx - sqrt_s;
            let pdf = (-d * d / eps).exp() * i0e(2.0 * sqrt_s * sx / eps);
            let w = if i == 0 || i == QUAD_POINTS - 1 {
                0.5 * pdf
            } else {
                pdf
            };
            total += w;
            self.gammas.push(self.mean_snr_lin * x);
            self.weights.push(w);
        }
        for w in &mut self.weights {
            *w /= total;
        }
    }

    /// ln of the frame success probability (1 − Ps)^N at true SNR `g`.
    #[inline]
    fn ln_success(&self, m: Modulation, g: f64) -> f64 {
        self.n_symbols as f64 * (-symbol_error_prob(m, g, self.odd)).ln_1p()
    }

    /// k·E[(1 − Ps_m(γ))^N] over the prepared nodes.
    fn goodput(&self, m: Modulation) -> f64 {
        // powi rather than exp(N·ln1p(−Ps)): half the cost in this hot loop; the rounding of
        // 1 − Ps only matters for Ps < 1e-16, where the frame is error-free to 1e-14 anyway.
        let n = self.n_symbols.min(i32::MAX as u32) as i32;
        let mean: f64 = self
            .gammas
            .iter()
            .zip(&self.weights)
            .map(|(&g, &w)| w * (1.0 - symbol_error_prob(m, g, self.odd)).powi(n))
            .sum();
        m.bits() as f64 * mean
    }

    /// ln(goodput(hi) / goodput(lo)), exact even where both goodputs underflow (long frames at
    /// low SNR), where it switches to log-sum-exp.
    fn ln_goodput_ratio(&self, hi: Modulation, lo: Modulation) -> f64 {
        let (gh, gl) = (self.goodput(hi), self.goodput(lo));
        if gh > 1e-250 && gl > 1e-250 {
            (gh / gl).ln()
        } else {
            self.ln_goodput(hi) - self.ln_goodput(lo)
        }
    }

    /// ln(k·E[(1 − Ps_m(γ))^N]) by streaming log-sum-exp.
    fn ln_goodput(&self, m: Modulation) -> f64 {
        let (mut max, mut sum) = (f64::NEG_INFINITY, 0.0);
        for (&g, &w) in self.gammas.iter().zip(&self.weights) {
            if w <= 0.0 {
                continue; // pdf underflowed in the far tail
            }
            let t = w.ln() + self.ln_success(m, g);
            if t > max {
                // Rescale the running sum to the new maximum.
                sum = sum * (max - t).exp() + 1.0;
                max = t;
            } else {
                sum += (t - max).exp();
            }
        }
        (m.bits() as f64).ln() + max + sum.ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Modulation::*;

    const N: u32 = 108;
    const G: OddKModel = OddKModel::Generic;

    #[track_caller]
    fn assert_thresholds(table: &ModulationTable, want: &[(Modulation, f64)], tol_db: f64) {
        let got = table.thresholds_db();
        assert_eq!(got.len(), want.len(), "{got:?}");
        for (&(gm, gt), &(wm, wt)) in got.iter().zip(want) {
            assert_eq!(gm, wm, "{got:?}");
            assert!(
                (gt == wt) || (gt - wt).abs() <= tol_db,
                "{gm}: got {gt:.4} dB, want {wt} ({got:?})"
            );
        }
    }

    fn with_starts(starts: &[f64]) -> Vec<(Modulation, f64)> {
        Modulation::ALL
            .iter()
            .copied()
            .zip(std::iter::once(f64::NEG_INFINITY).chain(starts.iter().copied()))
            .collect()
    }

    #[test]
    fn target_ber_thresholds() {
        // Spec A.6(a) lists Pb(γ) = target per format, which are the switching points here.
        for (target, thr) in [
            (1e-2, [4.32, 7.33, 10.79, 13.89, 16.83, 19.71, 22.56, 25.39]),
            (1e-3, [6.79, 9.80, 13.35, 16.54, 19.58, 22.55, 25.49, 28.41]),
            (
                1e-5,
                [9.59, 12.60, 16.21, 19.46, 22.55, 25.57, 28.56, 31.53],
            ),
        ] {
            let t = ModulationTable::new(
                &Modulation::ALL,
                SwitchingRule::TargetBer(target),
                1.0,
                0.0,
                N,
                G,
            )
            .unwrap();
            // BPSK is used below its own threshold too (lowest of the set).
            assert_thresholds(&t, &with_starts(&thr[1..]), 0.02);
            for (m, db) in Modulation::ALL.iter().zip(thr) {
                let ber = bit_error_prob(*m, db_to_lin(db), G);
                assert!(
                    (ber / target - 1.0).abs() < 0.02 * 0.5 * ber.ln().abs(),
                    "{m} {ber}"
                );
            }
            assert_eq!(t.select(db_to_lin(thr[0] - 5.0)), Bpsk);
            assert_eq!(t.select(db_to_lin(thr[7] + 0.05)), Qam256);
            assert_eq!(t.select(db_to_lin(thr[3] + 0.05)), Qam16);
            assert_eq!(t.select(db_to_lin(thr[3] - 0.05)), Qam8);
        }
    }

    #[test]
    fn target_ber_with_a_subset_falls_back_to_its_lowest() {
        let t = ModulationTable::new(
            &[Qam64, Qam16],
            SwitchingRule::TargetBer(1e-3),
            1.0,
            0.0,
            N,
            G,
        )
        .unwrap();
        assert_eq!(t.levels(), &[Qam16, Qam64]);
        assert_eq!(t.select(db_to_lin(0.0)), Qam16);
        assert_eq!(t.select(db_to_lin(23.0)), Qam64);
    }

    #[test]
    fn max_throughput_perfect_prediction() {
        let t = ModulationTable::new(
            &Modulation::ALL,
            SwitchingRule::MaxThroughput,
            db_to_lin(16.0),
            0.0,
            N,
            G,
        )
        .unwrap();
        assert_thresholds(
            &t,
            &with_starts(&[8.70, 13.16, 16.89, 20.32, 23.59, 26.79, 29.94]),
            0.02,
        );
        // The goodput vector at 16 dB picks 8-QAM.
        assert_eq!(t.select(db_to_lin(16.0)), Qam8);
        // γ̄ does not matter with perfect prediction.
        let t2 = ModulationTable::new(
            &Modulation::ALL,
            SwitchingRule::MaxThroughput,
            1.0,
            0.0,
            N,
            G,
        )
        .unwrap();
        assert_eq!(t.thresholds_db(), t2.thresholds_db());
    }

    #[test]
    fn max_throughput_imperfect_prediction_at_16_db() {
        let mean = db_to_lin(16.0);
        for (eps, thr) in [
            (0.1, [3.43, 13.20, 17.34, 20.70, 23.84, 26.93, 30.02]),
            (0.01, [8.57, 13.28, 16.98, 20.37, 23.63, 26.81, 29.95]),
        ] {
            let t = ModulationTable::new(
                &Modulation::ALL,
                SwitchingRule::MaxThroughput,
                mean,
                eps,
                N,
                G,
            )
            .unwrap();
            assert_thresholds(&t, &with_starts(&thr), 0.02);
            assert_eq!(t.nmse(), eps);
        }
    }

    /// The envelope equals a brute-force argmax of the goodputs on a grid (away from thresholds).
    #[test]
    fn envelope_matches_brute_force_argmax() {
        let mean = db_to_lin(16.0);
        for (set, eps) in [
            (&Modulation::ALL[..], 0.0),
            (&Modulation::ALL[..], 0.1),
            (&[Bpsk, Qam8, Qam16, Qam256][..], 0.0),
            (&[Qam4, Qam64][..], 0.05),
        ] {
            let t =
                ModulationTable::new(set, SwitchingRule::MaxThroughput, mean, eps, N, G).unwrap();
            let thr = t.thresholds_db();
            let mut eval = GoodputEval::new(mean, eps, N, G);
            let mut db = -10.0;
            while db < 40.0 {
                if thr.iter().all(|&(_, t)| (t - db).abs() > 0.01) {
                    eval.prepare(db_to_lin(db));
                    let best = set
                        .iter()
                        .copied()
                        .max_by(|&a, &b| eval.goodput(a).total_cmp(&eval.goodput(b)))
                        .unwrap();
                    assert_eq!(
                        t.select(db_to_lin(db)),
                        best,
                        "eps {eps} at {db} dB: {thr:?}"
                    );
                }
                db += 0.25;
            }
        }
    }

    #[test]
    fn a_curve_that_never_wins_is_dropped() {
        // Lines in dB: c0 = 0, c1 = db − 10, c2 = 3(db − 8). c2 overtakes c1 at 7 dB, before c1
        // overtakes c0 at 10 dB, so c1 is never the argmax and c2 takes over from c0 at 8 dB.
        let curve = |m: Modulation, db: f64| match m {
            Bpsk => 0.0,
            Qam4 => db - 10.0,
            _ => 3.0 * (db - 8.0),
        };
        let (levels, starts) = upper_envelope(&[Bpsk, Qam4, Qam8], |hi, lo, db| {
            curve(hi, db) - curve(lo, db)
        });
        assert_eq!(levels, vec![Bpsk, Qam8]);
        assert!((starts[0] - 8.0).abs() < 1e-4, "{starts:?}");
        // A curve that dominates everywhere replaces the bottom one.
        let (levels, starts) = upper_envelope(&[Bpsk, Qam4], |_, _, _| 1.0);
        assert_eq!((levels, starts), (vec![Qam4], vec![]));
        // One that never wins is skipped.
        let (levels, _) = upper_envelope(&[Bpsk, Qam4], |_, _, _| -1.0);
        assert_eq!(levels, vec![Bpsk]);
    }

    #[test]
    fn crossing_finds_roots_and_reports_the_ends() {
        for root in [-29.0, -3.3, 12.345, 69.5] {
            for from in [DB_LO, root - 7.0, root - 0.5] {
                let from = from.max(DB_LO);
                // A steep sigmoid: secant steps alone would stall on it.
                let t = crossing(from, |db| ((db - root) * 5.0).tanh());
                assert!(
                    t >= root && t - root <= 2.0 * DB_TOL,
                    "root {root} from {from}: {t}"
                );
            }
        }
        assert_eq!(crossing(5.0, |db| db - 3.0), f64::NEG_INFINITY);
        assert_eq!(crossing(DB_LO, |_| -1.0), f64::INFINITY);
        assert_eq!(crossing(10.0, |_| f64::NAN), f64::INFINITY);
    }

    #[test]
    fn conditional_density_is_a_density() {
        // E[x | s] = s + ε for the non-central χ² law (A.6(b)): check the quadrature.
        let mean = db_to_lin(16.0);
        for (eps, s) in [(0.1, 0.0), (0.1, 0.05), (0.01, 1.3), (0.1, 30.0)] {
            let mut eval = GoodputEval::new(mean, eps, N, G);
            eval.prepare(s * mean);
            let m1: f64 = eval
                .gammas
                .iter()
                .zip(&eval.weights)
                .map(|(g, w)| w * g / mean)
                .sum();
            assert!(
                (m1 - (s + eps)).abs() < 1e-4 * (s + eps),
                "eps {eps} s {s}: {m1}"
            );
        }
    }

    #[test]
    fn validation() {
        let all = &Modulation::ALL;
        assert_eq!(
            ModulationTable::new(&[], SwitchingRule::MaxThroughput, 1.0, 0.0, N, G).unwrap_err(),
            TableError::EmptySet
        );
        assert_eq!(
            ModulationTable::new(all, SwitchingRule::TargetBer(0.0), 1.0, 0.0, N, G).unwrap_err(),
            TableError::InvalidTargetBer(0.0)
        );
        assert_eq!(
            ModulationTable::new(all, SwitchingRule::MaxThroughput, 1.0, 1.0, N, G).unwrap_err(),
            TableError::InvalidNmse(1.0)
        );
        assert_eq!(
            ModulationTable::new(all, SwitchingRule::MaxThroughput, 0.0, 0.1, N, G).unwrap_err(),
            TableError::InvalidMeanSnr(0.0)
        );
        assert_eq!(
            ModulationTable::new(all, SwitchingRule::MaxThroughput, 1.0, 0.0, 0, G).unwrap_err(),
            TableError::ZeroSymbols
        );
        // A single format is always selected.
        let t =
            ModulationTable::new(&[Qam16], SwitchingRule::MaxThroughput, 1.0, 0.0, N, G).unwrap();
        assert_eq!(t.select(0.0), Qam16);
        assert_eq!(t.select(f64::NAN), Qam16);
    }

    #[test]
    fn expected_goodput_matches_closed_form_without_error() {
        let g = expected_goodput(Qam8, db_to_lin(16.0), 123.0, 0.0, N, G);
        assert!((g - 2.9849).abs() < 5e-5);
        // Prediction error lowers the goodput of a format used near its edge.
        assert!(expected_goodput(Qam8, db_to_lin(16.0), db_to_lin(16.0), 0.1, N, G) < g);
    }

    #[test]
    fn local_switching_builds_the_table_of_the_nearest_half_db_step() {
        let local = LocalSwitching::new(
            &Modulation::ALL,
            SwitchingRule::MaxThroughput,
            0.1,
            N,
            G,
            db_to_lin(16.0),
        )
        .unwrap();
        assert!(local.depends_on_mean());
        assert_eq!(LocalSwitching::step_of(db_to_lin(16.24)), Some(32));
        assert_eq!(LocalSwitching::step_of(db_to_lin(16.26)), Some(33));
        assert_eq!(LocalSwitching::step_of(0.0), None);
        // The spec's vector at γ̄ = 16 dB, ε = 0.1: 4-QAM from 3.43 dB.
        let at16 = local.table(32);
        assert_eq!(at16.thresholds_db()[1].0, Qam4);
        assert!((at16.thresholds_db()[1].1 - 3.43).abs() < 0.01);
        // 4 dB lower, a predicted 4 dB no longer promises 4-QAM: the low switch moves up.
        let at12 = local.table(24);
        assert!((at12.mean_snr_lin() - db_to_lin(12.0)).abs() < 1e-9);
        assert!(
            at12.thresholds_db()[1].1 > 7.0,
            "{:?}",
            at12.thresholds_db()
        );
        assert!(
            Arc::ptr_eq(&at12, &local.table(24)),
            "a step's table is built once"
        );
        // Perfect prediction and the target-BER rule have one table for every mean.
        let perfect = LocalSwitching::new(
            &Modulation::ALL,
            SwitchingRule::MaxThroughput,
            0.0,
            N,
            G,
            db_to_lin(16.0),
        )
        .unwrap();
        assert!(!perfect.depends_on_mean());
        assert!(!LocalSwitching::new(
            &Modulation::ALL,
            SwitchingRule::TargetBer(1e-3),
            0.1,
            N,
            G,
            1.0
        )
        .unwrap()
        .depends_on_mean());
        assert_eq!(
            LocalSwitching::new(&[], SwitchingRule::MaxThroughput, 0.1, N, G, 1.0).unwrap_err(),
            TableError::EmptySet
        );
    }
}
