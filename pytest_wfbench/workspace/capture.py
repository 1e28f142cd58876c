"""Capture: the harness reads an arm's workspace once, after its session, by
copying it into a tree of its own; judging and evidence work on that copy.

A layered workspace (:mod:`.clone`) is captured as a layer: its upper layer's
entries only (what the arm changed), with overlayfs's whiteouts and opaque
directories kept as such, so the capture costs what the arm changed, not what
the repository holds; :mod:`.layers` reads it over the template.

Directories, regular files (contents and the executable bit) and symlinks (as
links, never followed) are copied through :mod:`.fs`'s no-follow descriptors;
special files and nested repositories' ``.git`` are left out and listed; the
walk stops at bounds of entries, bytes, depth and time, which are the task's
limits (going over one is the arm's failure).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_wfbench.sandbox.overlay import (
    has_overlay_xattrs,
    is_opaque,
    is_whiteout,
    make_opaque,
    make_whiteout,
)
from pytest_wfbench.workspace.fs import (
    CHUNK,
    O_CREATE,
    O_DIR,
    open_file,
    open_relative,
    open_root,
)

GIB = 1 << 30
CACHE_DIRS = frozenset({".pytest_cache", ".mypy_cache", ".ruff_cache"})
ZEROS = bytes(CHUNK)


@dataclass(frozen=True)
class TreeBounds:
    """How much of an arm's tree the harness is willing to read."""

    max_entries: int = 200_000
    max_bytes: int = 4 * GIB
    max_depth: int = 256
    deadline_s: float = 300.0
    summarize_over_bytes: int = 1 << 20
    """Files larger than this are digested while copied, so the evidence can
    summarize them by size and digest instead of putting them in the patch."""


class TreeLimitExceeded(Exception):
    """The tree is beyond a bound: the arm's doing (a counted failure)."""

    def __init__(self, limit: str, value: float, detail: str) -> None:
        super().__init__(detail)
        self.limit = limit
        self.value = value
        self.detail = detail


@dataclass(frozen=True)
class LargeFile:
    path: str
    size: int
    sha256: str
    git_blob: str
    executable: bool


@dataclass
class Capture:
    """What :func:`capture_tree` copied and what it left out, and why."""

    entries: int = 0
    bytes: int = 0
    special_files: list[str] = field(default_factory=list)
    """FIFOs, sockets and devices: never opened, not copied."""
    nested_git: list[str] = field(default_factory=list)
    """``.git`` directories or ``gitdir:`` files below the top: not copied, so the
    nested repository's files show as files and no git command reads them."""
    unshowable: list[str] = field(default_factory=list)
    """Entries git cannot hold in a patch (:func:`git_refuses`): not copied, so the
    oracle does not see what the patch cannot show."""
    large_files: list[LargeFile] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)
    """Every symlink copied, with its target as written."""
    caches_left_out: int = 0
    """Cache folders and bytecode files not captured (CACHE_DIRS, ``__pycache__/*.pyc``)."""
    layered: bool = False
    """The capture is a layer over the template (entries the arm changed), not a tree."""
    whiteouts: list[str] = field(default_factory=list)
    """Layered: entries the arm deleted (or that the capture left out: special
    files), kept as whiteouts so the layer hides the template's there."""
    opaque_dirs: list[str] = field(default_factory=list)
    """Layered: directories that hide the template's entries below them."""


def _copy_data(src_fd: int, dst_fd: int, size: int) -> None:
    """Copy the data regions of a file, keeping its holes: a sparse file costs
    the copy no more than it cost the arm."""
    offset = 0
    try:
        while offset < size:
            try:
                start = os.lseek(src_fd, offset, os.SEEK_DATA)
            except OSError as error:
                if error.errno == errno.ENXIO:  # only a hole is left
                    break
                raise
            end = os.lseek(src_fd, start, os.SEEK_HOLE)
            while start < end:
                copied = os.copy_file_range(src_fd, dst_fd, end - start, start, start)
                if copied == 0:
                    break
                start += copied
            offset = end
        os.ftruncate(dst_fd, size)
    except OSError:
        os.ftruncate(dst_fd, 0)
        _copy_stream(src_fd, dst_fd, size, None)


def _copy_stream(src_fd: int, dst_fd: int, size: int, digests: list[Any] | None) -> None:
    os.lseek(src_fd, 0, os.SEEK_SET)
    os.lseek(dst_fd, 0, os.SEEK_SET)
    remaining = size
    while remaining > 0:
        chunk = os.read(src_fd, min(CHUNK, remaining))
        if not chunk:
            break
        remaining -= len(chunk)
        view = memoryview(chunk)
        while view:
            view = view[os.write(dst_fd, view):]
        for digest in digests or ():
            digest.update(chunk)


