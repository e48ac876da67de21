"""Real-time emulation through real namespaces (root only; skipped elsewhere with the reason).

No timed assertions: counts, orderings, lower bounds and ratios with tolerances that hold on a
busy 2-core machine. The figures themselves are reported by ``airlink bench --emu``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import airlink
from airlink import _core, emulate as emulation
from airlink.results import TABLE_COLUMNS

from conftest import AIRLINK_COMMAND, VALIDATION

CHECKS = _core.doctor()
MISSING = [c["name"] for c in CHECKS if c["required"] and not c["ok"]]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"emulation not possible here: {', '.join(MISSING)}")
PY = sys.executable


def tool(name: str) -> bool:
    return any(c["name"] == name and c["ok"] for c in CHECKS)


def scenario(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


DELAY_20 = """
sample_interval = "20 ms"
[downlink.pipe]
delay = "20 ms"
[uplink.pipe]
delay = "20 ms"
[[flow]]
"""


def test_doctor_reports_real_checks(airlink_cli) -> None:
    r = airlink_cli("doctor", "--json")
    assert r.exit_code == 0, r.output
    names = {c["name"] for c in json.loads(r.output)}
    assert {"network namespaces", "TUN devices", "CAP_NET_ADMIN", "TCP congestion controls"} <= names


def test_shell_runs_in_the_client_namespace_and_passes_the_exit_code(tmp_path: Path) -> None:
    s = scenario(tmp_path, DELAY_20)
    r = subprocess.run([*AIRLINK_COMMAND, "shell", str(s), "--", "sh", "-c", 'echo "$AIRLINK_SERVER"; ip -o -4 addr show al0; exit 3'],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 3, r.stderr
    assert r.stdout.splitlines()[0] == "10.77.0.1"
    assert "10.77.0.2" in r.stdout


@pytest.mark.skipif(not tool("ping"), reason="ping is not installed")
def test_ping_never_beats_the_requested_delay(tmp_path: Path) -> None:
    s = scenario(tmp_path, DELAY_20)
    out = tmp_path / "run"
    res = emulation.emulate(s, client="ping -n -c 20 -i 0.05 $AIRLINK_SERVER", out=out)
    assert res.completed
    rtts = [float(line.split("time=")[1].split()[0]) for line in res.output("client").splitlines() if "time=" in line]
    assert len(rtts) == 20
    assert min(rtts) >= 40.0, rtts
    # Loose upper bound for a busy machine (a doubled delay would fail it); the bench reports
    # mean and p99.
    assert sorted(rtts)[len(rtts) // 2] < 60.0, rtts
    # The results folder.
    names = {p.name for p in out.iterdir()}
    assert {"manifest.json", "summary.json", "links.parquet", "events.parquet", "client.pcap", "server.pcap",
            "client.stdout", "client.stderr", "server.stdout", "server.stderr"} <= names
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["mode"] == "emulation" and manifest["completed"] is True
    assert manifest["kernel"]["release"] == os.uname().release
    assert manifest["sysctls"]["client"]["net.ipv6.conf.all.disable_ipv6"] == "1"
    summary = json.loads((out / "summary.json").read_text())
    assert [link["name"] for link in summary["links"]] == ["wired.down", "downlink", "uplink", "wired.up"]
    assert all(link["packets_out"] == 20 for link in summary["links"])
    # pcaps at the application side: 20 requests + 20 replies each, time-ordered.
    for side in ("client", "server"):
        recs = emulation.read_pcap(out / f"{side}.pcap")
        assert len(recs) == 40
        assert [t for t, _, _ in recs] == sorted(t for t, _, _ in recs)
    import pandas as pd

    links = pd.read_parquet(out / "links.parquet")
    assert set(links["link"]) == {"wired.down", "downlink", "uplink", "wired.up"}


@pytest.mark.skipif(not tool("tshark"), reason="tshark is not installed")
def test_tshark_reads_the_pcaps(tmp_path: Path) -> None:
    s = scenario(tmp_path, DELAY_20)
    out = tmp_path / "run"
    emulation.emulate(s, client="ping -n -c 3 -i 0.05 $AIRLINK_SERVER", out=out)
    r = subprocess.run(["tshark", "-r", str(out / "client.pcap"), "-Y", "icmp"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("Echo (ping) request") == 3 and r.stdout.count("Echo (ping) reply") == 3


LINE = """
[downlink.pipe]
rate = "{rate} bit/s"
queue = 100000
[uplink.pipe]
[[flow]]
"""


AIRLINK_BIN = str(Path(sys.executable).with_name("airlink"))


@pytest.mark.skipif(not Path(AIRLINK_BIN).exists(), reason="the venv's airlink script is not installed")
@pytest.mark.parametrize("rate,count", [(9600, 25), (1_000_000, 1000), (5_000_000, 5000)])
def test_line_rate_of_100_byte_packets(tmp_path: Path, rate: int, count: int) -> None:
    """udpgen offers up to `count` 100-byte IP packets at 100 times the link's rate into a
    queue that holds them all: the link sends them back to back at exactly its rate. (All are
    queued within a hundredth of the run: a sender stalled by a busy machine cannot leave the
    link idle.)"""
    s = scenario(tmp_path, LINE.format(rate=rate))
    seconds = count * 800 / (100 * rate)
    res = emulation.emulate(
        s, out=tmp_path / "run", server_delay=0, timeout=120,
        client=f"{AIRLINK_BIN} udpgen recv --port 9000 --seconds 60 --idle 2 --ready {tmp_path / 'ready'} --json",
        server=f"{wait_for(tmp_path / 'ready')}; exec {AIRLINK_BIN} udpgen send --to $AIRLINK_CLIENT:9000 --size 72 "
               f"--rate '{100 * rate} bit/s' --seconds {seconds} --json",
    )
    sent, got = json.loads(res.output("server")), json.loads(res.output("client"))
    dl = res.summary["datapath"]["downlink"]
    # A sender stalled by a busy machine may send less (its schedule ends on time): what it
    # sent all arrives.
    assert sent["packets"] >= count * 0.5 and res.summary["links"][1]["queue_drops"] == 0
    assert got["packets"] == dl["packets"] == sent["packets"]
    # From the link's departure schedule, first to last packet: never faster than the link (up
    # to ns rounding); slower only by a gap in the sender's stream (udpgen paces in batches:
    # the first packet may go out alone), which the 99 % bound allows.
    assert rate * 0.99 < dl["scheduled_rate_bps"] <= rate * (1 + 1e-4)
    # As written to the TUN device (the client pcap's stamps), in the steady middle of the
    # run: one late first or last packet, or a stall the datapath caught up on, cannot move
    # it. The margin is for a busy machine; `airlink bench --emu linerate` reports the figure.
    assert steady_rate_bps(tmp_path / "run" / "client.pcap", ip_bytes=100) == pytest.approx(rate, rel=0.03)


def wait_for(ready: Path) -> str:
    """A shell loop that waits until the receiver created its ready file."""
    return f"while [ ! -e {ready} ]; do sleep 0.05; done"


def steady_rate_bps(pcap: Path, *, ip_bytes: int, lo: float = 0.1, hi: float = 0.9) -> float:
    """The rate of the `ip_bytes`-long packets of a pcap between the packets at the `lo` and
    `hi` fractions of their count."""
    stamps = sorted(t for t, orig, _ in emulation.read_pcap(pcap) if orig == ip_bytes)
    i, j = int(lo * len(stamps)), int(hi * len(stamps))
    return (j - i) * ip_bytes * 8 / ((stamps[j] - stamps[i]) * 1e-9)


FLOOD = """
[downlink.pipe]
delay = "60 s"
[uplink.pipe]
[[flow]]
"""


@pytest.mark.skipif(not Path(AIRLINK_BIN).exists(), reason="the venv's airlink script is not installed")
def test_a_flood_into_a_long_delay_is_bounded_in_bytes_and_its_drops_counted(tmp_path: Path) -> None:
    """No rate and a 60 s delay: every packet stays inside the delay line. The bytes held stay
    within the bound; what would exceed it is dropped on arrival, counted and warned about."""
    bound = 4_000_000
    res = emulation.emulate(
        scenario(tmp_path, FLOOD), out=tmp_path / "run", server_delay=0, max_in_flight_bytes=bound,
        client=wait_for(tmp_path / "sent"),
        server=f"{AIRLINK_BIN} udpgen send --to $AIRLINK_CLIENT:5300 --size 1372 --rate '100 Mbit/s' --seconds 1 --json; "
               f"touch {tmp_path / 'sent'}",
    )
    sent = json.loads(res.output("server"))
    drops, dp = res.summary["drops"], res.summary["datapath"]
    assert dp["max_in_flight_bytes"] == bound
    assert dp["packets_read_server"] == sent["packets"]
    # Nothing leaves a 60 s delay line: every packet read is held or dropped at the bound, and
    # each held one counts at its 1400 bytes plus the memory it holds besides (allocation, queue
    # slots: the same for packets of one size).
    held = dp["packets_read_server"] - drops["in_flight_limit"]["downlink"]
    cost, rest = divmod(dp["in_flight_max_bytes"][0], held)
    assert rest == 0 and 1400 < cost < 1400 + 512, (held, dp["in_flight_max_bytes"][0])
    assert bound - cost < dp["in_flight_max_bytes"][0] <= bound
    assert drops["in_flight_limit"]["uplink"] == 0
    assert any("memory bound" in w for w in res.summary["warnings"])
    import pandas as pd

    events = pd.read_parquet(tmp_path / "run" / "events.parquet")
    assert (events["kind"] == "in_flight_limit").sum() == drops["in_flight_limit"]["downlink"]


DEEP_QUEUE = """
stop = "120 s"
[downlink.pipe]
rate = "100 Mbit/s"
delay = "10 ms"
queue = 4000
[uplink.pipe]
rate = "100 Mbit/s"
delay = "10 ms"
[[flow]]
congestion = "cubic"
"""


@pytest.mark.skipif(not tool("iperf3"), reason="iperf3 is not installed")
def test_a_deep_queue_at_100_mbits_has_no_drops_the_scenario_did_not_ask_for(tmp_path: Path) -> None:
    """The kernel's CUBIC fills a 4000-packet queue at 100 Mbit/s: its window bursts into the
    server's TUN device. The kernels' own counters (not timing) show no packet dropped at either
    TUN device, and the emulator dropped none beyond the scenario's queue."""
    res = emulation.emulate(scenario(tmp_path, DEEP_QUEUE), out=tmp_path / "run", timeout=120,
                            server="iperf3 -s -1", client="iperf3 -c $AIRLINK_SERVER -R -n 60M --json")
    assert res.completed, res.output("client", "stderr")
    kernel = res.summary["drops"]["kernel"]
    assert set(kernel) == {"client", "server"}
    assert kernel["server"]["tx_packets"] >= 40_000  # the 60 MB went through it
    for side in ("client", "server"):
        assert {k: v for k, v in kernel[side].items() if k.endswith(("dropped", "errors"))} == {
            "tx_dropped": 0, "tx_errors": 0, "rx_dropped": 0, "rx_errors": 0}, kernel
    assert res.summary["drops"]["in_flight_limit"] == {"downlink": 0, "uplink": 0}
    assert res.summary["drops"]["records_lost"] == 0 and res.summary["warnings"] == []


