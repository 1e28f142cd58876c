"""Loading and validating task files (SPEC §2).

Every error names the file, the line, the task and the field, so a user can
fix a suite without guessing; the plugin turns it into a usage error before
any cell runs.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SCHEMA_VERSION = 1
TASK_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
ARM_NAME_RE = TASK_ID_RE
HOOK_NAME_RE = re.compile(r"^[a-z][a-z-]*$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEFAULT_TIMEOUT_S = 1800.0
BUILTIN_ARMS = ("gold", "noop")
# Arm kinds a task file may declare under arm_definitions.
ARM_KINDS = ("script", "claude")
PHASE_ROLES = ("session", "plan", "work")
DEFAULT_ALLOWED_TOOLS = ("Bash", "Edit", "Write", "Read", "Glob", "Grep", "Skill")

TOP_KEYS = {"version", "name", "repo", "arms", "arm_definitions", "tasks", "sandbox", "skills",
            "subjects", "scenarios"}
SUBJECT_KEYS = {"binary", "driver", "version_command", "description"}
SCENARIO_KEYS = {"id", "kind", "class", "subjects", "remote_hooks", "fault_replays", "timeout",
                 "expensive"}
# The scenario kinds of the tool-cost lane (pytest_wfbench.lanes).
SCENARIO_KINDS = ("task_loop", "agent_task_baseline", "interrupted_publication")
TASK_KEYS = {
    "id", "class", "repo", "ref", "prompt", "setup", "prepare", "verify", "oracle",
    "gold", "timeout", "expensive", "sandbox",
}
ORACLE_KEYS = {"command", "files", "hidden_paths"}
SANDBOX_KEYS = {"read_only", "env"}
SCRIPT_ARM_KEYS = {"agent", "steps", "description", "network"}
AGENT_ARM_KEYS = {"agent", "description", "phases", "skills", "plugin", "minimal"}
PHASE_KEYS = {"name", "prompt", "skill", "role", "allowed_tools", "disallowed_tools",
              "mcp_servers", "plugin_dirs"}


class TaskFileError(Exception):
    """A task file is malformed; the message says where and what to do."""

    def __init__(
        self, path: Path, line: int | None, message: str, *, task: str | None = None,
        field: str | None = None,
    ) -> None:
        where = f"{path}:{line}" if line else str(path)
        parts = [where]
        if task:
            parts.append(f"task {task!r}")
        if field:
            parts.append(f"field {field!r}")
        super().__init__(": ".join(parts) + f": {message}")
        self.path, self.line, self.task, self.field = path, line, task, field


@dataclass(frozen=True)
class SandboxSpec:
    read_only: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()

    def merged(self, other: SandboxSpec) -> SandboxSpec:
        env = dict(self.env) | dict(other.env)
        return SandboxSpec(
            read_only=tuple(dict.fromkeys(self.read_only + other.read_only)),
            env=tuple(sorted(env.items())),
        )


@dataclass(frozen=True)
class OracleSpec:
    command: str
    files: Path | None
    hidden_paths: tuple[str, ...]


@dataclass(frozen=True)
class RepoSpec:
    """Where a task's code comes from: a local path or a git URL."""

    location: str
    """An absolute local path, or a URL as written."""

    @property
    def is_url(self) -> bool:
        return _looks_like_url(self.location)


@dataclass(frozen=True)
class Task:
    id: str
    task_class: str
    repo: RepoSpec
    ref: str
    prompt: str
    setup: str | None
    prepare: str | None
    verify: str
    oracle: OracleSpec
    gold: Path | None
    timeout_s: float
    expensive: bool
    sandbox: SandboxSpec
    source: Path
    line: int


