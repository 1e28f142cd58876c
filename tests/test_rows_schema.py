"""The rows schema: it names every field of :class:`Row` and nothing else, each
documented in docs/rows.md, and every row a sweep writes validates against it
(the autouse ``row_audit`` fixture checks each test's out dirs; these tests
show that it finds them and that it fails on a bad row)."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from pytest_wfbench.row import Row
from tests.conftest import Suite, script_arm, task_yaml
from tests.rowschema import RowAudit, check_rows, row_schema

SuiteFactory = Callable[..., Suite]
ROOT = Path(__file__).resolve().parent.parent


def row_fields() -> list[str]:
    return ["class" if f.name == "task_class" else f.name for f in dataclasses.fields(Row)]


def test_the_schema_names_every_row_field_and_admits_no_other() -> None:
    schema = row_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert list(schema["properties"]) == row_fields()
    assert schema["required"] == row_fields()
    assert schema["additionalProperties"] is False
    assert all(prop.get("description") for prop in schema["properties"].values())


def test_docs_rows_md_documents_every_field() -> None:
    text = (ROOT / "docs" / "rows.md").read_text()
    documented = re.findall(r"^\| `([a-z_]+)` \|", text, flags=re.M)
    assert documented == row_fields()


def test_the_audit_validates_every_row_of_a_sweep(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, row_audit: RowAudit
) -> None:
    """Rows of many shapes: resolved, a valid negative, an error, a skip, a
    script arm's steps; the audit sees every one of them and finds no error."""
    suite = suite_factory(
        tasks=[task_yaml("fix-add"), task_yaml("costly", expensive=True),
               task_yaml("broken", setup="exit 1")],
        arms=["gold", "noop", "fixer"],
        arm_definitions={"fixer": script_arm("sed -i 's/a - b/a + b/' calc.py")})
    result = pytester.runpytest_subprocess(*suite.args())
    result.assert_outcomes(passed=2, xfailed=1, skipped=3, errors=3)
    rows = suite.rows()
    assert len(rows) == 9
    assert {r["status"] for r in rows} == {"ran", "skipped"}
    check = row_audit.check()
    assert check.out_dirs == [suite.out]
    assert check.rows == len(rows)
    assert check.errors == []


def test_the_audit_fails_on_a_row_the_schema_does_not_admit(
    tmp_path: Path, row_audit: RowAudit
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "sweep.json").write_text("{}")
    good = json.loads((ROOT / "tests" / "data" / "row.json").read_text())
    bad_rows = [
        {**good, "cell_id": "extra-field-r1", "surprise": 1},
        {k: v for k, v in good.items() if k != "identity"} | {"cell_id": "missing-r1"},
        {**good, "cell_id": "typed-r1", "cost_usd": "free"},
    ]
    (out / "results.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in [good, *bad_rows]) + '{"torn": ')
    check = check_rows(tmp_path)
    assert check.rows == 4 and check.torn == 1
    assert len(check.errors) == 3
    extra, missing, typed = check.errors
    assert "extra-field-r1" in extra and "'surprise' was unexpected" in extra
    assert "missing-r1" in missing and "'identity' is a required property" in missing
    assert "typed-r1" in typed and "$.cost_usd" in typed
    # The fixture would fail this test on them: it checks the same folder.
    assert row_audit.check().errors == check.errors
    shutil.rmtree(out)
    # Rows a test writes by hand, without a sweep's sweep.json, are not a sweep's.
    (tmp_path / "results.jsonl").write_text("{}\n")
    assert check_rows(tmp_path).rows == 0


def test_the_audit_runs_for_every_test(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    assert "row_audit" in request.fixturenames
    audit = request.getfixturevalue("row_audit")
    assert isinstance(audit, RowAudit) and audit.roots == [tmp_path]
