"""Agent adapters (one module per agent CLI) behind one small interface, and
the built-in agent arm presets (SPEC §4)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pytest_wfbench.sandbox import LimitHit, Mount, Sandbox
from pytest_wfbench.tasks import ArmDefinition, Limits, PhaseSpec
from pytest_wfbench.workspace.clone import Workspace

if TYPE_CHECKING:  # its HTTP server is imported only by a sweep with agent arms
    from pytest_wfbench.agents.proxy import ApiProxy

TASK_ONLY = "{task}"
PLAN_PROMPT = (
    "Invoke the {skill} skill with the Skill tool and use it to write a plan for the task "
    "below as ONE new Markdown document in this repository. Do not change any other file.\n\n"
    "Task:\n{task}"
)
WORK_PROMPT = (
    "Invoke the {skill} skill with the Skill tool and use it to carry out the plan in "
    "{plan}.\n\nTask:\n{task}"
)
DIRECT_PROMPT = ("Invoke the {skill} skill with the Skill tool and use it to complete the task "
                 "below.\n\nTask:\n{task}")
# Review arms (docs/review.md): {task} is the review task's text, with the change's
# purpose and the artifact contract (review/session.py). The workspace is
# read-only; Write is for the review artifact, outside it.
REVIEW_PROMPT = ("Invoke the {skill} skill with the Skill tool and use it to review the change "
                 "below.\n\n{task}")
REVIEW_TOOLS = ("Bash", "Read", "Glob", "Grep", "Write")


def _phase(name: str, template: str, role: str, skill: str | None) -> PhaseSpec:
    prompt = template.replace("{skill}", skill) if skill else template
    return PhaseSpec(name=name, prompt=prompt, role=role, skill=skill)


def _workflow(name: str, plan_skill: str, work_skill: str, *, plugin: bool,
              description: str) -> ArmDefinition:
    return ArmDefinition(
        name=name, kind="claude", description=description, plugin=plugin,
        phases=(_phase("plan", PLAN_PROMPT, "plan", plan_skill),
                _phase("work", WORK_PROMPT, "work", work_skill)),
    )


def _direct(name: str, work_skill: str, *, plugin: bool, description: str) -> ArmDefinition:
    return ArmDefinition(name=name, kind="claude", description=description, plugin=plugin,
                         phases=(_phase("work", DIRECT_PROMPT, "work", work_skill),))


BASELINE_TOOLS = ("Bash", "Edit", "Write", "Read", "Glob", "Grep")


def _review(name: str, skill: str | None, *, plugin: bool, description: str) -> ArmDefinition:
    if skill is None:
        phase = PhaseSpec(name="review", prompt=TASK_ONLY, allowed_tools=REVIEW_TOOLS,
                          disallowed_tools=("Skill",))
    else:
        phase = replace(_phase("review", REVIEW_PROMPT, "session", skill),
                        allowed_tools=(*REVIEW_TOOLS, "Skill"))
    return ArmDefinition(name=name, kind="claude", description=description, plugin=plugin,
                         reviews=True, phases=(phase,))

PRESETS: dict[str, ArmDefinition] = {
    "baseline": ArmDefinition(
        name="baseline", kind="claude", description="one session, the task prompt, no skills",
        phases=(PhaseSpec(name="session", prompt=TASK_ONLY, allowed_tools=BASELINE_TOOLS,
                          disallowed_tools=("Skill",)),),
    ),
    "baseline_nomcp": ArmDefinition(
        name="baseline_nomcp", kind="claude", minimal=True,
        description="like baseline, no MCP servers at all, the CLI's minimal mode (--bare)",
        phases=(PhaseSpec(name="session", prompt=TASK_ONLY, allowed_tools=BASELINE_TOOLS,
                          disallowed_tools=("Skill",)),),
    ),
    "workflow": _workflow("workflow", "plan", "work", plugin=False,
                          description="plan phase with the plan skill, then the work skill"),
    "workflow_direct": _direct("workflow_direct", "work", plugin=False,
                               description="one session that must invoke the work skill"),
    "ce_workflow": _workflow("ce_workflow", "{plugin}:plan", "{plugin}:work", plugin=True,
                             description="the workflow arm with the external plugin's skills"),
    "ce_workflow_direct": _direct("ce_workflow_direct", "{plugin}:work", plugin=True,
                                  description="the direct arm with the external plugin's skill"),
    "review": _review("review", "review", plugin=False,
                      description="one read-only session that must invoke the review skill"),
    "review_baseline": _review("review_baseline", None, plugin=False,
                               description="the review prompt, read-only, the Skill tool "
                                           "disallowed"),
    "ce_review": _review("ce_review", "{plugin}:review", plugin=True,
                         description="the review arm with the external plugin's skill"),
}


@dataclass(frozen=True)
class AgentSettings:
    """What the command line gives every agent session of a sweep."""

    model: str | None
    effort: str | None
    api_key: str | None
    base_url: str | None
    cli: Path | None
    network: str = "proxy-only"
    """``proxy-only``: sessions reach nothing but the API proxy; ``host``: the
    host's network as well (for tasks whose agent must install packages)."""


