"""A cell's identity: everything that decides what its measurement means.

Two rows measure the same thing only when every part matches: the task
(prompt and how it is judged), its base commit, its oracle (files, hidden
paths, review labels), the arm (its definition, its skills' and plugin's
bytes), the model and effort, the sandbox backend and the harness version.
Resuming a sweep keeps a row, and reusing an earlier sweep's row saves a
session, only when its identity is the cell's (SPEC §6: every row carries it).

Digests are of content, never of host paths, so a sweep run on another machine
(a CI shard) has the same identities.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pytest_wfbench import __version__
from pytest_wfbench.tasks import ArmDefinition, ScenarioSpec, SubjectSpec, Task
from pytest_wfbench.workspace.template import tree_digest

PARTS = ("task", "base_sha", "oracle", "arm", "model", "effort", "sandbox_backend",
         "harness_version")


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@functools.lru_cache(maxsize=256)
def _content(path: Path) -> str:
    """A file's or folder's content digest (read once per sweep and process)."""
    return tree_digest(path) if path.exists() else "absent"


def task_digest(task: Task) -> str:
    """The task as the arm meets it and as it is judged (not its host paths)."""
    oracle = task.oracle
    return _digest({
        "id": task.id, "kind": task.kind, "prompt": task.prompt, "setup": task.setup,
        "prepare": task.prepare, "verify": task.verify, "ref": task.ref,
        "change": _content(task.change) if task.change is not None else None,
        "oracle": {"command": oracle.command, "plugins": oracle.plugins,
                   "expect": oracle.expect},
        "gold": _content(task.gold) if task.gold is not None else None,
        "timeout_s": task.timeout_s,
        "sandbox": {"read_only": task.sandbox.read_only, "env": task.sandbox.env,
                    "limits": task.sandbox.limits},
    })


def oracle_digest(task: Task, files_digest: str) -> str:
    """The hidden oracle: its files (as digested at sweep start), the hidden
    paths given back to it, and a review task's labels."""
    review = task.oracle.review
    return _digest({"files": files_digest, "hidden_paths": task.oracle.hidden_paths,
                    "labels": review.digest if review is not None else None})


def arm_digest(arm: ArmDefinition, plugin_digest: str | None = None) -> str:
    """The arm's definition with its skills' and plugins' bytes in place of paths."""
    definition = asdict(arm)
    definition["skills"] = _content(arm.skills) if arm.skills is not None else None
    for phase in definition["phases"]:
        phase["plugin_dirs"] = [_content(Path(path)) for path in phase["plugin_dirs"]]
    definition["plugin"] = plugin_digest if arm.plugin else None
    definition["overlay"] = _content(arm.overlay) if arm.overlay is not None else None
    return _digest(definition)


def scenario_digest(scenario: ScenarioSpec) -> str:
    """A tool-cost scenario (its motion, hooks and fault settings)."""
    definition = asdict(scenario)
    definition.pop("source", None)
    definition.pop("line", None)
    return _digest(definition)


def arm_digest_of_subject(subject: SubjectSpec, version: str | None) -> str:
    """A tool-cost subject: its driver, binary and installed version."""
    return _digest({**asdict(subject), "version": version})


@dataclass(frozen=True)
class CellIdentity:
    task: str
    base_sha: str | None
    oracle: str
    arm: str
    model: str | None
    effort: str | None
    sandbox_backend: str
    harness_version: str = __version__

    def to_json(self) -> dict[str, str | None]:
        return asdict(self)


def differences(old: dict[str, Any] | None, new: dict[str, Any]) -> list[str]:
    """The parts of two identities that differ (every part when ``old`` is
    missing, e.g. a row of an older harness)."""
    if not isinstance(old, dict):
        return list(PARTS)
    return [part for part in PARTS if old.get(part) != new.get(part)]
