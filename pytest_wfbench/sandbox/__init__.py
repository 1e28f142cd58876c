"""Running untrusted commands (SPEC §3, step 3): the backends in
:mod:`.core`, their resource limits in :mod:`.limits`, the command's process
I/O in :mod:`.process`, and the :mod:`.preflight`."""

from pytest_wfbench.sandbox.core import (
    SANDBOX_HOME,
    WORKSPACE,
    BubblewrapSandbox,
    CommandResult,
    HostSandbox,
    LayersUnavailable,
    Mount,
    Sandbox,
    SandboxPolicy,
    SandboxUnavailable,
    WorkspaceMount,
    base_env,
    interpreter_paths,
    make_sandbox,
    sandbox_path_env,
)
from pytest_wfbench.sandbox.limits import LimitHit
from pytest_wfbench.sandbox.overlay import Overlay
from pytest_wfbench.sandbox.preflight import preflight

__all__ = [
    "SANDBOX_HOME", "WORKSPACE", "BubblewrapSandbox", "CommandResult", "HostSandbox",
    "LayersUnavailable", "LimitHit", "Mount", "Overlay", "Sandbox", "SandboxPolicy",
    "SandboxUnavailable", "WorkspaceMount",
    "base_env", "interpreter_paths", "make_sandbox", "preflight", "sandbox_path_env",
]
