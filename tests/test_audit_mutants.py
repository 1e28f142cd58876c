"""The mutation generator: each operator on small sources (exact texts),
formatting kept outside the mutated node, restriction to the gold patch's
lines, skip counting, the seeded choice, and mutant patches that git applies."""

from __future__ import annotations

import difflib
import textwrap
from pathlib import Path

import pytest

from pytest_wfbench.audit.mutants import (
    DUPLICATE,
    NO_CHANGE,
    NO_COMPILE,
    SAME_AS_BASE,
    check_mutations,
    generate_mutants,
)
from pytest_wfbench.audit.mutations import OPERATORS, Mutation, apply_mutation, find_mutations
from pytest_wfbench.audit.patches import split_patch
from pytest_wfbench.audit.probes import STUBS
from pytest_wfbench.audit.pysource import PythonSource
from pytest_wfbench.tasks.model import ARM_NAME_RE
from tests.test_audit_patches import apply_to, git_patch


def mutated(source: str, operator: str, lines: set[int] | None = None) -> list[str]:
    """Every text the operator makes of ``source``."""
    parsed = PythonSource(source)
    return [apply_mutation(source, m) for m in find_mutations(parsed, lines)
            if m.operator == operator]


@pytest.mark.parametrize(("operator", "source", "expected"), [
    ("compare-flip", "x = a < b\n", ["x = a <= b\n"]),
    ("compare-flip", "x = a >= b\n", ["x = a > b\n"]),
    ("compare-flip", "x = (a) == (b)\n", ["x = (a) != (b)\n"]),
    ("compare-flip", "x = a is not None\n", ["x = a is None\n"]),
    ("compare-flip", "x = k not in d\n", ["x = k in d\n"]),
    ("compare-flip", "x = k in d\n", ["x = k not in d\n"]),
    ("compare-flip", "x = a < b == c\n", ["x = a <= b == c\n", "x = a < b != c\n"]),
    ("boolean-swap", "x = a and b and c\n", ["x = a or b or c\n"]),
    ("boolean-swap", "x = (a or\n     b)\n", ["x = (a and\n     b)\n"]),
    ("drop-not", "if not ok:\n    pass\n", ["if ok:\n    pass\n"]),
    ("drop-not", "x = not(y)\n", ["x = (y)\n"]),
    ("arithmetic-swap", "x = a + b * c\n", ["x = a - b * c\n", "x = a + b / c\n"]),
    ("arithmetic-swap", "x = a // b % c\n", ["x = a % b % c\n", "x = a // b // c\n"]),
    ("arithmetic-swap", "x -= 2\n", ["x += 2\n"]),
    ("arithmetic-swap", "x = a ** b << c\n", []),
    ("constant-plus-one", "n = 10\n", ["n = 11\n"]),
    ("constant-minus-one", "n = 0\n", ["n = -1\n"]),
    ("constant-minus-one", "n = 0x10\n", ["n = 15\n"]),
    ("constant-plus-one", "n = -1\n", ["n = -2\n"]),
    ("constant-plus-one", "n = True\n", []),
    ("constant-plus-one", "n = 1.5\n", []),
    ("slice-plus-one", "s = t[i:len(t)]\n", ["s = t[i + 1:len(t)]\n", "s = t[i:len(t) + 1]\n"]),
    ("slice-minus-one", "s = t[a.b * 2:]\n", ["s = t[(a.b * 2) - 1:]\n"]),
    ("slice-plus-one", "s = t[1:n - 1]\n", []),
    ("constant-plus-one", "s = t[1:n - 1]\n", ["s = t[2:n - 1]\n", "s = t[1:n - 2]\n"]),
    ("boolean-negate", "flag = True\n", ["flag = False\n"]),
    ("boolean-negate", "flag = None\n", []),
    # Nothing in f-strings or annotations, whose positions or effects are not the code's.
    ("arithmetic-swap", 'x = f"{a + 1}"\n', []),
    ("constant-plus-one", "def f(x: Literal[1] = 2) -> Tuple[3]:\n    pass\n",
     ["def f(x: Literal[1] = 3) -> Tuple[3]:\n    pass\n"]),
])
def test_each_operator_mutates_exactly_its_node(operator: str, source: str,
                                               expected: list[str]) -> None:
    assert operator in OPERATORS
    assert mutated(source, operator) == expected


EARLY = textwrap.dedent('''\
    def f(x):
        """Doc."""
        y = x + 1
        if y:
            return y * 2
        return 0
    ''')