def _data_regions(fd: int, size: int) -> list[tuple[int, int]]:
    """Where a file holds data, as (start, end) byte ranges; the rest are holes
    (the whole file where its file system cannot tell)."""
    regions: list[tuple[int, int]] = []
    offset = 0
    try:
        while offset < size:
            try:
                start = os.lseek(fd, offset, os.SEEK_DATA)
            except OSError as error:
                if error.errno == errno.ENXIO:  # only a hole is left
                    break
                raise
            end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
            if start >= end:
                break
            regions.append((start, end))
            offset = end
    except OSError:
        return [(0, size)]
    return regions


def _copy_digested(src_fd: int, dst_fd: int, size: int, digests: list[Any]) -> None:
    """Copy a file's data regions, keeping its holes, and digest its whole content
    (holes read as zeros): a sparse file costs the host no more disk than it
    cost the arm, whatever size it claims."""
    position = 0
    for start, end in _data_regions(src_fd, size):
        _digest_zeros(digests, start - position)
        offset = start
        while offset < end:
            chunk = os.pread(src_fd, min(CHUNK, end - offset), offset)
            if not chunk:
                break
            view = memoryview(chunk)
            written = offset
            while view:
                count = os.pwrite(dst_fd, view, written)
                view, written = view[count:], written + count
            for digest in digests:
                digest.update(chunk)
            offset += len(chunk)
        # A file shorter than it said (it cannot change now: no arm process is
        # left) reads as zeros to its size, as the truncation below makes it.
        _digest_zeros(digests, end - offset)
        position = end
    _digest_zeros(digests, size - position)
    os.ftruncate(dst_fd, size)


def _digest_zeros(digests: list[Any], count: int) -> None:
    while count > 0:
        step = min(count, CHUNK)
        for digest in digests:
            digest.update(ZEROS[:step])
        count -= step


def _copy_file(src_fd: int, dst_fd: int, size: int, digest: bool) -> tuple[str, str] | None:
    """Copy ``size`` bytes; with ``digest``, return the content's sha256 and git blob id."""
    if not digest:
        _copy_data(src_fd, dst_fd, size)
        return None
    sha256 = hashlib.sha256()
    blob = hashlib.sha1(f"blob {size}\0".encode(), usedforsecurity=False)
    _copy_digested(src_fd, dst_fd, size, [sha256, blob])
    return sha256.hexdigest(), blob.hexdigest()


def capture_tree(source: Path, target: Path, bounds: TreeBounds, *,
                 layered: bool = False) -> Capture:
    """Copy the arm's tree at ``source`` into a new directory ``target``:
    directories, regular files (contents and the executable bit) and symlinks
    (as links, never followed). The top-level ``.git`` is left out (the
    harness has its own history of the base), and so are caches judges never
    load; nested repositories' ``.git`` entries and special files are left out
    and listed. ``layered``: ``source`` is an overlay's upper layer, captured as
    a layer (whiteouts and opaque directories kept; a special file left out
    becomes a whiteout). Raises :class:`TreeLimitExceeded` past a bound."""
    capture = Capture(layered=layered)
    started = time.monotonic()
    target.mkdir(mode=0o700)
    src_root = open_root(source)
    dst_root = os.open(target, O_DIR)
    try:
        queue: list[tuple[str, ...]] = [()]
        while queue:
            parts = queue.pop()
            if len(parts) > bounds.max_depth:
                raise TreeLimitExceeded("depth", bounds.max_depth, "the workspace is nested "
                                        f"deeper than {bounds.max_depth} levels")
            if time.monotonic() - started > bounds.deadline_s:
                raise TreeLimitExceeded("time", bounds.deadline_s, "reading the workspace took "
                                        f"over {bounds.deadline_s:g}s")
            src = open_relative(src_root, parts)
            dst = open_relative(dst_root, parts)
            try:
                if layered and is_opaque(src):
                    make_opaque(dst)
                    capture.opaque_dirs.append("/".join(parts))
                with os.scandir(src) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
                for entry in entries:
                    capture.entries += 1
                    if capture.entries > bounds.max_entries:
                        raise TreeLimitExceeded("files", bounds.max_entries, "the workspace "
                                                f"holds more than {bounds.max_entries:,} entries")
                    relative = "/".join((*parts, entry.name))
                    if entry.name == ".git":
                        if parts:
                            capture.nested_git.append(relative)
                        continue
                    info = entry.stat(follow_symlinks=False)
                    mode = info.st_mode
                    if git_refuses(entry.name, mode) and not (layered and is_whiteout(info)):
                        capture.unshowable.append(relative)
                        if layered:
                            make_whiteout(entry.name, dst)
                            capture.whiteouts.append(relative)
                        continue
                    if _cache_entry(entry.name, parts, mode):
                        capture.caches_left_out += 1
                        continue
                    if stat.S_ISDIR(mode):
                        os.mkdir(entry.name, 0o755, dir_fd=dst)
                        queue.append((*parts, entry.name))
                    elif stat.S_ISLNK(mode):
                        link_target = os.readlink(entry.name, dir_fd=src)
                        os.symlink(link_target, entry.name, dir_fd=dst)
                        capture.links.append((relative, link_target))
                    elif stat.S_ISREG(mode):
                        _capture_file(entry.name, relative, info, src, dst, bounds, capture)
                    elif layered and is_whiteout(info):
                        make_whiteout(entry.name, dst)
                        capture.whiteouts.append(relative)
                    else:
                        capture.special_files.append(relative)
                        if layered:
                            make_whiteout(entry.name, dst)
                            capture.whiteouts.append(relative)
            finally:
                os.close(src)
                os.close(dst)
    finally:
        os.close(src_root)
        os.close(dst_root)
    capture.special_files.sort()
    capture.nested_git.sort()
    capture.unshowable.sort()
    capture.whiteouts.sort()
    capture.opaque_dirs.sort()
    return capture


