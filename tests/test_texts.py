"""A table's columns of shared values (pytest_wfbench/table/texts.py): each
value once, each row a code; whatever the rows hold, a row reads back the value
it had, and the rows said equal to a value are the rows whose value is equal."""

from __future__ import annotations

import random
from array import array
from operator import itemgetter
from typing import Any

import pytest

from pytest_wfbench.aggregate import summarize_table
from pytest_wfbench.table import OBJECTS, FrameError, Table, check, encode, gather
from pytest_wfbench.table.frame import CODE_TYPES, code_column
from pytest_wfbench.table.texts import Texts
from tests.rows import row


def test_a_column_reads_back_what_its_rows_had_in_every_way_it_is_read() -> None:
    rng = random.Random(3)
    pool = ["ran", "skipped", None, "", "ran ", "é", *(f"t{n}" for n in range(40))]
    rows = [rng.choice(pool) for _ in range(3000)]
    texts = Texts()
    for start in range(0, len(rows), 700):  # a frame at a time, as a table grows
        texts.extend(rows[start:start + 700])
    assert len(texts) == len(rows) and list(texts) == rows and texts[5:40] == rows[5:40]
    assert texts.codes.typecode == "B" and len(texts.values) == len(set(rows))
    positions = [rng.randrange(len(rows)) for _ in range(500)]
    assert gather(texts, positions) == itemgetter(*positions)(rows)
    assert gather(texts, positions[:1]) == (rows[positions[0]],) and gather(texts, []) == ()
    for value in pool:
        code = texts.code(value)
        assert [i for i, c in enumerate(texts.codes) if c == code] == [
            i for i, had in enumerate(rows) if had == value]


def test_codes_widen_as_the_values_grow() -> None:
    texts = Texts(["a"] * 3)
    texts.extend([f"task-{n}" for n in range(300)])
    widths = [texts.codes.typecode]
    texts.extend([f"cell-{n}" for n in range(70_000)])
    widths.append(texts.codes.typecode)
    assert widths == ["H", "I"]
    assert texts[0] == "a" and texts[302] == "task-299" and texts[-1] == "cell-69999"
    assert len(texts) == 70_303 and texts.code("task-7") == 8


@pytest.mark.parametrize("odd", [1, True, 1.0, b"ran", ["ran"], {"k": "ran"}, float("nan")])
def test_a_value_that_is_no_text_is_its_own_and_never_equal_to_a_text(odd: Any) -> None:
    """A row whose field is no text (its table keeps it whole) reads back as it
    was, the same object; no other row takes its code, and it takes no text's."""
    texts = Texts(["ran", "1", "True"])
    texts.extend(["ran", odd, "1", odd, "True"])
    assert texts[4] is odd and texts[6] is odd and texts[4:7] == [odd, "1", odd]
    assert texts.codes[4] != texts.codes[6]  # each its own: 1 and True are not merged
    assert [texts[i] for i in range(8)][5] == "1" and texts.code("1") == texts.codes[5]
    assert texts.code(odd) is None  # a code is a text's (or null's)
    ran = texts.code("ran")
    assert ran is not None and texts.codes.count(ran) == 2


def test_a_table_of_many_tasks_groups_and_selects_as_its_rows_say() -> None:
    """Past 256 tasks the codes widen; the report's groups and selections are
    the rows' own (a task that is no text is kept whole, and its group is
    its text, as before)."""
    rows = [row(f"task-{n // 2}", "baseline", n % 2 + 1, sweep_id="s",
                resolved=n % 3 == 0, kind=None if n % 3 == 0 else "oracle-failed")
            for n in range(700)]
    rows[5]["status"], rows[5]["skip_reason"] = "skipped", "filtered"
    rows[9]["task"] = 3  # no text: a group "3"
    table = Table.of(rows)
    assert table.texts("task").codes.typecode == "H"
    assert table.agent() == list(range(700))
    assert list(gather(table.obj("task"), table.positions)) == [r["task"] for r in rows]
    assert table.row(9)["task"] == 3 and table.row(8)["task"] == "task-4"
    summary = summarize_table(table, table.positions)
    assert [r["cell_id"] for r in summary.skipped] == [rows[5]["cell_id"]]
    by_task = {cell.task: cell for cell in summary.cells}
    assert "3" in by_task and by_task["3"].attempts == 1
    assert by_task["task-2"].attempts == 1 and by_task["task-2"].skipped == 1
    assert sum(cell.resolved for cell in summary.cells) == sum(
        1 for r in rows if r["resolved"] and r["status"] == "ran")


def decoded(coded: tuple[tuple[Any, ...], bytes]) -> list[Any]:
    values, codes = coded
    width = next(w for w in (1, 2, 4) if len(values) <= 1 << (8 * w))
    return [values[c] for c in array(CODE_TYPES[width], codes)]


def test_a_frames_column_is_coded_and_read_back_into_any_column() -> None:
    """A frame holds a column of shared strings as its values and a code a row
    (as narrow as they fit); a table reads those codes into its own, whatever
    its width (bytes translated, or numpy's take), to the same values."""
    rng = random.Random(4)
    for distinct in (1, 3, 256, 257, 70_000):
        pool: list[Any] = [f"v{n}" for n in range(distinct)]
        column = [rng.choice(pool) for _ in range(1000)] + pool
        coded = code_column(column)
        assert decoded(coded) == column and len(coded[0]) == len(set(column))
        assert len(coded[1]) == len(column) * (1 if distinct <= 256 else 2 if distinct
                                               <= 65536 else 4)
        for start in ([], ["x"] * 5, [f"w{n}" for n in range(300)]):
            texts = Texts(start)
            texts.extend_coded(*coded, len(column))
            assert list(texts) == [*start, *column]
    odd = ["a", 1, True, "a", None, ["l"], None]
    values, codes = code_column(odd)
    assert values == ("a", 1, True, None, ["l"]) and decoded((values, codes)) == odd
    texts = Texts(["True", "1"])
    texts.extend_coded(values, codes, len(odd))
    assert list(texts)[2:] == odd and texts.code("a") == texts.codes[2]
    assert texts.codes[3] != texts.codes[4]  # 1 and True: each its own


def test_a_coded_column_that_does_not_check_is_a_misshapen_frame() -> None:
    frame = encode([row("t", "a", 1), row("t", "b", 2)], [b"k" * 32] * 2)
    assert check(frame) is frame
    status = OBJECTS.index("status")

    def with_status(coded: Any) -> tuple[Any, ...]:
        objects = list(frame[2])
        objects[status] = coded
        return (*frame[:2], tuple(objects), *frame[3:])

    values, codes = frame[2][status]
    for bad in [(values, codes + b"\0"), (values, bytes([len(values)]) * 2), (list(values), codes),
                (values,), (values, codes.decode()), (values[:0], codes),
                (values, array("H", [0, 300]).tobytes()),
                ((*values, values[0]), codes),  # a text twice
                (tuple(f"v{n}" for n in range(257)), codes)]:  # more than a byte tells apart
        with pytest.raises(FrameError):
            check(with_status(bad))
    assert check(with_status((("ran", *(f"x{n}" for n in range(299))),
                              array("H", [0, 299]).tobytes())))
