"""The documentation site builds with warnings as errors (`make docs` does the same), its
scenario reference lists every key `airlink keys` knows, and the API pages come from the
docstrings. Here rather than as a `make test` prerequisite so a broken page is one failing test
with mkdocs' messages, next to the others, and `.ci/run` stays exactly `make test`.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        pytest.fail("mkdocs is missing: `make setup` installs the docs extra (pip install -e '.[docs]')")
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    log = p.stdout + p.stderr
    assert p.returncode == 0, log
    assert "WARNING" not in log, log
    return out


def text_of(page: Path) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8"))))


def test_every_page_of_the_nav_is_built(site: Path) -> None:
    for page in ["index.html", "install/index.html", "tutorial/index.html", "howto/sweep/index.html",
                 "howto/trace-link/index.html", "howto/emulate-iperf3/index.html", "howto/reproduce/index.html",
                 "reference/scenario/index.html", "reference/results/index.html", "reference/python/index.html"]:
        assert (site / page).is_file(), page


def test_scenario_reference_lists_every_key_of_the_core(site: Path) -> None:
    from airlink import _core

    page = text_of(site / "reference" / "scenario" / "index.html")
    keys = _core.scenario_keys()
    missing = [k["key"] for k in keys if k["key"] not in page]
    assert not missing, missing
    assert f"{len(keys)} keys" in page
    assert not (REPO / "docs" / "reference" / "scenario.md").exists(), "the reference is generated, not a file"


def test_python_api_comes_from_the_docstrings(site: Path) -> None:
    import airlink.runner

    page = text_of(site / "reference" / "python" / "index.html")
    first_line = airlink.runner.run.__doc__.splitlines()[0]
    assert first_line in page
    assert ":class:" not in page  # reST roles are turned into code
    # doctest blocks are rendered as code, not as quoted text
    assert '<blockquote>\n<blockquote>' not in (site / "reference" / "python" / "index.html").read_text(encoding="utf-8")
