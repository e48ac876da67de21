"""Figures as PNG files (matplotlib with the Agg backend: no display needed)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)


@dataclass(frozen=True)
class Series:
    """One curve with symmetric error bars."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    err: Sequence[float]


def errorbar_png(
    path: Path, series: Sequence[Series], *, title: str, x_label: str, y_label: str, x_ticks: Sequence[float] = (),
    markers: bool = True,
) -> None:
    """Writes a line plot of ``series`` with error bars (NaN bars are left out) to ``path``;
    ``markers=False`` for dense time series."""
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    shapes = "osD^v<>xp"
    for i, s in enumerate(series):
        err = [0.0 if e != e else e for e in s.err]  # NaN (one seed) draws no bar
        marker = shapes[i % len(shapes)] if markers else None
        ax.errorbar(s.x, s.y, yerr=err, label=s.label, marker=marker, capsize=3 if markers else 0, linewidth=1.4)
    ax.set_title(textwrap.fill(title, 60), fontsize=11)
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    if x_ticks:
        ax.set_xticks(list(x_ticks))
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
