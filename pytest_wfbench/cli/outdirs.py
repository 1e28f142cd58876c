"""Reading out dirs for the ``wfbench`` command: what a subcommand is given is
checked to be an out dir, and problems name the path and the argument."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_wfbench.cli.errors import USAGE, CliError
from pytest_wfbench.outdir import latest_per_cell
from pytest_wfbench.store import RESULTS, SUPERSEDED, SWEEP, iter_rows


@dataclass
class SweepDir:
    """An out dir as the report sees it: its record and each cell's last row."""

    path: Path
    record: dict[str, Any]
    rows: list[dict[str, Any]]

    @property
    def sweep_id(self) -> str | None:
        value = self.record.get("sweep_id")
        return str(value) if isinstance(value, str) else None

    @property
    def shard(self) -> dict[str, Any] | None:
        shard = self.record.get("shard")
        return shard if isinstance(shard, dict) and shard.get("label") else None

    def superseded(self) -> list[dict[str, Any]]:
        return list(iter_rows(self.path / SUPERSEDED))


def read_record(path: Path, argument: str) -> dict[str, Any]:
    """sweep.json, or {} when the out dir has none (an older harness's)."""
    file = path / SWEEP
    if not file.exists():
        return {}
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise CliError(f"{argument} {path}: {file} cannot be read as JSON: {error}",
                       USAGE) from error
    if not isinstance(data, dict):
        raise CliError(f"{argument} {path}: {file} is not a JSON object", USAGE)
    return data


def read_sweep_dir(path: Path, argument: str = "DIR") -> SweepDir:
    """The out dir at ``path`` (given as ``argument``), or a usage error saying
    what it lacks."""
    if not path.is_dir():
        raise CliError(f"{argument} {path}: no such directory", USAGE)
    if not (path / RESULTS).is_file():
        raise CliError(f"{argument} {path}: not the out dir of a sweep (it has no {RESULTS})",
                       USAGE)
    record = read_record(path, argument)
    sweep_id = record.get("sweep_id") if isinstance(record.get("sweep_id"), str) else None
    if sweep_id is None:
        # An out dir without sweep.json: its rows name their sweep.
        first = next(iter_rows(path / RESULTS), None)
        sweep_id = first.get("sweep_id") if first else None
        if isinstance(sweep_id, str):
            record = {**record, "sweep_id": sweep_id}
    rows = latest_per_cell(iter_rows(path / RESULTS, sweep_id if isinstance(sweep_id, str)
                                     else None))
    return SweepDir(path=path, record=record, rows=rows)
