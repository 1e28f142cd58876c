"""Review tasks in a task file (``kind: review``): the change under review and the
hidden labels its reviews are scored against (docs/review.md).

A review task has no verify command, no oracle command, files or hidden paths,
and no gold patch: the arm changes nothing, and its review is scored against
``oracle.findings`` and ``oracle.verdict``. Whether the change applies to the
task's template is checked by the harness before any cell runs.
"""

from __future__ import annotations

import re
from pathlib import Path

from pytest_wfbench.review.change import ChangeError, parse_change
from pytest_wfbench.review.schema import review_schema
from pytest_wfbench.tasks.model import (
    CATEGORIES,
    KIND_REVIEW,
    REVIEW_LABEL_KEYS,
    REVIEW_ORACLE_KEYS,
    REVIEW_TASK_KEYS,
    SEVERITIES,
    VERDICTS,
    OracleSpec,
    RepoSpec,
    ReviewLabel,
    ReviewLabels,
    SandboxSpec,
    Task,
)
from pytest_wfbench.tasks.reader import Reader, inside_folder

# Label ids become the ids of the gold arm's review, so they follow its schema.
LABEL_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_LINE = 10_000_000
MAX_PATH_CHARS = 1024
# Keys of a change task that a review task cannot have, and why.
NOT_FOR_REVIEW = {
    "verify": "a review task has no verify command: its review is scored against "
              "oracle.findings and oracle.verdict",
    "gold": "a review task has no gold patch: the gold arm writes the labelled findings "
            "as its review",
}
NOT_FOR_REVIEW_ORACLE = {
    key: "a review task's oracle is its labels (findings, verdict): no command, files, "
         "hidden paths, plugins or expected tests"
    for key in ("command", "files", "hidden_paths", "plugins", "expect")
}
ONLY_FOR_REVIEW = {
    "change": "only a review task (kind: review) has a change; a change task's "
              "reference solution is its gold patch",
}
ONLY_FOR_REVIEW_ORACLE = {
    key: "only a review task (kind: review) has labels under its oracle"
    for key in ("findings", "verdict")
}


def _reject(reader: Reader, hints: dict[str, str]) -> None:
    for key, hint in hints.items():
        if key in reader.values:
            reader.fail(reader.line_of(key), hint, field=reader.name(key))


def reject_review_keys(reader: Reader) -> None:
    """A change task's reader: name review-only keys with a hint, before the
    generic unknown-key error."""
    _reject(reader, ONLY_FOR_REVIEW)
    oracle = reader.values.get("oracle")
    if oracle is not None and isinstance(oracle.value, dict):
        _reject(Reader(reader.path, oracle, task=reader.task, prefix="oracle."),
                ONLY_FOR_REVIEW_ORACLE)


def check_review_task_keys(reader: Reader) -> None:
    """A review task's top-level keys: a change task's own named with a hint, then
    any other unknown key."""
    _reject(reader, NOT_FOR_REVIEW)
    reader.check_keys(REVIEW_TASK_KEYS)


def _path_pattern() -> str:
    """Label paths are written as reviews write them (the gold arm's review holds
    them), so they follow the review artifact's pattern."""
    pattern: str = review_schema()["$defs"]["finding"]["properties"]["path"]["pattern"]
    return pattern


def _integer(reader: Reader, key: str, default: int | None = None) -> int:
    if key not in reader.values:
        if default is not None:
            return default
        reader.fail(reader.node.line, "required field is missing", field=reader.name(key))
    value = reader.values[key].value
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LINE:
        reader.fail(reader.line_of(key), f"expected a line number from 1 to {MAX_LINE:,}, "
                    f"got {value!r}", field=reader.name(key))
    return int(value)


def _choice(reader: Reader, key: str, options: tuple[str, ...]) -> str:
    value = reader.required_string(key)
    if value not in options:
        reader.fail(reader.line_of(key), f"unknown {key} {value!r} (known: "
                    f"{', '.join(options)})", field=reader.name(key))
    return value


