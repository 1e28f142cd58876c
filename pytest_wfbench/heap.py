"""The cyclic garbage collector around the harness's bulk work.

Loading 10,000 tasks or collecting 10,000 cells makes hundreds of thousands of
objects and no reference cycle; each full collection on the way walks every
live object, and those collections took most of the time. So the bulk work
runs with the collector paused, and what lives until the session ends (the
tasks, the collected items; a large report, which lives as long as the process
that built it: the end of a sweep, a wfbench command) is frozen once: never
walked again, by later collections nor by the ones pytest forces at its end.
(A report of 100,000 rows leaves some 140,000 objects that have no cycle; the
collections after it walked them for 0.1 s.)
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside (reference counting still frees everything
    that is not in a cycle); the collector runs again as before afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


FREEZE_FROM = 1000
"""Items (collected cells, a report's rows) from which what they made is
frozen: below, a few full collections cost little; from here on they cost more
than the items' cycles could leak."""


def freeze_long_lived(items: int) -> None:
    """After a collection (or a report) of ``items`` items (from FREEZE_FROM on),
    before the collector runs again, move every object alive now out of the
    collector's reach for good: they live until the process ends. (A session run
    in-process, as pytester can, leaves its cycles behind then: the price of not
    walking 10,000 items at every full collection, pytest's final ones included.)"""
    if items >= FREEZE_FROM:
        gc.freeze()


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
"""glibc's ``mallopt`` parameters: the free memory at the heap's top kept, and
the size from which a block is mapped on its own."""
MAPPED_FROM = 128 * 1024
"""glibc's own threshold, as a process starts."""
KEPT_BELOW = 32 * 1024 * 1024
"""The largest threshold glibc would raise its own to."""


def _mallopt(parameter: int, value: int) -> None:
    """Set an allocator parameter, where the C library is glibc (elsewhere, or
    with none to be found, nothing)."""
    with contextlib.suppress(OSError, AttributeError, TypeError):
        import ctypes  # only when asked: the workers that write rows never need it

        libc = ctypes.CDLL(None)
        if hasattr(libc, "gnu_get_libc_version"):
            libc.mallopt(parameter, value)


@contextlib.contextmanager
def columns_growing() -> Iterator[None]:
    """While a report reads its rows: every block of MAPPED_FROM bytes or more
    is mapped on its own, so that freeing it gives its memory back at once.

    glibc starts so, but raises the threshold to the size of each mapped block
    freed (up to 32 MiB): once the read lets the line log go (10 MB at 100,000
    rows), every column it grows afterwards (a list, an array, grown by
    copying) would live in the heap, and the heap keep what they leave behind:
    some 10 MiB more at the peak of a report of 100,000 rows. After the read,
    blocks below KEPT_BELOW stay in the heap, and the heap keeps twice that
    free at its top (what glibc's own raised threshold would do): the
    aggregation's arrays, made and freed many times (a bootstrap's draws), are
    not mapped and faulted in afresh each time (mapped, the promotion gate's
    bootstraps of 100 tasks took 2.4 s instead of 1). The settings stay the
    process's (glibc has no way back to adjusting its own): only a report's
    process reads so (the controller at a sweep's end, a wfbench command), and
    what it keeps is what glibc's own adjustment would reach."""
    _mallopt(M_MMAP_THRESHOLD, MAPPED_FROM)
    try:
        yield
    finally:
        _mallopt(M_MMAP_THRESHOLD, KEPT_BELOW)
        _mallopt(M_TRIM_THRESHOLD, 2 * KEPT_BELOW)
