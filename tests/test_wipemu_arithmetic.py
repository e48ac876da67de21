"""The WIPEMU study's arithmetic and claim checks, without running the core."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airlink.studies import wipemu

PAPER = wipemu.LinkGeometry(bins_per_second=1500, symbols_per_frame=108, mtu=1500, header_bytes=40)

# Spec G: k, measured (paper column 3), f_k, exact header (4'), exact total (6'), (6')/(2).
SPEC_G = [
    (1, 156416, 0.008, 4285.4, 161987.0, 0.99992),
    (2, 312832, 0.008, 8570.7, 323974.0, 0.99992),
    (3, 460992, 0.026, 12629.9, 485936.1, 0.99987),
    (4, 625656, 0.008, 17141.3, 647939.6, 0.99991),
    (5, 761672, 0.035, 20867.7, 809928.6, 0.99991),
    (6, 921984, 0.026, 25259.8, 971872.2, 0.99987),
    (7, 1094904, 0.008, 29997.4, 1133900.6, 0.99991),
    (8, 1251320, 0.008, 34282.7, 1295887.6, 0.99991),
]


def test_the_study_measured_column_is_spec_g_s() -> None:
    assert wipemu.STUDY_TABLE2_MEASURED == {k: measured for k, measured, *_ in SPEC_G}


@pytest.mark.parametrize("k, measured, f_k, header, total, ratio", SPEC_G)
def test_table2_row_matches_spec_g(k: int, measured: float, f_k: float, header: float, total: float, ratio: float) -> None:
    row = wipemu.table2_row(k, measured, PAPER)
    assert row["theoretical_bps"] == 162_000 * k
    assert row["header_bps"] == pytest.approx(header, abs=0.05)
    assert row["truncation_bps"] == pytest.approx((measured + row["header_bps"]) * f_k, rel=1e-9)
    assert row["compensated_bps"] == pytest.approx(total, abs=0.05)
    assert row["ratio"] == pytest.approx(ratio, abs=5e-6)
    assert tuple(row) == wipemu.TABLE2_KEYS


@given(
    k=st.integers(1, 8),
    symbols=st.integers(20, 400),
    bins=st.integers(100, 5000),
    mtu=st.integers(576, 9000),
    header=st.sampled_from([40, 52]),
)
def test_table2_compensation_inverts_the_ideal_link(k: int, symbols: int, bins: int, mtu: int, header: int) -> None:
    # A link that wastes only headers and the last frame's tail delivers exactly this goodput.
    g = wipemu.LinkGeometry(bins, symbols, mtu, header)
    frames = math.ceil(8 * mtu / (symbols * k))
    ideal = bins * symbols * k * (mtu - header) / (frames * symbols * k / 8)
    assert wipemu.table2_row(k, ideal, g)["ratio"] == pytest.approx(1.0, rel=1e-12)


def test_geometry_comes_from_the_resolved_scenario() -> None:
    resolved = """
[downlink.ofdm4g]
bins_per_second = 1000
symbols_per_frame = 100

