"""The cell ids' column (table/cells.py): a frame's ids packed as one text and
where each ends, read back as they were; a frame whose packed ids are not
what a frame holds is no frame."""

from __future__ import annotations

import random
from array import array
from typing import Any

import pytest

from pytest_wfbench.table import FrameError, Table, check, encode
from pytest_wfbench.table.cells import END_TYPE, Cells, pack, packed_ok

IDS = ["task-1-gold-r1", "", "ünïcode-✓-r2", "x" * 300, "task-1-gold-r1", "🙂"]


def cells_of(frames: list[list[Any]]) -> Cells:
    cells = Cells()
    for ids in frames:
        cells.extend(pack(ids), len(ids))
    return cells


def test_ids_come_back_as_they_were_whatever_the_frames_and_positions() -> None:
    rng = random.Random(4)
    frames: list[list[Any]] = [[rng.choice(IDS) + str(n) for n in range(rng.randint(0, 9))]
                               for _ in range(30)]
    frames[3] = [7, None, "text", 2.5]  # not all text: held as they are
    frames[11] = []
    every = [value for ids in frames for value in ids]
    cells = cells_of(frames)
    assert len(cells) == len(every)
    assert [cells[i] for i in range(len(every))] == every
    assert cells[-1] == every[-1] and cells[2:9] == every[2:9]
    for positions in (range(len(every)), range(len(every) - 1, -1, -1),
                      [rng.randrange(len(every)) for _ in range(200)], []):
        assert cells.at(positions) == tuple(every[i] for i in positions)
    for wrong in (len(every), -len(every) - 1):
        with pytest.raises(IndexError):
            cells[wrong]
    with pytest.raises(IndexError):
        cells.at([0, len(every)])
    assert type(pack(frames[3])) is tuple and pack(frames[3]) == tuple(frames[3])


def test_a_table_names_its_rows_by_their_ids_from_packed_frames() -> None:
    rows: list[dict[str, Any]] = [{"cell_id": value, "run": n} for n, value in
                                  enumerate([*IDS, 5, None])]
    table = Table.of(rows)
    assert [table.row(i).get("cell_id") for i in table.positions] == [*IDS, 5, None]
    again = Table()
    again.append(table.frame(list(table.positions)[::-1]))
    assert [again.value("cell_id", i) for i in again.positions or range(again.size)] == [
        None, 5, *IDS[::-1]]


def ends(*values: int) -> bytes:
    return array(END_TYPE, values).tobytes()


@pytest.mark.parametrize(("column", "count", "ok"), [
    (["abc", ends(1, 3)], 2, True),
    (["", b""], 0, True),
    (["abc", ends(2, 1)], 2, False),  # an end before the one before it
    (["abc", ends(1, 2)], 2, False),  # the last end short of the text's
    (["abc", ends(1, 4)], 2, False),  # past it
    (["abc", ends(3)], 2, False),  # fewer ends than rows
    (["abc", ends(3)[:-1]], 1, False),  # not a whole end
    ([b"abc", ends(3)], 1, False),  # no text
    (("abc", ends(3)), 1, False),  # a tuple: ids as they are, not packed
    (["abc", ends(3), "more"], 1, False),
])
def test_packed_ids_are_checked(column: Any, count: int, ok: bool) -> None:
    assert packed_ok(column, count) is ok
    frame = encode([{"cell_id": f"c{n}"} for n in range(count)])
    objects = (column, *frame[2][1:])
    if ok or (type(column) is tuple and len(column) == count):
        check((frame[0], frame[1], objects, *frame[3:]))
    else:
        with pytest.raises(FrameError):
            check((frame[0], frame[1], objects, *frame[3:]))
