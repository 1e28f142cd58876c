"""report.md's sections as HTML, so the page states every fact report.md does
from the same lines. Only the subset the markdown renderers write is read:
headings, tables, bullets, paragraphs, and `code` and **bold** inside them.
Each line is escaped first; the few tags added are fixed ones."""

from __future__ import annotations

import re
from html import escape

CODE = re.compile(r"`([^`]+)`")
BOLD = re.compile(r"\*\*(.+?)\*\*")
CELL_BREAK = re.compile(r"(?<!\\)\|")


def inline(text: str) -> str:
    return _marked(escape(text, quote=True))


def _marked(html: str) -> str:
    """Escaped text with its `code` and **bold** marked up."""
    if "`" in html:  # most cells are figures: no pattern to look for
        html = CODE.sub(r"<code>\1</code>", html)
    return BOLD.sub(r"<strong>\1</strong>", html) if "**" in html else html


def slug(title: str) -> str:
    return "md-" + (re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section")


def _cells(line: str) -> list[str]:
    inner = line.strip()[1:-1] if line.strip().endswith("|") else line.strip()[1:]
    if "\\|" not in inner:  # no escaped bar (most lines): split at every bar
        return [cell.strip() for cell in inner.split("|")]
    return [cell.strip().replace("\\|", "|") for cell in CELL_BREAK.split(inner)]


def _table(lines: list[str]) -> list[str]:
    """A table's lines as HTML. The block is escaped at once (escaping leaves
    ``|``, backslashes and white space alone: its cells are the cells escaped),
    and only a cell with a mark looked at again."""
    rows = escape("\n".join(lines), quote=True).split("\n")
    header, body = _cells(rows[0]), [_cells(line) for line in rows[2:]]
    out = ['<div class="table-wrap"><table class="md"><thead><tr>']
    out += [f"<th>{_marked(cell)}</th>" for cell in header]
    out.append("</tr></thead><tbody>")
    for cells in body:
        out.append("<tr><td>" + "</td><td>".join(
            _marked(cell) if "`" in cell or "**" in cell else cell for cell in cells)
            + "</td></tr>")
    out.append("</tbody></table></div>")
    return out


def markdown_html(text: str, skip: tuple[str, ...] = ()) -> str:
    """The markdown's sections as HTML; ``#`` titles and the ``##`` sections
    named in ``skip`` are left out (the page shows them its own way)."""
    out: list[str] = []
    lines = text.split("\n")
    i, skipping, bullets = 0, False, False
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            skipping = line[3:] in skip
        if skipping or line.startswith("# "):
            i += 1
            continue
        if bullets and not line.startswith("- "):
            out.append("</ul>")
            bullets = False
        if line.startswith("## "):
            out.append(f'<h3 id="{slug(line[3:])}">{inline(line[3:])}</h3>')
        elif line.startswith("### "):
            out.append(f"<h4>{inline(line[4:])}</h4>")
        elif line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            out += _table(block) if len(block) >= 2 else [f"<p>{inline(block[0])}</p>"]
            continue
        elif line.startswith("- "):
            if not bullets:
                out.append("<ul>")
                bullets = True
            out.append(f"<li>{inline(line[2:])}</li>")
        elif line.strip():
            out.append(f"<p>{inline(line)}</p>")
        i += 1
    if bullets:
        out.append("</ul>")
    return "\n".join(out)


def section_titles(text: str, skip: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(anchor, title) of each ``##`` section kept, for the page's navigation."""
    return [(slug(line[3:]), line[3:]) for line in text.split("\n")
            if line.startswith("## ") and line[3:] not in skip]
