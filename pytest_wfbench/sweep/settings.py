"""What a sweep is given and decides once: its options (from the command line
and the ini file), its identity (shared with every xdist worker through
``workerinput``), and its task files."""

from __future__ import annotations

import secrets
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_wfbench.cells import (
    KNOWN_ARMS,
)
from pytest_wfbench.shard.plan import Shard
from pytest_wfbench.tasks import (
    DEFAULT_TIMEOUT_S,
    TaskFile,
    load_task_files,
)


@dataclass(frozen=True)
class SweepOptions:
    task_paths: tuple[Path, ...]
    arms: tuple[str, ...] | None
    runs: int
    out_dir: Path | None
    include_expensive: bool
    baseline_arm: str | None
    unsafe_no_sandbox: bool
    admitted_output_chars: int
    keep_workspaces: bool
    secret_env: tuple[str, ...]
    model: str | None = None
    effort: str | None = None
    default_timeout_s: float = DEFAULT_TIMEOUT_S
    base_url: str | None = None
    claude: str | None = None
    plugin_dir: str | None = None
    plugin_version: str | None = None
    rootdir: Path = Path(".")
    random_seed: int | None = None
    scenario_runs: int = 3
    """Runs per (scenario, subject): --wfbench-runs when given, else 3."""
    agent_network: str = "proxy-only"
    suspicious: str = "flag"
    """``flag``: a suspicious resolved cell is resolved and listed; ``fail``: unresolved."""
    cache_dir: Path | None = None
    """What outlives a sweep (the judges' trusted bytecode); None: nothing does."""
    resume: bool = False
    """Continue the sweep in ``out_dir`` (--wfbench-resume)."""
    reuse_dir: Path | None = None
    """An earlier sweep's out dir whose comparator rows may be reused (--wfbench-reuse)."""
    reuse_max_age_days: float = 7.0
    fresh_arms: tuple[str, ...] = ()
    """Arms never reused (--wfbench-fresh-arms); candidate arms never are either."""
    max_cost_usd: float | None = None
    """The cost budget (--wfbench-max-cost): no cell starts past it."""
    price_files: tuple[Path, ...] = ()
    price_lines: tuple[str, ...] = ()
    """Prices beyond the shipped table (--wfbench-prices FILE, ini wfbench_prices)."""
    outage_streak: int = 5
    """Systemic failures in a row that stop the sweep (0: never)."""
    candidate_overlay: Path | None = None
    """Files that make each skill-bearing arm's candidate (--wfbench-candidate-overlay)."""
    promotion: dict[str, Any] = field(default_factory=dict)
    """The promotion gate's policy (decisions.PromotionPolicy's fields)."""
    max_mutants: int = 20
    """Mutants per task for --wfbench-arms mutants."""
    min_kill_rate: float = 0.6
    """Below it, a task's oracle is under-specified (the audit)."""
    clone: str = "auto"
    """``overlay`` (layered clones), ``copy``, or ``auto``: layered where the kernel allows."""
    shard: Shard | None = None
    """--wfbench-shard I/N: this process runs only shard I's tasks (:mod:`pytest_wfbench.shard`)."""
    shard_balance: Path | None = None
    """--wfbench-shard-balance DIR: an earlier out dir whose durations weigh the tasks."""
    sweep_id: str | None = None
    """--wfbench-sweep-id ID: the sweep's id, shared by all its shards (otherwise new)."""


@dataclass(frozen=True)
class SweepIdentity:
    """What the controller decides once and every worker must share."""

    sweep_id: str
    out_dir: Path
    work_dir: Path

    def to_workerinput(self) -> dict[str, str]:
        return {"sweep_id": self.sweep_id, "out_dir": str(self.out_dir),
                "work_dir": str(self.work_dir)}

    @classmethod
    def from_workerinput(cls, data: dict[str, str]) -> SweepIdentity:
        return cls(data["sweep_id"], Path(data["out_dir"]), Path(data["work_dir"]))

    @classmethod
    def new(cls, suite: str, out_dir: Path | None, reports_root: Path,
            sweep_id: str | None = None) -> SweepIdentity:
        """A new sweep, or (``sweep_id`` given) a new session of one, in its out dir."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        sweep_id = sweep_id or f"{stamp}-{secrets.token_hex(4)}"
        out = out_dir if out_dir is not None else reports_root / f"{stamp}-{suite}"
        # A random name, unrelated to the sweep: sessions see their mounts' sources.
        work = Path(tempfile.gettempdir()) / f"wfbench-{secrets.token_hex(8)}"
        return cls(sweep_id, out.resolve(), work)


def load_sweep_files(options: SweepOptions) -> list[TaskFile]:
    return load_task_files(options.task_paths, default_timeout_s=options.default_timeout_s,
                           known_arms=KNOWN_ARMS, cache_dir=options.cache_dir)


def suite_name(task_files: list[TaskFile]) -> str:
    return "+".join(task_file.name for task_file in task_files)


class AgentArmError(Exception):
    """Selected agent arms cannot run as configured; a usage error."""
