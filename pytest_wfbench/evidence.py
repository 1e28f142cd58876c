"""Evidence (SPEC §3, step 8): churn against the sanitized base and the final patch.

The diff is computed with the template's trusted git dir over the agent's
work tree, never with the workspace's own ``.git``, which the agent controls
(its config could run commands; its history could be rewritten). New objects go
to a private object directory so the template stays untouched.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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


@contextmanager
def _staged(template: Template, workspace: Path, scratch: Path,
            exclude: Sequence[str]) -> Iterator[dict[str, str]]:
    """A private index holding the work tree as it is now; yields git's env."""
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
        run_git(["add", "--all", "--", ".", *(f":(exclude){path}" for path in exclude)],
                env=env)
        yield env
    finally:
        shutil.rmtree(objects, ignore_errors=True)
        (scratch / "evidence-index").unlink(missing_ok=True)


def diff_against_base(template: Template, workspace: Path, scratch: Path,
                      exclude: Sequence[str] = ()) -> Churn:
    with _staged(template, workspace, scratch, exclude) as env:
        base = template.sanitized_sha
        numstat = run_git(["diff", "--cached", "--numstat", "--no-renames", base],
                          env=env).stdout.decode()
        patch = run_git(["diff", "--cached", "--binary", "--no-renames", base], env=env).stdout
    files = insertions = deletions = 0
    for line in numstat.splitlines():
        added, removed, _ = line.split("\t", 2)
        files += 1
        insertions += int(added) if added != "-" else 0
        deletions += int(removed) if removed != "-" else 0
    return Churn(files=files, insertions=insertions, deletions=deletions, patch=patch)


def workspace_changes(template: Template, workspace: Path, scratch: Path,
                      exclude: Sequence[str] = ()) -> dict[str, str]:
    """Every path that differs from the base, with its status and new blob id:
    comparing two of these tells what one phase changed."""
    with _staged(template, workspace, scratch, exclude) as env:
        raw = run_git(["diff", "--cached", "--raw", "--no-abbrev", "--no-renames", "-z",
                       template.sanitized_sha], env=env).stdout.decode("utf-8", "replace")
    fields = raw.split("\0")
    changes: dict[str, str] = {}
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        if meta.startswith(":"):
            _, _, _, new_blob, status = meta[1:].split(" ")
            changes[path] = f"{status} {new_blob}"
    return changes
