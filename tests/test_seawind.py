"""The Seawind study: the 1999 timer model against spec F and the paper's Table 1, the GPRS link
catalogue and its refusals, granular pipes in scenarios, and a quick reproduction that must write
every file (emulated parts where this machine can emulate, with generous margins)."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

from airlink import _core
from airlink.studies import STUDIES, seawind, seawind_report

MS = 1_000_000


def test_doctests() -> None:
    assert doctest.testmod(seawind).failed == 0


def test_spec_f_vectors_through_the_model() -> None:
    # OS model "10·⌈t/10⌉ + 10 ms" with slack: requests 15 ×4 → 30, 0, 30, 0 (totals 60/60).
    rows = _core.timing_model([15 * MS] * 4)
    names = [r["name"] for r in rows]
    slack = rows[names.index("slack variable, HZ=100")]
    assert [y // MS for y in slack["actual_ns"]] == [30, 0, 30, 0]
    select = rows[names.index("standard select(), HZ=100")]
    assert [y // MS for y in select["actual_ns"]] == [30, 30, 30, 30]
    assert [r["actual_ns"] for r in rows if r["jiffy_ns"] == 0] == [[15 * MS] * 4] * 2
    # Delay per packet (spec F): 1500 B at 9.6 kbit/s 1.25 s; 100 B 83.33 ms.
    assert seawind.unit_delay_s(1500, 9_600) == 1.25
    assert round(seawind.unit_delay_s(100, 9_600) * 1e3, 2) == 83.33


def test_modelled_table1_lands_near_the_papers_select_and_slack_rows() -> None:
    series = _core.timing_whole_ms_series(1000, 1)
    assert len(series) == 1000 and all(x % MS == 0 and 0 <= x <= 99 * MS for x in series)
    assert series == _core.timing_whole_ms_series(1000, 1)
    select, rtc, hz, slack, busy = _core.timing_model(series)
    # The paper: select 14.50 / 10.49 (rel 0.85 / 4.39); slack 0.01 / 38.56 (rel -0.09 / 0.27).
    assert abs(select["abs_mean_ms"] - 14.50) < 0.3 and 7.5 < select["abs_var_ms2"] < 10.49
    assert abs(select["rel_mean"] - 0.85) < 0.1
    assert abs(slack["abs_mean_ms"]) < 0.05 and abs(slack["abs_var_ms2"] - 38.56) < 6
    assert abs(slack["drift_ms"]) <= 20  # errors are compensated, not accumulated
    assert rtc["abs_var_ms2"] == 0 == busy["abs_var_ms2"]
    # HZ = 1024: a jiffy of 0.977 ms added to a rounding of up to one jiffy.
    assert 0.977 < hz["abs_mean_ms"] < 2 * 0.977


def test_gprs_catalogue_and_its_refusals() -> None:
    assert [seawind.gprs_rates(cs, 1)[0] for cs in seawind.CODING_SCHEMES] == [9050, 13400, 15600, 21400]
    assert seawind.gprs_rates("CS-4", 8) == (171_200, 160_000)
    with pytest.raises(ValueError, match="unknown GPRS coding scheme 'CS-5'"):
        seawind.gprs_rates("CS-5", 1)
    for slots in (0, 9):
        with pytest.raises(ValueError, match="expected 1 to 8"):
            seawind.gprs_rates("CS-1", slots)
    for cs, (_, block) in seawind.CODING_SCHEMES.items():
        units = [seawind.gprs_unit(cs, g) for g in seawind.GRANULARITIES]
        assert units[0] is None and units[2] == block and units[1] % block == 0 and 150 <= units[1] <= 250
    with pytest.raises(ValueError, match="unknown granularity"):
        seawind.gprs_unit("CS-2", "bit")


@pytest.mark.parametrize("text, column, what", [
    ('[downlink.pipe]\ndelay = "10 ms"\nunit = "30 B"\n[[flow]]\n', 8, "needs the pipe's `rate`"),
    ('[downlink.pipe]\nrate = "48 kbit/s"\nunit = "0 B"\n[[flow]]\n', 8, "expected 1 B to 65536 B"),
])
def test_a_bad_unit_is_refused_with_its_place(airlink_cli, tmp_path: Path, text: str, column: int, what: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    result = airlink_cli("check", str(path))
    assert result.exit_code == 2
    assert f"bad.toml:3:{column}: downlink.pipe.unit:" in result.output and what in result.output


def test_granularity_changes_delivery_not_the_rate_in_simulation() -> None:
    rep = seawind.reproduce(quick=True, parts=["granularity"], emulation=False)
    sim = {r["granularity"]: r for r in rep.granularity}
    assert list(sim) == ["ip", "llc", "rlc"]
    # One wake-up per unit: 20 kB of TCP data and headers in 30-B blocks is > 600 units.
    assert sim["rlc"]["units_sent"] > 600 and sim["llc"]["units_sent"] > 90 and sim["ip"]["units_sent"] == 0
    for r in sim.values():
        assert abs(r["goodput_bps"] / sim["ip"]["goodput_bps"] - 1) < 0.05


def test_quick_reproduction_writes_every_file(tmp_path: Path) -> None:
    assert "seawind" in STUDIES
    rep = seawind.reproduce(quick=True)
    out = tmp_path / "seawind"
    seawind_report.write_report(rep, out)
    files = {p.name for p in out.iterdir()}
    assert {"index.html", "README.md", "report.json", "table1.csv", "fig2.png", "fig2.csv", "fig3.png", "fig3.csv",
            "links.csv", "granularity.csv", "claims.csv"} <= files
    assert (out / "fig3.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    claims = {c["claim"]: c["status"] for c in rep.claims}
    assert claims["table1-select-model"] == claims["table1-slack-model"] == claims["granularity-1999"] == "PASS"
    text = seawind.text(rep)
    assert "14.50 / 10.49" in text and "0.01 / 38.56" in text
    if rep.skipped:
        pytest.skip(f"emulated parts not run: {rep.skipped}")
    assert {"fig1.png", "fig1.csv", "datapath.csv"} <= files
    # Steady-state rates through the emulator, generous margins on a busy machine.
    for r in rep.fig1 + rep.datapath:
        assert 0.95 < r["delivered_ratio"] < 1.05, r
    emu = {r["granularity"]: r for r in rep.granularity if r["mode"] == "emulation"}
    assert set(emu) == {"ip", "llc", "rlc"} and all(r["completed"] for r in emu.values())


def test_fig1_is_judged_at_a_tenth_of_a_percent() -> None:
    # The claim holds when every rate up to 10 Mbit/s is within ±0.1 % of the request (steady state).
    def status(ratios: dict[int, float]) -> str:
        rep = seawind.Reproduction(quick=True, fig1=[{"requested_bps": r, "delivered_ratio": x} | seawind.fig1_model(r)
                                                     for r, x in ratios.items()])
        return next(c["status"] for c in seawind._claims(rep) if c["claim"] == "fig1-line-rate")

    assert status({64_000: 0.9995, 1_000_000: 1.0008}) == "PASS"
    assert status({64_000: 0.9995, 1_000_000: 0.9985}) == "FAIL"  # 99.85 %: it passed the old 98 % bar
    assert status({64_000: 1.0, 100_000_000: 0.95}) == "PASS"  # above 10 Mbit/s it is reported, not judged
