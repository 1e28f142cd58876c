"""A small, strict JSON Schema validator for the shipped review schema.

The plugin has no jsonschema dependency at run time, and the review artifact's
schema (``review.schema.json``) needs only a handful of keywords. This module
interprets exactly those, with the semantics of JSON Schema 2020-12 (an integer
is any number with no fractional part, booleans are not numbers, type-specific
keywords ignore values of other types), and refuses a schema that uses any other
keyword, so the schema cannot quietly grow past what is checked. A test checks
that it agrees with ``jsonschema`` on many documents.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from importlib.resources import files
from typing import Any

# Keywords that only document the schema.
ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description",
                         "examples", "default"})
KEYWORDS = frozenset({"type", "const", "enum", "required", "properties",
                      "additionalProperties", "items", "minItems", "maxItems", "minLength",
                      "maxLength", "pattern", "minimum", "maximum", "$ref"})
Schema = Mapping[str, Any]


class SchemaError(Exception):
    """The schema itself uses something this validator does not implement."""


@functools.cache
def review_schema() -> dict[str, Any]:
    """The shipped ``review.schema.json``, checked to use only known keywords."""
    text = (files("pytest_wfbench.review") / "review.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    check_schema(schema)
    return schema


def check_schema(schema: Schema) -> None:
    """Raise :class:`SchemaError` if ``schema`` uses a keyword not implemented here."""

    def walk(node: Schema, where: str) -> None:
        if not isinstance(node, Mapping):
            raise SchemaError(f"{where}: a schema must be an object")
        unknown = set(node) - KEYWORDS - ANNOTATIONS
        if unknown:
            raise SchemaError(f"{where}: keywords not implemented: {', '.join(sorted(unknown))}")
        for name, sub in node.get("properties", {}).items():
            walk(sub, f"{where}/properties/{name}")
        for name, sub in node.get("$defs", {}).items():
            walk(sub, f"{where}/$defs/{name}")
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), Mapping):
                walk(node[key], f"{where}/{key}")
        ref = node.get("$ref")
        if ref is not None and not re.fullmatch(r"#/\$defs/[^/]+", ref):
            raise SchemaError(f"{where}: only local references #/$defs/<name> are implemented")

    walk(schema, "#")


def json_path(parts: tuple[str | int, ...]) -> str:
    """A location in a document, written as jsonschema writes it (``$.findings[0].line``)."""
    return "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in parts)


def violations(document: Any, schema: Schema | None = None) -> list[tuple[str, str]]:
    """Every way ``document`` violates ``schema`` (default: the review schema), as
    (JSON path, message) pairs in document order; empty when it is valid."""
    root = review_schema() if schema is None else schema
    return [(json_path(path), message) for path, message in _check(document, root, root, ())]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _has_type(value: Any, name: str) -> bool:
    if name == "integer":
        return (_is_number(value) and (isinstance(value, int) or value.is_integer()))
    if name == "number":
        return _is_number(value)
    expected = {"object": dict, "array": list, "string": str, "boolean": bool,
                "null": type(None)}[name]
    return isinstance(value, expected)


def json_equal(left: Any, right: Any) -> bool:
    """Equality as JSON means it: 1 equals 1.0, true is not 1, key order is irrelevant."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if _is_number(left) and _is_number(right):
        return bool(left == right)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    return type(left) is type(right) and bool(left == right)


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


Path = tuple[str | int, ...]


def _check(value: Any, node: Schema, root: Schema, path: Path) -> Iterator[tuple[Path, str]]:
    if "$ref" in node:
        yield from _check(value, root["$defs"][node["$ref"].rsplit("/", 1)[1]], root, path)
    if "type" in node:
        names = node["type"] if isinstance(node["type"], list) else [node["type"]]
        if not any(_has_type(value, name) for name in names):
            yield path, f"expected {' or '.join(names)}, got {_show(value)}"
    if "const" in node and not json_equal(value, node["const"]):
        yield path, f"expected {_show(node['const'])}, got {_show(value)}"
    if "enum" in node and not any(json_equal(value, option) for option in node["enum"]):
        options = ", ".join(_show(option) for option in node["enum"])
        yield path, f"expected one of {options}, got {_show(value)}"
    if isinstance(value, dict):
        yield from _check_object(value, node, root, path)
    elif isinstance(value, list):
        if "minItems" in node and len(value) < node["minItems"]:
            yield path, f"expected at least {node['minItems']} items, got {len(value)}"
        if "maxItems" in node and len(value) > node["maxItems"]:
            yield path, f"expected at most {node['maxItems']} items, got {len(value)}"
        if "items" in node:
            for index, item in enumerate(value):
                yield from _check(item, node["items"], root, (*path, index))
    elif isinstance(value, str):
        if "minLength" in node and len(value) < node["minLength"]:
            yield path, f"expected at least {node['minLength']} characters, got {len(value)}"
        if "maxLength" in node and len(value) > node["maxLength"]:
            yield path, f"expected at most {node['maxLength']} characters, got {len(value)}"
        if "pattern" in node and re.search(node["pattern"], value) is None:
            yield path, f"{_show(value)} does not match the pattern {node['pattern']!r}"
    elif _is_number(value):
        if "minimum" in node and value < node["minimum"]:
            yield path, f"expected at least {node['minimum']}, got {_show(value)}"
        if "maximum" in node and value > node["maximum"]:
            yield path, f"expected at most {node['maximum']}, got {_show(value)}"


def _check_object(value: dict[str, Any], node: Schema, root: Schema,
                  path: Path) -> Iterator[tuple[Path, str]]:
    missing = [key for key in node.get("required", ()) if key not in value]
    if missing:
        yield path, f"missing required key(s): {', '.join(missing)}"
    properties = node.get("properties", {})
    extra = node.get("additionalProperties", True)
    unknown = [key for key in value if key not in properties]
    if extra is False and unknown:
        allowed = ", ".join(properties)
        yield path, (f"unknown key(s): {', '.join(_show(key) for key in unknown)} "
                     f"(allowed: {allowed})")
    for key, item in value.items():
        if key in properties:
            yield from _check(item, properties[key], root, (*path, key))
        elif isinstance(extra, Mapping):
            yield from _check(item, extra, root, (*path, key))
