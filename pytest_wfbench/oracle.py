"""The hidden oracle (SPEC §3, step 7).

Its files are digested at sweep start. For each cell they are staged only
after the arm's last process has exited (every sandbox command's PID namespace
dies with it), under a random path, read-only and offline, with the tree the
harness captured from the workspace: its test configuration reset to the
base, its hidden paths given back, the base's git history in place of the
arm's. The oracle passes only on observed results (:mod:`judge.expected`).
Only pass or fail is kept: the oracle's output can print hidden content.
Everything staged is erased afterwards.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import secrets
import sys
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from filelock import FileLock

from pytest_wfbench.expectations import ExpectationInputs, ExpectationStore, policy_key
from pytest_wfbench.judge.config import reset_test_configuration, root_config_file
from pytest_wfbench.judge.environment import (
    bytecode_mount,
    gold_added_paths,
    importable_names,
    judge_env,
    oracle_addopts,
)
from pytest_wfbench.judge.expected import (
    EXIT_CODE,
    Expectation,
    Outcomes,
    expectation_from_run,
    judge_outcomes,
    parse_outcomes,
)
from pytest_wfbench.outcomes import CellFailure
from pytest_wfbench.sandbox import Mount, Sandbox
from pytest_wfbench.tasks import Task
from pytest_wfbench.workspace import fs
from pytest_wfbench.workspace.capture import TreeBounds, capture_tree
from pytest_wfbench.workspace.clone import copy_tree, make_clone
from pytest_wfbench.workspace.layers import JudgedTree
from pytest_wfbench.workspace.template import Template, tree_digest

EMPTY_DIGEST = hashlib.sha256(b"").hexdigest()
MAX_OUTCOMES_BYTES = 32 << 20
"""What the harness keeps of the reporter's records (a flood is cut, not stored)."""
EMPTY_CONFIG = "[pytest]\n"


@dataclass(frozen=True)
class OracleSnapshot:
    """The oracle's files as captured at sweep start."""

    task_id: str
    files: Path | None
    digest: str

    @classmethod
    def capture(cls, task: Task) -> OracleSnapshot:
        files = task.oracle.files
        digest = tree_digest(files) if files is not None else EMPTY_DIGEST
        if task.oracle.review is not None:
            # A review task's hidden labels are its oracle: part of the snapshot.
            digest = hashlib.sha256(f"{digest}:{task.oracle.review.digest}".encode()).hexdigest()
        return cls(task.id, files, digest)


@dataclass(frozen=True)
class OracleResult:
    passed: bool
    digest: str
    detail: str
    judged_by: str
    expected_tests: int | None


def combined_digest(snapshot: OracleSnapshot, template: Template) -> str:
    """The oracle's identity in a row: its files and the hidden paths it gets back."""
    return hashlib.sha256(f"{snapshot.digest}:{template.hidden_digest}".encode()).hexdigest()


@functools.lru_cache(maxsize=256)
def _import_rules(template_path: Path, hidden_store: Path, gold: Path | None) -> str:
    """The oracle's import rules for a task, as JSON (see judge/site/sitecustomize.py)."""
    added = gold_added_paths(gold.read_bytes()) if gold is not None else []
    return json.dumps(importable_names([template_path, hidden_store], added), sort_keys=True)


@dataclass(frozen=True)
class _Run:
    exit_ok: bool
    timed_out: bool
    outcomes: Outcomes


