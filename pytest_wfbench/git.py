"""Host-side git with an isolated configuration.

The harness never lets a repository's own config, hooks or the user's
settings run: every call gets an empty global and system config and fixed
identities and dates, so snapshots are deterministic across machines.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

IDENTITY = "wfbench"
EMAIL = "wfbench@localhost"
FIXED_DATE = "2000-01-01T00:00:00+0000"
SAFE_CONFIG = (
    "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "commit.gpgsign=false",
    "-c", "tag.gpgsign=false", "-c", "init.defaultBranch=main", "-c", "core.autocrlf=false",
    "-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "safe.directory=*",
    "-c", "protocol.file.allow=always", "-c", "diff.ignoreSubmodules=none",
    "-c", "submodule.recurse=false", "-c", "core.quotePath=false",
    # Names only NTFS or HFS+ would confuse with .git: on this file system they are
    # names like any other, and a patch must show them (the capture leaves out
    # the ones git refuses whatever these say).
    "-c", "core.protectNTFS=false", "-c", "core.protectHFS=false",
)
# Harness git commands on an arm's tree are bounded in time like every other step.
DEFAULT_TIMEOUT_S = 300.0


class GitError(Exception):
    pass


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": "/nonexistent",
        "LANG": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": IDENTITY,
        "GIT_AUTHOR_EMAIL": EMAIL,
        "GIT_AUTHOR_DATE": FIXED_DATE,
        "GIT_COMMITTER_NAME": IDENTITY,
        "GIT_COMMITTER_EMAIL": EMAIL,
        "GIT_COMMITTER_DATE": FIXED_DATE,
    }
    env.update(extra or {})
    return env


def run_git(
    args: Sequence[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None,
    stdin: bytes | None = None, check: bool = True, stdout: Path | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> subprocess.CompletedProcess[bytes]:
    """Run git; ``stdout`` sends its output to a file instead of memory (output
    whose size an arm decides)."""
    try:
        if stdout is not None:
            with stdout.open("wb") as sink:
                result = subprocess.run(
                    ["git", *SAFE_CONFIG, *args], cwd=cwd, env=git_env(env), input=stdin,
                    stdout=sink, stderr=subprocess.PIPE, check=False, timeout=timeout_s)
        else:
            result = subprocess.run(
                ["git", *SAFE_CONFIG, *args], cwd=cwd, env=git_env(env), input=stdin,
                capture_output=True, check=False, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {' '.join(args[:3])} timed out after {timeout_s:g}s") from exc
    if check and result.returncode != 0:
        message = result.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git {' '.join(args[:3])} failed ({result.returncode}): {message}")
    return result


def git_text(
    args: Sequence[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> str:
    return run_git(args, cwd=cwd, env=env).stdout.decode("utf-8", "replace").strip()
