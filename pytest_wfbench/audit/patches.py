"""Unified diffs for the audit's arms: a gold patch read as file sections, and
one file's change rendered as a section ``git apply`` takes. Pure; no I/O.

A probe or a mutant is the gold patch with one file's section rendered anew
(from the base text to a changed gold text) and the other sections kept as the
gold patch writes them, so binary files, modes and renames pass through.
"""

from __future__ import annotations

import codecs
import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
# Extended header lines a rendered section keeps from the gold patch's own.
KEPT_HEADER = ("old mode ", "new mode ", "new file mode ", "deleted file mode ",
               "similarity index ", "rename from ", "rename to ", "copy from ", "copy to ")
NO_NEWLINE = "\\ No newline at end of file\n"
DEFAULT_MODE = "100644"
TEST_FOLDERS = frozenset({"tests", "test", "testing"})


@dataclass(frozen=True)
class FileSection:
    """One file of a git patch, as written."""

    old_path: str | None
    """Its path before the patch; None when the patch adds it."""
    new_path: str | None
    """Its path after the patch; None when the patch deletes it."""
    text: str
    """The section verbatim, from its ``diff --git`` line (or ``---``) to its last hunk."""
    header: tuple[str, ...]
    """Its extended header lines (modes, renames, index), without line ends."""
    added_lines: frozenset[int]
    """The new-side numbers of its ``+`` lines: what the patch added or changed."""
    binary: bool = False

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""


def looks_like_test(path: str) -> bool:
    """Whether a path looks like tests: under tests/ (or test/, testing/), a
    ``test_*.py`` or ``*_test.py`` file, or a ``conftest.py``."""
    pure = PurePosixPath(path)
    name = pure.name
    return (bool(TEST_FOLDERS & set(pure.parts[:-1])) or name == "conftest.py"
            or (name.startswith("test_") and name.endswith(".py")) or name.endswith("_test.py"))


def split_lines(text: str) -> list[str]:
    """Lines as git and Python count them: ended by "\\n" only, each keeping its end."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def unquote(path: str) -> str:
    """A path as git writes it: C-quoted when it holds odd characters."""
    if len(path) >= 2 and path.startswith('"') and path.endswith('"'):
        raw = codecs.escape_decode(path[1:-1].encode("utf-8", "surrogateescape"))[0]
        return raw.decode("utf-8", "surrogateescape")
    return path


def quote(path: str) -> str:
    """A path the way git writes it (quoted when it holds control characters,
    quotes, backslashes or non-ASCII letters), so ``git apply`` reads it back."""
    if all(" " <= char < "\x7f" and char not in '"\\' for char in path):
        return path
    escaped = []
    for byte in path.encode("utf-8", "surrogateescape"):
        char = chr(byte)
        if char in '"\\':
            escaped.append("\\" + char)
        elif " " <= char < "\x7f":
            escaped.append(char)
        else:
            escaped.append({"\t": "\\t", "\n": "\\n"}.get(char, f"\\{byte:03o}"))
    return '"' + "".join(escaped) + '"'


def _side(line: str) -> str | None:
    """The path of a ``--- a/x`` or ``+++ b/x`` line; None for /dev/null."""
    name = line[4:].rstrip("\n")
    if "\t" in name and not name.startswith('"'):
        name = name.split("\t", 1)[0]  # diff -u writes a date after a tab
    name = unquote(name.strip())
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith(("a/", "b/")) else name


def _git_header_paths(rest: str) -> tuple[str, str]:
    """The two paths of ``diff --git a/<old> b/<new>`` (used when no ---/+++
    lines name them: mode changes, pure renames, binary files)."""
    if rest.startswith('"') or rest.endswith('"'):
        names = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', rest)
        if len(names) == 2:
            old, new = (unquote(name) for name in names)
            return old[2:], new[2:]
    half = (len(rest) - 5) // 2  # "a/X b/X": the usual case, same name twice
    if half > 0 and rest[2:2 + half] == rest[5 + half:] and rest[2 + half:5 + half] == " b/":
        return rest[2:2 + half], rest[5 + half:]
    cut = rest.rfind(" b/")
    return rest[2:cut], rest[cut + 3:]


class _Section:
    """A section being read."""

    def __init__(self, first: str) -> None:
        self.lines = [first]
        self.header: list[str] = []
        self.old: str | None = ""
        self.new: str | None = ""
        self.added: set[int] = set()
        self.binary = False
        self.named = False
        if first.startswith("diff --git "):
            self.old, self.new = _git_header_paths(first[len("diff --git "):].rstrip("\n"))

    def finish(self) -> FileSection:
        old, new = self.old, self.new
        for line in self.header:
            if line.startswith("new file mode "):
                old = None
            elif line.startswith("deleted file mode "):
                new = None
            elif line.startswith(("rename from ", "copy from ")):
                old = unquote(line.split(" from ", 1)[1])
            elif line.startswith(("rename to ", "copy to ")):
                new = unquote(line.split(" to ", 1)[1])
        return FileSection(old_path=old or None, new_path=new or None, text="".join(self.lines),
                           header=tuple(self.header), added_lines=frozenset(self.added),
                           binary=self.binary)


def split_patch(patch: str) -> list[FileSection]:
    """The file sections of a git (or ``diff -u``) patch, in its order. Inside a
    hunk every line is content, whatever it starts with; text before the first
    section and after a section's last hunk (mail headers, signatures) is left out."""
    sections: list[FileSection] = []
    current: _Section | None = None
    old_left = new_left = number = 0
    in_hunks = False
    lines = split_lines(patch)
    for index, line in enumerate(lines):
        if current is not None and (old_left > 0 or new_left > 0):
            current.lines.append(line)
            if line.startswith("+"):
                current.added.add(number)
                number, new_left = number + 1, new_left - 1
            elif line.startswith("-"):
                old_left -= 1
            elif not line.startswith("\\"):
                number, old_left, new_left = number + 1, old_left - 1, new_left - 1
            continue
        if current is not None and line.startswith("\\"):
            current.lines.append(line)  # "\ No newline at end of file" after the last line
            continue
        plain_start = (line.startswith("--- ") and index + 1 < len(lines)
                       and lines[index + 1].startswith("+++ ")
                       and (current is None or in_hunks or current.named))
        if line.startswith("diff --git ") or plain_start:
            if current is not None:
                sections.append(current.finish())
            current, in_hunks = _Section(line), False
            if not plain_start:
                continue
        if current is None:
            continue
        match = HUNK.match(line)
        if match:
            in_hunks = True
            current.lines.append(line)
            old_left = int(match.group(1) or 1)
            number = int(match.group(2))
            new_left = int(match.group(3) or 1)
        elif in_hunks and not current.binary:
            continue  # after the last hunk: not part of the file
        elif line.startswith(("--- ", "+++ ")) and not current.binary:
            current.lines.append(line)
            side = _side(line)
            if line.startswith("--- "):
                current.old = side
            else:
                current.new, current.named = side, True
        else:
            current.lines.append(line)
            if line.startswith(("GIT binary patch", "Binary files ")):
                current.binary = True
            elif not current.binary:
                current.header.append(line.rstrip("\n"))
    if current is not None:
        sections.append(current.finish())
    return sections


