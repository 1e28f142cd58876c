"""The review artifact (review.artifact, review.schema): strict parsing, the
shipped schema, and the small validator's agreement with jsonschema."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_wfbench.review.artifact import (
    MAX_ARTIFACT_BYTES,
    ReviewArtifactError,
    gold_review,
    noop_review,
    parse_review,
    render_review,
)
from pytest_wfbench.review.schema import (
    SchemaError,
    check_schema,
    json_equal,
    review_schema,
    violations,
)
from pytest_wfbench.tasks import CATEGORIES, SEVERITIES, VERDICTS, ReviewLabel, ReviewLabels

Doc = dict[str, Any]


def _finding(**fields: Any) -> Doc:
    finding: Doc = {
        "id": "F1", "severity": "high", "path": "textstats/core.py", "line": 32,
        "end_line": 33, "category": "correctness",
        "scenario": "stop_words={'The'} on 'The cat'", "evidence": "not lower-cased",
        "recommendation": "lower-case the stop words", "blocking": True,
    }
    finding.update(fields)
    return finding


def _review(*findings: Doc, verdict: str = "request_changes") -> Doc:
    return {"schema_version": 1, "verdict": verdict, "findings": list(findings)}


def _bytes(document: Any) -> bytes:
    return json.dumps(document).encode()


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(review_schema())


def test_a_valid_review_parses_into_frozen_data() -> None:
    artifact = parse_review(_bytes(_review(_finding(), _finding(id="F2", line=1, end_line=1,
                                                                blocking=False))))
    assert artifact.verdict == "request_changes"
    first, second = artifact.findings
    assert (first.id, first.path, first.line, first.end_line, first.blocking) == (
        "F1", "textstats/core.py", 32, 33, True)
    assert (second.id, second.line) == ("F2", 1)
    with pytest.raises(AttributeError):
        first.line = 3  # type: ignore[misc]


def test_an_empty_review_parses() -> None:
    assert parse_review(b'{"schema_version": 1, "verdict": "approve", "findings": []}'
                        ).findings == ()


def test_integral_floats_are_integers_as_json_schema_says() -> None:
    artifact = parse_review(_bytes(_review(_finding(line=3.0, end_line=4.0))))
    assert (artifact.findings[0].line, type(artifact.findings[0].line)) == (3, int)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "not JSON: the file is empty"),
        (b"\xff\xfe{}", "not UTF-8: invalid start byte at byte 0"),
        (b'{"schema_version": 1,\n "verdict": "approve",\n "findings": [}',
         "not JSON: Expecting value at line 3 column 15"),
        (b'{"schema_version": 1, "verdict": "approve", "verdict": "comment", "findings": []}',
         'not strict JSON: duplicate key "verdict"'),
        (b'{"schema_version": NaN, "verdict": "approve", "findings": []}',
         "not strict JSON: NaN is not a JSON value"),
        (b'{"schema_version": 1, "verdict": "approve", "findings": [], "x": "\\ud800"}',
         "lone surrogate"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"schema_version": 1' + b"0" * 5000 + b"}", "not JSON: "),
        ("\ufeff{}".encode(), "not JSON: Unexpected UTF-8 BOM"),
    ],
    ids=["empty", "not-utf8", "syntax", "duplicate-key", "nan", "surrogate", "deep",
         "huge-int", "bom"],
)
def test_unreadable_artifacts_say_why(data: bytes, reason: str) -> None:
    with pytest.raises(ReviewArtifactError) as info:
        parse_review(data)
    assert reason in info.value.reason


def test_oversized_artifacts_are_refused_before_parsing() -> None:
    at_limit = _bytes(_review(_finding()))
    at_limit = at_limit[:-1] + b" " * (MAX_ARTIFACT_BYTES - len(at_limit)) + b"}"
    assert len(at_limit) == MAX_ARTIFACT_BYTES
    parse_review(at_limit)
    with pytest.raises(ReviewArtifactError, match=r"oversized: at least 262,145 bytes, over"):
        parse_review(at_limit + b" ")


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ({"verdict": "approve", "findings": []},
         "$: missing required key(s): schema_version"),
        (_review(verdict="lgtm"), "$.verdict: expected one of"),
        ({**_review(), "summary": "x"}, "$: unknown key(s): \"summary\""),
        (_review(_finding(line=0)), "$.findings[0].line: expected at least 1, got 0"),
        (_review(_finding(line=True)), "$.findings[0].line: expected integer, got true"),
        (_review(_finding(path="/workspace/a.py")), "$.findings[0].path:"),
        (_review(_finding(path="./a.py")), "$.findings[0].path:"),
        (_review(_finding(path="a/../b.py")), "$.findings[0].path:"),
        (_review(_finding(path="a.py\n")), "$.findings[0].path:"),
        (_review(_finding(severity="blocker")), "$.findings[0].severity: expected one of"),
        (_review(_finding(evidence="  ")), "$.findings[0].evidence:"),
        (_review(_finding(), {**_finding(id="F2"), "note": 1}), "$.findings[1]: unknown key"),
        ({**_review(), "schema_version": 2}, "$.schema_version: expected 1, got 2"),
        (_review(_finding(line=5, end_line=4)),
         "$.findings[0].end_line: 4 is before line 5"),
        (_review(_finding(), _finding()), "$.findings[1].id: 'F1' is already the id of "
                                          "$.findings[0]"),
        ([], "$: expected object, got []"),
    ],
    ids=["missing-key", "bad-verdict", "unknown-key", "line-0", "line-bool", "absolute-path",
         "dot-path", "dotdot-path", "newline-path", "bad-severity", "blank-evidence",
         "unknown-finding-key", "version-2", "end-before-line", "duplicate-id", "not-object"],
)
def test_schema_violations_name_the_json_path(document: Any, reason: str) -> None:
    with pytest.raises(ReviewArtifactError) as info:
        parse_review(_bytes(document))
    assert info.value.reason.startswith("violates the review schema: ")
    assert reason in info.value.reason


def test_many_violations_are_counted_not_all_listed() -> None:
    findings = [_finding(id=f"F{n}", severity="x") for n in range(5)]
    with pytest.raises(ReviewArtifactError) as info:
        parse_review(_bytes(_review(*findings)))
    assert info.value.reason.count("expected one of") == 3
    assert info.value.reason.endswith("(and 2 more)")


def test_schema_is_draft_2020_12_and_uses_the_task_vocabulary() -> None:
    schema = review_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    finding = schema["$defs"]["finding"]
    assert tuple(finding["properties"]["severity"]["enum"]) == SEVERITIES
    assert tuple(finding["properties"]["category"]["enum"]) == CATEGORIES
    assert tuple(schema["properties"]["verdict"]["enum"]) == VERDICTS
    assert set(finding["required"]) == set(finding["properties"])
    assert schema["additionalProperties"] is False and finding["additionalProperties"] is False
    assert list(finding["properties"]) == ["id", "severity", "path", "line", "end_line",
                                           "category", "scenario", "evidence",
                                           "recommendation", "blocking"]


def test_validator_refuses_keywords_it_does_not_implement() -> None:
    with pytest.raises(SchemaError, match="not implemented: oneOf"):
        check_schema({"properties": {"x": {"oneOf": [{"type": "string"}]}}})
    with pytest.raises(SchemaError, match="only local references"):
        check_schema({"$ref": "https://example.com/schema"})


def test_json_equal_follows_json_not_python() -> None:
    assert json_equal(1, 1.0) and not json_equal(True, 1) and not json_equal(0, False)
    assert json_equal({"a": [1, 2]}, {"a": [1.0, 2]}) and not json_equal([1], [1, 1])
    assert not json_equal("1", 1)


def _paths(validator: jsonschema.Draft202012Validator, document: Any) -> set[str]:
    return {error.json_path for error in validator.iter_errors(document)}


def _mutations() -> list[Any]:
    """Hand-picked near misses of a valid document, one change each."""
    base = _review(_finding())
    values: list[Any] = [None, True, False, 0, 1, 1.0, 1.5, -1, 10_000_001, "", " ", "x",
                         [], {}, [1], {"a": 1}, "approve", "high", "a/b.py", "a//b.py",
                         "a/./b", "a\\b", "F 1", "x" * 65, "y" * 4001, float("inf")]
    documents: list[Any] = [base, [], "text", 1, None]
    for key in base:
        for value in values:
            documents.append({**base, key: value})
        documents.append({k: v for k, v in base.items() if k != key})
    for key in base["findings"][0]:
        for value in values:
            documents.append(_review(_finding(**{key: value})))
        finding = _finding()
        del finding[key]
        documents.append(_review(finding))
    documents.append(_review(*[_finding(id=f"F{n}") for n in range(201)]))
    documents.append(_review(*[_finding(id=f"F{n}") for n in range(200)]))
    return documents


def test_validator_agrees_with_jsonschema_on_near_misses(
    validator: jsonschema.Draft202012Validator,
) -> None:
    documents = _mutations()
    assert len(documents) > 300
    invalid = 0
    for document in documents:
        expected = _paths(validator, document)
        assert {path for path, _ in violations(document)} == expected, document
        invalid += bool(expected)
    assert invalid > len(documents) // 2  # the near misses are mostly misses


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-3, max_value=12_000_000),
    st.floats(allow_nan=False), st.sampled_from(["", " ", "F1", "a.py", "src/a.py", "/a",
                                                 "a/../b", "high", "approve", "tests"]),
    st.text(max_size=6),
)
_finding_values = {
    "id": st.one_of(st.sampled_from(["F1", "a-b.c_d", "-x", ""]), _scalars),
    "severity": st.one_of(st.sampled_from(SEVERITIES), _scalars),
    "path": st.one_of(st.sampled_from(["a.py", "src/b.py", "./a", "a/", "a//b"]), _scalars),
    "line": st.one_of(st.integers(min_value=0, max_value=3), _scalars),
    "end_line": st.one_of(st.integers(min_value=0, max_value=3), _scalars),
    "category": st.one_of(st.sampled_from(CATEGORIES), _scalars),
    "scenario": _scalars, "evidence": _scalars, "recommendation": _scalars,
    "blocking": st.one_of(st.booleans(), _scalars),
}


@st.composite
def _documents(draw: st.DrawFn) -> Any:
    finding = {key: draw(values) for key, values in _finding_values.items()
               if draw(st.integers(0, 9)) > 0}  # now and then a key goes missing
    if draw(st.booleans()):
        finding[draw(st.sampled_from(["note", "Line", "id "]))] = draw(_scalars)
    document: Doc = {
        "schema_version": draw(st.one_of(st.just(1), _scalars)),
        "verdict": draw(st.one_of(st.sampled_from(VERDICTS), _scalars)),
        "findings": draw(st.one_of(st.lists(st.just(finding), max_size=2), _scalars)),
    }
    for key in draw(st.lists(st.sampled_from(["schema_version", "verdict", "findings"]),
                             max_size=1)):
        del document[key]
    return document


@settings(max_examples=400, deadline=None)
@given(_documents())
def test_validator_agrees_with_jsonschema_on_generated_documents(document: Any) -> None:
    validator = jsonschema.Draft202012Validator(review_schema())
    assert {path for path, _ in violations(document)} == _paths(validator, document)


def _labels() -> ReviewLabels:
    return ReviewLabels(
        findings=(
            ReviewLabel("textstats/core.py", 32, 33, "medium", "correctness", True, "case"),
            ReviewLabel("textstats/core.py", 40, 40, "low", "tests", False),
            ReviewLabel("README.md", 1, 2, "low", "other", False),
        ),
        verdict="request_changes",
    )


def test_gold_review_is_a_valid_artifact_of_exactly_the_labels() -> None:
    labels = _labels()
    artifact = parse_review(render_review(gold_review(labels)))
    assert artifact == gold_review(labels)
    assert artifact.verdict == labels.verdict
    assert [(f.id, f.path, f.line, f.end_line, f.severity, f.category, f.blocking)
            for f in artifact.findings] == [
        ("case", "textstats/core.py", 32, 33, "medium", "correctness", True),
        ("L2", "textstats/core.py", 40, 40, "low", "tests", False),
        ("L3", "README.md", 1, 2, "low", "other", False),
    ]


def test_gold_review_ids_stay_unique_when_a_label_takes_a_generated_id() -> None:
    labels = ReviewLabels(
        findings=(ReviewLabel("a.py", 1, 1, "low", "other", False),
                  ReviewLabel("a.py", 9, 9, "low", "other", False, "L1")),
        verdict="comment",
    )
    ids = [finding.id for finding in parse_review(render_review(gold_review(labels))).findings]
    assert ids == ["L1x", "L1"]


def test_noop_review_approves_with_no_finding() -> None:
    artifact = parse_review(render_review(noop_review()))
    assert (artifact.verdict, artifact.findings) == ("approve", ())


def test_rendered_review_is_its_json() -> None:
    artifact = gold_review(_labels())
    document = json.loads(render_review(artifact))
    assert document == artifact.to_json()
    assert violations(copy.deepcopy(document)) == []
