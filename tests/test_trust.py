"""Hostile script arms: each tries to get something it must not, and fails.

Each test first proves that its probe ran (its output reached the patch
artifact), so a probe that silently did nothing cannot pass as "safe".
"""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Suite, script_arm, task_yaml

SuiteFactory = Callable[..., Suite]
ORACLE_MARKER = "ORACLE-MARKER-3X"
HIDDEN_MARKER = "HIDDEN-MARKER-7Q"


def split(marker: str) -> str:
    """The marker as a shell word that does not contain it literally."""
    half = len(marker) // 2
    return f'"{marker[:half]}""{marker[half:]}"'


def run_hostile(pytester: pytest.Pytester, suite: Suite, *extra: str) -> str:
    result = pytester.runpytest_subprocess(*suite.args(*extra))
    assert suite.rows(), result.stdout.str()
    return (suite.out / "artifacts" / "fix-add-thief-r1.patch").read_text()


def thief(suite_factory: SuiteFactory, *steps: str) -> Suite:
    return suite_factory(arms=["thief"], arm_definitions={"thief": script_arm(*steps)})


# Searches the whole sandbox, every mount included (the workspace, /tmp and HOME
# are mounts of their own: `find -xdev` would never enter them), but the large
# read-only system and kernel trees.
FIND = r"find / \( -path /proc -o -path /sys -o -path /dev -o -path /usr \) -prune -o"


def found_by_search(patch: str) -> list[str]:
    """The paths the probe's search printed between its two markers."""
    lines = [line.removeprefix("+") for line in patch.splitlines()]
    assert "search-begin" in lines and "search-end" in lines, patch
    return lines[lines.index("search-begin") + 1 : lines.index("search-end")]


