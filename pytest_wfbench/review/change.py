"""The change under review: the files and lines a unified diff touches, and
whether it applies to a work tree.

:func:`parse_change` is pure. It reads the diff the way ``git apply`` does (``-p1``:
the first component of each path is dropped, ``a/`` and ``b/`` by default), counts
every hunk line so that content looking like a header is never taken for one, and
gives, per path, the line ranges the change put there: for the scorer's grounded
evidence (a finding is grounded when it points at lines the change touched).
:func:`check_change_applies` runs ``git apply --check`` with the flags the harness
applies patches with.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pytest_wfbench.git import GitError, run_git

# How the harness applies a patch (the gold arm, the oracle's calibration): the same
# flags check a review task's change, so "applies" means the same thing everywhere.
APPLY_ARGS = ("apply", "--whitespace=nowarn")
DEV_NULL = "/dev/null"
HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
MAX_REASON_CHARS = 2000
Range = tuple[int, int]
"""Lines ``start`` to ``end`` inclusive, numbered from 1."""


class ChangeError(Exception):
    """A change patch cannot be read, or does not apply; the message says why."""


@dataclass(frozen=True)
class ChangedFile:
    """One file of a change."""

    path: str
    """The file's path after the change (before it, for a deleted file)."""
    old_path: str | None
    """Its path before the change; None for an added file."""
    status: str
    """``added``, ``modified``, ``deleted``, ``renamed`` or ``copied``."""
    ranges: tuple[Range, ...]
    """Lines of the new file that the change added, and the two lines around each
    place where it only removed lines; for a deleted file, its removed lines (there
    is no new file to point at). Sorted, merged, empty for binary files and for
    renames or mode changes without content change."""
    binary: bool = False


