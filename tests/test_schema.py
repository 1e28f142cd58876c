"""The shipped JSON Schema for task files agrees with the loader (SPEC §2)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from pytest_wfbench.tasks import (
    AGENT_ARM_KEYS,
    ARM_KINDS,
    CATEGORIES,
    LIMIT_KEYS,
    ORACLE_KEYS,
    PHASE_KEYS,
    PHASE_ROLES,
    REVIEW_LABEL_KEYS,
    REVIEW_ORACLE_KEYS,
    REVIEW_TASK_KEYS,
    SANDBOX_KEYS,
    SCENARIO_KEYS,
    SCENARIO_KINDS,
    SCRIPT_ARM_KEYS,
    SEVERITIES,
    SUBJECT_KEYS,
    TASK_KEYS,
    TASK_KINDS,
    TOP_KEYS,
    VERDICTS,
    TaskFileError,
    load_task_file,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO = REPO_ROOT / "tasks" / "demo.yaml"
VCS_LOOP = REPO_ROOT / "tasks" / "vcs-loop.yaml"

Doc = dict[str, Any]


def _schema() -> Doc:
    text = (files("pytest_wfbench") / "task-file.schema.json").read_text(encoding="utf-8")
    schema: Doc = json.loads(text)
    return schema


@pytest.fixture(scope="module")
def schema() -> Doc:
    return _schema()


@pytest.fixture(scope="module")
def validator(schema: Doc) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema)


def _base() -> Doc:
    """A minimal valid task file; its only file-system reference is ``repo``."""
    return {
        "version": 1,
        "repo": "repo",
        "tasks": [
            {
                "id": "t1",
                "prompt": "Do the thing.",
                "verify": "true",
                "oracle": {"command": "true"},
            }
        ],
    }


CHANGE_PATCH = """\
diff --git a/a.py b/a.py
--- a/a.py
+++ b/a.py
@@ -1,2 +1,2 @@
 def f(x):
