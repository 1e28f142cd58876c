"""Generated inputs: a plain-directory Python repo and task files on it.

Everything is written as text (no YAML library), deterministic, so two runs of
the benchmark measure the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ORACLE_DIR = "oracle"
REPO_DIR = "repo"
TINY_REPO_DIR = "tiny-repo"


@dataclass(frozen=True)
class RepoShape:
    packages: int
    modules_per_package: int
    """Modules per package, counting its ``__init__.py``."""

    @property
    def python_files(self) -> int:
        return self.packages * self.modules_per_package


def write_repo(root: Path, shape: RepoShape) -> int:
    """A plain directory (no ``.git``) of small Python packages plus one trivial
    test; returns the number of files written."""
    count = 0
    for p in range(shape.packages):
        package = root / "src" / f"pkg{p:04d}"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(f'"""Package {p}."""\n\nVALUE = {p}\n')
        count += 1
        for m in range(1, shape.modules_per_package):
            (package / f"mod{m:03d}.py").write_text(
                f'"""Module {m} of package {p}."""\n\n\n'
                f"def f{m}(x: int) -> int:\n"
                f"    return x * {m} + {p}\n"
            )
            count += 1
    tests = root / "tests"
    tests.mkdir()
    (tests / "test_trivial.py").write_text("def test_trivial() -> None:\n    assert True\n")
    (root / "README.md").write_text("A generated repo for pytest-wfbench's benchmarks.\n")
    return count + 2


def write_tiny_repo(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "main.py").write_text("print('hello')\n")


def write_oracle(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "check.sh").write_text("exit 1\n")


def task_file_text(
    name: str, repo: str, tasks: int, *, verify: str = "true", oracle_command: str = "false"
) -> str:
    """A task file of ``tasks`` tasks on ``repo`` (relative to the file), arm
    ``noop``, verify ``verify``, oracle ``oracle_command`` with a tiny folder
    and no gold. With the default oracle (``false``) a noop cell is an expected
    XFAIL (oracle-failed), so the sweep measures the whole lifecycle."""
    lines = [
        "version: 1",
        f"name: {name}",
        f"repo: {repo}",
        "arms: [noop]",
        "tasks:",
    ]
    width = len(str(tasks - 1))
    for i in range(tasks):
        lines += [
            f"  - id: t{i:0{width}d}",
            "    class: bench",
            "    prompt: Change nothing; this task measures the harness.",
            f'    verify: "{verify}"',
            "    oracle:",
            f'      command: "{oracle_command}"',
            f"      files: {ORACLE_DIR}/",
            "      expect: exit-code",
            "    timeout: 120",
        ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class SweepWorkload:
    root: Path
    task_file: Path
    repo_files: int
    tasks: int


def make_sweep_workload(root: Path, shape: RepoShape, tasks: int) -> SweepWorkload:
    root.mkdir(parents=True)
    files = write_repo(root / REPO_DIR, shape)
    write_oracle(root / ORACLE_DIR)
    task_file = root / "sweep.yaml"
    task_file.write_text(task_file_text("bench-sweep", REPO_DIR, tasks))
    return SweepWorkload(root=root, task_file=task_file, repo_files=files, tasks=tasks)


@dataclass(frozen=True)
class CollectWorkload:
    label: str
    task_file: Path
    tasks: int
    runs: int

    @property
    def cells(self) -> int:
        return self.tasks * self.runs


def make_collect_workloads(root: Path, cells: int, runs_shape: int) -> list[CollectWorkload]:
    """Two shapes of ``cells`` cells on a tiny repo: ``cells / runs_shape``
    tasks x ``runs_shape`` runs, and ``cells`` tasks x 1 run."""
    root.mkdir(parents=True)
    write_tiny_repo(root / TINY_REPO_DIR)
    write_oracle(root / ORACLE_DIR)
    workloads = []
    for tasks, runs in ((cells // runs_shape, runs_shape), (cells, 1)):
        label = f"{tasks} tasks x {runs} run{'s' if runs > 1 else ''}"
        path = root / f"collect-{tasks}x{runs}.yaml"
        path.write_text(task_file_text(f"bench-collect-{tasks}x{runs}", TINY_REPO_DIR, tasks))
        workloads.append(CollectWorkload(label=label, task_file=path, tasks=tasks, runs=runs))
    return workloads
