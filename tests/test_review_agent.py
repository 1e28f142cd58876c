"""Review arms end to end: the real, pinned Claude Code CLI in the bubblewrap
sandbox, reviewing a change with a read-only workspace, against a fake Anthropic
API that plays a scripted conversation (tests/fakeapi)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_suite
from tests.fakeapi import FakeAnthropic, tool_use, turn
from tests.review_suite import (
    BUG_LABEL,
    CLAMP_PATCH,
    TIDY_PATCH,
    finding,
    review_json,
    review_task,
)
from tests.test_agent import MODEL, api_key, sweep  # noqa: F401 (fixtures)
from tests.test_review_cells import MARK_ID, MARK_LINES, MARK_PATH, reveals_labels

pytestmark = pytest.mark.cli

REVIEW_SKILL = ("---\nname: review\ndescription: Review a change.\n---\n\n"
                "Review the change, write the artifact.\n")
DIFF = tool_use("Bash", {"command": "git diff", "description": "the change"})
FOUND = review_json(finding())
CELL = "review-clamp-review-r1"


def write(content: str) -> Any:
    return tool_use("Write", {"file_path": "/review/review.json", "content": content})


def review_suite(base: Path, arms: list[str], tasks: list[dict[str, Any]] | None = None) -> Any:
    (base / "skills" / "review").mkdir(parents=True, exist_ok=True)
    (base / "skills" / "review" / "SKILL.md").write_text(REVIEW_SKILL)
    suite = write_suite(base, tasks=tasks or [review_task()], arms=arms,
                        extra={"skills": "skills/"})
    (base / "clamp.patch").write_text(CLAMP_PATCH)
    (base / "tidy.patch").write_text(TIDY_PATCH)
    return suite


def reviewed(*content: str) -> list[Any]:
    """The review arm's conversation: the skill, the diff, the artifact(s), done."""
    return [turn(tool_use("Skill", {"skill": "review"})), turn(DIFF),
            *(turn(write(text)) for text in content), turn("Reviewed.")]


def prompt_of(api: FakeAnthropic) -> str:
    return json.dumps(api.main_requests[0].body["messages"][0])


def test_a_review_that_finds_the_planted_bug_resolves(
    pytester: pytest.Pytester, sweep: Any  # noqa: F811
) -> None:
    suite = review_suite(pytester.path, ["review"])
    result, api = sweep(suite, reviewed(FOUND))
    result.assert_outcomes(passed=1)
    assert api.script_done and not api.errors, api.summary()
    row = suite.row(CELL)
    assert row["resolved"] is True and row["review_scored"] is True
    assert row["review"]["tp"] == 1 and row["review"]["fp"] == 0
    assert row["phases"][0]["skills_invoked"] == ["review"] and row["model"] == MODEL
    # The session saw the change, as git diff shows it ...
    diff = api.tool_results[1].text
    assert "+def clamp(x, low, high):" in diff, diff
    # ... and was told the contract and where the artifact goes.
    prompt = prompt_of(api)
    assert "Invoke the review skill" in prompt and "/review/review.json" in prompt
    assert "Add clamp(x, low, high) to calc.py" in prompt and "The JSON Schema" in prompt
    tools = [tool["name"] for tool in api.main_requests[0].body.get("tools", [])]
    assert "Skill" in tools
    saved = suite.out / "artifacts" / f"{CELL}.review.json"
    assert json.loads(saved.read_text()) == json.loads(FOUND)


def test_a_review_with_a_false_positive_does_not_resolve(
    pytester: pytest.Pytester, sweep: Any  # noqa: F811
) -> None:
    extra = finding("F2", line=1, end_line=2, severity="medium", blocking=False)
    suite = review_suite(pytester.path, ["review"])
    result, _ = sweep(suite, reviewed(review_json(finding(), extra)))
    result.assert_outcomes(failed=1)
    row = suite.row(CELL)
    assert row["error_kind"] == "oracle-failed" and row["counted"] is True
    assert (row["review"]["tp"], row["review"]["fp"], row["review"]["fn"]) == (1, 1, 0)


def test_a_review_that_tries_to_edit_a_source_file_is_review_evidence_invalid(
    pytester: pytest.Pytester, sweep: Any  # noqa: F811
) -> None:
    read = tool_use("Read", {"file_path": "/workspace/calc.py"})
    edit = tool_use("Write", {"file_path": "/workspace/calc.py", "content": "# fixed\n"})
    script = [turn(tool_use("Skill", {"skill": "review"})), turn(read), turn(edit),
              turn(write(FOUND)), turn("Fixed it myself, and reviewed.")]
    suite = review_suite(pytester.path, ["review"])
    result, api = sweep(suite, script)
    result.assert_outcomes(errors=1)
    assert api.script_done, api.summary()
    # The workspace is read-only: the write failed, and nothing changed ...
    assert api.tool_results[2].is_error, api.tool_results[2]
    row = suite.row(CELL)
    # ... but a review that tries to change what it reviews is not scored.
    assert row["error_kind"] == "review-evidence-invalid" and row["counted"] is True
    assert row["error_detail"] == ("the session tried to change the workspace it reviews: "
                                   "Write /workspace/calc.py")
    assert row["review_scored"] is False


