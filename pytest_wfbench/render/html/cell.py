"""One cell as the page shows it: outcome, error detail, figures, stage times,
steps, sessions with their transcripts, the patch and other artifacts. Every
text from the row or an artifact is bounded here; escaping is the template's."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_wfbench.aggregate import total_tokens
from pytest_wfbench.aggregate.figures import metric
from pytest_wfbench.render.format import fmt, fmt_cost
from pytest_wfbench.render.html.charts import stage_bar
from pytest_wfbench.render.html.clip import Budget, Clipped, clip, clip_items
from pytest_wfbench.render.html.diff import Diff, classify
from pytest_wfbench.render.html.transcript import TRANSCRIPT_CHARS, Transcript, read_transcript

ReadArtifact = Callable[[str], str | None]
"""An artifact's text by its name in the row (``artifacts/<cell_id>.patch``),
or None when there is none."""

OUTCOMES = (("resolved", "resolved"), ("suspicious", "suspicious win"),
            ("negative", "valid negative"), ("failure", "counted failure"),
            ("excluded", "excluded"), ("skipped", "skipped"))
OUTCOME_LABELS = dict(OUTCOMES)
STAGE_ORDER = ("template", "clone", "setup", "session", "verify", "capture", "evidence",
               "expected_tests", "oracle", "cleanup", "row")
ERROR_CHARS = 4_000
PATCH_CHARS = 80_000
OTHER_ARTIFACT_CHARS = 20_000
MAX_OTHER_ARTIFACTS = 8
STEP_TEXT_CHARS = 1_000
HEAD_STEPS, TAIL_STEPS = 60, 20
LIST_ITEMS, LIST_ITEM_CHARS = 20, 300


def outcome(row: Mapping[str, Any]) -> str:
    """The grid's outcome of a row: resolved, a suspicious win, a valid negative,
    a counted failure (unresolved, e.g. skill-not-invoked), excluded or skipped."""
    if row.get("status") == "skipped":
        return "skipped"
    if not row.get("counted"):
        return "excluded"
    if row.get("error_kind") == "suspicious" or (row.get("resolved") and row.get("suspicious")):
        return "suspicious"
    if row.get("resolved"):
        return "resolved"
    return "negative" if row.get("error_class") == "valid negative" else "failure"


@dataclass(frozen=True)
class Step:
    operation: str
    kind: str
    elapsed: str
    returncode: str
    expected: bool
    tokens: str
    command: Clipped
    stderr: Clipped
    note: str
    """Output cut at the admitted size, unmeasured with its reason, a timeout."""


@dataclass(frozen=True)
class Phase:
    name: str
    facts: list[tuple[str, str]]
    error: Clipped | None
    transcript: Transcript | None
    transcript_note: str


@dataclass
class CellView:
    cell_id: str
    task: str
    arm: str
    run: int
    lane: str
    outcome: str
    facts: list[tuple[str, str]]
    error: Clipped | None
    lists: list[tuple[str, list[str]]]
    """Titled lists: suspicious findings, evidence notes."""
    stages: list[tuple[str, str]]
    stage_svg: str
    steps: list[Step]
    steps_tail: list[Step]
    steps_cut: int
    phases: list[Phase]
    patch: Diff | None
    patch_name: str
    artifacts: list[tuple[str, Clipped]] = field(default_factory=list)

    @property
    def outcome_label(self) -> str:
        return OUTCOME_LABELS[self.outcome]


def _clip_list(items: Any) -> list[str]:
    values = [str(v) for v in items] if isinstance(items, list) else []
    first, last, cut = clip_items(values, LIST_ITEMS, 0)
    shown = [clip(v, LIST_ITEM_CHARS).text for v in first + last]
    return shown + ([f"... and {cut:,} more"] if cut else [])


def _facts(row: Mapping[str, Any]) -> list[tuple[str, str]]:
    facts = [("outcome", OUTCOME_LABELS[outcome(row)])]
    if row.get("error_kind"):
        facts.append(("error", f"{row['error_kind']} ({row.get('error_class')})"))
    facts += [("counted", "yes" if row.get("counted") else "no"),
              ("cell s", fmt(row.get("duration_s"), 2)),
              ("session s", fmt(row.get("session_duration_s"), 2))]
    if row.get("lane", "agent") == "agent":
        facts += [("tokens", fmt(total_tokens(dict(row)))),
                  ("cost", fmt_cost(metric(row, "cost_usd"))), ("turns", fmt(row.get("num_turns"))),
                  ("tool calls", fmt(row.get("tool_calls"))),
                  ("est. tokens", fmt(row.get("estimated_tokens")))]
        if row.get("diff_files") is not None:
            facts.append(("churn", f"{row['diff_files']} files (+{row.get('diff_insertions')} "
                                   f"-{row.get('diff_deletions')})"))
        facts += [("verify", _passed(row.get("authored_tests_passed"))),
                  ("oracle", _passed(row.get("oracle_passed")))]
    else:
        totals = row.get("totals") or {}
        calls = totals.get("tool_calls") or {}
        facts += [("transport", str(row.get("transport") or "n/a")),
                  ("agent-facing ms", fmt(totals.get("elapsed_ms"))),
                  ("tool calls", fmt(calls.get("total"))),
                  ("est. tokens", fmt(totals.get("estimated_tokens"))),
                  ("oracle", _passed(row.get("oracle_passed")))]
    for key, label in (("model", "model"), ("effort", "effort"), ("clone", "clone"),
                       ("oracle_judged_by", "oracle judged by"), ("worker", "worker")):
        if row.get(key):
            facts.append((label, str(row[key])))
    if row.get("limit_exceeded"):
        facts.append(("limit exceeded", json.dumps(row["limit_exceeded"], sort_keys=True)))
    review = row.get("review")
    if isinstance(review, Mapping):
        for key in ("tp", "fp", "fn", "precision", "recall", "weighted_f1", "grounding"):
            if review.get(key) is not None:
                facts.append((f"review {key}", fmt(review[key], 2)))
    return [(label, clip(value, LIST_ITEM_CHARS).text) for label, value in facts]


def _passed(value: Any) -> str:
    return "n/a" if value is None else ("passed" if value else "failed")


def _step(step: Mapping[str, Any]) -> Step:
    notes = []
    if step.get("measured") is False:
        notes.append(f"unmeasured: {step.get('reason')}")
    if step.get("output_cut"):
        notes.append("output cut at the admitted size")
    if step.get("timed_out"):
        notes.append("timed out")
    expected = step.get("expected")
    return Step(
        operation=str(step.get("operation") or step.get("name") or "step"),
        kind=str(step.get("step_kind") or "script"), elapsed=fmt(step.get("elapsed_ms")),
        returncode=fmt(step.get("returncode")), expected=expected is not False,
        tokens=fmt(step.get("estimated_tokens")),
        command=clip(str(step.get("command") or ""), STEP_TEXT_CHARS),
        stderr=clip(str(step.get("stderr_tail") or ""), STEP_TEXT_CHARS),
        note=clip("; ".join(notes), LIST_ITEM_CHARS).text)


USAGE_LABELS = (("input_tokens", "in"), ("cache_creation_input_tokens", "cache w"),
                ("cache_read_input_tokens", "cache r"), ("output_tokens", "out"))


def _usage(usage: Any) -> str:
    """A session's tokens, written as each turn's are."""
    if not isinstance(usage, Mapping) or not usage:
        return "n/a"
    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) else 0

    return " · ".join(f"{label} {count(key):,}" for key, label in USAGE_LABELS)


def _phase(entry: Mapping[str, Any], read: ReadArtifact, budget: Budget) -> Phase:
    facts = [("completed", "yes" if entry.get("completed") else "no"),
             ("turns", fmt(entry.get("num_turns"))),
             ("session s", fmt((metric(entry, "duration_ms") or 0) / 1000, 2)),
             ("cost", fmt_cost(metric(entry, "cost_usd"))), ("usage", _usage(entry.get("usage"))),
             ("skills invoked", ", ".join(str(s) for s in entry.get("skills_invoked") or [])
              or "none")]
    if entry.get("required_skill"):
        facts.append(("required skill", str(entry["required_skill"])))
    name = entry.get("transcript")
    transcript, note = None, "no transcript"
    if isinstance(name, str):
        text = read(name)
        if text is None:
            note = f"{name}: not found"
        else:
            transcript, note = read_transcript(text, budget), name
            if entry.get("transcript_cut"):
                note += " (cut by the harness at its size limit)"
    error = entry.get("error")
    return Phase(name=clip(str(entry.get("name") or "session"), LIST_ITEM_CHARS).text,
                 facts=[(k, clip(v, LIST_ITEM_CHARS).text) for k, v in facts],
                 error=clip(str(error), ERROR_CHARS) if error else None,
                 transcript=transcript, transcript_note=note)


def cell_view(row: Mapping[str, Any], read: ReadArtifact) -> CellView:
    """Everything the page shows of one row, bounded."""
    stage_ms = row.get("stage_ms") or {}
    # Known stages in the order they run, others (a lane's) before the row.
    inside = ("template_wait", "template_build")
    ordered = [(name, float(stage_ms[name])) for name in STAGE_ORDER[:-1] if name in stage_ms]
    ordered += [(name, float(ms)) for name, ms in sorted(stage_ms.items())
                if name not in STAGE_ORDER and name not in inside]
    ordered += [(name, float(stage_ms[name])) for name in STAGE_ORDER[-1:] if name in stage_ms]
    stages = ordered + [(name, float(stage_ms[name])) for name in inside if name in stage_ms]
    steps = [_step(s) for s in row.get("steps") or [] if isinstance(s, Mapping)]
    head, tail, cut = clip_items(steps, HEAD_STEPS, TAIL_STEPS)
    budget = Budget(TRANSCRIPT_CHARS)
    phases = [_phase(p, read, budget) for p in row.get("phases") or [] if isinstance(p, Mapping)]
    names = [str(n) for n in row.get("artifacts") or []]
    shown = {p.get("transcript") for p in row.get("phases") or [] if isinstance(p, Mapping)}
    patch_name = next((n for n in names if n.endswith(".patch")), "")
    patch_text = read(patch_name) if patch_name else None
    others = [n for n in names if n != patch_name and n not in shown]
    artifacts = []
    for name in others[:MAX_OTHER_ARTIFACTS]:
        if row.get("arm_kind") == "gold" and name.endswith(".review.json"):
            # Gold's review is the task's hidden labels: its file is kept, not shown.
            artifacts.append((name, Clipped("(not shown: gold's review is the task's hidden "
                                            "labels)")))
            continue
        text = read(name)
        artifacts.append((name, clip(text, OTHER_ARTIFACT_CHARS) if text is not None
                          else Clipped("(not found)")))
    if len(others) > MAX_OTHER_ARTIFACTS:
        artifacts.append((f"... and {len(others) - MAX_OTHER_ARTIFACTS} more artifacts",
                          Clipped("")))
    detail = row.get("error_detail") or row.get("skip_reason")
    lists = [(title, _clip_list(row.get(key))) for key, title in (
        ("suspicious", "Suspicious: the patch reaches into its judges"),
        ("evidence_notes", "What the patch cannot show"))]
    return CellView(
        cell_id=str(row.get("cell_id")), task=str(row.get("task")), arm=str(row.get("arm")),
        run=int(row.get("run") or 0), lane=str(row.get("lane") or "agent"), outcome=outcome(row),
        facts=_facts(row), error=clip(str(detail), ERROR_CHARS) if detail else None,
        lists=[(title, items) for title, items in lists if items],
        stages=[(name, f"{ms:,.1f}") for name, ms in stages], stage_svg=stage_bar(ordered),
        steps=head, steps_tail=tail, steps_cut=cut, phases=phases,
        patch=classify(patch_text, PATCH_CHARS) if patch_text is not None else None,
        patch_name=patch_name if patch_text is not None or not patch_name
        else f"{patch_name}: not found",
        artifacts=artifacts)
