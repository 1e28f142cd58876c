"""Benchmarks of pytest-wfbench against the targets of issue 8
(``python -m benchmarks``, ``make bench``).

Everything runs on generated inputs in a temporary directory, side by side in
one run: cells against their floor (``floor.py``: the same commands run
directly in bubblewrap), scaling with ``-n`` and uneven sessions, overhead by
repository size, template builds of second sweeps (``experiments.py`` on
``sweeps.py``, inputs from ``projects.py`` and ``workload.py``), collection of
10,000 cells (``measure.py``) and aggregation of 100,000 rows
(``aggregation.py`` on ``outdirs.py``). ``targets.py`` turns the figures into
the printed table. Figures are written to ``benchmarks/results/latest.json``
with the machine they came from; nothing here asserts a wall-clock threshold.
"""

from __future__ import annotations