@dataclass(frozen=True)
class PhaseSpec:
    """One agent session of an arm (SPEC §4)."""

    name: str
    prompt: str
    """A template: ``{task}`` is the task's prompt, ``{plan}`` the plan document's path."""
    role: str = "session"
    """``plan``: may only add one new plan document; ``work``: must change the
    workspace; ``session``: no check of its own."""
    skill: str | None = None
    """The skill the phase must invoke (its name as the Skill tool takes it)."""
    allowed_tools: tuple[str, ...] = DEFAULT_ALLOWED_TOOLS
    disallowed_tools: tuple[str, ...] = ()
    mcp_servers: tuple[tuple[str, str], ...] = ()
    """Server name -> its JSON configuration (strict MCP config always)."""
    plugin_dirs: tuple[Path, ...] = ()


@dataclass(frozen=True)
class ArmDefinition:
    name: str
    kind: str
    steps: tuple[str, ...] = ()
    description: str = ""
    phases: tuple[PhaseSpec, ...] = ()
    skills: Path | None = None
    """A folder of skills under test, copied into the clone's ``.claude/skills/``."""
    plugin: bool = False
    """Uses the external plugin given by --wfbench-plugin-dir / --wfbench-plugin-version."""
    minimal: bool = False
    """The CLI's minimal mode (``--bare``): no skills, plugins or MCP servers."""
    network: bool = False
    """Whether a script arm's steps may use the network (agent sessions always do)."""

    @property
    def is_agent(self) -> bool:
        return bool(self.phases)


@dataclass(frozen=True)
class SubjectSpec:
    """A command-line tool a tool-cost scenario measures (e.g. git)."""

    name: str
    binary: str
    driver: str
    """Which scenario implementation drives it (``git`` for git-compatible CLIs)."""
    version_command: tuple[str, ...]


