"""airlink's own transports in real time: the scenario's flows (TCP Veno and AFC, DCCP CCID-2
and CCID-3, UDP media) run over UDP through the emulated links, and behave as they do in
simulation with the same seed. Root only; skipped elsewhere with the reason.

No timed assertions: counts, sizes and ratios with tolerances that hold on a busy 2-core machine.
"""

from __future__ import annotations

import json
import shutil
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import airlink
from airlink import _core, emulate as emulation

from conftest import ADAPTIVE

CHECKS = _core.doctor()
MISSING = [c["name"] for c in CHECKS if c["required"] and not c["ok"]]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"emulation not possible here: {', '.join(MISSING)}")

# Random loss with no queueing: Veno reads its losses as random, AFC keeps SACK_OK.
LOSSY_LINK = """
seed = 4
sample_interval = "100 ms"
[wired]
delay = "10 ms"
[downlink.pipe]
rate = "5 Mbit/s"
delay = "5 ms"
queue = 60
loss = 0.01
[uplink.pipe]
delay = "5 ms"
"""
LOSSY_TCP = 'stop = "60 s"' + LOSSY_LINK + """
[[flow]]
protocol = "tcp"
congestion = "veno"
bytes = "1500 kB"
[flow.tcp]
rwnd = "64 KiB"
[[flow]]
protocol = "tcp"
congestion = "afc"
bytes = "1500 kB"
[flow.tcp]
rwnd = "64 KiB"
"""

DATAGRAMS = """
name = "datagrams"
seed = 2
stop = "12 s"
[wired]
delay = "20 ms"
[downlink.pipe]
rate = "6 Mbit/s"
delay = "5 ms"
queue = "40000 B"
loss = 0.005
[uplink.pipe]
delay = "5 ms"
[[flow]]
protocol = "dccp"
ccid = 3
[[flow]]
protocol = "dccp"
ccid = 2
[[flow]]
protocol = "udp"
rate = "1 Mbit/s"
packet_size = "1000 B"
"""


def scenario(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text, encoding="utf-8")
    return p


def ip_packets(pcap: Path, src: str) -> list[bytes]:
    addr = bytes(int(x) for x in src.split("."))
    return [p for _, _, p in emulation.read_pcap(pcap) if p[12:16] == addr]


def test_own_tcp_variants_behave_as_in_simulation(tmp_path: Path) -> None:
    s = scenario(tmp_path, LOSSY_TCP)
    sims = [airlink.run(s, seed=seed).summary for seed in range(1, 9)]
    emu = emulation.emulate(s, seed=4, out=tmp_path / "emu", snaplen=64)
    assert emu.completed, emu.summary.get("stack")
    assert emu.manifest["endpoints"] == "airlink"
    stack = emu.summary["stack"]
    assert stack["malformed"] == 0 and stack["send_errors"] == 0 and stack["oversized_packets"] == 0
    # Same models and seed: on a quiet machine the run repeats the simulation's almost exactly
    # (same losses, same retransmissions); the real clock may reorder the two flows' packets
    # under load, so each flow must only fall within the simulated spread across seeds.
    for i, e in enumerate(emu.summary["flows"]):
        m = sims[3]["flows"][i]
        assert (e["protocol"], e["congestion"]) == (m["protocol"], m["congestion"])
        assert e["completed"] and e["bytes_delivered"] == 1_500_000 and e["retransmissions"] > 0
        simulated = [x["flows"][i]["goodput_bps"] for x in sims]
        mean, sd = statistics.mean(simulated), statistics.stdev(simulated)
        assert abs(e["goodput_bps"] - mean) < 3 * sd, (e["congestion"], e["goodput_bps"], simulated)
    # Under random loss alone AFC keeps more of its window than Veno (at every simulated seed).
    veno, afc = emu.summary["flows"]
    assert afc["goodput_bps"] > veno["goodput_bps"]
    # Packets have their simulated sizes: full-sized data segments are 1500 B, pure ACKs 52 B
    # (40 B of headers and the linux preset's 12 bytes of timestamps).
    down = [struct.unpack("!H", p[2:4])[0] for p in ip_packets(emu.path / "server.pcap", "10.77.0.1")]
    up = [struct.unpack("!H", p[2:4])[0] for p in ip_packets(emu.path / "client.pcap", "10.77.0.2")]
    assert max(down) == 1500 and down.count(1500) > 0.9 * len(down) - 10
    assert up.count(52) > 0.5 * len(up)
    # The time series are the simulator's: Veno's backlog and AFC's SACK_OK are recorded.
    flows = pd.read_parquet(emu.path / "flows.parquet")
    assert flows[flows.flow == 0].backlog_segments.notna().any()
    assert set(flows[flows.flow == 1].sack_ok.unique()) <= {0, 1} and (flows[flows.flow == 1].sack_ok >= 0).any()
    assert (pd.read_parquet(emu.path / "rtt.parquet").rtt_us > 30_000).all()  # the path's 30 ms


