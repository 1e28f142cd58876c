"""Hostile arms against the harness itself: what they leave in the workspace
(links, special files, nested repositories, hostile trees, escape sequences)
must neither hide from the evidence, nor reach the host, nor turn a loss into
an excluded run, nor stall the sweep."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_wfbench.redact import CONTROL
from pytest_wfbench.sandbox import SandboxPolicy
from pytest_wfbench.sandbox.core import BubblewrapSandbox
from pytest_wfbench.sandbox.limits import Cgroups
from tests.conftest import Suite, junit_cases, junit_properties, script_arm, task_yaml

SuiteFactory = Callable[..., Suite]
# A hang guard only (these sweeps take seconds): a stalled harness fails the
# test instead of the CI job.
HANG_GUARD_S = 600


def run_arms(pytester: pytest.Pytester, suite_factory: SuiteFactory, arms: dict[str, str],
             *extra: str, task: dict[str, Any] | None = None) -> tuple[Suite, pytest.RunResult]:
    definitions = {name: script_arm(step) for name, step in arms.items()}
    suite = suite_factory(tasks=[task_yaml(**(task or {}))], arms=list(arms),
                          arm_definitions=definitions)
    result = pytester.runpytest_subprocess(*suite.args(*extra), timeout=HANG_GUARD_S)
    assert sorted(r["cell_id"] for r in suite.rows()) == sorted(
        f"fix-add-{arm}-r1" for arm in arms), result.stdout.str()
    return suite, result


def deep_tree(depth: int) -> str:
    """A chain of ``depth`` folders (bash's cd slows down past PATH_MAX; os.chdir not)."""
    return (f"python -c \"import os\nfor _ in range({depth}):\n    os.mkdir('d')\n"
            f"    os.chdir('d')\nopen('leaf.txt', 'w').write('deep')\"")


def patch_of(suite: Suite, cell_id: str) -> str:
    return (suite.out / "artifacts" / f"{cell_id}.patch").read_text(errors="replace")


def host_repo(path: Path) -> str:
    """A repository on the host; returns its HEAD commit."""
    git = ["git", "-C", str(path), "-c", "user.name=h", "-c", "user.email=h@h"]
    path.mkdir()
    (path / "host.txt").write_text("HOST-FILE-MARKER\n")
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "HOST-COMMIT-MARKER"], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


