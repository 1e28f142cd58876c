"""Bounded, no-follow file operations on trees an arm controls.

The arm controls every byte, link, special file and directory of its
workspace, and may have changed permission bits. Every operation here goes
through directory file descriptors opened with ``O_NOFOLLOW``, so no symlink is
followed at any component; special files (FIFOs, sockets, devices) are never
opened; deletion (:func:`remove_tree`) keeps the depth it works at constant,
so a tree of any depth goes away. Reading the workspace as a whole is
:mod:`.capture`.

No process of the arm is alive when these run (each sandbox command's PID
namespace dies with it), so what is checked stays true while it is used.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
O_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
O_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
CHUNK = 1 << 20


def _open_dir(name: str, parent_fd: int) -> int:
    """Open a directory entry without following it; fix owner permission bits an
    arm removed (its files are the harness user's) and try once more."""
    try:
        return os.open(name, O_DIR, dir_fd=parent_fd)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=parent_fd)  # a real directory: O_NOFOLLOW passed it
        return os.open(name, O_DIR, dir_fd=parent_fd)


def open_file(name: str, parent_fd: int) -> int:
    try:
        return os.open(name, O_READ, dir_fd=parent_fd)
    except PermissionError:
        os.chmod(name, 0o600, dir_fd=parent_fd)
        return os.open(name, O_READ, dir_fd=parent_fd)


def open_root(path: Path) -> int:
    try:
        return os.open(path, O_DIR)
    except PermissionError:
        os.chmod(path, 0o700, follow_symlinks=False)
        return os.open(path, O_DIR)


def open_relative(root_fd: int, parts: tuple[str, ...]) -> int:
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