def _run(task: Task, snapshot: OracleSnapshot, template: Template, sandbox: Sandbox,
         tree: JudgedTree, stage: Path, addopts: tuple[str, ...] = (),
         bytecode: Path | None = None) -> _Run:
    """Stage the oracle over ``tree`` (the harness's own copy) and run it once."""
    mounts: list[Mount] = bytecode_mount(bytecode)
    (stage / "mnt").mkdir()
    judged = tree.mount(stage / "mnt")
    workspace = sandbox.workspace_path(judged)
    env: dict[str, str] = {}
    if snapshot.files is not None:
        files = stage / "files"
        copy_tree(snapshot.files, files)
        if tree_digest(files) != snapshot.digest:
            raise CellFailure("oracle-unavailable",
                              f"the oracle files of {task.id!r} changed during the sweep")
        mount = Mount(files, f"/oracle-{secrets.token_hex(12)}")
        mounts.append(mount)
        env["WFBENCH_ORACLE_DIR"] = sandbox.mount_path(mount)
    reset_test_configuration(tree, template.path)
    for hidden in task.oracle.hidden_paths:
        path = PurePosixPath(hidden)
        tree.remove_entry(path)
        tree.put_tree(path, template.hidden_store / hidden)
    # The base's history, not the arm's: a test that runs git reads the harness's.
    tree.real_directories(PurePosixPath(".git"))
    mounts.append(Mount(template.git_dir, f"{workspace}/.git"))
    judge = stage / "judge"
    judge.mkdir()
    (judge / "imports.json").write_text(
        _import_rules(template.path, template.hidden_store, task.gold), encoding="utf-8")
    config_name = root_config_file(template.path)
    if config_name is None:
        (judge / "pytest.ini").write_text(EMPTY_CONFIG)
    judge_mount = Mount(judge, f"/wfbench-{secrets.token_hex(12)}")
    mounts.append(judge_mount)
    judge_dir = sandbox.mount_path(judge_mount)
    config = f"{workspace}/{config_name}" if config_name else f"{judge_dir}/pytest.ini"
    env["WFBENCH_JUDGE_IMPORTS"] = f"{judge_dir}/imports.json"
    env = judge_env(workspace, task.oracle.plugins,
                    extra_addopts=(*oracle_addopts(workspace, config), *addopts), extra=env,
                    bytecode=sandbox.mount_path(mounts[0]) if bytecode is not None else None)
    key = secrets.token_bytes(32)
    channel = None if task.oracle.exit_code_only else ResultChannel(key)
    if channel is not None:
        env.update(channel.env())
    try:
        result = sandbox.run(task.oracle.command, workspace=judged, writable=False,
                             network=False,
                             timeout_s=task.timeout_s, env=env, mounts=mounts,
                             inherit_fds=channel.child_fds() if channel else ())
    finally:
        outcomes = channel.close() if channel is not None else b""
    return _Run(exit_ok=result.ok, timed_out=result.timed_out,
                outcomes=parse_outcomes(outcomes.decode("utf-8", "replace"), key))


class ResultChannel:
    """The oracle's reporter's way out, with no file the oracle can write: its
    key goes in through a pipe that the first reader empties (so nothing else
    can read it after), its records come out through another pipe that a
    thread drains, keeping at most MAX_OUTCOMES_BYTES."""

    def __init__(self, key: bytes) -> None:
        self._key_read, key_write = os.pipe()
        os.write(key_write, key)
        os.close(key_write)
        self._out_read, self._out_write = os.pipe()
        self._kept = bytearray()
        self._thread = threading.Thread(target=self._drain, name="wfbench-oracle-results",
                                        daemon=True)
        self._thread.start()

    def env(self) -> dict[str, str]:
        return {"WFBENCH_JUDGE_KEY_FD": str(self._key_read),
                "WFBENCH_JUDGE_OUTCOMES_FD": str(self._out_write)}

    def child_fds(self) -> tuple[int, int]:
        return self._key_read, self._out_write

    def _drain(self) -> None:
        while chunk := os.read(self._out_read, 1 << 16):
            if len(self._kept) < MAX_OUTCOMES_BYTES:
                self._kept += chunk[: MAX_OUTCOMES_BYTES - len(self._kept)]

    def close(self) -> bytes:
        """After the command: every process that held the pipe is gone, so the
        drain ends once the harness's own ends are closed."""
        os.close(self._key_read)
        os.close(self._out_write)
        self._thread.join()
        os.close(self._out_read)
        return bytes(self._kept)


def run_oracle(task: Task, snapshot: OracleSnapshot, template: Template, sandbox: Sandbox,
               tree: JudgedTree, cell_dir: Path, expectation: Expectation,
               bytecode: Path | None = None) -> OracleResult:
    """Judge ``tree`` (captured from the workspace; changed in place)."""
    stage = cell_dir / f"oracle-{secrets.token_hex(16)}"
    stage.mkdir(mode=0o700)
    try:
        run = _run(task, snapshot, template, sandbox, tree, stage, bytecode=bytecode)
    finally:
        fs.remove_tree(stage)
        if stage.exists():
            raise CellFailure("cleanup-failure", "the staged oracle could not be erased")
    passed, detail = judge_outcomes(run.outcomes, expectation, run.exit_ok)
    if run.timed_out:
        detail = f"the hidden oracle timed out after {task.timeout_s:g}s"
    expected = len(expectation.tests) if expectation.judged_by != EXIT_CODE else None
    return OracleResult(passed=passed, digest=combined_digest(snapshot, template), detail=detail,
                        judged_by=expectation.judged_by, expected_tests=expected)


