"""The environment every judge (verify, oracle) runs with.

- Python: the workspace is searched last, holds no package metadata and no
  bytecode, and, for the oracle, provides only the project's own top-level
  names (``site/sitecustomize.py``); bytecode caches go to a private prefix;
  no user site.
- pytest: no plugin is auto-loaded (a plugin a task needs is named in
  ``oracle.plugins`` and loaded with ``-p``); ``--import-mode=append``; no
  cache provider; for the oracle, the rootdir and the configuration file the
  project has at its base, and the harness's result reporter
  (``site/wfbench_outcomes.py``, loaded by ``site/sitecustomize.py`` with a key
  passed through a descriptor).
"""

from __future__ import annotations

import importlib.machinery
import os
import shlex
from pathlib import Path

import pytest_wfbench
from pytest_wfbench.sandbox import Mount

JUDGE_SITE = Path(pytest_wfbench.__file__).resolve().parent / "judge" / "site"
# Without a trusted bytecode tree: a private, empty prefix (nothing is written).
JUDGE_BYTECODE = "/tmp/wfbench-judge-pycache"
BYTECODE_MOUNT = "/opt/wfbench/bytecode"
BASE_ENV = {
    "PYTHONSAFEPATH": "1",
    "PYTHONPATH": str(JUDGE_SITE),
    "PYTHONPYCACHEPREFIX": JUDGE_BYTECODE,
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONNOUSERSITE": "1",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
}
BASE_ADDOPTS = ("--import-mode=append", "-p", "no:cacheprovider")


def judge_env(workspace: str, plugins: tuple[str, ...] = (), *,
              extra_addopts: tuple[str, ...] = (), extra: dict[str, str] | None = None,
              bytecode: str | None = None) -> dict[str, str]:
    """The variables of one judge run; ``workspace`` is its path in the sandbox,
    ``bytecode`` that of the trusted bytecode tree (:mod:`judge.bytecode`)."""
    addopts = [*BASE_ADDOPTS]
    for plugin in plugins:
        addopts += ["-p", plugin]
    addopts += extra_addopts
    env = {**BASE_ENV, "WFBENCH_JUDGE_WORKSPACE": workspace,
           "PYTEST_ADDOPTS": shlex.join(addopts)}
    if bytecode is not None:
        env["PYTHONPYCACHEPREFIX"] = bytecode
    env.update(extra or {})
    return env


def bytecode_mount(bytecode: Path | None) -> list[Mount]:
    """The trusted bytecode tree, read-only, at a fixed path in the sandbox."""
    return [] if bytecode is None else [Mount(bytecode, BYTECODE_MOUNT)]


def oracle_addopts(workspace: str, config_file: str) -> tuple[str, ...]:
    """The oracle's rootdir and configuration file, forced."""
    return (f"--rootdir={workspace}", "-c", config_file)


def _module_name(filename: str) -> str | None:
    for suffix in (*importlib.machinery.SOURCE_SUFFIXES,
                   *importlib.machinery.EXTENSION_SUFFIXES):
        if filename.endswith(suffix):
            stem = filename[: -len(suffix)]
            return stem if stem.isidentifier() else None
    return None


def importable_names(trees: list[Path], added: list[str]) -> dict[str, list[str]]:
    """Per directory (relative, '' for the root): the top-level modules and
    packages Python could import from it, in the given trusted trees (the
    template and the hidden paths) and the files a gold patch adds."""
    names: dict[str, set[str]] = {}
    for tree in trees:
        for directory, dirs, files in os.walk(tree):
            dirs[:] = [d for d in dirs if d != ".git"]
            relative = Path(directory).relative_to(tree).as_posix()
            key = "" if relative == "." else relative
            found = {d for d in dirs if d.isidentifier()}
            found |= {name for name in map(_module_name, files) if name}
            if found:
                names.setdefault(key, set()).update(found)
    for path in added:
        parts = Path(path).parts
        for depth in range(len(parts)):
            key = "/".join(parts[:depth])
            name = parts[depth] if depth < len(parts) - 1 else _module_name(parts[depth])
            if name and name.isidentifier():
                names.setdefault(key, set()).add(name)
    return {key: sorted(values) for key, values in sorted(names.items())}


def gold_added_paths(patch: bytes) -> list[str]:
    """Files a gold patch creates (``--- /dev/null`` then ``+++ b/<path>``)."""
    added, new_file = [], False
    for line in patch.decode("utf-8", "replace").splitlines():
        if line.startswith("--- "):
            new_file = line[4:].strip() == "/dev/null"
        elif line.startswith("+++ ") and new_file:
            target = line[4:].strip()
            added.append(target[2:] if target.startswith("b/") else target)
            new_file = False
    return added
