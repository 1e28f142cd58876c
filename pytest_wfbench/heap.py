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


M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameter: the size from which a block is mapped on its own."""
MAPPED_FROM = 128 * 1024
"""glibc's own threshold, as a process starts."""
_mapped: list[bool] = []


def large_blocks_mapped() -> None:
    """Have the C allocator map every block of MAPPED_FROM bytes or more on its
    own, so that freeing it gives its memory back to the system at once.

    glibc starts so, but raises the threshold to the size of each mapped block
    freed (up to 32 MiB): once a report's read lets the line log go (10 MB at
    100,000 rows), every column it grows afterwards (a list, an array, grown
    by copying) lives in the heap, and the heap keeps what they leave behind:
    some 13 MiB more at the peak of a report of 100,000 rows. Fixing the
    threshold keeps glibc's starting one. Elsewhere (another C library, or none
    to be found) this does nothing. Once a process is enough."""
    if _mapped:
        return
    _mapped.append(True)
    with contextlib.suppress(OSError, AttributeError, TypeError):
        import ctypes  # only when asked: the workers that write rows never need it

        libc = ctypes.CDLL(None)
        if hasattr(libc, "gnu_get_libc_version"):
            libc.mallopt(M_MMAP_THRESHOLD, MAPPED_FROM)
