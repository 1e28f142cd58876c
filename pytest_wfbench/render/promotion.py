"""The report's "Promotion" section, rendered from promotion.json evidence
(decisions.decide): the verdict, why, each condition, the figures per task."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_wfbench.render.format import fmt, fmt_pct, fmt_pct_interval, table


def _median(value: Any, metric: str) -> str:
    if value is None:
        return "n/a"
    return f"${float(value):,.4f}" if metric == "cost_usd" else fmt(float(value), 2)


def _side(side: Mapping[str, Any], metric: str) -> list[str]:
    return [f"{side['resolved_runs']}/{side['scored_runs']}", _median(side["median"], metric)]


def promotion_sections(evidence: Sequence[Mapping[str, Any]]) -> list[str]:
    """One "Promotion" section with a part per candidate, in candidate order."""
    lines = ["## Promotion", "",
             "Whether each candidate arm's skill files should replace its incumbent's, by "
             "the policy below (promotion.json has the whole evidence).", ""]
    for item in sorted(evidence, key=lambda e: str(e["candidate"])):
        lines += _one(item)
    return lines[:-1] if lines[-1] == "" else lines


def _one(e: Mapping[str, Any]) -> list[str]:
    metric = str(e["metric"])
    policy = e["policy"]
    overall = e["overall"]
    verdict = str(e["verdict"])
    lines = [f"### `{e['candidate']}` against `{e['incumbent']}`: **{verdict}**", ""]
    lines += [f"- {reason}" for reason in e["reasons"]]
    lines += ["", f"Policy: metric `{metric}`, at least {policy['min_runs']} scored runs per task "
              f"for both arms and as many for one as the other, overall improvement at least "
              f"{policy['min_improvement']:g}%, no task worse by more than "
              f"{policy['max_task_regression']:g}%, no fewer resolved tasks, significance "
              f"{'required' if policy['require_significance'] else 'not required'}. Sweep "
              f"{e['sweep_state']}; expires {e['expires_at']}.", ""]
    lines += table(["condition", "required", "held", "detail"],
                   [[c["name"], "yes" if c["required"] else "no", "yes" if c["held"] else "NO",
                     c["detail"]] for c in e["conditions"]])
    lines += [""]
    lines += table(
        ["task", "candidate resolved/scored", f"candidate median {metric}",
         "incumbent resolved/scored", f"incumbent median {metric}", "improvement", "interval"],
        [[t["task"], *_side(t["candidate"], metric), *_side(t["incumbent"], metric),
          fmt_pct(t["improvement_pct"]), fmt_pct_interval(t["interval_pct"])]
         for t in e["tasks"]]
        + [["overall", f"{overall['candidate']['resolved_runs']}/"
            f"{overall['candidate']['scored_runs']}",
            _median(overall["candidate"]["median_sum"], metric) + " (sum)",
            f"{overall['incumbent']['resolved_runs']}/{overall['incumbent']['scored_runs']}",
            _median(overall["incumbent"]["median_sum"], metric) + " (sum)",
            fmt_pct(overall["improvement_pct"]), fmt_pct_interval(overall["interval_pct"])]])
    if e.get("tasks_not_run"):
        lines += ["", f"Tasks not run by either arm: {', '.join(e['tasks_not_run'])}."]
    lines += ["", "Digests: " + "; ".join(f"{name} {_digest(value)}"
                                        for name, value in sorted(e["digests"].items())), ""]
    return lines


def _digest(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(value.items())) + "}"
    return "n/a" if value is None else str(value)
