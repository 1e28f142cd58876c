"""The clone: a private copy of the template for one cell (SPEC §3, step 2)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from pytest_wfbench.workspace.template import Template


def copy_tree(source: Path, target: Path) -> None:
    """Copy a tree with modes and links; reflinks where the filesystem has them."""
    target.parent.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        ["cp", "-a", "--reflink=auto", str(source), str(target)],
        capture_output=True, check=False,
    )
    if result.returncode != 0:
        raise OSError(f"copying {source} failed: {result.stderr.decode(errors='replace')}")


def make_clone(template: Template, cell_dir: Path) -> Path:
    """The cell's workspace, a writable copy of the sanitized template."""
    workspace = cell_dir / "workspace"
    if workspace.exists():
        shutil.rmtree(workspace)
    copy_tree(template.path, workspace)
    return workspace
