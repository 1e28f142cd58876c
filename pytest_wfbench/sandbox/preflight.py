"""The preflight: before any cell runs, check that the sandbox starts, isolates
and runs Python, or stop the sweep with what to install or change."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from pytest_wfbench.sandbox.core import INSTALL_HINT, Sandbox, SandboxUnavailable


def preflight(sandbox: Sandbox, scratch: Path) -> None:
    """Check, before any cell runs, that the sandbox starts, isolates and runs Python."""
    workspace = Path(tempfile.mkdtemp(prefix="preflight-", dir=scratch))
    try:
        expected_cwd = sandbox.workspace_path(workspace)
        started = sandbox.run('test "$(pwd)" = "$WFBENCH_PREFLIGHT_CWD" && touch probe',
                              workspace=workspace, writable=True, timeout_s=60,
                              env={"WFBENCH_PREFLIGHT_CWD": expected_cwd})
        if not started.ok or not (workspace / "probe").exists():
            raise SandboxUnavailable(
                f"the {sandbox.backend} sandbox does not start here (exit "
                f"{started.returncode}): {started.tail(800) or 'no output'}; {INSTALL_HINT}")
        python = sandbox.run('python -c "import sys; print(sys.version_info[0])"',
                             workspace=workspace, timeout_s=60)
        if not python.ok or python.stdout.strip() != "3":
            raise SandboxUnavailable(
                f"the harness's Python ({sys.executable}) does not run in the "
                f"{sandbox.backend} sandbox (exit {python.returncode}): "
                f"{python.tail(800) or 'no output'}")
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
