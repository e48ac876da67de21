"""A WLAN in emulation: both directions of a flow cross the one shared medium (the emulator's
packets carry their direction), and a station hands off between access points as in
simulation. Root only; skipped elsewhere with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import airlink
from airlink import _core, emulate as emulation

CHECKS = {c["name"]: c for c in _core.doctor()}
MISSING = [name for name, c in CHECKS.items() if c["required"] and not c["ok"]]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"emulation not possible here: {', '.join(MISSING)}")

# A DCCP CCID-2 stream of 512-byte datagrams, limited by its host to 500 a second (2 Mbit/s),
# from a station that moves from ap1 to ap2 at 3 s. Receiving feedback costs the host nothing
# here (`receive_cost`, tested in the device's own tests), so the rate is a closed form.
SCENARIO = """
stop = "6 s"
[host.server]
[host.ap1]
[host.ap2]
[host.sta]
[link.bss1]
from = "ap1"
wlan = { stations = ["sta"] }
[link.bss2]
from = "ap2"
wlan = { stations = [] }
[link.ap1-up]
from = "ap1"
to = "server"
pipe = { rate = "100 Mbit/s", delay = "2 ms" }
[link.ap1-down]
from = "server"
to = "ap1"
pipe = { rate = "100 Mbit/s", delay = "2 ms" }
[link.ap2-up]
from = "ap2"
to = "server"
pipe = { rate = "100 Mbit/s", delay = "2 ms" }
[link.ap2-down]
from = "server"
to = "ap2"
pipe = { rate = "100 Mbit/s", delay = "2 ms" }
[[flow]]
protocol = "dccp"
ccid = 2
server = "sta"
client = "server"
packet_size = "512 B"
device = { packet_rate = 500, receive_cost = "0 s" }
[[handoff]]
at = "3 s"
station = "sta"
from = "bss1"
to = "bss2"
"""


def test_a_station_handing_off_in_emulation_moves_its_flow_as_in_simulation(tmp_path: Path) -> None:
    path = tmp_path / "wlan.toml"
    path.write_text(SCENARIO)
    sim = airlink.run(str(path), seed=1).summary
    emulation.emulate(str(path), seed=1, out=tmp_path / "emu")
    emu = json.loads((tmp_path / "emu" / "summary.json").read_text())
    for summary in (sim, emu):
        links = {link["name"]: link for link in summary["links"]}
        # Data up and feedback down crossed each WLAN: before the hand-off bss1, after it bss2.
        for bss in ("bss1", "bss2"):
            assert links[bss]["model"] == "wlan"
            assert links[bss]["packets_out"] > 500, (bss, links[bss])
        # The host's limit, not the medium, sets the rate: 500 × 512 B = 2.05 Mbit/s.
        goodput = summary["flows"][0]["goodput_bps"]
        assert 1.7e6 < goodput < 2.1e6, goodput
