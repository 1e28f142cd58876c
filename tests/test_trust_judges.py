"""Hostile arms against the judges: each plants something that, loaded by the
oracle, would report the unfixed task as solved. None of them may resolve it.

Every arm leaves ``add()`` broken. The planted code forges pytest's reports
(every test "passed") when it runs inside the judge, so a cell that resolves
means the plant was loaded; each test also shows, through the patch artifact,
that the plant was really made.
"""

from __future__ import annotations

import base64
import io
import json
import textwrap
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_wfbench.judge.config import PROTECTED_NAMES, pytest_config_names
from pytest_wfbench.judge.expected import (
    Expectation,
    judge_outcomes,
    parse_outcomes,
    record_mac,
)
from pytest_wfbench.judge.suspicion import scan_patch
from tests.conftest import Suite, script_arm, task_yaml

SuiteFactory = Callable[..., Suite]

# A pytest plugin that reports every test as passed, wherever it is loaded
# from (registered globally: a conftest's own hooks only see tests below it).
FORGER_PLUGIN = '''
import pytest


class Forger:
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        report.outcome = "passed"
        report.longrepr = None
        return report


def pytest_configure(config):
    config.pluginmanager.register(Forger(), "forger")
'''
# Module code that forges pytest's reports once pytest is loaded, whoever
# imports it (an import the interpreter or a library makes on its own).
FORGER_AT_IMPORT = '''
import builtins
import sys

_real_import = builtins.__import__


def _forge(name, *args, **kwargs):
    module = _real_import(name, *args, **kwargs)
    reports = sys.modules.get("_pytest.reports")
    if getattr(reports, "TestReport", None) is not None and not hasattr(reports, "forged"):
        reports.forged = True
        original = reports.TestReport.from_item_and_call.__func__

        def forged(cls, item, call):
            report = original(cls, item, call)
            report.outcome = "passed"
            report.longrepr = None
            return report

        reports.TestReport.from_item_and_call = classmethod(forged)
    return module


builtins.__import__ = _forge
'''
REWIRE_REPORTER = '''
try:
    import pytest
    import wfbench_outcomes as _judge
    _original = _judge._write

    def _relay(record):
        _original(record)
        if record.get("event") == "collected":
            for test in record["ids"]:
                _original({"id": test, "when": "call", "outcome": "passed", "xfail": False})
            pytest.exit("done", returncode=0)

    _judge._write = _relay
except Exception:
    pass
'''
SPRAY = '''
import json as _json
import os as _os
for _test in ("$WFBENCH_ORACLE_DIR/test_oracle.py::test_add",
              "tests/hidden/test_hidden.py::test_add_hidden"):
    for _phase in ("setup", "call", "teardown"):
        _line = _json.dumps({"id": _test, "when": _phase, "outcome": "passed"}) + "\\n"
        for _fd in range(3, 64):
            try:
                _os.write(_fd, _line.encode())
            except OSError:
                pass
'''
SHADOW = '''
import ast
import os
import sys

_name = os.path.basename(__file__)
_real = None
for _entry in sys.path:
    _candidate = os.path.join(_entry, _name)
    if os.path.isfile(_candidate) and os.path.realpath(_candidate) != os.path.realpath(__file__):
        _real = _candidate
if _real is not None:
    _tree = ast.parse(open(_real).read())
    for _node in _tree.body:
        if isinstance(_node, ast.FunctionDef) and _node.name.startswith("test"):
            _node.body = [ast.Pass()]
            _node.decorator_list = []
    exec(compile(ast.fix_missing_locations(_tree), _real, "exec"))
    __file__ = _real
'''
STEAL_KEY = '''
import os as _os
_base = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "p", str(_os.getppid()), "fd")
try:
    for _name in _os.listdir(_base):
        try:
            _fd = _os.open(_os.path.join(_base, _name), _os.O_RDONLY | _os.O_NONBLOCK)
            _data = _os.read(_fd, 64)
            _os.close(_fd)
        except OSError:
            continue
        if len(_data) == 32:
            raise SystemExit("a 32-byte secret was left readable: " + _data.hex())
except OSError:
    pass
'''
REWIRE_STDLIB = '''
import hmac as _hm
import json as _js
import os as _os

_dumps, _put, _new, _state = _js.dumps, _os.write, _hm.new, []


def _ser(obj, **kw):
    if isinstance(obj, dict) and kw.get("sort_keys"):
        if obj.get("outcome") == "failed":
            obj = dict(obj, outcome="passed")
        if "exitstatus" in obj:
            obj = dict(obj, exitstatus=0)
            _state.append(1)
    return _dumps(obj, **kw)


def _out(fd, data):
    done = _put(fd, data.replace(b'\\"outcome\\": \\"failed\\"', b'\\"outcome\\": \\"passed\\"'))
    if _state:
        _os.execv("/bin/true", ["true"])
    return done


_js.dumps, _os.write = _ser, _out
'''
CACHE_LOADER = '''
import importlib.util as _util
import os as _os
_impl = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), ".mypy_cache", "3.11",
                      "calc_impl.py")
if _os.path.exists(_impl):
    _spec = _util.spec_from_file_location("calc_impl", _impl)
    _spec.loader.exec_module(_util.module_from_spec(_spec))
'''
METADATA = "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n"
ENTRY_POINTS = "[pytest11]\nevil = evil_plugin\n"


