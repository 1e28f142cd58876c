"""What the judges (verify, oracle) run with, so that an arm can only win by
changing its code, not by changing how it is judged.

- Python: the workspace is searched last (no module in it can shadow pytest or
  any installed package), bytecode caches go to a private prefix (a stale
  ``.pyc`` left in the workspace is never loaded), no user site.
- pytest: ``--import-mode=append`` (test folders are appended to ``sys.path``,
  not prepended), no cache provider.
- For the oracle, the test configuration is the task's own: every
  ``conftest.py`` and pytest configuration file in the judged copy is reset to
  its base version (and any the agent added is removed).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest_wfbench
from pytest_wfbench.workspace.clone import real_directories

JUDGE_SITE = Path(pytest_wfbench.__file__).resolve().parent / "judge" / "site"
JUDGE_ENV = {
    "PYTHONSAFEPATH": "1",
    "PYTHONPATH": str(JUDGE_SITE),
    "PYTHONPYCACHEPREFIX": "/tmp/wfbench-judge-pycache",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONNOUSERSITE": "1",
    "PYTEST_ADDOPTS": "--import-mode=append -p no:cacheprovider",
}
PROTECTED_NAMES = frozenset({"conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg",
                             "pyproject.toml", "sitecustomize.py", "usercustomize.py"})


def _protected(root: Path) -> set[Path]:
    found: set[Path] = set()
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        found.update(Path(directory, name).relative_to(root)
                     for name in files if name in PROTECTED_NAMES)
    return found


def reset_test_configuration(judged: Path, base: Path) -> list[str]:
    """Give the judged copy the base's test configuration; returns what changed."""
    changed: list[str] = []
    for relative in sorted(_protected(judged) | _protected(base)):
        ours, theirs = base / relative, judged / relative
        if ours.is_file() and theirs.is_file() and not theirs.is_symlink() \
                and ours.read_bytes() == theirs.read_bytes():
            continue
        changed.append(relative.as_posix())
        if theirs.is_symlink() or theirs.is_file():
            theirs.unlink()
        elif theirs.is_dir():
            shutil.rmtree(theirs)
        if ours.is_file():
            target = real_directories(judged, relative.parent) / relative.name
            shutil.copy2(ours, target)
    return changed
