"""The C allocator around a report (pytest_wfbench/heap.py): once a large block
is freed, glibc would keep the blocks below its size in the heap, and a report's
columns, grown by copying, would leave their old copies there."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

HEAP_BLOCK = """
import sys
from pytest_wfbench import heap
if sys.argv[1] == "mapped":
    heap.large_blocks_mapped()
    heap.large_blocks_mapped()  # once a process is enough: the second does nothing
freed = bytes(20 << 20)  # a large block (the line log's entries), mapped...
del freed  # ...and freed: glibc raises its threshold to its size
block = bytes(1 << 20)  # a column's size
for line in open("/proc/self/maps"):
    if line.rstrip().endswith("[heap]"):
        start, end = (int(part, 16) for part in line.split()[0].split("-"))
        print("heap" if start <= id(block) < end else "mapped")
        break
else:
    print("mapped")
"""


def where_a_block_goes(how: str) -> str:
    done = subprocess.run([sys.executable, "-c", HEAP_BLOCK, how], capture_output=True,
                          text=True, check=True)
    return done.stdout.strip()


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator")
def test_a_report_maps_its_large_blocks_whatever_was_freed_before() -> None:
    """A megabyte, after 20 MB were freed: in the heap as glibc leaves it (what it
    leaves behind stays), mapped on its own (given back when freed) once a
    report asked."""
    assert where_a_block_goes("default") == "heap"
    assert where_a_block_goes("mapped") == "mapped"
