"""Running untrusted commands: bubblewrap, or the host behind an explicit
unsafe flag (SPEC §3, step 3).

Every command of a cell (setup, the arm's steps, verify, oracle) runs through
:class:`Sandbox`. The bubblewrap backend gives it a read-only system, the
workspace at ``/workspace``, a private ``/tmp`` and HOME, an allowlisted
environment, its own PID namespace (so every process dies with the command),
no capabilities, and the network only when asked for.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest_wfbench
from pytest_wfbench.sandbox.limits import (
    SIGXFSZ_EXITS,
    Cgroups,
    LimitHit,
    TreeWatch,
    apply_rlimits,
    enter_cgroups_argv,
    find_prlimit,
    rlimit_args,
)
from pytest_wfbench.sandbox.overlay import Overlay, find_unshare, overlay_unavailable
from pytest_wfbench.sandbox.process import communicate, kill_group
from pytest_wfbench.tasks import Limits

WorkspaceMount = Path | Overlay
"""What a command sees at /workspace: a folder, or layers (:mod:`.overlay`)."""

WORKSPACE = "/workspace"
SANDBOX_HOME = "/home/wfbench"
COMMAND_FILE = "/run/wfbench/command"
SANDBOX_UID = 1000
# Read-only system paths; /etc is allowlisted file by file because, mapped to
# the invoking user, the sandbox could otherwise read that user's files there.
SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib32", "/lib64", "/sbin")
ETC_ALLOWLIST = (
    "/etc/alternatives", "/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf",
    "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/localtime", "/etc/timezone",
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/mime.types",
    "/etc/python3", "/etc/inputrc", "/etc/os-release", "/etc/debian_version",
    "/etc/protocols", "/etc/services", "/etc/bash.bashrc", "/etc/profile",
)
PASSWD = (f"root:x:0:0:root:/root:/bin/sh\n"
          f"wfbench:x:{SANDBOX_UID}:{SANDBOX_UID}::{SANDBOX_HOME}:/bin/bash\n")
GROUP = f"root:x:0:\nwfbench:x:{SANDBOX_UID}:\n"
INSTALL_HINT = (
    "install bubblewrap 0.8 or later, not setuid (Debian 12/Ubuntu 24.04: apt-get install "
    "bubblewrap; it must know --disable-userns) and make sure user "
    "namespaces are allowed (sysctl kernel.unprivileged_userns_clone=1 / "
    "kernel.apparmor_restrict_unprivileged_userns=0)"
)


class SandboxUnavailable(Exception):
    """The sandbox cannot run here; the message says what to install or change."""


class LayersUnavailable(SandboxUnavailable):
    """A layered workspace's overlay did not mount for a command (the machine's
    doing: no command of the arm can reach where the failure is written)."""


@dataclass(frozen=True)
class Mount:
    """A host path made visible (read-only unless ``writable``) inside the sandbox."""

    host: Path
    target: str
    writable: bool = False


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str
    elapsed_s: float
    timed_out: bool
    limit_hit: LimitHit | None = None
    """A limit the command went over (the arm's failure), if any."""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    """What the command wrote in all; ``stdout`` and ``stderr`` keep at most
    OUTPUT_CAP bytes each (its head and its tail)."""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def tail(self, chars: int = 1500) -> str:
        text = (self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr).strip()
        return text if len(text) <= chars else "..." + text[-chars:]


@dataclass(frozen=True)
class SandboxPolicy:
    """What a sweep lets into every sandbox: extra read-only paths and variables."""

    read_only: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


def interpreter_paths() -> list[Path]:
    """The harness's Python (prefix, base prefix) and its own package, so that
    ``python -m pytest`` works in the sandbox for Python targets."""
    candidates = [
        Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix),
        Path(os.path.realpath(sys.executable)).parent.parent,
        Path(pytest_wfbench.__file__).resolve().parent,
    ]
    paths: list[Path] = []
    for path in sorted({p.resolve() for p in candidates}, key=lambda p: len(p.parts)):
        if path.is_relative_to("/usr") or any(path.is_relative_to(p) for p in paths):
            continue
        paths.append(path)
    return paths


def system_mount_args(read_only: Iterable[Path] = ()) -> list[str]:
    """bubblewrap's arguments for what every sandbox sees of the system: its
    system folders (links kept as links), the allowed files of /etc, the
    interpreter, and ``read_only`` paths, all read-only."""
    args: list[str] = []
    for name in SYSTEM_DIRS:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), name]
        elif path.exists():
            args += ["--ro-bind", name, name]
    for name in ETC_ALLOWLIST:
        if Path(name).exists():
            args += ["--ro-bind", name, name]
    for path in [*interpreter_paths(), *read_only]:
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]
    return args


def sandbox_path_env() -> str:
    return f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"


def base_env(home: str, policy: SandboxPolicy, extra: Mapping[str, str]) -> dict[str, str]:
    """The allowlisted environment: nothing of the host's but what is named here."""
    env = {
        "PATH": sandbox_path_env(),
        "HOME": home,
        "USER": "wfbench",
        "LOGNAME": "wfbench",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "TMPDIR": "/tmp",
        "WFBENCH": "1",
    }
    env.update(policy.env)
    env.update(extra)
    return env


class Sandbox(abc.ABC):
    """Runs a shell command for one cell. Subclasses choose the containment."""

    backend = "abstract"

    def __init__(self, policy: SandboxPolicy, scratch: Path) -> None:
        self.policy = policy
        self.scratch = scratch

    @abc.abstractmethod
    def workspace_path(self, workspace: WorkspaceMount) -> str:
        """Overridden by each backend."""

    @abc.abstractmethod
    def mount_path(self, mount: Mount) -> str:
        """Overridden by each backend."""

    def overlay_unavailable(self) -> str | None:
        """Why this backend cannot mount layered workspaces here, or None."""
        return f"the {self.backend} backend has no mount namespaces"

    @abc.abstractmethod
    def _argv(
        self, command: str, *, workspace: WorkspaceMount, home: Path | None, writable: bool,
        network: bool, mounts: Sequence[Mount], limits: Limits,
    ) -> tuple[list[str], tuple[int, ...]]:
        """The command line, and the descriptors it is handed (closed here after
        the start). Overridden by each backend."""

    @abc.abstractmethod
    def _env(self, home: Path | None, env: Mapping[str, str]) -> dict[str, str]:
        """Overridden by each backend."""

    def _cwd(self, workspace: WorkspaceMount) -> Path:
        """Where the harness starts the command: a folder of its own (the arm may
        have taken its own permissions away from the workspace)."""
        return self.scratch

    def run(
        self, command: str, *, workspace: WorkspaceMount, home: Path | None = None,
        writable: bool = False, network: bool = False, timeout_s: float = 600.0,
        env: Mapping[str, str] | None = None, mounts: Sequence[Mount] = (),
        stdin: bytes | None = None, limits: Limits | None = None,
        watch: Sequence[Path] = (), inherit_fds: Sequence[int] = (),
    ) -> CommandResult:
        """Run ``command`` with bash in the workspace (a folder, or layers mounted
        as one), within ``limits``; kill its
        whole process tree when it ends, times out or goes over a limit. ``home``
        None gives an empty HOME; ``watch`` are the writable trees whose disk use
        and number of files are watched while it runs; ``inherit_fds`` are
        descriptors the command inherits (the caller closes them)."""
        limits = limits or Limits()
        argv, pass_fds = self._argv(command, workspace=workspace, home=home, writable=writable,
                                    network=network, mounts=mounts, limits=limits)
        available = self._cgroups()
        cgroups = available.create(limits) if available is not None else None
        prefix = enter_cgroups_argv(cgroups.procs_files()) if cgroups is not None else []
        prlimit = find_prlimit()
        prefix += rlimit_args(limits, prlimit, cgroups=cgroups is not None)
        started = time.monotonic()
        try:
            process = subprocess.Popen(
                [*prefix, *argv],
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self._env(home, env or {}),
                cwd=self._cwd(workspace), start_new_session=True,
                pass_fds=(*pass_fds, *inherit_fds),
                preexec_fn=apply_rlimits(limits, cgroups is not None) if prlimit is None else None,
            )
        finally:
            for fd in pass_fds:
                os.close(fd)
        hits: list[LimitHit] = []

        def over_limit(hit: LimitHit) -> None:
            hits.append(hit)
            kill_group(process)

        try:
            with TreeWatch(list(watch), limits, over_limit) if watch else contextlib.nullcontext():
                out, err, timed_out = communicate(process, stdin, timeout_s)
        finally:
            kill_group(process)
            if cgroups is not None:
                hit = cgroups.hit()
                if hit is not None:
                    hits.append(hit)
                cgroups.remove()
        if isinstance(workspace, Overlay):
            reason = workspace.take_failure()
            if reason is not None:
                raise LayersUnavailable(f"the workspace's layers did not mount: {reason}")
        if not hits and process.returncode in SIGXFSZ_EXITS:
            hits.append(LimitHit("file_size", limits.file_size))
        return CommandResult(
            returncode=process.returncode, stdout=out.text(), stderr=err.text(),
            elapsed_s=time.monotonic() - started, timed_out=timed_out and not hits,
            limit_hit=hits[0] if hits else None, stdout_bytes=out.total,
            stderr_bytes=err.total,
        )

    def _cgroups(self) -> Cgroups | None:
        return _detected_cgroups()


@functools.lru_cache(maxsize=1)
def _detected_cgroups() -> Cgroups | None:
    """The command cgroups of this process, found once (with the empty ones an
    earlier, killed harness left behind removed)."""
    cgroups = Cgroups.detect()
    if cgroups is not None:
        cgroups.remove_stale()
    return cgroups


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


class BubblewrapSandbox(Sandbox):
    backend = "bubblewrap"

    def __init__(self, policy: SandboxPolicy, scratch: Path, bwrap: str) -> None:
        super().__init__(policy, scratch)
        self.bwrap = bwrap
        scratch.mkdir(parents=True, exist_ok=True)
        self._passwd = scratch / "passwd"
        self._group = scratch / "group"
        if not self._passwd.exists():
            self._passwd.write_text(PASSWD)
            self._group.write_text(GROUP)
        self._system = self._system_args()

    def workspace_path(self, workspace: WorkspaceMount) -> str:
        return WORKSPACE

    def mount_path(self, mount: Mount) -> str:
        return mount.target

    def overlay_unavailable(self) -> str | None:
        return overlay_unavailable(self.scratch, self.bwrap)

    def _system_args(self) -> list[str]:
        return [*system_mount_args(map(Path, self.policy.read_only)),
                "--ro-bind", str(self._passwd), "/etc/passwd",
                "--ro-bind", str(self._group), "/etc/group"]

    def _argv(
        self, command: str, *, workspace: WorkspaceMount, home: Path | None, writable: bool,
        network: bool, mounts: Sequence[Mount], limits: Limits,
    ) -> tuple[list[str], tuple[int, ...]]:
        prefix: list[str] = []
        if isinstance(workspace, Overlay):
            unshare = find_unshare()
            if unshare is None:
                raise SandboxUnavailable("a layered workspace needs util-linux's unshare")
            prefix = workspace.prefix(unshare)
            source = workspace.merged
        else:
            source = workspace
        # No user namespace of its own in the sandbox (so no namespace at all):
        # every sandbox runs as the harness's user, and the kernel counts the
        # user namespaces of all of them against one per-user limit; one command
        # holding them would make every other cell's sandbox fail to start.
        argv = [
            "--die-with-parent", "--new-session", "--unshare-all",
            "--unshare-user", "--disable-userns", "--uid", str(SANDBOX_UID),
            "--gid", str(SANDBOX_UID), "--cap-drop", "ALL", "--hostname", "wfbench",
        ]
        if network:
            argv.append("--share-net")
        # /tmp first: the harness's own Python may live under the host's /tmp.
        tmp_size = ["--size", str(limits.tmp)]
        argv += ["--proc", "/proc", "--dev", "/dev", *tmp_size, "--tmpfs", "/tmp"]
        argv += self._system
        if home is not None:
            argv += ["--bind", str(home), SANDBOX_HOME]
        else:
            argv += [*tmp_size, "--tmpfs", SANDBOX_HOME]
        argv += ["--bind" if writable else "--ro-bind", str(source), WORKSPACE]
        for mount in mounts:
            argv += ["--bind" if mount.writable else "--ro-bind", str(mount.host), mount.target]
        # The options and the command go through descriptors: in the sandbox,
        # /proc/*/cmdline shows neither the host paths of the mounts nor the command.
        script = _memfd("wfbench-command", command.encode())
        argv += ["--ro-bind-data", str(script), COMMAND_FILE, "--chdir", WORKSPACE]
        options = _memfd("wfbench-bwrap-args",
                         b"".join(os.fsencode(arg) + b"\0" for arg in argv))
        return ([*prefix, self.bwrap, "--args", str(options), "--", "/bin/bash", COMMAND_FILE],
                (options, script))

    def _env(self, home: Path | None, env: Mapping[str, str]) -> dict[str, str]:
        # bwrap itself gets the allowlisted environment; the command inherits it.
        return base_env(SANDBOX_HOME, self.policy, env)


class HostSandbox(Sandbox):
    """No containment at all: only behind --wfbench-unsafe-no-sandbox, recorded in
    every row, refused under CI."""

    backend = "unsafe-host"

    def workspace_path(self, workspace: WorkspaceMount) -> str:
        return str(_folder(workspace))

    def mount_path(self, mount: Mount) -> str:
        return str(mount.host)

    def _argv(
        self, command: str, *, workspace: WorkspaceMount, home: Path | None, writable: bool,
        network: bool, mounts: Sequence[Mount], limits: Limits,
    ) -> tuple[list[str], tuple[int, ...]]:
        return ["/bin/bash", "-c", command], ()

    def _cwd(self, workspace: WorkspaceMount) -> Path:
        return _folder(workspace)

    def _env(self, home: Path | None, env: Mapping[str, str]) -> dict[str, str]:
        if home is None:
            home = Path(tempfile.mkdtemp(prefix="home-", dir=self.scratch))
        return base_env(str(home), self.policy, env)


def _folder(workspace: WorkspaceMount) -> Path:
    if isinstance(workspace, Overlay):
        raise SandboxUnavailable("the unsafe host backend cannot mount a layered workspace")
    return workspace


def make_sandbox(policy: SandboxPolicy, scratch: Path, *, unsafe_host: bool) -> Sandbox:
    if unsafe_host:
        scratch.mkdir(parents=True, exist_ok=True)
        return HostSandbox(policy, scratch)
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(f"bubblewrap (bwrap) is not installed: {INSTALL_HINT}")
    return BubblewrapSandbox(policy, scratch, bwrap)