[[flow]]
[flow.tcp]
timestamps = true
"""
    assert wipemu.geometry_of(resolved) == wipemu.LinkGeometry(1000, 100, 1500, 52)


def _points(throughput: dict[str, list[float]], retx_at_lowest: float = 5.0) -> dict:
    points = {}
    for curve, values in throughput.items():
        for x, v in zip(wipemu.ARQ_LIMITS, values):
            points[(curve, x)] = {
                "throughput_kbps_mean": v,
                "throughput_kbps_ci95": 1.0,
                "retransmission_pct_mean": retx_at_lowest if x == wipemu.ARQ_LIMITS[0] else 0.5,
            }
    return points


def _rising(start: float, end: float) -> list[float]:
    n = len(wipemu.ARQ_LIMITS)
    return [start + (end - start) * i / (n - 1) for i in range(n)]


STUDY_LIKE = {
    "bpsk": [150.0] * 9,
    "4qam": _rising(140, 280),
    "8qam": _rising(60, 200),
    "adaptive-perfect": _rising(250, 600),
    "adaptive-nmse0.1": _rising(200, 450),
    "best-perfect": _rising(500, 1000),
    "best-nmse0.1": _rising(400, 800),
}


def test_study_like_data_passes_every_claim() -> None:
    verdicts = wipemu.check_claims(_points(STUDY_LIKE), wipemu.ARQ_LIMITS)
    assert [v["claim"] for v in verdicts] == [c.key for c in wipemu.CLAIMS]
    assert all(v["status"] == "PASS" for v in verdicts), verdicts


@pytest.mark.parametrize(
    "claim, change",
    [
        ("4qam-above-bpsk", {"4qam": [100.0] * 9}),
        ("8qam-collapses", {"8qam": _rising(160, 200)}),
        ("bpsk-flat", {"bpsk": _rising(100, 150)}),
        ("adaptive-above-fixed", {"adaptive-nmse0.1": _rising(100, 450)}),
        ("perfect-above-nmse", {"best-nmse0.1": _rising(400, 1100)}),
        ("best-above-static", {"best-perfect": _rising(200, 1000)}),
        ("arq-helps", {"adaptive-perfect": list(reversed(_rising(250, 600)))}),
        ("loss-vs-throughput", {"adaptive-perfect": _rising(550, 600)}),
    ],
)
def test_each_claim_can_fail(claim: str, change: dict[str, list[float]]) -> None:
    verdicts = {v["claim"]: v for v in wipemu.check_claims(_points({**STUDY_LIKE, **change}), wipemu.ARQ_LIMITS)}
    assert verdicts[claim]["status"] == "FAIL", verdicts[claim]


def test_adaptive_is_judged_against_4qam_as_the_study_does() -> None:
    """Fig. 5's reference is 4-QAM, "the best fixed": adaptive under BPSK at small limits is reported, not failed."""
    low_start = {**STUDY_LIKE, "adaptive-nmse0.1": _rising(145, 450)}
    verdict = {v["claim"]: v for v in wipemu.check_claims(_points(low_start), wipemu.ARQ_LIMITS)}["adaptive-above-fixed"]
    assert verdict["status"] == "PASS", verdict
    assert "BPSK is higher than adaptive-nmse0.1 at limit 3" in verdict["detail"]


def test_many_tcp_retransmissions_fail_the_loss_claim() -> None:
    verdicts = {v["claim"]: v for v in wipemu.check_claims(_points(STUDY_LIKE, retx_at_lowest=20.0), wipemu.ARQ_LIMITS)}
    assert verdicts["loss-vs-throughput"]["status"] == "FAIL"


def test_claims_without_their_curves_are_not_checked() -> None:
    only_fig5 = {k: v for k, v in STUDY_LIKE.items() if k in ("adaptive-perfect", "adaptive-nmse0.1", "4qam")}
    verdicts = {v["claim"]: v["status"] for v in wipemu.check_claims(_points(only_fig5), wipemu.ARQ_LIMITS)}
    assert verdicts["best-above-static"] == "not checked"
    assert verdicts["arq-helps"] == "PASS"


def test_every_figure_names_known_curves() -> None:
    for figure in wipemu.FIGURES.values():
        assert set(figure.curves) <= set(wipemu.CURVES)
    assert set(wipemu.READING_CURVES) <= set(wipemu.CURVES)
    assert wipemu.PARTS == ("table2", *wipemu.FIGURES, "readings")


def test_every_claim_has_a_check() -> None:
    assert set(wipemu.CLAIM_CHECKS) == {c.key for c in wipemu.CLAIMS}


def test_reading_findings_name_the_claims_a_reading_moves() -> None:
    def reading(throughput: dict[str, list[float]]) -> dict:
        points = _points(throughput)
        return {"points": points, "limits": wipemu.ARQ_LIMITS, "claims": wipemu.check_claims(points, wipemu.ARQ_LIMITS)}

    steep_bpsk = {**STUDY_LIKE, "bpsk": _rising(100, 150)}
    readings = {"text": reading(steep_bpsk), "sigma-2db": reading(STUDY_LIKE), "rect-8qam": reading(steep_bpsk)}
    rep = wipemu.Reproduction(parts=("readings",), seeds=3, arq_limits=wipemu.ARQ_LIMITS, extra_overrides=(), table2=None,
                              table2_runs=[], points={}, figures=(), claims=[], readings=readings, runs=[], stores={})
    rows = {r["reading"]: r for r in rep.reading_rows()}
    assert rows["text"]["bpsk_spread_pct"] == pytest.approx(100 * 50 / 150)
    assert (rows["text"]["bpsk_at_low_kbps"], rows["text"]["bpsk_at_high_kbps"]) == (100, 150)
    sigma2 = wipemu.READINGS["sigma-2db"].text
    assert rep.reading_findings() == [f"bpsk-flat is FAIL as shipped; {sigma2}: PASS."]
