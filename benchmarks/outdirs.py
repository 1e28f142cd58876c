"""A generated out dir of many rows, for the aggregation and report benchmark.

Rows are shaped like an agent sweep's (every field a real row has, phases,
model usage and stage times: about 2.5 KB of JSON each), with seeded figures
and a realistic mix of outcomes: mostly resolved or counted failures, a few
excluded runs (session errors), skipped cells and one harness error.
Deterministic: the same arguments write the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SWEEP_ID = "20261201T000000Z-bench000"
ARMS = ("baseline", "workflow", "workflow_direct", "ce_workflow")
STAGES = ("template", "template_wait", "template_build", "clone", "setup", "session",
          "verify", "capture", "evidence", "expected_tests", "oracle", "row", "cleanup")


CANDIDATE_ARMS = ("baseline", "workflow", "workflow_direct", "candidate_workflow")
"""With a candidate arm: the promotion gate weighs it against ``workflow``."""


@dataclass(frozen=True)
class RowsShape:
    tasks: int
    arms: int
    runs: int
    candidate: bool = False
    """The last arm a candidate (CANDIDATE_ARMS): the report runs the promotion gate."""

    @property
    def rows(self) -> int:
        return self.tasks * self.arms * self.runs

    @property
    def label(self) -> str:
        return (f"{self.tasks:,} tasks x {self.arms} arms x {self.runs} runs"
                + (", a candidate arm" if self.candidate else ""))

    @property
    def key(self) -> str:
        return f"{self.tasks}x{self.arms}x{self.runs}" + ("-candidate" if self.candidate else "")

    @property
    def arm_names(self) -> tuple[str, ...]:
        return (CANDIDATE_ARMS if self.candidate else ARMS)[:self.arms]


def _outcome(rng: random.Random) -> tuple[str, str | None]:
    """(status, error_kind): 70% resolved, then counted failures, a few excluded."""
    draw = rng.random()
    if draw < 0.70:
        return "ran", None
    if draw < 0.90:
        return "ran", "oracle-failed"
    if draw < 0.95:
        return "ran", "verify-failed"
    if draw < 0.97:
        return "ran", "session-timeout"
    if draw < 0.99:
        return "ran", "session-error"
    return "skipped", None


def agent_row(rng: random.Random, task: str, arm: str, run: int) -> dict[str, Any]:
    status, kind = _outcome(rng)
    counted = status == "ran" and kind != "session-error"
    resolved = status == "ran" and kind is None
    input_tokens = rng.randrange(2_000, 40_000)
    output_tokens = rng.randrange(500, 8_000)
    cache_read = rng.randrange(10_000, 400_000)
    cache_creation = rng.randrange(0, 30_000)
    session_s = round(rng.uniform(20, 600), 3)
    stage_ms = {stage: round(rng.uniform(1, 900), 1) for stage in STAGES}
    stage_ms["session"] = round(session_s * 1000, 1)
    duration_s = round(session_s + sum(v for k, v in stage_ms.items() if k != "session") / 1000,
                       3)
    cost = round((input_tokens * 3 + output_tokens * 15 + cache_read * 0.3
                  + cache_creation * 3.75) / 1e6, 6)
    usage = {"input_tokens": input_tokens, "output_tokens": output_tokens,
             "cache_read_input_tokens": cache_read,
             "cache_creation_input_tokens": cache_creation}
    cell_id = f"{task}-{arm}-r{run}"
    skipped = status == "skipped"
    return {
        "arm": arm, "arm_kind": "claude",
        "artifacts": [] if skipped else [f"artifacts/{cell_id}.patch",
                                         f"artifacts/{cell_id}.work.transcript.jsonl"],
        "authored_tests_passed": None if skipped else kind not in ("verify-failed",),
        "cache_creation_input_tokens": 0 if skipped else cache_creation,
        "cache_read_input_tokens": 0 if skipped else cache_read,
        "cell_id": cell_id, "class": rng.choice(("bug", "feature", "refactor")),
        "clone": "overlay", "cost_usd": None if skipped else cost, "counted": counted,
        "diff_deletions": rng.randrange(0, 40), "diff_files": rng.randrange(1, 6),
        "diff_insertions": rng.randrange(1, 120),
        "duration_s": 0.0 if skipped else duration_s, "effort": "high",
        "error_class": None if kind is None else (
            "execution failure" if kind == "session-error" else "valid negative"),
        "error_detail": None if kind is None else f"{kind}: see the cell's artifacts",
        "error_kind": kind, "estimated_tokens": None, "evidence_notes": [], "extras": {},
        "harness_overhead_s": None if skipped else round(duration_s - session_s, 3),
        "harness_version": "0.1.0",
        "identity": {"arm": hashlib.sha256(arm.encode()).hexdigest(), "base_sha": "c" * 40,
                     "effort": "high", "harness_version": "0.1.0",
                     "model": "claude-sonnet-4-5", "oracle": "a" * 64,
                     "sandbox_backend": "bubblewrap",
                     "task": hashlib.sha256(task.encode()).hexdigest()},
        "input_tokens": 0 if skipped else input_tokens, "kept_workspace": None,
        "lane": "agent", "limit_exceeded": None,
        "main_usage": {} if skipped else {k: v // 2 for k, v in usage.items()},
        "measurement_lock_wait_ms": None, "model": "claude-sonnet-4-5",
        "model_usage": {} if skipped else {"claude-sonnet-4-5": {**usage, "costUSD": cost}},
        "num_turns": None if skipped else rng.randrange(3, 60),
        "ok": kind is None, "oracle_digest": "b" * 64,
        "oracle_judged_by": None if skipped else "tests",
        "oracle_passed": None if skipped else resolved,
        "oracle_tests_expected": None if skipped else 6,
        "output_tokens": 0 if skipped else output_tokens,
        "phases": [] if skipped else [{"name": "work", "session_id": f"{rng.getrandbits(64):016x}",
                                       "duration_s": session_s, "num_turns": 12,
                                       "skill_invoked": True, **usage,
                                       "transcript": f"artifacts/{cell_id}.work.transcript.jsonl"}],
        "plugin": None, "random_seed": None, "recorded_at": "2026-12-01T01:00:00Z",
        "resolved": resolved, "reused": False, "reused_from": None, "review": None,
        "review_scored": None, "run": run, "sandbox_backend": "bubblewrap",
        "sanitized_sha": "d" * 40,
        "schema_version": 1,
        "session_duration_s": None if skipped else session_s,
        "session_ids": [] if skipped else [f"{rng.getrandbits(64):016x}"],
        "skills_fingerprint": None, "skip_reason": "expensive" if skipped else None,
        "stage_ms": {} if skipped else stage_ms, "started_at": "2026-12-01T00:59:00.000Z",
        "status": status, "steps": [], "subject_version": None, "suite": "bench-report",
        "suspicious": [], "sweep_id": SWEEP_ID, "task": task, "task_base_sha": "c" * 40,
        "task_prompt_digest": "e" * 64, "tool_calls": None, "totals": {}, "transport": None,
        "worker": f"gw{run % 2}", "shard": None, "merged_from": None, "overlay_digest": None,
        "audit": None,
    }


def cell_ids(shape: RowsShape) -> list[str]:
    """The cells of an out dir of ``shape``, in the order of its rows."""
    width = len(str(shape.tasks - 1))
    return [f"task-{t:0{width}d}-{arm}-r{run}" for t in range(shape.tasks)
            for arm in shape.arm_names for run in range(1, shape.runs + 1)]


def transcript_text(turns: int = 40) -> str:
    """A session's transcript as the Claude Code CLI writes it (JSON lines):
    a prompt, then per turn the assistant's text and tool call, each line with
    the response's usage, and the tool's result; about 180 KB."""
    usage = {"input_tokens": 1200, "output_tokens": 80, "cache_creation_input_tokens": 300,
             "cache_read_input_tokens": 9000}
    lines = [{"type": "user", "message": {"role": "user",
                                          "content": "Fix the failing test; run the suite."}}]
    for turn in range(turns):
        call = f"toolu_{turn:03d}"
        command = f"sed -n 1,200p src/module_{turn}.py && python -m pytest -q tests/ " + "-k x" * 50
        for content in ([{"type": "text", "text": f"Turn {turn}: I will look at the module."}],
                        [{"type": "tool_use", "id": call, "name": "Bash",
                          "input": {"command": command}}]):
            lines.append({"type": "assistant", "message": {
                "role": "assistant", "id": f"msg_{turn:03d}", "model": "claude-sonnet-4-5",
                "content": content, "usage": usage}})
        lines.append({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call,
             "content": ("a line of the command's output " * 8 + "\n") * 14}]}})
    return "".join(json.dumps(line) + "\n" for line in lines)


PATCH = "".join(["diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n",
                 "+++ b/src/calc.py\n@@ -1,80 +1,80 @@\n",
                 *(f"-    return old_value_{i}\n+    return new_value_{i}\n" for i in range(80))])


def _link_artifacts(out: Path, row: dict[str, Any], sources: dict[str, Path]) -> None:
    """The artifacts of a row the report lists (the page shows it whole): links
    to one transcript and one patch, read as a real sweep's would be."""
    for name in row["artifacts"]:
        kind = "patch" if name.endswith(".patch") else "transcript"
        (out / name).hardlink_to(sources[kind])