def _mode_lines(header: Sequence[str], added: bool, deleted: bool) -> list[str]:
    kept = [line + "\n" for line in header if line.startswith(KEPT_HEADER)]
    if added and not any(line.startswith("new file mode ") for line in kept):
        kept.insert(0, f"new file mode {DEFAULT_MODE}\n")
    if deleted and not any(line.startswith("deleted file mode ") for line in kept):
        kept.insert(0, f"deleted file mode {DEFAULT_MODE}\n")
    return kept


def render_file_diff(old_path: str | None, new_path: str | None, before: str, after: str,
                     header: Sequence[str] = ()) -> str:
    """One file's section, from ``before`` (at ``old_path``; None: the file is
    new) to ``after`` (at ``new_path``; None: the file is deleted), keeping the
    mode and rename lines of ``header``. Empty when nothing changes."""
    if old_path is None and new_path is None:
        raise ValueError("a file section needs at least one path")
    old_name = old_path if old_path is not None else new_path
    new_name = new_path if new_path is not None else old_path
    assert old_name is not None and new_name is not None
    modes = _mode_lines(header, old_path is None, new_path is None)
    if before == after and not modes and old_name == new_name:
        return ""
    hunks = list(difflib.unified_diff(
        split_lines(before), split_lines(after),
        "/dev/null" if old_path is None else quote(f"a/{old_name}"),
        "/dev/null" if new_path is None else quote(f"b/{new_name}"), n=3))
    out = [f"diff --git {quote('a/' + old_name)} {quote('b/' + new_name)}\n", *modes]
    for line in hunks:
        out.append(line if line.endswith("\n") else line + "\n" + NO_NEWLINE)
    return "".join(out)


def assemble(sections: Iterable[FileSection], replaced: Mapping[str, str],
             base: Mapping[str, str]) -> str:
    """The patch of ``sections``, where each file whose new path is in
    ``replaced`` is rendered anew, from its base text to the replacement."""
    parts = []
    for section in sections:
        if section.new_path is not None and section.new_path in replaced:
            before = "" if section.old_path is None else base.get(section.old_path, "")
            parts.append(render_file_diff(section.old_path, section.new_path, before,
                                          replaced[section.new_path], section.header))
        else:
            parts.append(section.text if section.text.endswith("\n") else section.text + "\n")
    return "".join(parts)
