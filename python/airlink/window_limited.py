"""After a simulation: TCP flows whose window was the receive window for most of their run.

Such a flow sends ``min(cwnd, rwnd)``; while cwnd is at or above the receive window, its
congestion control changes nothing, so CUBIC, NewReno and Reno give the same run. ``airlink
check`` says it beforehand when the path holds the whole window (``crates/airlink-net/src/
moot.rs``); this says it from the run's own samples, for every other case (a window the
path could overflow, which the flow never reached).
"""

from __future__ import annotations

import tomllib
from typing import Any

#: "For most of the run": the share of a flow's samples with cwnd at or above its window.
MOST = 0.5


def measured_warnings(resolved_scenario: str, flows: Any) -> list[str]:
    """One sentence per TCP flow whose cwnd was at or above its receive window in more than
    half of its samples while it had data in flight. ``flows`` is the run's ``flows`` table (a
    DataFrame); ``resolved_scenario`` the manifest's TOML, whose receive windows are filled in.

    >>> import pandas as pd
    >>> toml = '[[flow]]\\nprotocol = "tcp"\\ncongestion = "cubic"\\n[flow.tcp]\\nrwnd = "64 KiB"\\n'
    >>> table = pd.DataFrame({"flow": [0] * 4, "cwnd_bytes": [2e4, 7e4, 9e4, 9e4],
    ...                       "inflight_bytes": [1e4, 6e4, 6e4, 0.0]})
    >>> print(measured_warnings(toml, table)[0])  # doctest: +NORMALIZE_WHITESPACE
    flow 0: cwnd was at or above the receive window (tcp.rwnd = 65536 B) in 67 % of the samples
    with data in flight: the receive window, not congestion = "cubic", set the rate, and CUBIC,
    NewReno and Reno would have given the same run there; set flow.0.tcp.rwnd larger to let the
    congestion control matter
    """
    if flows is None or len(flows) == 0 or "cwnd_bytes" not in flows:
        return []
    scenario = tomllib.loads(resolved_scenario)
    out = []
    for i, f in enumerate(scenario.get("flow", [])):
        if f.get("protocol", "tcp") != "tcp":
            continue
        rwnd = _bytes(f.get("tcp", {}).get("rwnd"))
        if rwnd is None:
            continue
        rows = flows[(flows["flow"] == i) & (flows["inflight_bytes"] > 0)]
        if len(rows) == 0:
            continue
        share = float((rows["cwnd_bytes"] >= rwnd).mean())
        if share > MOST:
            out.append(
                f"flow {i}: cwnd was at or above the receive window (tcp.rwnd = {rwnd} B) in {100 * share:.0f} % "
                f"of the samples with data in flight: the receive window, not congestion = "
                f"\"{f.get('congestion', 'newreno')}\", set the rate, and CUBIC, NewReno and Reno would have given "
                f"the same run there; set flow.{i}.tcp.rwnd larger to let the congestion control matter")
    return out


def _bytes(value: Any) -> int | None:
    """A resolved size ("65536 B", "64 KiB", or a number) in bytes."""
    if value is None:
        return None
    if isinstance(value, int | float):
        return int(value)
    number, _, unit = str(value).strip().partition(" ")
    scale = {"": 1, "B": 1, "kB": 1000, "KiB": 1024, "MB": 10**6, "MiB": 1 << 20, "GB": 10**9, "GiB": 1 << 30}
    return int(float(number) * scale[unit]) if unit in scale else None