UDPGEN_LINE = """
[downlink.pipe]
rate = "2 Mbit/s"
queue = 50
[uplink.pipe]
[[flow]]
"""


@pytest.mark.skipif(not Path(AIRLINK_BIN).exists(), reason="the venv's airlink script is not installed")
def test_udpgen_overloads_a_pipe_and_the_receiver_accounts_for_every_packet(tmp_path: Path) -> None:
    """udpgen offers 2x a 2 Mbit/s pipe: everything it sent is read by the datapath, what the
    pipe let through is what the receiver counted, the queue's drops are the receiver's losses,
    and a stray short datagram is counted as malformed, not a crash."""
    s = scenario(tmp_path, UDPGEN_LINE)
    stray = f"{PY} -c \"import socket,os; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'short', (os.environ['AIRLINK_CLIENT'], 5300))\""
    res = emulation.emulate(
        s, out=tmp_path / "run", server_delay=0, timeout=60,
        # --idle 15: the stray datagram comes seconds before the stream on a busy machine.
        client=f"{AIRLINK_BIN} udpgen recv --port 5300 --seconds 60 --idle 15 --ready {tmp_path / 'ready'} --json",
        server=f"{wait_for(tmp_path / 'ready')}; {stray}; exec {AIRLINK_BIN} udpgen send --to $AIRLINK_CLIENT:5300 --size 72 --rate '4 Mbit/s' --seconds 1.5 --json",
    )
    sent = json.loads(res.output("server"))
    got = json.loads(res.output("client"))
    links = res.summary["links"]
    # The schedule offers rate x duration: 4 Mbit/s of 100-byte IP packets for 1.5 s (a sender
    # stalled by a busy machine may send a few less, and have a batch refused by its socket).
    assert 0.9 * 7500 <= sent["packets"] + sent["send_errors"] <= 7500
    assert res.summary["datapath"]["packets_read_server"] == sent["packets"] + 1
    assert res.summary["datapath"]["malformed_server"] == 0  # it is valid IP
    # The stray datagram went through the pipe too (if it was not dropped there).
    assert got["packets"] + got["malformed"] == links[1]["packets_out"]
    assert links[1]["packets_out"] + links[1]["queue_drops"] == sent["packets"] + 1
    # Losses inside the stream are queue drops or refused sends (the tail may also be dropped,
    # so <=).
    assert got["lost"] <= links[1]["queue_drops"] + sent["send_errors"]
    assert got["first_seq"] == 0 and got["stopped_by"] == "idle"
    # The stray datagram arrives first, before the stream fills the queue.
    assert got["malformed"] == 1
    # The pipe was overloaded: it delivered its rate, not the offered one. Exact in its
    # schedule; as written, never faster, and slower only if a stalled sender let the queue run
    # dry (a busy machine), never near the offered 4 Mbit/s.
    dl = res.summary["datapath"]["downlink"]
    assert links[1]["queue_drops"] > 0.3 * sent["packets"]
    assert dl["scheduled_rate_bps"] <= 2e6 * (1 + 1e-4)
    assert 0.7 * 2e6 < steady_rate_bps(tmp_path / "run" / "client.pcap", ip_bytes=100) < 2e6 * 1.03


