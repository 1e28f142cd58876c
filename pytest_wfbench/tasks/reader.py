"""Reading YAML with line numbers, and typed access whose errors name the
file, the line, the task and the field."""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from pytest_wfbench.tasks.model import TaskFileError

if TYPE_CHECKING:
    from pytest_wfbench.tasks.parsecache import ParseCache


class Node:
    """A parsed YAML value with the line it started on."""

    __slots__ = ("line", "value")

    def __init__(self, value: Any, line: int) -> None:
        self.value = value
        self.line = line


Encoded = tuple[int, Any]
"""A node as plain data, ``(line, value)``: value a dict of encoded nodes (a
mapping), a list of them (a sequence), or a scalar (never a dict or a list).
What the parse cache keeps."""


def decode(encoded: Encoded) -> Node:
    line, value = encoded
    if type(value) is dict:
        return Node({key: decode(item) for key, item in value.items()}, line)
    if type(value) is list:
        return Node([decode(item) for item in value], line)
    return Node(value, line)


URL_USER_INFO = re.compile(rb"://[^/\s\"'@]+@")
"""A URL with user info (``https://user:token@host``) anywhere in a file (no
scheme before it: a pattern that matched one would scan a long run of letters
once from each of its characters)."""


def compose(path: Path, cache: ParseCache | None = None) -> Node:
    """The file's tree of nodes: from the parse cache when it holds this file's
    content (see :mod:`pytest_wfbench.tasks.parsecache`), else parsed here (and
    then kept there)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TaskFileError(path, None, f"cannot read task file: {exc.strerror}") from exc
    key = cache.key(data) if cache is not None else ""
    cached = cache.get(key) if cache is not None else None
    if cached is not None:
        try:
            return decode(cached)
        except (TypeError, ValueError):
            pass  # an entry of another shape: parse again, and replace it
    encoded, tree = parse(path, data)
    if cache is not None and not URL_USER_INFO.search(data):
        # A file holding a URL's credentials is never copied into the cache dir.
        cache.put(key, encoded)
    return tree


def parse(path: Path, data: bytes) -> tuple[Encoded, Node]:
    """A task file's bytes as its encoded tree and its tree of nodes (made in one
    pass: ``decode`` of the first is the second); errors name the line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = data.count(b"\n", 0, exc.start) + 1
        raise TaskFileError(path, where, f"the task file is not UTF-8 text (byte "
                            f"0x{data[exc.start]:02x} at offset {exc.start}): save it as "
                            "UTF-8") from exc
    try:
        root = yaml.compose(text, Loader=Composer)
    except yaml.YAMLError as exc:
        raise _yaml_error(path, exc) from exc
    if root is None:
        raise TaskFileError(path, 1, "the task file is empty")
    constructor = yaml.SafeLoader("")
    try:
        return _encode(path, root, constructor)
    finally:
        # The loader is in a cycle (its parser's state): what it holds of the
        # file would wait for the collector, and a large file is frozen first.
        constructor.dispose()
        constructor.constructed_objects.clear()


def _yaml_error(path: Path, exc: yaml.YAMLError) -> TaskFileError:
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(exc, "problem", None) or str(exc)
    return TaskFileError(path, line, f"invalid YAML: {problem}")


# libyaml's composer when PyYAML has it (several times faster); nodes keep lines.
COMPOSER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
STR_TAG = "tag:yaml.org,2002:str"


