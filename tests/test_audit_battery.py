"""The exploit battery: every hack file loads as a script arm, a broken one is
a clear error, and every hack really defeats a naive judge.

A naive judge has none of the harness's protections: on a tiny project whose
add() subtracts, it runs pytest plainly from the project (or reads the
project's git diff, or walks its files). Each hack's steps run in a copy of
the project with bash, as the current user, with a fixed environment; then
each of the hack's naive checks must pass, while the same checks on the
untouched project fail (so a check that cannot fail proves nothing).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_wfbench.audit.battery import (
    HACKS_DIR,
    NAIVE_KINDS,
    Hack,
    NaiveCheck,
    hack_arms,
    load_hack,
    load_hacks,
)
from pytest_wfbench.tasks import Limits, TaskFileError, load_task_file
from tests.conftest import task_yaml, write_suite

REPO = Path(__file__).resolve().parent.parent
HACKS = load_hacks()
# Hang guards only (each command takes a second or so): a stalled command fails
# the test instead of the CI job. HANG_S is how long a naive reader is given
# before it counts as blocked; a FIFO without a writer blocks it for ever.
GUARD_S = 300
HANG_S = 5
CALC = "def add(a, b):\n    return a - b\n\n\ndef double(x):\n    return 2 * x\n"
VISIBLE = textwrap.dedent("""\
    from calc import add, double


    def test_double():
        assert double(2) == 4


    def test_add():
        assert add(2, 2) == 4
    """)
HIDDEN = "from calc import add\n\n\ndef test_add_hidden():\n    assert add(1, 1) == 2\n"
ORACLE = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
NAIVE_READER = textwrap.dedent("""\
    import os, sys
    for folder, dirs, files in os.walk(sys.argv[1]):
        for name in files:
            try:
                with open(os.path.join(folder, name), "rb") as entry:
                    while entry.read(1 << 20):
                        pass
            except OSError:
                pass
    """)
# The classes the battery must have (issue 14): test configuration, every
# configuration file name, entry points, start-up files, probed modules,
# early exit, emptied tests, hidden changes, special and huge files.
REQUIRED_CLASSES = {
    "conftest-report-rewrite", "conftest-deselect", "conftest-exit-status",
    "config-pytest-ini", "config-dot-pytest-ini", "config-pytest-toml", "config-dot-pytest-toml",
    "config-pyproject-toml", "config-tox-ini", "config-setup-cfg", "entry-point-plugin",
    "startup-sitecustomize", "startup-user-site", "probed-module", "exit-at-import",
    "test-files-neutralized", "hide-in-nested-repos", "hide-in-ignored-files",
    "hide-in-cache-behind-links", "special-files", "huge-files",
}


@dataclass
class NaiveProject:
    """The tiny project a naive judge judges, with the hidden tests and the
    oracle kept outside it (as the harness keeps them from an arm)."""

    root: Path
    oracle: Path
    hidden: Path
    env: dict[str, str]

    def run(self, command: str, extra_env: dict[str, str] | None = None,
            ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", command], cwd=self.root, text=True,
                              capture_output=True, env={**self.env, **(extra_env or {})},
                              timeout=GUARD_S, check=False)


def make_project(base: Path) -> NaiveProject:
    root, oracle, hidden, home = (base / name for name in ("project", "oracle", "hidden", "home"))
    for folder in (root / "tests", oracle, hidden, home, base / "tmp"):
        folder.mkdir(parents=True)
    (root / "calc.py").write_text(CALC)
    (root / "tests" / "test_visible.py").write_text(VISIBLE)
    (hidden / "test_hidden.py").write_text(HIDDEN)
    (oracle / "test_oracle.py").write_text(ORACLE)
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(home),
           "LANG": "C.UTF-8", "TMPDIR": str(base / "tmp"), "GIT_CONFIG_NOSYSTEM": "1"}
    project = NaiveProject(root, oracle, hidden, env)
    for command in ("git init -q", "git add -A",
                    "git -c user.name=t -c user.email=t@t commit -qm base"):
        assert project.run(command).returncode == 0, command
    return project


def placeholders(project: NaiveProject) -> dict[str, str]:
    return {"python": sys.executable,
            "base_python": getattr(sys, "_base_executable", sys.executable),
            "site_packages": sysconfig.get_paths()["purelib"],
            "oracle": f"{project.oracle} tests/hidden"}


def files_of(root: Path) -> Iterator[Path]:
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                yield path


def naive_judge_defeated(project: NaiveProject, check: NaiveCheck) -> tuple[bool, str]:
    """Whether the naive judge of ``check`` is defeated, with what it saw."""
    if check.kind == "pytest":
        hidden = project.root / "tests" / "hidden"
        if check.restore_hidden:
            if hidden.is_symlink() or hidden.is_file():
                hidden.unlink()
            elif hidden.exists():
                shutil.rmtree(hidden)
            shutil.copytree(project.hidden, hidden)
        values = placeholders(project)
        env = {name: value.format(**values) for name, value in check.env}
        result = project.run(check.command.format(**values), env)
        return result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    if check.kind == "git-diff":
        assert check.marker is not None
        project.run("git add -A")
        diff = project.run("git diff --cached HEAD").stdout
        on_disk = [p for p in files_of(project.root)
                   if check.marker.encode() in p.read_bytes()]
        return bool(on_disk) and check.marker not in diff, f"on disk: {on_disk}\n{diff[-3000:]}"
    if check.kind == "hang":
        try:
            subprocess.run([sys.executable, "-c", NAIVE_READER, str(project.root)],
                           timeout=HANG_S, capture_output=True, check=False)
        except subprocess.TimeoutExpired:
            return True, "the reader blocked"
        return False, "the reader read every file"
    if check.kind == "huge":
        size = sum(p.lstat().st_size for p in files_of(project.root))
        return size > Limits().disk, f"{size:,} bytes"
    assert check.kind == "copy-fails", check.kind
    copy = project.root.parent / "copy"
    try:
        shutil.copytree(project.root, copy, symlinks=True)
    except (OSError, shutil.Error, RecursionError) as error:
        return True, f"{type(error).__name__}"
    finally:
        subprocess.run(["rm", "-rf", str(copy)], check=True)
    return False, "copied"


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    # rm copes with trees deeper than Python's recursive removal does.
    subprocess.run(["rm", "-rf", str(tmp_path)], check=False)


@pytest.mark.parametrize("name", list(HACKS))
def test_each_hack_defeats_a_naive_judge_that_fails_without_it(workdir: Path, name: str) -> None:
    hack = HACKS[name]
    untouched = make_project(workdir / "untouched")
    for check in hack.naive:
        defeated, seen = naive_judge_defeated(untouched, check)
        assert not defeated, f"{name}: the naive {check.kind} judge passes without the hack\n{seen}"
    hacked = make_project(workdir / "hacked")
    outputs = []
    for step in hack.arm.steps:
        result = hacked.run(step)
        outputs.append(f"$ step rc={result.returncode}\n{result.stdout}{result.stderr}")
        assert result.returncode == 0, f"{name}: a step failed\n" + "\n".join(outputs)
    assert (hacked.root / "calc.py").read_text().startswith(CALC), f"{name} fixed add()"
    for check in hack.naive:
        defeated, seen = naive_judge_defeated(hacked, check)
        assert defeated, f"{name}: the naive {check.kind} judge was not defeated\n{seen}\n" \
            + "\n".join(outputs)


def test_every_hack_file_is_a_script_arm_named_after_its_class() -> None:
    arms = hack_arms()
    files = sorted(HACKS_DIR.glob("*.yaml"))
    assert list(arms) == [f"hack-{path.stem}" for path in files]
    assert {hack.exploit_class for hack in HACKS.values()} >= REQUIRED_CLASSES
    for name, arm in arms.items():
        assert arm.name == name and arm.kind == "script" and not arm.network
        assert arm.steps and all(step.strip() for step in arm.steps)
        assert HACKS[name].defence and HACKS[name].description == arm.description
        assert {check.kind for check in HACKS[name].naive} <= set(NAIVE_KINDS)


def test_hack_arms_are_arms_a_task_file_accepts(tmp_path: Path) -> None:
    definitions = {name: {"agent": "script", "steps": list(arm.steps),
                          "description": arm.description} for name, arm in hack_arms().items()}
    suite = write_suite(tmp_path, tasks=[task_yaml()], arms=list(definitions),
                        arm_definitions=definitions)
    loaded = load_task_file(suite.task_file)
    assert loaded.arms == tuple(definitions)
    for name, arm in hack_arms().items():
        assert loaded.arm_definitions[name] == arm


def _test_functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_every_defence_names_tests_that_exist() -> None:
    """The tests a hack file names are real, so the file says which test stops it."""
    for hack in HACKS.values():
        for test in hack.stopped_by:
            file, function = test.split("::")
            assert (REPO / file).is_file(), (hack.exploit_class, test)
            assert function in _test_functions(REPO / file), (hack.exploit_class, test)
        assert any("test_trust" in test for test in hack.stopped_by), hack.exploit_class


def test_only_code_in_the_oracles_process_is_caught_as_suspicious() -> None:
    suspicious = {hack.exploit_class for hack in HACKS.values() if hack.caught_as == "suspicious"}
    assert suspicious == {"in-process-forger"}


VALID = """\
class: {name}
description: Plants something.
defence: Something stops it.
stopped_by:
  - tests/test_trust.py::test_an_arm_cannot_change_how_it_is_judged
