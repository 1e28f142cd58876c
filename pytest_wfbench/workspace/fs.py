"""Bounded, no-follow file operations on trees an arm controls.

The arm controls every byte, link, special file and directory of its
workspace, and may have changed permission bits. After its session the
harness reads that tree once, by copying it into a tree of its own
(:func:`capture_tree`); judging and evidence work on that copy. Every
operation here goes through directory file descriptors opened with
``O_NOFOLLOW``, so no symlink is followed at any component; special files
(FIFOs, sockets, devices) are never opened; and walks stop at limits of
entries, bytes, depth and time. Deletion (:func:`remove_tree`) keeps the
depth it works at constant, so a tree of any depth goes away.

No process of the arm is alive when these run (each sandbox command's PID
namespace dies with it), so what is checked stays true while it is used.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
O_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
O_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
CHUNK = 1 << 20
GIB = 1 << 30


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
    large_files: list[LargeFile] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)
    """Every symlink copied, with its target as written."""
    directories: dict[str, list[str]] = field(default_factory=dict)
    """Directory names (by name) where they occur, for the caches the evidence leaves out."""


def _open_dir(name: str, parent_fd: int) -> int:
    """Open a directory entry without following it; fix owner permission bits an
    arm removed (its files are the harness user's) and try once more."""
    try:
        return os.open(name, O_DIR, dir_fd=parent_fd)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=parent_fd)  # a real directory: O_NOFOLLOW passed it
        return os.open(name, O_DIR, dir_fd=parent_fd)


def _open_file(name: str, parent_fd: int) -> int:
    try:
        return os.open(name, O_READ, dir_fd=parent_fd)
    except PermissionError:
        os.chmod(name, 0o600, dir_fd=parent_fd)
        return os.open(name, O_READ, dir_fd=parent_fd)


def _open_root(path: Path) -> int:
    try:
        return os.open(path, O_DIR)
    except PermissionError:
        os.chmod(path, 0o700, follow_symlinks=False)
        return os.open(path, O_DIR)


def _open_relative(root_fd: int, parts: tuple[str, ...]) -> int:
    fd = os.dup(root_fd)
    try:
        for part in parts:
            child = _open_dir(part, fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _copy_file(src_fd: int, dst_fd: int, size: int, digest: bool) -> tuple[str, str] | None:
    """Copy ``size`` bytes; with ``digest``, return the content's sha256 and git blob id."""
    if not digest:
        remaining = size
        try:
            while remaining > 0:
                copied = os.copy_file_range(src_fd, dst_fd, min(remaining, 64 * CHUNK))
                if copied == 0:
                    break
                remaining -= copied
            return None
        except OSError:
            os.lseek(src_fd, 0, os.SEEK_SET)
            os.lseek(dst_fd, 0, os.SEEK_SET)
            os.ftruncate(dst_fd, 0)
    sha256 = hashlib.sha256()
    blob = hashlib.sha1(f"blob {size}\0".encode(), usedforsecurity=False)
    remaining = size
    while remaining > 0:
        chunk = os.read(src_fd, min(CHUNK, remaining))
        if not chunk:
            break
        remaining -= len(chunk)
        view = memoryview(chunk)
        while view:
            view = view[os.write(dst_fd, view):]
        sha256.update(chunk)
        blob.update(chunk)
    return (sha256.hexdigest(), blob.hexdigest()) if digest else None


def capture_tree(source: Path, target: Path, bounds: TreeBounds) -> Capture:
    """Copy the arm's tree at ``source`` into a new directory ``target``:
    directories, regular files (contents and the executable bit) and symlinks
    (as links, never followed). The top-level ``.git`` is left out (the
    harness has its own history of the base); nested repositories' ``.git``
    entries and special files are left out and listed. Raises
    :class:`TreeLimitExceeded` past a bound."""
    capture = Capture()
    started = time.monotonic()
    target.mkdir(mode=0o700)
    src_root = _open_root(source)
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
            src = _open_relative(src_root, parts)
            dst = _open_relative(dst_root, parts)
            try:
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
                    if stat.S_ISDIR(mode):
                        os.mkdir(entry.name, 0o755, dir_fd=dst)
                        queue.append((*parts, entry.name))
                        capture.directories.setdefault(entry.name, []).append(relative)
                    elif stat.S_ISLNK(mode):
                        link_target = os.readlink(entry.name, dir_fd=src)
                        os.symlink(link_target, entry.name, dir_fd=dst)
                        capture.links.append((relative, link_target))
                    elif stat.S_ISREG(mode):
                        _capture_file(entry.name, relative, info.st_size, src, dst, bounds,
                                      capture)
                    else:
                        capture.special_files.append(relative)
            finally:
                os.close(src)
                os.close(dst)
    finally:
        os.close(src_root)
        os.close(dst_root)
    capture.special_files.sort()
    capture.nested_git.sort()
    return capture


def _capture_file(name: str, relative: str, size: int, src: int, dst: int,
                  bounds: TreeBounds, capture: Capture) -> None:
    capture.bytes += size
    if capture.bytes > bounds.max_bytes:
        raise TreeLimitExceeded("disk", bounds.max_bytes, "the workspace holds more than "
                                f"{bounds.max_bytes:,} bytes of files")
    file_fd = _open_file(name, src)
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


def _free_name(dir_fd: int, counter: int) -> str:
    while True:
        name = f".wfbench-removing-{counter}"
        try:
            os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return name
        counter += 1


def _empty_directory(root_fd: int) -> None:
    """Empty a directory whatever it holds. Subdirectories are moved up into it
    before they are emptied, so the walk never goes deeper than one level and
    keeps two descriptors open, however deep the tree."""
    counter = 0
    while True:
        with os.scandir(root_fd) as listing:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in listing]
        if not entries:
            return
        for name, is_dir in entries:
            if not is_dir:
                os.unlink(name, dir_fd=root_fd)
                continue
            os.chmod(name, 0o700, dir_fd=root_fd)
            sub = os.open(name, O_DIR, dir_fd=root_fd)
            try:
                with os.scandir(sub) as listing:
                    children = [(e.name, e.is_dir(follow_symlinks=False)) for e in listing]
                for child, child_is_dir in children:
                    if child_is_dir:
                        os.chmod(child, 0o700, dir_fd=sub)
                        counter += 1
                        hoisted = _free_name(root_fd, counter)
                        os.rename(child, hoisted, src_dir_fd=sub, dst_dir_fd=root_fd)
                    else:
                        os.unlink(child, dir_fd=sub)
            finally:
                os.close(sub)
            os.rmdir(name, dir_fd=root_fd)


