"""A patch as lines classified for highlighting (header, hunk, addition,
deletion, context), bounded: enough for CSS to colour a diff, no lexer."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_wfbench.render.html.clip import clip, clip_items

HEADER_PREFIXES = ("diff --git ", "index ", "--- ", "+++ ", "new file mode", "deleted file mode",
                   "old mode", "new mode", "similarity index", "rename from", "rename to",
                   "copy from", "copy to", "Binary files", "GIT binary patch")
MAX_LINE_CHARS = 400


@dataclass(frozen=True)
class DiffLine:
    kind: str
    """``header``, ``hunk``, ``add``, ``del``, ``context`` or ``note`` (the
    harness's own words: a cut, a summary of what a diff cannot show)."""
    text: str


@dataclass(frozen=True)
class Diff:
    lines: list[DiffLine]
    cut_lines: int
    """Lines of the patch left out in the middle."""
    total_lines: int
    """Of the whole patch."""
    cut_chars: int = 0
    """Characters of the patch left out in the middle (a patch of few, long lines)."""


def line_kind(line: str, in_header: bool) -> str:
    if line.startswith("@@"):
        return "hunk"
    if in_header and line.startswith(HEADER_PREFIXES):
        return "header"
    if line.startswith("diff --git "):
        return "header"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    if line.startswith(("\\ No newline", "[wfbench", "[... ")):
        return "note"
    return "context"


def classify(patch: str, chars: int = 80_000, head: int = 1200, tail: int = 300) -> Diff:
    """The patch's lines with their kinds: at most ``chars`` characters, and
    of those the first ``head`` and last ``tail`` lines, with notes where it was
    cut; every line cut at :data:`MAX_LINE_CHARS` (a minified file is one line)."""
    total = patch.count("\n") + (0 if patch.endswith("\n") or not patch else 1)
    clipped = clip(patch, chars)
    raw = clipped.text.split("\n")
    if raw and raw[-1] == "":
        raw.pop()
    classified: list[DiffLine] = []
    in_header = False
    for line in raw:
        kind = line_kind(line, in_header)
        # A file's header runs from "diff --git" to its first hunk: only there
        # do "--- a/x" and "+++ b/x" name files rather than change lines.
        if kind == "header" and line.startswith("diff --git "):
            in_header = True
        elif kind == "hunk":
            in_header = False
        if len(line) > MAX_LINE_CHARS:
            line = f"{line[:MAX_LINE_CHARS]} [... {len(line) - MAX_LINE_CHARS:,} characters cut]"
        classified.append(DiffLine(kind, line))
    first, last, cut = clip_items(classified, head, tail)
    if cut:
        first.append(DiffLine("note", f"[... {cut:,} lines of the patch cut ...]"))
    return Diff(lines=first + last, cut_lines=cut, total_lines=total, cut_chars=clipped.cut)
