"""The review contract an agent's prompt states: where to write ``review.json``
and exactly what it must hold (in words, as the JSON Schema, and by example).

The text is a pure function of the folder's path inside the sandbox, so the arm's
prompt and the harness's parser cannot disagree on the contract.
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

from pytest_wfbench.review.artifact import ARTIFACT_NAME, MAX_ARTIFACT_BYTES
from pytest_wfbench.review.schema import review_schema

MAX_FINDINGS = review_schema()["properties"]["findings"]["maxItems"]

EXAMPLE = {
    "schema_version": 1,
    "verdict": "request_changes",
    "findings": [
        {
            "id": "F1",
            "severity": "high",
            "path": "src/app/limits.py",
            "line": 42,
            "end_line": 44,
            "category": "correctness",
            "scenario": "A request with exactly `limit` items.",
            "evidence": "`if count > limit` lets the request at the limit through, "
                        "where the docstring says the limit is exclusive.",
            "recommendation": "Compare with `>=` and add a test at the limit.",
            "blocking": True,
        }
    ],
}


def _without_annotations(node: Any) -> Any:
    """The schema as it validates (the words above say what each key means)."""
    if isinstance(node, dict):
        return {key: _without_annotations(value) for key, value in node.items()
                if key not in ("title", "description", "$id")}
    if isinstance(node, list):
        return [_without_annotations(item) for item in node]
    return node


def _compact(node: Any, indent: str = "") -> str:
    """JSON with lists of values, and objects that fit, on one line."""
    flat = json.dumps(node, ensure_ascii=False)
    if (len(indent) + len(flat) <= 100 or not isinstance(node, dict | list) or not node
            or (isinstance(node, list) and not any(isinstance(x, dict | list) for x in node))):
        return flat
    inner = indent + "  "
    if isinstance(node, list):
        items = [inner + _compact(item, inner) for item in node]
        return "[\n" + ",\n".join(items) + "\n" + indent + "]"
    items = [f"{inner}{json.dumps(key)}: {_compact(value, inner)}" for key, value in node.items()]
    return "{\n" + ",\n".join(items) + "\n" + indent + "}"


def review_contract(folder: str) -> str:
    """The contract, for an artifact folder at ``folder`` (an absolute path)."""
    target = PurePosixPath(folder) / ARTIFACT_NAME
    schema = _compact(_without_annotations(review_schema()))
    example = json.dumps(EXAMPLE, indent=2, ensure_ascii=False)
    return f"""\
## Your review artifact

The workspace is read-only: do not change any file in it. Write your review as one
regular file (not a link); it is the only file of its folder that is read:

    {target}

It must be strict JSON in UTF-8, at most {MAX_ARTIFACT_BYTES // 1024} KiB, with no
duplicate keys and no keys other than these:

- `schema_version`: 1.
- `verdict`: `approve` (merge as it is), `comment` (merge, with remarks) or
  `request_changes` (do not merge before the blocking findings are fixed).
- `findings`: a list of at most {MAX_FINDINGS}, empty when you found nothing; for each
  problem:
  - `id`: unique in the review: letters, digits, `.`, `_`, `-` (e.g. `F1`);
  - `severity`: `critical`, `high`, `medium` or `low`;
  - `path`: the file, relative to the repository root (`src/app.py`, not
    `/workspace/src/app.py` or `./src/app.py`);
  - `line`, `end_line`: the first and last line of the problem in the file as
    changed (from 1; `end_line` >= `line`, equal for one line);
  - `category`: `correctness`, `security`, `compatibility`, `performance`, `tests` or
    `other`;
  - `scenario` (when it shows), `evidence` (why it is a problem), `recommendation`
    (how to fix it): non-empty text;
  - `blocking`: true if the change must not be merged until it is fixed.

A review that is missing, not JSON or not valid against this schema is not scored.

The JSON Schema:

```json
{schema}
```

An example:

```json
{example}
```
"""
