"""Weak-oracle probes: cheap wrong "solutions" derived from the gold patch.

For each function or method the gold patch changes or adds (in its gold
version), a probe keeps its signature, decorators and docstring and replaces
its body with one statement: a constant return (``None``, ``0``, ``""``,
``[]``, ``{}``, ``True``, ``False``), ``raise NotImplementedError`` or
``pass``. Each probe is the gold patch's code part (every section that does
not look like tests) with that one function stubbed. One more probe is the
gold patch's tests-only part, without its code. An oracle that passes under
any probe is weak: it accepts a wrong solution. Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pytest_wfbench.audit.arms import unique_arm_names
from pytest_wfbench.audit.patches import FileSection, assemble, looks_like_test, split_patch
from pytest_wfbench.audit.pysource import Function, PythonSource, compiles, docstring_of

# (kind, the statement that becomes the body), in the order probes are made.
STUBS: tuple[tuple[str, str], ...] = (
    ("const-none", "return None"),
    ("const-zero", "return 0"),
    ("const-empty-str", 'return ""'),
    ("const-empty-list", "return []"),
    ("const-empty-dict", "return {}"),
    ("const-true", "return True"),
    ("const-false", "return False"),
    ("raise", "raise NotImplementedError"),
    ("pass", "pass"),
)
TESTS_ONLY = "tests-only"


@dataclass(frozen=True)
class Probe:
    """One weak-oracle probe: a patch from the base, to run like a gold patch."""

    name: str
    """``probe-<kind>:<path>:<qualname>``, or ``probe-tests-only``."""
    arm: str
    """An arm name for it (ARM_NAME_RE), unique among the task's probes."""
    kind: str
    """One of the STUBS kinds, or ``tests-only``."""
    path: str | None
    function: str | None
    patch: str
    description: str


def changed_functions(base: str | None, gold: PythonSource) -> list[Function]:
    """The functions of ``gold`` that are new or whose text (decorators included)
    differs from the base's definition of the same name; all of them when the
    base is absent or does not parse."""
    before: dict[tuple[str, int], str] = {}
    if base is not None:
        try:
            source = PythonSource(base)
        except (SyntaxError, ValueError):
            source = None
        if source is not None:
            before = {(f.qualname, f.occurrence): base[f.start:f.end]
                      for f in source.functions()}
    return [f for f in gold.functions()
            if before.get((f.qualname, f.occurrence)) != gold.text[f.start:f.end]]


def stub_body(source: PythonSource, function: Function, statement: str) -> str:
    """The file's text with the function's body replaced by ``statement``
    (its signature, decorators and docstring kept, every other byte unchanged)."""
    node = function.node
    doc = docstring_of(node)
    rest = node.body[1:] if doc is not None else node.body
    text = source.text
    if rest:
        start = source.statement_start(rest[0])
        return text[:start] + statement + text[source.end(rest[-1]):]
    assert doc is not None  # a body is never empty: here it is the docstring alone
    end = source.end(doc)
    if source.begins_line(doc):
        line = doc.lineno
        addition = source.newline(line) + source.indentation(line) + statement
    else:
        addition = "; " + statement
    return text[:end] + addition + text[end:]


def tests_only_probe(sections: list[FileSection]) -> Probe | None:
    """The gold patch's sections that look like tests, alone; None when it has
    none, or nothing else (then it is no probe: it is the gold patch)."""
    tests = [section for section in sections if looks_like_test(section.path)]
    if not tests or len(tests) == len(sections):
        return None
    paths = ", ".join(section.path for section in tests)
    return Probe(name="probe-tests-only", arm="probe-tests-only", kind=TESTS_ONLY, path=None,
                 function=None, patch=assemble(tests, {}, {}),
                 description=f"the gold patch's tests alone ({paths}), without its code")


def weak_oracle_probes(gold_patch: str, base: Mapping[str, str],
                       gold: Mapping[str, str]) -> list[Probe]:
    """Every probe of a task, in a fixed order: by file in the gold patch's
    order, by function in source order, by stub in STUBS order, then the
    tests-only probe.

    ``base`` and ``gold`` map the paths of the Python files the gold patch
    changes to their text before and after it (a file the patch adds is not in
    ``base``). Files that do not parse, and functions whose stub would not
    compile or would change nothing, give no probe."""
    sections = split_patch(gold_patch)
    code = [section for section in sections if not looks_like_test(section.path)]
    found: list[tuple[str, str, str, str, str]] = []  # name, kind, path, qualname, patch
    seen: set[str] = set()
    for section in code:
        path = section.new_path
        if path is None or not path.endswith(".py") or path not in gold or section.binary:
            continue
        try:
            source = PythonSource(gold[path], path)
        except (SyntaxError, ValueError):
            continue
        original = None if section.old_path is None else base.get(section.old_path)
        for function in changed_functions(original, source):
            for kind, statement in STUBS:
                stubbed = stub_body(source, function, statement)
                if stubbed == source.text or not compiles(stubbed, path):
                    continue
                patch = assemble(code, {path: stubbed}, base)
                if patch in seen:
                    continue
                seen.add(patch)
                found.append((f"probe-{kind}:{path}:{function.qualname}", kind, path,
                              function.qualname, patch))
    probes = [Probe(name=name, arm=arm, kind=kind, path=path, function=qualname, patch=patch,
                    description=f"{qualname} in {path}: body replaced by "
                                f"`{dict(STUBS)[kind]}`")
              for (name, kind, path, qualname, patch), arm
              in zip(found, unique_arm_names(item[0] for item in found), strict=True)]
    tests = tests_only_probe(sections)
    if tests is not None:
        probes.append(tests)
    return probes
