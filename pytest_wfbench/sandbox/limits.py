"""Resource limits of sandboxed commands, and who enforces each (README,
"Limits"). Going over a limit is the arm's failure, with the limit named.

- ``file_size``: RLIMIT_FSIZE (the kernel): a write past it fails and the
  writer gets SIGXFSZ.
- ``memory``: RLIMIT_DATA per process (the kernel), and the whole process tree
  in a memory cgroup when the harness may create one (cgroup v1 as root, or a
  delegated cgroup v2 subtree); an out-of-memory kill there names the limit.
- ``processes``: a pids cgroup (the kernel) when available; otherwise
  RLIMIT_NPROC, which the kernel counts per user and does not apply to root.
- CPU, not a limit but a share: with the cpu controller, each command is one
  cpu cgroup of the default weight, so commands running at once share the
  processors as equals however many processes (or sessions) each one starts;
  without it the scheduler shares them per session, and one command of many
  sessions slowed every other cell's commands into their timeouts.
- ``tmp``: the private /tmp is a tmpfs of that size (bubblewrap ``--size``).
- ``disk`` and ``files``: what the workspace and HOME hold, watched by the
  harness while a session runs (a poll that kills the command) and checked
  when it reads the tree afterwards; not a kernel limit.
"""

from __future__ import annotations

import contextlib
import os
import resource
import secrets
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_wfbench.tasks import Limits

SIGXFSZ_EXITS = (128 + 25, -25)
CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class LimitHit:
    """A limit a command went over."""

    name: str
    value: int

    def to_json(self) -> dict[str, object]:
        return {"limit": self.name, "value": self.value}

    def describe(self) -> str:
        unit = "" if self.name in ("processes", "files") else " bytes"
        return f"went over its {self.name} limit ({self.value:,}{unit})"


def rlimit_args(limits: Limits, prlimit: str | None, cgroups: bool) -> list[str]:
    """``prlimit`` options for the command (nothing when prlimit is missing: then
    :func:`apply_rlimits` runs in the child instead). With cgroups, memory and
    processes are the cgroups' to enforce (for the whole tree, and named)."""
    if prlimit is None:
        return []
    args = [prlimit, f"--fsize={limits.file_size}", "--core=0"]
    if not cgroups:
        args += [f"--data={limits.memory}", f"--nproc={_nproc(limits)}"]
    return [*args, "--"]


def apply_rlimits(limits: Limits, cgroups: bool) -> Callable[[], None]:
    """A pre-exec function setting the same limits as :func:`rlimit_args`."""
    nproc = _nproc(limits)

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size, limits.file_size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if not cgroups:
            resource.setrlimit(resource.RLIMIT_DATA, (limits.memory, limits.memory))
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

    return apply


def _nproc(limits: Limits) -> int:
    """RLIMIT_NPROC counts every process of the user, so it is the limit on top
    of what the user already runs."""
    uid = os.getuid()
    running = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    running += entry.stat().st_uid == uid
    return running + limits.processes


STALE_CGROUP_S = 3600.0


class Cgroups:
    """Per-command pids and memory cgroups, when this process may create them."""

    def __init__(self, version: int, parents: dict[str, Path]) -> None:
        self.version = version
        self.parents = parents

    @classmethod
    def detect(cls) -> Cgroups | None:
        """cgroup v1 with writable pids and memory hierarchies, or a v2 subtree
        whose pids and memory controllers we may use; None otherwise."""
        try:
            own = Path("/proc/self/cgroup").read_text().splitlines()
        except OSError:
            return None
        paths: dict[str, str] = {}
        for line in own:
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                paths[controller] = path
        candidates: list[Cgroups] = []
        if "pids" in paths and "memory" in paths:
            # With the cpu hierarchy where it can be used, else without it.
            for wanted in (("pids", "memory", "cpu"), ("pids", "memory")):
                if all(c in paths and (CGROUP_ROOT / c).is_dir() for c in wanted):
                    candidates.append(cls(1, {c: CGROUP_ROOT / c / paths[c].lstrip("/")
                                              for c in wanted}))
        elif "" in paths and (CGROUP_ROOT / "cgroup.controllers").exists():
            # One folder for every controller: the cpu one shares the processors
            # among its children when the parent enables it for them.
            parent = CGROUP_ROOT / paths[""].lstrip("/")
            candidates.append(cls(2, {"pids": parent, "memory": parent}))
        for candidate in candidates:
            try:
                probe = candidate.create(Limits())
            except OSError:
                continue
            probe.remove()
            return candidate
        return None

    def remove_stale(self, older_than_s: float = STALE_CGROUP_S) -> int:
        """Remove the empty command cgroups a killed harness left behind (its
        commands' cgroups outlive a SIGKILL); only those older than
        ``older_than_s``: a command's own is filled the moment it is made, and a
        cgroup with a process in it cannot be removed. How many went."""
        removed = 0
        now = time.time()
        for parent in set(self.parents.values()):
            for path in parent.glob("wfbench-*"):
                try:
                    if now - path.stat().st_mtime > older_than_s:
                        path.rmdir()
                        removed += 1
                except OSError:
                    continue
        return removed

    def create(self, limits: Limits) -> CommandCgroups:
        name = f"wfbench-{secrets.token_hex(6)}"
        made: dict[str, Path] = {}
        try:
            for controller, parent in self.parents.items():
                path = parent / name
                if path not in made.values():
                    path.mkdir()
                made[controller] = path
            if self.version == 1:
                (made["pids"] / "pids.max").write_text(str(limits.processes))
                (made["memory"] / "memory.limit_in_bytes").write_text(str(limits.memory))
            else:
                (made["pids"] / "pids.max").write_text(str(limits.processes))
                (made["memory"] / "memory.max").write_text(str(limits.memory))
                (made["memory"] / "memory.swap.max").write_text("0")
        except OSError:
            for path in set(made.values()):
                with contextlib.suppress(OSError):
                    path.rmdir()
            raise
        return CommandCgroups(self.version, made, limits)


