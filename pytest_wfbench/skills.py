"""Skills under test: installed into the clone, read-only during sessions, and
fingerprinted so any change is caught (SPEC §4)."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path
from typing import Any

from pytest_wfbench.sandbox import Mount
from pytest_wfbench.workspace import fs

SKILLS_DIR = ".claude/skills"


def install_skills(source: Path, workspace: Path, overlay: Path | None = None) -> str:
    """Copy a folder of skills into the clone (and a candidate's overlay over it:
    its files replace those of the same names); returns its fingerprint."""
    target = workspace / SKILLS_DIR
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, symlinks=True)
    if overlay is not None:
        shutil.copytree(overlay, target, symlinks=True, dirs_exist_ok=True)
    return fingerprint(workspace)


MAX_ENTRIES = 10_000
MAX_BYTES = 64 << 20
MAX_DEPTH = 64


def fingerprint(workspace: Path) -> str:
    """A digest of the skills folder as it is now. After a session the folder is
    the arm's (it can swap the read-only mount's parent): it is read without
    following any link, opening no special file, within bounds; a folder past
    them, or unreadable, fingerprints as such, and no installed skills match that."""
    try:
        root = fs.open_root(workspace)
        try:
            try:
                folder = fs.open_relative(root, tuple(SKILLS_DIR.split("/")))
            except FileNotFoundError:
                return "absent"
            try:
                return _digest(folder)
            finally:
                os.close(folder)
        finally:
            os.close(root)
    except (OSError, ValueError) as error:
        return f"unreadable: {error}"


def _digest(folder: int) -> str:
    digest = hashlib.sha256()
    entries = size = 0
    stack: list[tuple[int, str, int]] = [(os.dup(folder), "", 0)]
    try:
        while stack:
            fd, prefix, depth = stack.pop()
            try:
                with os.scandir(fd) as listing:
                    names = sorted((entry.name, entry.stat(follow_symlinks=False).st_mode)
                                   for entry in listing)
                for name, mode in names:
                    entries += 1
                    if entries > MAX_ENTRIES or depth > MAX_DEPTH:
                        raise ValueError("the skills folder is past its bounds")
                    relative = f"{prefix}{name}"
                    if stat.S_ISLNK(mode):
                        digest.update(f"L {relative} {os.readlink(name, dir_fd=fd)}\0".encode())
                    elif stat.S_ISDIR(mode):
                        digest.update(f"D {relative}\0".encode())
                        stack.append((os.open(name, fs.O_DIR, dir_fd=fd), f"{relative}/",
                                      depth + 1))
                    elif stat.S_ISREG(mode):
                        executable = "x" if mode & 0o100 else "-"
                        digest.update(f"F {relative} {executable}\0".encode())
                        size += _read_into(digest, name, fd, MAX_BYTES - size)
                    else:
                        digest.update(f"S {relative}\0".encode())
            finally:
                os.close(fd)
    finally:
        for fd, _, _ in stack:
            os.close(fd)
    return digest.hexdigest()


def _read_into(digest: Any, name: str, folder: int, budget: int) -> int:
    fd = fs.open_file(name, folder)
    try:
        read = 0
        while chunk := os.read(fd, 1 << 20):
            read += len(chunk)
            if read > budget:
                raise ValueError("the skills folder is past its bounds")
            digest.update(chunk)
        return read
    finally:
        os.close(fd)


def read_only_mount(workspace: Path, sandbox_workspace: str) -> Mount:
    """The skills folder bound read-only over the writable workspace."""
    return Mount(workspace / SKILLS_DIR, f"{sandbox_workspace}/{SKILLS_DIR}")
