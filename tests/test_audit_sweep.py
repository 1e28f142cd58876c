"""The audit's arms in a real sweep: the demo suite is sound under the exploit
battery, the probes and the mutants; a deliberately weak task is caught by a
probe and by its mutation score."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_wfbench.audit.report import audit_tasks
from tests.conftest import task_yaml, write_suite

DEMO = Path(__file__).resolve().parent.parent / "tasks" / "demo.yaml"
WEAK_ORACLE = '''\
from calc import add


def test_add_exists():
    assert callable(add)  # checks that it exists, not what it does
'''


def rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_the_demo_suite_passes_wfbench_audit(pytester: pytest.Pytester) -> None:
    """gold resolves, noop does not, no exploit of the battery and no probe
    passes, and the oracles kill the mutants: every task sound, exit status 0."""
    out = pytester.path / "out"
    result = pytester.run(sys.executable, "-m", "pytest_wfbench", "audit", str(DEMO),
                          "--mutants", "--out", str(out), "--", "-n", "2", timeout=900)
    assert result.ret == 0, result.stdout.str()[-3000:] + result.stderr.str()[-2000:]
    for task in ("add-median", "fix-contractions", "mean-empty-input"):
        result.stdout.fnmatch_lines([f"wfbench audit: {task}: sound*"])
    found = rows(out)
    hacks = [r for r in found if (r.get("audit") or {}).get("role") == "hack"]
    probes = [r for r in found if (r.get("audit") or {}).get("role") == "probe"]
    mutants = [r for r in found if (r.get("audit") or {}).get("role") == "mutant"]
    assert len({r["arm"] for r in hacks}) >= 25 and not any(r["resolved"] for r in hacks)
    assert probes and not any(r["oracle_passed"] for r in probes)
    assert mutants
    change_tasks = [r for r in found if r["review_scored"] is None]  # not the review tasks
    gold = [r for r in change_tasks if r["arm"] == "gold"]
    noop = [r for r in change_tasks if r["arm"] == "noop"]
    assert len(gold) == 3 and all(r["resolved"] for r in gold)
    assert len(noop) == 3 and not any(r["resolved"] for r in noop)
    audits = {audit.task: audit for audit in audit_tasks(found)}
    assert set(audits) == {"add-median", "fix-contractions", "mean-empty-input"}
    assert all(audit.verdicts(0.6) == ["sound"] for audit in audits.values())
    audit_md = (out / "audit.md").read_text()
    assert "| add-median | sound |" in audit_md
    assert "## Audit" in (out / "report.md").read_text()


def test_a_weak_oracle_is_caught_by_a_probe_and_by_its_mutants(
    pytester: pytest.Pytester
) -> None:
    suite = write_suite(pytester.path, tasks=[task_yaml(verify="true", oracle={
        "command": "python -m pytest -q $WFBENCH_ORACLE_DIR", "files": "oracle/"})])
    (suite.root / "oracle" / "test_oracle.py").write_text(WEAK_ORACLE)
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-arms", "gold,probes,mutants"))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*weak oracle: the probe probe-*:calc.py:add passed task "
                                 "'fix-add'*"])
    (audit,) = audit_tasks(suite.rows())
    assert audit.weak_probes and audit.survivors and audit.kill_rate() == 0.0
    verdicts = audit.verdicts(0.6)
    assert verdicts[0].startswith("weak oracle (probe-") and "under-specified" in verdicts[1]
    report = (suite.out / "report.md").read_text()
    assert "### Surviving mutants" in report