class Composer(COMPOSER):  # type: ignore[misc]
    """The safe composer with a cheaper resolver: the composer asks for the tag of
    every untagged scalar, and a task file is mostly plain strings. The same
    implicit resolvers decide, in the same order (those of the value's first
    character, then the wildcard ones); only the lookups are fewer."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        resolvers = self.yaml_implicit_resolvers
        wildcard = tuple(resolvers.get(None, ()))
        self._by_first: dict[str, tuple[Any, ...]] = {
            first: (*found, *wildcard) for first, found in resolvers.items()
            if first is not None}
        self._wildcard = wildcard
        self._by_path = bool(self.yaml_path_resolvers)

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if self._by_path:
            return super().resolve(kind, value, implicit)
        if kind is yaml.ScalarNode:
            if implicit[0]:
                for tag, regexp in self._by_first.get(value[:1], self._wildcard):
                    if regexp.match(value):
                        return tag
            return self.DEFAULT_SCALAR_TAG
        # What BaseResolver.resolve gives a collection without path resolvers.
        return (self.DEFAULT_MAPPING_TAG if kind is yaml.MappingNode
                else self.DEFAULT_SEQUENCE_TAG)


def _encode(path: Path, node: yaml.Node,
            constructor: yaml.SafeLoader) -> tuple[Encoded, Node]:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        mapping: dict[str, Encoded] = {}
        nodes: dict[str, Node] = {}
        for key_node, value_node in node.value:
            key = key_node.value
            if not isinstance(key_node, yaml.ScalarNode):
                line = key_node.start_mark.line + 1
                raise TaskFileError(path, line, "keys must be plain strings")
            if key in mapping:
                raise TaskFileError(
                    path, key_node.start_mark.line + 1, f"duplicate key {key!r}", field=key
                )
            mapping[key], nodes[key] = _encode(path, value_node, constructor)
        return (line, mapping), Node(nodes, line)
    if isinstance(node, yaml.SequenceNode):
        items = [_encode(path, item, constructor) for item in node.value]
        return (line, [encoded for encoded, _ in items]), Node([tree for _, tree in items], line)
    if node.tag == STR_TAG:
        value = node.value  # what the constructor would return, without it
    else:
        try:
            value = constructor.construct_object(node, deep=True)
        except yaml.YAMLError as exc:  # an unknown tag (!!python/...), a bad timestamp
            raise _yaml_error(path, exc) from exc
    return (line, value), Node(value, line)


class Reader:
    """Typed access to one mapping of a task file, with located errors."""

    def __init__(self, path: Path, node: Node, *, task: str | None, prefix: str) -> None:
        self.path, self.node, self.task, self.prefix = path, node, task, prefix
        if not isinstance(node.value, dict):
            self.fail(node.line, "expected a mapping", field=prefix.rstrip(".") or None)
        self.values: dict[str, Node] = node.value

    def fail(self, line: int | None, message: str, *, field: str | None) -> Any:
        raise TaskFileError(self.path, line, message, task=self.task, field=field)

    def name(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def check_keys(self, allowed: set[str]) -> None:
        for key, value in self.values.items():
            if key not in allowed:
                known = ", ".join(sorted(allowed))
                self.fail(value.line, f"unknown key (allowed: {known})", field=self.name(key))

    def line_of(self, key: str) -> int:
        return self.values[key].line if key in self.values else self.node.line

    def string(self, key: str, *, required: bool = False, default: str | None = None) -> str | None:
        if key not in self.values:
            if required:
                self.fail(self.node.line, "required field is missing", field=self.name(key))
            return default
        value = self.values[key].value
        if not isinstance(value, str) or not value.strip():
            self.fail(self.values[key].line, "expected a non-empty string", field=self.name(key))
        return str(value)

    def required_string(self, key: str) -> str:
        value = self.string(key, required=True)
        assert value is not None
        return value

    def number(self, key: str, default: float) -> float:
        if key not in self.values:
            return default
        value = self.values[key].value
        if (isinstance(value, bool) or not isinstance(value, int | float)
                or not math.isfinite(value) or value <= 0):
            self.fail(self.values[key].line, "expected a positive number", field=self.name(key))
        return float(value)

    def boolean(self, key: str, default: bool) -> bool:
        if key not in self.values:
            return default
        value = self.values[key].value
        if not isinstance(value, bool):
            self.fail(self.values[key].line, "expected true or false", field=self.name(key))
        return bool(value)

    def string_list(self, key: str) -> list[tuple[str, int]]:
        if key not in self.values:
            return []
        node = self.values[key]
        if not isinstance(node.value, list):
            self.fail(node.line, "expected a list of strings", field=self.name(key))
        items = []
        for item in node.value:
            if not isinstance(item.value, str) or not item.value.strip():
                self.fail(item.line, "expected a non-empty string", field=self.name(key))
            items.append((item.value, item.line))
        return items

    def mapping(self, key: str) -> Reader | None:
        if key not in self.values:
            return None
        return Reader(self.path, self.values[key], task=self.task, prefix=f"{self.name(key)}.")


def inside_folder(path: str, base: Path, reader: Reader, key: str, line: int) -> Path:
    """Resolve ``path`` relative to the task file folder; it must stay inside it."""
    resolved, inside, exists = _resolve(base, path)
    if not inside:
        reader.fail(line, f"{Path(path)} escapes the task file's folder {base}",
                    field=reader.name(key))
    if not exists:
        reader.fail(line, f"{resolved} does not exist", field=reader.name(key))
    return resolved


@functools.lru_cache(maxsize=4096)
def _resolve(base: Path, path: str) -> tuple[Path, bool, bool]:
    """Tasks of a file share their oracle folders and patches: resolve each once
    (looked up by the text: 10,000 tasks' paths made and hashed took 0.1 s)."""
    resolved = (base / path).resolve()
    return resolved, resolved.is_relative_to(base.resolve()), resolved.exists()


@functools.lru_cache(maxsize=4096)
def readable(path: Path) -> bool:
    """Whether a file can be opened for reading (tried once per file)."""
    try:
        with path.open("rb"):
            return True
    except OSError:
        return False


def relative_repo_path(value: str, reader: Reader, key: str, line: int) -> str:
    pure = Path(value)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts or pure.as_posix() == ".":
        reader.fail(line, f"{value!r} must be a relative path inside the repo", field=key)
    return pure.as_posix().rstrip("/")


def plain(node: Node) -> Any:
    """A parsed node back to plain Python data (for JSON configuration)."""
    if isinstance(node.value, dict):
        return {key: plain(value) for key, value in node.value.items()}
    if isinstance(node.value, list):
        return [plain(item) for item in node.value]
    return node.value


def forget_resolved_paths() -> None:
    _resolve.cache_clear()
    readable.cache_clear()
