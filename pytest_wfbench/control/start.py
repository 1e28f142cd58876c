"""The controller's decisions before any cell runs: the sweep's identity when
it continues one, and its plan (which cells keep or reuse a row)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pytest_wfbench import __version__
from pytest_wfbench.cells import ScenarioCell
from pytest_wfbench.control.budget import row_cost
from pytest_wfbench.control.plan import KEPT, REUSED, Plan, plan_resume, plan_reuse
from pytest_wfbench.control.replay import PLAN
from pytest_wfbench.row import utc_now
from pytest_wfbench.store import (
    CANCELLED,
    RESULTS,
    RUNNING,
    SWEEP_RECORD_VERSION,
    OutDirError,
    iter_rows,
    read_sweep_record,
    write_sweep_record,
)
from pytest_wfbench.sweep import Sweep, SweepOptions
from pytest_wfbench.tasks.arms import incumbent_of
from pytest_wfbench.workspace.fs import remove_tree
from pytest_wfbench.workspace.template import tree_digest


def resumed_sweep_id(out_dir: Path | None) -> str:
    """The id of the sweep an out dir holds (its sweep.json, else its rows)."""
    if out_dir is None:
        raise OutDirError("--wfbench-resume needs --wfbench-out DIR: the out dir of the sweep "
                          "to continue")
    record = read_sweep_record(out_dir)
    if record is not None and isinstance(record.get("sweep_id"), str):
        return str(record["sweep_id"])
    for row in iter_rows(out_dir / RESULTS):
        if isinstance(row.get("sweep_id"), str):
            return str(row["sweep_id"])
    raise OutDirError(f"--wfbench-resume: {out_dir} holds no rows of a sweep to continue; "
                      "drop --wfbench-resume to start a sweep there")


def chosen_sweep_id(options: SweepOptions) -> str | None:
    """The sweep's id: a resumed sweep's own (--wfbench-sweep-id, when given, must be
    it, and its shard must be this one), else --wfbench-sweep-id, else None (new)."""
    if not options.resume:
        return options.sweep_id
    sweep_id = resumed_sweep_id(options.out_dir)
    if options.sweep_id is not None and options.sweep_id != sweep_id:
        raise OutDirError(f"--wfbench-sweep-id {options.sweep_id}: the sweep in {options.out_dir} "
                          f"to resume is {sweep_id}; give that id or none")
    record = read_sweep_record(options.out_dir) if options.out_dir is not None else None
    recorded = ((record or {}).get("shard") or {}).get("label")
    asked = options.shard.label if options.shard is not None else None
    if recorded != asked:
        held = f"shard {recorded}" if recorded else "a whole sweep"
        wanted = f"shard {asked}" if asked else "a whole sweep"
        flag = f"--wfbench-shard {recorded}" if recorded else "no --wfbench-shard"
        raise OutDirError(f"--wfbench-resume: {options.out_dir} holds {held} of sweep "
                          f"{sweep_id}, not {wanted}: resume it with {flag}")
    return sweep_id


def prepare_plan(sweep: Sweep, now: datetime | None = None) -> Plan:
    """Controller: the plan, written into the work dir for the workers. Without
    resume or reuse it is empty and no identity is computed up front."""
    options = sweep.options
    plan = Plan()
    if options.resume or options.reuse_dir is not None:
        cells = sweep.all_cells()
        identities = {cell_id: sweep.cell_identity(cell).to_json()
                      for cell_id, cell in cells.items()}
        if options.resume:
            sweep.results_offset = sweep.store.compact()
            plan = plan_resume(iter_rows(sweep.store.results, sweep.sweep_id), identities)
        if options.reuse_dir is not None:
            arms = {cell_id: cell.arm_name for cell_id, cell in cells.items()
                    if not isinstance(cell, ScenarioCell)}
            always_run = {arm: "a candidate arm" if incumbent_of(arm) is not None
                          else "a fresh arm (--wfbench-fresh-arms)"
                          for arm in arms.values()
                          if arm in options.fresh_arms or incumbent_of(arm) is not None}
            reusable = set(arms.values()) - set(always_run)
            plan = plan_reuse(plan, iter_rows(options.reuse_dir / RESULTS),
                              {k: v for k, v in identities.items() if k in arms}, arms, reusable,
                              now=now or datetime.now(UTC),
                              max_age=timedelta(days=options.reuse_max_age_days),
                              always_run=always_run)
    if sweep.ledger is not None:
        sweep.ledger.record_earlier(sum(row_cost(planned.row, sweep.prices)
                                        for planned in plan.planned.values()
                                        if planned.mode == KEPT))
    path = sweep.identity.work_dir / PLAN
    path.write_text(json.dumps(plan.to_json()), encoding="utf-8")
    sweep.set_plan(plan)
    return plan


def _process_start(pid: int) -> str | None:
    """A process's start time (to tell it from a later one with the same pid)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _alive(session: dict[str, Any]) -> bool:
    pid = session.get("pid")
    return isinstance(pid, int) and _process_start(pid) == session.get("pid_start")


