"""What a task file declares, as frozen data (SPEC §2)."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

SCHEMA_VERSION = 1
TASK_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
ARM_NAME_RE = TASK_ID_RE
HOOK_NAME_RE = re.compile(r"^[a-z][a-z-]*$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEFAULT_TIMEOUT_S = 1800.0
GIB = 1 << 30
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
SCENARIO_KINDS = ("task_loop", "agent_task_baseline", "interrupted_publication",
                  "publication_replay")
TASK_KEYS = {
    "id", "kind", "class", "repo", "ref", "prompt", "setup", "prepare", "verify", "oracle",
    "gold", "timeout", "expensive", "sandbox",
}
# What a task asks of its arm (the key ``kind``): make a change that its verify and
# oracle judge, or review a given change, scored against hidden labels (docs/review.md).
KIND_CHANGE = "change"
KIND_REVIEW = "review"
TASK_KINDS = (KIND_CHANGE, KIND_REVIEW)
REVIEW_TASK_KEYS = {
    "id", "kind", "class", "repo", "ref", "prompt", "setup", "prepare", "change", "oracle",
    "timeout", "expensive", "sandbox",
}
REVIEW_ORACLE_KEYS = {"findings", "verdict"}
REVIEW_LABEL_KEYS = {"id", "path", "line", "end_line", "severity", "category", "blocking"}
# The review vocabulary, shared by the labels and the review artifact's schema.
SEVERITIES = ("critical", "high", "medium", "low")
CATEGORIES = ("correctness", "security", "compatibility", "performance", "tests", "other")
VERDICTS = ("approve", "comment", "request_changes")
ORACLE_KEYS = {"command", "files", "hidden_paths", "plugins", "expect"}
SANDBOX_KEYS = {"read_only", "env", "limits"}
LIMIT_KEYS = {"processes", "memory", "file_size", "disk", "files", "tmp"}
# oracle.expect: the oracle's exit status alone decides (not a pytest oracle).
EXPECT_EXIT_CODE = "exit-code"
SCRIPT_ARM_KEYS = {"agent", "steps", "description", "network", "skills"}
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
class Limits:
    """What one sandboxed command may use (SPEC §3); going over is the arm's failure.

    Defaults are documented in the README; a task file sets them under
    ``sandbox.limits`` (at the top, or per task)."""

    processes: int = 512
    """Processes and threads at once (a pids cgroup, else RLIMIT_NPROC)."""
    memory: int = 4 * GIB
    """Bytes of memory (a memory cgroup for the whole tree, and RLIMIT_DATA per process)."""
    file_size: int = 1 * GIB
    """Largest file a process may write (RLIMIT_FSIZE)."""
    disk: int = 4 * GIB
    """Bytes of files in the workspace and HOME (watched during sessions, checked after)."""
    files: int = 200_000
    """Entries in the workspace and HOME (watched during sessions, checked after)."""
    tmp: int = 1 * GIB
    """Size of the private /tmp (a tmpfs, so memory)."""


@dataclass(frozen=True)
class SandboxSpec:
    read_only: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    limits: tuple[tuple[str, int], ...] = ()
    """Overrides of :class:`Limits`, by field name."""

    def merged(self, other: SandboxSpec) -> SandboxSpec:
        return _merged(self, other)

    def resolved_limits(self) -> Limits:
        return replace(Limits(), **dict(self.limits))


@functools.lru_cache(maxsize=256)
def _merged(first: SandboxSpec, other: SandboxSpec) -> SandboxSpec:
    """``other`` over ``first`` (the tasks of a file mostly merge the file's with
    none of their own: made once)."""
    env = dict(first.env) | dict(other.env)
    limits = dict(first.limits) | dict(other.limits)
    return SandboxSpec(
        read_only=tuple(dict.fromkeys(first.read_only + other.read_only)),
        env=tuple(sorted(env.items())),
        limits=tuple(sorted(limits.items())),
    )


@dataclass(frozen=True)
class OracleSpec:
    command: str
    files: Path | None
    hidden_paths: tuple[str, ...]
    plugins: tuple[str, ...] = ()
    """pytest plugins the judges load explicitly (nothing is auto-loaded)."""
    expect: tuple[str, ...] | None = None
    """The test ids that must pass; None: established once per sweep (from the
    gold patch, else by collection); ``("exit-code",)``: the exit status alone."""
    review: ReviewLabels | None = None
    """A review task's hidden labels (its oracle has no command then)."""

    @property
    def exit_code_only(self) -> bool:
        return self.expect == (EXPECT_EXIT_CODE,)


