"""Arm names for the audit's generated arms (probes, mutants).

A probe or mutant has a readable name (``probe-const-none:textstats/core.py:median``)
and an arm name that cell ids and artifact file names can carry: the
characters of ``ARM_NAME_RE``, bounded in length, unique within a task.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from pytest_wfbench.tasks.model import ARM_NAME_RE

MAX_ARM_NAME = 80
_OUTSIDE = re.compile(r"[^a-z0-9._-]+")


def arm_slug(name: str) -> str:
    """``name`` in arm-name characters; a long one is cut and given a digest of
    the whole, so two long names stay apart."""
    slug = _OUTSIDE.sub("-", name.lower()).strip("-.") or "arm"
    if len(slug) > MAX_ARM_NAME:
        digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        slug = slug[:MAX_ARM_NAME - 9].rstrip("-.") + "-" + digest
    assert ARM_NAME_RE.match(slug), slug
    return slug


def unique_arm_names(names: Iterable[str]) -> list[str]:
    """An arm name for each name, in order; repeats get ``-2``, ``-3``..."""
    taken: set[str] = set()
    arms = []
    for name in names:
        slug = candidate = arm_slug(name)
        count = 1
        while candidate in taken:
            count += 1
            candidate = f"{slug}-{count}"
        taken.add(candidate)
        arms.append(candidate)
    return arms
