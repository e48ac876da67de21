"""Gateway mode between two real interfaces: two veth pairs whose far ends sit in namespaces
made here, holding ping and iperf3 that know nothing of airlink. Root only; skipped elsewhere
with the reason."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airlink import _core, emulate as emulation

CHECKS = {c["name"]: c for c in _core.doctor()}
MISSING = [name for name, c in CHECKS.items() if c["required"] and not c["ok"]]
MISSING += [tool for tool in ("iperf3", "ethtool") if shutil.which(tool) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"gateway test not possible here: {', '.join(MISSING)}")

SCENARIO = """
[downlink.pipe]
rate = "10 Mbit/s"
delay = "20 ms"
queue = 200
[uplink.pipe]
rate = "10 Mbit/s"
delay = "20 ms"
queue = 200
[[flow]]
"""
SERVER_IP, CLIENT_IP = "10.77.0.1", "10.77.0.2"


def sh(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True, timeout=30).stdout


def offloads(iface: str) -> dict[str, str]:
    """What `ethtool -k` says of the offloads the gateway changes."""
    names = ("generic-receive-offload", "generic-segmentation-offload", "tcp-segmentation-offload", "large-receive-offload")
    return {line.split(":")[0]: line.split(":")[1].split()[0] for line in sh("ethtool", "-k", iface).splitlines()
            if line.split(":")[0] in names}


@pytest.fixture
def hosts() -> Iterator[tuple[str, str, str, str]]:
    """(client-side interface, server-side interface, client namespace, server namespace). The
    far ends' own checksum and segmentation offloads are off: a veth carries them across."""
    tag = f"{os.getpid() % 10000}"
    ns = {"client": f"gwc{tag}", "server": f"gws{tag}"}
    ifaces = {"client": f"gwc{tag}-br", "server": f"gws{tag}-br"}
    try:
        for side, ip in (("client", CLIENT_IP), ("server", SERVER_IP)):
            sh("ip", "netns", "add", ns[side])
            sh("ip", "link", "add", ifaces[side], "type", "veth", "peer", "name", "host0", "netns", ns[side])
            run = ("ip", "netns", "exec", ns[side])
            sh(*run, "ip", "addr", "add", f"{ip}/24", "dev", "host0")
            sh(*run, "ip", "link", "set", "host0", "up")
            sh(*run, "ethtool", "-K", "host0", "tx", "off", "tso", "off", "gso", "off")
            sh("ip", "link", "set", ifaces[side], "up")
        yield ifaces["client"], ifaces["server"], ns["client"], ns["server"]
    finally:
        for side in ("client", "server"):
            subprocess.run(["ip", "link", "del", ifaces[side]], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns[side]], capture_output=True)


def start_gateway(tmp_path: Path, client_side: str, server_side: str, seconds: float) -> subprocess.Popen:
    (tmp_path / "gw.toml").write_text(SCENARIO)
    cmd = [sys.executable, "-m", "airlink", "gateway", str(tmp_path / "gw.toml"), "--client-side", client_side,
           "--server-side", server_side, "--duration", str(seconds), "--out", str(tmp_path / "out"), "--json"]
    gw = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    state = Path("/run/airlink") / f"gateway-{server_side}.offloads"
    for _ in range(200):  # the gateway is up when its state file is written
        if state.exists() or gw.poll() is not None:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    return gw


