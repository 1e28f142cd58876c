"""The review artifact's folder: a writable folder outside the workspace, bound
into the sandbox for the session, and ``review.json`` read back from it.

The folder is bound, not the file: tools write a temporary file and rename it
over the target. What the arm leaves in the folder is the arm's: the artifact is
read through a descriptor of the folder, never following a link and never
opening a special file, and at most one byte past the size limit is read. A
link, a FIFO or a directory in the artifact's place is a reason to refuse it,
not something to follow.
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import NoReturn

from pytest_wfbench.review.artifact import (
    ARTIFACT_NAME,
    MAX_ARTIFACT_BYTES,
    ReviewArtifact,
    ReviewArtifactError,
    render_review,
)
from pytest_wfbench.sandbox import Mount
from pytest_wfbench.workspace import fs

REVIEW_MOUNT = "/review"
"""Where the folder is in the sandbox (the prompt names it)."""
REVIEW_DIR_ENV = "WFBENCH_REVIEW_DIR"
"""The variable that names the folder to a scripted arm's steps and to agent sessions."""
KINDS = {stat.S_IFLNK: "symbolic link (not followed)", stat.S_IFDIR: "directory",
         stat.S_IFIFO: "FIFO (not opened)", stat.S_IFSOCK: "socket (not opened)",
         stat.S_IFCHR: "character device (not opened)", stat.S_IFBLK: "block device (not opened)"}


@dataclass(frozen=True)
class ReviewFolder:
    """A cell's artifact folder on the host (a random name in the cell's own folder,
    beside the workspace, never inside it)."""

    host: Path

    @classmethod
    def create(cls, cell_root: Path) -> ReviewFolder:
        path = cell_root / f"review-{secrets.token_hex(6)}"
        path.mkdir(mode=0o700)
        return cls(path)

    @property
    def mount(self) -> Mount:
        return Mount(self.host, REVIEW_MOUNT, writable=True)

    def write(self, artifact: ReviewArtifact) -> None:
        """The harness writing a scripted arm's review (gold, noop)."""
        fs.write_file(self.host, PurePosixPath(ARTIFACT_NAME), render_review(artifact))


def _fail(reason: str) -> NoReturn:
    raise ReviewArtifactError(reason)


def read_artifact(folder: Path) -> bytes:
    """The bytes of ``folder/review.json``: at most ``MAX_ARTIFACT_BYTES + 1``, so
    that the parser can tell a file over the limit. :class:`ReviewArtifactError`
    with the reason when there is no regular file to read there."""
    try:
        folder_fd = fs.open_root(folder)
    except OSError as error:
        _fail(f"the review folder cannot be opened: {error.strerror}")
    try:
        try:
            info = os.stat(ARTIFACT_NAME, dir_fd=folder_fd, follow_symlinks=False)
        except FileNotFoundError:
            _fail(f"missing: the session left no {ARTIFACT_NAME} in the review folder")
        kind = stat.S_IFMT(info.st_mode)
        if kind != stat.S_IFREG:
            _fail(f"not a regular file: {ARTIFACT_NAME} is a {KINDS.get(kind, 'special file')}")
        # No process of the arm is alive now: what lstat saw stays true.
        file_fd = fs.open_file(ARTIFACT_NAME, folder_fd)
        try:
            if not stat.S_ISREG(os.fstat(file_fd).st_mode):
                _fail(f"not a regular file: {ARTIFACT_NAME}")
            chunks: list[bytes] = []
            remaining = MAX_ARTIFACT_BYTES + 1
            while remaining > 0:
                chunk = os.read(file_fd, min(fs.CHUNK, remaining))
                if not chunk:
                    break
                chunks.append(chunk)
                remaining -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(file_fd)
    except OSError as error:
        _fail(f"{ARTIFACT_NAME} cannot be read: {error.strerror}")
    finally:
        os.close(folder_fd)
