"""An agent arm's phases, run one after another in the cell's sandbox, with
the arm's own evidence checks (SPEC §4): skills read-only and fingerprinted,
each required skill invoked (read from the transcript), a plan phase that adds
exactly one plan document and nothing else, a work phase that changes something.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_wfbench.agents import AgentSettings, PhaseReport, PhaseRun, PluginDir, adapter_for
from pytest_wfbench.agents.claude import model_usage_totals
from pytest_wfbench.cells import Cell
from pytest_wfbench.outcomes import CellFailure, CellVerdict
from pytest_wfbench.sandbox import Mount, Sandbox
from pytest_wfbench.session import SessionResult
from pytest_wfbench.skills import SKILLS_DIR, fingerprint, read_only_mount
from pytest_wfbench.store import ResultsStore
from pytest_wfbench.tasks import Limits
from pytest_wfbench.workspace.capture import TreeBounds
from pytest_wfbench.workspace.clone import Workspace
from pytest_wfbench.workspace.evidence import workspace_changes
from pytest_wfbench.workspace.template import Template

if TYPE_CHECKING:
    from pytest_wfbench.agents.proxy import ApiProxy

PLUGIN_MOUNT = "/opt/wfbench/plugins"


@dataclass(frozen=True)
class AgentCell:
    """What an agent arm's phases need beyond the sandbox and the workspace."""

    settings: AgentSettings
    plugin: PluginDir | None
    template: Template
    scratch: Path
    store: ResultsStore
    skills_fingerprint: str | None
    """The installed skills' fingerprint, or None when the arm has no skills."""
    proxy: ApiProxy
    """The harness-side API proxy: sessions get tokens for it, never the key."""
    progress: Callable[[str], None] | None = None
    """Told ``session/<phase>`` as each phase starts (the sweep's live progress)."""
    limits: Limits = field(default_factory=Limits)
    bounds: TreeBounds = field(default_factory=TreeBounds)
    task_prompt: str | None = None
    """What ``{task}`` stands for in the phases' prompts; None: the task's prompt."""
    workspace_writable: bool = True
    """False for a review task: the workspace is read-only for every phase."""
    mounts: tuple[Mount, ...] = ()
    """More host folders for every phase (a review task's artifact folder)."""
    env: tuple[tuple[str, str], ...] = ()
    add_dirs: tuple[str, ...] = ()
    """Sandbox folders outside the workspace the CLI may work in."""


def phase_changes(before: dict[str, str], after: dict[str, str]) -> dict[str, str]:
    """Paths whose state differs between two snapshots, with their new state."""
    changed = {path: state for path, state in after.items() if before.get(path) != state}
    changed.update({path: "D" for path in before if path not in after})
    return changed


def _merge_model_usage(into: dict[str, dict[str, Any]], more: dict[str, dict[str, Any]]) -> None:
    for model, figures in more.items():
        target = into.setdefault(model, {})
        for key, value in figures.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                target[key] = target.get(key, 0) + value
            else:
                target.setdefault(key, value)


