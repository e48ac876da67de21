"""Small Markdown and HTML tables for reports (no extra dependency)."""

from __future__ import annotations

import html
from collections.abc import Sequence


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], align_right: Sequence[bool] | None = None) -> str:
    """A GitHub-flavoured Markdown table.

    >>> print(markdown_table(["k", "ratio"], [["1", "99.99 %"]], [True, True]))
    | k | ratio |
    |---:|---:|
    | 1 | 99.99 % |
    """
    right = align_right or [False] * len(header)
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---:" if r else "---" for r in right) + "|",
    ]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def html_table(header: Sequence[str], rows: Sequence[Sequence[str]], css_class: str = "") -> str:
    """An HTML table with escaped cells; a cell PASS or FAIL gets that class for colouring."""
    def cell(tag: str, text: str) -> str:
        cls = f' class="{text.lower()}"' if text in ("PASS", "FAIL") else ""
        return f"<{tag}{cls}>{html.escape(text)}</{tag}>"

    head = "<tr>" + "".join(cell("th", h) for h in header) + "</tr>"
    body = "\n".join("<tr>" + "".join(cell("td", c) for c in row) + "</tr>" for row in rows)
    cls = f' class="{css_class}"' if css_class else ""
    return f"<table{cls}>\n<thead>{head}</thead>\n<tbody>\n{body}\n</tbody>\n</table>"