@dataclass(frozen=True)
class ReviewLabel:
    """One finding a review of the task's change is expected to report (hidden)."""

    path: str
    """Relative to the repository root, POSIX separators."""
    line: int
    end_line: int
    """The labelled lines, ``line`` to ``end_line`` inclusive, in the changed file."""
    severity: str
    category: str
    blocking: bool
    """Whether the change must not be merged as it is because of it."""
    id: str | None = None


@dataclass(frozen=True)
class ReviewLabels:
    """A review task's hidden labels: the expected findings and verdict.

    They are part of the oracle snapshot: ``digest`` is a content digest that
    does not depend on the task file's formatting or key order."""

    findings: tuple[ReviewLabel, ...]
    verdict: str

    @property
    def clean_control(self) -> bool:
        """A change with nothing to find: its right review approves with no finding."""
        return not self.findings

    def to_json(self) -> dict[str, object]:
        return {
            "verdict": self.verdict,
            "findings": [
                {"id": label.id, "path": label.path, "line": label.line,
                 "end_line": label.end_line, "severity": label.severity,
                 "category": label.category, "blocking": label.blocking}
                for label in self.findings
            ],
        }

    @property
    def digest(self) -> str:
        canonical = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"),
                               ensure_ascii=False)
        return hashlib.sha256(f"review-labels:1:{canonical}".encode()).hexdigest()


@dataclass(frozen=True)
class RepoSpec:
    """Where a task's code comes from: a local path or a git URL."""

    location: str
    """An absolute local path, or a URL as written."""

    @property
    def is_url(self) -> bool:
        return looks_like_url(self.location)


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
    kind: str = KIND_CHANGE
    """``change`` (verify and oracle judge the arm's change) or ``review`` (the arm
    reviews ``change``; its review is scored against ``oracle.review``). A review
    task has ``verify == ""``, an oracle without command, files or hidden paths,
    and no gold patch."""
    change: Path | None = None
    """A review task's change under review: a patch beside the task file, applied
    to the clone after setup."""

    @property
    def is_review(self) -> bool:
        return self.kind == KIND_REVIEW


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
    overlay: Path | None = None
    """A promotion candidate's files (--wfbench-candidate-overlay): copied over the
    installed skills, replacing the incumbent's files of the same names."""
    audit: str | None = None
    """An audit arm's role (``hack``, ``probe`` or ``mutant``; pytest_wfbench.audit)."""
    audit_name: str | None = None
    """The exploit class, probe or mutant it is (e.g. ``probe-const-none:core.py:f``)."""
    audit_counts: tuple[tuple[str, int], ...] = ()
    """A mutant's task: mutations found and skipped, by reason."""
    reviews: bool = False
    """Made for review tasks (the review presets): its cells on change tasks are skips."""

    @property
    def is_agent(self) -> bool:
        return bool(self.phases)

    @property
    def changes_workspace(self) -> bool:
        """Whether a phase must change the workspace (plan, work): impossible on a
        review task, whose workspace is read-only."""
        return any(phase.role in ("plan", "work") for phase in self.phases)


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
    """Hooks installed on the seeded remote (untimed), e.g. to make it reject pushes;
    named as the subject names them (git: ``pre-receive``; Mercurial:
    ``pretxnchangegroup``), so each subject runs the hooks it knows."""
    fault_replays: int = 0
    """For ``interrupted_publication`` and ``publication_replay``: how many times the
    fault fixture replays a mutation to its backend (0 is an honest fixture; more
    breaks it on purpose)."""
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


def looks_like_url(location: str) -> bool:
    return "://" in location or re.match(r"^[\w.-]+@[\w.-]+:", location) is not None