def run_agent_arm(cell: Cell, sandbox: Sandbox, workspace: Workspace, home: Path,
                  result: SessionResult, agent: AgentCell) -> None:
    """Run every phase; raise CellFailure when a session fails; leave an evidence
    failure in ``result`` for the evidence stage."""
    adapter = adapter_for(cell.arm.kind)
    started = time.monotonic()
    result.num_turns = 0
    result.estimated_tokens = None
    has_skills = agent.skills_fingerprint is not None
    exclude = (SKILLS_DIR,) if has_skills else ()
    plugin_name = agent.plugin.name if agent.plugin else ""
    mounts: list[Mount] = []
    plugin_dirs: list[str] = []
    if has_skills:
        if fingerprint(workspace.files) != agent.skills_fingerprint:
            result.evidence_failure = ("evidence-unverified",
                                       "the skills under test changed during setup")
            return
        mounts.append(read_only_mount(workspace.files, sandbox.workspace_path(workspace.mount())))
    if agent.plugin is not None:
        mount = Mount(agent.plugin.path, f"{PLUGIN_MOUNT}/{agent.plugin.name}")
        mounts.append(mount)
        plugin_dirs.append(sandbox.mount_path(mount))
    plan_path: str | None = None
    try:
        for phase in cell.arm.phases:
            if agent.progress is not None:
                agent.progress(f"session/{phase.name}")
            skill = phase.skill.replace("{plugin}", plugin_name) if phase.skill else None
            prompt = (phase.prompt.replace("{plugin}", plugin_name)
                      .replace("{plan}", plan_path or "(no plan document)")
                      .replace("{task}", agent.task_prompt if agent.task_prompt is not None
                               else cell.task.prompt))
            before = (workspace_changes(agent.template, workspace, agent.scratch, agent.bounds,
                                        exclude)
                      if phase.role in ("plan", "work") else {})
            skills_before = fingerprint(workspace.files)
            extra = [Mount(path, f"{PLUGIN_MOUNT}/{phase.name}-{index}")
                     for index, path in enumerate(phase.plugin_dirs)]
            report = adapter.run_phase(PhaseRun(
                phase=phase, prompt=prompt, sandbox=sandbox, workspace=workspace, home=home,
                timeout_s=cell.task.timeout_s, settings=agent.settings, proxy=agent.proxy,
                mounts=(*mounts, *agent.mounts, *extra),
                plugin_dirs=(*plugin_dirs, *(sandbox.mount_path(m) for m in extra)),
                minimal=cell.arm.minimal, limits=agent.limits, env=dict(agent.env),
                workspace_writable=agent.workspace_writable,
                watch=tuple(mount.host for mount in agent.mounts if mount.writable),
                add_dirs=agent.add_dirs,
            ))
            _account(result, report, agent, cell, skill)
            if report.limit_hit is not None:
                raise CellVerdict("limit-exceeded", f"phase {phase.name!r}: {report.error}",
                                  report.limit_hit.to_json())
            if report.timed_out:
                raise CellVerdict("session-timeout", f"phase {phase.name!r}: {report.error}")
            if not report.completed:
                if report.own_failure:
                    raise CellFailure("evidence-tampered", f"phase {phase.name!r}: {report.error}")
                raise CellFailure("session-error", f"phase {phase.name!r}: {report.error}")
            failure = _phase_evidence(report, skill, skills_before, workspace.files)
            if failure is None and phase.role in ("plan", "work"):
                after = workspace_changes(agent.template, workspace, agent.scratch, agent.bounds,
                                          exclude)
                changed = phase_changes(before, after)
                if phase.role == "plan":
                    added = [p for p, state in changed.items() if state.startswith("A")]
                    if len(changed) != 1 or len(added) != 1:
                        failure = ("plan-evidence-invalid",
                                   f"phase {phase.name!r} must add exactly one plan document "
                                   f"and change nothing else; it changed {sorted(changed)}")
                    else:
                        plan_path = added[0]
                elif not changed:
                    failure = ("implementation-evidence-invalid",
                               f"phase {phase.name!r} changed nothing in the workspace")
            if failure is not None:
                result.evidence_failure = failure
                return
    finally:
        result.duration_s = time.monotonic() - started


def _phase_evidence(report: PhaseReport, skill: str | None, skills_before: str,
                    workspace: Path) -> tuple[str, str] | None:
    if report.transcript is None:
        return ("evidence-tampered",
                f"transcript_missing: phase {report.name!r} (session {report.session_id}) "
                "left no transcript in the sandbox HOME")
    if skill is not None and skill not in report.skills_invoked:
        return ("skill-not-invoked",
                f"phase {report.name!r} never invoked the {skill!r} skill "
                f"(invoked: {report.skills_invoked or 'none'})")
    if fingerprint(workspace) != skills_before:
        # The session's doing (the read-only mount's parent can be renamed):
        # counted, so it cannot be a way out of a judged loss.
        return ("evidence-tampered",
                f"the skills under test changed during phase {report.name!r}")
    return None


def _account(result: SessionResult, report: PhaseReport, agent: AgentCell, cell: Cell,
             skill: str | None) -> None:
    """Add one phase's figures (all from the CLI's report) to the cell's."""
    entry = report.to_json()
    entry["required_skill"] = skill
    if report.transcript is not None:
        name = agent.store.write_artifact(
            f"{cell.cell_id}.{report.name}.transcript.jsonl", report.transcript)
        entry["transcript_cut"] = report.transcript_cut
        result.artifacts.append(name)
        entry["transcript"] = name
    result.phases.append(entry)
    result.tool_uses.extend(report.tool_uses)
    if report.session_id:
        result.session_ids.append(report.session_id)
    result.num_turns = (result.num_turns or 0) + report.num_turns
    for key, value in report.usage.items():
        result.main_usage[key] = result.main_usage.get(key, 0) + value
    _merge_model_usage(result.model_usage, report.model_usage)
    costs = [phase.get("cost_usd") for phase in result.phases]
    result.cost_usd = None if any(c is None for c in costs) else round(
        sum(float(c) for c in costs if c is not None), 6)


def token_totals(result: SessionResult) -> dict[str, int]:
    """The row's token fields: all models' totals (the report says so); the main
    loop's usage when the CLI reported no per-model figures."""
    totals = model_usage_totals(result.model_usage)
    return totals if any(totals.values()) else {k: result.main_usage.get(k, 0) for k in totals}
