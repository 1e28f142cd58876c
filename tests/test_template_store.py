"""Templates outlive the sweep in the cache dir: a second sweep of the same
suite builds none, a changed `prepare` builds anew, concurrent sweeps build
once, and a stored template that no longer checks is rebuilt."""

from __future__ import annotations

import functools
import http.server
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_wfbench.redact import scrub_location, shown_location, url_credentials
from pytest_wfbench.workspace.template import evict_templates
from tests.conftest import Suite, task_yaml

SuiteFactory = Callable[..., Suite]


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    """A cache dir of the test's own, sharing the judges' bytecode with the others
    (building it takes a while and is tested elsewhere)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "bytecode").symlink_to(Path(os.environ["WFBENCH_CACHE_DIR"]) / "bytecode")
    return cache


def builds(cache: Path) -> list[str]:
    log = cache / "templates" / "templates" / "builds.log"
    return log.read_text().splitlines() if log.exists() else []


def sweep(pytester: pytest.Pytester, suite: Suite, cache: Path, out: str) -> None:
    suite.out = suite.root / out
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-cache-dir", str(cache)))
    result.assert_outcomes(passed=1)


def test_a_second_sweep_builds_no_template_and_a_changed_prepare_does(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, cache_dir: Path
) -> None:
    suite = suite_factory(arms=["gold"])
    sweep(pytester, suite, cache_dir, "out-1")
    sweep(pytester, suite, cache_dir, "out-2")
    assert len(builds(cache_dir)) == 1 and builds(cache_dir)[0].startswith("built ")
    assert suite.row("fix-add-gold-r1")["stage_ms"]["template_build"] >= 0
    suite = suite_factory(tasks=[task_yaml(prepare="touch prepared.txt")], arms=["gold"])
    sweep(pytester, suite, cache_dir, "out-3")
    assert len(builds(cache_dir)) == 2


def test_a_stored_template_that_no_longer_checks_is_rebuilt(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, cache_dir: Path
) -> None:
    suite = suite_factory(arms=["gold"])
    sweep(pytester, suite, cache_dir, "out-1")
    stored = [p for p in (cache_dir / "templates" / "templates").iterdir() if p.is_dir()]
    assert len(stored) == 1
    calc = stored[0] / "calc.py"
    calc.write_text(calc.read_text() + "# changed in the cache\n")
    sweep(pytester, suite, cache_dir, "out-2")
    log = builds(cache_dir)
    assert len(log) == 3 and "does not check" in log[1] and log[2].startswith("built ")
    assert "changed in the cache" not in calc.read_text()
    assert suite.row("fix-add-gold-r1")["diff_files"] == 1


def test_concurrent_sweeps_share_one_build(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, cache_dir: Path
) -> None:
    suite = suite_factory(arms=["gold"])
    outs = [suite.root / f"out-{i}" for i in range(2)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    processes = [
        subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                          "--wfbench-tasks", str(suite.task_file), "--wfbench-out", str(out),
                          "--wfbench-cache-dir", str(cache_dir), "-q"],
                         cwd=suite.root, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
        for out in outs]
    for process in processes:
        output = process.communicate(timeout=600)[0].decode()
        assert process.returncode == 0, output
    assert len(builds(cache_dir)) == 1
    for out in outs:
        suite.out = out
        assert suite.row("fix-add-gold-r1")["resolved"] is True


def test_templates_beyond_the_bounds_go_least_recently_used_first(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / "templates").mkdir(parents=True)
    (store / "locks").mkdir()
    day = 24 * 3600
    for n, (age_days, size) in enumerate([(5, 40), (4, 40), (3, 40), (2, 40), (0, 40)]):
        name = f"t{n}"
        (store / "templates" / name).mkdir()
        (store / "templates" / name / "file").write_text("x")
        (store / "hidden" / name).mkdir(parents=True)
        meta = store / "templates" / f"{name}.json"
        meta.write_text(json.dumps({"bytes": size}))
        used = time.time() - age_days * day
        os.utime(meta, (used, used))
    # 120 bytes allowed: the three most recent stay; t0 is kept as in use; t4 is
    # younger than an hour (a concurrent sweep may be cloning it).
    evict_templates(store, keep="t0", max_bytes=120, max_templates=10)
    left = sorted(p.name for p in (store / "templates").iterdir() if p.is_dir())
    assert left == ["t0", "t2", "t3", "t4"]
    assert not (store / "templates" / "t1.json").exists() and not (store / "hidden" / "t1").exists()
    evict_templates(store, keep="t4", max_bytes=10**9, max_templates=2)
    assert sorted(p.name for p in (store / "templates").iterdir() if p.is_dir()) == ["t3", "t4"]


@pytest.fixture
def dumb_http_repo(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The suite's repository served read-only over git's dumb HTTP protocol
    from a loopback server that takes any credentials: (URL with a token, token)."""
    served = tmp_path / "served"
    served.mkdir()
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(served)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    token = f"ghp_{secrets.token_hex(12)}"
    yield f"http://wfbench:{token}@127.0.0.1:{server.server_address[1]}/repo.git", token
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def test_the_credentials_of_a_repository_url_are_written_nowhere(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, cache_dir: Path,
    dumb_http_repo: tuple[str, str], tmp_path: Path
) -> None:
    url, token = dumb_http_repo
    suite = suite_factory(arms=["gold"])
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    repo = suite.root / "repo"
    subprocess.run([*git, "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run([*git, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-q", "-m", "base"], check=True)
    bare = tmp_path / "served" / "repo.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    subprocess.run(["git", "-C", str(bare), "update-server-info"], check=True)
    document = json.loads(suite.task_file.read_text())
    document["repo"] = url
    suite.task_file.write_text(json.dumps(document))
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-cache-dir", str(cache_dir)))
    result.assert_outcomes(passed=1)
    assert token not in result.stdout.str() + result.stderr.str()
    written = [p for p in [*suite.out.rglob("*"), *cache_dir.rglob("*")]
               if p.is_file() and not p.is_symlink() and "bytecode" not in p.parts]
    assert any(p.name == "builds.log" for p in written)
    for path in written:
        assert token.encode() not in path.read_bytes(), path
    # A repository that cannot be reached: the message names it without the token.
    document["repo"] = url.replace("/repo.git", "/absent.git")
    suite.task_file.write_text(json.dumps(document))
    suite.out = suite.root / "out-absent"
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-cache-dir", str(cache_dir)))
    assert result.ret != 0
    output = result.stdout.str() + result.stderr.str()
    assert "absent.git" in output and token not in output


def test_a_url_is_shown_without_its_credentials() -> None:
    assert shown_location("https://me:tok3n-secret@host/x.git") == "https://[REDACTED]@host/x.git"
    assert shown_location("https://ghp_0123456789abcdef@host/x.git") == \
        "https://[REDACTED]@host/x.git"
    assert shown_location("git@github.com:org/x.git") == "git@github.com:org/x.git"
    assert shown_location("/srv/repos/x") == "/srv/repos/x"
    assert url_credentials("ssh://git@host/x.git") == []  # a user name, not a secret
    assert url_credentials("https://ghp_0123456789abcdef@host/x.git") == ["ghp_0123456789abcdef"]
    text = "fatal: could not read from https://me:tok3n-secret@host/x.git (tok3n-secret)"
    assert scrub_location(text, "https://me:tok3n-secret@host/x.git") == \
        "fatal: could not read from https://[REDACTED]@host/x.git ([REDACTED])"