def git_refuses(name: str, mode: int) -> bool:
    """Whether git refuses ``name`` as a path component (``.git`` in any case, a
    link named ``.gitmodules`` in any case): ``git add`` fails on it, ``git
    update-index`` skips it in silence, so no patch can show it. (The harness's
    git takes every other name: core.protectNTFS and core.protectHFS are off.)"""
    folded = name.casefold()
    return folded == ".git" or (stat.S_ISLNK(mode) and folded == ".gitmodules")


def _cache_entry(name: str, parts: tuple[str, ...], mode: int) -> bool:
    """What every test run leaves and judges never load: tools' cache folders and
    bytecode files. Left out of the capture, so the evidence and the oracle see
    the same tree, and no code can hide in it."""
    if stat.S_ISDIR(mode) and name in CACHE_DIRS:
        return True
    return stat.S_ISREG(mode) and "__pycache__" in parts and name.endswith((".pyc", ".pyo"))


def _capture_file(name: str, relative: str, info: os.stat_result, src: int, dst: int,
                  bounds: TreeBounds, capture: Capture) -> None:
    capture.bytes += info.st_size
    if capture.bytes > bounds.max_bytes:
        raise TreeLimitExceeded("disk", bounds.max_bytes, "the workspace holds more than "
                                f"{bounds.max_bytes:,} bytes of files")
    # A plain file is linked, not copied: no process of the arm is left to change
    # it, and the harness replaces rather than writes the files it changes.
    # Files to digest, and unreadable or special-mode ones, are copied.
    plain = info.st_mode & 0o7400 == 0o400 and info.st_size <= bounds.summarize_over_bytes
    if plain and capture.layered:
        # A file that carries overlayfs's attributes (the arm's, escaped, or the
        # copy-up's) is copied without them: the layer is mounted by the oracle.
        file_fd = open_file(name, src)
        try:
            plain = not has_overlay_xattrs(file_fd)
        finally:
            os.close(file_fd)
    if plain:
        try:
            os.link(name, name, src_dir_fd=src, dst_dir_fd=dst, follow_symlinks=False)
            return
        except OSError:
            pass  # another file system, a link limit, protected hardlinks: copy it
    file_fd = open_file(name, src)
    try:
        info = os.fstat(file_fd)
        if not stat.S_ISREG(info.st_mode):
            capture.special_files.append(relative)
            return
        executable = bool(info.st_mode & 0o111)
        out = os.open(name, O_CREATE, 0o755 if executable else 0o644, dir_fd=dst)
        try:
            large = info.st_size > bounds.summarize_over_bytes
            digests = _copy_file(file_fd, out, info.st_size, digest=large)
        finally:
            os.close(out)
        if digests is not None:
            capture.large_files.append(LargeFile(relative, info.st_size, digests[0],
                                                 digests[1], executable))
    finally:
        os.close(file_fd)
