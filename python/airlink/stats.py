"""Statistics of replicated runs (spec section E): means, confidence intervals, the number of
replications, fairness.

Confidence intervals use Student's t with n-1 degrees of freedom (the spec's recommendation);
the normal quantile of [S3] is available for replicating that study.

>>> x = [3359, 3202, 3516, 3300, 3400]
>>> round(mean(x), 1), round(sample_sd(x), 3), round(t_halfwidth(x), 3)
(3355.4, 116.614, 144.795)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Z_95 = 1.959963984540054  # normal 0.975 quantile
Z_S3 = 1.96  # the rounded value [S3] eq. 15 uses


def mean(xs: Sequence[float]) -> float:
    """Sample mean (exactly rounded, ``statistics.fmean``); NaN for no samples."""
    return statistics.fmean(xs) if len(xs) else math.nan


def sample_sd(xs: Sequence[float]) -> float:
    """Sample standard deviation with the n-1 denominator; NaN below two samples (and for
    infinite samples: ``statistics.stdev`` refuses those, numpy's gives NaN)."""
    if len(xs) < 2:
        return math.nan
    with np.errstate(invalid="ignore"):
        return float(np.std(np.asarray(xs, dtype=float), ddof=1))


def _t() -> object:
    from scipy import stats as scipy_stats  # on first use: importing scipy.stats takes a while

    return scipy_stats.t


def t_quantile(n: int, confidence: float = 0.95) -> float:
    """Student-t quantile of order 1 - alpha/2 with n-1 degrees of freedom.

    >>> round(t_quantile(30), 4)
    2.0452
    """
    if n < 2:
        return math.nan
    return float(_t().interval(confidence, n - 1)[1])  # type: ignore[attr-defined]


def t_halfwidth_of(sd: float, n: int, confidence: float = 0.95) -> float:
    """Half-width t·s/√n of the confidence interval of a mean from n samples with s.d. ``sd``
    (the standard interval's quantile times the standard error: scipy's ``scale`` must be > 0,
    and a constant sample has an interval of width 0)."""
    if n < 2:
        return math.nan
    return t_quantile(n, confidence) * (sd / math.sqrt(n))


def t_halfwidth(xs: Sequence[float], confidence: float = 0.95) -> float:
    """Student-t confidence-interval half-width of the mean of ``xs``."""
    return t_halfwidth_of(sample_sd(xs), len(xs), confidence)


def z_halfwidth(xs: Sequence[float], z: float = Z_S3) -> float:
    """Normal-quantile half-width z·s/√n with [S3]'s z = 1.96 (pass ``Z_95`` for the exact quantile)."""
    n = len(xs)
    return z * sample_sd(xs) / math.sqrt(n) if n >= 2 else math.nan


@dataclass(frozen=True)
class Estimate:
    """A mean of replications with its 95 % Student-t interval: ``mean ± ci95``."""

    n: int
    mean: float
    sd: float
    ci95: float


def estimate(xs: Sequence[float]) -> Estimate:
    """Mean, s.d. and 95 % t half-width of ``xs`` (NaN where undefined)."""
    values = [float(x) for x in xs]
    return Estimate(n=len(values), mean=mean(values), sd=sample_sd(values), ci95=t_halfwidth(values))


def replications_needed(sd: float, mean_value: float, precision: float = 0.05, z: float = Z_S3) -> int:
    """[S3] eq. 15: n = ⌈(z·s / (precision·x̄))²⌉ replications for a half-width of ``precision``·x̄.

    >>> replications_needed(0.1, 1.0), replications_needed(0.05, 1.0), replications_needed(0.2, 1.0)
    (16, 4, 62)
    """
    if mean_value == 0:
        raise ValueError("the relative precision of a zero mean is undefined")
    # Rounded to 9 digits first so that an exact integer is not pushed up by float error.
    return math.ceil(round((z * sd / (precision * abs(mean_value))) ** 2, 9))


def replications_needed_t(
    sd: float, mean_value: float, precision: float = 0.05, n_min: int = 3, n_max: int = 100_000
) -> int:
    """The t version of the rule (spec E, (A)): the smallest n ≥ ``n_min`` with
    t_{0.975,n-1}·s/√n ≤ ``precision``·|x̄|.

    >>> replications_needed_t(0.1, 1.0)
    18
    """
    if mean_value == 0:
        raise ValueError("the relative precision of a zero mean is undefined")
    target = precision * abs(mean_value)
    ns = np.arange(max(2, n_min), n_max + 1)
    # Every candidate's half-width in one vectorised quantile call, computed as t_halfwidth_of does.
    halves = _t().interval(0.95, ns - 1)[1] * (sd / np.sqrt(ns))  # type: ignore[attr-defined]
    enough = np.flatnonzero(halves <= target)
    if not len(enough):
        raise ValueError(f"more than {n_max} replications would be needed")
    return int(ns[enough[0]])


def additional_replications(pilot: Sequence[float], precision: float = 0.05) -> int:
    """How many more runs [S3]'s rule asks for after a pilot of ``len(pilot)`` runs (n_base = 3)."""
    needed = replications_needed(sample_sd(pilot), mean(pilot), precision)
    return max(0, needed - len(pilot))


def jain_index(xs: Sequence[float]) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²), in [1/n, 1]; NaN when every x is 0.

    >>> jain_index([1, 1, 1, 1]), jain_index([1, 0, 0, 0]), jain_index([3, 1])
    (1.0, 0.25, 0.8)
    """
    if not xs:
        raise ValueError("Jain's index of no allocations is undefined")
    largest = max(abs(x) for x in xs)
    if largest == 0:
        return math.nan
    # The index is scale-free: scaling by a power of two (exact) avoids under- and overflow.
    exponent = math.frexp(largest)[1]
    scaled = [math.ldexp(x, -exponent) for x in xs]
    return math.fsum(scaled) ** 2 / (len(xs) * math.fsum(x * x for x in scaled))


@dataclass(frozen=True)
class ProportionalFairness:
    """[S2] eq. 21: F_sys = (1/M)·Σ log Γ_i with Γ_i in kbyte/s, natural and decimal logs.

    Users with Γ_i = 0 make F_sys = -∞; ``starved`` counts them so a report can say why.
    """

    ln: float
    log10: float
    starved: int


def proportional_fairness(throughputs_kbyte_s: Sequence[float]) -> ProportionalFairness:
    """The PF metric of per-user throughputs in kbyte/s.

    >>> pf = proportional_fairness([10, 20, 40])
    >>> round(pf.ln, 6), round(pf.log10, 6), pf.starved
    (2.995732, 1.30103, 0)
    """
    if not throughputs_kbyte_s:
        raise ValueError("F_sys of no users is undefined")
    if any(x < 0 for x in throughputs_kbyte_s):
        raise ValueError("throughputs cannot be negative")
    starved = sum(1 for x in throughputs_kbyte_s if x == 0)
    if starved:
        return ProportionalFairness(-math.inf, -math.inf, starved)
    m = len(throughputs_kbyte_s)
    ln = math.fsum(math.log(x) for x in throughputs_kbyte_s) / m
    return ProportionalFairness(ln, ln / math.log(10), 0)
