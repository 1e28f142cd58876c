"""The oracle's mutants: the gold patch, with one single-point mutation on a
line it added or changed.

A sound oracle fails ("kills") most mutants. Each mutant is the whole gold
patch (tests included) with one code file's section rendered anew, from the
base text to the mutated gold text. Mutations that do not compile, change
nothing, give the same file as another mutation, or give back the base tree
are skipped and counted. At most ``max_count`` mutants are kept, chosen by
seed: each valid mutant is ranked by a digest of the seed and its id, so the
choice is the same on any machine and a mutant's chance does not depend on
the others. Pure; no I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from pytest_wfbench.audit.arms import unique_arm_names
from pytest_wfbench.audit.mutations import Mutation, apply_mutation, find_mutations
from pytest_wfbench.audit.patches import (
    KEPT_HEADER,
    FileSection,
    assemble,
    looks_like_test,
    split_patch,
)
from pytest_wfbench.audit.pysource import PythonSource, compiles

DEFAULT_MAX_MUTANTS = 20
DEFAULT_SEED = 0
# Why a mutation gives no mutant.
NO_COMPILE = "no-compile"
NO_CHANGE = "no-change"
DUPLICATE = "duplicate"
SAME_AS_BASE = "same-as-base"
SKIP_REASONS = (NO_COMPILE, NO_CHANGE, DUPLICATE, SAME_AS_BASE)


@dataclass(frozen=True)
class Mutant:
    """One mutant: a patch from the base, to run like a gold patch."""

    id: str
    """``mutant-<operator>:<path>:<line>:<column>`` (line and column 1-based, in the gold file)."""
    arm: str
    """An arm name for it (ARM_NAME_RE), unique among the task's mutants."""
    operator: str
    path: str
    line: int
    description: str
    """One line: ``textstats/core.py:29: `<` -> `<=```."""
    patch: str


@dataclass(frozen=True)
class MutantSet:
    """The mutants of one task, and what the generator found and left out."""

    mutants: tuple[Mutant, ...]
    """The chosen mutants (at most ``max_count``), in patch and source order."""
    candidates: int
    """Single-point mutations found on the lines the gold patch added or changed."""
    skipped: Mapping[str, int] = field(default_factory=dict)
    """Per reason in SKIP_REASONS: the candidates that gave no mutant."""
    unparsed: tuple[str, ...] = ()
    """Gold files with added lines that are not Python this interpreter parses."""

    @property
    def valid(self) -> int:
        """Candidates that gave a mutant (before the choice of ``max_count``)."""
        return self.candidates - sum(self.skipped.values())


def _rank(seed: int, mutant_id: str) -> str:
    return hashlib.sha256(f"{seed}\0{mutant_id}".encode("utf-8", "surrogateescape")).hexdigest()


def mutable_sections(sections: list[FileSection], gold: Mapping[str, str]) -> list[FileSection]:
    """The code files a mutation may touch: Python files the gold patch adds
    or changes lines of, that do not look like tests, and whose gold text is given."""
    return [section for section in sections
            if section.new_path is not None and section.new_path.endswith(".py")
            and not section.binary and section.added_lines
            and not looks_like_test(section.new_path) and section.new_path in gold]


def check_mutations(text: str, path: str, mutations: list[Mutation],
                    skipped: dict[str, int]) -> list[Mutation]:
    """The mutations that give a new file which compiles (the first of several
    that give the same file); the others are counted in ``skipped`` by reason."""
    kept: list[Mutation] = []
    seen: set[bytes] = set()  # digests: a large file's mutants are not all kept in memory
    for mutation in mutations:
        mutated = apply_mutation(text, mutation)
        digest = hashlib.sha256(mutated.encode("utf-8", "surrogateescape")).digest()
        if mutated == text:
            reason = NO_CHANGE
        elif digest in seen:
            reason = DUPLICATE
        elif not compiles(mutated, path):
            reason = NO_COMPILE
        else:
            seen.add(digest)
            kept.append(mutation)
            continue
        skipped[reason] = skipped.get(reason, 0) + 1
    return kept


def generate_mutants(gold_patch: str, base: Mapping[str, str], gold: Mapping[str, str], *,
                     max_count: int = DEFAULT_MAX_MUTANTS, seed: int = DEFAULT_SEED) -> MutantSet:
    """The mutants of a task. ``base`` and ``gold`` map the paths of the Python
    files the gold patch changes to their text before and after it (a file the
    patch adds is not in ``base``)."""
    if max_count < 0:
        raise ValueError(f"max_count must be 0 or more, got {max_count}")
    sections = split_patch(gold_patch)
    skipped = dict.fromkeys(SKIP_REASONS, 0)
    unparsed: list[str] = []
    candidates = 0
    valid: list[tuple[str, Mutation, FileSection]] = []
    for section in mutable_sections(sections, gold):
        path = section.new_path
        assert path is not None
        try:
            source = PythonSource(gold[path], path)
        except (SyntaxError, ValueError):
            unparsed.append(path)
            continue
        mutations = find_mutations(source, section.added_lines)
        candidates += len(mutations)
        # A mutation that gives back the base of a one-file patch leaves nothing to apply.
        alone = (len(sections) == 1 and section.old_path == path
                 and not any(line.startswith(KEPT_HEADER) for line in section.header))
        base_text = base.get(path) if alone else None
        ids: set[str] = set()
        for mutation in check_mutations(source.text, path, mutations, skipped):
            if base_text is not None and apply_mutation(source.text, mutation) == base_text:
                skipped[SAME_AS_BASE] += 1
                continue
            mutant_id = base_id = (f"mutant-{mutation.operator}:{path}:{mutation.line}:"
                                   f"{mutation.column + 1}")
            count = 1
            while mutant_id in ids:
                count += 1
                mutant_id = f"{base_id}#{count}"
            ids.add(mutant_id)
            valid.append((mutant_id, mutation, section))
    chosen_ids = {item[0] for item in sorted(valid, key=lambda item: _rank(seed, item[0]))
                  [:max_count]}
    kept = [item for item in valid if item[0] in chosen_ids]
    arms = unique_arm_names(item[0] for item in kept)
    mutants = []
    for (mutant_id, mutation, section), arm in zip(kept, arms, strict=True):
        path = section.path
        mutated = apply_mutation(gold[path], mutation)
        mutants.append(Mutant(
            id=mutant_id, arm=arm, operator=mutation.operator, path=path, line=mutation.line,
            description=f"{path}:{mutation.line}: {mutation.description}",
            patch=assemble(sections, {path: mutated}, base)))
    return MutantSet(mutants=tuple(mutants), candidates=candidates, skipped=skipped,
                     unparsed=tuple(unparsed))