def test_the_patch_shows_nested_repositories_and_reads_no_host_repository(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    host = pytester.path / "hostrepo"
    head = host_repo(host)
    arms = {"nester": f"""
        mkdir vendor && echo 'NESTED = "NESTED-MARKER"' > vendor/nested.py
        git -C vendor init -q && git -C vendor add -A
        git -C vendor -c user.name=x -c user.email=x@x commit -qm nested
        mkdir linked && echo 'gitdir: {host}/.git' > linked/.git
        echo LINKED-MARKER > linked/data.txt
        printf '[submodule "vendor"]\\n\\tpath = vendor\\n\\turl = ./vendor\\n\\tignore = all\\n' \\
            > .gitmodules
        printf '[submodule "linked"]\\n\\tpath = linked\\n\\tignore = all\\n' >> .gitmodules
    """}
    suite, _ = run_arms(pytester, suite_factory, arms)
    row = suite.row("fix-add-nester-r1")
    patch = patch_of(suite, "fix-add-nester-r1")
    assert '+NESTED = "NESTED-MARKER"' in patch and "+LINKED-MARKER" in patch
    assert "Subproject commit" not in patch and "160000" not in patch
    assert head not in patch and "HOST-" not in patch
    assert row["diff_files"] == 3  # vendor/nested.py, linked/data.txt, .gitmodules
    notes = " ".join(row["evidence_notes"])
    assert "vendor/.git" in notes and "linked/.git" in notes
    assert any("nested repository" in f for f in row["suspicious"])
    assert row["error_kind"] == "oracle-failed" and row["counted"] is True


def test_what_an_arm_leaves_cannot_turn_its_loss_into_an_excluded_run(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each arm loses (add() stays broken) and leaves something that once made a
    harness stage fail after the session; every row is counted, and the work
    dir is gone afterwards."""
    work = tmp_path / "tmp"
    work.mkdir()
    monkeypatch.setenv("TMPDIR", str(work))
    arms = {
        "empty-nested-git": "mkdir -p sub/.git && echo x > sub/file.txt",
        "gitdir-nowhere": "mkdir sub && echo 'gitdir: /nonexistent' > sub/.git",
        "locked-folders": "mkdir -p locked/inner && touch locked/inner/f && "
                          "chmod 000 locked/inner locked && chmod 000 calc.py",
        "deep-tree": deep_tree(600),
        "looping-links": "ln -s loop loop && ln -s . self && ln -s /proc/self/root root",
        "conftest-folder": "mkdir -p conftest.py pytest.ini tests/hidden",
        # line separators in a folder name and in verify's output: a reader that
        # split lines at them would lose the row, and the cell would get a
        # second, excluded one
        "line-separators": "python -c \"import os; os.makedirs('x\\u2028y/__pycache__')\" && "
                           "printf 'def test_sep():\\n    assert 0, \"\\\\u2028\\\\u2029\"\\n'"
                           " > tests/test_sep.py",
        # sources the scan must read, and caches the capture must pass over, in
        # bounded memory and time
        "large-sources": "mkdir big && for i in $(seq 16); do head -c 1M /dev/zero | "
                         "tr '\\0' '\\n' > big/m$i.py; done",
        "cache-flood": "for c in $(seq 40); do d=chain$c; for i in $(seq 50); do "
                       "d=$d/.pytest_cache; done; mkdir -p $d; done && mkdir links && "
                       "for i in $(seq 2000); do ln -s ../calc.py links/l$i; done",
    }
    suite, result = run_arms(pytester, suite_factory, arms)
    for arm in arms:
        row = suite.row(f"fix-add-{arm}-r1")
        assert row["counted"] is True and row["resolved"] is False, (arm, row["error_kind"],
                                                                   row["error_detail"])
        assert row["error_kind"] in ("oracle-failed", "verify-failed", "limit-exceeded",
                                     "evidence-tampered"), (arm, row["error_detail"])
    deep = suite.row("fix-add-deep-tree-r1")
    assert deep["error_kind"] == "limit-exceeded" and deep["limit_exceeded"]["limit"] == "depth"
    separators = suite.row("fix-add-line-separators-r1")
    assert separators["error_kind"] == "verify-failed"
    assert "\\u2028" in separators["error_detail"]
    assert list(work.iterdir()) == [], result.stdout.str()


def test_special_files_deep_trees_and_huge_sparse_files_are_handled_in_bounded_time(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    arms = {
        "fifos": "mkfifo pipe && mkdir docs && mkfifo docs/conftest.py && mkfifo tests/x.pyc && "
                 "python -c \"import socket; socket.socket(socket.AF_UNIX).bind('sock')\"",
        "very-deep": deep_tree(5000),
        "sparse": "truncate -s 200G huge.bin && truncate -s 30G tests/huge.py",
        "many-links": "mkdir links && cd links && for i in $(seq 300); do "
                      "ln -s ../links l$i; done",
    }
    task = {"sandbox": {"limits": {"file_size": "1TiB"}}}
    suite, _ = run_arms(pytester, suite_factory, arms, task=task)
    fifos = suite.row("fix-add-fifos-r1")
    assert fifos["error_kind"] == "oracle-failed" and fifos["counted"] is True
    assert {"special file not copied: pipe", "special file not copied: docs/conftest.py",
            "special file not copied: sock"} <= set(fifos["evidence_notes"])
    deep = suite.row("fix-add-very-deep-r1")
    assert deep["error_kind"] == "limit-exceeded" and deep["limit_exceeded"]["limit"] == "depth"
    sparse = suite.row("fix-add-sparse-r1")
    assert sparse["error_kind"] == "limit-exceeded" and sparse["limit_exceeded"]["limit"] == "disk"
    links = suite.row("fix-add-many-links-r1")
    assert links["error_kind"] == "oracle-failed" and links["diff_files"] == 300


def test_the_harness_never_acts_on_the_host_through_an_agent_made_link(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    """Symlinked directories (and files) over every path the harness writes or
    deletes inside a workspace: each configuration file it resets, the hidden
    paths it restores, the .git it mounts, the caches it leaves out, the tree it
    removes. The host files they point at survive, unchanged."""
    host = pytester.path / "host"
    (host / "hidden").mkdir(parents=True)
    files = {"conftest.py": "HOST CONFTEST\n", "pytest.ini": "[pytest]\n", "keep.txt": "KEEP\n",
             "hidden/test_hidden.py": "HOST HIDDEN\n", "setup.cfg": "[metadata]\n"}
    for name, text in files.items():
        (host / name).write_text(text)
    before = {p.relative_to(host): p.read_bytes() for p in host.rglob("*") if p.is_file()}
    arms = {"linker": f"""
        rm -rf pkg && ln -s {host} pkg
        rm -rf tests && ln -s {host} tests
        ln -s {host}/keep.txt conftest.py
        ln -s {host} pytest.ini
        ln -s {host}/setup.cfg setup.cfg
        rm -rf .git && ln -s {host} .git
        ln -s {host} __pycache__
        ln -s {host} $HOME/.claude
        echo linked > loot.txt
    """}
    suite_factory()  # the repository, then a nested conftest.py it has at its base
    base_conftest = pytester.path / "repo" / "pkg" / "conftest.py"
    base_conftest.parent.mkdir()
    base_conftest.write_text("# the project's own conftest\n")
    suite, _ = run_arms(pytester, suite_factory, arms)
    assert "+linked" in patch_of(suite, "fix-add-linker-r1")
    after = {p.relative_to(host): p.read_bytes() for p in host.rglob("*") if p.is_file()}
    assert after == before
    assert suite.row("fix-add-linker-r1")["oracle_passed"] is False


def test_escape_sequences_from_an_arm_never_reach_a_terminal_junit_or_report(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    loud = r"""
        cat > tests/test_loud.py <<'PY'
        def test_loud():
            print("\x1b]0;PWNED-TITLE\x07\x1b[2J\x1b[31mRED\r\u202eBIDI\x9b31m")
            assert False, "\x1b]8;;http://evil.invalid\x07click\x1b]8;;\x07"
        PY
        mkfifo "$(printf 'odd\033[31mname')"
    """
    suite, result = run_arms(pytester, suite_factory, {"loud": loud},
                             f"--junitxml={pytester.path / 'junit.xml'}", "-rA")
    row = suite.row("fix-add-loud-r1")
    assert row["error_kind"] == "verify-failed"
    assert "\\x1b]0;PWNED-TITLE\\x07" in row["error_detail"]
    texts = {
        "terminal": result.stdout.str() + result.stderr.str(),
        "junit": (pytester.path / "junit.xml").read_text(),
        "report": (suite.out / "report.md").read_text(),
    }
    junit = junit_cases(pytester.path / "junit.xml")["fix-add-loud-r1"]
    texts["junit properties"] = json.dumps(junit_properties(junit), ensure_ascii=False)
    for line in (suite.out / "results.jsonl").read_text().splitlines():
        texts["row"] = json.dumps(json.loads(line), ensure_ascii=False)
    assert "PWNED-TITLE" in texts["terminal"] and "PWNED-TITLE" in texts["junit"]
    for sink, text in texts.items():
        assert not CONTROL.search(text.replace("\n", "").replace("\t", "")), sink
    assert any("odd\\x1b[31mname" in note for note in row["evidence_notes"])


FAULT = '''
import pytest_wfbench.fixtures as fixtures


def pytest_configure(config):
    def broken(*args, **kwargs):
        raise RuntimeError("an unexpected bug in {stage}")
    setattr(fixtures, "{stage}", broken)
'''


@pytest.mark.parametrize(("stage", "counted"), [("diff_against_base", True),
                                                ("run_oracle", True), ("make_clone", False)])
def test_an_unexpected_exception_inside_a_stage_is_a_harness_error(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, stage: str, counted: bool
) -> None:
    """Red in the terminal, a non-zero exit; counted as unresolved once the
    session had completed, so not even a harness bug can exclude a loss."""
    suite = suite_factory(arms=["gold"])
    pytester.makeconftest(FAULT.format(stage=stage))
    result = pytester.runpytest_subprocess(*suite.args())
    assert result.ret != 0
    row = suite.row("fix-add-gold-r1")
    assert row["error_kind"] == "harness-error" and row["resolved"] is False
    assert f"an unexpected bug in {stage}" in row["error_detail"]
    assert row["counted"] is counted
    result.stdout.fnmatch_lines(["*HARNESS ERROR (a bug in pytest-wfbench) in fix-add-gold-r1*"])
    assert "## Harness errors" in (suite.out / "report.md").read_text()


def test_sessions_run_within_limits_and_going_over_one_is_the_arms_failure(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    fork = ("python -c \"import os, time\nfor _ in range(300):\n    if os.fork() == 0:\n"
            "        time.sleep(20)\n        os._exit(0)\"")
    arms = {
        "fork-bomb": fork,
        "memory-hog": "python -c 'x = bytearray(600 * 1024 * 1024)'",
        "big-file": "head -c 16M /dev/zero > big.bin",
        "disk-filler": "for i in $(seq 60); do head -c 1M /dev/zero > f$i; done; sleep 30",
        "file-spray": "mkdir many && cd many && seq 5000 | xargs touch; sleep 30",
        "fixer": "sed -i 's/a - b/a + b/' calc.py",
    }
    limits = {"processes": 64, "memory": "256MiB", "file_size": "8MiB", "disk": "32MiB",
              "files": 3000}
    suite, _ = run_arms(pytester, suite_factory, arms, task={"sandbox": {"limits": limits}})
    assert suite.row("fix-add-fixer-r1")["resolved"] is True
    named = {"big-file": "file_size", "disk-filler": "disk", "file-spray": "files"}
    if Cgroups.detect() is not None:  # processes and memory are named through cgroups
        named |= {"fork-bomb": "processes", "memory-hog": "memory"}
    for arm in arms.keys() - {"fixer"}:
        row = suite.row(f"fix-add-{arm}-r1")
        assert row["resolved"] is False and row["counted"] is True, arm
        if arm in named:
            assert row["error_kind"] == "limit-exceeded", (arm, row["error_detail"])
            assert row["limit_exceeded"]["limit"] == named[arm]
            assert named[arm] in row["error_detail"]


@pytest.mark.parametrize("exposed", ["cache dir", "oracle files"])
def test_no_read_only_path_of_a_task_shows_the_sandbox_what_only_the_harness_reads(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, tmp_path: Path, exposed: str
) -> None:
    """A task's sandbox.read_only is bound into every command of its cells: one
    that held the cache dir (the templates' hidden files, the expected tests),
    the work dir, the out dir or a task's oracle files or gold patch showed them
    to the arm. The sweep refuses it, naming the task and the path."""
    cache = tmp_path / "cache"
    shared = Path(os.environ["WFBENCH_CACHE_DIR"]) / "bytecode"
    shared.mkdir(parents=True, exist_ok=True)
    cache.mkdir()
    (cache / "bytecode").symlink_to(shared)
    steal = ("cat $(find / -path /proc -prune -o -name test_hidden.py -print -o "
             "-name test_oracle.py -print 2>/dev/null) > loot.txt 2>&1; true")
    suite = suite_factory(arms=["thief"], arm_definitions={"thief": script_arm(steal)})
    exposing = {"cache dir": cache, "oracle files": suite.root}[exposed]
    document = json.loads(suite.task_file.read_text())
    document["tasks"][0]["sandbox"] = {"read_only": [str(exposing)]}
    suite.task_file.write_text(json.dumps(document))
    # An earlier sweep keeps the task's template (and hidden files) in the cache dir.
    pytester.runpytest_subprocess(*suite.args("--wfbench-cache-dir", str(cache),
                                              "--wfbench-arms", "gold"))
    suite.out = suite.root / "out-thief"
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-cache-dir", str(cache)))
    loot = (suite.out / "artifacts" / "fix-add-thief-r1.patch")
    assert not loot.exists() or ("HIDDEN-MARKER-7Q" not in loot.read_text()
                                 and "ORACLE-MARKER-3X" not in loot.read_text())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*task 'fix-add'*sandbox.read_only*{exposing}*"])


# Eight busy processes, each in a session of its own, counting the processor
# time they get from when the other command starts until it has had its share.
CPU_HOG = """
python - <<'WFBENCH_EOF'
import os, time
for n in range(8):
    if os.fork() == 0:
        os.setsid()
        open(f"/workspace/started-{n}", "w").close()
        while not os.path.exists("/workspace/go"):
            pass
        start = time.process_time()
        while not os.path.exists("/workspace/done"):
            pass
        with open(f"/workspace/hog-{n}", "w") as out:
            out.write(str(time.process_time() - start))
        os._exit(0)
for _ in range(8):
    os.wait()
WFBENCH_EOF
"""
CPU_VICTIM = """
python - <<'WFBENCH_EOF'
import time
open("/workspace/go", "w").close()
while time.process_time() < 0.5:
    pass
open("/workspace/done", "w").close()
print(time.process_time())
WFBENCH_EOF
"""


def test_a_command_of_many_sessions_takes_no_more_processor_than_any_other(
    tmp_path: Path
) -> None:
    """The scheduler shared the processors per session, so a session that
    started many slowed every other cell's commands (their verify, oracle, the
    calibration of a task's expected tests) toward their timeouts. Measured in
    processor time, not on a clock: while the other command runs, the
    hog's eight processes together get about what it gets, not eight times it."""
    cgroups = Cgroups.detect()
    if cgroups is None or (cgroups.version == 2 and "cpu" not in (
            cgroups.parents["pids"] / "cgroup.subtree_control").read_text().split()):
        pytest.skip("no cgroups whose cpu controller the harness may use here")
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sandbox = BubblewrapSandbox(SandboxPolicy(), tmp_path / "scratch", bwrap)
    hog = threading.Thread(target=sandbox.run, args=(CPU_HOG,),
                           kwargs={"workspace": workspace, "writable": True, "timeout_s": 300})
    hog.start()
    try:
        while len(list(workspace.glob("started-*"))) < 8 and hog.is_alive():
            threading.Event().wait(0.05)
        victim = sandbox.run(CPU_VICTIM, workspace=workspace, writable=True, timeout_s=300)
    finally:
        (workspace / "done").touch()
        hog.join()
    assert victim.ok, victim.tail()
    hogged = sum(float(path.read_text()) for path in workspace.glob("hog-*"))
    assert len(list(workspace.glob("hog-*"))) == 8
    assert float(victim.stdout) >= 0.4 * hogged, (victim.stdout, hogged)


# Creates user namespaces and holds each through a descriptor, as a session that
# meant to use up the machine's would (here only three).
NAMESPACE_HOLDER = """
python - > loot.txt 2>&1 <<'WFBENCH_EOF'
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
held = []
for _ in range(3):
    ready, go = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(go, b"y" if libc.unshare(0x10000000) == 0 else b"n")  # CLONE_NEWUSER
        time.sleep(5)
        os._exit(0)
    if os.read(ready, 1) == b"y":
        held.append(os.open(f"/proc/{pid}/ns/user", os.O_RDONLY))
    os.kill(pid, 9)
    os.waitpid(pid, 0)
print(f"held {len(held)} user namespaces")
WFBENCH_EOF
unshare --user --map-root-user true && echo "unshare made one" >> loot.txt
true
"""


def test_a_session_cannot_hold_the_user_namespaces_every_sandbox_needs(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    """Every sandbox runs as the harness's user, so the kernel counts the user
    namespaces of all of them, and of the harness, against one per-user limit
    (user.max_user_namespaces): a session that made and held them until that
    limit made every other cell's sandbox fail to start (bwrap: ENOSPC), which
    the harness took for that cell's command failing: a counted loss for
    another arm. A sandbox can make no user namespace (nor, then, any other)."""
    suite, _ = run_arms(pytester, suite_factory, {"holder": NAMESPACE_HOLDER})
    loot = patch_of(suite, "fix-add-holder-r1")
    assert "held 0 user namespaces" in loot and "unshare made one" not in loot, loot


def test_a_session_cannot_tell_its_task_arm_sweep_or_host_paths(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    probe = """
        {
          echo probe-ran
          tr '\\0' ' ' < /proc/1/cmdline; echo
          for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done
          cat /proc/self/mountinfo /proc/self/cgroup
          env
          pwd; ls -la / /run /home
        } > loot.txt 2>&1
    """
    suite, _ = run_arms(pytester, suite_factory, {"armname-q7x": probe})
    row = suite.row("fix-add-armname-q7x-r1")
    loot = patch_of(suite, "fix-add-armname-q7x-r1")
    assert "probe-ran" in loot and "--args" in loot and "/workspace" in loot
    for secret in (row["sweep_id"], "fix-add", "armname-q7x", str(pytester.path), "cells.tsv",
                   str(suite.out)):
        assert secret not in loot.replace("fix-add-armname-q7x-r1", ""), secret
    assert os.sep + "cells" + os.sep in loot  # cell folders appear, by random names only


ORACLE_WRITER = '''
# Refuse to be imported where a folder of the host can be written: the
# judges then fail, and so does the cell.
for _line in open("/proc/self/mountinfo"):
    _fields = _line.split()
    _point, _kind = _fields[4], _fields[_fields.index("-") + 1]
    if _kind in ("tmpfs", "proc", "devpts", "mqueue", "sysfs", "devtmpfs"):
        continue
    try:
        with open(_point.rstrip("/") + "/WFBENCH-ORACLE-WROTE-HERE", "w") as _out:
            _out.write("x")
    except OSError:
        continue
    raise RuntimeError("a host folder is writable here: " + _point)
'''


def test_the_judges_have_no_writable_host_folder(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    """Code the judges import may write only to their private /tmp and HOME
    (sized tmpfs): the reporter's records leave through a pipe, not a folder."""
    arms = {"writer": "sed -i 's/a - b/a + b/' calc.py && cat >> calc.py <<'WFBENCH_EOF'\n"
                      + ORACLE_WRITER + "WFBENCH_EOF\n"}
    suite, _ = run_arms(pytester, suite_factory, arms)
    row = suite.row("fix-add-writer-r1")
    assert row["resolved"] is True, row["error_detail"]
    assert list(pytester.path.rglob("WFBENCH-ORACLE-WROTE-HERE")) == []


def test_the_skills_fingerprint_reads_an_arms_folder_safely(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a session the skills folder is the arm's (the read-only mount's
    parent can be swapped): fingerprinting it follows no link, opens no special
    file, stops at its bounds, and never raises."""
    from pytest_wfbench.skills import SKILLS_DIR, fingerprint

    def workspace(name: str) -> Path:
        path = tmp_path / name
        (path / SKILLS_DIR / "work").mkdir(parents=True)
        (path / SKILLS_DIR / "work" / "SKILL.md").write_text("skill\n")
        return path

    plain = workspace("plain")
    honest = fingerprint(plain)
    assert len(honest) == 64 and fingerprint(plain) == honest
    fifo = workspace("fifo")
    os.mkfifo(fifo / SKILLS_DIR / "work" / "pipe")
    assert fingerprint(fifo) not in (honest, "absent")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".claude").symlink_to(plain / ".claude")
    assert fingerprint(linked).startswith("unreadable")
    deep = workspace("deep")
    monkeypatch.chdir(deep / SKILLS_DIR / "work")
    for _ in range(200):  # past the bound, within what pytest's own clean-up removes
        os.mkdir("d")
        os.chdir("d")
    monkeypatch.chdir(tmp_path)
    assert fingerprint(deep).startswith("unreadable")
    assert fingerprint(tmp_path / "nowhere").startswith("unreadable")
    (plain / SKILLS_DIR / "work" / "SKILL.md").write_text("changed\n")
    assert fingerprint(plain) != honest


def test_the_empty_cgroups_a_killed_harness_left_are_removed_once_stale(tmp_path: Path) -> None:
    pids, memory = tmp_path / "pids", tmp_path / "memory"
    old = time.time() - 2 * 3600
    for parent in (pids, memory):
        for name in ("wfbench-stale", "wfbench-fresh", "wfbench-busy", "other-stale"):
            (parent / name).mkdir(parents=True)
        (parent / "wfbench-busy" / "cgroup.procs").write_text("123\n")  # not empty
        for name in ("wfbench-stale", "wfbench-busy", "other-stale"):
            os.utime(parent / name, (old, old))
    removed = Cgroups(1, {"pids": pids, "memory": memory}).remove_stale()
    assert removed == 2
    for parent in (pids, memory):
        assert sorted(p.name for p in parent.iterdir()) == ["other-stale", "wfbench-busy",
                                                            "wfbench-fresh"]
