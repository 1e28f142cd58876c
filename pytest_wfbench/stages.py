"""What the cell's stages share: the stage runner, which turns whatever a stage
raises into the cell's error kind (and times it), the host folders of a cell,
the captured final tree, the session's figures into the record, and the
sources the suspicion scan reads."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pytest_wfbench.agents.phases import token_totals
from pytest_wfbench.git import GitError
from pytest_wfbench.judge.suspicion import changed_paths
from pytest_wfbench.outcomes import CellFailure, CellVerdict
from pytest_wfbench.row import CellRecord
from pytest_wfbench.sandbox import LayersUnavailable
from pytest_wfbench.session import SessionResult
from pytest_wfbench.workspace.capture import Capture, TreeLimitExceeded
from pytest_wfbench.workspace.clone import Workspace
from pytest_wfbench.workspace.layers import JudgedTree
from pytest_wfbench.workspace.template import TemplateError

AFTER_SESSION = "evidence-tampered"
"""The error kind of a stage that fails after the session completed: counted."""
MAX_SCANNED_BYTES = 32 << 20


@contextmanager
def stage(record: CellRecord, name: str, default_kind: str = "infra-error") -> Iterator[None]:
    """Turn whatever a stage raises into the record's error kind. A verdict (the
    arm's own failure: a timeout, a limit) is recorded and ends the stage
    quietly, so the cell goes on to its row and pytest reports a failure; any
    other failure is re-raised, and pytest reports an error. An exception of
    no known kind is a harness bug: ``harness-error``. Its time goes into the
    record's stage times."""
    started = time.monotonic()
    if record.progress is not None:
        record.progress(name)
    try:
        yield
    except CellVerdict as verdict:
        record.fail(verdict.kind, verdict.detail)
        if record.limit_exceeded is None:
            record.limit_exceeded = verdict.limit
    except TreeLimitExceeded as exc:
        record.fail("limit-exceeded", f"{name}: {exc.detail}")
        if record.limit_exceeded is None:
            record.limit_exceeded = {"limit": exc.limit, "value": exc.value}
    except CellFailure as failure:
        record.fail(failure.kind, failure.detail)
        raise
    except LayersUnavailable as exc:
        # The machine failed the cell, whichever stage (no arm reaches it).
        record.fail("infra-error", f"{name}: {exc}")
        raise CellFailure("infra-error", f"{name}: {exc}") from exc
    except (TemplateError, GitError, OSError) as exc:
        record.fail(default_kind, f"{name}: {exc}")
        raise CellFailure(default_kind, f"{name}: {exc}") from exc
    except KeyboardInterrupt:
        record.fail("cancelled", f"interrupted during {name}")
        raise
    except Exception as exc:
        detail = f"{name}: {type(exc).__name__}: {exc}"
        record.fail("harness-error", detail)
        raise CellFailure("harness-error", detail) from exc
    finally:
        record.add_stage_time(name, time.monotonic() - started)


@dataclass(frozen=True)
class CellPaths:
    """A cell's private host directories (random names: nothing in them says
    which task or arm the cell is): its workspace and its agent HOME."""

    root: Path
    workspace: Workspace
    home: Path


@dataclass(frozen=True)
class FinalTree:
    """The harness's own copy of the workspace as the arm left it (a layer over
    the template when the workspace was layered)."""

    tree: JudgedTree
    capture: Capture


def record_session(record: CellRecord, result: SessionResult) -> None:
    """What the arm spent, even when it failed half-way."""
    record.session_duration_s = result.duration_s
    record.tool_calls = result.tool_calls
    record.estimated_tokens = result.estimated_tokens
    record.steps = result.steps
    record.num_turns = result.num_turns
    record.session_ids = list(result.session_ids)
    record.phases = result.phases
    record.main_usage = result.main_usage
    record.model_usage = result.model_usage
    record.artifacts.extend(result.artifacts)
    if record.phases:
        record.cost_usd = result.cost_usd
        totals = token_totals(result)
        record.input_tokens = totals["input_tokens"]
        record.cache_creation_input_tokens = totals["cache_creation_input_tokens"]
        record.cache_read_input_tokens = totals["cache_read_input_tokens"]
        record.output_tokens = totals["output_tokens"]


def python_sources(final: FinalTree, patch: str, notes: tuple[str, ...]) -> dict[str, bytes]:
    """The changed Python files as they are in the captured tree (the large ones
    the patch only summarizes included), up to MAX_SCANNED_BYTES in all, so the
    suspicion scan reads them as Python does."""
    large = {f.path for f in final.capture.large_files
             if any(note.startswith("large file") and f": {f.path} (" in note for note in notes)}
    wanted = [path for path in (*changed_paths(patch), *sorted(large))
              if path.endswith((".py", ".pyw", ".pth"))]
    sources: dict[str, bytes] = {}
    budget = MAX_SCANNED_BYTES  # in all: past it the scan says the rest is unread
    for path in dict.fromkeys(wanted):
        if budget <= 0:
            break
        content = final.tree.read_regular(PurePosixPath(path), budget)
        if content is not None:
            budget -= len(content)
            sources[path] = content
    return sources
