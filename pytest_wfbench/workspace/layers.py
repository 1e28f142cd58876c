"""The tree the harness judges: a folder of its own, or a captured layer over
the template (:mod:`.capture`), read and changed as the merged tree overlayfs
shows.

A layer holds what the arm changed: files, links and directories that
replace the template's, whiteouts (0/0 character devices) where it deleted,
and opaque directories (``user.overlay.opaque``) that hide the template's
entries below them. The layer is the harness's own (made by the capture), so
it holds nothing else; the template is trusted. Every change the judges need
(the test configuration reset to the base, the hidden paths given back) is
made in the layer, the way overlayfs would have made it.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pytest_wfbench.sandbox import Overlay, WorkspaceMount
from pytest_wfbench.sandbox.overlay import is_opaque, is_whiteout, make_opaque, make_whiteout
from pytest_wfbench.workspace import fs

LAYER = "layer"
LOWER = "lower"


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _opaque(path: Path) -> bool:
    fd = os.open(path, fs.O_DIR)
    try:
        return is_opaque(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class JudgedTree:
    """``root``: the harness's folder; with ``lower``, a layer over it."""

    root: Path
    lower: Path | None = None

    @property
    def layered(self) -> bool:
        return self.lower is not None

    def mount(self, mount_dir: Path) -> WorkspaceMount:
        """The tree as a judge's sandbox mounts it (read-only)."""
        if self.lower is None:
            return self.root
        return Overlay(lowers=(self.root, self.lower), mount_dir=mount_dir)

    def locate(self, relative: PurePosixPath) -> tuple[str, Path] | None:
        """Where the merged tree's entry at ``relative`` comes from: the layer or
        the lower tree, or None when the merged tree has none there (reached
        only through real directories: a link on the way is not followed)."""
        parts = relative.parts
        if self.lower is None:
            path = self.root.joinpath(*parts)
            for depth in range(1, len(parts)):
                info = _lstat(self.root.joinpath(*parts[:depth]))
                if info is None or not stat.S_ISDIR(info.st_mode):
                    return None
            return (LAYER, path) if _lstat(path) is not None else None
        lower_hidden = False
        for depth in range(1, len(parts) + 1):
            path = self.root.joinpath(*parts[:depth])
            info = _lstat(path)
            last = depth == len(parts)
            if info is None:
                if lower_hidden:
                    return None
                return _from_lower(self.lower, parts)
            if is_whiteout(info):
                return None
            if stat.S_ISDIR(info.st_mode):
                if last:
                    return LAYER, path
                if _opaque(path):
                    lower_hidden = True
                continue
            return (LAYER, path) if last else None
        return LAYER, self.root

    def read_regular(self, relative: PurePosixPath, limit: int) -> bytes | None:
        found = self.locate(relative)
        if found is None:
            return None
        where, _ = found
        return fs.read_regular(self.root if where == LAYER else _lower(self), relative, limit)

    def real_directories(self, relative: PurePosixPath) -> Path:
        """``relative`` as real directories of the layer: an entry in the way (a
        link, a file, a whiteout) becomes a directory that hides what is below
        it, as overlayfs makes one."""
        if self.lower is None:
            return fs.real_directories(self.root, relative)
        fd = os.open(self.root, fs.O_DIR)
        try:
            for part in relative.parts:
                try:
                    info: os.stat_result | None = os.stat(part, dir_fd=fd,
                                                          follow_symlinks=False)
                except FileNotFoundError:
                    info = None
                replaced = info is not None and not stat.S_ISDIR(info.st_mode)
                if replaced:
                    os.unlink(part, dir_fd=fd)
                if info is None or replaced:
                    os.mkdir(part, 0o755, dir_fd=fd)
                child = os.open(part, fs.O_DIR, dir_fd=fd)
                os.close(fd)
                fd = child
                if replaced:
                    make_opaque(fd)
        finally:
            os.close(fd)
        return self.root / relative

    def remove_entry(self, relative: PurePosixPath) -> bool:
        """Remove the merged tree's entry at ``relative``: the layer's, and a
        whiteout over the lower tree's. Returns whether there was one."""
        found = self.locate(relative)
        if found is None:
            return False
        if self.lower is None or found[0] == LAYER:
            fs.remove_entry(self.root, relative)
        if self.lower is not None and self.locate(relative) is not None:
            parent = self.real_directories(relative.parent)
            fd = os.open(parent, fs.O_DIR)
            try:
                make_whiteout(relative.name, fd)
            finally:
                os.close(fd)
        return True

    def write_file(self, relative: PurePosixPath, content: bytes) -> None:
        """A new regular file at ``relative``, replacing whatever is there."""
        if self.lower is None:
            fs.write_file(self.root, relative, content)
            return
        parent = self.real_directories(relative.parent)
        fs.remove_entry(parent, PurePosixPath(relative.name))
        fs.write_file(parent, PurePosixPath(relative.name), content)

    def put_tree(self, relative: PurePosixPath, source: Path) -> None:
        """Copy the trusted ``source`` (a file or a folder) to ``relative``, which
        must be free (the caller removed what was there)."""
        parent = self.real_directories(relative.parent)
        target = self.root / relative
        if self.lower is not None:
            # A whiteout is no entry of the merged tree, but it takes the name in
            # the layer: the capture leaves one for a special file wherever it was
            # (e.g. a FIFO at a hidden path, which the lower tree never has).
            fd = os.open(parent, fs.O_DIR)
            try:
                info = os.stat(relative.name, dir_fd=fd, follow_symlinks=False)
                if is_whiteout(info):
                    os.unlink(relative.name, dir_fd=fd)
            except FileNotFoundError:
                pass
            finally:
                os.close(fd)
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True)
            if self.lower is not None:
                fd = os.open(target, fs.O_DIR)
                try:
                    make_opaque(fd)
                finally:
                    os.close(fd)
        else:
            shutil.copy2(source, target, follow_symlinks=False)

    def named(self, names: frozenset[str]) -> set[str]:
        """Paths (relative, posix) of every merged entry with one of ``names``,
        outside ``.git`` folders; links to directories are not entered."""
        found = _named(self.root, names, skip_whiteouts=self.lower is not None)
        if self.lower is not None:
            found |= {path for path in _named_in_lower(self.lower, names)
                      if self.locate(PurePosixPath(path)) is not None}
        return found