@dataclass(frozen=True)
class PhaseRun:
    """Everything an adapter needs to run one phase in a cell's sandbox."""

    phase: PhaseSpec
    prompt: str
    sandbox: Sandbox
    workspace: Workspace
    home: Path
    timeout_s: float
    settings: AgentSettings
    proxy: ApiProxy
    """The harness-side API proxy: the session gets a token for it, never the key."""
    mounts: tuple[Mount, ...] = ()
    plugin_dirs: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    minimal: bool = False
    limits: Limits = field(default_factory=Limits)
    workspace_writable: bool = True
    """False for a review task: the workspace is read-only for the whole session."""
    watch: tuple[Path, ...] = ()
    """Writable host folders besides the workspace and HOME whose disk use is watched."""
    add_dirs: tuple[str, ...] = ()
    """Folders outside the workspace the CLI may work in (``--add-dir``)."""


@dataclass
class PhaseReport:
    """One session as the agent CLI reported it; nothing here is estimated."""

    name: str
    completed: bool
    error: str | None = None
    timed_out: bool = False
    limit_hit: LimitHit | None = None
    session_id: str | None = None
    num_turns: int = 0
    duration_ms: float = 0.0
    cost_usd: float | None = None
    usage: dict[str, int] = field(default_factory=dict)
    """The main loop's usage, as the CLI's ``usage``."""
    model_usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per model, side calls and subagents included (the CLI's ``modelUsage``)."""
    transcript: str | None = None
    """The session's transcript as the CLI left it in the agent's HOME (cut at
    MAX_TRANSCRIPT_BYTES), or None when there is none."""
    transcript_cut: bool = False
    skills_invoked: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    tool_uses: list[dict[str, Any]] = field(default_factory=list)
    """Every tool call the model made (``name``, ``input``), from the API proxy's
    record; not in :meth:`to_json` (a Write's input holds whole files)."""
    own_failure: bool = False
    """The session did not complete though the model service answered every
    request and the model had made tool calls (the API proxy's record): the CLI
    ended on its own or what the agent ran ended it (``kill $PPID``), which no
    outage explains. Counted, never an excluded session error."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "completed": self.completed, "error": self.error,
            "session_id": self.session_id, "num_turns": self.num_turns,
            "duration_ms": self.duration_ms, "cost_usd": self.cost_usd, "usage": self.usage,
            "model_usage": self.model_usage, "skills_invoked": self.skills_invoked,
            **self.details,
        }


class AgentAdapter(Protocol):
    """One agent CLI. The harness calls :meth:`unavailable` at collection (a
    reason makes the arm's cells skips) and :meth:`run_phase` once per phase."""

    name: str

    def unavailable(self, settings: AgentSettings) -> str | None:
        """Why sessions cannot run here, or None."""
        ...

    def run_phase(self, run: PhaseRun) -> PhaseReport:
        """Run one session to its end (or its timeout) and report it."""
        ...


def adapter_for(kind: str) -> AgentAdapter:
    from pytest_wfbench.agents.claude import ClaudeCodeAdapter

    adapters: dict[str, AgentAdapter] = {"claude": ClaudeCodeAdapter()}
    return adapters[kind]


@dataclass(frozen=True)
class PluginDir:
    """An external plugin under test, pinned by its exact version and digest."""

    path: Path
    name: str
    version: str
    digest: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "digest": self.digest,
                "path": str(self.path)}


class PluginError(Exception):
    """The plugin directory or version given on the command line is unusable."""


def load_plugin(directory: str | None, version: str | None) -> PluginDir:
    """Check ``--wfbench-plugin-dir`` against ``--wfbench-plugin-version``."""
    import json

    from pytest_wfbench.workspace.template import tree_digest

    if not directory or not version:
        raise PluginError("plugin arms need --wfbench-plugin-dir DIR and "
                          "--wfbench-plugin-version X (the plugin's exact version)")
    path = Path(directory).resolve()
    manifest = path / ".claude-plugin" / "plugin.json"
    if not manifest.is_file():
        raise PluginError(f"--wfbench-plugin-dir {path}: no .claude-plugin/plugin.json there")
    try:
        data = json.loads(manifest.read_text())
    except json.JSONDecodeError as error:
        raise PluginError(f"{manifest}: invalid JSON: {error}") from error
    name, found = data.get("name"), data.get("version")
    if not isinstance(name, str) or not name:
        raise PluginError(f"{manifest}: no 'name'")
    if found != version:
        raise PluginError(f"{manifest}: version is {found!r}, but --wfbench-plugin-version "
                          f"says {version!r}")
    return PluginDir(path=path, name=name, version=version, digest=tree_digest(path))
