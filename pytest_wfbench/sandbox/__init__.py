"""Running untrusted commands (SPEC §3, step 3): the backends in
:mod:`.core`, their resource limits in :mod:`.limits`."""

from pytest_wfbench.sandbox.core import (
    SANDBOX_HOME,
    WORKSPACE,
    BubblewrapSandbox,
    CommandResult,
    HostSandbox,
    Mount,
    Sandbox,
    SandboxPolicy,
    SandboxUnavailable,
    base_env,
    interpreter_paths,
    make_sandbox,
    preflight,
    sandbox_path_env,
)
from pytest_wfbench.sandbox.limits import LimitHit

__all__ = [
    "SANDBOX_HOME", "WORKSPACE", "BubblewrapSandbox", "CommandResult", "HostSandbox", "LimitHit",
    "Mount", "Sandbox", "SandboxPolicy", "SandboxUnavailable", "base_env", "interpreter_paths",
    "make_sandbox", "preflight", "sandbox_path_env",
]
