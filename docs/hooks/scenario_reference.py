"""mkdocs hook: the scenario reference page, generated at build time from the same source as
`airlink keys` (`airlink._core.scenario_keys()`, the schema the Rust core validates against),
so it can never disagree with the build it documents. Nothing is written into docs/.
"""

from __future__ import annotations

from typing import Any

from mkdocs.structure.files import File, Files

PAGE = "reference/scenario.md"

# Sections in the order a scenario file usually has them; any other table follows.
ORDER = ["wired", "downlink", "uplink", "access", "link", "host", "flow", "change", "handoff", "emulation"]
INTRO = {
    "wired": "The wired part of the default path (the server's side), each way.",
    "downlink": "The wireless link towards the client: exactly one of its models (`pipe`, `gprs`, `trace`, `ofdm4g`, `cell`, `wlan`, ...).",
    "uplink": "The link from the client; without it, a symmetric copy of the downlink's capacity and delay.",
    "access": "Optional access links of a dumbbell, one pair per flow.",
    "link": "Links of an explicit topology (`[[link]]`), between named hosts.",
    "flow": "The transfers and streams (`[[flow]]`); `N` stands for a flow's index, as in `--set flow.0.congestion=reno`.",
    "change": "Timed changes (`[[change]]`): a link's rate, delay, loss or state at a given time.",
    "handoff": "Hand-offs of stations between access points.",
    "emulation": "Settings used only by `airlink emulate` (the kernel's congestion control, sysctls, MTU).",
}


def cell(text: Any) -> str:
    """A Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def render(keys: list[dict[str, Any]]) -> str:
    sections: dict[str, list[dict[str, Any]]] = {}
    for k in keys:
        top = k["key"].split(".")[0]
        sections.setdefault(top if "." in k["key"] or k["accepts"] == "a table" else "", []).append(k)
    names = [""] + [s for s in ORDER if s in sections] + sorted(s for s in sections if s and s not in ORDER)
    out = [
        "# Scenario keys",
        "",
        "Every key a scenario file (or `--set KEY=VALUE`, or a dict given to `airlink.run`) accepts:",
        "what it accepts, with units, its default and what it means. This page is generated when",
        "the documentation is built, from the same table as `airlink keys [PREFIX]` prints",
        "(`airlink._core.scenario_keys()`), so it describes exactly the core it was built with.",
        "`N` stands for an index (`flow.0`, `change.2`).",
        "",
        f"{len(keys)} keys.",
        "",
    ]
    for name in names:
        rows = sections.get(name)
        if not rows:
            continue
        out += [f"## `{name}`" if name else "## Top-level keys", ""]
        if name in INTRO:
            out += [INTRO[name], ""]
        out += ["| Key | Accepts | Default | Meaning |", "|---|---|---|---|"]
        for k in rows:
            accepts = "" if k["accepts"] == k["doc"] else cell(k["accepts"])
            default = "" if k["default"] is None else f"`{cell(k['default'])}`"
            out.append(f"| `{k['key']}` | {accepts} | {default} | {cell(k['doc'] or '')} |")
        out.append("")
    return "\n".join(out)


def on_files(files: Files, config: Any) -> Files:
    from airlink import _core

    files.append(File.generated(config, PAGE, content=render(_core.scenario_keys())))
    return files
