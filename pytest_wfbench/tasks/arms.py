"""Arm definitions of a task file (``arm_definitions``, SPEC §4): script arms
and agent arms with their phases, validated like the rest of the file."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from pytest_wfbench.tasks.model import (
    AGENT_ARM_KEYS,
    ARM_KINDS,
    ARM_NAME_RE,
    BUILTIN_ARMS,
    DEFAULT_ALLOWED_TOOLS,
    PHASE_KEYS,
    PHASE_ROLES,
    SCRIPT_ARM_KEYS,
    ArmDefinition,
    PhaseSpec,
)
from pytest_wfbench.tasks.reader import Reader, inside_folder, plain

CANDIDATE_PREFIX = "candidate_"
"""A candidate arm is named after its incumbent (the promotion gate pairs them)."""


def candidate_arm(incumbent: str) -> str:
    """The name of the candidate arm paired with ``incumbent``."""
    return f"{CANDIDATE_PREFIX}{incumbent}"


def incumbent_of(arm: str) -> str | None:
    """The incumbent of a candidate arm (``candidate_X`` -> ``X``), else None."""
    if arm.startswith(CANDIDATE_PREFIX) and len(arm) > len(CANDIDATE_PREFIX):
        return arm[len(CANDIDATE_PREFIX):]
    return None


def candidate_pairs(arms: Iterable[str]) -> list[tuple[str, str]]:
    """(candidate, incumbent) for every candidate arm whose incumbent is among
    ``arms``, sorted by candidate."""
    present = set(arms)
    return sorted((arm, incumbent) for arm in present
                  if (incumbent := incumbent_of(arm)) is not None and incumbent in present)


def phase_spec(reader: Reader, base: Path) -> PhaseSpec:
    reader.check_keys(PHASE_KEYS)
    role = reader.string("role", default="session") or "session"
    if role not in PHASE_ROLES:
        reader.fail(reader.line_of("role"), f"unknown role {role!r} (known: "
                    f"{', '.join(PHASE_ROLES)})", field=reader.name("role"))
    servers = reader.mapping("mcp_servers")
    mcp: list[tuple[str, str]] = []
    if servers is not None:
        for server, node in servers.values.items():
            if not isinstance(node.value, dict):
                servers.fail(node.line, "expected a mapping (the server's configuration)",
                             field=servers.name(server))
            mcp.append((server, json.dumps(plain(node), sort_keys=True, default=str)))
    plugin_dirs = tuple(
        inside_folder(value, base, reader, "plugin_dirs", line)
        for value, line in reader.string_list("plugin_dirs")
    )
    allowed = tuple(value for value, _ in reader.string_list("allowed_tools"))
    name = reader.required_string("name")
    if not ARM_NAME_RE.match(name):
        reader.fail(reader.line_of("name"), f"{name!r} is not a valid phase name (use "
                    "[a-z0-9][a-z0-9._-]*)", field=reader.name("name"))
    return PhaseSpec(
        name=name,
        prompt=reader.required_string("prompt"),
        role=role,
        skill=reader.string("skill"),
        allowed_tools=allowed or DEFAULT_ALLOWED_TOOLS,
        disallowed_tools=tuple(value for value, _ in reader.string_list("disallowed_tools")),
        mcp_servers=tuple(mcp),
        plugin_dirs=plugin_dirs,
    )


def skills_folder(reader: Reader, base: Path) -> Path | None:
    value = reader.string("skills")
    if value is None:
        return None
    folder = inside_folder(value, base, reader, "skills", reader.line_of("skills"))
    if not folder.is_dir():
        reader.fail(reader.line_of("skills"), f"{folder} is not a folder",
                    field=reader.name("skills"))
    return folder


def arm_definitions(reader: Reader | None, base: Path) -> dict[str, ArmDefinition]:
    if reader is None:
        return {}
    arms: dict[str, ArmDefinition] = {}
    for name in reader.values:
        arm = reader.mapping(name)
        assert arm is not None
        field_name = reader.name(name)
        if not ARM_NAME_RE.match(name):
            reader.fail(arm.node.line, "not a valid arm name", field=field_name)
        if name in BUILTIN_ARMS:
            reader.fail(arm.node.line, f"{name!r} is a built-in arm", field=field_name)
        kind = arm.required_string("agent")
        if kind not in ARM_KINDS:
            arm.fail(
                arm.line_of("agent"),
                f"unknown agent {kind!r} (known: {', '.join(ARM_KINDS)})",
                field=arm.name("agent"),
            )
        if kind == "script":
            arm.check_keys(SCRIPT_ARM_KEYS)
            steps = tuple(value for value, _ in arm.string_list("steps"))
            if not steps:
                arm.fail(arm.line_of("steps"), "a script arm needs at least one step",
                         field=arm.name("steps"))
            arms[name] = ArmDefinition(
                name=name, kind=kind, steps=steps, description=arm.string("description") or "",
                network=arm.boolean("network", False), skills=skills_folder(arm, base),
            )
            continue
        arm.check_keys(AGENT_ARM_KEYS)
        node = arm.values.get("phases")
        if node is None or not isinstance(node.value, list) or not node.value:
            arm.fail(arm.line_of("phases"), "an agent arm needs a list of phases",
                     field=arm.name("phases"))
            raise AssertionError  # unreachable: fail() raises
        phases = tuple(
            phase_spec(Reader(arm.path, item, task=None, prefix=f"{arm.name('phases')}[{i}]."),
                   base)
            for i, item in enumerate(node.value)
        )
        names = [phase.name for phase in phases]
        if len(set(names)) != len(names):
            arm.fail(arm.line_of("phases"), f"phase names must be unique, got {names}",
                     field=arm.name("phases"))
        minimal = arm.boolean("minimal", False)
        if minimal and any(p.skill or p.mcp_servers or p.plugin_dirs for p in phases):
            arm.fail(arm.line_of("minimal"), "minimal mode has no skills, MCP servers or "
                     "plugins, but a phase asks for one", field=arm.name("minimal"))
        arms[name] = ArmDefinition(
            name=name, kind=kind, description=arm.string("description") or "", phases=phases,
            skills=skills_folder(arm, base), plugin=arm.boolean("plugin", False),
            minimal=minimal,
        )
    return arms
