"""Type stubs of the native module `airlink._core` (crates/airlink-py/src/lib.rs)."""

__version__: str

class ScenarioError(ValueError):
    """A scenario file or override is invalid; the message is `path:line:col: what, expected`."""

class Simulation:
    seed: int
    name: str
    now_ns: int
    finished: bool
    def __init__(
        self,
        text: str,
        source: str,
        seed: int | None = None,
        overrides: list[str] = ...,
        record: bool = True,
    ) -> None: ...
    def resolved_scenario(self) -> str: ...
    def run_until(self, t_ns: int) -> bool: ...
    def drain(self) -> dict[str, dict[str, list[int] | list[float] | list[str]]]: ...
    def summary_json(self) -> str: ...

def run_summary(text: str, source: str, seed: int | None = None, overrides: list[str] = ...) -> str: ...
def check_scenario(text: str, source: str, overrides: list[str] = ...) -> str: ...
def bench_event_queue(population: int, n: int) -> int: ...
