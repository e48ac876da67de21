"""`airlink reproduce tcp-pf`: the TCP-PF study's scheduler grid, its figures and claims."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from airlink import experiment_run, stats
from airlink.studies import reproduce_into, tcppf


def _summary(delivered: list[int], sim_time: float = 25.0) -> dict:
    flows = [{"bytes_delivered": b, "timeouts": i, "retransmissions": 2 * i, "spurious_retransmissions": 0}
             for i, b in enumerate(delivered)]
    users = [{"mac_throughput_bps": 1000.0 * (i + 1), "interval_mean_s": 0.1, "interval_std_s": 0.05,
              "interval_max_s": 0.4, "mean_sinr_db": 3.0} for i in range(len(delivered))]
    return {"sim_time_s": sim_time, "flows": flows,
            "links": [{"name": "wired.down"}, {"name": "downlink", "users": users}]}


def test_run_figures_use_bytes_over_the_run_length() -> None:
    # 250, 500 and 1000 kB in 25 s: 10, 20 and 40 kB/s, so F_sys = ln(8000)/3 (spec E's vector 2.995732).
    fig = tcppf.run_figures(_summary([250_000, 500_000, 1_000_000]))
    assert fig["system_bps"] == pytest.approx(8 * 1_750_000 / 25)
    assert fig["mac_bps"] == 6000.0
    assert fig["f_sys"] == pytest.approx(2.995732, abs=1e-6)
    assert fig["jain"] == pytest.approx(stats.jain_index([10, 20, 40]))
    assert (fig["timeouts"], fig["users_with_timeouts"], fig["retransmissions"]) == (3, 2, 6)
    starved = tcppf.run_figures(_summary([0, 500_000]))
    assert starved["f_sys"] == -math.inf and starved["starved"] == 1


def test_paired_differences_need_the_same_seeds() -> None:
    d = tcppf.paired([12.0, 11.0, 13.0, 12.0], [10.0, 10.0, 11.0, 11.0])
    assert d["mean"] == pytest.approx(1.5)
    assert d["relative"] == pytest.approx(1.5 / 10.5)
    assert d["ci95"] == pytest.approx(stats.t_halfwidth([2.0, 1.0, 2.0, 1.0]))
    with pytest.raises(ValueError, match="same seeds"):
        tcppf.paired([1.0, 2.0], [1.0])


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[tcppf.Reproduction, Path]:
    out = tmp_path_factory.mktemp("tcppf") / "report"
    rep, _ = reproduce_into("tcp-pf", out, settings={"seeds": 3, "quick": True}, seeds=3, jobs=2, quick=True)
    return rep, out


def test_quick_form_writes_every_file(quick: tuple[tcppf.Reproduction, Path]) -> None:
    rep, out = quick
    names = {p.name for p in out.iterdir()}
    per_grid = {f"{g}_{n}" for g in tcppf.GRIDS for n in ("fig3.png", "fig4.png", "fig5.png", "gaps.png", "schedulers.csv",
                                                           "paired.csv", "runs.csv", "users.csv")}
    assert per_grid | {"fig1_fig2.png", "fig1_fig2.csv", "gaps_vs_rto.csv", "index.html", "README.md", "report.json",
                       "reproduction.json", "store"} <= names
    page = (out / "index.html").read_text()
    assert all(f'src="{n}"' in page for n in names if n.endswith(".png"))
    assert "Deviation: quick form" in page
    assert {c["status"] for c in rep.claims} <= {"PASS", "FAIL"}
    assert len(rep.claims) == 6 * len(tcppf.GRIDS)
    assert json.loads((out / "report.json").read_text())["grids"].keys() == set(tcppf.GRIDS)


def test_common_random_numbers_and_paired_differences(quick: tuple[tcppf.Reproduction, Path]) -> None:
    rep, _ = quick
    part = rep.grids["waterfall"]
    # Seed s is the same placement and fading for every scheduler: each user's mean SINR agrees.
    sinr = {s: [r["mean_sinr_db"] for r in rs] for s, rs in part.runs.items()}
    assert all(v == sinr["pf"] for v in sinr.values())
    assert sinr["pf"][0] != sinr["pf"][1]  # and the seeds differ
    # The table's paired gain is the mean of per-seed differences against PF.
    gain = next(d for d in part.differences if d["scheduler"] == "tcp-pf")
    diffs = [a - b for a, b in zip(part.series("tcp-pf", "system_bps"), part.series("pf", "system_bps"))]
    assert gain["system_diff_kbps"] == pytest.approx(stats.mean(diffs) / 1e3)
    assert gain["system_gain_pct"] == pytest.approx(100 * stats.mean(diffs) / stats.mean(part.series("pf", "system_bps")))


def test_quick_grid_orders_the_schedulers(quick: tuple[tcppf.Reproduction, Path]) -> None:
    rep, _ = quick
    for grid, part in rep.grids.items():
        row = {r["scheduler"]: r for r in part.table}
        # Opportunism buys MAC throughput: MAX above PF above RR, by clear margins.
        assert row["max"]["mac_kbps"] > 1.03 * row["pf"]["mac_kbps"], grid
        assert row["pf"]["mac_kbps"] > 1.15 * row["rr"]["mac_kbps"], grid
        assert row["pf"]["system_kbps"] > 1.15 * row["rr"]["system_kbps"], grid
        # TCP carries most of what the MAC sends; PF is fairer than MAX.
        assert all(0.5 < r["tcp_over_mac"] <= 1.0 for r in part.table), grid
        assert row["pf"]["jain"] > row["max"]["jain"], grid
        for runs in part.runs.values():
            assert all(0 < r["jain"] <= 1 for r in runs)
        assert all(math.isfinite(r["f_sys"]) for r in part.runs["pf"])
        # Intervals in slots make TCP-PF's turns more regular than in seconds (the first term dominates).
        assert row["tcp-pf-slots"]["interval_max_s"] < row["tcp-pf"]["interval_max_s"], grid


def test_gaps_against_rto(quick: tuple[tcppf.Reproduction, Path]) -> None:
    rep, _ = quick
    pf = rep.traces["pf"]["users"]
    assert len(pf) == 21
    # A 64 kB window queued at the base station makes the RTT, so the RTO, far longer than PF's turns.
    assert all(u["rto_median_s"] > 0.25 for u in pf)
    assert max(u["interval_max_s"] for u in pf) < min(u["rto_median_s"] for u in pf)
    assert all(u["start_timeouts"] <= u["timeouts"] for s in rep.traces for u in rep.traces[s]["users"])


def test_a_second_reproduction_runs_nothing(quick: tuple[tcppf.Reproduction, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    rep, out = quick
    monkeypatch.setattr(experiment_run, "_run", lambda *a: pytest.fail(f"ran again: {a[3]}"))
    again, _ = reproduce_into("tcp-pf", out, only="traces", settings={"seeds": 3, "quick": True}, seeds=3, quick=True)
    # The same figures from the stored runs (compared as JSON text: NaN and -inf compare equal there).
    assert json.dumps(again.to_json()) == json.dumps(rep.to_json())


def test_unknown_part_is_refused() -> None:
    with pytest.raises(ValueError, match="expected one of waterfall"):
        tcppf.reproduce(parts=("fig9",), quick=True)
