"""What a sweep checks of its review tasks before any cell runs (controller only):
each task's change applies to its template, so a broken task file is a usage
error naming the file, the task and the field ``change``, not a column of failed
cells."""

from __future__ import annotations

from pytest_wfbench.git import GitError
from pytest_wfbench.review.change import ChangeError, check_change_applies
from pytest_wfbench.sweep import Sweep
from pytest_wfbench.tasks import TaskFileError
from pytest_wfbench.workspace.template import TemplateError


def check_review_changes(sweep: Sweep) -> int:
    """Check, once per (task, template), that every review task with a cell to run
    has a change that applies to its template; return how many were checked.
    Raise :class:`TaskFileError` for the first that does not. A template that
    cannot be built is left to the cells, which report it as any cell does."""
    checked: set[str] = set()
    for cells in sweep.cells.values():
        for cell in cells:
            task = cell.task
            if not task.is_review or task.id in checked or sweep.skip_reason(cell) is not None:
                continue
            assert task.change is not None, "a review task has a change"
            checked.add(task.id)
            try:
                template = sweep.templates().get(task)
            except (TemplateError, GitError, OSError):
                continue
            try:
                check_change_applies(template.path, task.change.read_bytes())
            except ChangeError as error:
                raise TaskFileError(
                    task.source, task.line, f"{task.change}: {error} (checked against the "
                    f"task's repository at {template.base_sha[:12]}, before setup)",
                    task=task.id, field="change") from error
    return len(checked)
