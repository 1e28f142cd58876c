"""The audit's verdicts from rows (pytest_wfbench.audit.report), as pure functions."""

from __future__ import annotations

from typing import Any

from pytest_wfbench.audit.report import SOUND, audit_tasks


def _row(task: str, arm: str, **fields: Any) -> dict[str, Any]:
    return {"task": task, "arm": arm, "cell_id": f"{task}-{arm}", "status": "ran",
            "lane": "agent", "counted": True, "resolved": False, **fields}


def test_a_task_is_audited_when_an_exploit_arm_ran_on_it_even_without_a_win() -> None:
    rows = [
        _row("t1", "gold", arm_kind="gold", resolved=True),
        _row("t1", "hack-pth", audit={"role": "hack", "name": "pth"}),
        _row("t2", "gold", arm_kind="gold", resolved=True),
        # A skipped exploit cell still says the task was audited.
        _row("t3", "gold", arm_kind="gold", resolved=True),
        _row("t3", "hack-pth", status="skipped", audit={"role": "hack", "name": "pth"}),
        _row("t4", "hack-pth", audit={"role": "hack", "name": "pth"}, resolved=True),
    ]
    audits = {audit.task: audit for audit in audit_tasks(rows)}
    assert sorted(audits) == ["t1", "t3", "t4"]
    assert audits["t1"].verdicts(0.6) == [SOUND]
    assert audits["t1"].gold == "resolved"
    assert audits["t4"].exploits == ["pth"]


def test_no_audit_arm_no_audited_task() -> None:
    rows = [_row(f"t{i}", "baseline", resolved=i % 2 == 0) for i in range(50)]
    assert audit_tasks(rows) == []
