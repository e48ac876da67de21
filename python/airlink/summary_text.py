"""The short human-readable summary every run ends with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _kbps(bps: float | None) -> str:
    return "n/a" if bps is None else f"{bps / 1e3:,.1f} kbit/s"


def _share(part: int, whole: int) -> str:
    return f" ({100 * part / whole:.1f} %)" if whole else ""


def _pct(part: int, whole: int) -> str:
    """A small share with the digits that matter: 8 of 220,000 is 0.00364 %, not 0.00 %."""
    return f"{100 * part / whole:.3g} %" if whole else "n/a"


def flow_labels(resolved_scenario: str | None) -> list[str]:
    """What each flow's application sends, from the resolved scenario TOML (a manifest's
    ``resolved_scenario``): "cbr 1 Mbit/s", "vbr 25 frames/s", "bulk", "file"."""
    if not resolved_scenario:
        return []
    import tomllib

    labels = []
    for f in tomllib.loads(resolved_scenario).get("flow", []):
        app = f.get("app") or ("cbr" if f.get("protocol") == "udp" else "bulk")
        if app == "cbr" and "rate" in f:
            app += f" {f['rate']}"
        elif app == "vbr" and "frame_rate" in f:
            app += f" {f['frame_rate']:g} frames/s"
        labels.append(app)
    return labels


def format_summary(summary: Mapping[str, Any], resolved_scenario: str | None = None) -> str:
    """Per flow goodput, retransmissions and timeouts; per link what it carried and lost.

    >>> s = {"scenario": "x", "seed": 1, "completed": True, "sim_time_s": 2.0, "events": 10,
    ...      "flows": [{"id": 0, "protocol": "tcp", "congestion": "newreno", "bytes_delivered": 1000,
    ...                 "bytes_requested": 1000, "completed": True, "duration_s": 1.0, "goodput_bps": 8000.0,
    ...                 "goodput_steady_bps": None, "data_segments_sent": 2, "retransmissions": 0,
    ...                 "retransmission_pct": 0.0, "spurious_retransmissions": 0,
    ...                 "link_losses": 0, "timeouts": 0, "fast_recoveries": 0, "checksum_drops": 0}],
    ...      "links": []}
    >>> print(format_summary(s))
    x, seed 1: every flow completed; stopped at 2.000 s simulated (10 events)
      flow 0 tcp/newreno: completed, 1,000 of 1,000 B in 1.000 s, goodput 8.0 kbit/s (steady n/a), retransmitted 0 of 2 data segments (0 %, spurious 0), timeouts 0, fast recoveries 0, link losses 0
    """
    state = "every flow completed" if summary["completed"] else "NOT every flow completed"
    lines = [f"{summary['scenario']}, seed {summary['seed']}: {state}; stopped at {summary['sim_time_s']:.3f} s simulated "
             f"({summary['events']:,} events)"]
    lines.extend(format_flows(summary["flows"], flow_labels(resolved_scenario)))
    for link in summary["links"]:
        line = f"  link {link['name']} ({link['model']}): {link['packets_out']:,} packets out"
        if link["frames_sent"]:
            line += (
                f", frames {link['frames_sent']:,}, frame errors {link['frame_errors']:,}"
                f"{_share(link['frame_errors'], link['frames_sent'])}, ARQ retransmissions {link['arq_retransmissions']:,}, "
                f"given up {link['packets_given_up']:,}"
            )
        line += f", drops: queue {link['queue_drops']:,}, loss {link['loss_drops']:,}, checksum {link['checksum_drops']:,}"
        if link.get("outage_drops"):
            line += f", outage {link['outage_drops']:,}"
        lines.append(line)
    return "\n".join(lines)


def format_flows(flows: list[Mapping[str, Any]], apps: list[str] | None = None) -> list[str]:
    """A line per flow: whether it completed (the summary's ``completed``, word for word), what
    it delivered, its goodput, and its losses. ``apps`` (from :func:`flow_labels`) adds what
    each media flow sends ("udp cbr 1 Mbit/s"). A flow with ``ecn = true`` adds its ECN counts:

    >>> f = {"id": 0, "protocol": "tcp", "congestion": "cubic", "bytes_delivered": 1000, "bytes_requested": None,
    ...      "completed": True, "goodput_bps": 8000.0, "goodput_steady_bps": None, "data_segments_sent": 2,
    ...      "retransmissions": 0, "spurious_retransmissions": 0, "timeouts": 0, "fast_recoveries": 0,
    ...      "checksum_drops": 0, "ecn": {"negotiated": True, "ce_marks_received": 3, "ece_reductions": 2}}
    >>> format_flows([f])[0].split("fast recoveries 0, ")[1]
    'ECN: 3 CE marks received, 2 reductions'
    """
    lines = []
    for f in flows:
        # UDP has no congestion control to name: what it sends says more.
        label = f["protocol"] if f["protocol"] == "udp" else f"{f['protocol']}/{f['congestion']}"
        app = apps[f["id"]] if apps and f["id"] < len(apps) else None
        if app and app not in ("bulk", "file"):
            label += f" {app}"
        head = f"  flow {f['id']} {label}: {'completed' if f['completed'] else 'NOT completed'}, "
        if f["bytes_requested"] is None:
            delivered = f"{f['bytes_delivered']:,} B (no size: runs to the stop time)"
        else:
            delivered = f"{f['bytes_delivered']:,} of {f['bytes_requested']:,} B"
            if f["completed"] and f["duration_s"] is not None:
                delivered += f" in {f['duration_s']:.3f} s"
        if f.get("iperf"):
            i = f["iperf"]
            lines.append(
                f"{head}{delivered}, goodput {_kbps(f['goodput_bps'])}; iperf: {i['received']:,} of {i['datagrams']:,} "
                f"datagrams, lost {i['lost']:,} ({i['loss_pct']:.3g} %), out of order {i['out_of_order']:,}, "
                f"jitter {i['jitter_ms']:.3f} ms"
            )
            continue
        line = f"{head}{delivered}, goodput {_kbps(f['goodput_bps'])} (steady {_kbps(f['goodput_steady_bps'])})"
        if f["protocol"] == "tcp":
            line += (
                f", retransmitted {f['retransmissions']:,} of {f['data_segments_sent']:,} data segments "
                f"({_pct(f['retransmissions'], f['data_segments_sent'])}, spurious {f['spurious_retransmissions']:,}), "
                f"timeouts {f['timeouts']}, fast recoveries {f['fast_recoveries']}"
            )
            if f.get("link_losses") is not None:  # emulation does not attribute link drops to flows
                line += f", link losses {f['link_losses']:,}"
            if f.get("ecn"):  # a flow with `ecn = true` (RFC 3168)
                e = f["ecn"]
                line += (f", ECN: {e['ce_marks_received']:,} CE marks received, {e['ece_reductions']:,} reductions"
                         if e["negotiated"] else ", ECN not negotiated")
        if f["checksum_drops"]:
            line += f", checksum drops {f['checksum_drops']}"
        lines.append(line)
    return lines
