"""The few quantities with units that the Python side parses itself (the core parses scenarios)."""

from __future__ import annotations

import re

_DURATION_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "min": 60_000_000_000}
_NUMBER_UNIT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-z]+)\s*$")


def parse_duration_ns(value: str | float | int) -> int:
    """A duration as integer nanoseconds: ``"10 s"``, ``"500 ms"``; a bare number means seconds.

    >>> parse_duration_ns("10 s")
    10000000000
    >>> parse_duration_ns("250 ms")
    250000000
    >>> parse_duration_ns(0.5)
    500000000
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        ns = round(float(value) * 1e9)
    else:
        match = _NUMBER_UNIT.match(str(value))
        if not match or match.group(2) not in _DURATION_NS:
            raise ValueError(f"invalid duration {value!r}: expected a number with a unit, like \"10 s\" (ns, us, ms, s, min)")
        ns = round(float(match.group(1)) * _DURATION_NS[match.group(2)])
    if ns <= 0:
        raise ValueError(f"invalid duration {value!r}: expected a positive duration")
    return ns