def test_a_review_in_invalid_json_is_review_evidence_invalid_with_the_parse_error(
    pytester: pytest.Pytester, sweep: Any  # noqa: F811
) -> None:
    suite = review_suite(pytester.path, ["review"])
    result, _ = sweep(suite, reviewed('{"schema_version": 1, "verdict": "approve",}'))
    result.assert_outcomes(errors=1)
    row = suite.row(CELL)
    assert row["error_kind"] == "review-evidence-invalid"
    assert row["error_detail"] == ("review.json: not JSON: Expecting property name enclosed in "
                                   "double quotes at line 1 column 44")


def test_review_baseline_reviews_without_the_skill(
    pytester: pytest.Pytester, sweep: Any  # noqa: F811
) -> None:
    suite = review_suite(pytester.path, ["review_baseline"])
    result, api = sweep(suite, [turn(DIFF), turn(write(FOUND)), turn("Reviewed.")])
    result.assert_outcomes(passed=1)
    tools = [tool["name"] for tool in api.main_requests[0].body.get("tools", [])]
    assert "Skill" not in tools and "Write" in tools
    prompt = prompt_of(api)
    assert "Invoke the" not in prompt and "/review/review.json" in prompt
    assert suite.row("review-clamp-review_baseline-r1")["resolved"] is True


def test_a_review_arm_that_never_invokes_its_skill_is_scored_but_not_trusted(
    pytester: pytest.Pytester, sweep: Any  # noqa: F811
) -> None:
    suite = review_suite(pytester.path, ["review"])
    result, _ = sweep(suite, [turn(DIFF), turn(write(FOUND)), turn("Reviewed.")])
    result.assert_outcomes(errors=1)
    row = suite.row(CELL)
    assert row["error_kind"] == "skill-not-invoked" and row["counted"] is True
    assert row["review_scored"] is True and row["review"]["resolved"] is True


def test_the_labels_reach_neither_the_prompt_nor_the_transcript_nor_any_output(
    pytester: pytest.Pytester, sweep: Any  # noqa: F811
) -> None:
    hidden = {"id": MARK_ID, "path": MARK_PATH, "line": MARK_LINES[0],
              "end_line": MARK_LINES[1], "severity": "low", "category": "compatibility",
              "blocking": False}
    # The session looks around: the skill, its folders, the repository, its history.
    look = tool_use("Bash", {"command": "ls -la /review ~ /workspace; git log --all --stat; "
                                        "env | sort", "description": "look around"})
    suite = review_suite(pytester.path, ["gold", "review"],
                         tasks=[review_task(findings=[BUG_LABEL, hidden])])
    junit = suite.root / "junit.xml"
    result, api = sweep(suite, [turn(tool_use("Skill", {"skill": "review"})), turn(look),
                                turn(write(FOUND)), turn("Reviewed.")], f"--junitxml={junit}")
    assert api.script_done and api.tool_results[1].text, api.summary()
    # Whatever the CLI sent upstream (prompts, tool results, side requests) ...
    assert reveals_labels(json.dumps([request.body for request in api.requests])) == []
    # ... and every file of the sweep but gold's review, and the terminal.
    transcript = suite.out / "artifacts" / f"{CELL}.review.transcript.jsonl"
    assert transcript.exists()
    for path in [*(p for p in suite.out.rglob("*") if p.is_file()), junit]:
        if path.name != "review-clamp-gold-r1.review.json":
            assert reveals_labels(path.read_text(errors="replace")) == [], path
    assert reveals_labels((suite.out / "artifacts" / "review-clamp-gold-r1.review.json")
                          .read_text()) == [MARK_ID, MARK_PATH, "lines"]
    assert reveals_labels(result.stdout.str() + result.stderr.str()) == []
    assert suite.row(CELL)["review"]["fn"] == 1  # scored against both labels


def test_ce_review_uses_the_plugins_review_skill(
    pytester: pytest.Pytester, sweep: Any  # noqa: F811
) -> None:
    plugin = pytester.path / "ce-plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(
        json.dumps({"name": "ce", "version": "2.0.0", "description": "test plugin"}))
    (plugin / "skills" / "review").mkdir(parents=True)
    (plugin / "skills" / "review" / "SKILL.md").write_text(REVIEW_SKILL)
    suite = review_suite(pytester.path, ["ce_review"])
    script = [turn(tool_use("Skill", {"skill": "ce:review"})), turn(DIFF), turn(write(FOUND)),
              turn("Reviewed.")]
    result, _ = sweep(suite, script, "--wfbench-plugin-dir", str(plugin),
                      "--wfbench-plugin-version", "2.0.0")
    result.assert_outcomes(passed=1)
    row = suite.row("review-clamp-ce_review-r1")
    assert row["phases"][0]["skills_invoked"] == ["ce:review"]
    assert row["plugin"]["version"] == "2.0.0" and row["resolved"] is True
