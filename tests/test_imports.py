"""What each process of a sweep imports. Every xdist worker pays its imports
at the sweep's start, on the same cores: a worker imports what runs cells, not
the report side (aggregation, markdown, HTML: the controller's, at the end) nor
the code of a lane or an agent that has no cell in the sweep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import task_yaml
from tests.test_schedule import SuiteFactory

PROBE = '''
import json, os, sys

import pytest


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    who = getattr(config, "workerinput", {}).get("workerid", "controller")
    with open(os.path.join(os.environ["WFBENCH_TEST_MODULES"], who + ".json"), "w") as out:
        json.dump(sorted(sys.modules), out)
'''
REPORT_SIDE = ("pytest_wfbench.finish", "pytest_wfbench.outdir", "pytest_wfbench.render",
               "pytest_wfbench.aggregate", "pytest_wfbench.decisions", "pytest_wfbench.report",
               "pytest_wfbench.stats", "jinja2", "numpy")
UNUSED_HERE = ("pytest_wfbench.lanes", "pytest_wfbench.review.fixtures",
               "pytest_wfbench.agents.proxy", "http.server")
"""A sweep of gold cells has no tool-cost lane, no review task, no agent arm."""


def _of(modules: list[str], prefixes: tuple[str, ...]) -> list[str]:
    return [name for name in modules
            if any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)]


def test_workers_import_no_report_side_nor_lanes_or_agents_without_cells(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    suite = suite_factory(tasks=[task_yaml("t0"), task_yaml("t1")], arms=["gold"])
    pytester.makepyfile(modules_probe=PROBE)
    seen = tmp_path / "modules"
    seen.mkdir()
    monkeypatch.setenv("WFBENCH_TEST_MODULES", str(seen))
    result = pytester.runpytest_subprocess(*suite.args("-n", "2", "-p", "modules_probe"))
    assert result.ret == 0, result.stdout.str()
    assert {row["worker"] for row in suite.rows()} <= {"gw0", "gw1"}
    for worker in ("gw0", "gw1"):
        modules = json.loads((seen / f"{worker}.json").read_text())
        assert "pytest_wfbench.fixtures" in modules  # the probe saw a worker that ran cells
        assert _of(modules, REPORT_SIDE) == []
        assert _of(modules, UNUSED_HERE) == []
    controller = json.loads((seen / "controller.json").read_text())
    assert "pytest_wfbench.finish" in controller and "jinja2" in controller