def test_cannot_read_the_oracle_or_hidden_files_by_path(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    root = pytester.path
    # The decoy proves the search reaches the arm's own files: it must be found.
    suite = thief(suite_factory, f"""
        echo probe-ran > loot.txt
        cat {root}/oracle/test_oracle.py {root}/repo/tests/hidden/test_hidden.py >> loot.txt 2>&1
        cat tests/hidden/test_hidden.py >> loot.txt 2>&1
        ls -la / /oracle* >> loot.txt 2>&1
        echo decoy > /tmp/test_hidden_decoy.py
        echo decoy > $HOME/test_hidden_decoy.py
        echo decoy > test_oracle_decoy.py
        echo search-begin >> loot.txt
        {FIND} \\( -name 'test_oracle*' -o -name 'test_hidden*' \\) -print 2>/dev/null \\
            | sort >> loot.txt
        echo search-end >> loot.txt
    """)
    patch = run_hostile(pytester, suite)
    assert "probe-ran" in patch
    assert ORACLE_MARKER not in patch and HIDDEN_MARKER not in patch
    assert found_by_search(patch) == ["/home/wfbench/test_hidden_decoy.py",
                                      "/tmp/test_hidden_decoy.py",
                                      "/workspace/test_oracle_decoy.py"]


def test_cannot_read_hidden_or_future_content_through_git(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = thief(suite_factory, """
        echo probe-ran > loot.txt
        git log -p --all >> loot.txt 2>&1
        git reflog >> loot.txt 2>&1
        git tag -l >> loot.txt 2>&1; git stash list >> loot.txt 2>&1; git remote -v >> loot.txt
        for o in $(git cat-file --batch-all-objects --batch-check='%(objectname)'); do
            git cat-file -p $o >> loot.txt 2>&1
        done
        git fsck --lost-found >> loot.txt 2>&1
        true
    """)
    repo = suite.root / "repo"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    base = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b  # FUTURE-MARKER-9Z\n")
    subprocess.run([*git, "commit", "-qam", "the fix, later"], check=True)
    subprocess.run([*git, "tag", "v-future"], check=True)
    (repo / "stashed.txt").write_text("STASH-MARKER-5K\n")
    subprocess.run([*git, "add", "stashed.txt"], check=True)
    subprocess.run([*git, "stash", "-q"], check=True)
    subprocess.run([*git, "remote", "add", "origin", "https://example.invalid/x.git"], check=True)
    document = suite.task_file.read_text().replace('"fix-add"', '"fix-add", "ref": "' + base + '"')
    suite.task_file.write_text(document)
    patch = run_hostile(pytester, suite)
    assert "probe-ran" in patch and "wfbench task base" in patch
    for marker in (HIDDEN_MARKER, "FUTURE-MARKER-9Z", "STASH-MARKER-5K", "v-future",
                   "example.invalid", "the fix, later"):
        assert marker not in patch, marker


def test_cannot_find_oracle_content_by_searching_the_filesystem(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    # Everything but the large read-only toolchains (system, interpreter, venv).
    suite = thief(suite_factory, f"""
        echo probe-ran > loot.txt
        grep -rlI --exclude-dir={{proc,sys,dev,usr,.pyenv,.venv,site-packages}} \\
            -e {split(ORACLE_MARKER)} -e {split(HIDDEN_MARKER)} / >> loot.txt 2>/dev/null
        echo searched-done >> loot.txt
        true
    """)
    patch = run_hostile(pytester, suite)
    assert "probe-ran" in patch and "searched-done" in patch
    assert ORACLE_MARKER not in patch and HIDDEN_MARKER not in patch
    found = patch.split("probe-ran")[1].split("searched-done")[0]
    assert "/" not in found.replace("+", "").strip(), found


def test_cannot_read_a_secret_in_the_host_home(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    secret = f"HOME-SECRET-{secrets.token_hex(8)}"
    home = Path(os.environ["HOME"])  # the harness's HOME (pytester gives each test its own)
    (home / ".wfbench-test-token").write_text(secret)
    # The decoy, in the sandbox's own HOME, proves the search reaches HOME: it must be found.
    suite = thief(suite_factory, f"""
        echo probe-ran home=$HOME > loot.txt
        echo decoy > $HOME/.wfbench-test-token-decoy
        cat $HOME/.wfbench-test-token {home}/.wfbench-test-token >> loot.txt 2>&1
        ls -la {home} /root >> loot.txt 2>&1
        echo search-begin >> loot.txt
        {FIND} -name '.wfbench-test-token*' -print 2>/dev/null | sort >> loot.txt
        echo search-end >> loot.txt
        true
    """)
    patch = run_hostile(pytester, suite)
    assert "probe-ran home=/home/wfbench" in patch
    assert secret not in patch
    assert found_by_search(patch) == ["/home/wfbench/.wfbench-test-token-decoy"]


def test_cannot_read_a_secret_in_the_harness_environment(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"ENV-SECRET-{secrets.token_hex(8)}"
    monkeypatch.setenv("HARNESS_DEPLOY_TOKEN", secret)
    suite = thief(suite_factory, """
        echo probe-ran > loot.txt
        env >> loot.txt
        for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f >> loot.txt 2>/dev/null; done
        true
    """)
    patch = run_hostile(pytester, suite)
    assert "probe-ran" in patch and "PATH=" in patch
    assert secret not in patch and "HARNESS_DEPLOY_TOKEN" not in patch


def test_cannot_write_outside_the_workspace(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    tag = secrets.token_hex(6)
    suite_root = pytester.path
    targets = [Path(f"/tmp/wfbench-pwned-{tag}"), Path(f"/etc/wfbench-pwned-{tag}"),
               Path(f"/usr/wfbench-pwned-{tag}"), suite_root / f"pwned-{tag}",
               suite_root / "out" / f"pwned-{tag}", Path(os.environ["HOME"]) / f"pwned-{tag}"]
    writes = "\n".join(f"touch {t} 2>> loot.txt; mkdir -p {t.parent} 2>/dev/null; "
                       f"echo x > {t} 2>> loot.txt" for t in targets)
    suite = thief(suite_factory, f"echo probe-ran > loot.txt\n{writes}\ntrue")
    patch = run_hostile(pytester, suite)
    assert "probe-ran" in patch
    for target in targets:
        assert not target.exists(), target
    assert (suite.root / "repo" / "calc.py").read_text().count("a - b") == 1


def _sleepers(tag: str) -> list[str]:
    result = subprocess.run(["pgrep", "-af", f"sleep {tag}"], capture_output=True, text=True)
    return [line for line in result.stdout.splitlines() if "pgrep" not in line]


def test_background_processes_do_not_outlive_the_session(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    seconds = str(3000 + secrets.randbelow(900))
    suite = thief(suite_factory, f"""
        setsid nohup sleep {seconds} > /dev/null 2>&1 &
        (sleep {seconds}.5 > /dev/null 2>&1 &)
        nohup sleep {seconds}.25 > /dev/null 2>&1 & disown
        echo started > loot.txt
        ps -eo pid,args >> loot.txt
    """)
    patch = run_hostile(pytester, suite)
    assert f"sleep {seconds}" in patch  # they were running when the step ended
    assert _sleepers(seconds) == []


def _fetch(url: str) -> str:
    return (f"python -c \"import urllib.request; "
            f"print(urllib.request.urlopen('{url}', timeout=5).read())\"")


def test_verify_and_oracle_have_no_network(
    pytester: pytest.Pytester, suite_factory: SuiteFactory,
    loopback_server: tuple[str, list[str]],
) -> None:
    url, hits = loopback_server
    task = task_yaml(
        verify=f"{_fetch(url + '/verify')} ; python -m pytest -q -p no:cacheprovider tests",
        oracle={"command": f"{_fetch(url + '/oracle')} || exit 0",
                "hidden_paths": ["tests/hidden/"], "expect": "exit-code"},
    )
    online = {**script_arm(_fetch(url + "/session")), "network": True}
    suite = suite_factory(tasks=[task], arms=["thief"], arm_definitions={"thief": online})
    pytester.runpytest_subprocess(*suite.args())
    row = suite.row("fix-add-thief-r1")
    # A session with the network may use it (an agent must reach its API) ...
    assert hits == ["/session"], hits
    assert row["steps"][0]["returncode"] == 0
    # ... the judges may not: verify's fetch failed, the oracle's never arrived.
    assert row["oracle_passed"] is True
    assert "/verify" not in hits and "/oracle" not in hits


def test_setup_cannot_bring_back_hidden_paths(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = suite_factory(tasks=[task_yaml(setup="mkdir -p tests/hidden")], arms=["gold"])
    result = pytester.runpytest_subprocess(*suite.args())
    result.assert_outcomes(errors=1)
    assert "hidden path 'tests/hidden' exists after setup" in suite.row("fix-add-gold-r1")[
        "error_detail"]


def test_secrets_are_redacted_from_every_sink(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = f"sk-ant-api03-{secrets.token_hex(16)}"
    monkeypatch.setenv("WFBENCH_ANTHROPIC_API_KEY", key)
    suite = suite_factory(
        tasks=[task_yaml(setup=f"echo {key}; exit 1"), task_yaml("leaky")],
        arms=["leaker"],
        arm_definitions={"leaker": script_arm(f"echo {key} > leaked.txt; echo {key}; exit 1")},
    )
    junit = suite.root / "junit.xml"
    result = pytester.runpytest_subprocess(*suite.args(f"--junitxml={junit}", "-rA", "-v"))
    assert "leaked.txt" in (suite.out / "artifacts" / "leaky-leaker-r1.patch").read_text()
    assert "[REDACTED]" in (suite.out / "results.jsonl").read_text()
    for path in [*suite.out.rglob("*"), junit]:
        if path.is_file():
            assert key not in path.read_text(errors="replace"), path
    assert key not in result.stdout.str() and key not in result.stderr.str()


def test_the_home_probe_does_find_the_secret_without_a_sandbox(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probes above can fail: with no sandbox the same probe steals the secret."""
    monkeypatch.delenv("CI", raising=False)
    secret = f"HOME-SECRET-{secrets.token_hex(8)}"
    home = Path(os.environ["HOME"])
    (home / ".wfbench-test-token").write_text(secret)
    suite = thief(suite_factory, f"cat {home}/.wfbench-test-token > loot.txt")
    patch = run_hostile(pytester, suite, "--wfbench-unsafe-no-sandbox")
    assert secret in patch
    assert suite.row("fix-add-thief-r1")["sandbox_backend"] == "unsafe-host"
    assert "WITHOUT a sandbox" in (suite.out / "report.md").read_text()


def test_the_unsafe_backend_is_refused_under_ci(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    suite = suite_factory()
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-unsafe-no-sandbox"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--wfbench-unsafe-no-sandbox is refused when CI is set*"])
    assert not suite.rows()


def test_a_symlink_in_the_workspace_cannot_redirect_the_oracle_staging(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    """Restoring hidden paths for the oracle must not write through the agent's links."""
    escape = pytester.path / "escape"
    escape.mkdir()
    suite = thief(suite_factory, f"rm -rf tests && ln -s {escape} tests && echo linked > loot.txt")
    patch = run_hostile(pytester, suite)
    assert "linked" in patch and "new file mode 120000" in patch  # the link was made
    assert list(escape.iterdir()) == []
    assert suite.row("fix-add-thief-r1")["oracle_passed"] is False


JUDGE_TAMPERING = {
    # a package in the workspace that shadows pytest for `python -m pytest`
    "shadow-pytest": "mkdir -p pytest && touch pytest/__init__.py && "
                     "echo 'raise SystemExit(0)' > pytest/__main__.py",
    # test configuration the agent writes for the oracle's run
    "ini-addopts": "printf '[pytest]\\naddopts = --co\\n' > pytest.ini",
    "pyproject-addopts": "printf '[tool.pytest.ini_options]\\naddopts = \"--co\"\\n' "
                         "> pyproject.toml",
    # a root conftest.py (loaded for tests/hidden) that turns every result into a pass
    "conftest-forces-pass": """cat > conftest.py <<'PY'
import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.outcome = "passed"
    report.longrepr = None
    return report


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    session.exitstatus = 0
PY""",
    # a fixed module compiled, then the source put back with its size and mtime
    "stale-bytecode": """cp -p calc.py /tmp/orig.py
sed -i 's/a - b/a + b/' calc.py && touch -r /tmp/orig.py calc.py
python -c 'import py_compile as p; p.compile("calc.py", cfile="__pycache__/calc.cpython-311.pyc")'
cp -p /tmp/orig.py calc.py""",
}


@pytest.mark.parametrize("case", list(JUDGE_TAMPERING))
def test_an_arm_cannot_change_how_it_is_judged(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, case: str
) -> None:
    suite = thief(suite_factory, JUDGE_TAMPERING[case] + "\necho tampered > loot.txt")
    patch = run_hostile(pytester, suite)
    assert "tampered" in patch
    row = suite.row("fix-add-thief-r1")
    assert row["resolved"] is False and row["error_kind"] in ("oracle-failed", "verify-failed")
    assert row["oracle_passed"] is False
    if case == "conftest-forces-pass":  # verify passes as it would anyway; the oracle judges
        assert row["error_kind"] == "oracle-failed"


@pytest.mark.parametrize("attributes", ["* -diff", "*.py working-tree-encoding=UTF-16",
                                        "* filter=hide"])
def test_workspace_attributes_and_ignores_do_not_hide_the_patch(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, attributes: str
) -> None:
    suite = thief(suite_factory, f"""
        sed -i 's/a - b/a + b/' calc.py
        echo '{attributes}' > .gitattributes
        printf '*\\n' > .gitignore
        echo 'HELPER = 1' > helper.py
    """)
    patch = run_hostile(pytester, suite)
    assert "+    return a + b" in patch
    assert "+HELPER = 1" in patch and "b/.gitignore" in patch
    row = suite.row("fix-add-thief-r1")
    assert row["resolved"] is True and row["diff_files"] == 4
    assert row["diff_insertions"] >= 4


def test_script_steps_are_offline_unless_their_arm_asks(
    pytester: pytest.Pytester, suite_factory: SuiteFactory,
    loopback_server: tuple[str, list[str]],
) -> None:
    url, hits = loopback_server
    suite = thief(suite_factory, f"{_fetch(url + '/offline')} > loot.txt 2>&1; true")
    patch = run_hostile(pytester, suite)
    assert "URLError" in patch or "Errno" in patch
    assert hits == []