class ExpectationCache:
    """Each task's expected oracle tests, established once and shared by every
    process of the sweep (under a file lock in the work dir), and, with a store
    (the cache dir's ``expectations/``), by every later sweep with the same
    inputs (:mod:`pytest_wfbench.expectations`)."""

    def __init__(self, work_dir: Path, sandbox: Sandbox, bytecode: Path | None = None,
                 layered: bool = False, store: ExpectationStore | None = None,
                 sweep_id: str = "") -> None:
        self.root = work_dir / "expectations"
        self.root.mkdir(parents=True, exist_ok=True)
        self.sandbox = sandbox
        self.bytecode = bytecode
        self.layered = layered
        self.store = store
        self.sweep_id = sweep_id
        self._known: dict[str, Expectation] = {}

    def inputs(self, task: Task, snapshot: OracleSnapshot, template: Template,
               gold: bytes, sandbox: Sandbox | None = None) -> ExpectationInputs:
        interpreter = (self.bytecode.name if self.bytecode is not None
                       else f"{sys.version}\0{sys.executable}")
        policy = (sandbox or self.sandbox).policy
        return ExpectationInputs(
            template=template.content_key or str(template.path), oracle=snapshot.digest,
            hidden=template.hidden_digest, command=task.oracle.command,
            plugins=tuple(task.oracle.plugins), gold=hashlib.sha256(gold).hexdigest(),
            interpreter=interpreter, sandbox=policy_key(policy.read_only, policy.env))

    def get(self, task: Task, snapshot: OracleSnapshot, template: Template,
            sandbox: Sandbox | None = None) -> Expectation:
        """``sandbox``: the one the task's cells are judged in (its variables and
        read-only paths decide which tests run), the sweep's own by default."""
        if task.oracle.exit_code_only:
            return Expectation(EXIT_CODE, frozenset(), "declared")
        if task.oracle.expect is not None:
            return Expectation("tests", frozenset(task.oracle.expect), "declared")
        sandbox = sandbox or self.sandbox
        gold = task.gold.read_bytes() if task.gold is not None else b""
        key = self.inputs(task, snapshot, template, gold, sandbox).key()
        if key in self._known:
            return self._known[key]
        record = self.root / f"{key}.json"
        with FileLock(str(self.root / f"{key}.lock")):
            if record.exists():
                data = json.loads(record.read_text())
                if "error" in data:
                    raise CellFailure("oracle-unavailable", data["error"])
                expectation = Expectation.from_json(data)
            else:
                try:
                    expectation = self._established(task, snapshot, template, gold, key,
                                                    sandbox)
                except ValueError as error:
                    message = f"the oracle's expected tests could not be established: {error}"
                    record.write_text(json.dumps({"error": message}))
                    raise CellFailure("oracle-unavailable", message) from error
                record.write_text(json.dumps(expectation.to_json()))
        self._known[key] = expectation
        return expectation

    def _established(self, task: Task, snapshot: OracleSnapshot, template: Template,
                     gold: bytes, key: str, sandbox: Sandbox) -> Expectation:
        """From the store when an earlier sweep established it, else by running
        the oracle (and kept in the store)."""
        if self.store is None:
            return self._calibrate(task, snapshot, template, gold, sandbox)
        stored = self.store.load(key)
        if stored is not None:
            return stored
        with self.store.lock(key):
            stored = self.store.load(key)  # a concurrent sweep may have just done it
            if stored is not None:
                return stored
            expectation = self._calibrate(task, snapshot, template, gold, sandbox)
            self.store.save(key, expectation, f"task {task.id}, sweep {self.sweep_id}")
        return expectation

    def _calibrate(self, task: Task, snapshot: OracleSnapshot, template: Template,
                   gold: bytes, sandbox: Sandbox) -> Expectation:
        """Run the oracle on the gold patch (the tests it passes), or collect it on
        the base when the task has no gold patch, in the task's own sandbox."""
        scratch = self.root / f"calibration-{secrets.token_hex(8)}"
        scratch.mkdir(mode=0o700)
        try:
            workspace = make_clone(template, scratch, layered=self.layered)
            if task.gold is not None:
                applied = sandbox.run("git apply --whitespace=nowarn -",
                                      workspace=workspace.mount(), writable=True,
                                      timeout_s=task.timeout_s, stdin=gold)
                if not applied.ok:
                    raise ValueError(f"the gold patch does not apply: {applied.tail(300)}")
            tree = JudgedTree(scratch / "tree", workspace.lower)
            capture_tree(workspace.files, tree.root, TreeBounds(), layered=workspace.layered)
            stage = scratch / "stage"
            stage.mkdir()
            addopts = () if task.gold is not None else ("--collect-only",)
            run = _run(task, snapshot, template, sandbox, tree, stage, addopts,
                       self.bytecode)
            source = "gold" if task.gold is not None else "base collection"
            return expectation_from_run(run.outcomes, run.exit_ok, source)
        finally:
            fs.remove_tree(scratch)
