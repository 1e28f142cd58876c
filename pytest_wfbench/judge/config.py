"""The oracle's test configuration is the task's own.

In the judged copy every file that configures pytest or the interpreter
(every ``conftest.py``, every configuration file name pytest reads, taken from
pytest itself, and the interpreter's start-up modules) is reset to its base
version, and any the arm added is removed, without following links. On top
of that, the oracle is told its rootdir and configuration file explicitly
(:func:`forced_config`), so a name a future pytest learns to read cannot
reopen the hole.
"""

from __future__ import annotations

import functools
from pathlib import Path, PurePosixPath

from pytest_wfbench.workspace.layers import JudgedTree

# What pytest read before it had a single list of names (pytest < 9).
PYTEST_8_CONFIG_NAMES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
STARTUP_NAMES = ("conftest.py", "sitecustomize.py", "usercustomize.py")
MAX_CONFIG_BYTES = 4 << 20


def pytest_config_names() -> tuple[str, ...]:
    """The configuration files pytest discovers by name, in its precedence order,
    from the installed pytest itself."""
    try:
        from _pytest.config.findpaths import CONFIG_LOADERS_BY_NAME
    except ImportError:  # pytest 8
        return PYTEST_8_CONFIG_NAMES
    return tuple(CONFIG_LOADERS_BY_NAME)


PROTECTED_NAMES = frozenset((*pytest_config_names(), *STARTUP_NAMES))


@functools.lru_cache(maxsize=64)
def _base_configuration(base: Path) -> dict[str, bytes]:
    """The template's protected files (trusted; built once per sweep)."""
    return {relative: (base / relative).read_bytes()
            for relative in JudgedTree(base).named(PROTECTED_NAMES)
            if (base / relative).is_file() and not (base / relative).is_symlink()}


def reset_test_configuration(judged: JudgedTree, base: Path) -> list[str]:
    """Give the judged tree the base's test configuration; returns what changed."""
    ours = _base_configuration(base)
    changed: list[str] = []
    for relative in sorted(judged.named(PROTECTED_NAMES) | set(ours)):
        path = PurePosixPath(relative)
        theirs = judged.read_regular(path, MAX_CONFIG_BYTES + 1)
        if relative in ours and theirs == ours[relative]:
            continue
        changed.append(relative)
        if relative in ours:
            judged.write_file(path, ours[relative])
        else:
            judged.remove_entry(path)
    return changed


@functools.lru_cache(maxsize=64)
def root_config_file(base: Path) -> str | None:
    """The configuration file pytest finds at the project's root at its base
    (relative to it), by pytest's own rules; None when there is none."""
    try:
        from _pytest.config.findpaths import load_config_dict_from_file
    except ImportError:  # pragma: no cover - every supported pytest has it
        return None
    pyproject = None
    for name in pytest_config_names():
        path = base / name
        if path.is_file() and not path.is_symlink():
            if load_config_dict_from_file(path) is not None:
                return name
            if name == "pyproject.toml":
                pyproject = name
    return pyproject
