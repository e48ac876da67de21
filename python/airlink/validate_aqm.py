"""``airlink validate aqm``: airlink's queue disciplines against ns-3's, on the same dumbbell.

ns-3 implements CoDel (RFC 8289), FQ-CoDel (RFC 8290), PIE (RFC 8033) and RED (Floyd and
Jacobson, gentle) from the same references as ``crates/airlink-link/src/queue/``, independently.
Each point runs both: a 10 Mbit/s bottleneck with 20 ms each way, the discipline in front of it
with a 1,000-packet limit (so drop-tail shows the standing queue the disciplines remove), and
1 or 4 NewReno bulk transfers for ``seconds``, 1500-byte packets, airlink's ``linux`` TCP preset
(initial window 10, SACK and timestamps as ns-3's defaults). ns-3 runs in its own interpreter
(:mod:`airlink.ns3_aqm_run`; the ``ns3`` wheel from PyPI, an optional validation dependency
installed on first use into a cached virtual environment, not needed by ``make test``).

Compared per point: goodput (bytes delivered over the run) and the mean queue length in packets
(the discipline's length sampled every 10 ms in both); drops are reported beside them (they
follow the TCP implementations' reaction to each drop, which the two stacks do not share
exactly). The agreement bounds, set before measuring: goodput within 5 % (airlink's and ns-3's
NewReno agree within 1 % on a drop-tail path with few flows, notes/anchors-measured.md), mean
queue within 25 % or 1 packet, whichever is larger.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

import airlink

NS3_WHEEL = "ns3==3.44.post0"
KINDS = ("droptail", "codel", "fq_codel", "pie", "red")
GOODPUT_REL = 0.05
QUEUE_REL = 0.25
QUEUE_ABS = 1.0


@dataclass(frozen=True)
class Point:
    kind: str
    flows: int
    rate_bps: int = 10_000_000
    delay_ms: int = 20
    queue: int = 1000
    seconds: int = 30
    seed: int = 1

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.flows}"


def matrix(seconds: int = 30, kinds: Sequence[str] = KINDS, flows: Sequence[int] = (1, 4)) -> list[Point]:
    return [Point(k, n, seconds=seconds) for k in kinds for n in flows]


def scenario(p: Point) -> str:
    """The airlink half of a point, as a scenario file's text."""
    aqm = "" if p.kind == "droptail" else f'aqm = "{p.kind}"\n'
    return (f'name = "validate-aqm-{p.name}"\nseed = {p.seed}\nstop = "{p.seconds} s"\ntcp_preset = "linux"\n'
            f'sample_interval = "10 ms"\n'
            f'[downlink.pipe]\nrate = "{p.rate_bps} bit/s"\ndelay = "{p.delay_ms} ms"\nqueue = {p.queue}\n{aqm}'
            f'[uplink.pipe]\ndelay = "{p.delay_ms} ms"\n'
            f'[[flow]]\ncongestion = "newreno"\ncopies = {p.flows}\n')


def run_airlink(p: Point, folder: Path) -> dict[str, float]:
    path = folder / f"{p.name}.toml"
    path.write_text(scenario(p), encoding="utf-8")
    result = airlink.run(path, out=folder / p.name)
    links = result.summary["links"]
    down = next(link for link in links if link["name"] == "downlink")
    queue = result.links
    queue = queue[queue.link == "downlink"]
    aqm = down.get("aqm") or {}
    return {
        "bytes_delivered": float(sum(f["bytes_delivered"] for f in result.summary["flows"])),
        "queue_mean_packets": float(queue.queue_packets.mean()),
        "drops": float(down["queue_drops"]),
        "sojourn_p50_ms": float(aqm.get("sojourn_p50_ms", float("nan"))),
    }


def _ns3_venv() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "airlink" / "ns3-venv"


def installed_ns3_python() -> Path | None:
    """An interpreter that has the ns3 wheel, without installing anything: ``AIRLINK_NS3_PYTHON``
    if set, else the cached virtual environment if a previous ``airlink validate aqm`` made it."""
    if os.environ.get("AIRLINK_NS3_PYTHON"):
        return Path(os.environ["AIRLINK_NS3_PYTHON"])
    marker = _ns3_venv() / ".installed"
    return _ns3_venv() / "bin" / "python" if marker.exists() and marker.read_text() == NS3_WHEEL else None


