"""The floor of a cell: what it cannot do without. One copy of the task's
tree, then the arm's own work (a gold patch applied with ``git apply``, as the
gold arm does; nothing for noop) and the task's verify and oracle commands,
each run directly in bubblewrap: the same system mounts as the harness's
sandbox, the harness's interpreter, the judges' trusted bytecode as the
bytecode prefix (warm), no plugin auto-loaded (as in the judges), and nothing
else: no template, no layered clone, no capture, evidence, staging, reporter,
limits or cgroups.

The copy is of the task's repository; its hidden paths are moved out of it
while the arm and verify run, and back for the oracle (renames, not copies), as
the harness hides them from the arm and gives them back to the oracle.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pytest_wfbench.judge.environment import BYTECODE_MOUNT
from pytest_wfbench.sandbox.core import system_mount_args

ORACLE_MOUNT = "/opt/wfbench-floor/oracle"
PATCH_MOUNT = "/opt/wfbench-floor/gold.patch"


class FloorError(Exception):
    """A floor command did not do what the cell's would (it must pass or fail alike)."""


def _system_args() -> list[str]:
    return system_mount_args()


def bwrap_argv(command: str, workspace: Path, *, oracle: Path | None, patch: Path | None,
               bytecode: Path | None, writable: bool) -> list[str]:
    argv = ["bwrap", "--die-with-parent", "--unshare-all", "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/tmp", *_system_args(),
            "--bind" if writable else "--ro-bind", str(workspace), "/workspace"]
    if oracle is not None:
        argv += ["--ro-bind", str(oracle), ORACLE_MOUNT]
    if patch is not None:
        argv += ["--ro-bind", str(patch), PATCH_MOUNT]
    if bytecode is not None:
        argv += ["--ro-bind", str(bytecode), BYTECODE_MOUNT]
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
           "HOME": "/tmp", "LANG": "C.UTF-8", "TMPDIR": "/tmp",
           "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
           "WFBENCH_ORACLE_DIR": ORACLE_MOUNT}
    if bytecode is not None:
        env["PYTHONPYCACHEPREFIX"] = BYTECODE_MOUNT
    argv += ["--clearenv"]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    return [*argv, "--chdir", "/workspace", "/bin/bash", "-c", command]


@dataclass(frozen=True)
class Floor:
    copy_s: float
    session_s: float
    verify_s: float
    oracle_s: float
    verify_passed: bool
    oracle_passed: bool

    @property
    def total_s(self) -> float:
        return self.copy_s + self.session_s + self.verify_s + self.oracle_s


def _timed(argv: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          check=False)
    return time.perf_counter() - start, done.returncode


def measure_floor(repo: Path, verify: str, oracle_command: str, oracle_dir: Path,
                  gold: Path | None, bytecode: Path | None, scratch: Path,
                  hidden: tuple[str, ...] = ()) -> Floor:
    """One floor of a (task, arm) cell: ``gold`` for a gold cell, None for noop."""
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch, prefix="floor-") as into:
        workspace = Path(into) / "workspace"
        aside = Path(into) / "hidden"
        start = time.perf_counter()
        subprocess.run(["cp", "-a", "--reflink=auto", str(repo), str(workspace)], check=True)
        copy_s = time.perf_counter() - start
        moved = []
        for index, path in enumerate(hidden):
            if (workspace / path).exists():
                aside.mkdir(exist_ok=True)
                (workspace / path).rename(aside / str(index))
                moved.append((aside / str(index), workspace / path))
        session_s = 0.0
        if gold is not None:
            session_s, code = _timed(bwrap_argv(
                f"git apply --whitespace=nowarn {PATCH_MOUNT}", workspace, oracle=None,
                patch=gold, bytecode=bytecode, writable=True))
            if code != 0:
                raise FloorError(f"the gold patch {gold} does not apply to a copy of {repo}")
        verify_s, verify_code = _timed(bwrap_argv(verify, workspace, oracle=None, patch=None,
                                                  bytecode=bytecode, writable=False))
        for kept, back in moved:
            kept.rename(back)
        oracle_s, oracle_code = _timed(bwrap_argv(oracle_command, workspace, oracle=oracle_dir,
                                                  patch=None, bytecode=bytecode,
                                                  writable=False))
        floor = Floor(copy_s, session_s, verify_s, oracle_s, verify_code == 0, oracle_code == 0)
    shutil.rmtree(Path(into), ignore_errors=True)
    if gold is not None and not floor.oracle_passed:
        raise FloorError(f"the oracle fails on the gold patch in the floor of {repo}: "
                         "the floor would not measure what a cell does")
    return floor
