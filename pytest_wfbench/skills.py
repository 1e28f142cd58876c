"""Skills under test: installed into the clone, read-only during sessions, and
fingerprinted so any change is caught (SPEC §4)."""

from __future__ import annotations

import shutil
from pathlib import Path

from pytest_wfbench.sandbox import Mount
from pytest_wfbench.workspace.template import tree_digest

SKILLS_DIR = ".claude/skills"


def install_skills(source: Path, workspace: Path) -> str:
    """Copy a folder of skills into the clone; returns its fingerprint."""
    target = workspace / SKILLS_DIR
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, symlinks=True)
    return fingerprint(workspace)


def fingerprint(workspace: Path) -> str:
    target = workspace / SKILLS_DIR
    return tree_digest(target) if target.exists() else "absent"


def read_only_mount(workspace: Path, sandbox_workspace: str) -> Mount:
    """The skills folder bound read-only over the writable workspace."""
    return Mount(workspace / SKILLS_DIR, f"{sandbox_workspace}/{SKILLS_DIR}")
