"""The parse cache of task files (pytest_wfbench/tasks/parsecache.py) and the
reader's faster composition: the same tree, the same errors, every check run."""

from __future__ import annotations

import gc
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_wfbench import heap
from pytest_wfbench.tasks import TaskFileError, load_task_file
from pytest_wfbench.tasks import reader as reader_module
from pytest_wfbench.tasks.parsecache import SUFFIX, ParseCache, parse_cache
from pytest_wfbench.tasks.reader import Composer, Node, compose, decode, parse, plain
from tests.conftest import task_yaml, write_suite


def entries(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / "tasks").glob(f"*{SUFFIX}"))


def no_yaml(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make PyYAML's composer fail if called; returns the calls seen."""
    calls: list[str] = []

    def refuse(*args: Any, **kwargs: Any) -> None:
        calls.append("compose")
        raise AssertionError("PyYAML was called: the parse cache was not used")

    monkeypatch.setattr(yaml, "compose", refuse)
    return calls


def lines(node: Node) -> list[int]:
    found = [node.line]
    children = (node.value.values() if isinstance(node.value, dict)
                else node.value if isinstance(node.value, list) else [])
    for child in children:
        found += lines(child)
    return found


def test_a_second_load_comes_from_the_cache_without_pyyaml(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = write_suite(tmp_path / "suite")
    cache = tmp_path / "cache"
    first = load_task_file(suite.task_file, cache_dir=cache)
    assert len(entries(cache)) == 1
    no_yaml(monkeypatch)
    second = load_task_file(suite.task_file, cache_dir=cache)
    assert second == first
    with pytest.raises(AssertionError, match="PyYAML was called"):
        load_task_file(suite.task_file)  # without the cache dir: parsed, so refused


def test_a_changed_file_is_parsed_again(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite")
    cache = tmp_path / "cache"
    load_task_file(suite.task_file, cache_dir=cache)
    suite.task_file.write_text(suite.task_file.read_text().replace(
        '"class": "bug"', '"class": "edited"'))
    edited = load_task_file(suite.task_file, cache_dir=cache)
    assert edited.tasks[0].task_class == "edited"
    assert len(entries(cache)) == 2  # one entry per content


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "empty", "other magic"])
def test_a_corrupted_entry_is_ignored_and_rebuilt(tmp_path: Path, damage: str) -> None:
    suite = write_suite(tmp_path / "suite")
    cache = tmp_path / "cache"
    expected = load_task_file(suite.task_file, cache_dir=cache)
    (entry,) = entries(cache)
    blob = bytearray(entry.read_bytes())
    if damage == "flip a byte":
        blob[-5] ^= 0xFF
    elif damage == "truncate":
        del blob[len(blob) // 2:]
    elif damage == "empty":
        blob.clear()
    else:
        blob[:4] = b"XXXX"
    entry.write_bytes(bytes(blob))
    key = entry.name.removesuffix(SUFFIX)
    assert ParseCache(cache / "tasks").get(key) is None
    assert load_task_file(suite.task_file, cache_dir=cache) == expected
    assert ParseCache(cache / "tasks").get(key) is not None  # written again, whole


def test_errors_name_the_same_line_from_the_cache(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    suite = write_suite(tmp_path / "suite")
    suite.task_file.write_text(suite.task_file.read_text().replace('"timeout": 60',
                                                                   '"timeout": -1'))
    cache = tmp_path / "cache"
    with pytest.raises(TaskFileError) as cold:
        load_task_file(suite.task_file, cache_dir=cache)
    no_yaml(monkeypatch)
    with pytest.raises(TaskFileError) as warm:
        load_task_file(suite.task_file, cache_dir=cache)
    assert str(warm.value) == str(cold.value)
    assert (warm.value.line, warm.value.task, warm.value.field) == \
        (cold.value.line, "fix-add", "timeout")
    assert cold.value.line is not None and cold.value.line > 1


def test_file_system_checks_run_on_a_cached_tree(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    suite = write_suite(tmp_path / "suite")
    cache = tmp_path / "cache"
    load_task_file(suite.task_file, cache_dir=cache)
    shutil.rmtree(suite.root / "oracle")
    no_yaml(monkeypatch)
    with pytest.raises(TaskFileError, match=r"field 'oracle.files': .*oracle does not exist"):
        load_task_file(suite.task_file, cache_dir=cache)


def test_a_file_that_does_not_parse_is_never_cached(tmp_path: Path) -> None:
    path = tmp_path / "tasks.yaml"
    path.write_text("version: 1\ntasks:\n  - id: a\n    prompt: [unclosed\n")
    cache = tmp_path / "cache"
    for _ in range(2):
        with pytest.raises(TaskFileError, match=r"tasks\.yaml:\d+: invalid YAML"):
            load_task_file(path, cache_dir=cache)
    assert entries(cache) == []


def test_a_value_marshal_cannot_hold_is_simply_not_cached(tmp_path: Path) -> None:
    path = tmp_path / "tasks.yaml"
    path.write_text("version: 1\nwhen: 2001-12-14\n")
    cache = parse_cache(tmp_path / "cache")
    assert plain(compose(path, cache))["when"].isoformat() == "2001-12-14"
    assert entries(tmp_path / "cache") == []
    assert parse_cache(None) is None


def test_an_unknown_tag_is_a_located_task_file_error(tmp_path: Path) -> None:
    path = tmp_path / "tasks.yaml"
    path.write_text("version: 1\ntasks:\n  - id: a\n    prompt: !!python/name:os.system\n")
    with pytest.raises(TaskFileError, match=r"tasks\.yaml:4: invalid YAML: could not "
                                            r"determine a constructor"):
        load_task_file(path)


TRICKY = """\
plain: hello world
quoted: "yes"
single: 'null'
bools: [yes, No, on, OFF, true, False, y, n]
nulls: [~, null, Null, '']
empty:
ints: [0, -12, +7, 0x1F, 0o17, 017, 1_000, "12", 190:20:30]
floats: [1.5, -.5, 1e3, 6.8523015e+5, .inf, -.Inf, .NaN, 1_0.5]
tagged: [!!str 12, !!int "3", !!float 4, !!binary aGVsbG8=, !!bool yes]
stamp: 2001-12-14t21:59:43.10-05:00
nested:
  - {a: 1, b: [x, {c: d}]}
  - |
    a literal block
  - >
    folded
    text
"""
RESOLVED_ONLY = "merge: <<\nvalue: =\nodd: [=, <<, ! x]\n"
"""Scalars the resolvers tag but no safe constructor builds: compared as tags."""


def test_the_composer_and_the_fast_conversion_give_pyyaml_s_values_and_lines(
        tmp_path: Path) -> None:
    stock = yaml.compose(TRICKY + RESOLVED_ONLY, Loader=reader_module.COMPOSER)
    fast = yaml.compose(TRICKY + RESOLVED_ONLY, Loader=Composer)

    def tags(node: yaml.Node) -> list[str]:
        found = [node.tag]
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                found += tags(key) + tags(value)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                found += tags(item)
        return found

    assert stock is not None and fast is not None
    assert tags(fast) == tags(stock)
    path = tmp_path / "tricky.yaml"
    path.write_text(TRICKY)
    encoded, tree = parse(path, TRICKY.encode())
    # The nodes made in the same pass as the encoded tree are that tree decoded.
    assert lines(tree) == lines(decode(encoded))
    assert repr(plain(tree)) == repr(plain(decode(encoded)))  # repr: NaN is not == NaN
    expected = yaml.safe_load(TRICKY)
    got = plain(tree)
    assert math.isnan(got["floats"].pop(6)) and math.isnan(expected["floats"].pop(6))
    assert got == expected
    assert lines(tree)[:4] == [1, 1, 2, 3]
    cache = tmp_path / "cache"
    cold = compose(path, parse_cache(cache))
    warm = compose(path, parse_cache(cache))
    assert len(entries(cache)) == 0  # the timestamp: not cached, parsed each time
    assert lines(warm) == lines(cold)


def test_cached_and_parsed_trees_are_the_same_nodes(tmp_path: Path) -> None:
    path = tmp_path / "tasks.yaml"
    text = TRICKY.replace("stamp: 2001-12-14t21:59:43.10-05:00\n", "")
    path.write_text(text)
    cache = parse_cache(tmp_path / "cache")
    cold = compose(path, cache)
    assert len(entries(tmp_path / "cache")) == 1
    warm = compose(path, cache)
    got_cold, got_warm = plain(cold), plain(warm)
    for tree in (got_cold, got_warm):
        tree["floats"].pop(6)  # NaN is never equal to itself
    assert got_warm == got_cold
    assert lines(warm) == lines(cold)


@pytest.mark.parametrize("large", [False, True])
def test_a_large_task_file_is_frozen_before_the_collector_runs_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, large: bool) -> None:
    """What a file of many tasks made lives until the session ends: frozen while
    the collector is still paused (its first collection after the load would
    walk every one of those objects); a small file is left alone."""
    suite = write_suite(tmp_path / "suite", tasks=[task_yaml(f"t{i}") for i in range(3)])
    monkeypatch.setattr(heap, "FREEZE_FROM", 3 if large else 4)
    frozen: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(gc.isenabled()))
    assert len(load_task_file(suite.task_file).tasks) == 3
    assert frozen == ([False] if large else [])
    assert gc.isenabled()


def test_loading_a_task_file_leaves_no_cyclic_garbage_to_freeze(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a large file made is frozen as loading ends: nothing unreachable may
    be among it (the YAML loader's cycle held a node and two marks per task)."""
    suite = write_suite(tmp_path / "suite", tasks=[task_yaml(f"t{i}") for i in range(50)])
    monkeypatch.setattr(heap, "FREEZE_FROM", 1)
    unreachable: list[int] = []
    monkeypatch.setattr(gc, "freeze", lambda: unreachable.append(gc.collect()))
    gc.collect()
    load_task_file(suite.task_file)
    assert unreachable == [0]
