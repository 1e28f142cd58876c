"""Writing report.html beside report.md at session end: the one place that
touches the out dir for the page (artifacts read bounded, the page written
through the store so it is redacted like every other file)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_wfbench.aggregate import Summary
from pytest_wfbench.render.html.cell import ReadArtifact
from pytest_wfbench.render.html.overview import overview_of
from pytest_wfbench.store import ARTIFACTS, ResultsStore
from pytest_wfbench.table import Table

HTML_REPORT = "report.html"
HTML_HINT = ("wfbench: no report.html: it needs Jinja2 "
             "(pip install 'pytest-wfbench[html]')")
READ_BYTES = 8 << 20
"""Of an artifact, at most this much of its head and as much of its tail are
read: a 64 MiB transcript costs 16 MiB of memory, and the page says what was
not read."""


def html_available() -> bool:
    """Whether Jinja2 imports (not merely whether it is on the path)."""
    try:
        importlib.import_module("jinja2")
    except ImportError:
        return False
    return True


def prepare_html() -> None:
    """Compile the page's template now (it is compiled once per process, on
    first use): the controller does it while its workers run the cells."""
    if html_available():
        from pytest_wfbench.render.html.template import template

        template()


def read_artifacts(out_dir: Path, limit: int = READ_BYTES) -> ReadArtifact:
    """A reader of ``out_dir``'s artifacts by their names in the rows; None for
    a name outside ``artifacts/``, a missing file or anything but a regular file."""
    root = (out_dir / ARTIFACTS).resolve()

    def read(name: str) -> str | None:
        path = (out_dir / name).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            return None
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size <= 2 * limit:
                data = handle.read()
            else:
                head = handle.read(limit)
                handle.seek(size - limit)
                data = (head + f"\n[wfbench: {size - 2 * limit:,} bytes of this artifact "
                        "were not read]\n".encode() + handle.read(limit))
        return data.decode("utf-8", "replace")

    return read


@dataclass(frozen=True)
class HtmlReport:
    """What became of report.html, and the terminal's line about it."""

    path: Path | None
    line: str
    failed: bool = False


def write_html_report(store: ResultsStore, summary: Summary, rows: Sequence[Mapping[str, Any]],
                      provenance: Mapping[str, Any], *, sections: Sequence[str] = (),
                      promotions: Sequence[Mapping[str, Any]] = (),
                      table: Table | None = None,
                      markdown: str | None = None) -> HtmlReport:
    """report.html in the store's out dir, when Jinja2 is installed. A failure
    to render is reported, not raised: report.md and the rows are written
    already, and the sweep's outcome does not hang on its page."""
    if not html_available():
        return HtmlReport(None, HTML_HINT)
    from pytest_wfbench.render.html import html_pieces

    try:
        overview = None
        if table is not None:  # a large sweep: see pytest_wfbench.render.html.overview
            from pytest_wfbench.render.html.page import DISTRIBUTIONS

            overview = overview_of(table, [name for name, _ in DISTRIBUTIONS])
            rows = overview.detailed
        pieces = html_pieces(summary, rows, provenance, promotions=promotions,
                             sections=sections, read_artifact=read_artifacts(store.out_dir),
                             overview=overview, markdown=markdown)
        # Written as it is made (a page of 100,000 cells is 10 MB of text, and
        # its pieces several times that), in place of the old page only when whole.
        path = store.write_pieces(HTML_REPORT, pieces)
    except Exception as error:  # a bug here must not cost the sweep its other outputs
        return HtmlReport(None, f"wfbench: report.html was not written (a bug in "
                                f"pytest-wfbench, please report it): {type(error).__name__}: "
                                f"{error}", failed=True)
    return HtmlReport(path, f"wfbench html:   {path}")
