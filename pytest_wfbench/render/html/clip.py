"""Bounded text: what an arm wrote is kept to a fixed size per place on the
page, head and tail, with a line that says what was cut in between."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Clipped:
    """A text as shown, and how many characters of the original are not."""

    text: str
    cut: int = 0


def clip(text: str, limit: int) -> Clipped:
    """``text`` if it fits in ``limit`` characters; otherwise its first two
    thirds and last third of ``limit``, around a marker naming the cut."""
    if len(text) <= limit:
        return Clipped(text)
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    return Clipped(f"{text[:head]}\n[... {cut:,} characters cut ...]\n"
                   f"{text[len(text) - tail:] if tail else ''}", cut)


def clip_items(items: Sequence[T], head: int, tail: int) -> tuple[list[T], list[T], int]:
    """(first ``head`` items, last ``tail`` items, how many are left out
    between them); everything in the first list when it all fits."""
    if len(items) <= head + tail:
        return list(items), [], 0
    return list(items[:head]), list(items[len(items) - tail:]), len(items) - head - tail


class Budget:
    """Characters a cell may still spend on one kind of text (a transcript):
    each piece is clipped to its own limit and to what is left, so no cell's
    text outgrows its budget however many pieces it has."""

    def __init__(self, chars: int) -> None:
        self.left = chars
        self.cut = 0
        """Characters not shown because of this budget or a piece's limit."""

    def take(self, text: str, limit: int) -> Clipped:
        room = min(limit, self.left)
        if room <= 0:
            self.cut += len(text)
            return Clipped("[... not shown: this cell's budget for it is spent ...]", len(text))
        clipped = clip(text, room)
        self.left -= min(len(clipped.text), room)
        self.cut += clipped.cut
        return clipped
