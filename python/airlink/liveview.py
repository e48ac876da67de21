"""The live view of a running emulation (``airlink top RUN``, ``airlink emulate --live``).

Fed once a second with the run's state (:meth:`airlink.control.Control.state`), it shows per
link the throughput, the queue, drops by cause and the model's state (up or down, SNR and
modulation), per flow the goodput and cwnd or rate, and a sparkline of the last minute of each.
Drawn with ``rich`` (its ``Live`` display redraws a table in place without flicker, works in any
ANSI terminal, and is a pure-Python, widely used and maintained library; a full-screen TUI
framework such as Textual would bring an event loop this read-only view does not need).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

#: Samples (seconds) kept for the sparklines.
HISTORY = 60
_BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float], width: int = 30) -> str:
    """The last ``width`` values as bar characters, scaled to their maximum."""
    v = values[-width:]
    top = max(v, default=0.0)
    if top <= 0:
        return _BARS[0] * len(v)
    return "".join(_BARS[min(len(_BARS) - 1, int(x / top * (len(_BARS) - 1) + 0.5))] for x in v)


def rate(bps: float | None) -> str:
    if bps is None or math.isnan(bps):
        return "-"
    for unit, scale in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.2f} {unit}"
    return f"{bps:.0f} bit/s"


class LiveView:
    """Turns successive states into rates and a table; :meth:`render` draws the latest."""

    def __init__(self) -> None:
        self.state: dict[str, Any] | None = None
        self.history: dict[str, deque[float]] = {}
        self.rates: dict[str, float] = {}

    def update(self, state: dict[str, Any]) -> None:
        prev, self.state = self.state, state
        if prev is None:
            return
        dt = state["time_s"] - prev["time_s"]
        if dt <= 0:
            return
        counters = {f"link:{link['name']}": link["bytes_out"] for link in state["links"]}
        before = {f"link:{link['name']}": link["bytes_out"] for link in prev["links"]}
        for f, g in zip(state["flows"], prev["flows"]):
            counters[f"flow:{f['index']}"] = _flow_bytes(f)
            before[f"flow:{f['index']}"] = _flow_bytes(g)
        for key, value in counters.items():
            r = (value - before.get(key, value)) * 8 / dt
            self.rates[key] = r
            self.history.setdefault(key, deque(maxlen=HISTORY)).append(r)

    def render(self) -> Group:
        s = self.state
        if s is None:
            return Group(Text("waiting for the run's first state..."))
        links = Table(title=f"{s['scenario']} at {s['time_s']:.1f} s: links", title_justify="left", expand=True)
        for col in ("link", "state", "rate", "throughput", "history", "queue", "drops q/loss/outage/corrupt/arq"):
            links.add_column(col, no_wrap=True)
        for link in s["links"]:
            key = f"link:{link['name']}"
            d = link["drops"]
            model = "up" if link["up"] else "[bold red]down[/]"
            if link.get("radio"):
                r = link["radio"]
                model += f" {r['snr_db']:.1f} dB, {r['modulation_bits']} bit/sym"
            queue = f"{link['queue_packets']} pkt / {link['queue_bytes']} B"
            links.add_row(link["name"], model, rate(link["rate_bps"]), rate(self.rates.get(key)),
                          sparkline(list(self.history.get(key, []))), queue,
                          f"{d['queue']}/{d['loss']}/{d['outage']}/{d['corrupted']}/{d['arq_gave_up']}")
        own = s["endpoints"] == "airlink"
        flows = Table(title="flows: " + ("airlink's own transports, goodput" if own else "the kernel's, IP bytes to the client"),
                      title_justify="left", expand=True)
        for col in ("flow", "goodput" if own else "throughput", "history", "cwnd", "rate", "srtt"):
            flows.add_column(col, no_wrap=True)
        for f in s["flows"]:
            key = f"flow:{f['index']}"
            o = f.get("own") or f.get("kernel") or {}  # the kernel's TCP: its sampled TCP_INFO
            cwnd = o.get("cwnd_bytes")
            flows.add_row(f["name"] or str(f["index"]), rate(self.rates.get(key)), sparkline(list(self.history.get(key, []))),
                          "-" if cwnd is None or math.isnan(cwnd) else f"{cwnd / 1000:.1f} kB",
                          rate(o.get("rate_bps")),
                          "-" if o.get("srtt_ms") is None or math.isnan(o["srtt_ms"]) else f"{o['srtt_ms']:.1f} ms")
        return Group(links, flows)


def _flow_bytes(f: dict[str, Any]) -> int:
    """What a flow's goodput counts: payload delivered with airlink's transports, else the IP
    bytes the datapath wrote to the client."""
    own = f.get("own")
    return own["delivered_bytes"] if own else (f.get("traffic") or {}).get("down_bytes", 0)