def test_own_dccp_and_udp_flows_share_the_link_as_in_simulation(tmp_path: Path) -> None:
    """Competing DCCP flows split the link differently run to run (in simulation the CCID-3
    share varies by ~11 % across seeds); the real clock is one more such perturbation. So each
    emulated flow must fall within the simulated spread, and the total within 10 % below and 5 % above."""
    s = scenario(tmp_path, DATAGRAMS)
    sims = [airlink.run(s, seed=seed).summary for seed in range(1, 9)]
    emu = emulation.emulate(s, seed=2, out=tmp_path / "emu", snaplen=64)
    assert emu.completed, emu.summary.get("stack")
    throughput = lambda summary: [f["iperf"]["throughput_bps"] for f in summary["flows"]]  # noqa: E731
    spread = list(zip(*(throughput(x) for x in sims), strict=True))
    for flow, got, simulated in zip(emu.summary["flows"], throughput(emu.summary), spread, strict=True):
        assert flow["retransmissions"] == 0  # DCCP and UDP never retransmit
        mean, sd = statistics.mean(simulated), statistics.stdev(simulated)
        assert abs(got - mean) < 3 * sd + 0.02 * mean, (flow["congestion"], got, simulated)
    # Margins for a busy machine, where the real clock stalls now and then.
    assert 0.9 < sum(throughput(emu.summary)) / sum(throughput(sims[1])) < 1.05
    ccid3, ccid2, udp = emu.summary["flows"]
    assert 0.9e6 < udp["iperf"]["throughput_bps"] < 1.05e6
    assert ccid3["iperf"]["lost"] > 0 and ccid2["iperf"]["lost"] > 0
    # DCCP never fragments: every downward packet is a whole datagram within the MTU.
    for p in ip_packets(emu.path / "server.pcap", "10.77.0.1"):
        flags_offset = struct.unpack("!H", p[6:8])[0]
        assert flags_offset & 0x3FFF == 0 and struct.unpack("!H", p[2:4])[0] <= 1500
    assert len(pd.read_parquet(emu.path / "intervals.parquet")) > 0
    # The series run to the end: the rows taken after the flows stopped are kept too.
    samples = pd.read_parquet(emu.path / "flows.parquet")
    assert samples.time_ns.max() == 11_900_000_000 and len(samples) == 3 * 120


def test_own_veno_on_the_wipemu_downlink_matches_simulation(tmp_path: Path) -> None:
    """The 4G adaptive downlink with its fading, ARQ and 20 kbit/s uplink: the same seed gives the
    same channel in both modes, and airlink's Veno the same goodput."""
    settings = ["flow.0.congestion=veno", "flow.0.bytes=600 kB"]
    sim = airlink.run(ADAPTIVE, seed=3, overrides=settings).summary
    emu = emulation.emulate(ADAPTIVE, seed=3, overrides=settings, out=tmp_path / "emu", snaplen=64)
    assert emu.completed
    e, m = emu.summary["flows"][0], sim["flows"][0]
    assert 0.85 < e["goodput_bps"] / m["goodput_bps"] < 1.15, (e, m)
    down_e, down_m = emu.summary["links"][1], sim["links"][1]
    assert abs(down_e["frame_errors"] / down_e["frames_sent"] - down_m["frame_errors"] / down_m["frames_sent"]) < 0.03