def _table2_scenario(tmp_path: Path, k: int) -> Path:
    base = Path(VALIDATION).read_text(encoding="utf-8")
    modulation = {1: "bpsk", 2: "4qam", 3: "8qam", 4: "16qam", 5: "32qam", 6: "64qam", 7: "128qam", 8: "256qam"}[k]
    text = base.replace('modulation = "4qam"', f'modulation = "{modulation}"')
    text += '\n[emulation]\nsysctl = { "net.ipv4.tcp_timestamps" = "0", "net.ipv4.tcp_congestion_control" = "cubic" }\n'
    return scenario(tmp_path, text, f"table2-k{k}.toml")


def expected_goodput(k: int) -> float:
    """Spec G's forward check: 162000 k (1460/1500) 12000 / (ceil(12000/108k) 108k)."""
    frames = -(-12000 // (108 * k))
    return 162000 * k * (1460 / 1500) * 12000 / (frames * 108 * k)


@pytest.mark.skipif(not tool("iperf3"), reason="iperf3 is not installed")
@pytest.mark.parametrize("k,kbytes", [(1, 250), (4, 900)])
def test_wipemu_table2_with_the_kernels_tcp(tmp_path: Path, k: int, kbytes: int) -> None:
    s = _table2_scenario(tmp_path, k)
    out = tmp_path / "run"
    res = emulation.emulate(s, out=out, server="iperf3 -s -1", client=f"iperf3 -c $AIRLINK_SERVER -R -n {kbytes}K -w 32K",
                            timeout=120)
    assert res.completed, res.output("client", "stderr")
    assert res.manifest["sysctls"]["server"]["net.ipv4.tcp_congestion_control"] == "cubic"
    goodput = emulation.tcp_goodput_steady(out / "client.pcap")
    # Never above the link's capacity; below it only when a busy machine stalls the sender
    # long enough to empty the queue (measured on a quiet machine: within 0.2 %).
    assert expected_goodput(k) * 0.97 < goodput < expected_goodput(k) * 1.002


MALFORMED = DELAY_20.replace('delay = "20 ms"', 'delay = "1 ms"')


def test_non_ip_packets_are_counted_and_dropped(tmp_path: Path) -> None:
    s = scenario(tmp_path, MALFORMED)
    res = emulation.emulate(s, out=tmp_path / "run",
                            client=f"{PY} -m airlink.emutools junk al0 --count 10 && ping -n -c 2 -i 0.05 $AIRLINK_SERVER")
    assert res.completed, res.output("client", "stderr")
    dp = res.summary["datapath"]
    assert dp["malformed_client"] == 11
    assert res.summary["links"][2]["packets_in"] == 2  # only the pings crossed the uplink
    import pandas as pd

    events = pd.read_parquet(tmp_path / "run" / "events.parquet")
    assert (events["kind"] == "malformed").sum() == 11


def test_an_unwritable_pcap_folder_is_refused_clearly(tmp_path: Path) -> None:
    text = Path(scenario(tmp_path, DELAY_20)).read_text()
    with pytest.raises(_core.EmulationError, match="cannot write the pcap file /nonexistent/x/client.pcap"):
        _core.Emulation(text, "s.toml", None, [], "/nonexistent/x")


def test_unknown_emulation_keys_are_refused(tmp_path: Path, airlink_cli) -> None:
    s = scenario(tmp_path, DELAY_20 + '\n[emulation]\nqdisc = "fq"\n')
    r = airlink_cli("emulate", str(s), "--client", "true", "--out", str(tmp_path / "x"))
    assert r.exit_code == 2
    assert "unknown field `qdisc`" in r.output and "s.toml:10" in r.output


def _leftovers(marker: str) -> list[str]:
    out = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]