@dataclass
class CommandCgroups:
    version: int
    paths: dict[str, Path]
    limits: Limits

    def procs_files(self) -> list[str]:
        return sorted({str(path / "cgroup.procs") for path in self.paths.values()})

    def hit(self) -> LimitHit | None:
        if _counter(self.paths["pids"] / "pids.events", "max") > 0:
            return LimitHit("processes", self.limits.processes)
        if self.version == 1:
            killed = _counter(self.paths["memory"] / "memory.oom_control", "oom_kill")
        else:
            killed = _counter(self.paths["memory"] / "memory.events", "oom_kill")
        if killed > 0:
            return LimitHit("memory", self.limits.memory)
        return None

    def remove(self) -> None:
        """Remove the cgroups once their processes are gone (a PID namespace's
        last processes may take a moment to be reaped)."""
        deadline = time.monotonic() + 5
        for path in sorted(set(self.paths.values())):
            # Reaping takes well under a millisecond mostly: waits that double
            # from 0.5 ms (a fixed 20 ms cost most commands 20 ms).
            pause = 0.0005
            while True:
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    _kill_members(path)
                    time.sleep(pause)
                    pause = min(pause * 2, 0.02)


def _counter(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
    except OSError:
        pass
    return 0


def _kill_members(path: Path) -> None:
    with contextlib.suppress(OSError):
        for pid in (path / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                os.kill(int(pid), 9)


def enter_cgroups_argv(procs_files: list[str]) -> list[str]:
    """A prefix that moves the command into its cgroups before it starts, so
    every process it forks is in them."""
    script = ('n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; '
              'n=$((n-1)); done; exec "$@"')
    return ["/bin/sh", "-c", script, "sh", str(len(procs_files)), *procs_files]


def find_prlimit() -> str | None:
    return shutil.which("prlimit")


class TreeWatch:
    """Polls what a running command's writable trees hold and calls ``on_hit``
    once when they go over the disk or files limit."""

    def __init__(self, paths: list[Path], limits: Limits,
                 on_hit: Callable[[LimitHit], None]) -> None:
        self.paths = paths
        self.limits = limits
        self.on_hit = on_hit
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="wfbench-tree-watch",
                                        daemon=True)

    def __enter__(self) -> TreeWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        interval = 1.0
        while not self._stop.wait(interval):
            started = time.monotonic()
            hit = tree_usage_hit(self.paths, self.limits)
            if hit is not None:
                self.on_hit(hit)
                return
            # Never spend more than a fifth of the time walking.
            interval = min(10.0, max(1.0, 5 * (time.monotonic() - started)))


def tree_usage_hit(paths: list[Path], limits: Limits) -> LimitHit | None:
    """Whether ``paths`` hold more than the disk or files limit; stops counting
    as soon as one is passed, and never follows a link."""
    entries = used = 0
    stack = [str(path) for path in paths]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as listing:
                for entry in listing:
                    entries += 1
                    if entries > limits.files:
                        return LimitHit("files", limits.files)
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    used += info.st_blocks * 512
                    if used > limits.disk:
                        return LimitHit("disk", limits.disk)
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return None
