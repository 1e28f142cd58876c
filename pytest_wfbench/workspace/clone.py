"""The clone: a private workspace for one cell (SPEC §3, step 2).

Layered (the default where the kernel allows it): the template is the lower
layer of an overlay whose upper layer is the cell's own, so a clone costs the
same whatever the repository's size, the template is never written, and what
the arm changed is exactly what its upper layer holds. Otherwise a copy
(``cp -a``, with reflinks where the file system has them).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pytest_wfbench.sandbox import Overlay, WorkspaceMount
from pytest_wfbench.sandbox.overlay import new_rw
from pytest_wfbench.workspace.template import Template

LAYERED = "overlay"
COPIED = "copy"


@dataclass(frozen=True)
class Workspace:
    """A cell's workspace. ``files`` is the host folder where what the arm writes
    lands: with ``lower`` (layered), the overlay's upper layer over the template,
    holding only what the arm changed; without, a full copy of the template."""

    files: Path
    lower: Path | None = None
    mount_dir: Path | None = None

    @property
    def layered(self) -> bool:
        return self.lower is not None

    @property
    def method(self) -> str:
        return LAYERED if self.layered else COPIED

    def mount(self) -> WorkspaceMount:
        """What a sandboxed command sees at /workspace."""
        if self.lower is None:
            return self.files
        assert self.mount_dir is not None
        return Overlay(lowers=(self.lower,), mount_dir=self.mount_dir, rw=self.files.parent)


def copy_tree(source: Path, target: Path) -> None:
    """Copy a tree with modes and links; reflinks where the filesystem has them."""
    target.parent.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        ["cp", "-a", "--reflink=auto", str(source), str(target)],
        capture_output=True, check=False,
    )
    if result.returncode != 0:
        raise OSError(f"copying {source} failed: {result.stderr.decode(errors='replace')}")


def make_clone(template: Template, cell_dir: Path, *, layered: bool = False) -> Workspace:
    """The cell's workspace over (layered) or copied from the sanitized template."""
    if layered:
        return layered_workspace(template.path, cell_dir)
    workspace = cell_dir / "workspace"
    if workspace.exists():
        shutil.rmtree(workspace)
    copy_tree(template.path, workspace)
    return Workspace(files=workspace)


def layered_workspace(lower: Path, cell_dir: Path) -> Workspace:
    """An empty upper layer over ``lower``, with the cell's mount folder."""
    rw = new_rw(cell_dir / "layers")
    mount_dir = cell_dir / "mnt"
    mount_dir.mkdir()
    return Workspace(files=rw / "upper", lower=lower, mount_dir=mount_dir)
