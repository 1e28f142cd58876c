"""The C allocator around a report (pytest_wfbench/heap.py): while it reads its
rows, a large block is mapped on its own (once a large block is freed, glibc
would keep the blocks below its size in the heap, and a column grown by copying
would leave its old copies there); after, the aggregation's arrays stay in the
heap (mapped, each would be faulted in afresh every time it is made)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

WHERE = """
import sys
from pytest_wfbench import heap

def where(block):
    for line in open("/proc/self/maps"):
        if line.rstrip().endswith("[heap]"):
            start, end = (int(part, 16) for part in line.split()[0].split("-"))
            return "heap" if start <= id(block) < end else "mapped"
    return "mapped"

def column():
    freed = bytes(20 << 20)  # a large block (the line log's entries), mapped...
    del freed  # ...and freed: glibc raises its threshold to its size
    return bytes(1 << 20)  # a column's size

if sys.argv[1] == "growing":
    with heap.columns_growing():
        print(where(column()))
else:
    if sys.argv[1] == "after":
        with heap.columns_growing():
            pass
    print(where(column()), where(bytes(40 << 20)))
"""


def where_blocks_go(how: str) -> str:
    done = subprocess.run([sys.executable, "-c", WHERE, how], capture_output=True,
                          text=True, check=True)
    return done.stdout.strip()


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator")
def test_a_report_maps_its_large_blocks_while_it_reads_its_rows_and_then_keeps_them() -> None:
    """A megabyte, after 20 MB were freed: in the heap as glibc leaves it,
    mapped on its own while a report reads its rows, in the heap again after
    (and 40 MB, more than glibc would ever keep there, mapped)."""
    assert where_blocks_go("default") == "heap mapped"
    assert where_blocks_go("growing") == "mapped"
    assert where_blocks_go("after") == "heap mapped"
