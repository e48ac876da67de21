"""Type stubs of the native module `airlink._core` (crates/airlink-py/src/lib.rs)."""

import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, final

from airlink._types import (
    DoctorCheck,
    EmulationSummary,
    Iperf3Results,
    ScenarioKey,
    TimingModelRow,
    TimingStats,
    UdpgenRecvReport,
    UdpgenSendReport,
)

# What the module exports (not `Cancel`, a Protocol that exists only here, for typing).
__all__ = [
    "Cancelled",
    "EMULATION",
    "Emulation",
    "EmulationError",
    "ScenarioError",
    "Simulation",
    "__version__",
    "bench_event_queue",
    "check_scenario",
    "doctor",
    "dumbbell_scenario",
    "gateway_restore",
    "parse_rate",
    "result_schemas",
    "run_summary",
    "scenario_keys",
    "scenario_warnings",
    "table_schema",
    "timing_measure",
    "timing_measure_series",
    "timing_model",
    "timing_whole_ms_series",
    "transport_parameters",
    "udpgen_recv",
    "udpgen_send",
]

__version__: str
EMULATION: bool  # False in a build without the emulator (not Linux, or --no-default-features)

class ScenarioError(ValueError):
    """A scenario file or override is invalid; the message is `path:line:col: what, expected`."""

class Cancel(Protocol):
    """Anything with ``is_set()``, e.g. a ``threading.Event``."""

    def is_set(self) -> bool: ...

class Cancelled(RuntimeError):
    """A run was stopped because its ``cancel`` event was set."""

@final
class Simulation:
    seed: int
    name: str
    now_ns: int
    finished: bool
    def __new__(
        cls,
        text: str,
        source: str,
        seed: int | None = None,
        overrides: list[str] = ...,
        record: bool = True,
    ) -> Simulation: ...
    def resolved_scenario(self) -> str: ...
    def run_until(self, t_ns: int, cancel: Cancel | None = None) -> bool:
        """Signals are handled every 50 ms of wall time; raises ``Cancelled`` once ``cancel`` is set."""
    def drain(self) -> dict[str, dict[str, list[int] | list[float] | list[str]]]: ...
    def summary_json(self) -> str:
        """The summary's JSON text, the results file byte for byte; it parses to a ``RunSummary``."""

class EmulationError(RuntimeError):
    """Emulation could not start or run: privileges, namespaces, TUN devices, output files."""

@final
class Emulation:
    """A running real-time emulation: two network namespaces joined through a scenario's links."""

    seed: int
    name: str
    server_address: str
    client_address: str
    host_changes: list[str]
    wakeups: int
    stop_s: float
    flows_finished: bool
    def __new__(
        cls,
        text: str,
        source: str,
        seed: int | None = None,
        overrides: list[str] = ...,
        pcap_dir: str | None = None,
        snaplen: int = 128,
        realtime: bool = True,
        guard_us: int = 50,
        mlock: bool = True,
        max_in_flight_bytes: int = ...,
        gateway: tuple[str, str] | None = None,
    ) -> Emulation: ...
    def resolved_scenario(self) -> str: ...
    def sysctls(self) -> dict[str, dict[str, str]]: ...
    def spawn(self, side: str, command: str, stdout: str | None = None, stderr: str | None = None,
              interactive: bool = False) -> int: ...
    def poll(self, handle: int) -> int | None: ...
    def kill(self, handle: int, force: bool = False) -> None: ...
    def start_flows(self) -> None: ...
    def drain(self) -> dict[str, dict[str, list[int] | list[float] | list[str]]]: ...
    def listen(self, path: str | os.PathLike[str]) -> None:
        """Serve live control requests on a Unix socket at ``path`` while the emulation runs."""
    def control(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Answer one live control request (such as ``{"op": "state"}``) as the socket would."""
    def stop(self) -> None: ...
    def summary(
        self,
        *,
        commands: Sequence[Mapping[str, Any]] | None = None,
        interrupted: str | None = None,
        timed_out: bool = False,
        stopped_by: str | None = None,
        warnings: list[str] = ...,
        iperf3: Iperf3Results | None = None,
    ) -> EmulationSummary:
        """Stops the emulation and returns its summary completed with how the run went
        (``commands`` as ``_types.Command``)."""

def run_summary(
    text: str, source: str, seed: int | None = None, overrides: list[str] = ..., cancel: Cancel | None = None
) -> str:
    """The summary's JSON text (as ``Simulation.summary_json``); it parses to a ``RunSummary``."""
def check_scenario(text: str, source: str, overrides: list[str] = ...) -> str: ...
def transport_parameters(text: str, source: str, overrides: list[str] = ...) -> list[tuple[int, list[tuple[str, str]]]]: ...
def scenario_warnings(text: str, source: str, overrides: list[str] = ...) -> list[str]: ...
def scenario_keys() -> list[ScenarioKey]: ...
def bench_event_queue(population: int, n: int) -> int: ...
def dumbbell_scenario(bottleneck_bps: int, flows: int, seconds: int, rtt_ms: int) -> str: ...
def table_schema() -> list[tuple[str, list[tuple[str, str]]]]: ...
def udpgen_send(to: str, size: int = 72, rate_bps: int = 0, seconds: float = 1.0, batch: int = 64,
                gso: bool = True) -> UdpgenSendReport: ...
def udpgen_recv(bind: str, seconds: float = 10.0, idle: float = 1.0, batch: int = 64,
                ready: str | None = None) -> UdpgenRecvReport: ...
def timing_measure(method: str, requests: int = 1000, min_ms: float = 1.0, max_ms: float = 100.0, seed: int = 1,
                   realtime: bool = True) -> TimingStats: ...
def timing_measure_series(method: str, requests_ns: list[int], realtime: bool = True) -> TimingStats: ...
def timing_whole_ms_series(n: int = 1000, seed: int = 1) -> list[int]: ...
def timing_model(requests_ns: list[int]) -> list[TimingModelRow]: ...
def doctor() -> list[DoctorCheck]: ...
def result_schemas() -> dict[str, Any]:
    """The JSON Schema of every typed result (scripts/gen_result_types.py writes ``_types`` from it)."""
def parse_rate(text: str) -> int: ...

def gateway_restore(iface: str) -> list[str]: ...
