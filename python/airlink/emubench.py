"""``airlink bench --emu``: figures of the real-time emulator on this machine (reported, never
asserted): line rate of 100-byte packets (Seawind Fig. 1), ping delay against the request,
WIPEMU Table II with the kernel's TCP, throughput and packet rate of an unshaped emulated path
next to a plain veth pair, CPU per GB forwarded, idle wake-ups, the timing table, and
airlink's own transports in real time (their speed, and the same seed's simulation beside them),
and the same figures through ``airlink gateway`` between two veth pairs.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from airlink import emulate as emulation
from airlink._types import TimingStats

PARTS = ("linerate", "delay", "table2", "throughput", "cpu", "idle", "timing", "own", "gateway")
# Unshaped: links at the fastest rate a scenario takes (a 1500-byte packet is 1.2 us on the
# wire), which the emulator's own costs dwarf; a pipe without any rate needs a delay.
UNSHAPED_LINKS = '[downlink.pipe]\nrate = "10 Gbit/s"\nqueue = 100000\n[uplink.pipe]\nrate = "10 Gbit/s"\nqueue = 100000\n'
LINE_RATES = (9_600, 64_000, 1_000_000, 10_000_000, 100_000_000)
Report = Callable[[str], None]


def _scenario(folder: Path, name: str, text: str) -> Path:
    p = folder / f"{name}.toml"
    p.write_text(text, encoding="utf-8")
    return p


def _iperf_json(result: emulation.EmulationResult) -> dict[str, Any]:
    return json.loads(result.output("client"))


def _airlink_command() -> str:
    """The venv's ``airlink`` script (next to this interpreter), for commands in the namespaces."""
    exe = Path(sys.executable).with_name("airlink")
    if not exe.exists():
        raise FileNotFoundError(f"{exe}: the airlink script is not installed next to {sys.executable}")
    return str(exe)


def _line_queue(rate: int) -> int:
    """Queue of the line-rate pipe: 200 ms of the link, at least 20 packets. The queue must bridge
    the pauses of the sender and of the datapath's reads (VM stalls and, on a loaded machine, time
    slices of tens of ms, see notes/timing.md): an empty queue idles the link through no fault of
    the emulator's timing, which is what this benchmark measures."""
    return max(20, round(rate * 0.200 / 800))