def open_session(sweep: Sweep, plan: Plan) -> dict[str, Any]:
    """sweep.json for this session (a new sweep's, or one more session of a
    resumed one); the work dir a killed earlier session left behind (holding
    hidden oracle files) is removed."""
    store = sweep.store
    record = read_sweep_record(store.out_dir) or {}
    for earlier in record.get("sessions") or []:
        stale = Path(str(earlier.get("work_dir") or ""))
        if earlier.get("state") == RUNNING and stale.name.startswith("wfbench-") \
                and stale.parent == sweep.identity.work_dir.parent and not _alive(earlier):
            remove_tree(stale)
            earlier["state"], earlier["reason"] = CANCELLED, "its process died"
    options = sweep.options
    record.update({
        "schema_version": SWEEP_RECORD_VERSION, "sweep_id": sweep.sweep_id,
        "suite": sweep.suite_name, "harness_version": __version__,
        "out_dir": str(sweep.identity.out_dir),
        "task_files": [{"path": str(task_file.path), "sha256": tree_digest(task_file.path)}
                       for task_file in sweep.task_files],
        "settings": {
            "runs": options.runs, "arms": list(options.arms) if options.arms else None,
            "baseline_arm": options.baseline_arm, "sandbox_backend": sweep.sandbox_backend,
            "clone": "overlay" if sweep.layered_clones() else "copy",
            "suspicious": options.suspicious, "model": options.model,
            "effort": options.effort, "promotion": options.promotion,
            "min_kill_rate": options.min_kill_rate,
            "candidate_overlay": str(options.candidate_overlay)
            if options.candidate_overlay else None,
        },
        "shard": sweep.shard_plan.to_json() if sweep.shard_plan is not None else None,
    })
    sessions = record.setdefault("sessions", [])
    summary = plan.to_json()
    sessions.append({
        "started_at": utc_now(), "finished_at": None, "state": RUNNING, "reason": None,
        "resumed": options.resume, "pid": os.getpid(), "pid_start": _process_start(os.getpid()),
        "work_dir": str(sweep.identity.work_dir),
        "plan": {"kept": plan.count(KEPT), "reused": plan.count(REUSED),
                 "reuse_dir": str(options.reuse_dir) if options.reuse_dir else None,
                 "reasons": summary["reasons"], "canaries": summary["canaries"]},
    })
    write_sweep_record(store, record)
    return record


def close_session(sweep: Sweep, state: str, reason: str | None,
                  stopped_at: str | None = None) -> None:
    """This session's end in sweep.json: complete, cancelled, aborted or stopped
    at the budget (and when it was stopped)."""
    record = read_sweep_record(sweep.store.out_dir) or {}
    sessions = record.get("sessions") or [{}]
    sessions[-1].update(finished_at=utc_now(), state=state, reason=reason,
                        stopped_at=stopped_at)
    record["sessions"] = sessions
    write_sweep_record(sweep.store, record)
