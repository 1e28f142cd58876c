"""The review contract an agent's prompt states (review.prompt)."""

from __future__ import annotations

import json
import re

from pytest_wfbench.review.artifact import parse_review
from pytest_wfbench.review.prompt import EXAMPLE, review_contract
from pytest_wfbench.review.schema import review_schema, violations
from pytest_wfbench.tasks import CATEGORIES, SEVERITIES, VERDICTS


def _json_blocks(text: str) -> list[object]:
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)\n```", text, re.S)]


def test_contract_names_the_file_in_the_given_folder() -> None:
    text = review_contract("/wfbench/review-Xq3")
    assert "\n    /wfbench/review-Xq3/review.json\n" in text
    assert "read-only" in text
    assert review_contract("/other") != text


def test_contract_states_the_schema_and_a_valid_example() -> None:
    schema, example = _json_blocks(review_contract("/out"))
    assert isinstance(schema, dict)
    # The schema as it validates: the shipped one without its prose.
    assert violations(example, schema) == []
    assert schema["$defs"]["finding"]["required"] == review_schema()["$defs"]["finding"][
        "required"]
    assert "description" not in json.dumps(schema)
    assert example == EXAMPLE
    parse_review(json.dumps(example).encode())


def test_contract_words_name_every_key_and_value() -> None:
    text = review_contract("/out")
    finding = review_schema()["$defs"]["finding"]["properties"]
    words = text.split("The JSON Schema:")[0]
    for name in [*review_schema()["properties"], *finding, *SEVERITIES, *CATEGORIES,
                 *VERDICTS]:
        assert f"`{name}`" in words, name
    assert "256 KiB" in words
