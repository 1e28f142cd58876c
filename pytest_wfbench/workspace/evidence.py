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
from pytest_wfbench.workspace.template import Template


@dataclass(frozen=True)
class Churn:
    files: int
    insertions: int
    deletions: int
    patch: bytes


# The workspace's own .gitattributes must not change what the evidence sees
# (filters, encodings, "binary" diffs): the private git dir's info/attributes
# outranks every attributes file in the work tree.
NEUTRAL_ATTRIBUTES = "* -text -filter -ident -working-tree-encoding !diff !eol !merge\n"
# Ignored files count too (--force: the agent writes .gitignore), except caches
# that judges never load (PYTHONPYCACHEPREFIX) and that every test run leaves.
CACHE_PATHS = ("**/__pycache__/**", "**/.pytest_cache/**", "**/.mypy_cache/**",
               "**/.ruff_cache/**")


@contextmanager
def _staged(template: Template, workspace: Path, scratch: Path,
            exclude: Sequence[str]) -> Iterator[dict[str, str]]:
    """A private git dir (borrowing the template's objects) whose index holds
    the work tree as it is now; yields git's env."""
    git_dir = scratch / "evidence.git"
    shutil.rmtree(git_dir, ignore_errors=True)
    run_git(["init", "--quiet", "--bare", "--template=", str(git_dir)])
    (git_dir / "objects" / "info").mkdir(parents=True, exist_ok=True)
    (git_dir / "objects" / "info" / "alternates").write_text(
        str(template.git_dir / "objects") + "\n")
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "attributes").write_text(NEUTRAL_ATTRIBUTES)
    env = {"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(workspace),
           "GIT_INDEX_FILE": str(git_dir / "index")}
    try:
        run_git(["read-tree", template.sanitized_sha], env=env)
        excluded = [*exclude, *CACHE_PATHS]
        run_git(["add", "--all", "--force", "--", ".",
                 *(f":(exclude,glob){path}" for path in excluded)], env=env)
        yield env
    finally:
        shutil.rmtree(git_dir, ignore_errors=True)


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