def write_outdir(out: Path, shape: RowsShape, seed: int = 7) -> Path:
    """An out dir of ``shape.rows`` rows (results.jsonl, sweep.json,
    environment.json, the listed rows' artifacts), as a finished sweep leaves
    it; returns it."""
    from pytest_wfbench.projection import listed

    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    (out / "artifacts").mkdir(exist_ok=True)
    sources = {"patch": out / "bench-source.patch",
               "transcript": out / "bench-source.transcript.jsonl"}
    sources["patch"].write_text(PATCH)
    sources["transcript"].write_text(transcript_text())
    width = len(str(shape.tasks - 1))
    with (out / "results.jsonl").open("w", encoding="utf-8") as results:
        for t in range(shape.tasks):
            task = f"task-{t:0{width}d}"
            for arm in shape.arm_names:
                for run in range(1, shape.runs + 1):
                    row = agent_row(rng, task, arm, run)
                    if results.tell() == 0:  # one harness error, listed in the report
                        row.update(status="ran", error_kind="harness-error", counted=True,
                                   error_detail="KeyError: 'x'", resolved=False)
                    results.write(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n")
                    if listed(row):
                        _link_artifacts(out, row, sources)
    record = {
        "harness_version": "0.1.0", "out_dir": str(out), "schema_version": 1,
        "sessions": [{"finished_at": "2026-12-01T02:00:00Z", "plan": {}, "reason": None,
                      "resumed": False, "started_at": "2026-12-01T00:00:00Z",
                      "state": "complete", "stopped_at": None}],
        "settings": {"arms": list(shape.arm_names), "baseline_arm": "baseline",
                     "clone": "overlay", "effort": "high", "model": "claude-sonnet-4-5",
                     "runs": shape.runs, "sandbox_backend": "bubblewrap", "suspicious": "flag"},
        "suite": "bench-report", "sweep_id": SWEEP_ID,
        "task_files": [{"path": "/bench/tasks.yaml", "sha256": "f" * 64}],
    }
    (out / "sweep.json").write_text(json.dumps(record, indent=2, sort_keys=True))
    (out / "environment.json").write_text(json.dumps({"host": "bench"}, indent=2))
    return out
