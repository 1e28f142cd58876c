"""Arms for the audit's generated patches (probes, mutants): their names, and
a script arm that applies a patch.

A probe or mutant has a readable name (``probe-const-none:textstats/core.py:median``)
and an arm name that cell ids and artifact file names can carry: the
characters of ``ARM_NAME_RE``, bounded in length, unique within a task.
"""

from __future__ import annotations

import base64
import hashlib
import re
import textwrap
from collections.abc import Iterable

from pytest_wfbench.tasks.model import ARM_NAME_RE, ArmDefinition

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


# base64 never holds an underscore, so no line of the data ends the heredoc.
PATCH_DELIMITER = "WFBENCH_PATCH"


def patch_steps(patch: str) -> tuple[str, ...]:
    """One script step that applies ``patch`` in the workspace as the gold arm
    does (``git apply --whitespace=nowarn``), failing when it does not apply."""
    data = base64.b64encode(patch.encode("utf-8", "surrogateescape")).decode("ascii")
    lines = "\n".join(textwrap.wrap(data, 76))
    return (f"base64 -d <<'{PATCH_DELIMITER}' | git apply --whitespace=nowarn -\n"
            f"{lines}\n{PATCH_DELIMITER}\n",)


def patch_arm(name: str, patch: str, description: str = "") -> ArmDefinition:
    """A script arm that applies ``patch``: a probe or a mutant run as an arm,
    with no arm kind of its own."""
    return ArmDefinition(name=name, kind="script", steps=patch_steps(patch),
                         description=description)
