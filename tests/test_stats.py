"""Statistics against the spec's test vectors E (exact numbers) and two properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airlink import stats

X = [3359, 3202, 3516, 3300, 3400]


def test_vector_e_mean_sd_and_halfwidths() -> None:
    assert stats.mean(X) == pytest.approx(3355.4, abs=1e-9)
    assert stats.sample_sd(X) == pytest.approx(116.614, abs=5e-4)
    assert stats.z_halfwidth(X) == pytest.approx(102.217, abs=5e-4)
    assert stats.t_halfwidth(X) == pytest.approx(144.795, abs=5e-4)
    e = stats.estimate(X)
    assert (e.n, e.mean) == (5, pytest.approx(3355.4))
    assert e.ci95 == pytest.approx(144.795, abs=5e-4)


@pytest.mark.parametrize(
    "n, quantile",
    [(2, 12.7062), (3, 4.3027), (4, 3.1824), (5, 2.7764), (6, 2.5706), (8, 2.3646), (10, 2.2622),
     (11, 2.2281), (13, 2.1788), (20, 2.0930), (30, 2.0452)],
)
def test_vector_e_t_quantiles(n: int, quantile: float) -> None:
    assert stats.t_quantile(n) == pytest.approx(quantile, abs=5e-5)


def test_vector_e_z() -> None:
    assert stats.Z_95 == pytest.approx(1.95996, abs=5e-6)


@pytest.mark.parametrize("relative_sd, n", [(0.1, 16), (0.05, 4), (0.2, 62)])
def test_vector_e_replication_rule(relative_sd: float, n: int) -> None:
    assert stats.replications_needed(relative_sd * 3355.4, 3355.4) == n


def test_replication_rule_t_version_is_the_smallest_sufficient_n() -> None:
    n = stats.replications_needed_t(0.1, 1.0)
    assert stats.t_halfwidth_of(0.1, n) <= 0.05 < stats.t_halfwidth_of(0.1, n - 1)
    assert stats.additional_replications([10.0, 10.0, 10.0]) == 0


@pytest.mark.parametrize(
    "xs, j", [([1, 1, 1, 1], 1.0), ([1, 0, 0, 0], 0.25), ([3, 1], 0.8), ([100, 200, 300], 0.857143)]
)
def test_vector_e_jain(xs: list[float], j: float) -> None:
    assert stats.jain_index(xs) == pytest.approx(j, abs=5e-7)


def test_vector_e_proportional_fairness() -> None:
    pf = stats.proportional_fairness([10, 20, 40])
    assert pf.ln == pytest.approx(2.995732, abs=5e-7)
    assert pf.log10 == pytest.approx(1.301030, abs=5e-7)
    starved = stats.proportional_fairness([10, 0, 40])
    assert starved.ln == -math.inf and starved.starved == 1


def test_undefined_cases_are_nan_not_errors() -> None:
    assert math.isnan(stats.sample_sd([1.0]))
    assert math.isnan(stats.estimate([5.0]).ci95)
    assert math.isnan(stats.mean([]))


@given(st.lists(st.floats(min_value=0, max_value=1e9, allow_nan=False), min_size=1, max_size=50).filter(lambda xs: sum(xs) > 0))
def test_jain_index_is_between_one_over_n_and_one(xs: list[float]) -> None:
    j = stats.jain_index(xs)
    assert 1 / len(xs) - 1e-9 <= j <= 1 + 1e-9


@given(st.floats(min_value=1e-6, max_value=1e6), st.integers(min_value=2, max_value=500))
def test_ci_halfwidth_shrinks_with_more_replications(sd: float, n: int) -> None:
    assert stats.t_halfwidth_of(sd, n + 1) < stats.t_halfwidth_of(sd, n)


def test_intervals_are_scipy_t_intervals() -> None:
    from scipy import stats as scipy_stats

    low, high = scipy_stats.t.interval(0.95, len(X) - 1, loc=stats.mean(X), scale=scipy_stats.sem(X))
    assert stats.t_halfwidth(X) == pytest.approx((high - low) / 2, rel=1e-12)
    assert stats.t_halfwidth([5.0, 5.0, 5.0]) == 0.0  # a constant sample: width 0, not undefined
    assert math.isnan(stats.sample_sd([1.0, -math.inf]))  # an infinite sample (F_sys of a starved flow)
