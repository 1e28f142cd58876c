"""A results file's lines, read in chunks (pytest_wfbench.store.result_lines)."""

from __future__ import annotations

from pathlib import Path

from pytest_wfbench.store import result_lines

CHUNK = 1 << 20


def test_lines_across_chunks_are_the_files_lines_split_at_newlines_only(tmp_path: Path) -> None:
    lines = [b"a" * (CHUNK - 1), b"", b"b" * (2 * CHUNK + 5), "\u2028 line".encode(),
             b"x" * 17, b"y" * (CHUNK - 18), b"z"]
    path = tmp_path / "results.jsonl"
    for tail in (b"", b"\n"):
        content = b"\n".join(lines) + tail
        path.write_bytes(content)
        assert list(result_lines(path)) == lines
        offset = len(lines[0]) + 2
        assert list(result_lines(path, offset)) == lines[2:]
    path.write_bytes(b"")
    assert list(result_lines(path)) == []
    assert list(result_lines(tmp_path / "missing.jsonl")) == []