def ns3_python() -> Path:
    """:func:`installed_ns3_python`, or a virtual environment under the user's cache created now
    (about 5 minutes: the wheel's C++ bindings compile once)."""
    found = installed_ns3_python()
    if found:
        return found
    root = _ns3_venv()
    # `--clear` restarts a half-finished install of ours; a folder that is not a virtual
    # environment is somebody else's and is left alone.
    if root.exists() and any(root.iterdir()) and not (root / "pyvenv.cfg").exists():
        raise RuntimeError(f"{root} exists and is not airlink's ns-3 environment: move it, or set "
                           "AIRLINK_NS3_PYTHON to an interpreter that has the ns3 wheel")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(root)], check=True)
    subprocess.run([str(root / "bin" / "python"), "-m", "pip", "install", "-q", NS3_WHEEL], check=True)
    (root / ".installed").write_text(NS3_WHEEL)
    return root / "bin" / "python"


def run_ns3(points: Sequence[Point], python: Path) -> list[dict[str, float]]:
    script = Path(__file__).with_name("ns3_aqm_run.py")
    done = subprocess.run([str(python), str(script)], input=json.dumps([asdict(p) for p in points]),
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ns-3 failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def compare(points: Sequence[Point], folder: Path, python: Path,
            progress: Callable[[str], None] = lambda m: None) -> pd.DataFrame:
    """A row per point: both stacks' goodput, mean queue and drops, and the verdict."""
    folder.mkdir(parents=True, exist_ok=True)
    progress(f"ns-3: {len(points)} points")
    theirs = run_ns3(points, python)
    rows = []
    for p, ns3 in zip(points, theirs, strict=True):
        progress(f"airlink: {p.name}")
        ours = run_airlink(p, folder)
        g_ours, g_ns3 = (8 * r["bytes_delivered"] / p.seconds for r in (ours, ns3))
        q_ours, q_ns3 = ours["queue_mean_packets"], ns3["queue_mean_packets"]
        goodput_ok = abs(g_ours / g_ns3 - 1) <= GOODPUT_REL
        queue_ok = abs(q_ours - q_ns3) <= max(QUEUE_ABS, QUEUE_REL * q_ns3)
        rows.append({
            "point": p.name, "kind": p.kind, "flows": p.flows,
            "goodput_airlink_bps": g_ours, "goodput_ns3_bps": g_ns3,
            "queue_airlink_packets": q_ours, "queue_ns3_packets": q_ns3,
            "drops_airlink": ours["drops"], "drops_ns3": ns3["drops"],
            "sojourn_p50_airlink_ms": ours["sojourn_p50_ms"],
            "goodput_ok": goodput_ok, "queue_ok": queue_ok,
        })
    return pd.DataFrame(rows)


def format_table(df: pd.DataFrame) -> str:
    lines = ["| point | goodput airlink / ns-3 (Mbit/s) | mean queue airlink / ns-3 (packets) | drops airlink / ns-3 | verdict |",
             "|---|---|---|---|---|"]
    for r in df.itertuples():
        verdict = "agree" if r.goodput_ok and r.queue_ok else \
            "DIFFER (" + ", ".join(w for w, ok in (("goodput", r.goodput_ok), ("queue", r.queue_ok)) if not ok) + ")"
        lines.append(f"| {r.point} | {r.goodput_airlink_bps / 1e6:.2f} / {r.goodput_ns3_bps / 1e6:.2f} | "
                     f"{r.queue_airlink_packets:.1f} / {r.queue_ns3_packets:.1f} | "
                     f"{r.drops_airlink:.0f} / {r.drops_ns3:.0f} | {verdict} |")
    return "\n".join(lines)


def write_report(df: pd.DataFrame, out: Path) -> None:
    df.to_csv(out / "aqm.csv", index=False)
    (out / "README.md").write_text(
        "# airlink's queue disciplines against ns-3's\n\n" + (__doc__ or "").split("\n\n", 1)[1] + "\n\n"
        + format_table(df) + "\n", encoding="utf-8")
