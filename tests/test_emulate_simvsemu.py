"""The same WIPEMU link realisation in simulation (airlink's CUBIC) and in emulation (the
kernel's CUBIC through iperf3): the models decide the result, not the emulator, so the steady
goodputs agree. Root only; skipped elsewhere with the reason."""

from __future__ import annotations

import json

import pytest

import airlink
from airlink import _core, emulate as emulation

from conftest import ADAPTIVE

CHECKS = {c["name"]: c for c in _core.doctor()}
MISSING = [name for name, c in CHECKS.items() if c["required"] and not c["ok"]]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"emulation not possible here: {', '.join(MISSING)}")

BYTES = 1_500_000
# Both sides: CUBIC, timestamps off (the study's stack), the same seed and so the same fading.
# The flow's congestion is the kernel's too.
SETTINGS = ['emulation.sysctl={"net.ipv4.tcp_timestamps" = "0"}', "flow.0.congestion=cubic",
            f"flow.0.bytes={BYTES} B"]


@pytest.mark.skipif(not CHECKS.get("iperf3", {}).get("ok"), reason="iperf3 is not installed")
def test_simulation_and_emulation_agree_on_the_adaptive_downlink(tmp_path) -> None:
    sim = airlink.run(ADAPTIVE, seed=2, overrides=SETTINGS).summary
    emulation.emulate(ADAPTIVE, seed=2, overrides=SETTINGS, out=tmp_path / "emu",
                      server="iperf3 -s -1", client=f"iperf3 -c $AIRLINK_SERVER -R -n {BYTES} --json")
    emu_steady = emulation.tcp_goodput_steady(tmp_path / "emu" / "client.pcap")
    sim_steady = sim["flows"][0]["goodput_steady_bps"]
    # Measured with 3 MB, seeds 1 and 2: emulation/simulation 1.004 and 0.992. The tolerance is
    # the 15 %: the link model is the same realisation, but the two CUBICs differ
    # (Linux's HyStart and pacing; the kernel's window overflows the 50-packet gateway queue
    # now and then, airlink's does not), and the emulator's clock may stall for a millisecond.
    assert 0.85 < emu_steady / sim_steady < 1.15, (emu_steady, sim_steady)
    emu_links = {link["name"]: link for link in json.loads((tmp_path / "emu" / "summary.json").read_text())["links"]}
    sim_links = {link["name"]: link for link in sim["links"]}
    # The same channel realisation: frame error shares within a few per cent of each other.
    share = lambda link: link["frame_errors"] / link["frames_sent"]  # noqa: E731
    assert abs(share(emu_links["downlink"]) - share(sim_links["downlink"])) < 0.03
