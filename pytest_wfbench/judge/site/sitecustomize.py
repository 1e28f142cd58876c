"""Import rules for the harness's judges (verify, oracle), installed at
interpreter start-up by pytest-wfbench, before any test code runs.

The workspace ($WFBENCH_JUDGE_WORKSPACE) is the arm's: every byte of it may be
hostile. Here it can only ever provide the project's own modules:

1. It is searched last: judges run with PYTHONSAFEPATH, so the working
   directory is not first on the path; it is appended here.
2. It holds no package metadata: distributions (and so entry points and
   pytest plugins) are never looked for in it.
3. It holds no bytecode: a workspace directory on the path imports source and
   extension modules only, never a ``.pyc`` an arm left.
4. For the oracle ($WFBENCH_JUDGE_IMPORTS names a JSON file), a workspace
   directory on the path provides only the top-level names the project has
   there at its base commit or that the gold patch adds, so a planted module
   never satisfies an import that the interpreter, the standard library, pytest
   or an installed package makes on its own.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from importlib.machinery import (
    EXTENSION_SUFFIXES,
    SOURCE_SUFFIXES,
    ExtensionFileLoader,
    FileFinder,
    ModuleSpec,
    PathFinder,
    SourceFileLoader,
)
from types import ModuleType
from typing import Any

_ROOT = os.environ.get("WFBENCH_JUDGE_WORKSPACE") or os.getcwd()
_ALLOWED: dict[str, frozenset[str]] | None = None
if os.environ.get("WFBENCH_JUDGE_IMPORTS"):
    with open(os.environ["WFBENCH_JUDGE_IMPORTS"], encoding="utf-8") as _file:
        _ALLOWED = {key: frozenset(names) for key, names in json.load(_file).items()}
_INSIDE: dict[str, str | None] = {}


def _under_root(path: str) -> bool:
    return path == _ROOT or path.startswith(_ROOT + os.sep)


def _workspace_dir(entry: str) -> str | None:
    """The entry's directory relative to the workspace, or None outside it."""
    if entry in _INSIDE:
        return _INSIDE[entry]
    absolute = os.path.abspath(entry or os.curdir)
    real = os.path.realpath(absolute)
    inside: str | None = None
    for path in (absolute, real):
        if _under_root(path):
            relative = os.path.relpath(path, _ROOT)
            inside = "" if relative == os.curdir else relative
            break
    _INSIDE[entry] = inside
    return inside


class WorkspaceFinder(FileFinder):
    """The finder of a workspace directory: source and extension modules only,
    never bytecode; and, for the oracle, a top-level name only if the project
    has it there at its base or the gold patch adds it. Every caller goes
    through it, pytest's assertion rewriter (which calls PathFinder directly)
    included."""

    def __init__(self, path: str, allowed: frozenset[str] | None) -> None:
        super().__init__(path, (SourceFileLoader, SOURCE_SUFFIXES),
                         (ExtensionFileLoader, EXTENSION_SUFFIXES))
        self.allowed = allowed

    def find_spec(self, fullname: str, target: ModuleType | None = None) -> ModuleSpec | None:
        if self.allowed is not None and "." not in fullname and fullname not in self.allowed:
            return None
        return super().find_spec(fullname, target)


class JudgePathFinder:
    """sys.meta_path's path finder, which never finds package metadata (and so
    entry points or pytest plugins) in the workspace."""

    @classmethod
    def find_spec(cls, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        return PathFinder.find_spec(fullname, path, target)

    @classmethod
    def invalidate_caches(cls) -> None:
        PathFinder.invalidate_caches()

    @classmethod
    def find_distributions(cls, context: Any = None) -> Iterable[Any]:
        from importlib.metadata import DistributionFinder

        context = context if context is not None else DistributionFinder.Context()
        paths = [entry for entry in context.path if _workspace_dir(entry) is None]
        return PathFinder.find_distributions(
            DistributionFinder.Context(name=context.name, path=paths))


def _workspace_hook(entry: str) -> FileFinder:
    directory = _workspace_dir(entry)
    if directory is None:
        raise ImportError("not a workspace directory")
    allowed = None if _ALLOWED is None else _ALLOWED.get(directory, frozenset())
    return WorkspaceFinder(entry, allowed)


def _load_reporter() -> None:
    """For the oracle: load the result reporter under a random name, with the
    key read from the pipe the harness passed (then closed) and the pipe it
    writes its records to, and ask pytest to load it. A process without the key
    (one the oracle's pytest starts, e.g. an xdist worker, inherits the name)
    gets an inert copy. One pytest run per oracle command reports: the key can
    be read once."""
    addopts = os.environ.get("PYTEST_ADDOPTS", "")
    inherited = [word for word in addopts.split() if word.startswith("wfbench_r")]
    key_fd = os.environ.pop("WFBENCH_JUDGE_KEY_FD", None)
    out_fd = os.environ.pop("WFBENCH_JUDGE_OUTCOMES_FD", None)
    key, out = b"", None
    if key_fd is not None and out_fd is not None:
        try:
            # A pipe: once read here, nothing is left in it for anyone else.
            while len(key) < 32:
                chunk = os.read(int(key_fd), 32 - len(key))
                if not chunk:
                    break
                key += chunk
            os.close(int(key_fd))
            out = int(out_fd)
            os.set_inheritable(out, False)
        except (ValueError, OSError):
            key, out = b"", None
    if len(key) == 32 and out is not None:
        name = "wfbench_r" + os.urandom(8).hex()
        os.environ["PYTEST_ADDOPTS"] = f"{addopts} -p {name}".strip()
    elif inherited:
        name, key, out = inherited[0], b"", None
    else:
        return
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        name, os.path.join(os.path.dirname(os.path.abspath(__file__)), "wfbench_outcomes.py"))
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.open_channel(module, key or None, out)
    sys.modules[name] = module


sys.meta_path[:] = [JudgePathFinder if finder is PathFinder else finder
                    for finder in sys.meta_path]
sys.path_hooks.insert(0, _workspace_hook)
sys.path_importer_cache.clear()
if os.getcwd() not in sys.path:
    sys.path.append(os.getcwd())
_load_reporter()