-    return x
+    return -x
"""


def _review_task() -> Doc:
    """A valid review task; its change is ``change.patch`` beside the task file."""
    return {
        "id": "r1",
        "kind": "review",
        "prompt": "Negate f.",
        "change": "change.patch",
        "oracle": {
            "findings": [{"path": "a.py", "line": 2, "severity": "high",
                          "category": "correctness", "blocking": True}],
            "verdict": "request_changes",
        },
    }


def _write(tmp_path: Path, doc: Doc) -> Path:
    """Write ``doc`` as a task file, with the repo folder and change patch it refers to."""
    (tmp_path / "repo").mkdir(exist_ok=True)
    (tmp_path / "change.patch").write_text(CHANGE_PATCH, encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _schema_errors(validator: jsonschema.Draft202012Validator, path: Path) -> list[str]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [error.message for error in validator.iter_errors(document)]


def _task(doc: Doc) -> Doc:
    task: Doc = doc["tasks"][0]
    return task


def _set_top(key: str, value: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        doc[key] = value

    return mutate


def _set_task(key: str, value: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        _task(doc)[key] = value

    return mutate


def _drop_task(key: str) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        del _task(doc)[key]

    return mutate


def _unknown_oracle_key(doc: Doc) -> None:
    _task(doc)["oracle"]["bogus"] = "x"


def _arm_without_steps(doc: Doc) -> None:
    doc["arm_definitions"] = {"my-arm": {"agent": "script"}}


def _claude_arm(**phase: Any) -> Callable[[Doc], None]:
    """An agent arm ``my-flow`` with one phase: name and prompt, plus ``phase``."""

    def mutate(doc: Doc) -> None:
        doc["arm_definitions"] = {
            "my-flow": {
                "agent": "claude",
                "phases": [{"name": "work", "prompt": "{task}", **phase}],
            }
        }

    return mutate


def _agent_arm_without_phases(doc: Doc) -> None:
    doc["arm_definitions"] = {"my-flow": {"agent": "claude", "description": "no phases"}}


def _scenario(**fields: Any) -> Callable[[Doc], None]:
    """A subject ``git`` and one scenario ``loop`` performed by it, plus ``fields``."""

    def mutate(doc: Doc) -> None:
        doc["subjects"] = {"git": {"binary": "git"}}
        doc["scenarios"] = [
            {"id": "loop", "kind": "task_loop", "subjects": ["git"], **fields}
        ]

    return mutate


def _drop_top(key: str) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        del doc[key]

    return mutate


def _review(mutate: Callable[[Doc], None]) -> Callable[[Doc], None]:
    """The base document with a review task in place of its task, then ``mutate``d."""

    def apply(doc: Doc) -> None:
        doc["tasks"] = [_review_task()]
        mutate(doc)

    return apply


def _set_label(key: str, value: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        _task(doc)["oracle"]["findings"][0][key] = value

    return mutate


def _drop_label(key: str) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        del _task(doc)["oracle"]["findings"][0][key]

    return mutate


def _set_review_oracle(key: str, value: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        _task(doc)["oracle"][key] = value

    return mutate


def _clean_control(verdict: str) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        _task(doc)["oracle"] = {"findings": [], "verdict": verdict}

    return mutate


def _drop_review_oracle(key: str) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        del _task(doc)["oracle"][key]

    return mutate


def _unknown_verdict(doc: Doc) -> None:
    _task(doc)["oracle"]["findings"][0]["blocking"] = False  # no rule on the verdict then
    _task(doc)["oracle"]["verdict"] = "lgtm"


def _findings_on_change_task(doc: Doc) -> None:
    _task(doc)["oracle"]["findings"] = []


# (case id, mutation of the valid base document, field the loader must blame)
INVALID: list[tuple[str, Callable[[Doc], None], str]] = [
    ("unknown-top-level-key", _set_top("extra", 1), "extra"),
    ("unknown-task-key", _set_task("bogus", "x"), "bogus"),
    ("unknown-oracle-key", _unknown_oracle_key, "oracle.bogus"),
    ("task-id-with-space", _set_task("id", "add median"), "id"),
    ("version-2", _set_top("version", 2), "version"),
    ("missing-oracle", _drop_task("oracle"), "oracle"),
    ("missing-verify", _drop_task("verify"), "verify"),
    ("script-arm-without-steps", _arm_without_steps, "arm_definitions.my-arm.steps"),
    ("unknown-phase-key", _claude_arm(bogus="x"), "arm_definitions.my-flow.phases[0].bogus"),
    ("unknown-phase-role", _claude_arm(role="review"), "arm_definitions.my-flow.phases[0].role"),
    ("agent-arm-without-phases", _agent_arm_without_phases, "arm_definitions.my-flow.phases"),
    ("negative-timeout", _set_task("timeout", -5), "timeout"),
    ("relative-read-only", _set_task("sandbox", {"read_only": ["opt/tools"]}), "sandbox.read_only"),
    ("no-tasks-and-no-scenarios", _drop_top("tasks"), "tasks"),
    ("unknown-scenario-key", _scenario(bogus="x"), "bogus"),
    ("unknown-scenario-kind", _scenario(kind="bisect"), "kind"),
    ("unknown-task-kind", _set_task("kind", "audit"), "kind"),
    ("change-on-a-change-task", _set_task("change", "change.patch"), "change"),
    ("findings-on-a-change-task", _findings_on_change_task, "oracle.findings"),
    ("review-with-verify", _review(_set_task("verify", "true")), "verify"),
    ("review-with-gold", _review(_set_task("gold", "change.patch")), "gold"),
    ("review-unknown-key", _review(_set_task("bogus", 1)), "bogus"),
    ("review-without-change", _review(_drop_task("change")), "change"),
    ("review-without-oracle", _review(_drop_task("oracle")), "oracle"),
    ("review-without-prompt", _review(_drop_task("prompt")), "prompt"),
    ("review-oracle-command", _review(_set_review_oracle("command", "true")), "oracle.command"),
    ("review-oracle-files", _review(_set_review_oracle("files", "x/")), "oracle.files"),
    ("review-without-verdict", _review(_drop_review_oracle("verdict")), "oracle.verdict"),
    ("review-without-findings", _review(_drop_review_oracle("findings")), "oracle.findings"),
    ("review-unknown-verdict", _review(_unknown_verdict), "oracle.verdict"),
    ("clean-control-not-approve", _review(_clean_control("comment")), "oracle.verdict"),
    ("blocking-finding-approved", _review(_set_review_oracle("verdict", "approve")),
     "oracle.verdict"),
    ("label-unknown-key", _review(_set_label("note", "x")), "oracle.findings[0].note"),
    ("label-bad-severity", _review(_set_label("severity", "blocker")),
     "oracle.findings[0].severity"),
    ("label-bad-category", _review(_set_label("category", "style")),
     "oracle.findings[0].category"),
    ("label-line-0", _review(_set_label("line", 0)), "oracle.findings[0].line"),
    ("label-line-string", _review(_set_label("line", "2")), "oracle.findings[0].line"),
    ("label-absolute-path", _review(_set_label("path", "/workspace/a.py")),
     "oracle.findings[0].path"),
    ("label-dot-path", _review(_set_label("path", "./a.py")), "oracle.findings[0].path"),
    ("label-without-blocking", _review(_drop_label("blocking")), "oracle.findings[0].blocking"),
    ("label-blocking-string", _review(_set_label("blocking", "yes")),
     "oracle.findings[0].blocking"),
    ("label-bad-id", _review(_set_label("id", "no spaces")), "oracle.findings[0].id"),
]


def test_schema_is_a_valid_draft_2020_12_schema(schema: Doc) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["properties"]["version"]["const"] == 1


def test_demo_task_file_validates(validator: jsonschema.Draft202012Validator) -> None:
    assert _schema_errors(validator, DEMO) == []


def test_demo_task_file_has_its_review_tasks() -> None:
    loaded = load_task_file(DEMO)
    assert loaded.name == "demo"
    assert [(task.kind, task.oracle.review is not None and task.oracle.review.clean_control)
            for task in loaded.tasks] == [("change", False)] * 3 + [("review", False),
                                                                   ("review", True)]


def test_review_task_is_valid_for_both(
    tmp_path: Path, validator: jsonschema.Draft202012Validator
) -> None:
    doc = _base()
    review = _review_task()
    review.update({"class": "bug", "ref": "HEAD", "setup": "true", "prepare": "true",
                   "timeout": 60, "expensive": False, "sandbox": {"env": {"X": "1"}}})
    review["oracle"]["findings"].append(
        {"id": "second.one", "path": "a.py", "line": 1, "end_line": 2, "severity": "low",
         "category": "tests", "blocking": False})
    doc["tasks"] = [{**_task(doc), "kind": "change"}, review,
                    {**_review_task(), "id": "r2",
                     "oracle": {"findings": [], "verdict": "approve"}}]
    path = _write(tmp_path, doc)
    assert _schema_errors(validator, path) == []
    change, bug, clean = load_task_file(path).tasks
    assert (change.kind, change.is_review, change.change) == ("change", False, None)
    assert (bug.kind, bug.is_review, bug.change) == ("review", True, tmp_path / "change.patch")
    assert (bug.verify, bug.oracle.command, bug.gold, bug.task_class) == ("", "", None, "bug")
    assert bug.oracle.review is not None and clean.oracle.review is not None
    assert [label.end_line for label in bug.oracle.review.findings] == [2, 2]
    assert clean.oracle.review.clean_control and clean.task_class == "review"

def test_vcs_loop_task_file_validates(validator: jsonschema.Draft202012Validator) -> None:
    assert _schema_errors(validator, VCS_LOOP) == []
    loaded = load_task_file(VCS_LOOP)
    assert [scenario.kind for scenario in loaded.scenarios] == list(SCENARIO_KINDS)
    assert loaded.tasks == ()


def test_base_document_is_valid_for_both(
    tmp_path: Path, validator: jsonschema.Draft202012Validator
) -> None:
    path = _write(tmp_path, _base())
    assert _schema_errors(validator, path) == []
    assert [task.id for task in load_task_file(path).tasks] == ["t1"]


def test_optional_fields_are_valid_for_both(
    tmp_path: Path, validator: jsonschema.Draft202012Validator
) -> None:
    doc = _base()
    doc["name"] = "suite"
    doc["arms"] = ["gold", "my-arm"]
    doc["arm_definitions"] = {
        "my-arm": {"agent": "script", "steps": ["true"], "description": "does nothing"}
    }
    doc["sandbox"] = {"read_only": ["/opt"], "env": {"LANG": "C.UTF-8", "N": 3}}
    _task(doc).update(
        {
            "class": "bug",
            "ref": "HEAD",
            "setup": "true",
            "prepare": "true",
            "timeout": 0.5,
            "expensive": True,
            "sandbox": {"env": {"X_1": "y"}},
        }
    )
    _task(doc)["oracle"]["hidden_paths"] = ["tests/hidden/"]
    path = _write(tmp_path, doc)
    assert _schema_errors(validator, path) == []
    loaded = load_task_file(path)
    assert loaded.arms == ("gold", "my-arm")
    assert dict(loaded.tasks[0].sandbox.env) == {"LANG": "C.UTF-8", "N": "3", "X_1": "y"}


@pytest.mark.parametrize(
    ("mutate", "field"),
    [pytest.param(mutate, field, id=case) for case, mutate, field in INVALID],
)
def test_invalid_document_is_rejected_by_schema_and_loader(
    tmp_path: Path,
    validator: jsonschema.Draft202012Validator,
    mutate: Callable[[Doc], None],
    field: str,
) -> None:
    doc = copy.deepcopy(_base())
    mutate(doc)
    path = _write(tmp_path, doc)
    errors = _schema_errors(validator, path)
    assert len(errors) == 1, f"expected exactly the intended schema error, got {errors}"
    with pytest.raises(TaskFileError) as info:
        load_task_file(path)
    assert info.value.field == field, str(info.value)


@pytest.mark.parametrize("tasks", [None, []], ids=["tasks-absent", "tasks-empty"])
def test_scenarios_without_tasks_are_valid_for_both(
    tmp_path: Path, validator: jsonschema.Draft202012Validator, tasks: list[Doc] | None
) -> None:
    doc: Doc = {
        "version": 1,
        "subjects": {
            "git": {"binary": "git"},
            "my-git": {
                "binary": "/usr/bin/git",
                "driver": "git",
                "version_command": ["git", "version"],
                "description": "git again",
            },
        },
        "scenarios": [
            {"id": "loop", "kind": "task_loop", "subjects": ["git", "my-git"]},
            {
                "id": "push-lost",
                "kind": "interrupted_publication",
                "class": "faults",
                "subjects": ["my-git"],
                "remote_hooks": {"pre-receive": "exit 1"},
                "fault_replays": 0,
                "timeout": 30,
                "expensive": True,
            },
        ],
    }
    if tasks is not None:
        doc["tasks"] = tasks
    path = _write(tmp_path, doc)
    assert _schema_errors(validator, path) == []
    loaded = load_task_file(path)
    assert loaded.tasks == ()
    assert loaded.subjects["git"].version_command == ("git", "--version")
    assert loaded.subjects["my-git"].driver == "git"
    loop, lost = loaded.scenarios
    assert (loop.scenario_class, loop.subjects) == ("task_loop", ("git", "my-git"))
    assert (lost.scenario_class, lost.remote_hooks) == ("faults", (("pre-receive", "exit 1"),))
    assert (lost.fault_replays, lost.timeout_s, lost.expensive) == (0, 30.0, True)


def test_claude_arm_is_valid_for_both(
    tmp_path: Path, validator: jsonschema.Draft202012Validator
) -> None:
    for folder in ("skills", "my-skills", "plugins/x"):
        (tmp_path / folder).mkdir(parents=True)
    doc = _base()
    doc["skills"] = "skills/"
    doc["arms"] = ["my-flow"]
    doc["arm_definitions"] = {
        "my-flow": {
            "agent": "claude",
            "description": "plan, then work",
            "skills": "my-skills/",
            "plugin": False,
            "minimal": False,
            "phases": [
                {
                    "name": "plan",
                    "prompt": "Plan this: {task}",
                    "role": "plan",
                    "skill": "plan",
                    "allowed_tools": ["Bash", "Edit"],
                    "disallowed_tools": ["Skill"],
                    "mcp_servers": {"srv": {"command": "x", "args": []}},
                    "plugin_dirs": ["plugins/x"],
                },
                {"name": "work", "prompt": "Follow {plan}."},
            ],
        }
    }
    path = _write(tmp_path, doc)
    assert _schema_errors(validator, path) == []
    loaded = load_task_file(path)
    assert loaded.skills == tmp_path / "skills"
    arm = loaded.arm_definitions["my-flow"]
    assert (arm.kind, arm.is_agent, arm.skills) == ("claude", True, tmp_path / "my-skills")
    plan, work = arm.phases
    assert (plan.role, plan.skill, plan.allowed_tools) == ("plan", "plan", ("Bash", "Edit"))
    assert plan.plugin_dirs == (tmp_path / "plugins" / "x",)
    assert json.loads(dict(plan.mcp_servers)["srv"]) == {"command": "x", "args": []}
    assert (work.role, work.skill, work.mcp_servers) == ("session", None, ())


def _property_names(node: Doc) -> set[str]:
    return set(node["properties"])


def test_schema_keys_match_loader_keys(schema: Doc) -> None:
    defs = schema["$defs"]
    assert _property_names(schema) == TOP_KEYS
    assert _property_names(defs["task"]) == TASK_KEYS
    assert _property_names(defs["oracle"]) == ORACLE_KEYS
    assert _property_names(defs["sandbox"]) == SANDBOX_KEYS
    assert _property_names(defs["sandbox"]["properties"]["limits"]) == LIMIT_KEYS
    assert _property_names(defs["scriptArm"]) == SCRIPT_ARM_KEYS
    assert _property_names(defs["claudeArm"]) == AGENT_ARM_KEYS
    assert _property_names(defs["phase"]) == PHASE_KEYS
    assert _property_names(defs["subject"]) == SUBJECT_KEYS
    assert _property_names(defs["scenario"]) == SCENARIO_KEYS
    assert _property_names(defs["reviewTask"]) == REVIEW_TASK_KEYS
    assert _property_names(defs["reviewOracle"]) == REVIEW_ORACLE_KEYS
    assert _property_names(defs["reviewLabel"]) == REVIEW_LABEL_KEYS
    assert (defs["task"]["properties"]["kind"]["const"],
            defs["reviewTask"]["properties"]["kind"]["const"]) == TASK_KINDS
    assert defs["reviewTask"]["properties"]["oracle"]["$ref"] == "#/$defs/reviewOracle"
    assert defs["reviewOracle"]["properties"]["findings"]["items"] == {
        "$ref": "#/$defs/reviewLabel"}
    assert tuple(defs["reviewOracle"]["properties"]["verdict"]["enum"]) == VERDICTS
    assert tuple(defs["reviewLabel"]["properties"]["severity"]["enum"]) == SEVERITIES
    assert tuple(defs["reviewLabel"]["properties"]["category"]["enum"]) == CATEGORIES
    assert tuple(defs["scenario"]["properties"]["kind"]["enum"]) == SCENARIO_KINDS
    assert schema["properties"]["subjects"]["additionalProperties"] == {"$ref": "#/$defs/subject"}
    assert schema["properties"]["scenarios"]["items"] == {"$ref": "#/$defs/scenario"}
    assert {tuple(branch["required"]) for branch in schema["anyOf"]} == {
        ("tasks",), ("scenarios",)
    }
    assert schema["properties"]["arm_definitions"]["additionalProperties"] == {
        "$ref": "#/$defs/armDefinition"
    }
    assert schema["properties"]["skills"]["$ref"] == "#/$defs/nonEmptyString"
    arm_refs = {ref["$ref"] for ref in defs["armDefinition"]["oneOf"]}
    assert arm_refs == {"#/$defs/scriptArm", "#/$defs/claudeArm"}
    assert (
        defs["scriptArm"]["properties"]["agent"]["const"],
        defs["claudeArm"]["properties"]["agent"]["const"],
    ) == ARM_KINDS
    assert tuple(defs["phase"]["properties"]["role"]["enum"]) == PHASE_ROLES
    assert defs["claudeArm"]["properties"]["phases"]["items"] == {"$ref": "#/$defs/phase"}
    assert schema["properties"]["tasks"]["items"]["then"] == {"$ref": "#/$defs/reviewTask"}
    assert schema["properties"]["tasks"]["items"]["else"] == {"$ref": "#/$defs/task"}
    assert schema["properties"]["sandbox"]["$ref"] == "#/$defs/sandbox"
    assert defs["task"]["properties"]["oracle"]["$ref"] == "#/$defs/oracle"
    assert defs["task"]["properties"]["sandbox"]["$ref"] == "#/$defs/sandbox"


def test_schema_rejects_unknown_keys_everywhere(schema: Doc) -> None:
    defs = schema["$defs"]
    for node in (
        schema, defs["task"], defs["oracle"], defs["sandbox"], defs["scriptArm"],
        defs["claudeArm"], defs["phase"], defs["subject"], defs["scenario"],
        defs["reviewTask"], defs["reviewOracle"], defs["reviewLabel"],
    ):
        assert node["additionalProperties"] is False, node.get("title")


def test_every_property_is_described(schema: Doc) -> None:
    missing: list[str] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for name, sub in node.get("properties", {}).items():
                if not sub.get("description"):
                    missing.append(f"{where}.{name}")
            for key, sub in node.items():
                walk(sub, f"{where}.{key}")
        elif isinstance(node, list):
            for index, sub in enumerate(node):
                walk(sub, f"{where}[{index}]")

    walk(schema, "$")
    assert missing == []
