"""The hidden oracle (SPEC §3, step 7).

Its files are digested at sweep start. For each cell they are staged only
after the arm's last process has exited (every sandbox command's PID namespace
dies with it), under a random path, read-only and offline, together with a
throw-away copy of the final workspace that has the hidden paths back. Only
pass or fail is kept: the oracle's output can print hidden content. Everything
staged is erased afterwards.
"""

from __future__ import annotations

import hashlib
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from pytest_wfbench.judge.config import JUDGE_ENV, reset_test_configuration
from pytest_wfbench.outcomes import CellFailure
from pytest_wfbench.sandbox import Mount, Sandbox
from pytest_wfbench.tasks import Task
from pytest_wfbench.workspace.clone import copy_tree, real_directories
from pytest_wfbench.workspace.template import Template, tree_digest

EMPTY_DIGEST = hashlib.sha256(b"").hexdigest()


@dataclass(frozen=True)
class OracleSnapshot:
    """The oracle's files as captured at sweep start."""

    task_id: str
    files: Path | None
    digest: str

    @classmethod
    def capture(cls, task: Task) -> OracleSnapshot:
        files = task.oracle.files
        return cls(task.id, files, tree_digest(files) if files is not None else EMPTY_DIGEST)


@dataclass(frozen=True)
class OracleResult:
    passed: bool
    digest: str


def combined_digest(snapshot: OracleSnapshot, template: Template) -> str:
    """The oracle's identity in a row: its files and the hidden paths it gets back."""
    return hashlib.sha256(f"{snapshot.digest}:{template.hidden_digest}".encode()).hexdigest()


def run_oracle(
    task: Task, snapshot: OracleSnapshot, template: Template, sandbox: Sandbox,
    workspace: Path, cell_dir: Path,
) -> OracleResult:
    stage = cell_dir / f"oracle-{secrets.token_hex(16)}"
    stage.mkdir(mode=0o700)
    try:
        mounts: list[Mount] = []
        env = dict(JUDGE_ENV)
        if snapshot.files is not None:
            files = stage / "files"
            copy_tree(snapshot.files, files)
            if tree_digest(files) != snapshot.digest:
                raise CellFailure("oracle-unavailable",
                                  f"the oracle files of {task.id!r} changed during the sweep")
            mount = Mount(files, f"/oracle-{secrets.token_hex(12)}")
            mounts.append(mount)
            env["WFBENCH_ORACLE_DIR"] = sandbox.mount_path(mount)
        judged = stage / "workspace"
        copy_tree(workspace, judged)
        reset_test_configuration(judged, template.path)
        for hidden in task.oracle.hidden_paths:
            target = real_directories(judged, Path(hidden).parent) / Path(hidden).name
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.exists():
                shutil.rmtree(target)
            copy_tree(template.hidden_store / hidden, target)
        result = sandbox.run(task.oracle.command, workspace=judged, writable=False,
                             network=False, timeout_s=task.timeout_s, env=env, mounts=mounts)
        return OracleResult(passed=result.ok, digest=combined_digest(snapshot, template))
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        if stage.exists():
            raise CellFailure("cleanup-failure", "the staged oracle could not be erased")