def _netns_of(processes: list[str]) -> set[str]:
    """The network namespaces of `pgrep -af` lines' processes."""
    seen = set()
    for line in processes:
        try:
            seen.add(os.readlink(f"/proc/{line.split()[0]}/ns/net"))
        except OSError:
            pass  # it ended meanwhile
    return seen


def _netns_in_use() -> set[str]:
    """Every network namespace a process is in."""
    return _netns_of([pid for pid in os.listdir("/proc") if pid.isdigit()])


def _wait_for(path: Path, timeout: float = 30.0) -> None:
    t0 = time.monotonic()
    while not path.exists():
        assert time.monotonic() - t0 < timeout, f"{path} never appeared"
        time.sleep(0.05)


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "SIGINT"])
def test_teardown_leaves_nothing_behind(tmp_path: Path, how: str) -> None:
    s = scenario(tmp_path, DELAY_20)
    ready = tmp_path / "ready"
    marker = f"sleep 31{['SIGKILL', 'SIGTERM', 'SIGINT'].index(how)}7.5"
    # A command that forks a grandchild, as shells and test harnesses do.
    cmd = f"({marker} &) ; touch {ready}; {marker}"
    p = subprocess.Popen([*AIRLINK_COMMAND, "emulate", str(s), "--client", cmd, "--server", marker,
                          "--out", str(tmp_path / "run")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(ready)
        assert len(_leftovers(marker)) >= 3
        # The run's own namespaces (others' runs may come and go meanwhile: they are not counted).
        ours = _netns_of(_leftovers(marker)) - {os.readlink("/proc/self/ns/net")}
        assert len(ours) == 2
        p.send_signal(getattr(signal, how))
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.terminate()  # a failed check must not leave the run behind
            p.wait(timeout=30)
    t0 = time.monotonic()
    while (_leftovers(marker) or ours & _netns_in_use()) and time.monotonic() - t0 < 10:
        time.sleep(0.05)
    assert _leftovers(marker) == []
    assert not ours & _netns_in_use()
    if how == "SIGKILL":
        assert not (tmp_path / "run").exists()  # only a hidden partial folder, swept next time
    else:
        manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
        assert manifest["completed"] is False
        summary = json.loads((tmp_path / "run" / "summary.json").read_text())
        assert summary["interrupted"] in ("SIGINT", "signal 15")


def test_timing_table_runs_every_method(airlink_cli) -> None:
    r = airlink_cli("timing", "--requests", "5", "--max", "2", "--json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert [row["method"] for row in rows] == ["select-relative", "nanosleep-relative", "sleep-with-slack", "busy-wait",
                                                "absolute-sleep", "hybrid"]
    assert all(row["requests"] == 5 for row in rows)


@pytest.mark.skipif(not tool("ping"), reason="ping is not installed")
def test_trace_link_runs_in_emulation_and_bad_traces_are_refused(tmp_path: Path) -> None:
    trace = tmp_path / "ten.trace"
    trace.write_text("".join(f"{i}\n" for i in range(1, 11)), encoding="utf-8")  # 1500 B per ms: 12 Mbit/s
    text = f'[downlink.trace]\nfile = "{trace}"\ndelay = "5 ms"\n[uplink.pipe]\ndelay = "5 ms"\n[[flow]]\n'
    res = emulation.emulate(scenario(tmp_path, text), client="ping -n -c 5 -i 0.05 $AIRLINK_SERVER", out=tmp_path / "run")
    assert res.completed
    assert res.summary["links"][1]["model"] == "trace"
    rtts = [float(x.split("time=")[1].split()[0]) for x in res.output("client").splitlines() if "time=" in x]
    assert len(rtts) == 5 and min(rtts) >= 10.0
    bad = tmp_path / "cut.trace"
    bad.write_text("1\n2\n3x", encoding="utf-8")
    bad_text = text.replace(str(trace), str(bad))
    with pytest.raises(_core.ScenarioError, match=r"cut\.trace:3: column 2: not a digit; expected a non-negative integer"):
        _core.Emulation(bad_text, "s.toml")
    with pytest.raises(_core.ScenarioError, match="cannot read the trace"):
        _core.Emulation(text.replace(str(trace), str(tmp_path / "missing.trace")), "s.toml")


PIPE_10M = """
[downlink.pipe]
rate = "10 Mbit/s"
delay = "10 ms"
queue = "62500 B"
[uplink.pipe]
rate = "10 Mbit/s"
delay = "10 ms"
[[flow]]
"""


@pytest.mark.skipif(not tool("iperf3"), reason="iperf3 is not installed")
def test_iperf3_results_are_the_runs_intervals_summary_and_plot(tmp_path: Path, airlink_cli) -> None:
    """The new user's command, shortened: iperf3 without --json. airlink has it write JSON, keeps
    a text report in client.stdout, and every table, the summary and the plot have its results."""
    out = tmp_path / "run"
    res = emulation.emulate(scenario(tmp_path, PIPE_10M), out=out, timeout=120, server="iperf3 -s -1",
                            client="iperf3 -c $AIRLINK_SERVER -R -t 3 -i 1")
    assert res.completed, res.output("client", "stderr")
    assert "iperf Done." in res.output("client") and "receiver" in res.output("client")
    assert res.summary["warnings"] == []
    [flow] = res.summary["iperf3"]["flows"]
    assert (flow["protocol"], flow["sender"], flow["receiver"], flow["completed"]) == ("tcp", "server", "client", True)
    assert flow["measured_by"]["bytes_delivered"] == "client" and flow["measured_by"]["retransmissions"] == "server"
    # Generous: a busy machine may stall the sender; the pipe never delivers more than its rate.
    assert 0.5 * 10e6 < flow["goodput_bps"] < 1.05 * 10e6
    assert flow["retransmissions"] >= 0
    run = airlink.read_results(out)
    # The kernel's TCP, sampled from inside: airlink's flow columns first, the kernel's after.
    assert list(run.flows.columns)[:len(TABLE_COLUMNS["flows"])] == list(TABLE_COLUMNS["flows"]) and run.rtt.empty
    sent = run.flows[run.flows["side"] == "server"]
    data = sent[sent["connection"] == sent.groupby("connection")["bytes_acked"].max().idxmax()]
    assert len(data) >= 10 and set(data["flow"]) == {0} and (data["srtt_us"] >= 20_000).all()
    assert data["bytes_acked"].is_monotonic_increasing and data["cwnd_bytes"].gt(0).all()
    intervals = run.intervals
    assert len(intervals) >= 2 and set(intervals["flow"]) == {0}
    assert intervals["bytes"].sum() == flow["bytes_delivered"]
    assert intervals["cwnd_bytes"].notna().all() and (intervals["srtt_us"] >= 20_000).all()
    r = airlink_cli("plot", out)
    assert r.exit_code == 0, r.output
    assert "panel throughput" not in r.output and "panel state: no data" in r.output


@pytest.mark.skipif(not tool("iperf3"), reason="iperf3 is not installed")
def test_an_iperf3_stopped_by_the_timeout_keeps_what_it_measured(tmp_path: Path) -> None:
    """The timeout sends SIGTERM to iperf3 itself (not only to the process that entered the
    namespace), so it still writes its report: intervals until then, the flow not completed."""
    res = emulation.emulate(scenario(tmp_path, PIPE_10M), out=tmp_path / "run", timeout=3, server="iperf3 -s -1",
                            client="iperf3 -c $AIRLINK_SERVER -R -t 60 -i 1")
    assert not res.completed and res.summary["timed_out"]
    [flow] = res.summary["iperf3"]["flows"]
    assert flow["completed"] is False and "terminated" in flow["error"]
    assert any("interrupt" in w for w in res.summary["warnings"])
    assert "interrupt" in res.output("client", "stderr")
    assert len(airlink.read_results(tmp_path / "run").intervals) >= 1


@pytest.mark.parametrize(("flows", "kernel"), [
    ("[[flow]]\n", "reno"),                                        # airlink's default newreno
    ('[[flow]]\ncongestion = "cubic"\n', "cubic"),
    ('[[flow]]\nprotocol = "udp"\nrate = "1 Mbit/s"\n[[flow]]\ncongestion = "bbr"\n', "bbr"),  # the first TCP flow's
])
def test_the_flows_congestion_is_the_kernels(tmp_path: Path, flows: str, kernel: str) -> None:
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    if kernel not in available:
        pytest.skip(f"this kernel has no {kernel}")
    s = scenario(tmp_path, DELAY_20.split("[[flow]]")[0] + flows)
    r = emulation.emulate(s, client="cat /proc/sys/net/ipv4/tcp_congestion_control",
                          server="cat /proc/sys/net/ipv4/tcp_congestion_control", out=tmp_path / "emu")
    assert r.output("client").strip() == r.output("server").strip() == kernel
    assert all(dict(rows)["net.ipv4.tcp_congestion_control"] == kernel for rows in r.manifest["sysctls"].values())


def test_a_congestion_control_the_kernel_lacks_is_refused_naming_what_it_has(tmp_path: Path) -> None:
    s = scenario(tmp_path, DELAY_20.split("[[flow]]")[0] + '[[flow]]\n[[flow]]\ncongestion = "afc"\n')
    # The first TCP flow's (newreno) is the kernel's; flow 1's differs: a warning says how to get it.
    r = emulation.emulate(s, client="true", out=tmp_path / "ok")
    assert any(w.startswith('flow 1: congestion = "afc", but the namespaces\' default is flow 0\'s "reno"')
               for w in r.summary["warnings"]), r.summary["warnings"]
    s = scenario(tmp_path, DELAY_20.split("[[flow]]")[0] + '[[flow]]\ncongestion = "afc"\n')
    with pytest.raises(emulation.EmulationError, match=r'flow 0: congestion = "afc": the kernel has no counterpart; '
                                                         r"available here: .*reno.*airlink's own TCP"):
        emulation.emulate(s, client="true", out=tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    # airlink's own TCP runs it.
    own = emulation.emulate(s, out=tmp_path / "own", overrides=['stop=2 s', "flow.0.bytes=100 kB"])
    assert own.summary["flows"][0]["congestion"] == "afc"
