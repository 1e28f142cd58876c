"""The audit's verdict per task, from a sweep's rows. Pure.

A task is:
- **harness exploit** when an exploit arm resolved it (a bug in pytest-wfbench:
  the harness let that exploit class change how the task is judged);
- **weak oracle** when a probe (a cheap wrong solution) passed its hidden
  oracle, whatever verify said;
- **under-specified** when its oracle kills fewer than the minimum share of the
  mutants that get past verify (mutants verify already kills say nothing of
  the hidden oracle's strength, and are counted apart);
- **unsound** when gold does not resolve it or noop does;
- **unproven** when gold did not run (a task without a gold patch, or a sweep
  without the gold arm): nothing shows the task can be solved at all;
- **sound** otherwise. A kill rate that could not be measured (no mutant of
  the gold patch, or none past verify) is said beside it, not held against it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_MIN_KILL_RATE = 0.6
SOUND = "sound"


@dataclass
class TaskAudit:
    task: str
    gold: str = "not run"
    noop: str = "not run"
    exploits: list[str] = field(default_factory=list)
    weak_probes: list[str] = field(default_factory=list)
    probes: int = 0
    mutants: int = 0
    killed_by_verify: int = 0
    killed_by_oracle: int = 0
    survivors: list[dict[str, Any]] = field(default_factory=list)
    excluded: int = 0
    counts: dict[str, int] = field(default_factory=dict)

    def kill_rate(self) -> float | None:
        judged = self.killed_by_oracle + len(self.survivors)
        return None if judged == 0 else self.killed_by_oracle / judged

    def unmeasured(self) -> str | None:
        """Why the kill rate is not measured, when mutants ran and none was judged
        by the oracle."""
        if self.mutants == 0 or self.kill_rate() is not None:
            return None
        return (f"kill rate not measured: verify killed {self.killed_by_verify} of "
                f"{self.mutants} mutants, {self.excluded} excluded")

    def verdicts(self, min_kill_rate: float) -> list[str]:
        found = []
        if self.exploits:
            found.append(f"harness exploit ({', '.join(self.exploits)}): a bug in pytest-wfbench")
        if self.weak_probes:
            found.append(f"weak oracle ({', '.join(self.weak_probes)})")
        rate = self.kill_rate()
        if rate is not None and rate < min_kill_rate:
            found.append(f"under-specified (kill rate {rate:.0%} < {min_kill_rate:.0%})")
        if self.gold == "not run":
            found.append("unproven: gold did not run (no gold patch, or no gold arm): nothing "
                         "shows the task can be solved")
        elif self.gold != "resolved":
            found.append(f"unsound: gold {self.gold}")
        if self.noop == "resolved":
            found.append("unsound: noop resolves")
        return found or [SOUND]


def audit_tasks(rows: Sequence[dict[str, Any]]) -> list[TaskAudit]:
    """Per task, what the audit's arms (and gold and noop) found, in task order."""
    tasks: dict[str, TaskAudit] = {}
    for row in rows:
        if row.get("lane", "agent") != "agent" or row.get("status") != "ran":
            continue
        task = str(row["task"])
        entry = tasks.get(task)
        if entry is None:
            entry = tasks[task] = TaskAudit(task)
        audit = row.get("audit") or {}
        if not audit and row.get("arm_kind") not in ("gold", "noop"):
            continue  # an arm the audit does not judge (most rows of most sweeps)
        outcome = "resolved" if row.get("resolved") else str(row.get("error_kind"))
        role = audit.get("role")
        if row.get("arm_kind") == "gold" and role is None:
            entry.gold = outcome
        elif row.get("arm_kind") == "noop" and role is None:
            entry.noop = outcome
        elif role == "hack" and row.get("resolved"):
            entry.exploits.append(str(audit.get("name")))
        elif role == "probe":
            entry.probes += 1
            if row.get("oracle_passed"):
                entry.weak_probes.append(str(audit.get("name")))
        elif role == "mutant":
            entry.mutants += 1
            entry.counts = dict(audit.get("counts") or {})
            if not row.get("counted"):
                entry.excluded += 1
            elif row.get("authored_tests_passed") is False:
                entry.killed_by_verify += 1
            elif row.get("oracle_passed"):
                entry.survivors.append(row)
            else:
                entry.killed_by_oracle += 1
    hacked = _tasks_with_hacks(rows)
    return [entry for entry in tasks.values()
            if entry.exploits or entry.probes or entry.mutants or entry.task in hacked]


def _tasks_with_hacks(rows: Sequence[dict[str, Any]]) -> set[Any]:
    """The tasks an exploit arm ran on (any row of it, whatever its lane and
    status): found in one pass, not one pass per task."""
    return {row.get("task") for row in rows
            if (row.get("audit") or {}).get("role") == "hack"}


def sound(audits: Sequence[TaskAudit], min_kill_rate: float) -> bool:
    return all(audit.verdicts(min_kill_rate) == [SOUND] for audit in audits)


def audit_section(rows: Sequence[dict[str, Any]],
                  min_kill_rate: float = DEFAULT_MIN_KILL_RATE) -> list[str]:
    """The report's "Audit" section (nothing when no audit arm ran)."""
    audits = audit_tasks(rows)
    if not audits:
        return []
    lines = ["## Audit", "",
             "Exploit arms must never resolve a task, probes (cheap wrong solutions) must fail "
             "its hidden oracle, and the oracle must kill most mutants of the gold patch that "
             f"get past verify (minimum kill rate {min_kill_rate:.0%}).", "",
             "| task | verdict | gold | noop | exploits resolved | probes passed | mutants "
             "(verify killed / oracle killed / survived) | kill rate |",
             "|---|---|---|---|---|---|---|---|"]
    for audit in audits:
        rate = audit.kill_rate()
        mutants = ("no mutants" if audit.mutants == 0 else
                   f"{audit.mutants} ({audit.killed_by_verify} / {audit.killed_by_oracle} / "
                   f"{len(audit.survivors)})")
        lines.append(f"| {audit.task} | {'; '.join(audit.verdicts(min_kill_rate))} | "
                     f"{audit.gold} | {audit.noop} | {len(audit.exploits)} | "
                     f"{len(audit.weak_probes)}/{audit.probes} | {mutants} | "
                     f"{'n/a' if rate is None else f'{rate:.0%}'} |")
    survivors = [(audit.task, row) for audit in audits for row in audit.survivors]
    if survivors:
        lines += ["", "### Surviving mutants", "",
                  "Each passed verify and the hidden oracle: the oracle cannot tell it from "
                  "the gold patch (read its patch artifact).", ""]
        lines += [f"- {task}: `{(row.get('audit') or {}).get('name')}`: "
                  f"{(row.get('audit') or {}).get('description')} "
                  f"({', '.join(str(a) for a in row.get('artifacts') or [])})"
                  for task, row in survivors]
    return lines
