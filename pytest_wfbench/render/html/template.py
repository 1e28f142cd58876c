"""The Jinja2 side of report.html: the environment (autoescape on, undefined
names are errors) and the one template with its inline style and script.
Imported only when Jinja2 is installed (the ``html`` extra)."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import Any

import jinja2
import markupsafe

from pytest_wfbench import __version__
from pytest_wfbench.render.html.charts import PALETTE
from pytest_wfbench.render.html.page import Page

TEMPLATES = resources.files("pytest_wfbench.render.html") / "templates"


def _resource(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    """A Content-Security-Policy source for exactly this inline text: the
    page's own script and style run, and nothing injected would."""
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def _thousands(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int | float) else str(value)


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: _resource(name)),
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
        lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["thousands"] = _thousands
    return env


def style() -> str:
    swatches = "".join(f".swatch.c{i} {{ background: {colour}; }}\n"
                       for i, colour in enumerate(PALETTE))
    return _resource("report.css") + swatches


def template() -> jinja2.Template:
    return environment().get_template("report.html.j2")


def render_page(page: Page, tables: str, toc: list[tuple[str, str]]) -> str:
    return "".join(page_pieces(page, tables, toc))


def page_pieces(page: Page, tables: str, toc: list[tuple[str, str]]) -> Iterator[str]:
    """The page's text in the pieces the template makes them, as they are made
    (what render_page joins: a large page is never held whole)."""
    css, js = style(), _resource("report.js")
    return template().generate(
        # Our own files, verbatim: escaping would change the bytes the hashes allow.
        page=page, tables=tables, toc=toc, css=markupsafe.Markup(css), js=markupsafe.Markup(js),
        script_hash=_csp_hash(js),
        style_hash=_csp_hash(css), palette_size=len(PALETTE), version=__version__)