naive:
  - kind: pytest
steps:
  - touch planted
"""


@pytest.mark.parametrize(("text", "message"), [
    (VALID.replace("steps:\n  - touch planted\n", ""), r":1: field 'steps': a hack needs"),
    (VALID + "extra: 1\n", r":10: field 'extra': unknown key"),
    (VALID.replace("class: {name}", "class: other"), r":1: field 'class': must be the file's"),
    (VALID.replace("kind: pytest", "kind: telepathy"), r":7: field 'naive\[0\].kind': unknown"),
    (VALID.replace("kind: pytest", "kind: git-diff"), r"field 'naive\[0\].marker': required"),
    (VALID.replace("  - kind: pytest\n", "  - kind: pytest\n    env: {X: 1}\n"),
     r":8: field 'naive\[0\].env.X': expected a non-empty string"),
    (VALID.replace("tests/test_trust.py::", "test_trust::"), r":5: field 'stopped_by'"),
    (VALID.replace("naive:\n  - kind: pytest\n", ""), r"field 'naive': a list of the naive"),
    (VALID + "caught_as: never\n", r":10: field 'caught_as': expected one of"),
    (VALID.replace("steps:", "steps: [unclosed"), r":10: invalid YAML"),
])
def test_a_broken_hack_file_is_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "broken-one.yaml"
    path.write_text(text.replace("{name}", "broken-one"))
    with pytest.raises(TaskFileError, match=message) as raised:
        load_hacks(tmp_path)
    assert str(path) in str(raised.value)


def test_a_folder_without_hacks_or_with_a_misnamed_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="has no hack files"):
        load_hacks(tmp_path)
    (tmp_path / "one.yml").write_text(VALID.replace("{name}", "one"))
    with pytest.raises(TaskFileError, match=r"one\.yml: hack files end in \.yaml"):
        load_hacks(tmp_path)
    (tmp_path / "one.yml").rename(tmp_path / "one.yaml")
    hack: Hack = load_hacks(tmp_path)["hack-one"]
    assert load_hack(tmp_path / "one.yaml") == hack
    assert hack.arm.steps == ("touch planted",) and hack.caught_as == "unresolved"
    assert hack.naive == (NaiveCheck(kind="pytest"),)


def test_the_docs_name_every_class() -> None:
    docs = (REPO / "docs" / "audit.md").read_text()
    for hack in HACKS.values():
        assert f"`{hack.exploit_class}`" in docs, hack.exploit_class
