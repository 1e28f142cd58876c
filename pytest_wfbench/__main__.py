"""``python -m pytest_wfbench``: the ``wfbench`` command."""

from __future__ import annotations

import sys

from pytest_wfbench.cli import main

if __name__ == "__main__":
    sys.exit(main())