def remove_tree(path: Path) -> None:
    """Remove ``path`` (a directory the harness made, or a file) and everything
    under it, without following any link; missing is fine."""
    try:
        parent = os.open(path.parent, O_DIR)
    except FileNotFoundError:
        return
    try:
        try:
            info = os.stat(path.name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(path.name, dir_fd=parent)
            return
        os.chmod(path.name, 0o700, dir_fd=parent)
        fd = os.open(path.name, O_DIR, dir_fd=parent)
        try:
            _empty_directory(fd)
        finally:
            os.close(fd)
        os.rmdir(path.name, dir_fd=parent)
    finally:
        os.close(parent)


def real_directories(root: Path, relative: PurePosixPath | Path) -> Path:
    """``root / relative`` as real directories: any component that is a symlink
    or not a directory is removed and made a directory, so a write below it
    never goes through a link to somewhere else."""
    fd = os.open(root, O_DIR)
    try:
        for part in relative.parts:
            try:
                info = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                info = None
            if info is not None and not stat.S_ISDIR(info.st_mode):
                os.unlink(part, dir_fd=fd)
                info = None
            if info is None:
                os.mkdir(part, 0o755, dir_fd=fd)
            child = _open_dir(part, fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)
    return root / relative


def remove_entry(root: Path, relative: PurePosixPath | Path) -> bool:
    """Remove ``root / relative`` if it really is there: a path that runs through
    a symlink or a file is not inside ``root`` and is left alone. Returns
    whether something was removed."""
    *parents, leaf = relative.parts
    fd = os.open(root, O_DIR)
    try:
        for part in parents:
            try:
                child = _open_dir(part, fd)
            except (FileNotFoundError, NotADirectoryError, OSError):
                return False  # ELOOP (a link), ENOTDIR (a file): nothing real to remove
            os.close(fd)
            fd = child
        try:
            info = os.stat(leaf, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if stat.S_ISDIR(info.st_mode):
            os.chmod(leaf, 0o700, dir_fd=fd)
            sub = os.open(leaf, O_DIR, dir_fd=fd)
            try:
                _empty_directory(sub)
            finally:
                os.close(sub)
            os.rmdir(leaf, dir_fd=fd)
        else:
            os.unlink(leaf, dir_fd=fd)
        return True
    finally:
        os.close(fd)


def write_file(root: Path, relative: PurePosixPath | Path, content: bytes,
               executable: bool = False) -> None:
    """Write ``content`` at ``root / relative`` as a new regular file, replacing
    whatever is there (a link, a directory, a special file) without following it."""
    remove_entry(root, relative)
    parent = real_directories(root, Path(relative).parent)
    fd = os.open(parent, O_DIR)
    try:
        out = os.open(Path(relative).name, O_CREATE, 0o755 if executable else 0o644,
                      dir_fd=fd)
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(out, view):]
        finally:
            os.close(out)
    finally:
        os.close(fd)


def read_regular(root: Path, relative: PurePosixPath | Path, limit: int) -> bytes | None:
    """The bytes of ``root / relative`` if it is a regular file reached without
    any link, up to ``limit`` bytes; None otherwise."""
    *parents, leaf = Path(relative).parts
    fd = os.open(root, O_DIR)
    try:
        for part in parents:
            try:
                child = os.open(part, O_DIR, dir_fd=fd)
            except OSError:
                return None
            os.close(fd)
            fd = child
        try:
            file_fd = os.open(leaf, O_READ, dir_fd=fd)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(file_fd).st_mode):
                return None
            chunks: list[bytes] = []
            remaining = limit
            while remaining > 0:
                chunk = os.read(file_fd, min(CHUNK, remaining))
                if not chunk:
                    break
                chunks.append(chunk)
                remaining -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(file_fd)
    finally:
        os.close(fd)
