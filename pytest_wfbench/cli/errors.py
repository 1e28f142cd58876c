"""The ``wfbench`` command's exit codes and the error its subcommands raise."""

from __future__ import annotations

OK = 0
"""The command did what it was asked, and its check (if it has one) held."""
CHECK_FAILED = 1
"""The command's check failed: ``validate`` found an invalid task file or an
unsound task; ``merge`` refused its inputs (cells measured with different
identities, shards missing or of different sweeps)."""
USAGE = 2
"""A usage error: a bad option, or a path that is not what its argument needs
(no such out dir, no results.jsonl, an unreadable sweep.json). argparse's own."""
FAILED = 3
"""The work could not be done: a file could not be written, report.html failed to
render (a bug), the pytest subprocess of ``validate --gold`` could not start."""


class CliError(Exception):
    """An error the command reports in one line (naming the file or argument)
    and exits with ``code``."""

    def __init__(self, message: str, code: int = USAGE) -> None:
        super().__init__(message)
        self.code = code
