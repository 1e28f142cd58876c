"""The parse cache: a task file's composed and converted tree of nodes, kept in
the cache dir so that a second load of the same file (every xdist worker, the
next sweep) skips PyYAML.

Only the parsing is cached. An entry is found by the digest of the file's bytes
(with the harness's version and everything else that could change what a parse
gives), so an edited file is parsed again, never served stale; every check of
:mod:`pytest_wfbench.tasks.load` still runs on the tree, file-system checks
included. An entry is the tree as plain tuples, dicts and lists in ``marshal``
(never pickle: nothing but data is ever loaded), behind a digest of its own: a
torn or corrupted entry is ignored, and parsing writes it again. A file whose
values ``marshal`` cannot hold (a YAML timestamp) is simply not cached.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import secrets
import sys
from pathlib import Path

import yaml

from pytest_wfbench import __version__
from pytest_wfbench.tasks.reader import COMPOSER, Encoded

FORMAT = 1
"""The entry layout: a change here must change every key."""
MAGIC = b"wfbench-tree\x00\x01"
KEEP = 64
"""Entries kept (the most recently used): a suite's files, in a few versions."""
SUFFIX = ".tree"

def _parser_identity() -> bytes:
    """What besides the file's bytes decides the tree: this harness, the YAML
    library and its composer, the interpreter's marshal format."""
    return (f"{__version__}\0{FORMAT}\0{yaml.__version__}\0{COMPOSER.__name__}\0"
            f"{sys.version_info[:2]}\0{marshal.version}\0").encode()


class ParseCache:
    """Entries in ``folder``, shared by concurrent processes: each entry is
    written whole (a temporary file renamed over it) and read only when its
    digest holds."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._identity = _parser_identity()

    def key(self, data: bytes) -> str:
        return hashlib.sha256(self._identity + data).hexdigest()

    def path(self, key: str) -> Path:
        return self.folder / f"{key}{SUFFIX}"

    def get(self, key: str) -> Encoded | None:
        """The encoded tree of the file whose key this is, or None (no entry, or
        an entry that does not check out)."""
        path = self.path(key)
        try:
            blob = path.read_bytes()
        except OSError:
            return None
        head, digest, payload = blob[:len(MAGIC)], blob[len(MAGIC):len(MAGIC) + 32], \
            blob[len(MAGIC) + 32:]
        if head != MAGIC or hashlib.sha256(payload).digest() != digest:
            return None
        try:
            encoded = marshal.loads(payload)
        except (ValueError, EOFError, TypeError):
            return None
        if not (isinstance(encoded, tuple) and len(encoded) == 2
                and isinstance(encoded[0], int)):
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: kept the longest
        return encoded

    def put(self, key: str, encoded: Encoded) -> None:
        """Keep ``encoded`` as the tree of this key's file. Failing to (a read-only
        cache dir, a value marshal cannot hold) costs only the next parse."""
        try:
            payload = marshal.dumps(encoded)
        except ValueError:
            return
        blob = MAGIC + hashlib.sha256(payload).digest() + payload
        temporary = self.folder / f".{key}.{secrets.token_hex(4)}.tmp"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(blob)
            os.replace(temporary, self.path(key))
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink()
            return
        self._evict(keep=key)

    def _evict(self, keep: str) -> None:
        """Remove the least recently used entries beyond KEEP."""
        entries = []
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.folder):
                if entry.name.endswith(SUFFIX) and entry.name != f"{keep}{SUFFIX}":
                    with contextlib.suppress(OSError):
                        entries.append((entry.stat().st_mtime, entry.path))
        entries.sort(reverse=True)
        for _, old in entries[KEEP - 1:]:
            with contextlib.suppress(OSError):
                os.unlink(old)


def parse_cache(cache_dir: Path | None) -> ParseCache | None:
    """The parse cache of a cache dir (--wfbench-cache-dir); None keeps nothing."""
    return ParseCache(cache_dir / "tasks") if cache_dir is not None else None
