"""Trusted bytecode for the judges.

Judges never write bytecode and never read any from the workspace. Without
more, every judge run would compile pytest and everything it imports from
source (about three times the time of a small test run). So the harness
compiles the interpreter's standard library and every installed package once,
itself, into a bytecode tree laid out as ``PYTHONPYCACHEPREFIX`` expects,
keyed by the interpreter and the content of the installed distributions, and
reused by every sweep on the machine. Judges see it read-only as their prefix: Python still
checks each cached file against its source's size and modification time, so
a changed source is compiled afresh, never served stale bytecode; the
workspace's sources have no entry and are compiled in memory.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path

from filelock import FileLock

# Test suites and GUI toolkits: never imported by a judge, and a large part of
# what there is to compile.
EXCLUDE = r"/(test|tests|idlelib|tkinter|turtledemo|lib2to3|ensurepip)/"
COMPLETE = "wfbench-complete"
KEEP = 3
"""How many bytecode trees (interpreters or package sets) a cache dir keeps."""
SITE = Path(__file__).parent / "site"
"""The judges' start-up files."""


def source_roots() -> list[Path]:
    """What the judges import from: the standard library and the site-packages
    of the interpreter that runs the harness, and the judges' own start-up files
    (``judge/site``) when the harness is not installed there (an editable
    install: every judge compiled them afresh)."""
    paths = sysconfig.get_paths()
    roots = {Path(paths[key]).resolve() for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    found = sorted(root for root in roots if root.is_dir())
    site = SITE.resolve()
    if not any(site.is_relative_to(root) for root in found):
        found.append(site)
    return found


def tree_key(roots: list[Path]) -> str:
    """The interpreter and the content of what is compiled, digested: each
    distribution installed in the roots by its ``RECORD`` (which holds every
    installed file's sha256, so a reinstalled package of the same version with
    other files has another key), and the files of a root that is no
    distribution's (the judges' start-up files of an editable install)."""
    digest = hashlib.sha256()
    digest.update(f"{interpreter_id()}\0".encode())
    for root in roots:
        digest.update(f"{root}\0".encode())
    # The distributions installed in the roots (the ones compiled), each once:
    # not those found through the current directory or PYTHONPATH, which made
    # the key, and a 30 s build, depend on where pytest was started.
    installed = {}
    for dist in importlib.metadata.distributions(path=[str(root) for root in roots]):
        record = dist.read_text("RECORD") or ""
        installed[f"{dist.metadata['Name']}=={dist.version}"] = hashlib.sha256(
            record.encode()).hexdigest()
    for name in sorted(installed):
        digest.update(f"{name}\0{installed[name]}\0".encode())
    site = SITE.resolve()
    if site in roots:
        for path in sorted(site.glob("*.py")):
            digest.update(f"{path.name}\0".encode() + path.read_bytes())
    return digest.hexdigest()[:24]


def interpreter_id() -> str:
    """This process's interpreter, as :func:`tree_key` names it."""
    return f"{sys.version}\0{os.path.realpath(sys.executable)}"


def handover(tree: Path) -> dict[str, object]:
    """What an xdist worker needs to use the tree this process found or built
    (:func:`handed_over`), instead of digesting every installed distribution again."""
    return {"path": str(tree), "interpreter": interpreter_id(),
            "roots": [str(root) for root in source_roots()]}


def handed_over(cache_dir: Path, given: Mapping[str, object] | None) -> Path | None:
    """The tree the controller handed over, if this process would have chosen it:
    the same interpreter and roots, in this cache dir, complete. None otherwise
    (a worker on another interpreter keys its own)."""
    if not given or given.get("interpreter") != interpreter_id() \
            or given.get("roots") != [str(root) for root in source_roots()]:
        return None
    tree = Path(str(given.get("path")))
    if tree.parent != cache_dir / "bytecode" or not (tree / COMPLETE).is_file():
        return None
    return tree


def ensure_bytecode(cache_dir: Path) -> Path:
    """The bytecode tree for this interpreter and package set, built here if no
    sweep built it yet (one process builds, concurrent ones wait)."""
    roots = source_roots()
    key = tree_key(roots)
    folder = cache_dir / "bytecode"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / key
    with FileLock(str(folder / f"{key}.lock")):
        if not (target / COMPLETE).exists():
            building = folder / f"{key}.building"
            shutil.rmtree(building, ignore_errors=True)
            shutil.rmtree(target, ignore_errors=True)
            subprocess.run(
                [sys.executable, "-X", f"pycache_prefix={building}", "-m", "compileall", "-q",
                 "-j", "0", "-x", EXCLUDE, *map(str, roots)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""})
            building.mkdir(exist_ok=True)
            (building / COMPLETE).write_text(" ".join(map(str, roots)))
            building.rename(target)
        os.utime(target / COMPLETE)
    _evict(folder, keep=key)
    return target


def _evict(folder: Path, keep: str) -> None:
    """Remove the least recently used trees beyond KEEP (never the one in use)."""
    trees = sorted((path for path in folder.iterdir()
                    if path.is_dir() and (path / COMPLETE).exists() and path.name != keep),
                   key=lambda path: (path / COMPLETE).stat().st_mtime, reverse=True)
    for old in trees[KEEP - 1:]:
        with FileLock(str(folder / f"{old.name}.lock")):
            shutil.rmtree(old, ignore_errors=True)