@dataclass(frozen=True)
class ScenarioSpec:
    """A fixed whole-task motion, performed by each subject (tool-cost lane)."""

    id: str
    kind: str
    scenario_class: str
    subjects: tuple[str, ...]
    remote_hooks: tuple[tuple[str, str], ...] = ()
    """Hooks installed on the seeded remote (untimed), e.g. to make it reject pushes."""
    fault_replays: int = 0
    """For ``interrupted_publication``: how many times the fault fixture replays a
    mutation to its backend (0 is an honest fixture; more breaks it on purpose)."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    expensive: bool = False
    source: Path = Path(".")
    line: int = 0


@dataclass(frozen=True)
class TaskFile:
    path: Path
    name: str
    arms: tuple[str, ...]
    arm_definitions: dict[str, ArmDefinition] = field(default_factory=dict)
    tasks: tuple[Task, ...] = ()
    skills: Path | None = None
    subjects: dict[str, SubjectSpec] = field(default_factory=dict)
    scenarios: tuple[ScenarioSpec, ...] = ()


def _looks_like_url(location: str) -> bool:
    return "://" in location or re.match(r"^[\w.-]+@[\w.-]+:", location) is not None


class _Node:
    """A parsed YAML value with the line it started on."""

    def __init__(self, value: Any, line: int) -> None:
        self.value = value
        self.line = line


def _compose(path: Path) -> _Node:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskFileError(path, None, f"cannot read task file: {exc.strerror}") from exc
    try:
        root = yaml.compose(text, Loader=COMPOSER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise TaskFileError(path, line, f"invalid YAML: {problem}") from exc
    if root is None:
        raise TaskFileError(path, 1, "the task file is empty")
    return _convert(path, root, yaml.SafeLoader(""))


# libyaml's composer when PyYAML has it (several times faster); nodes keep lines.
COMPOSER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _convert(path: Path, node: yaml.Node, constructor: yaml.SafeLoader) -> _Node:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        mapping: dict[str, _Node] = {}
        for key_node, value_node in node.value:
            key = key_node.value
            if not isinstance(key_node, yaml.ScalarNode):
                line = key_node.start_mark.line + 1
                raise TaskFileError(path, line, "keys must be plain strings")
            if key in mapping:
                raise TaskFileError(
                    path, key_node.start_mark.line + 1, f"duplicate key {key!r}", field=key
                )
            mapping[key] = _convert(path, value_node, constructor)
        return _Node(mapping, line)
    if isinstance(node, yaml.SequenceNode):
        return _Node([_convert(path, item, constructor) for item in node.value], line)
    return _Node(constructor.construct_object(node, deep=True), line)


class _Reader:
    """Typed access to one mapping of a task file, with located errors."""

    def __init__(self, path: Path, node: _Node, *, task: str | None, prefix: str) -> None:
        self.path, self.node, self.task, self.prefix = path, node, task, prefix
        if not isinstance(node.value, dict):
            self.fail(node.line, "expected a mapping", field=prefix.rstrip(".") or None)
        self.values: dict[str, _Node] = node.value

    def fail(self, line: int | None, message: str, *, field: str | None) -> Any:
        raise TaskFileError(self.path, line, message, task=self.task, field=field)

    def name(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def check_keys(self, allowed: set[str]) -> None:
        for key, value in self.values.items():
            if key not in allowed:
                known = ", ".join(sorted(allowed))
                self.fail(value.line, f"unknown key (allowed: {known})", field=self.name(key))

    def line_of(self, key: str) -> int:
        return self.values[key].line if key in self.values else self.node.line

    def string(self, key: str, *, required: bool = False, default: str | None = None) -> str | None:
        if key not in self.values:
            if required:
                self.fail(self.node.line, "required field is missing", field=self.name(key))
            return default
        value = self.values[key].value
        if not isinstance(value, str) or not value.strip():
            self.fail(self.values[key].line, "expected a non-empty string", field=self.name(key))
        return str(value)

    def required_string(self, key: str) -> str:
        value = self.string(key, required=True)
        assert value is not None
        return value

    def number(self, key: str, default: float) -> float:
        if key not in self.values:
            return default
        value = self.values[key].value
        if (isinstance(value, bool) or not isinstance(value, int | float)
                or not math.isfinite(value) or value <= 0):
            self.fail(self.values[key].line, "expected a positive number", field=self.name(key))
        return float(value)

    def boolean(self, key: str, default: bool) -> bool:
        if key not in self.values:
            return default
        value = self.values[key].value
        if not isinstance(value, bool):
            self.fail(self.values[key].line, "expected true or false", field=self.name(key))
        return bool(value)

    def string_list(self, key: str) -> list[tuple[str, int]]:
        if key not in self.values:
            return []
        node = self.values[key]
        if not isinstance(node.value, list):
            self.fail(node.line, "expected a list of strings", field=self.name(key))
        items = []
        for item in node.value:
            if not isinstance(item.value, str) or not item.value.strip():
                self.fail(item.line, "expected a non-empty string", field=self.name(key))
            items.append((item.value, item.line))
        return items

    def mapping(self, key: str) -> _Reader | None:
        if key not in self.values:
            return None
        return _Reader(self.path, self.values[key], task=self.task, prefix=f"{self.name(key)}.")


def _inside_folder(path: Path, base: Path, reader: _Reader, key: str, line: int) -> Path:
    """Resolve ``path`` relative to the task file folder; it must stay inside it."""
    resolved = (base / path).resolve()
    if not resolved.is_relative_to(base.resolve()):
        reader.fail(line, f"{path} escapes the task file's folder {base}", field=reader.name(key))
    if not resolved.exists():
        reader.fail(line, f"{resolved} does not exist", field=reader.name(key))
    return resolved


def _relative_repo_path(value: str, reader: _Reader, key: str, line: int) -> str:
    pure = Path(value)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts or pure.as_posix() == ".":
        reader.fail(line, f"{value!r} must be a relative path inside the repo", field=key)
    return pure.as_posix().rstrip("/")


def _sandbox(reader: _Reader | None) -> SandboxSpec:
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
    return SandboxSpec(read_only=tuple(read_only), env=tuple(sorted(env.items())))


def _repo(value: str, base: Path, reader: _Reader, key: str) -> RepoSpec:
    if _looks_like_url(value):
        return RepoSpec(value)
    resolved = (base / value).resolve()
    if not resolved.is_dir():
        reader.fail(reader.line_of(key), f"{resolved} is not a directory", field=reader.name(key))
    return RepoSpec(str(resolved))


def _task(
    path: Path, node: _Node, default_repo: RepoSpec | None, file_sandbox: SandboxSpec,
    default_timeout_s: float,
) -> Task:
    base = path.parent
    task_id_node = node.value.get("id") if isinstance(node.value, dict) else None
    raw_id = task_id_node.value if task_id_node is not None else None
    reader = _Reader(path, node, task=raw_id if isinstance(raw_id, str) else None, prefix="")
    reader.check_keys(TASK_KEYS)
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
    oracle_reader = reader.mapping("oracle")
    if oracle_reader is None:
        reader.fail(node.line, "required field is missing", field="oracle")
        raise AssertionError  # unreachable: fail() raises
    oracle_reader.check_keys(ORACLE_KEYS)
    files_value = oracle_reader.string("files")
    files = (
        _inside_folder(Path(files_value), base, oracle_reader, "files",
                       oracle_reader.line_of("files"))
        if files_value
        else None
    )
    hidden = tuple(
        _relative_repo_path(value, oracle_reader, "oracle.hidden_paths", line)
        for value, line in oracle_reader.string_list("hidden_paths")
    )
    gold_value = reader.string("gold")
    gold = (
        _inside_folder(Path(gold_value), base, reader, "gold", reader.line_of("gold"))
        if gold_value
        else None
    )
    if gold is not None and not gold.is_file():
        reader.fail(reader.line_of("gold"), f"{gold} is not a file", field="gold")
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
            command=oracle_reader.required_string("command"), files=files, hidden_paths=hidden
        ),
        gold=gold,
        timeout_s=reader.number("timeout", default_timeout_s),
        expensive=reader.boolean("expensive", False),
        sandbox=file_sandbox.merged(_sandbox(reader.mapping("sandbox"))),
        source=path,
        line=node.line,
    )


def _phase(reader: _Reader, base: Path) -> PhaseSpec:
    reader.check_keys(PHASE_KEYS)
    role = reader.string("role", default="session") or "session"
    if role not in PHASE_ROLES:
        reader.fail(reader.line_of("role"), f"unknown role {role!r} (known: "
                    f"{', '.join(PHASE_ROLES)})", field=reader.name("role"))
    servers = reader.mapping("mcp_servers")
    mcp: list[tuple[str, str]] = []
    if servers is not None:
        for server, node in servers.values.items():
            if not isinstance(node.value, dict):
                servers.fail(node.line, "expected a mapping (the server's configuration)",
                             field=servers.name(server))
            mcp.append((server, json.dumps(_plain(node), sort_keys=True, default=str)))
    plugin_dirs = tuple(
        _inside_folder(Path(value), base, reader, "plugin_dirs", line)
        for value, line in reader.string_list("plugin_dirs")
    )
    allowed = tuple(value for value, _ in reader.string_list("allowed_tools"))
    name = reader.required_string("name")
    if not ARM_NAME_RE.match(name):
        reader.fail(reader.line_of("name"), f"{name!r} is not a valid phase name (use "
                    "[a-z0-9][a-z0-9._-]*)", field=reader.name("name"))
    return PhaseSpec(
        name=name,
        prompt=reader.required_string("prompt"),
        role=role,
        skill=reader.string("skill"),
        allowed_tools=allowed or DEFAULT_ALLOWED_TOOLS,
        disallowed_tools=tuple(value for value, _ in reader.string_list("disallowed_tools")),
        mcp_servers=tuple(mcp),
        plugin_dirs=plugin_dirs,
    )


def _plain(node: _Node) -> Any:
    """A parsed node back to plain Python data (for JSON configuration)."""
    if isinstance(node.value, dict):
        return {key: _plain(value) for key, value in node.value.items()}
    if isinstance(node.value, list):
        return [_plain(item) for item in node.value]
    return node.value


def _skills_folder(reader: _Reader, base: Path) -> Path | None:
    value = reader.string("skills")
    if value is None:
        return None
    folder = _inside_folder(Path(value), base, reader, "skills", reader.line_of("skills"))
    if not folder.is_dir():
        reader.fail(reader.line_of("skills"), f"{folder} is not a folder",
                    field=reader.name("skills"))
    return folder


def _arm_definitions(reader: _Reader | None, base: Path) -> dict[str, ArmDefinition]:
    if reader is None:
        return {}
    arms: dict[str, ArmDefinition] = {}
    for name in reader.values:
        arm = reader.mapping(name)
        assert arm is not None
        field_name = reader.name(name)
        if not ARM_NAME_RE.match(name):
            reader.fail(arm.node.line, "not a valid arm name", field=field_name)
        if name in BUILTIN_ARMS:
            reader.fail(arm.node.line, f"{name!r} is a built-in arm", field=field_name)
        kind = arm.required_string("agent")
        if kind not in ARM_KINDS:
            arm.fail(
                arm.line_of("agent"),
                f"unknown agent {kind!r} (known: {', '.join(ARM_KINDS)})",
                field=arm.name("agent"),
            )
        if kind == "script":
            arm.check_keys(SCRIPT_ARM_KEYS)
            steps = tuple(value for value, _ in arm.string_list("steps"))
            if not steps:
                arm.fail(arm.line_of("steps"), "a script arm needs at least one step",
                         field=arm.name("steps"))
            arms[name] = ArmDefinition(
                name=name, kind=kind, steps=steps, description=arm.string("description") or "",
                network=arm.boolean("network", False),
            )
            continue
        arm.check_keys(AGENT_ARM_KEYS)
        node = arm.values.get("phases")
        if node is None or not isinstance(node.value, list) or not node.value:
            arm.fail(arm.line_of("phases"), "an agent arm needs a list of phases",
                     field=arm.name("phases"))
            raise AssertionError  # unreachable: fail() raises
        phases = tuple(
            _phase(_Reader(arm.path, item, task=None, prefix=f"{arm.name('phases')}[{i}]."),
                   base)
            for i, item in enumerate(node.value)
        )
        names = [phase.name for phase in phases]
        if len(set(names)) != len(names):
            arm.fail(arm.line_of("phases"), f"phase names must be unique, got {names}",
                     field=arm.name("phases"))
        minimal = arm.boolean("minimal", False)
        if minimal and any(p.skill or p.mcp_servers or p.plugin_dirs for p in phases):
            arm.fail(arm.line_of("minimal"), "minimal mode has no skills, MCP servers or "
                     "plugins, but a phase asks for one", field=arm.name("minimal"))
        arms[name] = ArmDefinition(
            name=name, kind=kind, description=arm.string("description") or "", phases=phases,
            skills=_skills_folder(arm, base), plugin=arm.boolean("plugin", False),
            minimal=minimal,
        )
    return arms


def load_task_file(
    path: Path, *, default_timeout_s: float = DEFAULT_TIMEOUT_S,
    known_arms: Sequence[str] = BUILTIN_ARMS,
) -> TaskFile:
    """Parse and validate one task file; raise :class:`TaskFileError` on any problem.

    ``known_arms`` are the arms that exist without a definition in the file (the
    built-in scripted arms and the agent presets)."""
    path = path.resolve()
    root = _compose(path)
    reader = _Reader(path, root, task=None, prefix="")
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
    arm_definitions = _arm_definitions(reader.mapping("arm_definitions"), path.parent)
    arms = []
    for name, line in reader.string_list("arms"):
        if name not in known_arms and name not in arm_definitions:
            reader.fail(line, f"unknown arm {name!r}: not built in and not in arm_definitions",
                        field="arms")
        arms.append(name)
    subjects = _subjects(reader.mapping("subjects"))
    scenarios = _scenarios(reader, subjects, default_timeout_s)
    if scenarios and "tasks" not in reader.values:
        reader.values["tasks"] = _Node([], root.line)
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
        skills=_skills_folder(reader, path.parent),
        subjects=subjects,
        scenarios=scenarios,
    )


def _subjects(reader: _Reader | None) -> dict[str, SubjectSpec]:
    if reader is None:
        return {}
    subjects: dict[str, SubjectSpec] = {}
    for name in reader.values:
        subject = reader.mapping(name)
        assert subject is not None
        if not ARM_NAME_RE.match(name):
            reader.fail(subject.node.line, "not a valid subject name", field=reader.name(name))
        subject.check_keys(SUBJECT_KEYS)
        binary = subject.required_string("binary")
        subject.string("description")  # free text, checked for its type only
        version = tuple(v for v, _ in subject.string_list("version_command"))
        subjects[name] = SubjectSpec(name=name, binary=binary,
                                     driver=subject.string("driver") or name,
                                     version_command=version or (binary, "--version"))
    return subjects


def _scenarios(reader: _Reader, subjects: dict[str, SubjectSpec],
               default_timeout_s: float) -> tuple[ScenarioSpec, ...]:
    if "scenarios" not in reader.values:
        return ()
    node = reader.values["scenarios"]
    if not isinstance(node.value, list) or not node.value:
        reader.fail(node.line, "expected a non-empty list of scenarios", field="scenarios")
    scenarios: list[ScenarioSpec] = []
    seen: dict[str, int] = {}
    for item in node.value:
        raw_id = item.value.get("id") if isinstance(item.value, dict) else None
        scenario_id = raw_id.value if raw_id is not None else None
        entry = _Reader(reader.path, item,
                        task=scenario_id if isinstance(scenario_id, str) else None, prefix="")
        entry.check_keys(SCENARIO_KEYS)
        sid = entry.required_string("id")
        if not TASK_ID_RE.match(sid):
            entry.fail(entry.line_of("id"), f"{sid!r} is not a valid scenario id", field="id")
        if sid in seen:
            entry.fail(entry.line_of("id"), f"duplicate scenario id (first at line {seen[sid]})",
                       field="id")
        seen[sid] = item.line
        kind = entry.required_string("kind")
        if kind not in SCENARIO_KINDS:
            entry.fail(entry.line_of("kind"), f"unknown scenario kind {kind!r} (known: "
                       f"{', '.join(SCENARIO_KINDS)})", field="kind")
        names = []
        for name, line in entry.string_list("subjects"):
            if name not in subjects:
                entry.fail(line, f"unknown subject {name!r} (declare it under 'subjects')",
                           field="subjects")
            if name in names:
                entry.fail(line, f"subject {name!r} is listed twice", field="subjects")
            names.append(name)
        if not names:
            entry.fail(item.line, "a scenario needs at least one subject", field="subjects")
        hooks = entry.mapping("remote_hooks")
        for hook, value in (hooks.values.items() if hooks else ()):
            assert hooks is not None
            if not HOOK_NAME_RE.match(hook):
                hooks.fail(value.line, "not a git hook name", field=hooks.name(hook))
            if not isinstance(value.value, str):
                hooks.fail(value.line, "expected the hook's shell script as a string",
                           field=hooks.name(hook))
        replays = entry.values.get("fault_replays")
        if replays is not None and (isinstance(replays.value, bool)
                                    or not isinstance(replays.value, int) or replays.value < 0):
            entry.fail(replays.line, "expected a whole number >= 0", field="fault_replays")
        scenarios.append(ScenarioSpec(
            id=sid, kind=kind, scenario_class=entry.string("class", default=kind) or kind,
            subjects=tuple(names),
            remote_hooks=tuple((hook, str(value.value)) for hook, value in
                               (hooks.values.items() if hooks else ())),
            fault_replays=int(replays.value) if replays is not None else 0,
            timeout_s=entry.number("timeout", default_timeout_s),
            expensive=entry.boolean("expensive", False),
            source=reader.path, line=item.line,
        ))
    return tuple(scenarios)


def load_task_files(
    paths: Sequence[Path], *, default_timeout_s: float = DEFAULT_TIMEOUT_S,
    known_arms: Sequence[str] = BUILTIN_ARMS,
) -> list[TaskFile]:
    """Load several task files; task ids must be unique across all of them."""
    files = [load_task_file(path, default_timeout_s=default_timeout_s, known_arms=known_arms)
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
