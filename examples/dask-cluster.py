"""Starts Dask workers as Slurm or PBS jobs for `airlink sweep --dask`, with the settings of
examples/dask-jobqueue.yaml (dask-jobqueue), and prints the scheduler's address::

    python examples/dask-cluster.py slurm 4 &      # 4 jobs of 8 workers each
    airlink sweep examples/loss-sweep.toml --dask tcp://10.0.0.5:8786

Run both on the login node (or any machine the compute nodes can reach); Ctrl-C cancels the jobs.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import dask.config
import yaml


def cluster(kind: str):  # noqa: ANN201 - a dask_jobqueue cluster
    """A SLURMCluster or PBSCluster configured from dask-jobqueue.yaml beside this file."""
    settings = yaml.safe_load((Path(__file__).with_name("dask-jobqueue.yaml")).read_text())
    dask.config.update(dask.config.config, settings, priority="new")
    from dask_jobqueue import PBSCluster, SLURMCluster

    return {"slurm": SLURMCluster, "pbs": PBSCluster}[kind]()


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("slurm", "pbs") or not sys.argv[2].isdigit():
        sys.exit("usage: dask-cluster.py slurm|pbs JOBS")
    c = cluster(sys.argv[1])
    c.scale(jobs=int(sys.argv[2]))
    print(c.scheduler_address, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        c.close()