def heredoc(path: str, content: str) -> str:
    return f"mkdir -p $(dirname {path})\ncat > {path} <<'WFBENCH_EOF'\n{content}\nWFBENCH_EOF\n"


def nested_repo(path: str) -> str:
    return (f"git -C {path} init -q && git -C {path} add -A && git -C {path} -c user.name=x "
            f"-c user.email=x@x commit -qm plant\n")


def dist_info(folder: str) -> str:
    return (heredoc(f"{folder}/evil-1.0.dist-info/METADATA", METADATA)
            + heredoc(f"{folder}/evil-1.0.dist-info/entry_points.txt", ENTRY_POINTS))


PLANTS = {
    # entry points found through metadata in the workspace
    "distinfo-plain": dist_info(".") + heredoc("evil_plugin.py", FORGER_PLUGIN),
    "distinfo-in-pycache": (
        dist_info("__pycache__") + heredoc("__pycache__/evil_plugin.py", FORGER_PLUGIN)
        + "ln -s __pycache__/evil-1.0.dist-info evil-1.0.dist-info\n"
        + "ln -s __pycache__/evil_plugin.py evil_plugin.py\n"),
    "distinfo-nested-repos": (
        dist_info(".") + heredoc("evil_plugin/__init__.py", FORGER_PLUGIN)
        + nested_repo("evil-1.0.dist-info") + nested_repo("evil_plugin")),
    # a plugin named like the task's own, through metadata: -p would load it
    "entry-point-hijack": (heredoc("hijack-1.0.dist-info/METADATA", METADATA)
                           + heredoc("hijack-1.0.dist-info/entry_points.txt",
                                     "[pytest11]\nxdist = evil_plugin\n")
                           + heredoc("evil_plugin.py", FORGER_PLUGIN)),
    # modules the standard library probes for on its own (copy.py: org.python.core)
    "probe-org": heredoc("org/__init__.py", FORGER_AT_IMPORT),
    "probe-msvcrt": heredoc("msvcrt.py", FORGER_AT_IMPORT),
    # process exit at import, before any test ran: exit status 0
    "exit-at-import": "printf 'import os\\nos._exit(0)\\n' >> calc.py\n",
    # the result reporter, imported and rewired by the project's own code
    "rewire-reporter": "cat >> calc.py <<'WFBENCH_EOF'\n" + REWIRE_REPORTER + "WFBENCH_EOF\n",
    # unsigned result lines sprayed into every descriptor, then a clean exit
    "spray-descriptors": "cat >> calc.py <<'WFBENCH_EOF'\n" + SPRAY + "WFBENCH_EOF\n",
    # test modules named like the oracle's, which pytest's assertion rewriter
    # would find first (it looks modules up with PathFinder directly)
    "shadow-test-modules": heredoc("test_oracle.py", SHADOW) + heredoc("test_hidden.py", SHADOW),
    # the reporter's key, read again from the shell that started the oracle
    "steal-key": "ln -s /proc p\ncat >> calc.py <<'WFBENCH_EOF'\n" + STEAL_KEY + "WFBENCH_EOF\n",
    # the code in a tool cache the patch would leave out, loaded by path
    "cache-loader": heredoc(".mypy_cache/3.11/calc_impl.py", FORGER_AT_IMPORT)
    + "cat >> calc.py <<'WFBENCH_EOF'\n" + CACHE_LOADER + "WFBENCH_EOF\n",
    # the standard functions the reporter writes, serializes and signs with, replaced
    "rewire-stdlib": "cat >> calc.py <<'WFBENCH_EOF'\n" + REWIRE_STDLIB + "WFBENCH_EOF\n",
}