def test_return_early_inserts_before_each_statement_of_the_function() -> None:
    lines = EARLY.splitlines(keepends=True)

    def inserted(before: int, statement: str) -> str:
        indent = lines[before - 1][:len(lines[before - 1]) - len(lines[before - 1].lstrip())]
        return "".join([*lines[:before - 1], f"{indent}{statement}\n", *lines[before - 1:]])

    assert mutated(EARLY, "return-none-early") == [inserted(n, "return None") for n in (3, 4, 5, 6)]
    # The first return's expression, before every statement but that return itself.
    assert mutated(EARLY, "return-first-early") == [inserted(n, "return y * 2") for n in (3, 4, 6)]
    nested = "def outer():\n    def inner():\n        return 1\n    return inner\n"
    assert mutated(nested, "return-first-early") == [
        "def outer():\n    return inner\n    def inner():\n        return 1\n    return inner\n"]


def test_mutations_keep_every_other_byte_and_find_non_ascii_positions() -> None:
    source = 'label = "caf\u00e9 \u2014 \U0001f600";  t = a<b   # keep   this\nz  =  ( 3 )\n'
    assert mutated(source, "compare-flip") == [
        'label = "caf\u00e9 \u2014 \U0001f600";  t = a<=b   # keep   this\nz  =  ( 3 )\n']
    assert mutated(source, "constant-plus-one") == [source.replace("( 3 )", "( 4 )")]
    crlf = "def f(a):\r\n    return a + 1\r\n"
    assert mutated(crlf, "arithmetic-swap") == ["def f(a):\r\n    return a - 1\r\n"]
    assert mutated(crlf, "return-none-early") == [
        "def f(a):\r\n    return None\r\n    return a + 1\r\n"]


def test_only_the_given_lines_are_mutated() -> None:
    source = "a = 1 + 2\nb = 3 + 4\nif a < b:\n    c = a and b\n"
    every = find_mutations(PythonSource(source))
    assert {m.line for m in every} == {1, 2, 3, 4}
    some = find_mutations(PythonSource(source), {2, 4})
    assert some == [m for m in every if m.line in (2, 4)]
    assert {m.operator for m in some} == {"constant-plus-one", "constant-minus-one",
                                          "arithmetic-swap", "boolean-swap"}
    assert find_mutations(PythonSource(source), set()) == []


def test_skipped_mutations_are_counted_by_reason() -> None:
    text = "x = not not y\n"
    skipped: dict[str, int] = {}
    mutations = find_mutations(PythonSource(text))
    assert [m.operator for m in mutations] == ["drop-not", "drop-not"]  # both give "not y"
    kept = check_mutations(text, "m.py", mutations, skipped)
    assert [apply_mutation(text, m) for m in kept] == ["x = not y\n"]
    assert skipped == {DUPLICATE: 1}
    same = Mutation("compare-flip", 1, 4, 4, 7, "not", "no change")
    broken = Mutation("compare-flip", 1, 0, 0, 1, "(", "unbalanced")
    skipped = {}
    assert check_mutations(text, "m.py", [same, broken], skipped) == []
    assert skipped == {NO_CHANGE: 1, NO_COMPILE: 1}


def test_a_task_counts_what_gives_no_mutant(tmp_path: Path) -> None:
    base = {"m.py": "def add(a, b):\n    return a - b\n"}
    gold = {"m.py": textwrap.dedent("""\
        def add(a, b):
            return a + b


        async def ticks():
            yield not not 1
        """)}
    patch = git_patch(tmp_path, dict(base), dict(gold))
    result = generate_mutants(patch, base, gold, max_count=100)
    # Line 2: the arithmetic swap and `return None` before it (`return a + b` is the first
    # return: it is not inserted before itself). Line 6: `return None` in an async generator
    # does not compile; the two `not`s each give `not 1`; the constant gives two mutants.
    skipped = {reason: count for reason, count in result.skipped.items() if count}
    assert skipped == {NO_COMPILE: 1, DUPLICATE: 1}
    assert sorted(m.operator for m in result.mutants) == [
        "arithmetic-swap", "constant-minus-one", "constant-plus-one", "drop-not",
        "return-none-early"]
    assert result.candidates == 7 and result.valid == 5
    # Alone in the patch, the swap that gives back the base is no mutant: it is noop.
    fix = {"m.py": "def add(a, b):\n    return a + b\n"}
    alone = generate_mutants(git_patch(tmp_path / "a", dict(base), dict(fix)), base, fix)
    assert [m.operator for m in alone.mutants] == ["return-none-early"]
    assert alone.skipped[SAME_AS_BASE] == 1 and alone.candidates == 2
    unparsable = {"m.py": "def add(a, b:\n"}
    broken = generate_mutants(git_patch(tmp_path / "b", dict(base), dict(unparsable)), base,
                              unparsable)
    assert broken.mutants == () and broken.unparsed == ("m.py",)