def test_dccp_larger_than_the_mtu_is_refused_and_leaves_no_results(tmp_path: Path) -> None:
    s = scenario(tmp_path, DATAGRAMS.replace('ccid = 2\n', 'ccid = 2\npacket_size = "1470 B"\n'))
    too_large = r"s\.toml:20:15: flow\.1\.packet_size: a DCCP packet of 1470 B payload is 1526 B with its headers"
    with pytest.raises(_core.ScenarioError, match=too_large):
        emulation.emulate(s, out=tmp_path / "emu")
    assert not (tmp_path / "emu").exists()


def test_ecn_for_airlinks_own_tcp_is_refused_in_emulation(tmp_path: Path) -> None:
    """The emulator's encoding of airlink's TCP carries no ECN yet: refused, not run without it."""
    s = scenario(tmp_path, LOSSY_TCP.replace('congestion = "afc"\n', 'congestion = "afc"\necn = true\n'))
    with pytest.raises(_core.ScenarioError, match=r"s\.toml:23:7: flow\.1\.ecn: airlink's own TCP cannot use ECN"):
        emulation.emulate(s, out=tmp_path / "emu")
    assert not (tmp_path / "emu").exists()


def test_emulate_without_commands_runs_the_flows_from_the_cli(tmp_path: Path, airlink_cli) -> None:
    s = scenario(tmp_path, LOSSY_TCP.replace('"1500 kB"', '"200 kB"'))
    r = airlink_cli("emulate", s, "--out", tmp_path / "emu")
    assert r.exit_code == 0, r.output
    assert "flow 0 tcp/veno: completed, 200,000 of 200,000 B" in r.output and "flow 1 tcp/afc" in r.output
    r = airlink_cli("emulate", s, "--server", "iperf3 -s -1", "--out", tmp_path / "emu2")
    assert r.exit_code == 2 and "--server needs --client" in r.output


def test_garbage_datagrams_to_a_flow_are_counted_and_the_flow_completes(tmp_path: Path) -> None:
    """Datagrams that come from the flow's peer address and port but do not decode (a raw socket
    in the client namespace forges them) are counted as malformed; the flow is unharmed."""
    s = scenario(tmp_path, LOSSY_TCP.replace('"1500 kB"', '"300 kB"').replace("loss = 0.01", "loss = 0"))
    forge = (
        "import socket,struct,time\n"
        "r=socket.socket(socket.AF_INET,socket.SOCK_RAW,socket.IPPROTO_UDP)\n"
        "for n in (1,5,11,3):\n"
        "    body=bytes([0xff])*n\n"
        "    r.sendto(struct.pack('!HHHH',46000,47000,8+n,0)+body,('10.77.0.1',0))\n"
        "    time.sleep(0.05)\n"
    )
    (tmp_path / "forge.py").write_text(forge, encoding="utf-8")
    emu = _core.Emulation(s.read_text(), str(s))
    try:
        emu.start_flows()
        h = emu.spawn("client", f"{sys.executable} {tmp_path / 'forge.py'}")
        while emu.poll(h) is None or not emu.flows_finished:
            time.sleep(0.05)
        assert emu.poll(h) == 0
    finally:
        summary = emu.summary()
    assert summary["stack"]["malformed"] >= 3  # 1, 5 and 3 bytes cannot hold a TCP header
    assert all(f["completed"] for f in summary["flows"])


