"""The facts of the machine a benchmark ran on."""

from __future__ import annotations

import importlib
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest_wfbench


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _first_field(text: str, key: str) -> str | None:
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() == key:
            return value.strip()
    return None


def _command(argv: list[str], cwd: Path | None = None) -> str | None:
    try:
        result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False,
                                timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    return (result.stdout or result.stderr).strip() or None


def _memory_gib() -> float | None:
    total = _first_field(_read("/proc/meminfo"), "MemTotal")
    if total is None or not total.endswith("kB"):
        return None
    return round(int(total.split()[0]) / 1024 / 1024, 1)


def _filesystem(path: Path) -> str | None:
    """The filesystem type of the mount holding ``path`` (clones use reflinks
    when it has them)."""
    best, kind = "", None
    resolved = str(path.resolve())
    for line in _read("/proc/mounts").splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        mount = parts[1]
        inside = resolved == mount or resolved.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, kind = mount, parts[2]
    return kind


def tmpfs_dir() -> str | None:
    """``/dev/shm`` when it is a writable tmpfs (a RAM-backed place for the
    harness's work dir), else None."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK) and _filesystem(shm) == "tmpfs":
        return str(shm)
    return None


def _repo_commit(repo_root: Path) -> str | None:
    sha = _command(["git", "rev-parse", "--short=12", "HEAD"], cwd=repo_root)
    if sha is None:
        return None
    dirty = _command(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo_root)
    return f"{sha}{'+dirty' if dirty else ''}"


def machine_facts(repo_root: Path) -> dict[str, Any]:
    cpuinfo = _read("/proc/cpuinfo")
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count() or 0
    return {
        "nproc": usable,
        "cpu_count": os.cpu_count(),
        "cpu_model": _first_field(cpuinfo, "model name"),
        "memory_gib": _memory_gib(),
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "bwrap": _command(["bwrap", "--version"]),
        "git": _command(["git", "--version"]),
        "kernel": platform.release(),
        "os": _os_name(),
        "tmp_filesystem": _filesystem(Path(tempfile.gettempdir())),
        "numpy_vectors": numpy_vectors(),
        "harness_version": pytest_wfbench.__version__,
        "harness_commit": _repo_commit(repo_root),
    }


def numpy_vectors() -> str:
    """The widest vector instructions numpy dispatches to here (the sorts and
    reductions of the report run several times faster with AVX-512 than
    without; ``NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR"`` turns
    them off, as on an AVX2 host)."""
    try:  # numpy's own module, without stubs
        features = importlib.import_module("numpy._core._multiarray_umath").__cpu_features__
    except (ImportError, AttributeError):  # pragma: no cover - another numpy layout
        return "unknown"
    for name in ("AVX512_SPR", "AVX512_ICL", "X86_V4", "AVX512_SKX", "X86_V3", "AVX2",
                 "SSE42", "ASIMD", "NEON", "VSX", "VX"):
        if features.get(name):
            return name
    return "none"


def _os_name() -> str | None:
    for line in _read("/etc/os-release").splitlines():
        key, sep, value = line.partition("=")
        if sep and key == "PRETTY_NAME":
            return value.strip().strip('"')
    return None
