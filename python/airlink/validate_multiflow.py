"""Many flows on a small queue: the kernel's TCP through the emulator against airlink's TCP in
simulation on the benchmark dumbbell (``airlink bench --dumbbell``: 10 flows, a 10 Mbit/s
bottleneck with one bandwidth-delay product of drop-tail queue, 18 packets at 22 ms).

airlink's NewReno dropped 4,491 packets in 100 s there and ns-3's 2,093; this settles which count
the real stack agrees with. Every run counts the bottleneck's queue drops (the link model's own
counter, the same model in both modes) and the goodput of all flows together.

``kernel-cubic`` / ``kernel-reno``   emulation: ``iperf3 -R -P 10 -C cubic|reno``;
``airlink-cubic`` / ``airlink-newreno``   simulation: the dumbbell's 10 flows, ``linux`` preset for
CUBIC (the kernel's settings), the benchmark's own flows (default preset) for NewReno.
"""

from __future__ import annotations

import math
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from airlink import _core
from airlink import emulate as emulation
from airlink import validate as v

RATE_BPS = 10_000_000
FLOWS = 10
RTT_MS = 22
PORT = 5201


def dumbbell(seconds: int, congestion: str | None = None, preset: str | None = None) -> str:
    """The benchmark's dumbbell, sampled every 100 ms, its flows with ``congestion`` and
    ``preset`` when given, the kernel's buffers large enough for every window."""
    text = _core.dumbbell_scenario(RATE_BPS, FLOWS, seconds, RTT_MS).replace('sample_interval = "0 s"',
                                                                            'sample_interval = "100 ms"')
    if congestion:
        text = text.replace("[[flow]]\n", f'[[flow]]\ncongestion = "{congestion}"\n')
    if preset:
        text = text.replace("[flow.tcp]\n", f'[flow.tcp]\npreset = "{preset}"\n')
    return text


def _bottleneck(summary: Mapping[str, Any]) -> dict[str, Any]:
    return next(link for link in summary["links"] if link["name"] == "downlink")


def kernel_scenario(seconds: int, congestion: str) -> str:
    """The dumbbell for the kernel's run: the flows' ``congestion`` is the kernel's default in
    both namespaces (iperf3's ``-C`` names it too), with the validation's sysctls."""
    sysctl = ", ".join(f'"{k}" = "{x}"' for k, x in v.KERNEL_SYSCTLS.items())
    return dumbbell(seconds + 5, congestion) + f'\n[emulation]\nsysctl = {{ {sysctl} }}\n'


def run_kernel(out: Path, congestion: str, seconds: int, seed: int = 1) -> dict[str, Any]:
    text = kernel_scenario(seconds, congestion)
    path = out / f"kernel-{congestion}.toml"
    path.write_text(text, encoding="utf-8")
    res = emulation.emulate(path, seed=seed, out=out / f"kernel-{congestion}", force=True,
                            server=f"iperf3 -s -1 -p {PORT}",
                            client=f"iperf3 -c $AIRLINK_SERVER -p {PORT} -R -P {FLOWS} -t {seconds} -C {congestion} --json",
                            timeout=seconds + 60, server_delay=1.0)
    iperf = (res.summary.get("iperf3") or {}).get("flows", [])
    goodput = sum(f["goodput_bps"] or 0 for f in iperf) if iperf else math.nan
    link = _bottleneck(res.summary)
    return {"run": f"kernel-{congestion}", "completed": res.completed, "queue_drops": link["queue_drops"],
            "packets_out": link["packets_out"], "goodput_bps": goodput, "seconds": seconds,
            "retransmissions": sum(f.get("retransmissions") or 0 for f in iperf)}


def run_sim(out: Path, congestion: str, preset: str | None, seconds: int, seed: int = 1) -> dict[str, Any]:
    import airlink

    text = dumbbell(seconds, congestion if congestion != "newreno" else None, preset)
    path = out / f"airlink-{congestion}.toml"
    path.write_text(text, encoding="utf-8")
    r = airlink.run(path, seed=seed, out=out / f"airlink-{congestion}", force=True)
    link = _bottleneck(r.summary)
    flows = r.summary["flows"]
    return {"run": f"airlink-{congestion}", "completed": True, "queue_drops": link["queue_drops"],
            "packets_out": link["packets_out"],
            "goodput_bps": sum(f["goodput_bps"] for f in flows), "seconds": seconds,
            "retransmissions": sum(f["retransmissions"] for f in flows)}


def run(out: Path, seconds: int = 100, seed: int = 1) -> list[dict[str, Any]]:
    out.mkdir(parents=True, exist_ok=True)
    rows = [run_sim(out, "newreno", None, seconds, seed), run_sim(out, "cubic", "linux", seconds, seed)]
    if not v.emulation_unavailable():
        rows += [run_kernel(out, "cubic", seconds, seed), run_kernel(out, "reno", seconds, seed)]
    v.write_csv(out / "multiflow.csv", rows, ("run", "completed", "queue_drops", "packets_out", "goodput_bps",
                                              "retransmissions", "seconds"))
    return rows
