"""The audit's arms in a sweep: ``--wfbench-arms hack`` (the exploit battery),
``probes`` (weak-oracle probes) and ``mutants`` (the oracle's mutants) expand,
per task, into arms of their own.

Probes and mutants are derived from the task's gold patch and the files it
changes, read from the task's repository at its ref (a local git repository or
a plain directory; the gold versions by applying the patch with git to copies
of just those files). The derivation is deterministic, so every xdist worker
expands the same cells.
"""

from __future__ import annotations

import functools
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from pytest_wfbench.audit.arms import patch_arm
from pytest_wfbench.audit.battery import hack_arms
from pytest_wfbench.audit.mutants import DEFAULT_MAX_MUTANTS, generate_mutants
from pytest_wfbench.audit.patches import split_patch
from pytest_wfbench.audit.probes import weak_oracle_probes
from pytest_wfbench.tasks import ArmDefinition, Task, TaskFileError

HACK = "hack"
PROBES = "probes"
MUTANTS = "mutants"
GROUPS = (HACK, PROBES, MUTANTS)
ROLES = {HACK: "hack", PROBES: "probe", MUTANTS: "mutant"}


@dataclass(frozen=True)
class AuditSettings:
    max_mutants: int = DEFAULT_MAX_MUTANTS
    seed: int = 0


def _git_show(repo: Path, ref: str, path: str) -> str | None:
    git_dir = repo / ".git" if (repo / ".git").exists() else repo
    result = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{ref}:{path}"],
                            capture_output=True, check=False, timeout=60)
    return result.stdout.decode("utf-8", "surrogateescape") if result.returncode == 0 else None


def _base_text(task: Task, path: str) -> str | None:
    """A file of the task's repository at its ref, or None when it has none."""
    if task.repo.is_url:
        raise TaskFileError(task.source, task.line, "probes and mutants need a local "
                            "repository (a clone of the URL, or a plain directory)",
                            task=task.id, field="repo")
    repo = Path(task.repo.location)
    if (repo / ".git").exists() or (repo / "HEAD").is_file():
        return _git_show(repo, task.ref, path)
    file = repo / path
    return file.read_text(encoding="utf-8", errors="surrogateescape") if file.is_file() \
        else None


@functools.lru_cache(maxsize=256)
def sources(task: Task) -> tuple[str, dict[str, str], dict[str, str]]:
    """The task's gold patch, and the text before and after it of the files it
    changes (a file it adds is not in the first map, one it deletes not in the
    second)."""
    assert task.gold is not None
    patch = task.gold.read_bytes().decode("utf-8", "surrogateescape")
    sections = split_patch(patch)
    base = {s.old_path: text for s in sections if s.old_path is not None
            and (text := _base_text(task, s.old_path)) is not None}
    with tempfile.TemporaryDirectory(prefix="wfbench-audit-") as scratch:
        root = Path(scratch)
        for path, text in base.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text, encoding="utf-8", errors="surrogateescape")
        applied = subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], cwd=root,
                                 input=patch.encode("utf-8", "surrogateescape"),
                                 capture_output=True, check=False, timeout=60)
        if applied.returncode != 0:
            raise TaskFileError(task.source, task.line, "the gold patch does not apply to "
                                f"the files it changes: {applied.stderr.decode(errors='replace')}",
                                task=task.id, field="gold")
        gold = {s.new_path: (root / s.new_path).read_text(encoding="utf-8",
                                                         errors="surrogateescape")
                for s in sections if s.new_path is not None and (root / s.new_path).is_file()}
    return patch, base, gold


def _audit_arm(arm: ArmDefinition, role: str, name: str, description: str) -> ArmDefinition:
    return replace(arm, audit=role, audit_name=name, description=description)


@functools.cache
def _battery() -> tuple[ArmDefinition, ...]:
    return tuple(_audit_arm(arm, "hack", arm.name, arm.description)
                 for arm in hack_arms().values())


def audit_arms(task: Task, group: str, settings: AuditSettings) -> list[ArmDefinition]:
    """The arms ``group`` gives ``task``: none for a review task, and no probe or
    mutant for a task without a gold patch."""
    if task.is_review:
        return []
    if group == HACK:
        return list(_battery())
    if task.gold is None:
        return []
    patch, base, gold = sources(task)
    if group == PROBES:
        return [_audit_arm(patch_arm(probe.arm, probe.patch), "probe", probe.name,
                           probe.description) for probe in weak_oracle_probes(patch, base, gold)]
    mutants = generate_mutants(patch, base, gold, max_count=settings.max_mutants,
                               seed=settings.seed)
    counts = (("candidates", mutants.candidates), ("valid", mutants.valid),
              *sorted(mutants.skipped.items()))
    return [replace(_audit_arm(patch_arm(mutant.arm, mutant.patch), "mutant", mutant.id,
                               mutant.description), audit_counts=counts)
            for mutant in mutants.mutants]
