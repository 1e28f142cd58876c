"""Builders for small task suites that tests run real sweeps on."""

from __future__ import annotations

import http.server
import json
import os
import textwrap
import threading
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.rowschema import RowAudit

# Every sweep the tests run shares one cache dir (the judges' trusted bytecode is
# built once); pytester gives each test its own HOME, so the default would not.
os.environ.setdefault("WFBENCH_CACHE_DIR",
                      str(Path(__file__).resolve().parent.parent / ".tools" / "cache"))

CALC = '''\
def add(a, b):
    return a - b


def double(x):
    return 2 * x
'''
VISIBLE_TEST = '''\
from calc import double


def test_double():
    assert double(2) == 4
'''
HIDDEN_TEST = '''\
from calc import add


def test_add_hidden():
    assert add(1, 1) == 2  # HIDDEN-MARKER-7Q
'''
ORACLE_TEST = '''\
from calc import add


def test_add():
    # ORACLE-MARKER-3X
    assert add(2, 3) == 5
'''
GOLD = '''\
diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,5 +1,5 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
 def double(x):
'''
VERIFY = "python -m pytest -q -p no:cacheprovider tests"
ORACLE = "python -m pytest -q -p no:cacheprovider $WFBENCH_ORACLE_DIR tests/hidden"


@dataclass
class Suite:
    """A task file on a tiny calc project, written into a test's folder."""

    root: Path
    task_file: Path
    out: Path

    def rows(self) -> list[dict[str, Any]]:
        path = self.out / "results.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]

    def row(self, cell_id: str) -> dict[str, Any]:
        matches = [r for r in self.rows() if r["cell_id"] == cell_id]
        assert len(matches) == 1, f"{cell_id}: {len(matches)} rows"
        return matches[0]

    def args(self, *extra: str) -> list[str]:
        return ["-p", "no:cacheprovider", "--wfbench-tasks", str(self.task_file),
                "--wfbench-out", str(self.out), *extra]


def task_yaml(task_id: str = "fix-add", **fields: Any) -> dict[str, Any]:
    task: dict[str, Any] = {
        "id": task_id,
        "class": "bug",
        "prompt": "Fix add() in calc.py: it subtracts.",
        "verify": VERIFY,
        "oracle": {"command": ORACLE, "files": "oracle/", "hidden_paths": ["tests/hidden/"]},
        "gold": "gold.patch",
        "timeout": 60,
    }
    task.update(fields)
    return task


def write_suite(
    base: Path, *, tasks: list[dict[str, Any]] | None = None, arms: list[str] | None = None,
    arm_definitions: dict[str, Any] | None = None, extra: dict[str, Any] | None = None,
) -> Suite:
    repo = base / "repo"
    (repo / "tests" / "hidden").mkdir(parents=True, exist_ok=True)
    (repo / "calc.py").write_text(CALC)
    (repo / "tests" / "test_visible.py").write_text(VISIBLE_TEST)
    (repo / "tests" / "hidden" / "test_hidden.py").write_text(HIDDEN_TEST)
    (base / "oracle").mkdir(exist_ok=True)
    (base / "oracle" / "test_oracle.py").write_text(ORACLE_TEST)
    (base / "gold.patch").write_text(GOLD)
    document: dict[str, Any] = {"version": 1, "name": "calc", "repo": "repo",
                                "arms": arms or ["gold", "noop"],
                                "tasks": tasks or [task_yaml()]}
    if arm_definitions:
        document["arm_definitions"] = arm_definitions
    document.update(extra or {})
    task_file = base / "tasks.yaml"
    # JSON is YAML: no quoting surprises in generated suites.
    task_file.write_text(json.dumps(document, indent=2))
    return Suite(root=base, task_file=task_file, out=base / "out")


@pytest.fixture(autouse=True)
def row_audit(request: pytest.FixtureRequest) -> Iterator[RowAudit]:
    """After every test with a pytester or tmp_path folder: every row the sweeps
    it ran wrote validates against the shipped rows schema (tests/rowschema.py)."""
    if request.node.get_closest_marker("rows_by_hand") is not None:
        # Rows a test builds by hand (a few fields, for a pure function) are not a sweep's.
        yield RowAudit([])
        return
    roots = [request.getfixturevalue(name).path if name == "pytester"
             else request.getfixturevalue(name)
             for name in ("pytester", "tmp_path") if name in request.fixturenames]
    audit = RowAudit(roots)
    yield audit
    check = audit.check()
    if check.errors:
        shown = "\n".join(check.errors[:20])
        pytest.fail(f"{len(check.errors)} schema errors in rows the sweeps of this test wrote "
                    f"(pytest_wfbench/row.schema.json, docs/rows.md):\n{shown}", pytrace=False)


@pytest.fixture
def suite_factory(pytester: pytest.Pytester) -> Callable[..., Suite]:
    def make(**kwargs: Any) -> Suite:
        return write_suite(pytester.path, **kwargs)
    return make


def script_arm(*steps: str) -> dict[str, Any]:
    return {"agent": "script", "steps": [textwrap.dedent(s).strip() for s in steps]}


def junit_cases(path: Path) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    cases = {}
    for case in root.iter("testcase"):
        name = case.get("name", "")
        cell = name[name.index("[") + 1 : -1] if "[" in name else name
        cases[cell] = case
    return cases


def junit_properties(case: ET.Element) -> dict[str, str]:
    return {p.get("name", ""): p.get("value", "") for p in case.iter("property")}


CLAUDE_CLI = Path(__file__).resolve().parent.parent / ".tools" / "claude-code" / "node_modules" \
    / ".bin" / "claude"


@pytest.fixture(scope="session")
def claude_cli() -> Path:
    """The pinned Claude Code CLI that `make test` installs. Tests that need it
    fail without it (they must not skip silently in CI): run `make test`, or
    deselect them with -m 'not cli'."""
    path = Path(os.environ.get("WFBENCH_TEST_CLAUDE", CLAUDE_CLI))
    if not os.access(path, os.X_OK):
        pytest.fail(f"the Claude Code CLI is not installed at {path}: `make test` installs it "
                    "(or deselect these tests with -m 'not cli')")
    return path


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str]

    def do_GET(self) -> None:
        self.hits.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"reached")

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def loopback_server() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []
    handler = type("Handler", (_Recorder,), {"hits": hits})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", hits
    server.shutdown()
    server.server_close()
