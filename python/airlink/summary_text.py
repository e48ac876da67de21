"""The short human-readable summary every run ends with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _kbps(bps: float | None) -> str:
    return "n/a" if bps is None else f"{bps / 1e3:,.1f} kbit/s"


def _share(part: int, whole: int) -> str:
    return f" ({100 * part / whole:.1f} %)" if whole else ""


def format_summary(summary: Mapping[str, Any]) -> str:
    """Per flow goodput, retransmissions and timeouts; per link what it carried and lost.

    >>> s = {"scenario": "x", "seed": 1, "completed": True, "sim_time_s": 2.0, "events": 10,
    ...      "flows": [{"id": 0, "protocol": "tcp", "congestion": "newreno", "bytes_delivered": 1000,
    ...                 "bytes_requested": 1000, "completed": True, "duration_s": 1.0, "goodput_bps": 8000.0,
    ...                 "goodput_steady_bps": None, "retransmissions": 1, "retransmission_pct": 50.0,
    ...                 "spurious_retransmissions": 0, "link_losses": 1,
    ...                 "timeouts": 0, "fast_recoveries": 1, "checksum_drops": 0}], "links": []}
    >>> print(format_summary(s))
    x, seed 1: finished at 2.000 s simulated (10 events)
      flow 0 tcp/newreno: 1,000 of 1,000 B in 1.000 s, goodput 8.0 kbit/s (steady n/a), retransmissions 50.00 % (1, spurious 0), timeouts 0, fast recoveries 1, link losses 1
    """
    state = "finished" if summary["completed"] else "stopped unfinished"
    lines = [f"{summary['scenario']}, seed {summary['seed']}: {state} at {summary['sim_time_s']:.3f} s simulated ({summary['events']:,} events)"]
    lines.extend(format_flows(summary["flows"]))
    for link in summary["links"]:
        line = f"  link {link['name']} ({link['model']}): {link['packets_out']:,} packets out"
        if link["frames_sent"]:
            line += (
                f", frames {link['frames_sent']:,}, frame errors {link['frame_errors']:,}"
                f"{_share(link['frame_errors'], link['frames_sent'])}, ARQ retransmissions {link['arq_retransmissions']:,}, "
                f"given up {link['packets_given_up']:,}"
            )
        line += f", drops: queue {link['queue_drops']:,}, loss {link['loss_drops']:,}, checksum {link['checksum_drops']:,}"
        lines.append(line)
    return "\n".join(lines)


def format_flows(flows: list[Mapping[str, Any]]) -> list[str]:
    """A line per flow: what it delivered, its goodput, and its losses."""
    lines = []
    for f in flows:
        duration = "not finished" if f["duration_s"] is None else f"in {f['duration_s']:.3f} s"
        of = "" if f["bytes_requested"] is None else f" of {f['bytes_requested']:,}"
        line = (
            f"  flow {f['id']} {f['protocol']}/{f['congestion']}: {f['bytes_delivered']:,}{of} B "
            f"{duration}, goodput {_kbps(f['goodput_bps'])} (steady {_kbps(f['goodput_steady_bps'])}), "
            f"retransmissions {f['retransmission_pct']:.2f} % ({f['retransmissions']}, spurious "
            f"{f['spurious_retransmissions']}), timeouts {f['timeouts']}, fast recoveries {f['fast_recoveries']}"
        )
        if f.get("link_losses") is not None:
            line += f", link losses {f['link_losses']}"
        if f["checksum_drops"]:
            line += f", checksum drops {f['checksum_drops']}"
        if f.get("iperf"):
            i = f["iperf"]
            line = (
                f"  flow {f['id']} {f['protocol']}/{f['congestion']}: {f['bytes_delivered']:,} B, goodput {_kbps(f['goodput_bps'])}; "
                f"iperf: {i['received']:,} of {i['datagrams']:,} datagrams, lost {i['lost']:,} ({i['loss_pct']:.2f} %), "
                f"out of order {i['out_of_order']:,}, jitter {i['jitter_ms']:.3f} ms"
            )
        lines.append(line)
    return lines
