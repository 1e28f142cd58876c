"""Cells the plan gives a row (:mod:`.plan`): they run nothing and report the
row's own outcome, so junit and the terminal show every cell of the sweep.

A kept row (resume) is already in results.jsonl; a reused row (from an earlier
sweep) is copied in, with ``reused: true``, its original ``recorded_at`` and its
artifacts, which are copied too (regular files only, never through a link).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
from pathlib import Path
from typing import Any

from pytest_wfbench.control.plan import REUSED, Planned
from pytest_wfbench.row import Row

PLAN = "plan.json"


def row_from_json(data: dict[str, Any]) -> Row:
    """A row as read back (the JSON's ``class`` is the dataclass's ``task_class``)."""
    values = dict(data)
    values["task_class"] = values.pop("class", None)
    fields: dict[str, Any] = {f.name: values.get(f.name) for f in dataclasses.fields(Row)}
    return Row(**fields)


def copy_artifacts(names: list[str], source_dir: Path, out_dir: Path) -> list[str]:
    """Copy an earlier sweep's artifacts (out-dir-relative names) into this one;
    returns the names copied (an artifact that is gone, or not a regular file,
    is left out)."""
    copied = []
    for name in names:
        relative = Path(name)
        if relative.is_absolute() or ".." in relative.parts:
            continue
        source = source_dir / relative
        try:
            info = os.lstat(source)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode) or any(
                (source_dir / Path(*relative.parts[:depth])).is_symlink()
                for depth in range(1, len(relative.parts))):
            continue
        target = out_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target, follow_symlinks=False)
        copied.append(name)
    return copied


def reused_row(planned: Planned, *, sweep_id: str, worker: str, source_dir: Path,
               out_dir: Path, shard: str | None = None) -> dict[str, Any]:
    """The row a reused cell writes: the earlier row, in this sweep (and shard)."""
    assert planned.mode == REUSED
    row = dict(planned.row)
    row["artifacts"] = copy_artifacts(list(row.get("artifacts") or []), source_dir, out_dir)
    row.update(sweep_id=sweep_id, reused=True, worker=worker,
               reused_from=planned.row.get("sweep_id"), shard=shard)
    return row