def test_ping_and_iperf3_through_the_gateway_see_the_scenarios_link(hosts, tmp_path: Path) -> None:
    client_side, server_side, client_ns, server_ns = hosts
    before = {i: offloads(i) for i in (client_side, server_side)}
    gw = start_gateway(tmp_path, client_side, server_side, 14)
    assert gw.poll() is None, gw.stderr.read() if gw.stderr else ""
    during = offloads(server_side)
    assert during["generic-segmentation-offload"] == "off"
    ping = sh("ip", "netns", "exec", client_ns, "ping", "-c", "20", "-i", "0.1", SERVER_IP)
    rtts = sorted(float(x) for x in re.findall(r"time=([\d.]+) ms", ping))
    assert len(rtts) == 20
    # 20 ms each way, plus 84 B serialised at 10 Mbit/s on two links each way (0.13 ms).
    assert 40.0 < rtts[len(rtts) // 2] < 41.0, rtts
    server = subprocess.Popen(["ip", "netns", "exec", server_ns, "iperf3", "-s", "-1", "--json"], stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    client = json.loads(sh("ip", "netns", "exec", client_ns, "iperf3", "-c", SERVER_IP, "-R", "-t", "6", "--json"))
    server.wait(timeout=20)
    received = client["end"]["sum_received"]["bits_per_second"]
    # The downlink's 10 Mbit/s less TCP/IP headers (1448/1500), slow start included.
    assert 0.85 * 10e6 * 1448 / 1500 < received < 10e6, received
    out, err = gw.communicate(timeout=30)
    assert gw.returncode == 0, err
    summary = json.loads(out)
    assert summary["completed"] and summary["stopped_by"] == "duration"
    down = next(link for link in summary["links"] if link["name"] == "downlink")
    assert down["bytes_out"] >= client["end"]["sum_received"]["bytes"]
    assert summary["datapath"]["passed_through"] > 0  # ARP crossed outside the links
    # The captures hold the IP packets on each side; the interfaces are as they were.
    assert len(emulation.read_pcap(tmp_path / "out" / "client.pcap")) > 1000
    assert {i: offloads(i) for i in (client_side, server_side)} == before
    assert not list(Path("/run/airlink").glob(f"gateway-{server_side}*"))


def test_a_killed_gateway_leaves_its_offloads_to_be_restored(hosts, tmp_path: Path) -> None:
    client_side, server_side, *_ = hosts
    before = offloads(server_side)
    gw = start_gateway(tmp_path, client_side, server_side, 60)
    gw.send_signal(signal.SIGKILL)
    gw.wait(timeout=10)
    assert offloads(server_side)["generic-segmentation-offload"] == "off"
    restored = subprocess.run([sys.executable, "-m", "airlink", "gateway", "--restore", server_side, "--restore", client_side],
                              capture_output=True, text=True)
    assert restored.returncode == 0 and f"{server_side}: turned" in restored.stdout, restored
    assert offloads(server_side) == before
    assert not list(Path("/run/airlink").glob(f"gateway-{client_side}*"))
    # The output folder of the killed run is not left half-written under its name.
    assert not (tmp_path / "out").exists()


def start_time(pid: int) -> int:
    """A process's start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


@pytest.mark.parametrize("names", ["its pid, another start time", "its pid alone, written before it started",
                                   "itself"])
def test_a_state_file_whose_pid_now_names_another_process_is_restored(names: str) -> None:
    """A killed gateway's PID reused by a process that is no gateway (a `sleep` here) does not
    keep the interface blocked; a state file naming a live process as it is does."""
    iface = f"gwr{os.getpid() % 10000}"
    state = Path("/run/airlink") / f"gateway-{iface}.offloads"
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        sh("ip", "link", "add", iface, "type", "veth", "peer", "name", f"{iface}-p")
        sh("ip", "link", "set", iface, "up")
        before = offloads(iface)
        assert before["generic-segmentation-offload"] == "on"
        sh("ethtool", "-K", iface, "gso", "off", "tso", "off")  # as a gateway leaves them
        state.parent.mkdir(parents=True, exist_ok=True)
        started = start_time(sleeper.pid)
        if names == "its pid, another start time":
            state.write_text(f"{sleeper.pid} {started + 1}\ngso tso\n")
        elif names == "its pid alone, written before it started":
            state.write_text(f"{sleeper.pid}\ngso tso\n")
            a_minute_ago = time.time() - 60
            os.utime(state, (a_minute_ago, a_minute_ago))
        else:
            state.write_text(f"{sleeper.pid} {started}\ngso tso\n")
        r = subprocess.run([sys.executable, "-m", "airlink", "gateway", "--restore", iface], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        if names == "itself":
            assert f"{iface}: nothing to put back" in r.stdout, r.stdout
            assert state.exists() and offloads(iface)["generic-segmentation-offload"] == "off"
        else:
            assert f"{iface}: turned gso, tso back on" in r.stdout, r.stdout
            assert offloads(iface) == before and not state.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
        state.unlink(missing_ok=True)
        subprocess.run(["ip", "link", "del", iface], capture_output=True)


@pytest.mark.parametrize("sides, message", [
    (("same", "same"), "both same: expected two different interfaces"),
    (("nosuch0", "lo"), 'no network interface named "nosuch0"'),
])
def test_bad_interfaces_are_refused_and_nothing_changes(sides: tuple[str, str], message: str, tmp_path: Path) -> None:
    with pytest.raises(_core.EmulationError, match=re.escape(message)):
        emulation.gateway(_scenario(tmp_path), client_side=sides[0],
                          server_side=sides[1], out=tmp_path / "out", duration=1)
    assert not (tmp_path / "out").exists()


def test_an_interface_that_is_down_is_refused(hosts, tmp_path: Path) -> None:
    client_side, server_side, *_ = hosts
    before = offloads(client_side)
    sh("ip", "link", "set", server_side, "down")
    with pytest.raises(_core.EmulationError, match=f"interface {server_side} is down"):
        emulation.gateway(_scenario(tmp_path), client_side=client_side, server_side=server_side, out=tmp_path / "out", duration=1)
    assert offloads(client_side) == before


def _scenario(tmp_path: Path) -> Path:
    path = tmp_path / "gw.toml"
    path.write_text(SCENARIO)
    return path


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv is not installed")
def test_without_root_the_gateway_is_refused_and_writes_nothing() -> None:
    import tempfile

    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c"]
    if subprocess.run([*as_nobody, "import airlink"], capture_output=True, timeout=60).returncode != 0:
        pytest.skip("this checkout is not readable by an unprivileged user")
    folder = Path(tempfile.mkdtemp(prefix="airlink-gw-"))
    try:
        folder.chmod(0o777)
        _scenario(folder).chmod(0o644)
        code = (f"from airlink import emulate\n"
                f"emulate.gateway({str(folder / 'gw.toml')!r}, client_side='lo', server_side='lo2', out={str(folder / 'out')!r})\n")
        r = subprocess.run([*as_nobody, code], capture_output=True, text=True, timeout=60)
        assert r.returncode != 0 and "gateway mode needs root" in r.stderr, r.stderr
        assert sorted(p.name for p in folder.iterdir()) == ["gw.toml"]
    finally:
        shutil.rmtree(folder)
