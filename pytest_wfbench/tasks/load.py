"""Loading and validating task files (SPEC §2).

Every error names the file, the line, the task and the field, so a user can
fix a suite without guessing; the plugin turns it into a usage error before
any cell runs.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from collections.abc import Sequence
from pathlib import Path

from pytest_wfbench.heap import collector_paused, freeze_long_lived
from pytest_wfbench.tasks.arms import arm_definitions as load_arm_definitions
from pytest_wfbench.tasks.arms import skills_folder
from pytest_wfbench.tasks.model import (
    BUILTIN_ARMS,
    DEFAULT_TIMEOUT_S,
    ENV_NAME_RE,
    EXPECT_EXIT_CODE,
    KIND_CHANGE,
    KIND_REVIEW,
    LIMIT_KEYS,
    ORACLE_KEYS,
    SANDBOX_KEYS,
    SCHEMA_VERSION,
    TASK_ID_RE,
    TASK_KEYS,
    TASK_KINDS,
    TOP_KEYS,
    OracleSpec,
    RepoSpec,
    SandboxSpec,
    Task,
    TaskFile,
    TaskFileError,
    looks_like_url,
)
from pytest_wfbench.tasks.parsecache import parse_cache
from pytest_wfbench.tasks.reader import (
    Node,
    Reader,
    compose,
    forget_resolved_paths,
    inside_folder,
    readable,
    relative_repo_path,
)
from pytest_wfbench.tasks.review import (
    check_review_task_keys,
    load_review_task,
    reject_review_keys,
)
from pytest_wfbench.tasks.scenarios import load_scenarios, load_subjects


def _sandbox(reader: Reader | None) -> SandboxSpec:
    if reader is None:
        return SandboxSpec()
    reader.check_keys(SANDBOX_KEYS)
    read_only = []
    for value, line in reader.string_list("read_only"):
        if not Path(value).is_absolute():
            reader.fail(line, f"{value!r} must be an absolute path", field=reader.name("read_only"))
        read_only.append(value)
    env: dict[str, str] = {}
    env_reader = reader.mapping("env")
    if env_reader is not None:
        for key, node in env_reader.values.items():
            if not ENV_NAME_RE.match(key):
                env_reader.fail(node.line, "not a valid variable name", field=env_reader.name(key))
            if not isinstance(node.value, str | int | float) or isinstance(node.value, bool):
                env_reader.fail(node.line, "expected a string value", field=env_reader.name(key))
            env[key] = str(node.value)
    return SandboxSpec(read_only=tuple(read_only), env=tuple(sorted(env.items())),
                       limits=_limits(reader.mapping("limits")))


SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb|tb|kib|mib|gib|tib)?\s*$", re.I)
SIZE_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
              "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
COUNT_LIMITS = ("processes", "files")


def _limits(reader: Reader | None) -> tuple[tuple[str, int], ...]:
    """``sandbox.limits``: counts as whole numbers, sizes in bytes or with a unit
    (512MiB, 4GiB, 100MB)."""
    if reader is None:
        return ()
    reader.check_keys(LIMIT_KEYS)
    limits: dict[str, int] = {}
    for key, node in reader.values.items():
        value = node.value
        number: float | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and key not in COUNT_LIMITS:
            match = SIZE_RE.match(value)
            if match:
                number = float(match.group(1)) * SIZE_UNITS[(match.group(2) or "b").lower()]
        if number is None or number < 1:
            expected = ("a positive whole number" if key in COUNT_LIMITS else
                        "a positive size: bytes, or a number with KiB, MiB, GiB, KB, MB, GB")
            reader.fail(node.line, f"expected {expected}, got {value!r}", field=reader.name(key))
            raise AssertionError  # unreachable: fail() raises
        limits[key] = int(number)
    return tuple(sorted(limits.items()))


def _installed_plugins() -> set[str]:
    return {entry.name for entry in importlib.metadata.entry_points(group="pytest11")}


def _plugins(reader: Reader) -> tuple[str, ...]:
    """pytest plugins the judges load explicitly: an installed plugin's entry-point
    name (xdist) or an importable module."""
    plugins = []
    for value, line in reader.string_list("plugins"):
        if value not in _installed_plugins() and importlib.util.find_spec(value) is None:
            reader.fail(line, f"{value!r} is neither an installed pytest plugin (by its "
                        f"entry-point name: {', '.join(sorted(_installed_plugins()))}) nor "
                        "an importable module", field=reader.name("plugins"))
        plugins.append(value)
    return tuple(plugins)


def _expect(reader: Reader) -> tuple[str, ...] | None:
    """``oracle.expect``: ``exit-code``, or the test ids that must pass."""
    if "expect" not in reader.values:
        return None
    node = reader.values["expect"]
    if node.value == EXPECT_EXIT_CODE:
        return (EXPECT_EXIT_CODE,)
    if isinstance(node.value, list) and node.value:
        return tuple(value for value, _ in reader.string_list("expect"))
    reader.fail(node.line, f"expected {EXPECT_EXIT_CODE!r} or a non-empty list of test ids "
                "(as the oracle reports them, e.g. '$WFBENCH_ORACLE_DIR/test_x.py::test_y')",
                field=reader.name("expect"))
    raise AssertionError  # unreachable: fail() raises


def _repo(value: str, base: Path, reader: Reader, key: str) -> RepoSpec:
    if looks_like_url(value):
        return RepoSpec(value)
    resolved = (base / value).resolve()
    if not resolved.is_dir():
        reader.fail(reader.line_of(key), f"{resolved} is not a directory", field=reader.name(key))
    return RepoSpec(str(resolved))


def _task(
    path: Path, node: Node, default_repo: RepoSpec | None, file_sandbox: SandboxSpec,
    default_timeout_s: float,
) -> Task:
    base = path.parent
    task_id_node = node.value.get("id") if isinstance(node.value, dict) else None
    raw_id = task_id_node.value if task_id_node is not None else None
    reader = Reader(path, node, task=raw_id if isinstance(raw_id, str) else None, prefix="")
    kind = reader.string("kind", default=KIND_CHANGE) or KIND_CHANGE
    if kind not in TASK_KINDS:
        reader.fail(reader.line_of("kind"), f"unknown kind {kind!r} (known: "
                    f"{', '.join(TASK_KINDS)})", field="kind")
    if kind == KIND_CHANGE:
        reject_review_keys(reader)
        reader.check_keys(TASK_KEYS)
    else:
        check_review_task_keys(reader)
    task_id = reader.required_string("id")
    if not TASK_ID_RE.match(task_id):
        reader.fail(
            reader.line_of("id"),
            f"{task_id!r} is not a valid task id (use [a-z0-9][a-z0-9._-]*: "
            "lowercase letters, digits, dot, underscore, dash; no spaces)",
            field="id",
        )
    repo_value = reader.string("repo")
    repo = _repo(repo_value, base, reader, "repo") if repo_value else default_repo
    if repo is None:
        reader.fail(node.line, "no repo: set it on the task or at the top of the file",
                    field="repo")
        raise AssertionError  # unreachable: fail() raises
    if kind == KIND_REVIEW:
        return load_review_task(
            reader, task_id=task_id, repo=repo, default_timeout_s=default_timeout_s,
            sandbox=file_sandbox.merged(_sandbox(reader.mapping("sandbox"))))
    oracle_reader = reader.mapping("oracle")
    if oracle_reader is None:
        reader.fail(node.line, "required field is missing", field="oracle")
        raise AssertionError  # unreachable: fail() raises
    oracle_reader.check_keys(ORACLE_KEYS)
    files_value = oracle_reader.string("files")
    files = (
        inside_folder(files_value, base, oracle_reader, "files",
                       oracle_reader.line_of("files"))
        if files_value
        else None
    )
    hidden = tuple(
        relative_repo_path(value, oracle_reader, "oracle.hidden_paths", line)
        for value, line in oracle_reader.string_list("hidden_paths")
    )
    gold_value = reader.string("gold")
    gold = (
        inside_folder(gold_value, base, reader, "gold", reader.line_of("gold"))
        if gold_value
        else None
    )
    if gold is not None and not gold.is_file():
        reader.fail(reader.line_of("gold"), f"{gold} is not a file", field="gold")
    if gold is not None and not readable(gold):
        reader.fail(reader.line_of("gold"), f"{gold} cannot be read", field="gold")
    return Task(
        id=task_id,
        task_class=reader.string("class", default="unclassified") or "unclassified",
        repo=repo,
        ref=reader.string("ref", default="HEAD") or "HEAD",
        prompt=reader.required_string("prompt"),
        setup=reader.string("setup"),
        prepare=reader.string("prepare"),
        verify=reader.required_string("verify"),
        oracle=OracleSpec(
            command=oracle_reader.required_string("command"), files=files, hidden_paths=hidden,
            plugins=_plugins(oracle_reader), expect=_expect(oracle_reader),
        ),
        gold=gold,
        timeout_s=reader.number("timeout", default_timeout_s),
        expensive=reader.boolean("expensive", False),
        sandbox=file_sandbox.merged(_sandbox(reader.mapping("sandbox"))),
        source=path,
        line=node.line,
    )


def load_task_file(
    path: Path, *, default_timeout_s: float = DEFAULT_TIMEOUT_S,
    known_arms: Sequence[str] = BUILTIN_ARMS, cache_dir: Path | None = None,
) -> TaskFile:
    """Parse and validate one task file; raise :class:`TaskFileError` on any problem.

    ``known_arms`` are the arms that exist without a definition in the file (the
    built-in scripted arms and the agent presets). ``cache_dir`` (the sweep's
    --wfbench-cache-dir) keeps the parsed tree for the next load of the same
    content; every check below runs either way."""
    with collector_paused():
        task_file = _load_task_file(path.resolve(), default_timeout_s, known_arms, cache_dir)
        # Frozen before the collector runs again: its first collection would walk
        # every object the file made (they live until the session ends).
        freeze_long_lived(len(task_file.tasks))
        return task_file


def _load_task_file(path: Path, default_timeout_s: float, known_arms: Sequence[str],
                    cache_dir: Path | None) -> TaskFile:
    forget_resolved_paths()  # within one file only: the files may change between loads
    root = compose(path, parse_cache(cache_dir))
    reader = Reader(path, root, task=None, prefix="")
    reader.check_keys(TOP_KEYS)
    if "version" not in reader.values:
        reader.fail(root.line, "required field is missing (use version: 1)", field="version")
    version = reader.values["version"].value
    if isinstance(version, bool) or not isinstance(version, int) or version != SCHEMA_VERSION:
        reader.fail(reader.line_of("version"), f"unsupported version (this harness reads "
                    f"version {SCHEMA_VERSION})", field="version")
    repo_value = reader.string("repo")
    default_repo = _repo(repo_value, path.parent, reader, "repo") if repo_value else None
    file_sandbox = _sandbox(reader.mapping("sandbox"))
    arm_definitions = load_arm_definitions(reader.mapping("arm_definitions"), path.parent)
    arms = []
    for name, line in reader.string_list("arms"):
        if name not in known_arms and name not in arm_definitions:
            reader.fail(line, f"unknown arm {name!r}: not built in and not in arm_definitions",
                        field="arms")
        arms.append(name)
    subjects = load_subjects(reader.mapping("subjects"))
    scenarios = load_scenarios(reader, subjects, default_timeout_s)
    if scenarios and "tasks" not in reader.values:
        reader.values["tasks"] = Node([], root.line)
    if "tasks" not in reader.values or not isinstance(reader.values["tasks"].value, list):
        reader.fail(reader.line_of("tasks"), "expected a list of tasks", field="tasks")
    tasks: list[Task] = []
    seen: dict[str, int] = {scenario.id: scenario.line for scenario in scenarios}
    for node in reader.values["tasks"].value:
        task = _task(path, node, default_repo, file_sandbox, default_timeout_s)
        if task.id in seen:
            raise TaskFileError(path, task.line,
                                f"duplicate task id (first at line {seen[task.id]})",
                                task=task.id, field="id")
        seen[task.id] = task.line
        tasks.append(task)
    if not tasks and not scenarios:
        reader.fail(reader.line_of("tasks"), "the file declares no tasks", field="tasks")
    return TaskFile(
        path=path,
        name=reader.string("name") or path.stem,
        arms=tuple(arms) or BUILTIN_ARMS,
        arm_definitions=arm_definitions,
        tasks=tuple(tasks),
        skills=skills_folder(reader, path.parent),
        subjects=subjects,
        scenarios=scenarios,
    )


def load_task_files(
    paths: Sequence[Path], *, default_timeout_s: float = DEFAULT_TIMEOUT_S,
    known_arms: Sequence[str] = BUILTIN_ARMS, cache_dir: Path | None = None,
) -> list[TaskFile]:
    """Load several task files; task ids must be unique across all of them."""
    files = [load_task_file(path, default_timeout_s=default_timeout_s, known_arms=known_arms,
                            cache_dir=cache_dir)
             for path in paths]
    owner: dict[str, Path] = {}
    for task_file in files:
        ids = [(t.id, t.line) for t in task_file.tasks]
        ids += [(s.id, s.line) for s in task_file.scenarios]
        for task_id, line in ids:
            if task_id in owner and owner[task_id] != task_file.path:
                raise TaskFileError(task_file.path, line,
                                    f"task id also used in {owner[task_id]}; cell ids must be "
                                    "unique in a sweep", task=task_id, field="id")
            owner[task_id] = task_file.path
    return files
