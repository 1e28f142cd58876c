"""The tool-cost lane's part of a task file: subjects and scenarios."""

from __future__ import annotations

from pytest_wfbench.tasks.model import (
    ARM_NAME_RE,
    HOOK_NAME_RE,
    SCENARIO_KEYS,
    SCENARIO_KINDS,
    SUBJECT_KEYS,
    TASK_ID_RE,
    ScenarioSpec,
    SubjectSpec,
)
from pytest_wfbench.tasks.reader import Reader


def load_subjects(reader: Reader | None) -> dict[str, SubjectSpec]:
    if reader is None:
        return {}
    subjects: dict[str, SubjectSpec] = {}
    for name in reader.values:
        subject = reader.mapping(name)
        assert subject is not None
        if not ARM_NAME_RE.match(name):
            reader.fail(subject.node.line, "not a valid subject name", field=reader.name(name))
        subject.check_keys(SUBJECT_KEYS)
        binary = subject.required_string("binary")
        subject.string("description")  # free text, checked for its type only
        version = tuple(v for v, _ in subject.string_list("version_command"))
        subjects[name] = SubjectSpec(name=name, binary=binary,
                                     driver=subject.string("driver") or name,
                                     version_command=version or (binary, "--version"))
    return subjects


def load_scenarios(reader: Reader, subjects: dict[str, SubjectSpec],
               default_timeout_s: float) -> tuple[ScenarioSpec, ...]:
    if "scenarios" not in reader.values:
        return ()
    node = reader.values["scenarios"]
    if not isinstance(node.value, list) or not node.value:
        reader.fail(node.line, "expected a non-empty list of scenarios", field="scenarios")
    scenarios: list[ScenarioSpec] = []
    seen: dict[str, int] = {}
    for item in node.value:
        raw_id = item.value.get("id") if isinstance(item.value, dict) else None
        scenario_id = raw_id.value if raw_id is not None else None
        entry = Reader(reader.path, item,
                        task=scenario_id if isinstance(scenario_id, str) else None, prefix="")
        entry.check_keys(SCENARIO_KEYS)
        sid = entry.required_string("id")
        if not TASK_ID_RE.match(sid):
            entry.fail(entry.line_of("id"), f"{sid!r} is not a valid scenario id", field="id")
        if sid in seen:
            entry.fail(entry.line_of("id"), f"duplicate scenario id (first at line {seen[sid]})",
                       field="id")
        seen[sid] = item.line
        kind = entry.required_string("kind")
        if kind not in SCENARIO_KINDS:
            entry.fail(entry.line_of("kind"), f"unknown scenario kind {kind!r} (known: "
                       f"{', '.join(SCENARIO_KINDS)})", field="kind")
        names = []
        for name, line in entry.string_list("subjects"):
            if name not in subjects:
                entry.fail(line, f"unknown subject {name!r} (declare it under 'subjects')",
                           field="subjects")
            if name in names:
                entry.fail(line, f"subject {name!r} is listed twice", field="subjects")
            names.append(name)
        if not names:
            entry.fail(item.line, "a scenario needs at least one subject", field="subjects")
        hooks = entry.mapping("remote_hooks")
        for hook, value in (hooks.values.items() if hooks else ()):
            assert hooks is not None
            if not HOOK_NAME_RE.match(hook):
                hooks.fail(value.line, "not a hook name (lowercase letters and dashes)",
                           field=hooks.name(hook))
            if not isinstance(value.value, str):
                hooks.fail(value.line, "expected the hook's shell script as a string",
                           field=hooks.name(hook))
        replays = entry.values.get("fault_replays")
        if replays is not None and (isinstance(replays.value, bool)
                                    or not isinstance(replays.value, int) or replays.value < 0):
            entry.fail(replays.line, "expected a whole number >= 0", field="fault_replays")
        scenarios.append(ScenarioSpec(
            id=sid, kind=kind, scenario_class=entry.string("class", default=kind) or kind,
            subjects=tuple(names),
            remote_hooks=tuple((hook, str(value.value)) for hook, value in
                               (hooks.values.items() if hooks else ())),
            fault_replays=int(replays.value) if replays is not None else 0,
            timeout_s=entry.number("timeout", default_timeout_s),
            expensive=entry.boolean("expensive", False),
            source=reader.path, line=item.line,
        ))
    return tuple(scenarios)

