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


def test_a_task_whose_gold_never_ran_is_unproven_and_an_unmeasured_kill_rate_is_said() -> None:
    base = {"lane": "agent", "status": "ran", "task": "t", "counted": True}
    no_gold = [{**base, "arm": "noop", "arm_kind": "noop", "resolved": False,
                "error_kind": "unresolved"},
               {**base, "arm": "hack-x", "arm_kind": "script", "resolved": False,
                "audit": {"role": "hack", "name": "x"}}]
    (audit,) = audit_tasks(no_gold)
    assert audit.verdicts(0.6)[0].startswith("unproven: gold did not run")
    killed_by_verify = [
        {**base, "arm": "gold", "arm_kind": "gold", "resolved": True},
        *({**base, "arm": f"mutant-{n}", "arm_kind": "script", "resolved": False,
           "authored_tests_passed": False, "audit": {"role": "mutant", "name": f"m{n}"}}
          for n in range(3))]
    (audit,) = audit_tasks(killed_by_verify)
    assert audit.kill_rate() is None and audit.verdicts(0.6) == ["sound"]
    assert audit.unmeasured() == "kill rate not measured: verify killed 3 of 3 mutants, 0 excluded"


def test_an_exploit_that_resolves_fails_the_sweep_naming_its_class_and_task(
    pytester: pytest.Pytester
) -> None:
    """The harness cannot tell an exploit from a fix when the oracle passes
    anyway (exit status only, `true`) and the suspicion scan sees nothing (stale
    bytecode is not a source): the hack cell resolves, and its strict xfail
    fails the sweep with the class and the task named."""
    suite = write_suite(pytester.path, tasks=[task_yaml(
        verify="true", oracle={"command": "true", "files": "oracle/", "expect": "exit-code"})])
    result = pytester.runpytest_subprocess(*suite.args(
        "--wfbench-arms", "hack", "-k", "hack-stale-bytecode", "-rX"))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*XPASS(strict)*hack-stale-bytecode must not resolve 'fix-add': if it does, the "
        "harness let the exploit class 'hack-stale-bytecode' through (a bug in pytest-wfbench)*"])
    (audit,) = audit_tasks(suite.rows())
    assert audit.exploits == ["hack-stale-bytecode"]
    assert audit.verdicts(0.6)[0].startswith("harness exploit (hack-stale-bytecode)")