MANY_BASE = {"calc.py": "def calc(a, b):\n    return a\n", "tests/test_calc.py": "def test():\n"
             "    pass\n"}
MANY_GOLD = {"calc.py": textwrap.dedent("""\
    def calc(a, b):
        if a < b and not a == 3:
            return a + b * 2 - (a // 4)
        return b[1:a] if a > 0 else (b is None) is True
    """), "tests/test_calc.py": "def test():\n    assert calc(1, 2)\n"}


def test_the_choice_is_bounded_and_deterministic_for_a_seed(tmp_path: Path) -> None:
    patch = git_patch(tmp_path, dict(MANY_BASE), dict(MANY_GOLD))
    every = generate_mutants(patch, MANY_BASE, MANY_GOLD, max_count=1000)
    assert every.valid == len(every.mutants) > 20
    ids = [m.id for m in every.mutants]
    assert len(set(ids)) == len(ids) and all(ARM_NAME_RE.match(m.arm) for m in every.mutants)
    choices = set()
    for seed in range(5):
        chosen = generate_mutants(patch, MANY_BASE, MANY_GOLD, max_count=20, seed=seed)
        assert chosen == generate_mutants(patch, MANY_BASE, MANY_GOLD, max_count=20, seed=seed)
        assert len(chosen.mutants) == 20 and set(chosen.mutants) <= set(every.mutants)
        assert chosen.candidates == every.candidates and chosen.skipped == every.skipped
        # In patch and source order, whatever the seed.
        assert [m.id for m in chosen.mutants] == [i for i in ids if i in
                                                  {m.id for m in chosen.mutants}]
        choices.add(tuple(m.id for m in chosen.mutants))
    assert len(choices) > 1
    assert generate_mutants(patch, MANY_BASE, MANY_GOLD, max_count=0).mutants == ()
    with pytest.raises(ValueError, match="max_count"):
        generate_mutants(patch, MANY_BASE, MANY_GOLD, max_count=-1)


def test_every_mutant_applies_with_git_and_changes_one_place(tmp_path: Path) -> None:
    patch = git_patch(tmp_path, dict(MANY_BASE), dict(MANY_GOLD))
    result = generate_mutants(patch, MANY_BASE, MANY_GOLD, max_count=1000)
    assert {m.operator for m in result.mutants} == set(OPERATORS)
    gold_lines = MANY_GOLD["calc.py"].splitlines(keepends=True)
    for index, mutant in enumerate(result.mutants):
        repo = apply_to(tmp_path, dict(MANY_BASE), mutant.patch, f"m{index}")
        # The gold patch's tests come with every mutant.
        assert (repo / "tests" / "test_calc.py").read_text() == MANY_GOLD["tests/test_calc.py"]
        lines = (repo / "calc.py").read_text().splitlines(keepends=True)
        opcodes = [op for op in difflib.SequenceMatcher(a=gold_lines, b=lines).get_opcodes()
                   if op[0] != "equal"]
        assert len(opcodes) == 1, (mutant.id, opcodes)
        assert mutant.description.startswith(f"calc.py:{mutant.line}: ")


def test_the_demo_suite_gets_mutants_that_apply(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parent.parent / "tasks"
    repo_files = root / "repos" / "textstats"
    base = {str(p.relative_to(repo_files)): p.read_text() for p in repo_files.rglob("*.py")}
    counts = {}
    for patch_file in sorted((root / "gold").glob("*.patch")):
        gold_patch = patch_file.read_text()
        goldtree = apply_to(tmp_path, dict(base), gold_patch, f"gold-{patch_file.stem}")
        gold = {s.path: (goldtree / s.path).read_text() for s in split_patch(gold_patch)}
        result = generate_mutants(gold_patch, base, gold)
        counts[patch_file.stem] = len(result.mutants)
        for index, mutant in enumerate(result.mutants):
            apply_to(tmp_path, dict(base), mutant.patch, f"{patch_file.stem}-{index}")
    # fix-contractions changes a regular expression only: no operator applies to it.
    assert counts == {"add-median": 8, "fix-contractions": 0, "mean-empty-input": 4}


def test_the_docs_name_every_operator_and_stub() -> None:
    docs = (Path(__file__).resolve().parent.parent / "docs" / "audit.md").read_text()
    for name in (*OPERATORS, *(kind for kind, _ in STUBS)):
        assert f"`{name}`" in docs, name
