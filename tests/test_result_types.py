"""The TypedDicts of `airlink._types` are the core's result structs: regenerated from their JSON
Schema they give the checked-in module, and what the core returns has their keys."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airlink import _core, _types

ROOT = Path(__file__).resolve().parent.parent
needs_emulation = pytest.mark.skipif(not _core.EMULATION, reason="the emulation results' schemas need the emulator")


def keys_match(value: dict[str, Any], kind: Any, where: str) -> None:
    """``value`` has every key ``kind`` requires and none it does not name."""
    keys = set(value)
    missing = kind.__required_keys__ - keys
    unknown = keys - kind.__required_keys__ - kind.__optional_keys__
    assert not missing and not unknown, f"{where}: missing {sorted(missing)}, unknown {sorted(unknown)}"


@needs_emulation
def test_the_checked_in_module_is_what_the_structs_generate() -> None:
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_result_types.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr


def test_the_generator_refuses_what_it_cannot_type() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_result_types as gen
    finally:
        sys.path.pop(0)
    unsupported = {"roots": {"X": {"$ref": "#/$defs/X"}},
                   "$defs": {"X": {"type": "object", "properties": {"a": {"type": "decimal"}}}}}
    with pytest.raises(ValueError, match="unsupported type"):
        gen.Generator(unsupported).run()
    keyword = {"roots": {"X": {"$ref": "#/$defs/X"}},
               "$defs": {"X": {"type": "object", "properties": {"class": {"type": "string"}}}}}
    with pytest.raises(ValueError, match="not a Python identifier"):
        gen.Generator(keyword).run()
    # Optional fields, nullable types, maps, fixed arrays, enums and untagged unions.
    schema = {"roots": {"Top": {"$ref": "#/$defs/T"}}, "$defs": {
        "T": {"type": "object", "required": ["pair", "kind", "u"],
              "properties": {"pair": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
                             "kind": {"$ref": "#/$defs/K"},
                             "u": {"anyOf": [{"type": "integer"},
                                             {"type": "object", "properties": {"e": {"type": "string"}},
                                              "required": ["e"]}]},
                             "m": {"type": ["object", "null"], "additionalProperties": {"type": "number"}}}},
        "K": {"oneOf": [{"type": "string", "const": "a"}, {"type": "string", "const": "b"}]}}}
    text = gen.Generator(schema).run()
    assert "class Top(TypedDict):" in text
    assert "    pair: tuple[int, int]" in text
    assert "    m: NotRequired[dict[str, float] | None]" in text
    assert 'K: TypeAlias = Literal["a", "b"]' in text
    assert "    u: int | TopUObject" in text
    namespace: dict[str, Any] = {}
    exec(compile(text, "<generated>", "exec"), namespace)
    assert namespace["Top"].__required_keys__ == {"pair", "kind", "u"}
    assert namespace["Top"].__optional_keys__ == {"m"}


def test_a_simulation_summary_has_the_keys_of_RunSummary() -> None:
    text = _core.dumbbell_scenario(10_000_000, 2, 1, 22)
    summary = json.loads(_core.run_summary(text, "dumbbell.toml", 1))
    keys_match(summary, _types.RunSummary, "summary")
    assert summary["flows"] and summary["links"]
    for i, flow in enumerate(summary["flows"]):
        keys_match(flow, _types.FlowSummary, f"flows[{i}]")
    for i, link in enumerate(summary["links"]):
        keys_match(link, _types.LinkSummary, f"links[{i}]")


def test_scenario_keys_are_ScenarioKeys() -> None:
    keys = _core.scenario_keys()
    assert len(keys) > 50
    for k in keys:
        keys_match(dict(k), _types.ScenarioKey, k["key"])


def test_doctor_checks_are_DoctorChecks() -> None:
    checks = _core.doctor()
    assert checks
    for c in checks:
        keys_match(dict(c), _types.DoctorCheck, c["name"])
        assert isinstance(c["ok"], bool) and isinstance(c["required"], bool)


@needs_emulation
def test_timing_model_rows_are_TimingModelRows() -> None:
    rows = _core.timing_model([15_000_000] * 4)
    assert len(rows) == 5
    for r in rows:
        keys_match(dict(r), _types.TimingModelRow, r["name"])
        assert len(r["actual_ns"]) == 4


MISSING = [c["name"] for c in _core.doctor() if c["required"] and not c["ok"]]


@pytest.mark.skipif(bool(MISSING), reason=f"emulation not possible here: {', '.join(MISSING)}")
def test_an_emulation_summary_has_the_keys_of_EmulationSummary(tmp_path: Path) -> None:
    from airlink.emulate import emulate

    scenario = tmp_path / "s.toml"
    scenario.write_text('stop = "20 s"\n[wired]\ndelay = "5 ms"\n[downlink.pipe]\nrate = "10 Mbit/s"\n'
                        '[[flow]]\nprotocol = "tcp"\nbytes = "200 kB"\n', encoding="utf-8")
    res = emulate(scenario, out=tmp_path / "own")
    written = json.loads((tmp_path / "own" / "summary.json").read_text())
    # What was written is what was returned (fixed-size pairs come as tuples, JSON has lists).
    assert written == json.loads(json.dumps(res.summary)) and res.completed
    keys_match(written, _types.EmulationSummary, "summary")
    keys_match(written["flows"][0], _types.FlowSummary, "flows[0]")
    keys_match(written["stack"], _types.StackSummary, "stack")
    assert written["duration_s"] > 0 and written["commands"] == [] and written["interrupted"] is None

    res = emulate(scenario, client="true", out=tmp_path / "commands")
    keys_match(res.summary, _types.EmulationSummary, "summary")
    (command,) = res.summary["commands"]
    keys_match(dict(command), _types.Command, "commands[0]")
    assert command["side"] == "client" and command["exit_code"] == 0 and res.completed

    res = emulate(scenario, client="false", out=tmp_path / "failing")
    assert res.summary["commands"][0]["exit_code"] == 1 and not res.completed
