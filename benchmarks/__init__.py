"""Benchmarks of pytest-wfbench's own overhead (``python -m benchmarks``).

Two measurements, both on generated inputs in a temporary directory:

* **sweep**: a real sweep of ``noop`` cells on a ~2,000-file plain-directory
  repo, serial and with ``-n 2``: wall time, per-cell ``duration_s`` from the
  rows, and the template build time;
* **collection**: ``pytest --collect-only`` of 10,000 cells (1,000 tasks x 10
  runs, and 10,000 tasks x 1 run), wall time and peak RSS, plus loading the
  task file in-process.

Figures are printed and written to ``benchmarks/results/latest.json`` with the
machine they came from. Nothing here asserts a wall-clock threshold.
"""

from __future__ import annotations