@dataclass(frozen=True)
class Change:
    """What a unified diff touches."""

    files: tuple[ChangedFile, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the change touches, before and after it (renames: both), sorted."""
        touched = {changed.path for changed in self.files}
        touched |= {changed.old_path for changed in self.files if changed.old_path}
        return tuple(sorted(touched))

    @property
    def changed_ranges(self) -> dict[str, tuple[Range, ...]]:
        """Path -> its changed line ranges (see :attr:`ChangedFile.ranges`)."""
        by_path: dict[str, list[Range]] = {}
        for changed in self.files:
            by_path.setdefault(changed.path, []).extend(changed.ranges)
        return {path: merge_ranges(ranges) for path, ranges in sorted(by_path.items())}


def merge_ranges(ranges: Iterable[Range]) -> tuple[Range, ...]:
    """Sorted ranges with overlapping and adjacent ones joined."""
    merged: list[Range] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return tuple(merged)


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(text: str) -> tuple[str, str]:
    """A C-quoted name as git writes it (``"t\\303\\251st"``) and the rest of the text."""
    out = bytearray()
    i = 1
    while i < len(text):
        char = text[i]
        if char == '"':
            return out.decode("utf-8", "surrogateescape"), text[i + 1:]
        if char == "\\" and i + 1 < len(text):
            following = text[i + 1]
            if following in _ESCAPES:
                out.append(_ESCAPES[following])
                i += 2
                continue
            if re.match(r"[0-7]{3}", text[i + 1:i + 4]):
                out.append(int(text[i + 1:i + 4], 8) & 0xFF)
                i += 4
                continue
            raise ChangeError(f"bad escape \\{following} in the quoted name {text!r}")
        out += char.encode("utf-8", "surrogateescape")
        i += 1
    raise ChangeError(f"unterminated quoted name {text!r}")


def _strip_component(name: str) -> str:
    """``-p1``: the first path component goes (``a/x.py`` -> ``x.py``)."""
    if name == DEV_NULL:
        return name
    if "/" not in name:
        raise ChangeError(f"the name {name!r} has no directory component to strip (-p1)")
    return name.split("/", 1)[1]


def _header_name(text: str) -> str:
    """The name on a ``---``/``+++`` line: quoted, or up to a tab (a timestamp follows)."""
    if text.startswith('"'):
        name, _ = _unquote(text)
        return name
    return text.split("\t", 1)[0].rstrip("\r")


def _git_header_names(rest: str) -> tuple[str, str] | None:
    """The two names of ``diff --git <a> <b>``, when they can be told apart."""
    if rest.startswith('"'):
        first, tail = _unquote(rest)
        tail = tail.lstrip(" ")
        second = _unquote(tail)[0] if tail.startswith('"') else tail
        return first, second
    # Unquoted names may hold spaces: without a rename both sides are the same
    # name, so split where the halves (first component stripped) agree.
    for index, char in enumerate(rest):
        if char == " ":
            first, second = rest[:index], rest[index + 1:]
            if "/" in first and "/" in second and first.split("/", 1)[1] == second.split("/", 1)[1]:
                return first, second
    return None


class _FileBlock:
    """A file of the diff while it is being read."""

    def __init__(self, line_no: int) -> None:
        self.line_no = line_no
        self.old: str | None = None
        self.new: str | None = None
        self.status: str | None = None
        self.rename_from: str | None = None
        self.rename_to: str | None = None
        self.binary = False
        self.hunks = 0
        self.new_lines: list[Range] = []
        self.old_lines: list[Range] = []

    def finish(self) -> ChangedFile:
        old, new = self.old, self.new
        if self.rename_from is not None:
            old = self.rename_from
        if self.rename_to is not None:
            new = self.rename_to
        if old is None and new is None:
            raise ChangeError(f"line {self.line_no}: a file header names no file")
        status = self.status
        if old == DEV_NULL or (status is None and old is None):
            status, old = "added", None
        elif new == DEV_NULL or status == "deleted":
            status = "deleted"
        elif status is None:
            status = "renamed" if old != new else "modified"
        if status == "deleted":
            path = old if old not in (None, DEV_NULL) else new
            assert path is not None
            return ChangedFile(path, path, status, merge_ranges(self.old_lines), self.binary)
        assert new is not None and new != DEV_NULL
        return ChangedFile(new, old, status, merge_ranges(self.new_lines), self.binary)


def _read_hunk(lines: list[str], start: int, block: _FileBlock) -> int:
    """Read the hunk whose header is ``lines[start]``; return the index after it."""
    match = HUNK_RE.match(lines[start])
    if match is None:
        raise ChangeError(f"line {start + 1}: malformed hunk header {lines[start][:80]!r}")
    old_line, new_line = int(match.group(1)), int(match.group(3))
    old_left = int(match.group(2)) if match.group(2) is not None else 1
    new_left = int(match.group(4)) if match.group(4) is not None else 1
    old_line, new_line = max(old_line, 1), max(new_line, 1)
    block.hunks += 1
    index = start + 1
    removing = False
    added_since_removal = False
    while old_left > 0 or new_left > 0:
        if index >= len(lines):
            raise ChangeError(f"line {start + 1}: the hunk ends before its "
                              f"{old_left} old and {new_left} new lines")
        line = lines[index]
        marker = line[:1]
        if marker in (" ", "") or line == "\r":  # an empty line: context whose blank was cut
            if removing and not added_since_removal:
                block.new_lines.append(_removal_point(new_line))
            removing = added_since_removal = False
            old_left, new_left = old_left - 1, new_left - 1
            old_line, new_line = old_line + 1, new_line + 1
        elif marker == "-":
            block.old_lines.append((old_line, old_line))
            removing = True
            old_left, old_line = old_left - 1, old_line + 1
        elif marker == "+":
            block.new_lines.append((new_line, new_line))
            added_since_removal = True
            new_left, new_line = new_left - 1, new_line + 1
        elif marker != "\\":  # "\ No newline at end of file" counts on neither side
            raise ChangeError(f"line {index + 1}: unexpected line in a hunk {line[:80]!r}")
        if old_left < 0 or new_left < 0:
            raise ChangeError(f"line {start + 1}: the hunk has more lines than its header says")
        index += 1
    if removing and not added_since_removal:
        block.new_lines.append(_removal_point(new_line))
    while index < len(lines) and lines[index].startswith("\\"):
        index += 1
    return index


def _removal_point(new_line: int) -> Range:
    """Lines were only removed just before ``new_line``: the lines on either side."""
    return (max(new_line - 1, 1), max(new_line, 1))


def parse_change(patch: bytes | str) -> Change:
    """The files and changed lines of a unified diff (git's or plain ``diff -u``).

    Raises :class:`ChangeError` for a diff that is malformed or changes nothing."""
    text = patch.decode("utf-8", "surrogateescape") if isinstance(patch, bytes) else patch
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    blocks: list[_FileBlock] = []
    block: _FileBlock | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("diff --git "):
            block = _FileBlock(index + 1)
            blocks.append(block)
            names = _git_header_names(line[len("diff --git "):].rstrip("\r"))
            if names is not None:
                block.old, block.new = (_strip_component(name) for name in names)
        elif line.startswith("--- ") and index + 1 < len(lines) and lines[index + 1].startswith(
                "+++ "):
            if block is None or block.hunks or block.binary:  # a plain diff's next file
                block = _FileBlock(index + 1)
                blocks.append(block)
            block.old = _strip_component(_header_name(line[4:]))
            block.new = _strip_component(_header_name(lines[index + 1][4:]))
            index += 1
        elif line.startswith("@@ "):
            if block is None:
                raise ChangeError(f"line {index + 1}: a hunk before any file header")
            index = _read_hunk(lines, index, block)
            continue
        elif block is not None and not block.hunks:
            _extended_header(line, block)
        index += 1
    if not blocks:
        raise ChangeError("not a unified diff: no file header ('diff --git' or '---'/'+++')")
    return Change(tuple(block.finish() for block in blocks))


def _extended_header(line: str, block: _FileBlock) -> None:
    """git's lines between ``diff --git`` and the first hunk."""
    line = line.rstrip("\r")
    if line.startswith("new file mode"):
        block.status = "added"
        block.old = DEV_NULL
    elif line.startswith("deleted file mode"):
        block.status = "deleted"
    elif line.startswith(("rename from ", "copy from ")):
        block.rename_from = _header_name(line.split(" ", 2)[2])
        block.status = "renamed" if line.startswith("rename") else "copied"
    elif line.startswith(("rename to ", "copy to ")):
        block.rename_to = _header_name(line.split(" ", 2)[2])
    elif line.startswith(("Binary files ", "GIT binary patch")):
        block.binary = True


def check_change_applies(worktree: Path, patch: bytes, *, timeout_s: float = 60.0) -> None:
    """Raise :class:`ChangeError` with git's reason unless ``patch`` applies to the
    files of ``worktree`` (``git apply --check``, nothing is changed)."""
    try:
        result = run_git([*APPLY_ARGS, "--check", "-"], cwd=worktree, stdin=patch, check=False,
                         timeout_s=timeout_s)
    except GitError as error:
        raise ChangeError(str(error)) from error
    if result.returncode != 0:
        reason = result.stderr.decode("utf-8", "replace").strip() or f"exit {result.returncode}"
        raise ChangeError(f"the change does not apply: {reason[:MAX_REASON_CHARS]}")
