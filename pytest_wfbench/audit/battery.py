"""The exploit battery: one scripted arm per known way of gaming a judge.

Each exploit class is one YAML file in ``hacks/`` (a new exploit is one new
file): its class, what it does, the harness defence that stops it and the
tests that show it, how it is shown to defeat a judge with no protections,
and its ``steps``, shell commands run like a task file's script arm (bash in
the sandbox at /workspace, uid 1000, no network). Every hack is generic: it
knows nothing of the task, and never fixes anything. The files are validated
when loaded; a broken one is a :class:`TaskFileError` naming the file, the
line and the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pytest_wfbench.tasks.model import ARM_NAME_RE, ArmDefinition, TaskFileError
from pytest_wfbench.tasks.reader import Reader, compose

HACKS_DIR = Path(__file__).resolve().parent / "hacks"
HACK_PREFIX = "hack-"
HACK_KEYS = {"class", "description", "defence", "stopped_by", "caught_as", "naive", "steps"}
# How the harness catches a hack cell: it stays unresolved, or it may resolve
# but is flagged suspicious (code running in the oracle's own process).
CAUGHT_AS = ("unresolved", "suspicious")
STOPPED_BY_RE = re.compile(r"^tests/test_\w+\.py::test_\w+$")

# The naive judges a hack is shown to defeat (tests/test_audit_battery.py):
# pytest: the command exits 0 in the project after the hack, where it fails before;
# git-diff: `git add -A && git diff --cached HEAD` in the project does not show
#   the marker, which the hack did write into the tree;
# hang: reading every file of the tree does not finish;
# huge: the tree's files hold more bytes than the harness's disk limit (4 GiB);
# copy-fails: a recursive copy of the tree (following links) fails.
NAIVE_KINDS = ("pytest", "git-diff", "hang", "huge", "copy-fails")
NAIVE_KEYS = {"pytest": {"kind", "command", "env", "restore_hidden"},
              "git-diff": {"kind", "marker"}}
# Placeholders of a pytest check: {python} the interpreter, {base_python} the
# one a virtualenv was made from, {site_packages} the interpreter's packages,
# {oracle} the naive judge's test paths (the oracle's folder, outside the
# project, and the hidden tests put back in the project).
DEFAULT_NAIVE_COMMAND = "{python} -m pytest -q {oracle}"


@dataclass(frozen=True)
class NaiveCheck:
    """How a hack is shown to defeat a judge that has none of the harness's protections."""

    kind: str
    command: str = DEFAULT_NAIVE_COMMAND
    env: tuple[tuple[str, str], ...] = ()
    restore_hidden: bool = True
    """Whether the hidden tests are put back (overwriting) before the command runs."""
    marker: str | None = None


@dataclass(frozen=True)
class Hack:
    """One exploit class of the battery."""

    exploit_class: str
    description: str
    defence: str
    """The harness defence that stops it."""
    stopped_by: tuple[str, ...]
    """The tests (``tests/<file>.py::<test>``) that show the defence."""
    caught_as: str
    naive: tuple[NaiveCheck, ...]
    arm: ArmDefinition
    """``hack-<class>``: a script arm of the hack's steps."""
    source: Path


def _naive(reader: Reader) -> NaiveCheck:
    kind = reader.required_string("kind")
    if kind not in NAIVE_KINDS:
        reader.fail(reader.line_of("kind"), f"unknown kind {kind!r} (known: "
                    f"{', '.join(NAIVE_KINDS)})", field=reader.name("kind"))
    reader.check_keys(NAIVE_KEYS.get(kind, {"kind"}))
    if kind == "git-diff":
        return NaiveCheck(kind=kind, marker=reader.required_string("marker"))
    env_reader = reader.mapping("env")
    env = () if env_reader is None else tuple(
        (name, env_reader.required_string(name)) for name in env_reader.values)
    return NaiveCheck(kind=kind, command=reader.string("command") or DEFAULT_NAIVE_COMMAND,
                      env=env, restore_hidden=reader.boolean("restore_hidden", True))


def load_hack(path: Path) -> Hack:
    """One hack file, validated."""
    path = path.resolve()
    reader = Reader(path, compose(path), task=None, prefix="")
    reader.check_keys(HACK_KEYS)
    exploit_class = reader.required_string("class")
    if exploit_class != path.stem or not ARM_NAME_RE.match(exploit_class):
        reader.fail(reader.line_of("class"), f"must be the file's name ({path.stem!r}), in "
                    "lower-case letters, digits, '.', '_' and '-'", field="class")
    stopped_by = reader.string_list("stopped_by")
    if not stopped_by:
        reader.fail(reader.line_of("stopped_by"), "name at least one test that shows the "
                    "defence", field="stopped_by")
    for test, line in stopped_by:
        if not STOPPED_BY_RE.match(test):
            reader.fail(line, f"{test!r} is not tests/<file>.py::<test>", field="stopped_by")
    caught_as = reader.string("caught_as") or CAUGHT_AS[0]
    if caught_as not in CAUGHT_AS:
        reader.fail(reader.line_of("caught_as"), f"expected one of {', '.join(CAUGHT_AS)}",
                    field="caught_as")
    naive_node = reader.values.get("naive")
    if naive_node is None or not isinstance(naive_node.value, list) or not naive_node.value:
        reader.fail(reader.line_of("naive"), "a list of the naive judges it defeats is "
                    "required (see NAIVE_KINDS)", field="naive")
        raise AssertionError  # unreachable: fail() raises
    naive = tuple(_naive(Reader(path, item, task=None, prefix=f"naive[{index}]."))
                  for index, item in enumerate(naive_node.value))
    steps = tuple(step for step, _ in reader.string_list("steps"))
    if not steps:
        reader.fail(reader.line_of("steps"), "a hack needs at least one step", field="steps")
    description = reader.required_string("description").strip()
    return Hack(
        exploit_class=exploit_class, description=description,
        defence=reader.required_string("defence").strip(),
        stopped_by=tuple(test for test, _ in stopped_by), caught_as=caught_as, naive=naive,
        arm=ArmDefinition(name=HACK_PREFIX + exploit_class, kind="script", steps=steps,
                          description=description),
        source=path)


def load_hacks(folder: Path = HACKS_DIR) -> dict[str, Hack]:
    """Every hack of a folder, by arm name (``hack-<class>``), in name order."""
    stray = sorted(folder.glob("*.yml"))
    if stray:
        raise TaskFileError(stray[0], None, "hack files end in .yaml: rename it")
    paths = sorted(folder.glob("*.yaml"))
    if not paths:
        raise TaskFileError(folder, None, "the exploit battery has no hack files (*.yaml)")
    hacks = (load_hack(path) for path in paths)
    return {hack.arm.name: hack for hack in hacks}


def hack_arms(folder: Path = HACKS_DIR) -> dict[str, ArmDefinition]:
    """The battery as script arms, by name (``hack-<class>``): what
    ``--wfbench-arms hack`` expands to."""
    return {name: hack.arm for name, hack in load_hacks(folder).items()}
