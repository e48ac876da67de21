"""Bad input exits 2 with `file:line:col:` and writes nothing; interrupted runs leave nothing
under the final name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import airlink
from airlink import results
from conftest import ADAPTIVE, AIRLINK_COMMAND, REPO, VALIDATION, partial_folders

BAD_SCENARIOS = {
    "unknown key": ("[downlink.ofdm4g]\nmodulation = \"4qam\"\nqueue_size = 50\n\n[[flow]]\n", 3, 1, "unknown field `queue_size`"),
    "bad unit": ("[wired]\ndelay = \"100 parsecs\"\n\n[downlink.ofdm4g]\n\n[[flow]]\n", 2, 9, "parsecs"),
    "queue = 0": ("[downlink.ofdm4g]\nqueue = 0\n\n[[flow]]\n", 2, 9, "at least 1 packet"),
    "unknown modulation": ("[downlink.ofdm4g]\nmodulation = \"512qam\"\n\n[[flow]]\n", 2, 14, "unknown modulation"),
    "BER above 0.5": ("[downlink.pipe]\nrate = \"2 Mbit/s\"\nbit_error_rate = 0.6\n\n[[flow]]\n", 3, 18, "[0, 0.5]"),
    "DCCP above the MTU": (
        "[downlink.pipe]\nrate = \"2 Mbit/s\"\n\n[[flow]]\nprotocol = \"dccp\"\npacket_size = \"1600 B\"\n",
        6,
        15,
        "flow.0.packet_size: a DCCP packet of 1600 B payload is 1656 B with its headers (IP 20 B, DCCP up to 36 B), "
        "more than the MTU of 1500 B ([emulation] mtu): DCCP never fragments; use at most 1444 B",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_SCENARIOS))
def test_bad_scenario_exits_2_with_its_place_and_writes_nothing(airlink_cli, tmp_path: Path, case: str) -> None:
    text, line, column, what = BAD_SCENARIOS[case]
    scenario = tmp_path / "bad.toml"
    scenario.write_text(text)
    out = tmp_path / "out"
    result = airlink_cli("run", scenario, "--out", out)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"{scenario}:{line}:{column}: "), result.stderr
    assert what in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not out.exists() and partial_folders(tmp_path) == []
    checked = airlink_cli("check", scenario)
    assert checked.exit_code == 2 and checked.stderr.startswith(f"{scenario}:{line}:{column}: ")


def test_bad_override_exits_2(airlink_cli, tmp_path: Path) -> None:
    result = airlink_cli("run", VALIDATION, "--set", "downlink.ofdm4g.modulation=512qam", "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert "--set" in result.stderr and "unknown modulation" in result.stderr
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_scenario_error_is_a_value_error_from_the_api(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(BAD_SCENARIOS["queue = 0"][0])
    with pytest.raises(airlink.ScenarioError, match=r"bad\.toml:2:9: ") as info:
        airlink.run(bad, out=tmp_path / "out")
    assert isinstance(info.value, ValueError)
    assert not (tmp_path / "out").exists()


def test_a_failure_while_writing_leaves_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = results.ParquetSink.write
    calls = []

    def failing_write(self: results.ParquetSink, drained: results.Drained) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("disk full")
        real_write(self, drained)

    monkeypatch.setattr(results.ParquetSink, "write", failing_write)
    with pytest.raises(RuntimeError, match="disk full"):
        airlink.run(ADAPTIVE, overrides=["flow.0.bytes=300 kB"], out=tmp_path / "r", chunk="1 s")
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_in_the_cli_exits_130_and_leaves_nothing(airlink_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(self: results.ParquetSink, drained: results.Drained) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(results.ParquetSink, "write", interrupted)
    result = airlink_cli("run", VALIDATION, "--out", tmp_path / "r")
    assert result.exit_code == 130
    assert "interrupted" in result.stderr
    assert list(tmp_path.iterdir()) == []


def _start_long_run(out: Path) -> subprocess.Popen[bytes]:
    # A transfer far longer than the test waits: it is always mid-run when signalled.
    return subprocess.Popen(
        [*AIRLINK_COMMAND, "run", ADAPTIVE, "--set", "flow.0.bytes=10 GB", "--set", "stop=1000000 s", "--out", str(out)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )


def _wait_for_partial(parent: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not partial_folders(parent):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never started writing"
        time.sleep(0.05)
    time.sleep(0.3)  # well inside the run: some row groups are written


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 128 + signal.SIGTERM)])
def test_signalled_run_leaves_no_folder(tmp_path: Path, sig: signal.Signals, code: int) -> None:
    out = tmp_path / "r"
    proc = _start_long_run(out)
    try:
        _wait_for_partial(tmp_path, proc)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, stderr
    assert b"Traceback" not in stderr
    assert list(tmp_path.iterdir()) == []


def test_a_signal_stops_a_run_inside_one_long_chunk(tmp_path: Path) -> None:
    # One chunk of simulated time that takes hours of wall time: the core must look for
    # signals while it runs, not only between chunks.
    out = tmp_path / "r"
    code = (f"import airlink; airlink.run({ADAPTIVE!r}, overrides=['flow.0.bytes=10 GB', 'stop=1000000 s'], "
            f"out={str(out)!r}, chunk='1000000 s')")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for_partial(tmp_path, proc)
        time.sleep(1.0)  # well inside the chunk
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)  # without the checks: hours
    finally:
        if proc.poll() is None:
            proc.kill()
    # An uncaught KeyboardInterrupt ends Python as if killed by SIGINT.
    assert proc.returncode == -signal.SIGINT and b"KeyboardInterrupt" in stderr, stderr
    assert list(tmp_path.iterdir()) == []


def test_a_set_cancel_event_stops_a_sweep_run_in_its_thread() -> None:
    from airlink import _core

    text = (REPO / ADAPTIVE).read_text()
    cancel = threading.Event()
    outcome: list[BaseException | str] = []

    def work() -> None:
        try:
            outcome.append(_core.run_summary(text, ADAPTIVE, 1, ["flow.0.bytes=10 GB", "stop=1000000 s"], cancel))
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            outcome.append(e)

    worker = threading.Thread(target=work)
    worker.start()
    time.sleep(0.5)
    cancel.set()
    worker.join(timeout=60)  # without the checks: hours
    assert not worker.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], _core.Cancelled), outcome


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 128 + signal.SIGTERM)])
def test_a_signal_stops_udpgen_inside_its_core_call(tmp_path: Path, sig: signal.Signals, code: int) -> None:
    # The core receives for a minute with the GIL released; the signal must not wait for it.
    import socket

    ready = tmp_path / "ready"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([*AIRLINK_COMMAND, "udpgen", "recv", "--bind", "127.0.0.1", "--port", str(port), "--seconds", "60",
                             "--ready", str(ready)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=30)  # without the checks: the minute
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, stderr
    assert b"Traceback" not in stderr


def test_killed_run_leaves_no_final_folder_and_its_leftovers_are_swept(tmp_path: Path) -> None:
    out = tmp_path / "r"
    proc = _start_long_run(out)
    try:
        _wait_for_partial(tmp_path, proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not out.exists()
    assert len(partial_folders(tmp_path)) == 1  # kill -9 cannot clean up
    airlink.run(VALIDATION, overrides=["flow.0.bytes=50 kB"], out=out)
    assert out.is_dir() and partial_folders(tmp_path) == []
