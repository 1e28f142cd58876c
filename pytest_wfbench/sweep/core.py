"""The sweep: one pytest session's shared state, built the same way in the
controller and in every xdist worker (which receive the controller's sweep id,
out dir and work dir through ``workerinput``)."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import platform
import secrets
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_wfbench import __version__
from pytest_wfbench.agents import AgentSettings, adapter_for
from pytest_wfbench.agents.claude import api_key_from_environment, find_cli
from pytest_wfbench.audit.expand import AuditSettings
from pytest_wfbench.cells import (
    AnyCell,
    Cell,
    ScenarioCell,
    expand,
    expand_scenarios,
)
from pytest_wfbench.control.budget import Ledger
from pytest_wfbench.control.plan import REUSED, Plan, Planned
from pytest_wfbench.control.progress import StageReporter
from pytest_wfbench.control.replay import PLAN, reused_row, row_from_json
from pytest_wfbench.expectations import ExpectationStore
from pytest_wfbench.git import GitError
from pytest_wfbench.identity import (
    CellIdentity,
    arm_digest,
    arm_digest_of_subject,
    oracle_digest,
    scenario_digest,
    task_digest,
)
from pytest_wfbench.judge.bytecode import ensure_bytecode, handed_over
from pytest_wfbench.oracle import ExpectationCache, OracleSnapshot
from pytest_wfbench.redact import Redactor, url_credentials
from pytest_wfbench.row import CellRecord, Row, make_row
from pytest_wfbench.sandbox import Sandbox, SandboxPolicy, make_sandbox
from pytest_wfbench.shard.glue import apply_shard
from pytest_wfbench.store import ResultsStore
from pytest_wfbench.sweep.checks import check_agent_arms, check_prices
from pytest_wfbench.sweep.settings import (
    SweepIdentity,
    SweepOptions,
    load_sweep_files,
    suite_name,
)
from pytest_wfbench.tasks import (
    SandboxSpec,
    Task,
    TaskFile,
    TaskFileError,
)
from pytest_wfbench.workspace.capture import TreeBounds
from pytest_wfbench.workspace.fs import remove_tree
from pytest_wfbench.workspace.template import TemplateCache, TemplateError, tree_digest

if TYPE_CHECKING:
    from pytest_wfbench.agents.proxy import ApiProxy


class Sweep:
    """Loaded task files, expanded cells, and the services every cell uses."""

    def __init__(self, options: SweepOptions, identity: SweepIdentity, *, worker: str,
                 task_files: list[TaskFile] | None = None) -> None:
        self.options = options
        self.identity = identity
        self.worker = worker
        self.task_files: list[TaskFile] = (
            task_files if task_files is not None else load_sweep_files(options))
        self.cells: dict[Path, list[Cell]] = {
            task_file.path: expand(task_file, options.arms, options.runs,
                                   options.candidate_overlay,
                                   AuditSettings(options.max_mutants, options.random_seed or 0))
            for task_file in self.task_files
        }
        self.scenario_cells: dict[Path, list[ScenarioCell]] = {
            task_file.path: expand_scenarios(task_file, options.scenario_runs,
                                            options.random_seed)
            for task_file in self.task_files
        }
        # --wfbench-shard: only this shard's tasks (the same choice in every process).
        self.cells, self.scenario_cells, self.shard_plan = apply_shard(
            self.cells, self.scenario_cells, options.shard, options.shard_balance)
        digests: dict[tuple[Path | None, str | None], OracleSnapshot] = {}
        self.oracles: dict[str, OracleSnapshot] = {}
        for task_file in self.task_files:
            for task in task_file.tasks:
                # Tasks often share an oracle folder: digest each folder once
                # (with a review task's labels, which are part of its oracle).
                key = (task.oracle.files, task.oracle.review.digest if task.oracle.review
                       else None)
                known = digests.get(key)
                try:
                    snapshot = (OracleSnapshot(task.id, known.files, known.digest) if known
                                else OracleSnapshot.capture(task))
                except OSError as error:
                    raise TaskFileError(task.source, task.line, f"the oracle files cannot be "
                                        f"read: {error}", task=task.id,
                                        field="oracle.files") from error
                digests[key] = snapshot
                self.oracles[task.id] = snapshot
        # The credentials of a repository URL are secrets given to the harness too.
        given = Redactor.from_environment(options.secret_env).secrets
        self.redactor = Redactor([*given, *(secret for file in self.task_files
                                            for task in file.tasks
                                            for secret in url_credentials(task.repo.location))])
        self.store = ResultsStore(identity.out_dir, self.redactor)
        self._sandbox: Sandbox | None = None
        self._templates: TemplateCache | None = None
        self._expectations: ExpectationCache | None = None
        self._bytecode: Path | None = None
        self._layered: bool | None = None
        self._plan: Plan | None = None
        self.results_offset = 0
        """Controller: results.jsonl's size when this session started (rows past it
        are this session's)."""
        self._base_shas: dict[str, str] = {}
        self._proxy: ApiProxy | None = None
        self._task_sandboxes: dict[SandboxSpec, Sandbox] = {}
        self.agent_settings = AgentSettings(
            model=options.model, effort=options.effort, api_key=api_key_from_environment(),
            base_url=options.base_url, cli=find_cli(options.claude, options.rootdir),
            network=options.agent_network)
        agent_arms = [cell.arm for cs in self.cells.values() for cell in cs if cell.arm.is_agent]
        self.unavailable: dict[str, str | None] = {
            kind: adapter_for(kind).unavailable(self.agent_settings)
            for kind in {arm.kind for arm in agent_arms}}
        self.plugin = check_agent_arms(options, agent_arms, self.unavailable)
        self.prices = check_prices(options, agent_arms)
        self.ledger = (Ledger(identity.work_dir, options.max_cost_usd)
                       if options.max_cost_usd is not None else None)
        self.stages = StageReporter(identity.work_dir, worker)

    def adopt_bytecode(self, given: dict[str, object] | None) -> None:
        """On a worker: judge with the bytecode tree the controller found at
        sweep start (:func:`judge.bytecode.handed_over`), when it is this
        interpreter's; otherwise :meth:`bytecode` keys one."""
        if self.options.cache_dir is not None:
            self._bytecode = handed_over(self.options.cache_dir, given)

    def expect_oracle_digests(self, digests: dict[str, str]) -> None:
        """On a worker: judge with the oracle the controller captured at sweep
        start; files changed since then make the staging check fail."""
        for task_id, digest in digests.items():
            if task_id in self.oracles:
                snapshot = self.oracles[task_id]
                self.oracles[task_id] = OracleSnapshot(snapshot.task_id, snapshot.files, digest)

    def skip_reason(self, cell: AnyCell) -> str | None:
        if isinstance(cell, ScenarioCell):
            if cell.scenario.expensive and not self.options.include_expensive:
                return "expensive scenario: pass --wfbench-include-expensive to run it"
            from pytest_wfbench import lanes  # the tool-cost lane's drivers: its cells only

            return lanes.unavailable(cell.subject, cell.scenario)
        return cell.skip_reason(self.options.include_expensive)

    def skip_record(self, cell: AnyCell, reason: str) -> CellRecord:
        record = CellRecord(cell_id=cell.cell_id, started=0.0, skip_reason=reason)
        if isinstance(cell, ScenarioCell):
            from pytest_wfbench import lanes

            record.lane = "tool-cost"
            record.steps = [lanes.skipped_step(reason)]
            record.random_seed = cell.random_seed
            record.transport = lanes.git.TRANSPORTS.get(cell.scenario.kind)
            record.extras["scenario_kind"] = cell.scenario.kind
        return record

    def all_cells(self) -> dict[str, AnyCell]:
        found: dict[str, AnyCell] = {}
        for path in self.cells:
            found.update({c.cell_id: c for c in self.cells[path]})
            found.update({c.cell_id: c for c in self.scenario_cells[path]})
        return found

    def environment(self) -> dict[str, Any]:
        """Recorded once per sweep: the machine and every subject's version."""
        return {
            "host": platform.node(), "platform": platform.platform(),
            "python": platform.python_version(), "harness_version": __version__,
            "cpu_count": os.cpu_count(), "random_seed": self.options.random_seed,
            "subjects": self.subject_versions,
        }

    @property
    def suite_name(self) -> str:
        return suite_name(self.task_files)

    @property
    def sweep_id(self) -> str:
        return self.identity.sweep_id

    def start(self) -> None:
        """Create the out dir and the work dir (controller and workers alike)."""
        self.store.prepare()
        self.identity.work_dir.mkdir(mode=0o700, parents=True, exist_ok=True)

    def check_read_only_paths(self) -> None:
        """Controller, before any cell: no task's ``sandbox.read_only`` path (bound
        into every command of its cells) may hold, or lie inside, what only the
        harness reads: the cache dir (templates' hidden files, expected tests),
        the work dir (staged oracles, other cells), the out dir, or any task's
        repository, task file, oracle files, gold patch. A usage error names the
        task and the path."""
        guarded: list[tuple[Path, str]] = [(self.identity.work_dir, "the sweep's work dir"),
                                           (self.identity.out_dir, "the out dir")]
        if self.options.cache_dir is not None:
            guarded.append((self.options.cache_dir, "the cache dir"))
        tasks = [task for task_file in self.task_files for task in task_file.tasks]
        for task in tasks:
            if not task.repo.is_url:
                guarded.append((Path(task.repo.location), f"task {task.id!r}'s repository"))
            guarded.append((task.source, f"task {task.id!r}'s task file"))
            for path, what in ((task.oracle.files, "oracle files"), (task.gold, "gold patch")):
                if path is not None:
                    guarded.append((path, f"task {task.id!r}'s {what}"))
        resolved = [(Path(os.path.realpath(path)), what) for path, what in guarded]
        for task in tasks:
            for value in task.sandbox.read_only:
                exposed = Path(os.path.realpath(value))
                for path, what in resolved:
                    if path.is_relative_to(exposed) or exposed.is_relative_to(path):
                        raise TaskFileError(
                            task.source, task.line,
                            f"{value!r} would show every sandbox of the task {what} "
                            f"({path}): name a folder that holds none of it",
                            task=task.id, field="sandbox.read_only")

    def resolve_refs(self) -> None:
        """Controller, before the out dir is made: every task's ref resolves to a
        commit (once per sweep; workers read the same record), or the sweep is a
        usage error naming the task."""
        self.identity.work_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        for task_file in self.task_files:
            for task in task_file.tasks:
                try:
                    self.templates().resolve(task)
                except (TemplateError, GitError, OSError) as error:
                    raise TaskFileError(task.source, task.line, str(error), task=task.id,
                                        field="ref") from error

    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            policy = SandboxPolicy()
            self._sandbox = make_sandbox(policy, self.identity.work_dir / "sandbox",
                                         unsafe_host=self.options.unsafe_no_sandbox)
        return self._sandbox

    def sandbox_for(self, cell: Cell) -> Sandbox:
        """A sandbox with the task's own read-only paths and variables."""
        base = self.sandbox()
        spec = cell.task.sandbox
        if not spec.read_only and not spec.env:
            return base
        if spec not in self._task_sandboxes:
            policy = SandboxPolicy(read_only=spec.read_only, env=dict(spec.env))
            self._task_sandboxes[spec] = make_sandbox(
                policy, self.identity.work_dir / "sandbox",
                unsafe_host=self.options.unsafe_no_sandbox)
        return self._task_sandboxes[spec]

    def api_proxy(self) -> ApiProxy:
        """This process's API proxy for agent sessions, started on first use."""
        if self._proxy is None:
            assert self.agent_settings.api_key, "agent cells are skips without a key"
            from pytest_wfbench.agents.proxy import ApiProxy  # a server: agent sweeps only

            self._proxy = ApiProxy(self.agent_settings.base_url, self.agent_settings.api_key)
        return self._proxy

    def expectations(self) -> ExpectationCache:
        """Each task's expected oracle tests, established once (kept in the cache
        dir for later sweeps)."""
        if self._expectations is None:
            store = (ExpectationStore(self.options.cache_dir / "expectations")
                     if self.options.cache_dir is not None else None)
            self._expectations = ExpectationCache(self.identity.work_dir, self.sandbox(),
                                                  self.bytecode(), self.layered_clones(),
                                                  store, self.sweep_id)
        return self._expectations

    def clone_unavailable(self) -> str | None:
        """Why clones cannot be layered here (then they are copies), or None."""
        if self.options.clone == "copy":
            return "--wfbench-clone copy"
        return self.sandbox().overlay_unavailable()

    def layered_clones(self) -> bool:
        """Whether cells get layered workspaces (an overlay over the template,
        whose cost does not grow with the repository) rather than copies."""
        if self._layered is None:
            self._layered = self.clone_unavailable() is None
        return self._layered

    def bytecode(self) -> Path | None:
        """The trusted bytecode tree the judges load (built once per machine, in
        the cache dir), or None with ``--wfbench-cache-dir none``."""
        if self._bytecode is None and self.options.cache_dir is not None:
            self._bytecode = ensure_bytecode(self.options.cache_dir)
        return self._bytecode

    @staticmethod
    def tree_bounds(task: Task) -> TreeBounds:
        """How much of a cell's workspace the harness reads: the task's limits."""
        limits = task.sandbox.resolved_limits()
        return TreeBounds(max_entries=limits.files, max_bytes=limits.disk)

    def templates(self) -> TemplateCache:
        if self._templates is None:
            store = (self.options.cache_dir / "templates"
                     if self.options.cache_dir is not None else None)
            self._templates = TemplateCache(self.identity.work_dir, self.sandbox(), store,
                                            self.sweep_id)
        return self._templates

    @functools.cached_property
    def subject_versions(self) -> dict[str, str | None]:
        """Each declared subject's version (None when it is not installed)."""
        subjects = {name: subject for task_file in self.task_files
                    for name, subject in task_file.subjects.items()}
        if not subjects:
            return {}
        from pytest_wfbench import lanes

        return {name: lanes.subject_version(subject) if shutil.which(subject.binary) else None
                for name, subject in subjects.items()}

    def session_completed(self, cell: AnyCell) -> None:
        """Note, outside any process that may die judging the cell, that its
        session completed: a crash from here on cannot make it excluded."""
        self._append_line(self.identity.work_dir / "sessions.tsv", f"{cell.cell_id}\n")

    def completed_sessions(self) -> set[str]:
        path = self.identity.work_dir / "sessions.tsv"
        return set(path.read_text().split()) if path.exists() else set()

    @staticmethod
    def _append_line(path: Path, line: str) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def cell_dir(self, cell: AnyCell) -> Path:
        """A new private directory for one cell. Its name is random, so that a
        session cannot tell its task or arm from where it is mounted; the work
        dir's ``cells.tsv`` (never mounted) says which cell is where."""
        cells = self.identity.work_dir / "cells"
        cells.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = cells / secrets.token_hex(8)
        path.mkdir(mode=0o700)
        self._append_line(self.identity.work_dir / "cells.tsv", f"{cell.cell_id}\t{path.name}\n")
        return path

    @functools.cache  # noqa: B019 - one sweep per process
    def overlay_digest(self) -> str | None:
        """The candidate overlay's content digest (in every candidate row)."""
        overlay = self.options.candidate_overlay
        return tree_digest(overlay) if overlay is not None else None

    def set_plan(self, plan: Plan) -> None:
        self._plan = plan

    def plan(self) -> Plan:
        """Which cells keep or reuse a row (the controller's decision, read from the
        work dir once)."""
        if self._plan is None:
            path = self.identity.work_dir / PLAN
            self._plan = (Plan.from_json(json.loads(path.read_text(encoding="utf-8")))
                          if path.exists() else Plan())
        return self._plan

    def replay(self, cell: AnyCell, planned: Planned) -> Row:
        """A planned cell's row: the kept one as it is, or a reused one copied in."""
        if planned.mode == REUSED:
            assert self.options.reuse_dir is not None
            data = reused_row(planned, sweep_id=self.sweep_id, worker=self.worker,
                              source_dir=self.options.reuse_dir, out_dir=self.identity.out_dir,
                              shard=self.shard_label)
            self.store.append(data)
            return row_from_json(self.redactor.data(data))
        return row_from_json(planned.row)

    def cell_identity(self, cell: AnyCell) -> CellIdentity:
        """What decides what the cell's measurement means (:mod:`identity`)."""
        if isinstance(cell, ScenarioCell):
            version = self.subject_versions.get(cell.subject.name)
            return CellIdentity(
                task=scenario_digest(cell.scenario), base_sha=None, oracle="",
                arm=arm_digest_of_subject(cell.subject, version), model=None, effort=None,
                sandbox_backend="host")
        task, arm = cell.task, cell.arm
        if task.id not in self._base_shas:
            self._base_shas[task.id] = self.templates().resolve(task)[1]
        plugin = self.plugin.digest if self.plugin is not None else None
        return CellIdentity(
            task=task_digest(task), base_sha=self._base_shas[task.id],
            oracle=oracle_digest(task, self.oracles[task.id].digest),
            arm=arm_digest(arm, plugin),
            model=self.agent_settings.model if arm.is_agent else None,
            effort=self.agent_settings.effort if arm.is_agent else None,
            sandbox_backend=self.sandbox_backend)

    def build_row(self, cell: AnyCell, record: CellRecord, duration_s: float) -> Row:
        """The cell's row as it stands now (redacted, not yet written)."""
        # Tool-cost subjects are trusted commands, run on the host: say so.
        backend = "host" if record.lane == "tool-cost" else self.sandbox_backend
        row = make_row(
            cell=cell, record=record, sweep_id=self.sweep_id, sandbox_backend=backend,
            worker=self.worker, duration_s=duration_s,
            identity=self.cell_identity(cell).to_json(), shard=self.shard_label,
        )
        # Everything a row says reaches terminals, junit and reports: redacted, and
        # with the arm's control sequences made inert.
        return Row(**self.redactor.data(dataclasses.asdict(row)))

    def record_rows(self, cells: list[tuple[AnyCell, CellRecord]]) -> None:
        """Rows of cells that did not run, written together (one lock, one fsync)."""
        rows = [self.build_row(cell, record, 0.0) for cell, record in cells]
        self.store.append_many([row.to_json() for row in rows])

    def record_row(self, cell: AnyCell, record: CellRecord, duration_s: float) -> Row:
        """Build the cell's row and append it at once (the row's own stage time
        is what building it took; the append follows)."""
        started = time.monotonic()
        row = self.build_row(cell, record, duration_s)
        row.stage_ms["row"] = round((time.monotonic() - started) * 1000, 1)
        self.store.append(row.to_json())
        record.row = row
        return row

    @property
    def shard_label(self) -> str | None:
        """``I/N`` with --wfbench-shard (recorded in every row), else None."""
        return self.options.shard.label if self.options.shard is not None else None

    @property
    def sandbox_backend(self) -> str:
        return "unsafe-host" if self.options.unsafe_no_sandbox else "bubblewrap"

    def close(self) -> None:
        """Every process: stop what this process started."""
        if self._proxy is not None:
            self._proxy.close()
            self._proxy = None

    def finish(self) -> None:
        """Controller only: remove the work dir (templates, clones)."""
        if not self.options.keep_workspaces:
            remove_tree(self.identity.work_dir)
