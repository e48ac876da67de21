"""Live control of a running emulation: the client of its control socket.

A running ``airlink emulate`` listens on ``control.sock`` in the folder it writes (the hidden
``.NAME.partial-PID`` beside the results folder until the run ends); only the user who started
it (under sudo, the user who ran sudo) and root may connect. The protocol is one JSON object
per line each way (see ``crates/airlink-emu/src/control.rs``)::

    {"op": "set", "link": "downlink", "set": {"rate": "2 Mbit/s"}}
    {"op": "down", "link": "ap1-down", "packets": "lost"}       {"op": "up", "link": "ap1-down"}
    {"op": "handoff", "flow": "phone", "path": ["wan-down", "ap2-down"], "return_path": [...]}
    {"op": "start", "flow": 0}    {"op": "stop", "flow": 0}    {"op": "state"}

Changes are those a scenario's ``[[change]]`` can make, checked by the same code, applied now and
recorded in ``events.parquet`` with ``live = 1``. A refused request raises :class:`ControlError`
and changes nothing; the emulation runs on.

>>> from airlink.control import Control            # doctest: +SKIP
>>> with Control("results/emu") as c:              # doctest: +SKIP
...     c.set("downlink", rate="2 Mbit/s")
...     c.state()["links"][1]["rate_bps"]
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

from airlink.atomic import partial_name
from airlink.emulate import CONTROL_SOCKET

SOCKET = CONTROL_SOCKET
#: Seconds to wait for an answer (the emulation answers within its own 5 s bound).
TIMEOUT_S = 10.0


class ControlError(Exception):
    """A request was refused (the message says why), or the run cannot be reached."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def socket_path(run: str | os.PathLike[str]) -> Path:
    """The control socket of the run writing the results folder ``run`` (or ``run`` itself
    when it is a socket or the folder holding one); ControlError when no run is writing it."""
    path = Path(run)
    if path.is_socket():
        return path
    if (path / SOCKET).is_socket():
        return path / SOCKET
    prefix = partial_name(path, 0).name[: -len("0")]
    candidates = []
    if path.parent.is_dir():
        for p in path.parent.glob(prefix + "*"):
            pid = p.name[len(prefix):]
            if pid.isdigit() and _alive(int(pid)) and (p / SOCKET).is_socket():
                candidates.append(p / SOCKET)
    if len(candidates) == 1:
        return candidates[0]
    if len(candidates) > 1:
        raise ControlError(f"several runs write {path}: give the socket itself, one of {', '.join(map(str, candidates))}")
    if path.exists():
        raise ControlError(f"the run that wrote {path} has ended")
    raise ControlError(f"no run is writing {path}: expected the --out folder of a running `airlink emulate`")


class Control:
    """A connection to a running emulation's control socket."""

    def __init__(self, run: str | os.PathLike[str], timeout: float = TIMEOUT_S) -> None:
        self.path = socket_path(run)
        self._timeout = timeout
        self._open()

    def _open(self) -> None:
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(self._timeout)
        try:
            _connect(self._sock, self.path)
        except PermissionError:
            self._sock.close()
            raise ControlError(f"{self.path}: only the user who started the run, and root, may control it") from None
        except (ConnectionRefusedError, FileNotFoundError):
            self._sock.close()
            raise ControlError(f"the run behind {self.path} has ended") from None
        self._file = self._sock.makefile("rb")

    def close(self) -> None:
        self._file.close()
        self._sock.close()

    def __enter__(self) -> Control:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, req: dict[str, Any] | str) -> dict[str, Any]:
        """Sends one request (a dict, or a line of JSON as is); returns the answer, or raises
        ControlError with its error."""
        line = (req if isinstance(req, str) else json.dumps(req)).encode() + b"\n"
        answer = self._exchange(line)
        if answer is not None and answer.get("reconnect"):
            # The run closed this connection, idle, to make room for a newer one (it serves a
            # bounded number): the request was not handled; send it again on a new connection.
            self.close()
            self._open()
            answer = self._exchange(line)
        if answer is None:
            raise ControlError("the run has ended")
        if not answer.get("ok"):
            raise ControlError(answer.get("error", "refused"))
        return answer

    def _exchange(self, line: bytes) -> dict[str, Any] | None:
        """Sends a line and reads the answer; None when the connection is closed."""
        try:
            self._sock.sendall(line)
        except (BrokenPipeError, ConnectionResetError):
            pass  # an answer sent before the close (why it closed) may still wait
        try:
            answer = self._file.readline()
        except ConnectionResetError:
            answer = b""
        except TimeoutError:
            raise ControlError("the emulation did not answer") from None
        return json.loads(answer) if answer else None

    def set(self, link: str, **values: Any) -> float:
        """New values of a link's parameters (``rate``, ``delay``, ``queue``, ``loss``,
        ``bit_error_rate``, ``mean_snr``; with units as in a scenario: ``rate="2 Mbit/s"``).
        Returns the emulated instant (s) it applied at."""
        return self.request({"op": "set", "link": link, "set": values})["time_s"]

    def down(self, link: str, packets: str | None = None) -> float:
        """Takes a link down; ``packets`` "lost" (default) or "kept" until it is up."""
        req: dict[str, Any] = {"op": "down", "link": link}
        if packets is not None:
            req["packets"] = packets
        return self.request(req)["time_s"]

    def up(self, link: str) -> float:
        return self.request({"op": "up", "link": link})["time_s"]

    def handoff(self, flow: str | int, path: list[str] | None = None, return_path: list[str] | None = None) -> float:
        """Moves a flow to other links (its new ``path`` and/or ``return_path``)."""
        req: dict[str, Any] = {"op": "handoff", "flow": flow}
        if path is not None:
            req["path"] = list(path)
        if return_path is not None:
            req["return_path"] = list(return_path)
        return self.request(req)["time_s"]

    def start(self, flow: str | int) -> float:
        """Starts one of airlink's own TCP flows now (one that has not started)."""
        return self.request({"op": "start", "flow": flow})["time_s"]

    def stop(self, flow: str | int) -> float:
        """Stops one of airlink's own TCP flows now, as its ``stop`` would: the application stops
        writing, what it sent is still delivered."""
        return self.request({"op": "stop", "flow": flow})["time_s"]

    def state(self) -> dict[str, Any]:
        """Links (parameters, counters, queue, drops by cause, radio state) and flows
        (traffic at the TUN devices; with airlink's own transports delivered bytes, cwnd, rate)."""
        return self.request({"op": "state"})


def _connect(sock: socket.socket, path: Path) -> None:
    """Connects to a Unix socket: its path is at most 107 bytes, so a longer one is reached
    through a descriptor of its folder."""
    if len(os.fsencode(path)) < 108:
        sock.connect(os.fspath(path))
        return
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        sock.connect(f"/proc/self/fd/{fd}/{path.name}")
    finally:
        os.close(fd)
