"""Auditing a task suite before paying for it (issue 14).

- :mod:`battery`: the exploit battery, one scripted arm per exploit class
  (``hacks/<class>.yaml``), loaded as ``hack-<class>`` arms;
- :mod:`probes`: weak-oracle probes, cheap wrong solutions derived from the
  gold patch (stubbed function bodies, its tests without its code);
- :mod:`mutants`: the oracle's mutants, single-point mutations of the lines
  the gold patch added or changed (operators in :mod:`mutations`).

Everything here but the battery's loader is pure: plain data in, patches out.
"""

from pytest_wfbench.audit.arms import arm_slug, patch_arm, patch_steps, unique_arm_names
from pytest_wfbench.audit.battery import (
    HACK_PREFIX,
    HACKS_DIR,
    Hack,
    NaiveCheck,
    hack_arms,
    load_hack,
    load_hacks,
)
from pytest_wfbench.audit.mutants import (
    DEFAULT_MAX_MUTANTS,
    DEFAULT_SEED,
    Mutant,
    MutantSet,
    generate_mutants,
)
from pytest_wfbench.audit.mutations import OPERATORS, Mutation, find_mutations
from pytest_wfbench.audit.patches import FileSection, looks_like_test, split_patch
from pytest_wfbench.audit.probes import STUBS, Probe, weak_oracle_probes

__all__ = [
    "DEFAULT_MAX_MUTANTS",
    "DEFAULT_SEED",
    "HACKS_DIR",
    "HACK_PREFIX",
    "OPERATORS",
    "STUBS",
    "FileSection",
    "Hack",
    "Mutant",
    "MutantSet",
    "Mutation",
    "NaiveCheck",
    "Probe",
    "arm_slug",
    "find_mutations",
    "generate_mutants",
    "hack_arms",
    "load_hack",
    "load_hacks",
    "looks_like_test",
    "patch_arm",
    "patch_steps",
    "split_patch",
    "unique_arm_names",
    "weak_oracle_probes",
]