def _label(reader: Reader) -> ReviewLabel:
    reader.check_keys(REVIEW_LABEL_KEYS)
    label_id = reader.string("id")
    if label_id is not None and not LABEL_ID_RE.match(label_id):
        reader.fail(reader.line_of("id"), f"{label_id!r} is not a valid finding id (1 to 64 "
                    "letters, digits, '.', '_', '-'; starting with a letter or digit)",
                    field=reader.name("id"))
    path = reader.required_string("path")
    if len(path) > MAX_PATH_CHARS or re.search(_path_pattern(), path) is None:
        reader.fail(reader.line_of("path"), f"{path!r} is not a path as a review names it: "
                    "relative to the repository root, with / separators, no leading /, no . "
                    "or .. segment, no empty segment, no backslash or control character",
                    field=reader.name("path"))
    line = _integer(reader, "line")
    end_line = _integer(reader, "end_line", default=line)
    if end_line < line:
        reader.fail(reader.line_of("end_line"), f"end_line {end_line} is before line {line}",
                    field=reader.name("end_line"))
    if "blocking" not in reader.values:
        reader.fail(reader.node.line, "required field is missing (true or false)",
                    field=reader.name("blocking"))
    return ReviewLabel(
        path=path, line=line, end_line=end_line,
        severity=_choice(reader, "severity", SEVERITIES),
        category=_choice(reader, "category", CATEGORIES),
        blocking=reader.boolean("blocking", False), id=label_id,
    )


def _labels(oracle: Reader) -> ReviewLabels:
    _reject(oracle, NOT_FOR_REVIEW_ORACLE)
    oracle.check_keys(REVIEW_ORACLE_KEYS)
    node = oracle.values.get("findings")
    if node is None or not isinstance(node.value, list):
        oracle.fail(oracle.line_of("findings"), "expected a list of expected findings "
                    "([] for a clean control, a change with nothing to find)",
                    field=oracle.name("findings"))
        raise AssertionError  # unreachable: fail() raises
    findings = tuple(
        _label(Reader(oracle.path, item, task=oracle.task,
                      prefix=f"{oracle.name('findings')}[{index}]."))
        for index, item in enumerate(node.value)
    )
    seen: dict[str, int] = {}
    for index, label in enumerate(findings):
        if label.id is not None and label.id in seen:
            oracle.fail(node.value[index].line, f"finding id {label.id!r} is already used by "
                        f"findings[{seen[label.id]}]", field=f"{oracle.name('findings')}"
                        f"[{index}].id")
        if label.id is not None:
            seen[label.id] = index
    verdict = _choice(oracle, "verdict", VERDICTS)
    if not findings and verdict != "approve":
        oracle.fail(oracle.line_of("verdict"), "a clean control (findings: []) expects the "
                    f"verdict approve, not {verdict!r}", field=oracle.name("verdict"))
    if any(label.blocking for label in findings) and verdict != "request_changes":
        oracle.fail(oracle.line_of("verdict"), "a change with a blocking finding expects the "
                    f"verdict request_changes, not {verdict!r}", field=oracle.name("verdict"))
    return ReviewLabels(findings=findings, verdict=verdict)


def _change(reader: Reader, base: Path) -> Path:
    value = reader.required_string("change")
    line = reader.line_of("change")
    change = inside_folder(value, base, reader, "change", line)
    if not change.is_file():
        reader.fail(line, f"{change} is not a file", field="change")
    try:
        parse_change(change.read_bytes())
    except ChangeError as error:
        reader.fail(line, f"{change} is not a patch: {error}", field="change")
    except OSError as error:
        reader.fail(line, f"cannot read {change}: {error.strerror}", field="change")
    return change


def load_review_task(reader: Reader, *, task_id: str, repo: RepoSpec, sandbox: SandboxSpec,
                     default_timeout_s: float) -> Task:
    """A ``kind: review`` task, from its reader; the loader has checked its keys
    (:func:`check_review_task_keys`) and read its id, repo and sandbox (merged with
    the file's)."""
    base = reader.path.parent
    change = _change(reader, base)
    oracle = reader.mapping("oracle")
    if oracle is None:
        reader.fail(reader.node.line, "required field is missing (the labels: findings and "
                    "verdict)", field="oracle")
        raise AssertionError  # unreachable: fail() raises
    return Task(
        id=task_id,
        task_class=reader.string("class", default="review") or "review",
        repo=repo,
        ref=reader.string("ref", default="HEAD") or "HEAD",
        prompt=reader.required_string("prompt"),
        setup=reader.string("setup"),
        prepare=reader.string("prepare"),
        verify="",
        oracle=OracleSpec(command="", files=None, hidden_paths=(), review=_labels(oracle)),
        gold=None,
        timeout_s=reader.number("timeout", default_timeout_s),
        expensive=reader.boolean("expensive", False),
        sandbox=sandbox,
        source=reader.path,
        line=reader.node.line,
        kind=KIND_REVIEW,
        change=change,
    )

