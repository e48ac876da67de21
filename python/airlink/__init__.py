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
"""

from airlink._core import ScenarioError
from airlink.results import RunResult, read_results
from airlink.experiment_run import sweep
from airlink.runner import run
from airlink.store import load
from airlink.version import version as _version

__version__: str = _version()

__all__ = ["RunResult", "ScenarioError", "__version__", "load", "read_results", "run", "sweep"]