def _lower(tree: JudgedTree) -> Path:
    assert tree.lower is not None
    return tree.lower


def _from_lower(lower: Path, parts: tuple[str, ...]) -> tuple[str, Path] | None:
    """The lower tree's entry at ``parts``, reached through its real directories."""
    for middle in range(1, len(parts)):
        info = _lstat(lower.joinpath(*parts[:middle]))
        if info is None or not stat.S_ISDIR(info.st_mode):
            return None
    path = lower.joinpath(*parts)
    return (LOWER, path) if _lstat(path) is not None else None


def _named(root: Path, names: frozenset[str], skip_whiteouts: bool) -> set[str]:
    found: set[str] = set()
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        relative = Path(directory).relative_to(root)
        for name in (*files, *dirs):
            if name not in names:
                continue
            if skip_whiteouts and is_whiteout(os.lstat(Path(directory) / name)):
                continue
            found.add((relative / name).as_posix())
    return found


@functools.lru_cache(maxsize=64)
def _named_in_lower(lower: Path, names: frozenset[str]) -> frozenset[str]:
    """The template's entries with those names (trusted, unchanging: once per sweep)."""
    return frozenset(_named(lower, names, skip_whiteouts=False))


def materialize(tree: JudgedTree, target: Path) -> None:
    """Write the merged tree out as a plain folder (for people: a kept workspace)."""
    from pytest_wfbench.workspace.clone import copy_tree

    if tree.lower is None:
        copy_tree(tree.root, target)
        return
    copy_tree(tree.lower, target)
    for directory, dirs, files in os.walk(tree.root):
        relative = Path(directory).relative_to(tree.root)
        for name in list(dirs):
            source, destination = Path(directory) / name, target / relative / name
            if os.path.islink(source):
                continue
            replaced = destination.is_symlink() or (destination.exists()
                                                    and not destination.is_dir())
            if replaced or (_opaque(source) and destination.exists()):
                fs.remove_tree(destination)
            destination.mkdir(exist_ok=True)
        for name in [*files, *(d for d in dirs if os.path.islink(Path(directory) / d))]:
            source, destination = Path(directory) / name, target / relative / name
            if destination.is_symlink() or destination.exists():
                fs.remove_tree(destination)
            if is_whiteout(os.lstat(source)):
                continue
            if os.path.islink(source):
                os.symlink(os.readlink(source), destination)
            else:
                shutil.copy2(source, destination)
