"""`airlink reproduce dccp`: the DCCP study's confronts over 802.11g with hand-offs, its tables,
figures and findings (the quick form: 60 s runs)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pandas as pd
import pytest

import airlink
from airlink import stats
from airlink.studies import dccp, reproduce_into


def test_the_study_tables_are_read_as_printed() -> None:
    t3, t4 = dccp.study_table("table3"), dccp.study_table("table4")
    assert len(t3) == len(t4) == 2 * len(dccp.ROWS)
    first = t3[0]  # "3359,12 (3202,15 – 3516,09) | 123006,72 (...) | 2,11 (1,72 – 2,21)", n = 11
    assert (first["protocol"], first["throughput_kbps"], first["throughput_kbps_low"], first["n"]) == ("TCP Reno", 3359.12, 3202.15, 11)
    udp = t3[1]  # 394825,25/293967,67 (100164,37 – 101550,79): the interval is transmitted − lost's
    assert (udp["transmitted_kB"], udp["lost_kB"], udp["effective_kB_low"]) == (394825.25, 293967.67, 100164.37)
    # Table 3's TCP transmitted is its throughput over 300 s, KByte = 1024 B, Kbit = 1000 bit.
    assert 8 * first["transmitted_kB"] * 1024 / 1e3 / 300 == pytest.approx(first["throughput_kbps"], rel=1e-4)


def test_the_study_tables_contradictions_are_found() -> None:
    found = {(c["row"], c["protocol"], c["cell"]) for c in dccp.contradictions("table4")}
    # The mean 3162,41 outside (2968,61 – 3156,21); UDP's 5773 kbit/s from 70,822 KByte in 280 s
    # (2,072 kbit/s); "13600,533/1150" against an interval around 134,856.
    assert {(1, "TCP Reno", "throughput_kbps"), (1, "UDP", "throughput_kbps"), (6, "DCCP-2", "effective_kB")} <= found
    # TCP Veno × UDP and TCP Cubic × DCCP-3 agree with themselves throughout.
    assert not {k for k in found if k[0] in (3, 8)}
    # Table 3, the numeric target, has two such cells.
    assert {(c["row"], c["protocol"]) for c in dccp.contradictions("table3")} == {(5, "TCP Cubic"), (6, "DCCP-2")}


def test_each_confront_is_one_override_of_the_shipped_scenario(tmp_path: Path) -> None:
    override = dccp.flows_override("dccp-3", "udp", 1424)
    airlink.run("scenarios/wlan/dccp-handoff.toml", out=tmp_path / "r", overrides=[override, "stop=30 s", "handoff=[]"])
    flows = json.loads((tmp_path / "r" / "summary.json").read_text())["flows"]
    assert [(f["name"], f["protocol"], f["congestion"], f["start_s"]) for f in flows] == [
        ("dccp", "dccp", "ccid3", 0.0), ("udp1", "udp", "none", 20.0), ("udp2", "udp", "none", 20.0)]


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[dccp.Reproduction, Path]:
    out = tmp_path_factory.mktemp("dccp") / "report"
    for part in ("table3", "unlimited"):  # the second merges into the first's report
        rep, parts = reproduce_into("dccp", out, only=part, settings={"seeds": 5, "quick": True}, seeds=5, jobs=2, quick=True)
    assert parts == ("table3", "unlimited")
    return rep, out


def test_the_device_limit_gives_closed_form_rates(quick: tuple[dccp.Reproduction, Path]) -> None:
    rep, _ = quick
    table = rep.tables["table3"].table()
    udp = [r for r in table if r["protocol"] == "UDP"]
    # 720 datagrams of 512 B a second reach the medium of 12 Mbit/s offered: 2949 kbit/s, and
    # 1 − 2.949/12 of what the application sent is dropped at the sender.
    for r in udp:
        assert r["throughput_kbps"] == pytest.approx(720 * 512 * 8 / 1e3, rel=0.005), r
        assert r["loss_pct"] == pytest.approx(100 * (1 - 720 * 512 * 8 / 12e6), abs=0.5), r
    # TCP: 3.4 Mbit/s of 1500-byte packets carrying 1460 bytes each, less what the scenario's
    # hand-offs cost it (the closed form leaves them out; it measured 1.0 % under it after the
    # network's one stepping code landed, within 1 % before: not yet traced).
    for r in (r for r in table if r["protocol"].startswith("TCP")):
        assert r["throughput_kbps"] == pytest.approx(3400 * 1460 / 1500, rel=0.015), r
        assert r["throughput_kbps"] <= 3400 * 1460 / 1500, r
    dccp_rows = [r for r in table if r["protocol"].startswith("DCCP")]
    assert dccp_rows and all(r["loss_pct"] < 2 for r in dccp_rows)


def test_without_device_limits_the_medium_decides(quick: tuple[dccp.Reproduction, Path]) -> None:
    rep, _ = quick
    limited, free = rep.tables["table3"].table(), rep.tables["unlimited"].table()
    for a, b in zip(limited, free):
        if a["protocol"].startswith("TCP"):
            assert b["throughput_kbps"] > 1.5 * a["throughput_kbps"], (a, b)  # TCP takes the idle medium
        if a["protocol"] == "UDP":
            assert b["loss_pct"] < a["loss_pct"] - 10, (a, b)  # the medium, not the sender, drops now


def test_repetitions_follow_the_study_rule(quick: tuple[dccp.Reproduction, Path]) -> None:
    rep, out = quick
    runs = pd.read_csv(out / "unlimited_runs.csv")
    for row in rep.tables["unlimited"].rows:
        mine = runs[runs["row"] == row.index]
        need = 3
        for first in (True, False):
            flows = mine[mine["flow"].str.match(row.first.split("-")[0]) == first]
            pilot = flows[flows["repetition"] <= 3].groupby("repetition")["throughput_kbps"].mean().tolist()
            if stats.sample_sd(pilot) > 0:
                need = max(need, math.ceil((1.96 * stats.sample_sd(pilot) / (0.05 * stats.mean(pilot))) ** 2))
        assert row.n == min(need, 5) == mine["repetition"].max(), row.label


def test_the_report_has_every_table_figure_and_finding(quick: tuple[dccp.Reproduction, Path]) -> None:
    rep, out = quick
    names = {p.name for p in out.iterdir()}
    for part in ("table3", "unlimited"):
        assert {f"{part}.csv", f"{part}_versus_study.csv", f"{part}_fig2.png", f"{part}_fig3.png"} <= names
    assert {"index.html", "README.md", "report.json", "figures.csv"} <= names
    with open(out / "table3_versus_study.csv") as fh:
        versus = list(csv.DictReader(fh))
    assert len(versus) == 3 * 2 * len(dccp.ROWS)
    # UDP's throughput is calibrated on this table: within 2.5 % of rows 1-3 (row 3's 3003 kbit/s
    # is 1.8 % above the 2949 of 720 datagrams a second, and the quick form's two 300 ms outages
    # in 40 s take 0.4 % off the two flows' mean), in row 1's interval.
    udp = [v for v in versus if v["protocol"] == "UDP" and v["cell"] == "throughput_kbps"][:3]
    assert all(abs(float(v["ratio"]) - 1) < 0.025 for v in udp) and udp[0]["overlap"] == "True", udp
    html = (out / "index.html").read_text()
    assert "contradicts itself" in html and "why they differ" in html
    assert [c["status"] for c in rep.claims if "UDP loses far more" in c["claim"] and "table3" in c["claim"]] == ["PASS"]
    # Fig. 2's data: the hand-offs at 30 s and 45 s of the quick form, TCP CUBIC × UDP.
    figures = pd.read_csv(out / "figures.csv")
    fig2 = figures[(figures["figure"] == 2) & (figures["part"] == "table3")]
    assert set(fig2["series"]) >= {"TCP Cubic", "UDP sent KByte", "UDP lost KByte"}


def test_a_dip_is_measured_against_the_seconds_before_a_hand_off() -> None:
    row = dccp.Row(1, "x", "tcp-reno", "udp", runs=[], seconds=[{0: [100.0] * 20 + [50.0] + [100.0] * 9, 1: [10.0] * 30},
                                                               {0: [100.0] * 20 + [70.0] + [100.0] * 9, 1: [10.0] * 30}])
    part = dccp.Part("table3", [row], 512, True)
    dips = dccp.handoff_dips(part, (20.0,))
    assert [(d["protocol"], round(d["dip_pct"], 6)) for d in dips] == [("TCP Reno", 40.0), ("UDP", 0.0)]


def test_trends_compare_directions_with_a_dead_band() -> None:
    assert [dccp._direction(100, x) for x in (104, 106, 94)] == ["same", "up", "down"]
    assert dccp.trends(dccp.Reproduction(seeds=3)) == []  # Table 4's trends need both tables' runs


def test_fewer_seeds_than_the_pilot_runs_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from airlink.cli import cli

    result = CliRunner().invoke(cli, ["reproduce", "dccp", "--seeds", "2", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "dccp needs at least 3 seeds" in result.output
    assert not (tmp_path / "r").exists()


def test_the_second_protocols_dip_is_its_flows_mean() -> None:
    # tab2's flow dips by half, tab3's not at all: the protocol's mean (eq. 4) dips by a quarter.
    row = dccp.Row(5, "x", "tcp-cubic", "dccp-2", runs=[], seconds=[{0: [100.0] * 30, 1: [10.0] * 20 + [5.0] + [10.0] * 9,
                                                                      2: [10.0] * 30}])
    dips = dccp.handoff_dips(dccp.Part("table3", [row], 512, True), (20.0,))
    assert [(d["protocol"], round(d["dip_pct"], 6)) for d in dips] == [("TCP Cubic", 0.0), ("DCCP-2", 25.0)]


def test_the_header_reads_the_outage_it_ran() -> None:
    assert dccp.outage_ran("outage") == dccp.OUTAGE
    assert dccp.outage_ran("outage", ["handoff.0.outage=500 ms"]) == "500 ms"
    assert dccp.outage_ran("table3", ['handoff.2.outage="1 s"']) == "1 s"
    assert dccp._ms("1 s") == 1000.0 and dccp._ms("300 ms") == 300.0


def test_a_claim_without_its_premise_is_not_testable(quick: tuple[dccp.Reproduction, Path]) -> None:
    rep, _ = quick
    by = {c["claim"]: c for c in rep.claims}
    rule = [c for name, c in by.items() if "follow the rule" in name and name.startswith("table3")]
    # Repetitions of a device-limited row differ by far less than the rule needs to ask for a fourth run.
    assert [c["status"] for c in rule] == ["not testable here"] and "fourth run only above 4.4 %" in rule[0]["detail"]
    # The counterfactual part is reported, not counted.
    assert {c["status"] for name, c in by.items() if name.startswith("unlimited")} <= {"not counted", "not testable here"}