def run_plants(pytester: pytest.Pytester, suite_factory: SuiteFactory,
               plants: dict[str, str], *extra: str, **task: Any) -> Suite:
    arms = {name: script_arm(step + "echo planted > loot.txt") for name, step in plants.items()}
    oracle = {"command": "python -m pytest -q -p no:cacheprovider $WFBENCH_ORACLE_DIR "
                         "tests/hidden", "files": "oracle/", "hidden_paths": ["tests/hidden/"],
              **task.pop("oracle", {})}
    suite = suite_factory(tasks=[task_yaml(oracle=oracle, **task)], arms=list(plants),
                          arm_definitions=arms)
    result = pytester.runpytest_subprocess(*suite.args(*extra))
    assert len(suite.rows()) == len(plants), result.stdout.str()
    return suite


def assert_not_resolved(suite: Suite, arm: str) -> dict[str, Any]:
    row = suite.row(f"fix-add-{arm}-r1")
    patch = (suite.out / "artifacts" / f"fix-add-{arm}-r1.patch").read_text()
    assert "+planted" in patch, f"{arm}: the plant did not run"
    assert row["resolved"] is False, f"{arm}: resolved by a plant"
    assert row["oracle_passed"] is False, f"{arm}: {row['error_kind']} {row['error_detail']}"
    assert row["counted"] is True
    return row


