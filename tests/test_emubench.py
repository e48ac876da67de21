"""The emulator benchmark's scenarios are ones `airlink check` accepts (its 0 ms ping baseline
was once refused, so `airlink bench --emu delay` exited 2 before measuring anything)."""

import pytest

from airlink import _core, emubench


@pytest.mark.parametrize("delay_ms", [0, 20])
def test_ping_scenarios_are_accepted(delay_ms: float) -> None:
    _core.check_scenario(emubench._ping_links(delay_ms) + "[[flow]]\n", f"ping-{delay_ms}.toml")


def test_the_baseline_has_no_delay_and_the_measured_path_has_20_ms_each_way() -> None:
    assert "delay" not in emubench._ping_links(0)
    assert emubench._ping_links(20).count('delay = "20 ms"') == 2
