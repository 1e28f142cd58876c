"""Generated suites whose cells do real work: Python projects whose verify and
oracle are ``python -m pytest`` (with gold patches), and a suite of scripted
sessions of uneven, fixed lengths. Written as text, deterministic.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from benchmarks.workload import RepoShape, write_repo

VERIFY = "python -m pytest -q -p no:cacheprovider tests"
ORACLE = "python -m pytest -q -p no:cacheprovider $WFBENCH_ORACLE_DIR"


@dataclass(frozen=True)
class Suite:
    """A generated task file and what it holds."""

    root: Path
    task_file: Path
    repo: Path
    repo_files: int
    tasks: tuple[str, ...]

    def oracle_dir(self, task: str) -> Path:
        return self.root / "oracles" / task

    def gold(self, task: str) -> Path:
        return self.root / "gold" / f"{task}.patch"


def _module(task: int, fixed: bool) -> str:
    sign = "+" if fixed else "-"
    return f"def shift{task}(x: int) -> int:\n    return x {sign} {task + 1}\n"


def _gold_patch(task: int) -> str:
    old, new = _module(task, False).splitlines(), _module(task, True).splitlines()
    path = f"calc/shift{task}.py"
    return (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,2 +1,2 @@\n"
            f" {old[0]}\n-{old[1]}\n+{new[1]}\n")


def write_pytest_suite(root: Path, shape: RepoShape, tasks: int, name: str) -> Suite:
    """A plain-directory project: ``shape``'s filler packages, a package ``calc``
    with one wrong function per task, a visible test suite that passes, and per
    task a hidden oracle test and a gold patch that fixes its function."""
    repo = root / "repo"
    files = write_repo(repo, shape)  # filler packages, tests/test_trivial.py, README
    calc = repo / "calc"
    calc.mkdir()
    (calc / "__init__.py").write_text('"""Shifts, one per task."""\n')
    (repo / "tests" / "test_calc.py").write_text(
        "import calc\n\n\ndef test_calc_imports():\n    assert calc.__doc__\n")
    (repo / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-q"\n')
    files += 3
    ids = []
    lines = ["version: 1", f"name: {name}", "repo: repo", "arms: [gold, noop]", "tasks:"]
    for t in range(tasks):
        task_id = f"shift-{t}"
        ids.append(task_id)
        (calc / f"shift{t}.py").write_text(_module(t, False))
        files += 1
        oracle = root / "oracles" / task_id
        oracle.mkdir(parents=True)
        (oracle / f"test_shift{t}.py").write_text(
            f"from calc.shift{t} import shift{t}\n\n\n"
            f"def test_shift():\n    assert shift{t}(1) == {t + 2}\n\n\n"
            f"def test_shift_zero():\n    assert shift{t}(0) == {t + 1}\n")
        gold = root / "gold" / f"{task_id}.patch"
        gold.parent.mkdir(exist_ok=True)
        gold.write_text(_gold_patch(t))
        lines += [f"  - id: {task_id}", "    class: bug",
                  f"    prompt: shift{t} subtracts; make it add.",
                  f'    verify: "{VERIFY}"', "    oracle:", f'      command: "{ORACLE}"',
                  f"      files: oracles/{task_id}/", f"    gold: gold/{task_id}.patch",
                  "    timeout: 300"]
    task_file = root / f"{name}.yaml"
    task_file.write_text("\n".join(lines) + "\n")
    return Suite(root=root, task_file=task_file, repo=repo, repo_files=files, tasks=tuple(ids))


def session_lengths(cells: int, total_s: float, seed: int = 11) -> list[float]:
    """``cells`` session lengths that sum to ``total_s``, ten times apart from the
    shortest to the longest (evenly spaced, then shuffled with ``seed``)."""
    weights = [1 + 9 * i / (cells - 1) for i in range(cells)] if cells > 1 else [1.0]
    scale = total_s / sum(weights)
    lengths = [round(w * scale, 2) for w in weights]
    lengths[-1] = round(total_s - sum(lengths[:-1]), 2)
    random.Random(seed).shuffle(lengths)
    return lengths


def write_sleeper_suite(root: Path, lengths: list[float], name: str) -> Suite:
    """One task per length on a tiny repo: its setup writes the length into the
    workspace, the ``sleeper`` script arm sleeps that long (the session), verify
    and oracle are ``true`` (an oracle judged by exit code)."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    (repo / "main.py").write_text("print('hello')\n")
    (root / "oracle").mkdir()
    (root / "oracle" / "check.sh").write_text("exit 0\n")
    lines = ["version: 1", f"name: {name}", "repo: repo", "arms: [sleeper]",
             "arm_definitions:", "  sleeper:", "    agent: script",
             "    steps: ['sleep \"$(cat .session-length)\"']", "tasks:"]
    width = len(str(len(lengths) - 1))
    ids = []
    for i, seconds in enumerate(lengths):
        task_id = f"s{i:0{width}d}"
        ids.append(task_id)
        lines += [f"  - id: {task_id}", "    class: bench", "    prompt: Sleep.",
                  f'    setup: "printf {seconds} > .session-length"', '    verify: "true"',
                  "    oracle:", '      command: "true"', "      files: oracle/",
                  "      expect: exit-code", "    timeout: 300"]
    task_file = root / f"{name}.yaml"
    task_file.write_text("\n".join(lines) + "\n")
    return Suite(root=root, task_file=task_file, repo=repo, repo_files=1, tasks=tuple(ids))