def test_judges_load_no_plugin_and_no_probed_module_from_the_workspace(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = run_plants(pytester, suite_factory, PLANTS, oracle={"plugins": ["xdist"]})
    for arm in PLANTS:
        assert_not_resolved(suite, arm)
    # Hidden in cache folders or nested repositories, the plant still shows.
    for arm in ("distinfo-in-pycache", "distinfo-nested-repos"):
        patch = (suite.out / "artifacts" / f"fix-add-{arm}-r1.patch").read_text()
        assert 'report.outcome = "passed"' in patch and "+[pytest11]" in patch, arm
        assert suite.row(f"fix-add-{arm}-r1")["suspicious"], arm
    nested = suite.row("fix-add-distinfo-nested-repos-r1")
    assert any("nested repository" in note and "evil_plugin/.git" in note
               for note in nested["evidence_notes"])
    exited = suite.row("fix-add-exit-at-import-r1")
    assert "ended before it finished" in exited["error_detail"] or \
        "no test run" in exited["error_detail"]
    assert any("process exit" in finding for finding in exited["suspicious"])


def _config_text(name: str) -> str:
    """A configuration file of this name that makes pytest load calc.py as a plugin."""
    if name.endswith("pytest.toml"):
        return '[pytest]\naddopts = ["-p", "calc"]\n'
    if name == "pyproject.toml":
        return '[tool.pytest.ini_options]\naddopts = "-p calc"\n'
    if name == "setup.cfg":
        return "[tool:pytest]\naddopts = -p calc\n"
    if name.endswith(".ini"):
        return "[pytest]\naddopts = -p calc\n"
    raise AssertionError(f"pytest reads a configuration file this test does not know: {name}")


def test_every_configuration_file_pytest_reads_is_reset_for_the_oracle(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    """The names come from the installed pytest: a name a new release learns to
    read is planted too (and this test says how to write it)."""
    names = pytest_config_names()
    assert {"pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"} <= set(names)
    assert set(names) <= PROTECTED_NAMES
    forged_calc = "def add(a, b):\n    return a - b\n" + FORGER_PLUGIN
    plants = {
        f"config-{name.strip('.').replace('.', '-')}":
            heredoc(name, _config_text(name)) + heredoc("calc.py", forged_calc)
            + "printf 'def double(x):\\n    return 2 * x\\n' >> calc.py\n"
        for name in names
    }
    plants["conftest-at-root"] = heredoc("conftest.py", FORGER_PLUGIN)
    plants["conftest-in-tests"] = heredoc("tests/hidden/conftest.py", FORGER_PLUGIN)
    suite = run_plants(pytester, suite_factory, plants)
    for arm in plants:
        row = assert_not_resolved(suite, arm)
        assert any("test configuration file" in f or "pytest hook" in f
                   for f in row["suspicious"]), arm


def test_an_oracle_that_only_collects_or_selects_nothing_fails(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    """Exit status 0 is not enough: the expected tests must be reported passed."""
    oracle_files = "$WFBENCH_ORACLE_DIR tests/hidden"
    commands = {
        "collect-only": f"python -m pytest -q --collect-only {oracle_files}",
        "deselect-all": f"python -m pytest -q -k no_such_test {oracle_files}; true",
        "one-of-two": "python -m pytest -q $WFBENCH_ORACLE_DIR",
    }
    expected = ["$WFBENCH_ORACLE_DIR/test_oracle.py::test_add",
                "tests/hidden/test_hidden.py::test_add_hidden"]
    tasks = [task_yaml(name, oracle={"command": command, "files": "oracle/", "expect": expected,
                                     "hidden_paths": ["tests/hidden/"]})
             for name, command in commands.items()]
    suite = suite_factory(tasks=[*tasks, task_yaml("honest")], arms=["gold"])
    pytester.runpytest_subprocess(*suite.args())
    for name in commands:
        row = suite.row(f"{name}-gold-r1")
        assert row["resolved"] is False and row["error_kind"] == "oracle-failed", name
    honest = suite.row("honest-gold-r1")
    assert honest["resolved"] is True and honest["oracle_judged_by"] == "tests"
    assert honest["oracle_tests_expected"] == 2


def test_expected_tests_are_established_from_the_gold_patch_or_declared(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    broken_gold = {"oracle": {"command": "python -m pytest -q $WFBENCH_ORACLE_DIR",
                              "files": "oracle/", "hidden_paths": ["tests/hidden/"]},
                   "gold": "gold.patch"}
    not_pytest = {"oracle": {"command": "test -f calc.py", "hidden_paths": ["tests/hidden/"]}}
    declared = {"oracle": {"command": "test -f calc.py", "expect": "exit-code",
                           "hidden_paths": ["tests/hidden/"]}}
    suite = suite_factory(tasks=[task_yaml("gold-based", **broken_gold),
                                 task_yaml("not-pytest", **not_pytest),
                                 task_yaml("by-exit-code", **declared)],
                          arms=["gold", "noop"])
    pytester.runpytest_subprocess(*suite.args())
    assert suite.row("gold-based-gold-r1")["oracle_tests_expected"] == 1
    assert suite.row("gold-based-noop-r1")["error_kind"] == "oracle-failed"
    for arm in ("gold", "noop"):
        row = suite.row(f"not-pytest-{arm}-r1")
        assert row["error_kind"] == "oracle-unavailable" and row["counted"] is False
        assert "oracle.expect: exit-code" in row["error_detail"]
    assert suite.row("by-exit-code-gold-r1")["oracle_judged_by"] == "exit-code"
    report = (suite.out / "report.md").read_text()
    assert "## Oracles judged by exit code alone" in report and "- by-exit-code" in report


OUTCOME_RECORDS = {
    "start": {"event": "start", "collectonly": False},
    "collect": {"event": "start", "collectonly": True},
    **{f"{phase}_{test}": {"id": f"t::{test}", "when": phase, "outcome": "passed",
                           "xfail": False}
       for phase in ("setup", "call", "teardown") for test in "ab"},
    "fail_b_teardown": {"id": "t::b", "when": "teardown", "outcome": "failed", "xfail": False},
    "xpass_b": {"id": "t::b", "when": "call", "outcome": "passed", "xfail": True},
    "finish": {"event": "finish", "exitstatus": 0},
}
KEY = b"k" * 32
RAN_A = ["setup_a", "call_a", "teardown_a"]
RAN_B = ["setup_b", "call_b", "teardown_b"]


def signed(names: list[str], key: bytes = KEY, run: str = "r1", skip: int = -1) -> str:
    """The reporter's lines for these records (one sequence number skipped at ``skip``)."""
    lines = []
    for seq, name in enumerate(names):
        if seq == skip:
            continue
        payload = json.dumps(OUTCOME_RECORDS[name], sort_keys=True)
        lines.append(json.dumps({"run": run, "seq": seq, "record": payload,
                                 "mac": record_mac(key, run, seq, payload)}))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("text", "passed"), [
    (signed(["start", *RAN_A, *RAN_B, "finish"]), True),
    (signed(["start", *RAN_A, *RAN_B]), False),  # os._exit before the end
    (signed(["collect", "finish"]), False),
    (signed(["start", *RAN_A, "finish"]), False),  # b deselected
    (signed(["start", *RAN_A, "setup_b", "call_b", "finish"]), False),  # b never torn down
    (signed(["start", *RAN_A, *RAN_B, "fail_b_teardown", "finish"]), False),
    (signed(["start", *RAN_A, "setup_b", "xpass_b", "teardown_b", "finish"]), False),
    ("", False),
    (signed(["start", *RAN_A, *RAN_B, "finish"]) + signed(["start"], run="r2"), False),
    # forged: signed with another key, or lines written without the reporter
    (signed(["start", *RAN_A, *RAN_B, "finish"], key=b"x" * 32), False),
    (signed(["start", *RAN_A]) + "\n".join(json.dumps(OUTCOME_RECORDS[n])
                                           for n in [*RAN_B, "finish"]), False),
    # a record removed from the middle: the run's end is not believed
    (signed(["start", *RAN_A, *RAN_B, "start", "finish"], skip=7), False),
])
def test_judging_outcomes(text: str, passed: bool) -> None:
    outcomes = parse_outcomes(text + "noise\n", KEY)
    expectation = Expectation("tests", frozenset({"t::a", "t::b"}))
    assert judge_outcomes(outcomes, expectation, exit_ok=True)[0] is passed
    assert judge_outcomes(outcomes, expectation, exit_ok=False)[0] is False


def test_the_suspicion_scan_flags_reaching_into_the_judges_and_not_ordinary_code() -> None:
    patch = textwrap.dedent('''\
        diff --git a/calc.py b/calc.py
        --- a/calc.py
        +++ b/calc.py
        @@ -1,2 +1,8 @@
         def add(a, b):
        -    return a - b
        +    return a + b
        +import os
        +os._exit(0)
        +value = os.environ.get("WFBENCH_ORACLE_DIR")
        +open("/proc/self/environ").read()
        +import builtins; builtins.print = None
        diff --git a/conftest.py b/conftest.py
        new file mode 100644
        --- /dev/null
        +++ b/conftest.py
        @@ -0,0 +1,2 @@
        +def pytest_runtest_makereport(item, call):
        +    pass
        ''')
    findings = scan_patch(patch)
    for reason in ("process exit or kill (calc.py:4)", "process exit at import (calc.py:4)",
                   "the judge's names or environment variables (calc.py:5)",
                   "reads /proc (calc.py:6)",
                   "builtins patched (calc.py:7)", "test configuration file (conftest.py)",
                   "pytest hook implementation (conftest.py:1)"):
        assert reason in findings, (reason, findings)
    for gold in (Path(__file__).parent.parent / "tasks" / "gold").glob("*.patch"):
        assert scan_patch(gold.read_text()) == [], gold


def test_suspicious_wins_are_listed_and_can_be_failed(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    sneaky = script_arm("sed -i 's/a - b/a + b/' calc.py\n"
                        "printf 'import atexit\\natexit.register(print)\\n' >> calc.py")
    suite = suite_factory(arms=["sneaky"], arm_definitions={"sneaky": sneaky})
    result = pytester.runpytest_subprocess(*suite.args())
    row = suite.row("fix-add-sneaky-r1")
    assert row["resolved"] is True and row["suspicious"] == ["exit handlers (calc.py:7)"]
    result.stdout.fnmatch_lines(["*1 resolved cells are suspicious*fix-add-sneaky-r1*"])
    report = (suite.out / "report.md").read_text()
    assert "## Suspicious wins" in report and "| fix-add-sneaky-r1 | resolved |" in report
    suite.out = suite.root / "out-fail"
    failed = pytester.runpytest_subprocess(*suite.args("--wfbench-suspicious", "fail"))
    failed.assert_outcomes(failed=1)
    row = suite.row("fix-add-sneaky-r1")
    assert row["resolved"] is False and row["error_kind"] == "suspicious"
    assert row["counted"] is True


def _utf7(text: str) -> str:
    """Every line of ``text`` as UTF-7 (readable by Python, by nobody else)."""
    lines = []
    for line in text.splitlines():
        encoded = base64.b64encode(line.encode("utf-16-be")).decode().rstrip("=")
        lines.append(f"+{encoded}-" if line else "")
    return "\n".join(lines) + "\n"


ONE_LINE_FORGER = ('import _pytest.reports as _r; _o = _r.TestReport.from_item_and_call; '
                   '_r.TestReport.from_item_and_call = staticmethod(lambda item, call: '
                   '[r for r in [_o(item, call)] if not setattr(r, "outcome", "passed") '
                   'and not setattr(r, "longrepr", None)][0])\n')


def _zipped(name: str, text: str) -> str:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, text)
    return base64.b64encode(buffer.getvalue()).decode()


def written(path: str, text: str) -> str:
    """A step writing ``text`` byte for byte (no shell quoting in the way)."""
    data = base64.b64encode(text.encode()).decode()
    return f"mkdir -p $(dirname {path}) && echo {data} | base64 -d > {path}\n"


FORGING_CALC = "def add(a, b):\n    return a - b\n\n\ndef double(x):\n    return 2 * x\n" \
    + FORGER_AT_IMPORT
DISGUISES = {
    # a source encoding that hides the code from the patch's readers
    "utf7": heredoc("calc.py", "# coding: utf-7\n" + _utf7(FORGING_CALC)),
    # a source too large for the patch
    "large-source": heredoc("calc.py", FORGING_CALC)
    + "python -c \"open('calc.py', 'a').write('#' + 'x' * 1100000 + '\\\\n')\"\n",
    # the code in a cache folder, reached through an absolute link
    "absolute-link": heredoc("__pycache__/calc_impl.py", FORGING_CALC)
    + "rm calc.py && ln -s /workspace/__pycache__/calc_impl.py calc.py\n",
    # the code in a cache folder, run by one plain line
    "cache-exec": heredoc("__pycache__/payload.txt", FORGER_AT_IMPORT)
    + "printf 'import os\\nexec(open(os.path.join(os.path.dirname(__file__), "
      "\"__pycache__\", \"payload.txt\")).read())\\n' >> calc.py\n",
    # a native extension module
    "native": "mkdir -p native && head -c 4096 /dev/urandom > "
              "native/_speedups.cpython-311-x86_64-linux-gnu.so\n",
    # a lone carriage return: a line break for Python, not for git
    "carriage-return": written("calc.py", FORGING_CALC.replace(
        "import builtins", "# speed-ups\rimport builtins").replace("\n\n\ndef _forge",
                                                                   "\r\r\rdef _forge")),
    # a line separator inside a string literal, then the code on the same line
    "line-separator": written("calc.py", FORGING_CALC.split("import builtins")[0]
                              + '_ = "\u2028"; ' + ONE_LINE_FORGER),
    # fullwidth letters, which Python's parser reads as ASCII (NFKC)
    "fullwidth": written("calc.py", FORGING_CALC.split("import builtins")[0]
                         + ONE_LINE_FORGER.replace("_pytest", "_\uff50ytest")),
    # Latin-1 letters Python folds into ASCII, in a file that says it is Latin-1
    "latin-1": "echo " + base64.b64encode(
        ("# -*- coding: latin-1 -*-\n" + FORGING_CALC.split("import builtins")[0]
         + ONE_LINE_FORGER.replace("TestReport", "TestRep\u00bart").replace(
             '"outcome"', '"\u00bautcome"')).encode("latin-1")).decode()
    + " | base64 -d > calc.py\n",
    # a line that reads as a patch's file header, inside a string
    "header-in-string": written("calc.py", FORGING_CALC.split("import builtins")[0]
                                + '_NOTES = """\n++ b/\n"""\n' + FORGER_AT_IMPORT),
    # the code in a large text file, or in a zip copied to /tmp, imported from there
    "large-text": written("words.txt", FORGER_AT_IMPORT + "\n#" + "x" * 1_100_000 + "\n")
    + "cat >> calc.py <<'WFBENCH_EOF'\nimport imp as _imp\nimport os as _os\n"
      "_imp.load_source('calc_words', _os.path.join(_os.path.dirname(_os.path.abspath("
      "__file__)), 'words.txt'))\nWFBENCH_EOF\n",
    "zip-on-tmp": "echo " + _zipped("calc_speedups.py", FORGER_AT_IMPORT)
    + " | base64 -d > speedups.bin\n" + "cat >> calc.py <<'WFBENCH_EOF'\nimport os as _os\n"
      "import shutil as _sh\nimport sys as _sys\n_sh.copy(_os.path.join(_os.path.dirname("
      "_os.path.abspath(__file__)), 'speedups.bin'), '/tmp/s.zip')\n"
      "_sys.path.insert(0, '/tmp/s.zip')\nimport calc_speedups\nWFBENCH_EOF\n",
}


def test_in_process_tampering_is_flagged_whatever_its_disguise(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    """Code the tests import runs in the judge: no harness blocks all of it, but
    every disguise the red team found is flagged, so --wfbench-suspicious fail
    refuses the win."""
    suite = run_plants(pytester, suite_factory, DISGUISES, "--wfbench-suspicious", "fail")
    expected = {"utf7": "unusual source encoding 'utf-7'",
                "large-source": "large importable file",
                "absolute-link": "builtins patched (__pycache__/calc_impl.py",
                "cache-exec": "dynamic code",
                "native": "native extension module",
                "carriage-return": "a line break only Python sees",
                "line-separator": "pytest internals",
                "fullwidth": "pytest internals",
                "latin-1": "test outcome or exit status changed",
                "header-in-string": "builtins patched",
                "large-text": "content the scan cannot read (large file)",
                "zip-on-tmp": "content the scan cannot read (binary)"}
    for arm, reason in expected.items():
        row = suite.row(f"fix-add-{arm}-r1")
        assert row["resolved"] is False and row["counted"] is True, arm
        assert any(reason in finding for finding in row["suspicious"]), (arm, row["suspicious"])
    large = suite.row("fix-add-large-source-r1")
    assert any("builtins patched (calc.py" in finding for finding in large["suspicious"])
    forged = suite.row("fix-add-utf7-r1")
    assert forged["error_kind"] in ("suspicious", "verify-failed", "oracle-failed")
