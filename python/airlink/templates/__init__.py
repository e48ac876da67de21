"""Jinja2 templates of airlink's HTML pages (``*.j2`` files beside this module, package data).

``render("report.html.j2", ...)`` fills one; every page extends ``page.html.j2`` (the shared head
and style), so a new report writes a template with ``{% extends "page.html.j2" %}`` and a
``content`` block instead of concatenating HTML strings. Values are escaped unless marked safe
(``markupsafe.Markup``), as tables from ``DataFrame.to_html`` are.
"""

from __future__ import annotations

import functools
from typing import Any

import jinja2


@functools.cache
def environment() -> jinja2.Environment:
    # StrictUndefined: a misspelt name in a template is an error, not an empty string.
    return jinja2.Environment(loader=jinja2.PackageLoader("airlink", "templates"), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=True)


def render(template: str, **context: Any) -> str:
    """The template ``template`` filled with ``context``."""
    return environment().get_template(template).render(**context)
