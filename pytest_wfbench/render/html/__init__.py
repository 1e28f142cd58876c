"""report.html: the sweep as one self-contained page (no network: style,
script and charts are inline) with per-arm figures, charts, the task x arm
grid of outcomes, the tool-cost lanes' step times, every cell's detail (error,
stages, steps, sessions with their transcripts as turns, the patch) and
filters by task, arm and outcome.

:func:`render_html` is pure: plain inputs, a string out, the same bytes for the
same inputs. Artifacts reach it only through the reader it is given. Text
from a row or an artifact is autoescaped by the template and bounded per cell
(:mod:`.clip`). Charts are SVG written by :mod:`.charts` (why not a library:
see there). Rendering needs Jinja2, the ``html`` extra; :mod:`.glue` writes the
file at session end when it is installed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pytest_wfbench.aggregate import Summary
from pytest_wfbench.render.html.cell import ReadArtifact
from pytest_wfbench.render.html.glue import (
    HTML_HINT,
    HTML_REPORT,
    HtmlReport,
    html_available,
    prepare_html,
    read_artifacts,
    write_html_report,
)
from pytest_wfbench.render.html.overview import Overview, large, overview_of
from pytest_wfbench.render.markdown import render_markdown

__all__ = [
    "HTML_HINT",
    "HTML_REPORT",
    "HtmlReport",
    "ReadArtifact",
    "html_available",
    "html_pieces",
    "large",
    "no_artifacts",
    "overview_of",
    "prepare_html",
    "read_artifacts",
    "render_html",
    "write_html_report",
]


def no_artifacts(name: str) -> None:
    """A reader with no artifacts: every cell says its patch was not found."""
    return None


def render_html(summary: Summary, rows: Sequence[Mapping[str, Any]],
                provenance: Mapping[str, Any], *,
                promotions: Sequence[Mapping[str, Any]] = (), sections: Sequence[str] = (),
                read_artifact: ReadArtifact = no_artifacts,
                overview: Overview | None = None, markdown: str | None = None) -> str:
    """The whole page. ``rows`` are every row of the sweep (agent and tool-cost
    lanes); ``summary`` is :func:`~pytest_wfbench.aggregate.summarize` of its
    agent rows; ``promotions`` and ``sections`` are what report.md is given, so
    the page's tables state the same facts. A large sweep's page is given its
    ``overview`` (:func:`overview_of` its table) and, as ``rows``, the rows to
    show whole (the overview's ``detailed``). ``markdown`` is report.md when the
    caller has it (else rendered here, from the same inputs). Raises ImportError
    without Jinja2."""
    return "".join(html_pieces(summary, rows, provenance, promotions=promotions,
                               sections=sections, read_artifact=read_artifact,
                               overview=overview, markdown=markdown))


def html_pieces(summary: Summary, rows: Sequence[Mapping[str, Any]],
                provenance: Mapping[str, Any], *,
                promotions: Sequence[Mapping[str, Any]] = (), sections: Sequence[str] = (),
                read_artifact: ReadArtifact = no_artifacts,
                overview: Overview | None = None, markdown: str | None = None) -> Iterator[str]:
    """:func:`render_html`'s page in pieces, made as they are taken (the page's
    data is built here, its text as it is written: see glue.write_html_report)."""
    from pytest_wfbench.render.html.page import build_page
    from pytest_wfbench.render.html.tables import markdown_html, section_titles
    from pytest_wfbench.render.html.template import page_pieces

    if markdown is None:
        markdown = render_markdown(summary, dict(provenance), sections, promotions)
    page = build_page(summary, [dict(r) for r in rows], provenance, read_artifact, overview)
    return page_pieces(page, markdown_html(markdown),
                       [(anchor, title.replace("`", "")) for anchor, title
                        in section_titles(markdown)])