def line_rate(folder: Path, rates: Sequence[int] = LINE_RATES, seconds: float = 4.0, *, size: int = 100,
              unit: int | None = None) -> list[dict[str, Any]]:
    """IP packets of ``size`` bytes (UDP, default 100 B: 72 B payload) offered by udpgen at 1.2x a
    pipe downlink's rate; ``unit`` sets the pipe's unit of delivery (bytes; default whole packets).

    Achieved rate: from the client pcap (the datapath's write times, records of ``size`` B between
    the first and last) and from the receiver (the kernel's arrival stamps); both are reported.
    """
    airlink = _airlink_command()
    bits = size * 8
    rows = []
    for rate in rates:
        queue = _line_queue(rate)
        unit_line = f'unit = "{unit} B"\n' if unit else ""
        s = _scenario(folder, f"line-{rate}-{size}-{unit}",
                      f'[downlink.pipe]\nrate = "{rate} bit/s"\nqueue = {queue}\n{unit_line}[uplink.pipe]\n[[flow]]\n')
        dur = max(seconds, 30 * bits / rate)
        # The receiver stops when nothing came for 20 packet times (at least 1 s) after the stream.
        idle = max(1.0, 20 * bits / rate)
        drain = queue * bits / rate
        out = folder / f"line-{rate}-{size}-{unit}"
        res = emulation.emulate(
            s, out=out, snaplen=32, timeout=dur + drain + idle + 30, server_delay=0.5,
            server=f"sleep 1; exec {airlink} udpgen send --to $AIRLINK_CLIENT:5300 --size {size - 28} --rate '{int(rate * 1.2)} bit/s' "
                   f"--seconds {dur:.1f} --json",
            client=f"{airlink} udpgen recv --port 5300 --seconds {dur + drain + idle + 20:.1f} --idle {idle:.2f} --json",
        )
        dp = res.summary["datapath"]
        dl = dp["downlink"]
        got = json.loads(res.output("client"))
        sent = json.loads(res.output("server"))
        # From the packet at 10 % of the stream to the last: before that the queue is still
        # filling (at 0.2x the rate), and a hiccup of the sender could leave the link idle
        # without the emulator being at fault. The tail is the queue draining at the line rate.
        recs = [t for t, n, _ in emulation.read_pcap(out / "client.pcap") if n == size]
        recs = recs[len(recs) // 10:]
        pcap_rate = (len(recs) - 1) * bits / ((recs[-1] - recs[0]) * 1e-9) if len(recs) > 1 else float("nan")
        rows.append({
            "requested_bps": rate,
            "queue_packets": queue,
            "offered_bps": sent["offered_rate_bps"],
            "packets_sent": sent["packets"],
            "packets_read": dp["packets_read_server"],
            "packets": dl["packets"],
            "queue_drops": res.summary["links"][1]["queue_drops"],
            "scheduled_bps": dl["scheduled_rate_bps"],
            "delivered_bps": pcap_rate,
            "delivered_ratio": pcap_rate / rate,
            # The receiver's kernel stamps, first to last packet (the whole stream).
            "receiver_ratio": (got.get("rate_bps") or float("nan")) / rate,
            "receiver_packets": got["packets"],
            "pcap_records_lost": dp["records_lost"],
            "delivered_vs_schedule": dl["actual_rate_bps"] / dl["scheduled_rate_bps"],
            "lateness_p50_us": dp["lateness"]["p50_us"],
            "lateness_p99_us": dp["lateness"]["p99_us"],
            "wakeups": dp["wakeups"],
        })
    return rows


def _ping_links(delay_ms: float) -> str:
    """Links delaying ``delay_ms`` each way; the 0 ms baseline is unshaped instead (a path with
    neither a rate nor a delay is refused: in simulation its packets would take no time)."""
    if not delay_ms:
        return UNSHAPED_LINKS
    return f'[downlink.pipe]\ndelay = "{delay_ms} ms"\n[uplink.pipe]\ndelay = "{delay_ms} ms"\n'


def _ping(folder: Path, name: str, delay_ms: float, count: int) -> list[float]:
    text = _ping_links(delay_ms) + "[[flow]]\n"
    res = emulation.emulate(_scenario(folder, name, text), out=folder / name,
                            client=f"ping -n -c {count} -i 0.02 $AIRLINK_SERVER")
    return [float(x.split("time=")[1].split()[0]) for x in res.output("client").splitlines() if "time=" in x]


def delay(folder: Path, count: int = 500) -> dict[str, Any]:
    """ping through 20 ms one-way each way, against the same path with no delay (baseline)."""
    base = _ping(folder, "ping-0", 0, count)
    rtt = _ping(folder, "ping-20", 20, count)

    def p99(x: list[float]) -> float:
        return sorted(x)[int(0.99 * (len(x) - 1))]

    b = statistics.mean(base)
    return {
        "requested_rtt_ms": 40.0, "baseline_mean_ms": b, "baseline_p99_ms": p99(base),
        "mean_ms": statistics.mean(rtt), "p99_ms": p99(rtt), "min_ms": min(rtt), "max_ms": max(rtt),
        "mean_excess_ms": statistics.mean(rtt) - 40.0 - b, "p99_excess_ms": p99(rtt) - 40.0 - p99(base),
        "samples": len(rtt),
    }


def table2(folder: Path, ks: Sequence[int] = range(1, 9), seconds: float = 20.0) -> list[dict[str, Any]]:
    """WIPEMU Table II with the kernel's CUBIC, fixed modulation, no channel errors (spec G)."""
    base = (Path(__file__).resolve().parents[2] / "scenarios" / "wipemu" / "validation.toml")
    text0 = base.read_text(encoding="utf-8") if base.exists() else None
    names = {1: "bpsk", 2: "4qam", 3: "8qam", 4: "16qam", 5: "32qam", 6: "64qam", 7: "128qam", 8: "256qam"}
    rows = []
    for k in ks:
        if text0 is None:
            break
        text = text0.replace('modulation = "4qam"', f'modulation = "{names[k]}"')
        text += ('\n[emulation]\nsysctl = { "net.ipv4.tcp_timestamps" = "0", '
                 '"net.ipv4.tcp_congestion_control" = "cubic" }\n')
        expected = 162000 * k * (1460 / 1500) * 12000 / (-(-12000 // (108 * k)) * 108 * k)
        nbytes = int(expected / 8 * seconds)
        # The receive window covers the path (~0.21 s RTT) plus part of the 50-packet gateway
        # queue, never all of it: the link stays busy and the queue never overflows (no losses,
        # as in the study).
        window = int(expected / 8 * 0.21) + 30_000
        res = emulation.emulate(_scenario(folder, f"t2-{k}", text), out=folder / f"t2-{k}", server="iperf3 -s -1",
                                client=f"iperf3 -c $AIRLINK_SERVER -R -n {nbytes} -w {window}", timeout=seconds * 4 + 30)
        measured = emulation.tcp_goodput_steady(folder / f"t2-{k}" / "client.pcap")
        h = 40 / 1460
        f = (108 * k - 12000 % (108 * k)) / 12000
        compensated = (measured * (1 + h)) * (1 + f)
        rows.append({"k": k, "theoretical_bps": 162000 * k, "measured_bps": measured,
                     "compensated_bps": compensated, "ratio": compensated / (162000 * k),
                     "queue_drops": res.summary["links"][1]["queue_drops"], "completed": res.completed})
    return rows


def _die_with_parent() -> None:
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL


class VethPair:
    """Two namespaces joined by a plain veth pair: the reference the emulated path is compared to."""

    def __init__(self) -> None:
        self.holders = []
        self.pids = []
        for _ in range(2):
            h = subprocess.Popen(["unshare", "--net", "--pid", "--fork", "--kill-child", "sleep", "infinity"],
                                 preexec_fn=_die_with_parent)
            self.holders.append(h)
        for h in self.holders:
            for _ in range(1000):
                kids = Path(f"/proc/{h.pid}/task/{h.pid}/children").read_text().split()
                if kids and Path(f"/proc/{kids[0]}/exe").resolve().name.startswith("sleep"):
                    self.pids.append(int(kids[0]))
                    break
                time.sleep(0.005)
        a, b = self.pids
        subprocess.run(["ip", "link", "add", "v0", "netns", str(a), "type", "veth", "peer", "v1", "netns", str(b)], check=True)
        for pid, dev, me, _peer in ((a, "v0", "10.78.0.1", "10.78.0.2"), (b, "v1", "10.78.0.2", "10.78.0.1")):
            for cmd in (["ip", "link", "set", "lo", "up"], ["ip", "addr", "add", f"{me}/24", "dev", dev],
                        ["ip", "link", "set", dev, "up"]):
                self.run(pid, cmd)
            self.run(pid, ["sh", "-c", "echo cubic > /proc/sys/net/ipv4/tcp_congestion_control"])

    def run(self, pid: int, argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["nsenter", f"--target={pid}", "--net", "--pid", "--", *argv], check=True,
                              capture_output=True, text=True, **kw)

    def popen(self, pid: int, argv: list[str]) -> subprocess.Popen[str]:
        return subprocess.Popen(["nsenter", f"--target={pid}", "--net", "--pid", "--", *argv],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)

    def close(self) -> None:
        for h in self.holders:
            h.kill()
            h.wait()


def _iperf_pair(run_server: Callable[[], Any], run_client: Callable[[], str]) -> dict[str, Any]:
    server = run_server()
    time.sleep(0.5)
    try:
        return json.loads(run_client())
    finally:
        server.kill()
        server.wait()


def _udpgen_veth(veth: VethPair, size: int, seconds: float) -> dict[str, Any]:
    """udpgen through the plain veth pair: receiver in the first namespace, sender in the second."""
    airlink = _airlink_command()
    recv = subprocess.Popen(["nsenter", f"--target={veth.pids[0]}", "--net", "--", airlink, "udpgen", "recv", "--port", "5300",
                             "--seconds", f"{seconds + 20}", "--idle", "1", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        time.sleep(0.5)
        veth.run(veth.pids[1], [airlink, "udpgen", "send", "--to", "10.78.0.1:5300", "--size", str(size),
                                "--seconds", f"{seconds}", "--json"])
        out, _ = recv.communicate(timeout=30)
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()
    return json.loads(out)


def throughput(folder: Path, seconds: float = 5.0) -> list[dict[str, Any]]:
    """iperf3 CUBIC, and udpgen's 64-byte payloads as fast as it can send, through an unshaped
    emulated path and through a plain veth pair. Packet rates are the receiver's (first to last
    arrival); sender, receiver and emulator share this machine's cores."""
    rows = []
    unshaped = _scenario(folder, "unshaped", UNSHAPED_LINKS + '[[flow]]\ncongestion = "cubic"\n')
    cmd = f"iperf3 -c {{server}} -t {seconds} --json"
    res = emulation.emulate(unshaped, out=folder / "tp-tcp", server="iperf3 -s -1",
                            client=cmd.format(server="$AIRLINK_SERVER"), snaplen=64, timeout=seconds + 30)
    emu = _iperf_json(res)["end"]["sum_received"]
    veth = VethPair()
    try:
        ref = _iperf_pair(lambda: veth.popen(veth.pids[0], ["iperf3", "-s", "-1"]),
                          lambda: veth.run(veth.pids[1], cmd.format(server="10.78.0.1").split()).stdout)["end"]["sum_received"]
    finally:
        veth.close()
    rows.append({"test": "TCP CUBIC (iperf3)", "emulated_bps": emu["bits_per_second"], "veth_bps": ref["bits_per_second"],
                 "emulated_pps": float("nan"), "veth_pps": float("nan"), "datapath_cpu_s": res.summary["datapath"]["cpu_s"],
                 "duration_s": seconds})

    airlink = _airlink_command()
    res = emulation.emulate(unshaped, out=folder / "tp-udp", snaplen=32, timeout=seconds + 30,
                            server=f"{airlink} udpgen recv --port 5300 --seconds {seconds + 20} --idle 1 --json",
                            client=f"{airlink} udpgen send --to $AIRLINK_SERVER:5300 --size 64 --seconds {seconds} --json")
    got, sent = json.loads(res.output("server")), json.loads(res.output("client"))
    veth = VethPair()
    try:
        ref = _udpgen_veth(veth, 64, seconds)
    finally:
        veth.close()
    rows.append({"test": "UDP 64-byte payloads (udpgen)", "emulated_bps": got.get("rate_bps") or 0.0,
                 "veth_bps": ref.get("rate_bps") or 0.0, "emulated_pps": got.get("packets_per_s") or 0.0,
                 "veth_pps": ref.get("packets_per_s") or 0.0, "emulated_sent_pps": sent["packets"] / seconds,
                 "emulated_lost": got["lost"], "veth_lost": ref["lost"],
                 "datapath_cpu_s": res.summary["datapath"]["cpu_s"], "duration_s": seconds})
    return rows


def _busy_s(stat_line: str) -> float:
    """Busy CPU time of the whole machine in a /proc/stat "cpu" line: user, nice, system, irq and
    softirq (not idle, iowait or steal), in seconds."""
    f = [int(x) for x in stat_line.split()[1:]]
    return (f[0] + f[1] + f[2] + f[5] + f[6]) / os.sysconf("SC_CLK_TCK")


def _with_machine_cpu(command: str, marks: Path) -> str:
    """``command`` between two readings of the machine's CPU time (/proc/stat is not per namespace)."""
    return f"head -1 /proc/stat > {marks}.0; {command}; head -1 /proc/stat > {marks}.1"


def _machine_cpu(marks: Path) -> float:
    return _busy_s(Path(f"{marks}.1").read_text()) - _busy_s(Path(f"{marks}.0").read_text())


def cpu_per_gb(folder: Path, seconds: float = 8.0) -> dict[str, Any]:
    """CPU per GB forwarded through a 100 Mbit/s pipe (iperf3 CUBIC): the datapath thread's, all
    airlink threads', and the whole machine's during the transfer next to the same transfer over a
    plain veth pair paced to 100 Mbit/s. The thread figures include the kernels' TCP work that the
    TUN writes run; the machine difference is what the emulator adds."""
    s = _scenario(folder, "cpu", '[downlink.pipe]\nrate = "100 Mbit/s"\nqueue = 300\n[uplink.pipe]\n[[flow]]\n'
                                 'congestion = "cubic"\n')
    client = f"iperf3 -c {{server}} -R -t {seconds} --json"
    res = emulation.emulate(s, out=folder / "cpu", server="iperf3 -s -1", timeout=seconds + 30,
                            client=_with_machine_cpu(client.format(server="$AIRLINK_SERVER"), folder / "cpu-emu"))
    dp = res.summary["datapath"]
    cpu = res.summary["cpu"]
    gb = (dp["downlink"]["bytes"] + dp["uplink"]["bytes"]) / 1e9
    veth = VethPair()
    try:
        ref = _iperf_pair(lambda: veth.popen(veth.pids[0], ["iperf3", "-s", "-1"]), lambda: veth.run(veth.pids[1], [
            "sh", "-c", _with_machine_cpu(client.format(server="10.78.0.1") + " -b 100M", folder / "cpu-veth")]).stdout)
    finally:
        veth.close()
    veth_gb = ref["end"]["sum_received"]["bytes"] / 1e9 * (1500 + 52) / 1448  # data packets and their ACKs

    def per_gb(x: float) -> float:
        return x / gb if gb else float("nan")

    machine = per_gb(_machine_cpu(folder / "cpu-emu"))
    machine_veth = _machine_cpu(folder / "cpu-veth") / veth_gb
    # cpu_s_per_gb is the datapath thread's; process_cpu_s_per_gb covers every airlink thread
    # (datapath, writer, the controlling Python thread).
    return {"cpu_s": dp["cpu_s"], "gb": gb, "cpu_s_per_gb": per_gb(dp["cpu_s"]), "spin_s_per_gb": per_gb(dp["spin_s"]),
            "writer_cpu_s_per_gb": per_gb(cpu["writer_s"]), "process_cpu_s_per_gb": per_gb(cpu["process_s"]),
            "machine_cpu_s_per_gb": machine, "veth_machine_cpu_s_per_gb": machine_veth,
            "added_machine_cpu_s_per_gb": machine - machine_veth,
            "lateness_p50_us": dp["lateness"]["p50_us"], "lateness_p99_us": dp["lateness"]["p99_us"],
            "goodput_bps": json.loads(res.output("client"))["end"]["sum_received"]["bits_per_second"],
            "guard_us": dp["guard_us"], "wakeups_per_s": dp["wakeups"] / dp["duration_s"]}


def idle(folder: Path, seconds: float = 5.0) -> dict[str, Any]:
    """Datapath wake-ups while nothing is sent (the 4G downlink scenario)."""
    base = Path(__file__).resolve().parents[2] / "scenarios" / "wipemu" / "adaptive.toml"
    res = emulation.emulate(base, out=folder / "idle", client=f"sleep {seconds}", timeout=seconds + 30)
    dp = res.summary["datapath"]
    return {"seconds": seconds, "wakeups": dp["wakeups"], "idle_wakeups": dp["idle_wakeups"]}


def own_transports(folder: Path, wipemu_bytes: int = 3_000_000) -> dict[str, Any]:
    """airlink's own CUBIC through an unshaped emulated path (how fast the real-time stack
    goes), and Veno and AFC over the WIPEMU adaptive downlink in emulation next to the same
    seed's simulation."""
    import airlink

    s = _scenario(folder, "own-unshaped", UNSHAPED_LINKS + '[[flow]]\nprotocol = "tcp"\n'
                                          'congestion = "cubic"\nbytes = "300 MB"\n[flow.tcp]\nrwnd = "4 MB"\n')
    res = emulation.emulate(s, out=folder / "own-unshaped", snaplen=64, timeout=120)
    flow, cpu = res.summary["flows"][0], res.summary["cpu"]
    out: dict[str, Any] = {"unshaped_cubic_bps": flow["goodput_bps"], "unshaped_stack_cpu_s": cpu["stack_s"],
                           "unshaped_datapath_cpu_s": cpu["datapath_s"], "unshaped_seconds": flow["duration_s"],
                           "versus_simulation": []}
    base = Path(__file__).resolve().parents[2] / "scenarios" / "wipemu" / "adaptive.toml"
    for congestion in ("veno", "afc"):
        settings = [f"flow.0.congestion={congestion}", f"flow.0.bytes={wipemu_bytes} B"]
        sim = airlink.run(base, seed=1, overrides=settings).summary["flows"][0]
        emu = emulation.emulate(base, seed=1, overrides=settings, out=folder / f"own-{congestion}", snaplen=64).summary
        e = emu["flows"][0]
        out["versus_simulation"].append({
            "congestion": congestion, "simulated_bps": sim["goodput_bps"], "emulated_bps": e["goodput_bps"],
            "ratio": e["goodput_bps"] / sim["goodput_bps"], "retransmissions": [e["retransmissions"], sim["retransmissions"]],
            "timer_late_p99_us": emu["stack"]["timer_late_p99_us"],
        })
    return out


class GatewayHosts:
    """A client and a server namespace behind two veth pairs whose near ends (``client_side``,
    ``server_side``) are left for a gateway; the far ends' own offloads are off (a veth carries
    them across). Needs root, iproute2 and ethtool."""

    def __init__(self) -> None:
        tag = os.getpid() % 10000
        self.ns = {"client": f"gbc{tag}", "server": f"gbs{tag}"}
        self.ifaces = {"client": f"gbc{tag}-gw", "server": f"gbs{tag}-gw"}
        self.address = {"client": "10.79.0.2", "server": "10.79.0.1"}

    def __enter__(self) -> GatewayHosts:
        try:
            for side in ("client", "server"):
                ns, iface = self.ns[side], self.ifaces[side]
                subprocess.run(["ip", "netns", "add", ns], check=True)
                subprocess.run(["ip", "link", "add", iface, "type", "veth", "peer", "name", "host0", "netns", ns], check=True)
                for cmd in (["ip", "addr", "add", f"{self.address[side]}/24", "dev", "host0"], ["ip", "link", "set", "host0", "up"],
                            ["ip", "link", "set", "lo", "up"], ["ethtool", "-K", "host0", "tx", "off", "tso", "off", "gso", "off"],
                            ["sh", "-c", "echo cubic > /proc/sys/net/ipv4/tcp_congestion_control"],
                            ["sh", "-c", "echo 0 > /proc/sys/net/ipv4/tcp_timestamps"]):  # Table II's stack
                    subprocess.run(["ip", "netns", "exec", ns, *cmd], check=True, capture_output=True)
                subprocess.run(["ip", "link", "set", iface, "up"], check=True)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        for side in ("client", "server"):
            subprocess.run(["ip", "link", "del", self.ifaces[side]], capture_output=True)
            subprocess.run(["ip", "netns", "del", self.ns[side]], capture_output=True)

    def popen(self, side: str, command: str) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", self.ns[side], "sh", "-c", command], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def through(self, folder: Path, name: str, text: str, seconds: float,
                work: Callable[[GatewayHosts], Any]) -> tuple[Any, emulation.EmulationResult]:
        """Runs ``work`` while a gateway of scenario ``text`` forwards for ``seconds``."""
        import threading

        result: list[Any] = []

        def forward() -> None:
            try:
                result.append(emulation.gateway(_scenario(folder, name, text), client_side=self.ifaces["client"],
                                                server_side=self.ifaces["server"], out=folder / name, duration=seconds))
            except Exception as e:  # handed to the caller below
                result.append(e)

        gw = threading.Thread(target=forward)
        gw.start()
        state = Path("/run/airlink") / f"gateway-{self.ifaces['server']}.offloads"
        while gw.is_alive() and not state.exists():
            time.sleep(0.05)
        time.sleep(0.5)  # the datapath thread starts after the state file
        try:
            out = work(self)
        finally:
            gw.join()
        if isinstance(result[0], Exception):
            raise result[0]
        return out, result[0]


def gateway(folder: Path, *, quick: bool = False) -> dict[str, Any]:
    """The emulator's figures through ``airlink gateway``: ping through 20 ms each way, line rate
    of 1500-byte UDP packets offered at 1.2x, Table II with the kernel's CUBIC, CPU per GB."""
    out: dict[str, Any] = {}
    count = 100 if quick else 500
    with GatewayHosts() as hosts:
        server = hosts.address["server"]
        pings = {}
        for delay_ms in (0, 20):
            text = _ping_links(delay_ms) + "[[flow]]\n"
            ping, _ = hosts.through(folder, f"gw-ping-{delay_ms}", text, count * 0.02 + 6,
                                    lambda h: h.popen("client", f"ping -n -c {count} -i 0.02 {server}").communicate()[0])
            pings[delay_ms] = sorted(float(x.split("time=")[1].split()[0]) for x in ping.splitlines() if "time=" in x)
        p99 = {d: x[int(0.99 * (len(x) - 1))] for d, x in pings.items()}
        out["delay"] = {"requested_rtt_ms": 40.0, "p99_ms": p99[20], "baseline_p99_ms": p99[0],
                        "p99_excess_ms": p99[20] - 40.0 - p99[0], "mean_ms": statistics.mean(pings[20]), "samples": len(pings[20])}
        out["linerate"] = []
        seconds = 3.0 if quick else 8.0
        for rate in (1_000_000, 10_000_000):
            text = f'[downlink.pipe]\nrate = "{rate} bit/s"\nqueue = 100\n[uplink.pipe]\n[[flow]]\n'

            def udp(h: GatewayHosts, rate: int = rate) -> None:
                srv = h.popen("server", "iperf3 -s -1")
                time.sleep(0.3)
                h.popen("client", f"iperf3 -c {server} -u -R -l 1472 -b {int(rate * 1.2)} -t {seconds}").communicate()
                srv.communicate(timeout=30)

            _, res = hosts.through(folder, f"gw-line-{rate}", text, seconds + 5, udp)
            recs = [t for t, n, _ in emulation.read_pcap(folder / f"gw-line-{rate}" / "client.pcap") if n == 1500]
            recs = recs[len(recs) // 10:]
            delivered = (len(recs) - 1) * 12000 / ((recs[-1] - recs[0]) * 1e-9) if len(recs) > 1 else float("nan")
            dp = res.summary["datapath"]
            gb = sum(link["bytes_out"] for link in res.summary["links"] if link["name"] == "downlink") / 1e9
            out["linerate"].append({"requested_bps": rate, "delivered_bps": delivered, "delivered_ratio": delivered / rate,
                                    "lateness_p99_us": dp["lateness"]["p99_us"], "cpu_s_per_gb": dp["cpu_s"] / gb if gb else float("nan"),
                                    "process_cpu_s_per_gb": res.summary["cpu"]["process_s"] / gb if gb else float("nan")})
        out["table2"] = []
        base = (Path(__file__).resolve().parents[2] / "scenarios" / "wipemu" / "validation.toml").read_text(encoding="utf-8")
        names = {1: "bpsk", 2: "4qam", 4: "16qam", 8: "256qam"}
        t2_seconds = 10.0 if quick else 20.0
        for k in (1, 4) if quick else (1, 2, 4, 8):
            text = base.replace('modulation = "4qam"', f'modulation = "{names[k]}"')
            expected = 162000 * k * (1460 / 1500) * 12000 / (-(-12000 // (108 * k)) * 108 * k)
            nbytes, window = int(expected / 8 * t2_seconds), int(expected / 8 * 0.21) + 30_000

            def tcp(h: GatewayHosts, nbytes: int = nbytes, window: int = window) -> None:
                srv = h.popen("server", "iperf3 -s -1")
                time.sleep(0.3)
                h.popen("client", f"iperf3 -c {server} -R -n {nbytes} -w {window}").communicate()
                srv.communicate(timeout=60)

            hosts.through(folder, f"gw-t2-{k}", text, t2_seconds * 1.6 + 8, tcp)
            measured = emulation.tcp_goodput_steady(folder / f"gw-t2-{k}" / "client.pcap")
            compensated = measured * (1 + 40 / 1460) * (1 + (108 * k - 12000 % (108 * k)) / 12000)
            out["table2"].append({"k": k, "theoretical_bps": 162000 * k, "measured_bps": measured, "ratio": compensated / (162000 * k)})
    return out


def timing_table(requests: int = 1000, max_ms: float = 100.0) -> list[TimingStats]:
    from airlink import timing

    return timing.measure(requests=requests, max_ms=max_ms)


def run(parts: Sequence[str] = PARTS, *, quick: bool = False, progress: Report | None = None) -> dict[str, Any]:
    """Runs the chosen parts; ``quick`` shortens everything (a look, not figures to quote)."""
    out: dict[str, Any] = {}
    say = progress or (lambda s: None)
    with tempfile.TemporaryDirectory(prefix="airlink-emubench-") as tmp:
        folder = Path(tmp)
        if "linerate" in parts:
            say("line rate")
            out["linerate"] = line_rate(folder, seconds=2.0 if quick else 4.0)
        if "delay" in parts:
            say("ping delay")
            out["delay"] = delay(folder, count=100 if quick else 500)
        if "table2" in parts:
            say("Table II")
            out["table2"] = table2(folder, ks=(1, 4) if quick else range(1, 9), seconds=10.0 if quick else 20.0)
        if "throughput" in parts:
            say("throughput vs veth")
            out["throughput"] = throughput(folder, seconds=3.0 if quick else 5.0)
        if "cpu" in parts:
            say("CPU per GB")
            out["cpu"] = cpu_per_gb(folder, seconds=4.0 if quick else 8.0)
        if "idle" in parts:
            say("idle wake-ups")
            out["idle"] = idle(folder, seconds=2.0 if quick else 5.0)
        if "own" in parts:
            say("airlink's own transports")
            out["own"] = own_transports(folder, wipemu_bytes=600_000 if quick else 3_000_000)
        if "gateway" in parts:
            say("gateway")
            out["gateway"] = gateway(folder, quick=quick)
    if "timing" in parts:
        say("timing table")
        out["timing"] = timing_table(requests=100 if quick else 1000, max_ms=10.0 if quick else 100.0)
    return out


def format_report(r: dict[str, Any]) -> str:
    lines: list[str] = []
    if "linerate" in r:
        lines.append("Line rate, 100-byte packets at 1.2x   requested  delivered/requested (pcap, receiver)  "
                     "delivered/schedule  lateness p99")
        for x in r["linerate"]:
            lines.append(f"  {x['requested_bps']:>28,.0f} bit/s  {x['delivered_ratio']:>12.6f} {x['receiver_ratio']:>12.6f}"
                         f"  {x['delivered_vs_schedule']:>18.6f}  {x['lateness_p99_us']:>8.0f} us  ({x['packets']} packets, "
                         f"queue {x['queue_packets']}, {x['pcap_records_lost']} pcap records lost)")
    if "delay" in r:
        d = r["delay"]
        lines.append(f"Ping, 20 ms each way: mean {d['mean_ms']:.3f} ms, p99 {d['p99_ms']:.3f} ms, min {d['min_ms']:.3f} ms; "
                     f"baseline mean {d['baseline_mean_ms']:.3f} ms; excess over 40 ms + baseline: mean "
                     f"{d['mean_excess_ms']:+.3f} ms, p99 {d['p99_excess_ms']:+.3f} ms ({d['samples']} samples)")
    if "table2" in r:
        lines.append("Table II (kernel CUBIC)  k  theoretical   measured  compensated   ratio    drops")
        for x in r["table2"]:
            lines.append(f"                         {x['k']}  {x['theoretical_bps']:>11,.0f}  {x['measured_bps']:>9,.0f}"
                         f"  {x['compensated_bps']:>11,.0f}  {100 * x['ratio']:.3f} %  {x['queue_drops']}")
    if "throughput" in r:
        for x in r["throughput"]:
            pps = "" if x["emulated_pps"] != x["emulated_pps"] else (
                f"; {x['emulated_pps']:,.0f} pkt/s vs veth {x['veth_pps']:,.0f} pkt/s")
            lines.append(f"{x['test']}, unshaped: {x['emulated_bps'] / 1e6:,.0f} Mbit/s vs veth {x['veth_bps'] / 1e6:,.0f} Mbit/s{pps}")
    if "cpu" in r:
        c = r["cpu"]
        lines.append(f"CPU at 100 Mbit/s: {c['cpu_s_per_gb']:.2f} datapath CPU-s per GB (of which spinning "
                     f"{c['spin_s_per_gb']:.2f}), {c['process_cpu_s_per_gb']:.2f} for all airlink threads "
                     f"({c['gb']:.3f} GB, {c['wakeups_per_s']:,.0f} wake-ups/s, guard {c['guard_us']:.0f} us, "
                     f"lateness p50 {c['lateness_p50_us']:.0f} us, p99 {c['lateness_p99_us']:.0f} us)")
        lines.append(f"  whole machine during the transfer: {c['machine_cpu_s_per_gb']:.2f} CPU-s per GB emulated, "
                     f"{c['veth_machine_cpu_s_per_gb']:.2f} over veth at 100 Mbit/s: the emulator adds "
                     f"{c['added_machine_cpu_s_per_gb']:.2f}")
    if "idle" in r:
        i = r["idle"]
        lines.append(f"Idle: {i['wakeups']} wake-ups in {i['seconds']:.0f} s with no traffic")
    if "own" in r:
        o = r["own"]
        lines.append(f"airlink's own CUBIC, unshaped: {o['unshaped_cubic_bps'] / 1e6:,.0f} Mbit/s (stack "
                     f"{o['unshaped_stack_cpu_s']:.2f} CPU-s, datapath {o['unshaped_datapath_cpu_s']:.2f} CPU-s "
                     f"in {o['unshaped_seconds']:.2f} s)")
        for x in o["versus_simulation"]:
            lines.append(f"  WIPEMU adaptive, {x['congestion']}: emulated {x['emulated_bps'] / 1e3:,.1f} kbit/s, simulated "
                         f"{x['simulated_bps'] / 1e3:,.1f} kbit/s (ratio {x['ratio']:.4f}; retransmissions "
                         f"{x['retransmissions'][0]} vs {x['retransmissions'][1]}; stack timer p99 {x['timer_late_p99_us']:.0f} us)")
    if "gateway" in r:
        g = r["gateway"]
        d = g["delay"]
        lines.append(f"Gateway, ping 20 ms each way: p99 {d['p99_ms']:.3f} ms, baseline p99 {d['baseline_p99_ms']:.3f} ms, "
                     f"p99 excess {d['p99_excess_ms']:+.3f} ms ({d['samples']} samples)")
        for x in g["linerate"]:
            lines.append(f"  line rate {x['requested_bps'] / 1e6:g} Mbit/s, 1500-byte packets at 1.2x: delivered/requested "
                         f"{x['delivered_ratio']:.5f}, lateness p99 {x['lateness_p99_us']:.0f} us, datapath "
                         f"{x['cpu_s_per_gb']:.1f} CPU-s per GB ({x['process_cpu_s_per_gb']:.1f} all threads)")
        for x in g["table2"]:
            lines.append(f"  Table II (kernel CUBIC) k={x['k']}: {x['measured_bps']:,.0f} bit/s measured, compensated/theoretical "
                         f"{100 * x['ratio']:.3f} %")
    if "timing" in r:
        from airlink import timing

        lines.append(timing.format_table(r["timing"]))
    return "\n".join(lines)


if __name__ == "__main__":
    parts = sys.argv[1:] or PARTS
    print(format_report(run(parts, progress=lambda s: print(f"... {s}", file=sys.stderr))))
