"""`airlink reproduce afc`: the TCP-AFC study's point-to-point figures, Table 2 under three readings
of its bit error rate, the competing-TCP and multimedia figures, one report with one claims table.
The suite runs the quick form (2 seeds, Fig. 9 at one rate and two buffers) once."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from airlink import experiment_run
from airlink.studies import afc, reproduce_into

CLAIMS = {"fig4-fig5-min-max-mean-higher", "fig3-afc-steadier", "fig5-gap-grows-with-ber", "table2-afc-ahead",
          "table2-early-stages-in-seed-range", "fig6-afc-finishes-sooner", "fig8-alike-until-the-first-loss",
          "fig9-like-tcp-without-errors", "fig10-gain-grows-with-ber", "fig10-afc-near-wired-at-1e-6",
          "fig11-fig12-afc-uses-more", "headline-degradation", "udp-throughput"}


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[afc.Reproduction, Path]:
    out = tmp_path_factory.mktemp("afc") / "report"
    rep, _ = reproduce_into("afc", out, settings={"seeds": 2, "quick": True}, seeds=2, jobs=2, quick=True)
    return rep, out


def test_stage_throughput_uses_the_first_sample_past_each_stage() -> None:
    samples = [(1_000_000_000, 400_000), (2_000_000_000, 1_000_000), (4_000_000_000, 2_500_000)]
    out = afc.stage_throughputs(samples, end_s=30.0, total=20_000_000)
    assert out[0.5] == 1_000_000 / 2.0
    assert out[1] == 1_000_000 / 2.0
    assert out[2] == 2_500_000 / 4.0
    assert out[5] != out[5]  # not reached: NaN
    assert out[20] == 20_000_000 / 30.0


def test_quick_form_writes_one_report_with_every_claim(quick: tuple[afc.Reproduction, Path]) -> None:
    rep, out = quick
    assert {c["claim"] for c in rep.claims} == CLAIMS
    assert all(c["status"] in ("PASS", "FAIL") and c["detail"] for c in rep.claims)
    names = {p.name for p in out.iterdir()}
    pngs = {"fig3.png", "fig4.png", "fig5.png", "files.png", "fig6.png", "fig7.png", "fig8.png", "fig9.png", "fig10.png",
            "fig11.png", "fig12.png", *(f"table2_{r}.png" for r in afc.READINGS)}
    assert pngs | {"p2p_runs.csv", "p2p_bars.csv", "fig6_fig7.csv", "fig8.csv", "fig9.csv", "fig10.csv", "utilisation.csv",
                   "README.md", "index.html", "report.json", "reproduction.json", "store"} <= names
    page = (out / "index.html").read_text()
    assert all(f'src="{png}"' in page for png in pngs)
    assert page.count("<h2>The study's claims") == 1 and "Deviation: quick form" in page
    assert all(c["claim"] in page for c in rep.claims)
    # Every run of the point-to-point grid is in the CSV: 2 rates × 2 BERs × 2 protocols × 2 seeds.
    with open(out / "p2p_runs.csv") as fh:
        assert len(list(csv.DictReader(fh))) == 16


def test_table2_early_stages_are_judged_against_the_seed_range(quick: tuple[afc.Reproduction, Path]) -> None:
    rep, _ = quick
    for rows in rep.table2.values():
        for r in rows:
            for p in ("tcp", "afc"):
                assert r[f"{p}_min_Bps"] <= r[f"{p}_Bps"] <= r[f"{p}_max_Bps"]
    claim = next(c for c in rep.claims if c["claim"] == "table2-early-stages-in-seed-range")
    early = [r for r in rep.table2["effective"] if r["stage_mb"] in afc.EARLY_STAGES_MB]
    inside = all(r[f"{p}_min_Bps"] <= r[f"study_{p}_Bps"] <= r[f"{p}_max_Bps"] for r in early for p in ("tcp", "afc"))
    assert claim["status"] == ("PASS" if inside else "FAIL")


def test_the_readings_of_the_bit_error_rate(quick: tuple[afc.Reproduction, Path]) -> None:
    rep, _ = quick
    end = {which: rows[-1] for which, rows in rep.table2.items()}
    # Bit by bit, the nominal 1e-5 corrupts 11 % of the segments: both protocols crawl.
    assert end["independent"]["tcp_Bps"] < 0.3 * end["effective"]["tcp_Bps"]
    assert end["independent"]["afc_Bps"] < 0.3 * end["effective"]["afc_Bps"]
    # The effective rate and the 36-bit bursts lose about the same number of segments (the study's 90-93).
    for proto in ("tcp_losses", "afc_losses"):
        assert 0.6 < end["burst"][proto] / end["effective"][proto] < 1.6, (proto, end)
        assert 50 < end["effective"][proto] < 160


def test_point_to_point_figures(quick: tuple[afc.Reproduction, Path]) -> None:
    rep, _ = quick
    status = {c["claim"]: c["status"] for c in rep.claims}
    # The same seed gives both protocols the same bit errors: identical until the first loss.
    assert status["fig8-alike-until-the-first-loss"] == "PASS"
    for trace in rep.traces.values():
        assert trace["fig8_rows"][-1]["delivered_bytes"] >= 1e6 and trace["rows"][-1]["delivered_bytes"] == 20e6
    # The files' throughputs are read from the 20 MB transfer: at 20 MB, the whole transfer's.
    for r in rep.p2p:
        assert r["files_Bps"][20] == pytest.approx(20e6 / r["time_s"])
    # At the higher error rate AFC's advantage is larger (Figs. 4-5, both rates).
    assert status["fig5-gap-grows-with-ber"] == "PASS"


def test_shared_network(quick: tuple[afc.Reproduction, Path]) -> None:
    rep, _ = quick
    assert {(r["rate_kbps"], r["buffer_packets"]) for r in rep.fig9} == {(2048, 20), (2048, 100)}
    for r in rep.fig9 + rep.fig10:
        # Two 20 MB transfers never use more than the link.
        assert 0 < r["link_use_with_tcp"] <= 1.0 and 0 < r["link_use_with_afc"] <= 1.0
    clear = [r for r in rep.utilisation if r["nominal_ber"] == 0.0]
    assert len(clear) == 2 and all(r["tcp_pct"] == pytest.approx(100) == r["afc_pct"] for r in clear)
    # The UDP load does not depend on the error rate (UDP does not respond) within a few per cent.
    for fig in afc.UTILISATION:
        udp = [r["udp_wire_Bps"] for r in rep.utilisation if r["figure"] == fig]
        assert max(udp) < 1.05 * min(udp)


def test_again_into_the_same_folder_runs_nothing(quick: tuple[afc.Reproduction, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    rep, out = quick
    monkeypatch.setattr(experiment_run, "_run", lambda *a: pytest.fail(f"ran again: {a[3]}"))
    again, _ = reproduce_into("afc", out, settings={"seeds": 2, "quick": True}, seeds=2, jobs=2, quick=True)
    assert json.dumps(again.to_json(), default=float) == json.dumps(rep.to_json(), default=float)


def test_cli_reproduces_one_part(airlink_cli, tmp_path: Path) -> None:
    result = airlink_cli("reproduce", "afc", "--seeds", "1", "--only", "readings", "--out", tmp_path / "afc", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report["table2"]) == {"burst", "independent"}
    assert [r["stage_mb"] for r in report["table2"]["burst"]] == list(afc.STAGES_MB)


def test_arq_limits_are_refused_outside_wipemu(airlink_cli, tmp_path: Path) -> None:
    result = airlink_cli("reproduce", "afc", "--arq-limits", "3,4", "--out", tmp_path / "x")
    assert result.exit_code == 2
    assert "no ARQ limits" in result.output
