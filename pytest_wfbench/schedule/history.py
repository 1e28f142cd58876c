"""The cells' durations of earlier sweeps, in the cache dir: ``durations.json``.

One entry per task and arm: the median ``duration_s`` of its cells that ran in
the last sweep that ran it, and when. The controller reads it once, before it
hands out the first cell, and merges the sweep's own figures into it at the end,
under a file lock (concurrent sweeps), written atomically. An unreadable file
is taken as empty: it only orders cells. At most MAX_ENTRIES entries are kept,
the most recently measured.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path

from filelock import FileLock

FILE = "durations.json"
FORMAT = 1
MAX_ENTRIES = 20_000


class DurationHistory:
    """The cache dir's record of cell durations (see the module)."""

    def __init__(self, cache_dir: Path) -> None:
        self.path = cache_dir / FILE

    def load(self) -> dict[str, float]:
        """task and arm (``order.history_key``) -> seconds; empty when unreadable."""
        return {key: seconds for key, (seconds, _) in self._entries().items()}

    def record(self, measured: Mapping[str, float], now: float | None = None) -> None:
        """Merge this sweep's medians in (they replace the earlier ones)."""
        if not measured:
            return
        at = time.time() if now is None else now
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.path.with_suffix(".lock"))):
            entries = self._entries()
            entries.update({key: (float(seconds), at) for key, seconds in measured.items()})
            kept = sorted(entries.items(), key=lambda item: -item[1][1])[:MAX_ENTRIES]
            data = {"format": FORMAT,
                    "entries": {key: [seconds, when] for key, (seconds, when) in kept}}
            temporary = self.path.with_name(f".{FILE}.{os.getpid()}.new")
            try:
                temporary.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
                os.replace(temporary, self.path)
            except OSError:
                with contextlib.suppress(OSError):
                    temporary.unlink()

    def _entries(self) -> dict[str, tuple[float, float]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT \
                or not isinstance(data.get("entries"), dict):
            return {}
        found: dict[str, tuple[float, float]] = {}
        for key, value in data["entries"].items():
            if (isinstance(key, str) and isinstance(value, list) and len(value) == 2
                    and all(isinstance(v, int | float) and not isinstance(v, bool)
                            for v in value) and value[0] >= 0):
                found[key] = (float(value[0]), float(value[1]))
        return found
