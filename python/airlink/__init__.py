"""airlink: wireless-link simulation for transport-protocol research.

The Rust core (``airlink._core``) runs the models; this package runs scenarios, writes results
folders, computes statistics and reproduces the seed studies.

>>> import airlink
>>> r = airlink.run("scenarios/wipemu/validation.toml", overrides=["flow.0.bytes=100 kB"])
>>> r.completed, r.summary["links"][1]["name"]
(True, 'downlink')
>>> try:
...     airlink.run("scenarios/wipemu/validation.toml", overrides=["downlink.ofdm4g.modulation=512qam"])
... except airlink.ScenarioError as e:
...     print("refused")
refused

A scenario can be a path, TOML text or a dict (``airlink.sources`` has the rule), and
``to_toml`` writes a dict back as TOML:

>>> print(airlink.to_toml({"stop": "2 s", "downlink": {"pipe": {"rate": "2 Mbit/s"}}}), end="")
stop = "2 s"
<BLANKLINE>
[downlink.pipe]
rate = "2 Mbit/s"
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing`: this module must load in no time (see below)
if TYPE_CHECKING:
    from airlink._core import ScenarioError
    from airlink.comparison import compare
    from airlink.experiment_run import sweep
    from airlink.results import RunResult, read_results
    from airlink.runner import RunResults, run
    from airlink.sources import to_toml
    from airlink.store import load

# Loaded on first use: the `airlink` command imports this package before it can catch Ctrl-C,
# so the package itself must load nothing heavy (pandas, the core).
_LAZY = {"ScenarioError": "airlink._core", "RunResult": "airlink.results", "read_results": "airlink.results",
         "sweep": "airlink.experiment_run", "run": "airlink.runner", "load": "airlink.store",
         "RunResults": "airlink.runner", "to_toml": "airlink.sources", "compare": "airlink.comparison"}


def __getattr__(name: str) -> object:
    import importlib

    if name == "__version__":
        from airlink.version import version

        return version()
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'airlink' has no attribute {name!r}")

__all__ = ["RunResult", "RunResults", "ScenarioError", "__version__", "compare", "load", "read_results", "run",
           "sweep", "to_toml"]
