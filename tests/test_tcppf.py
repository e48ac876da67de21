"""`airlink reproduce tcp-pf`: the TCP-PF study's scheduler grid, its figures and claims."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from airlink import experiment_run, stats
from airlink.studies import reproduce_into, tcppf


def _summary(delivered: list[int], sim_time: float = 25.0) -> dict:
    flows = [{"bytes_delivered": b, "timeouts": i, "retransmissions": 2 * i, "spurious_retransmissions": 0, "start_s": 0.0}
             for i, b in enumerate(delivered)]
    users = [{"mac_throughput_bps": 1000.0 * (i + 1), "mac_scheduled_bps": 2000.0 * (i + 1), "slot_fill": 1 / (i + 1),
              "interval_mean_s": 0.1, "interval_std_s": 0.05, "interval_max_s": 0.4, "mean_sinr_db": 3.0}
             for i in range(len(delivered))]
    return {"sim_time_s": sim_time, "flows": flows,
            "links": [{"name": "wired.down"}, {"name": "downlink", "users": users}]}


def test_run_figures_use_bytes_over_the_run_length() -> None:
    # 250, 500 and 1000 kB in 25 s: 10, 20 and 40 kB/s, so F_sys = ln(8000)/3 (spec E's vector 2.995732).
    fig = tcppf.run_figures(_summary([250_000, 500_000, 1_000_000]))
    assert fig["system_bps"] == pytest.approx(8 * 1_750_000 / 25)
    assert fig["mac_bps"] == 6000.0
    # Scheduled bits are what the served slots could carry; the fill is delivered over carried,
    # summed over users (each user carries its delivered bits over its fill: 1000, 4000 and 9000 bit/s).
    assert fig["mac_scheduled_bps"] == 12000.0
    assert fig["slot_fill"] == pytest.approx(6000 / (1000 + 4000 + 9000))
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
    # No timeouts on the reference side: a difference, but no relative one.
    none = tcppf.paired([1.0, 0.0], [0.0, 0.0])
    assert none["mean"] == 0.5 and math.isnan(none["relative"])


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[tcppf.Reproduction, Path]:
    out = tmp_path_factory.mktemp("tcppf") / "report"
    rep, _ = reproduce_into("tcp-pf", out, settings={"seeds": 3, "quick": True}, seeds=3, jobs=2, quick=True)
    return rep, out


def test_quick_form_writes_every_file(quick: tuple[tcppf.Reproduction, Path]) -> None:
    rep, out = quick
    names = {p.name for p in out.iterdir()}
    per_grid = {f"{g}_{n}" for g in tcppf.GRIDS for n in ("fig3.png", "fig4.png", "fig5.png", "gaps.png", "fill.png", "schedulers.csv",
                                                           "paired.csv", "runs.csv", "users.csv")}
    assert per_grid | {"fig1_fig2.png", "fig1_fig2_3kmh.png", "fig1_fig2_arrivals.png", "fig1_fig2.csv", "gaps_vs_rto.csv", "sensitivity.csv", "sensitivity.png", "index.html",
                       "README.md", "report.json", "reproduction.json", "store"} <= names
    page = (out / "index.html").read_text()
    assert all(f'src="{n}"' in page for n in names if n.endswith(".png"))
    assert "Deviation: quick form" in page
    assert {c["status"] for c in rep.claims} <= {"PASS", "FAIL"}
    assert len(rep.claims) == 7 * len(tcppf.GRIDS)
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
            # A slot carries at most its rate × slot: delivered ≤ scheduled, and the fill in (0, 1].
            assert all(r["mac_bps"] <= r["mac_scheduled_bps"] and 0 < r["slot_fill"] <= 1 for r in runs)
            assert all(0 < x <= 1 for r in runs for x in r["user_slot_fill"] if x is not None)
        assert all(math.isfinite(r["f_sys"]) for r in part.runs["pf"])
        # Intervals in slots make TCP-PF's turns more regular than in seconds (the first term dominates);
        # with bounded queues a gap also holds the time a user's queue stood empty after its losses.
        if not any(o.startswith("downlink.cell.queue") for o in tcppf.GRIDS[grid]):
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


def test_sensitivity_rows_pair_pf_and_tcp_pf_under_each_assumption(quick: tuple[tcppf.Reproduction, Path]) -> None:
    rep, out = quick
    rows = tcppf.sensitivity_rows(rep)
    assert [r["setting"] for r in rows] == [k for _, k in tcppf.SENSITIVITY_ROWS]
    assert rows[0]["shift_pct"] == 0.0
    for r in rows:
        part = rep.grids.get(r["setting"]) or rep.sensitivity[r["setting"]]
        diffs = [a - b for a, b in zip(part.series("tcp-pf", "system_bps"), part.series("pf", "system_bps"))]
        assert r["gain_pct"] == pytest.approx(100 * stats.mean(diffs) / stats.mean(part.series("pf", "system_bps")))
        assert r["shift_pct"] == pytest.approx(r["gain_pct"] - rows[0]["gain_pct"])
    by = {r["setting"]: r for r in rows}
    # Bounded queues drop: timeouts of real losses under both schedulers, where unbounded queues have next to none.
    assert by["queue-8"]["pf_timeouts"] > 5 * max(by["waterfall"]["pf_timeouts"], 1)
    assert by["queue-8"]["tcp_pf_timeouts"] > 5 * max(by["waterfall"]["tcp_pf_timeouts"], 1)
    # Slower fading lengthens PF's gaps: more users wait over a second, and PF times out more than TCP-PF.
    assert by["speed-1"]["pf_gap_over_1s_pct"] > by["speed-10"]["pf_gap_over_1s_pct"] > by["waterfall"]["pf_gap_over_1s_pct"]
    assert by["speed-1"]["pf_timeouts"] > 2 * by["speed-1"]["tcp_pf_timeouts"]
    # The 8 KiB window binds: the same placements, yet not the same runs.
    assert by["rwnd-8k"]["tcp_pf_kbps"] != by["waterfall"]["tcp_pf_kbps"]
    assert "sensitivity" in json.loads((out / "report.json").read_text())


def test_figs_1_2_come_from_the_event_log(quick: tuple[tcppf.Reproduction, Path]) -> None:
    rep, out = quick
    for traces in (rep.traces, rep.slow_traces, rep.arrival_traces):
        user = tcppf.trace_user(traces)
        for s in tcppf.PAIR:
            t = tcppf.user_trace(traces, s, user)
            u = traces[s]["users"][user]
            assert len(t["timeout_s"]) == u["timeouts"]
            # Segments are numbered from 1; a segment sent again is marked, and the ACKs never pass what was sent.
            assert t["sent_segment"][:3] == [1, 2, 3] and not any(t["retransmitted"][:3])
            assert sum(t["retransmitted"]) >= u["timeouts"]
            assert max(t["acked_segments"]) <= max(t["sent_segment"])
            assert t["acked_segments"] == sorted(t["acked_segments"])
            assert t["served_s"] and all(0 <= x <= 8 for x in t["served_s"] + t["frame_error_s"])  # a slot may begin at the stop
    # At 3 km/h PF's traced user times out after the start-up, as in the study's Fig. 1.
    slow = rep.slow_traces["pf"]["users"][tcppf.trace_user(rep.slow_traces)]
    assert slow["timeouts"] > slow["start_timeouts"]
    rows = list(csv.DictReader((out / "fig1_fig2.csv").open()))
    assert {r["event"] for r in rows} >= {"sent", "ack", "cwnd", "served"}
    assert {r["setting"] for r in rows} == {"defaults", tcppf.SLOW, "arrivals"}


def test_users_that_arrive(quick: tuple[tcppf.Reproduction, Path]) -> None:
    rep, out = quick
    part = rep.grids["arrivals"]
    # Every scheduler sees the same arrivals (drawn from the seed and the user alone), spread over 0-5 s.
    starts = {s: [r["user_start_s"] for r in rs] for s, rs in part.runs.items()}
    assert all(v == starts["pf"] for v in starts.values())
    for seed_starts in starts["pf"]:
        assert all(0 <= x <= 5 for x in seed_starts) and max(seed_starts) - min(seed_starts) > 2
    assert starts["pf"][0] != starts["pf"][1]
    # The all-at-zero grid starts everyone at 0.
    assert all(x == 0 for r in rep.grids["waterfall"].runs["pf"] for x in r["user_start_s"])
    # No user is served before it arrives; its start-up timeouts are counted from its arrival.
    for s in tcppf.PAIR:
        for u in rep.arrival_traces[s]["users"]:
            t = tcppf.user_trace(rep.arrival_traces, s, u["user"])
            assert min(t["served_s"] + t["frame_error_s"]) >= u["start_s"]
            assert min(t["sent_s"]) >= u["start_s"]
    # The report says which reading reproduces which statement: one row a claim, a status per grid.
    table = tcppf.readings(rep)
    assert len(table) == 7 and all(set(r) == {"claim", *tcppf.GRIDS} for r in table)
    assert "Which reading reproduces which statement" in (out / "index.html").read_text()
    readme = (out / "README.md").read_text()
    gain = next(d for d in part.differences if d["scheduler"] == "tcp-pf")
    assert f"to {gain['system_gain_pct']:+.1f} %" in readme and "MAC throughput read two ways" in readme


def test_the_event_log_agrees_with_the_summary_and_changes_nothing(tmp_path: Path) -> None:
    import airlink
    from airlink.results import ResultsError

    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "cell" / "tcp-pf.toml"
    over = ["stop=6 s", "downlink.cell.scheduler=pf"]
    plain = airlink.run(scenario, seed=2, overrides=over, out=tmp_path / "plain")
    logged = airlink.run(scenario, seed=2, overrides=[*over, "event_log=true"], out=tmp_path / "logged")
    # Recording is observation: the same run, byte for byte, and the other tables unchanged.
    assert (tmp_path / "plain" / "summary.json").read_bytes() == (tmp_path / "logged" / "summary.json").read_bytes()
    assert plain.flows.equals(logged.flows)
    assert not (tmp_path / "plain" / "segments.parquet").exists()
    with pytest.raises(ResultsError, match="no event log"):
        plain.table("slots")
    seg, slots = logged.table("segments"), logged.table("slots")
    users = next(link for link in logged.summary["links"] if link.get("users"))["users"]
    for i, (flow, user) in enumerate(zip(logged.summary["flows"], users)):
        mine = seg[seg["flow"] == i]
        sent = mine[mine["kind"] == "sent"]
        assert len(sent) == flow["data_segments_sent"]
        assert (mine["kind"] == "timeout").sum() == flow["timeouts"]
        assert (sent["bytes"] == 536).all()
        served = slots[slots["user"] == i]
        assert len(served) == user["slots_served"]
        assert served["frame_error"].sum() == user["frame_errors"]
    assert slots["slot"].is_monotonic_increasing and slots["slot"].is_unique
    assert (slots["time_ns"] == slots["slot"] * 5_000_000).all()
