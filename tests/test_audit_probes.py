"""Weak-oracle probes on a small module with functions, methods, a nested
function, decorators and docstrings, checked with real git: each probe's patch
applies to the base and gives the gold tree with exactly one body stubbed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_wfbench.audit.patches import split_patch
from pytest_wfbench.audit.probes import (
    STUBS,
    TESTS_ONLY,
    changed_functions,
    stub_body,
    weak_oracle_probes,
)
from pytest_wfbench.audit.pysource import PythonSource
from pytest_wfbench.tasks.model import ARM_NAME_RE
from tests.test_audit_patches import apply_to, git_patch

BASE_SHAPES = textwrap.dedent('''\
    """Shapes."""

    import math


    def area(radius):
        return math.pi * radius ** 2


    class Box:
        def __init__(self, width, height):
            self.width = width
            self.height = height

        def volume(self, depth):
            return self.width * self.height * depth
    ''')
GOLD_SHAPES = textwrap.dedent('''\
    """Shapes."""

    import functools
    import math


    def area(radius):
        return math.pi * radius ** 2


    def perimeter(radius: float) -> float:
        """The circle's perimeter."""
        return 2 * math.pi * radius  # tau r


    class Box:
        def __init__(self, width, height):
            self.width = width
            self.height = height

        @functools.cache
        def volume(self, depth):
            """Its volume."""
            def scaled(value):
                return value * depth
            return scaled(self.width * self.height)

        async def fetch(self): return self.width

        def abstract(self):
            """Subclasses say."""
    ''')
TEST_SHAPES = ("from pkg.shapes import perimeter\n\n\ndef test_perimeter():\n"
               "    assert perimeter(1)\n")
BASE: dict[str, bytes | str] = {
    "pkg/shapes.py": BASE_SHAPES, "pkg/__init__.py": "", "data/notes.txt": "v1\n",
    "data/logo.bin": b"\x00\x01\x02" * 20}
GOLD: dict[str, bytes | str] = {
    "pkg/shapes.py": GOLD_SHAPES, "data/notes.txt": "v2\n", "data/logo.bin": b"\x00\x09" * 30,
    "tests/test_shapes.py": TEST_SHAPES}
CHANGED = ["perimeter", "Box.volume", "Box.volume.<locals>.scaled", "Box.fetch", "Box.abstract"]


def texts(files: dict[str, bytes | str]) -> dict[str, str]:
    return {path: text for path, text in files.items() if isinstance(text, str)}


@pytest.fixture
def gold_patch(tmp_path: Path) -> str:
    return git_patch(tmp_path, dict(BASE), dict(GOLD))


def test_changed_and_added_functions_are_found_and_unchanged_ones_are_not() -> None:
    gold = PythonSource(GOLD_SHAPES)
    assert [f.qualname for f in changed_functions(BASE_SHAPES, gold)] == CHANGED
    assert len(changed_functions(None, gold)) == len(CHANGED) + 2  # area and __init__ too
    assert changed_functions(GOLD_SHAPES, gold) == []
    assert len(changed_functions("def broken(:\n", gold)) == len(CHANGED) + 2


def test_a_stub_keeps_signature_decorators_and_docstring() -> None:
    gold = PythonSource(GOLD_SHAPES)
    functions = {f.qualname: f for f in gold.functions()}
    volume = stub_body(gold, functions["Box.volume"], "return None")
    assert volume == GOLD_SHAPES.replace(
        "        def scaled(value):\n            return value * depth\n"
        "        return scaled(self.width * self.height)\n", "        return None\n")
    scaled = stub_body(gold, functions["Box.volume.<locals>.scaled"], "raise NotImplementedError")
    assert scaled == GOLD_SHAPES.replace("return value * depth", "raise NotImplementedError")
    fetch = stub_body(gold, functions["Box.fetch"], "pass")
    assert fetch == GOLD_SHAPES.replace("async def fetch(self): return self.width",
                                        "async def fetch(self): pass")
    abstract = stub_body(gold, functions["Box.abstract"], 'return ""')
    assert abstract == GOLD_SHAPES.replace('"""Subclasses say."""',
                                           '"""Subclasses say."""\n        return ""')
    perimeter = stub_body(gold, functions["perimeter"], "return []")
    assert perimeter == GOLD_SHAPES.replace("return 2 * math.pi * radius  # tau r",
                                            "return []  # tau r")


def test_probes_are_every_stub_of_every_changed_function_then_the_tests_alone(
    gold_patch: str,
) -> None:
    probes = weak_oracle_probes(gold_patch, texts(BASE), texts(GOLD))
    expected = [f"probe-{kind}:pkg/shapes.py:{qualname}" for qualname in CHANGED
                for kind, _ in STUBS]
    assert [p.name for p in probes] == [*expected, "probe-tests-only"]
    assert probes[0].name == "probe-const-none:pkg/shapes.py:perimeter"
    assert probes[-1].kind == TESTS_ONLY and probes[-1].path is None
    arms = [p.arm for p in probes]
    assert len(set(arms)) == len(arms) and all(ARM_NAME_RE.match(arm) for arm in arms)
    assert weak_oracle_probes(gold_patch, texts(BASE), texts(GOLD)) == probes  # deterministic
    assert "Box.volume in pkg/shapes.py: body replaced by `return {}`" in [
        p.description for p in probes]


def test_every_probe_applies_with_git_and_changes_only_its_function(
    tmp_path: Path, gold_patch: str,
) -> None:
    probes = weak_oracle_probes(gold_patch, texts(BASE), texts(GOLD))
    gold = PythonSource(GOLD_SHAPES)
    functions = {f.qualname: f for f in gold.functions()}
    statements = dict(STUBS)
    for index, probe in enumerate(probes):
        repo = apply_to(tmp_path, dict(BASE), probe.patch, f"probe{index}")
        # Tests the gold patch adds never come with a stub; its other files do.
        assert (repo / "tests" / "test_shapes.py").exists() is (probe.kind == TESTS_ONLY)
        if probe.kind == TESTS_ONLY:
            assert (repo / "tests" / "test_shapes.py").read_text() == TEST_SHAPES
            assert (repo / "pkg" / "shapes.py").read_text() == BASE_SHAPES
            assert (repo / "data" / "notes.txt").read_text() == "v1\n"
            continue
        assert probe.function is not None
        expected = stub_body(gold, functions[probe.function], statements[probe.kind])
        assert (repo / "pkg" / "shapes.py").read_text() == expected, probe.name
        assert (repo / "data" / "notes.txt").read_text() == "v2\n"
        assert (repo / "data" / "logo.bin").read_bytes() == GOLD["data/logo.bin"]


def test_a_gold_patch_of_tests_or_of_no_function_gives_what_it_can(tmp_path: Path) -> None:
    only_tests = git_patch(tmp_path / "a", {"m.py": "X = 1\n"}, {"tests/test_m.py": "x = 1\n"})
    assert weak_oracle_probes(only_tests, {}, {}) == []  # its tests alone are the gold patch
    constant = git_patch(tmp_path / "b", {"m.py": "X = 1\n"},
                         {"m.py": "X = 2\n", "tests/test_m.py": "def test_x():\n    pass\n"})
    [probe] = weak_oracle_probes(constant, {"m.py": "X = 1\n"}, {"m.py": "X = 2\n"})
    assert probe.name == "probe-tests-only"
    already = git_patch(tmp_path / "c", {"m.py": "X = 1\n"},
                        {"m.py": "def f():\n    pass\n"})
    names = [p.name for p in weak_oracle_probes(already, {"m.py": "X = 1\n"},
                                                {"m.py": "def f():\n    pass\n"})]
    assert "probe-pass:m.py:f" not in names and len(names) == len(STUBS) - 1
    unparsable = {"m.py": "def f(:\n"}
    broken = git_patch(tmp_path / "d", {"m.py": "X = 1\n"}, dict(unparsable))
    assert weak_oracle_probes(broken, {"m.py": "X = 1\n"}, unparsable) == []


@pytest.mark.parametrize("task", ["add-median", "mean-empty-input", "fix-contractions"])
def test_the_demo_suite_gets_probes_that_apply(tmp_path: Path, task: str) -> None:
    root = Path(__file__).resolve().parent.parent / "tasks"
    gold_patch = (root / "gold" / f"{task}.patch").read_text()
    repo_files = root / "repos" / "textstats"
    base = {str(p.relative_to(repo_files)): p.read_text() for p in repo_files.rglob("*.py")}
    goldtree = apply_to(tmp_path, dict(base), gold_patch, "gold")
    paths = [s.path for s in split_patch(gold_patch)]
    gold = {path: (goldtree / path).read_text() for path in paths}
    probes = weak_oracle_probes(gold_patch, base, gold)
    functions = {"add-median": ["median_word_length"], "mean-empty-input": ["mean_word_length"],
                 "fix-contractions": []}[task]
    assert [p.name for p in probes] == [f"probe-{kind}:textstats/core.py:{function}"
                                        for function in functions for kind, _ in STUBS] + [
        "probe-tests-only"]
    for index, probe in enumerate(probes):
        apply_to(tmp_path, dict(base), probe.patch, f"p{index}")