def test_sigterm_mid_run_keeps_what_the_flows_did_and_says_incomplete(tmp_path: Path) -> None:
    import signal

    from conftest import AIRLINK_COMMAND

    s = scenario(tmp_path, LOSSY_TCP.replace('bytes = "1500 kB"\n', ""))  # no size: until the stop time
    p = subprocess.Popen([*AIRLINK_COMMAND, "emulate", str(s), "--out", str(tmp_path / "run")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t0 = time.monotonic()
    while not list(tmp_path.glob(".run.partial-*/flows.parquet")):
        assert time.monotonic() - t0 < 60 and p.poll() is None, "the flows never started"
        time.sleep(0.05)
    time.sleep(2.0)  # the series are written from the first instant; let the flows deliver
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert manifest["completed"] is False and summary["interrupted"] == "signal 15"
    assert summary["stack"]["completed"] is False
    assert all(f["bytes_delivered"] > 0 for f in summary["flows"])


TCP_AND_DCCP = 'stop = "8 s"' + LOSSY_LINK + """
[[flow]]
protocol = "tcp"
congestion = "afc"
bytes = "300 kB"
[[flow]]
protocol = "dccp"
ccid = 2
"""


@pytest.mark.skipif(not (shutil.which("tshark") and shutil.which("tcptrace")), reason="tshark or tcptrace missing")
def test_captures_show_airlinks_own_tcp_and_dccp_as_the_real_protocols(tmp_path: Path) -> None:
    emu = emulation.emulate(scenario(tmp_path, TCP_AND_DCCP), out=tmp_path / "emu", snaplen=2000)
    native = emu.summary["pcap"]["native_packets"]
    assert native["client"] > 1000 and native["server"] > 1000
    pcap = str(emu.path / "server.pcap")

    def tshark(*args: str) -> list[str]:
        r = subprocess.run(["tshark", "-r", pcap, *args], capture_output=True, text=True, check=True)
        return r.stdout.split()

    assert tshark("-Y", "_ws.malformed || _ws.expert.severity >= error") == []
    assert {"0", "1", "2", "3", "4"} <= set(tshark("-Y", "dccp", "-T", "fields", "-e", "dccp.type"))  # Request..DataAck
    # Whole packets were captured, so every checksum is there and right (status 1 = good).
    assert set(tshark("-Y", "dccp", "-T", "fields", "-e", "dccp.checksum.status")) == {"1"}
    assert set(tshark("-Y", "tcp", "-o", "tcp.check_checksum:TRUE", "-T", "fields", "-e", "tcp.checksum.status")) == {"1"}
    assert "SYN" in " ".join(tshark("-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 0"))
    # tcptrace follows the connection: the sender (the server, b) sent exactly the 300 kB once.
    report = subprocess.run(["tcptrace", "-l", "-n", pcap], capture_output=True, text=True, check=True).stdout
    unique = [line for line in report.splitlines() if "unique bytes sent" in line]
    assert unique and unique[0].split()[-1] == "300000", report


def test_access_links_are_each_flows_own_in_emulation_too(tmp_path: Path) -> None:
    s = scenario(tmp_path, LOSSY_TCP.replace('stop = "60 s"', 'stop = "8 s"') + '[access]\ndelay = "30 ms"\n')
    emulation.emulate(s, out=tmp_path / "emu")
    summary = json.loads((tmp_path / "emu" / "summary.json").read_text())
    links = {link["name"]: link for link in summary["links"]}
    for i, flow in enumerate(summary["flows"]):
        # Flow i's segments, and only they, entered its own access link (a few datagrams the
        # stack sends before its flow counts segments aside).
        assert 0 <= links[f"access.{i}.down"]["packets_in"] - flow["segments_sent"] <= 10, (i, links, flow)
        assert links[f"access.{i}.up"]["packets_out"] > 0


def test_an_upload_takes_the_uplink_in_emulation_as_in_simulation(tmp_path: Path) -> None:
    # A shorthand flow with direction = "up": its data crosses the 2 Mbit/s uplink's model and
    # its ACKs the downlink's, in real time as in simulation.
    s = scenario(tmp_path, Path("tests/scenarios/asymmetric.toml").read_text(encoding="utf-8") + 'direction = "up"\n')
    sim = airlink.run(s).summary
    emu = emulation.emulate(s, out=tmp_path / "emu", snaplen=64)
    assert emu.completed, emu.summary.get("stack")
    for summary in (sim, emu.summary):
        flow = summary["flows"][0]
        links = {link["name"]: link for link in summary["links"]}
        assert flow["completed"] and flow["bytes_delivered"] == 500_000
        assert links["uplink"]["packets_in"] >= flow["data_segments_sent"]
        assert 0 < links["downlink"]["bytes_out"] <= 80 * links["downlink"]["packets_out"]
        assert 1e6 < flow["goodput_bps"] < 2e6
