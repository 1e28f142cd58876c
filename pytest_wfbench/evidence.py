"""Evidence (SPEC §3, step 8): churn against the sanitized base and the final patch.

The diff is computed with the template's trusted git dir over the agent's
work tree, never with the workspace's own ``.git``, which the agent controls
(its config could run commands; its history could be rewritten). New objects go
to a private object directory so the template stays untouched.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from pytest_wfbench.git import run_git
from pytest_wfbench.template import Template


@dataclass(frozen=True)
class Churn:
    files: int
    insertions: int
    deletions: int
    patch: bytes


def diff_against_base(template: Template, workspace: Path, scratch: Path) -> Churn:
    objects = scratch / "evidence-objects"
    objects.mkdir(parents=True, exist_ok=True)
    env = {
        "GIT_DIR": str(template.git_dir),
        "GIT_WORK_TREE": str(workspace),
        "GIT_INDEX_FILE": str(scratch / "evidence-index"),
        "GIT_OBJECT_DIRECTORY": str(objects),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(template.git_dir / "objects"),
    }
    try:
        run_git(["read-tree", template.sanitized_sha], env=env)
        run_git(["add", "--all", "--", "."], env=env)
        numstat = run_git(["diff", "--cached", "--numstat", "--no-renames",
                           template.sanitized_sha], env=env).stdout.decode()
        patch = run_git(["diff", "--cached", "--binary", "--no-renames",
                         template.sanitized_sha], env=env).stdout
    finally:
        shutil.rmtree(objects, ignore_errors=True)
        (scratch / "evidence-index").unlink(missing_ok=True)
    files = insertions = deletions = 0
    for line in numstat.splitlines():
        added, removed, _ = line.split("\t", 2)
        files += 1
        insertions += int(added) if added != "-" else 0
        deletions += int(removed) if removed != "-" else 0
    return Churn(files=files, insertions=insertions, deletions=deletions, patch=patch)
