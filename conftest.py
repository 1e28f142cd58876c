"""Repository-level pytest configuration.

The demo suite's target project and hidden oracles live under ``tasks/``;
they are inputs of sweeps, never tests of this repository.
"""

collect_ignore_glob = ["tasks/*"]
