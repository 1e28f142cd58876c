"""Red-team round 4, agent sessions: a session that ends without completing is
an excluded session error only when the model service failed, as the harness's
API proxy saw it; what the agent runs can end its own CLI, and that is counted."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_wfbench.agents.proxy import SessionLog, SseToolUses
from tests.conftest import task_yaml
from tests.fakeapi import disconnect, http_error, tool_use, turn
from tests.test_agent import FIX, agent_suite, api_key, sweep  # noqa: F401 (fixtures)

RETRIES_OFF = {"sandbox": {"env": {"CLAUDE_CODE_MAX_RETRIES": "0"}}}


def bash(command: str) -> Any:
    return tool_use("Bash", {"command": command, "description": "run"})


@pytest.mark.cli
@pytest.mark.parametrize("ending", ["kill -9 $PPID; sleep 5", "kill -TERM $PPID; sleep 5",
                                    "kill -SEGV $PPID; sleep 5"])
def test_an_agent_that_ends_its_own_cli_is_counted_not_excluded(
    pytester: pytest.Pytester, sweep: Any, ending: str  # noqa: F811
) -> None:
    """The agent's tools run under the CLI: killing it, with any signal, left no
    JSON result, and the cell was an excluded session-error (a losing run taken
    out of the resolve rate, and a step toward tripping the outage breaker)."""
    suite = agent_suite(pytester.path, ["baseline"])
    result, _ = sweep(suite, [turn(bash(ending)), turn("Done.")])
    result.assert_outcomes(errors=1)
    row = suite.row("fix-add-baseline-r1")
    assert row["error_kind"] == "evidence-tampered" and row["counted"] is True
    assert row["resolved"] is False
    assert "the model service answered every request" in row["error_detail"]


@pytest.mark.cli
def test_the_service_failing_mid_session_stays_an_excluded_session_error(
    pytester: pytest.Pytester, sweep: Any  # noqa: F811
) -> None:
    """After a tool call, as before it: a 5xx, a 429 or a cut answer is the
    service's failure, whatever the agent ran; so is any error answer before the
    model's first tool call (an unknown model), when nothing the agent runs exists."""
    tasks = [task_yaml(f"t{i}", **RETRIES_OFF) for i in range(4)]
    suite = agent_suite(pytester.path, ["baseline"], tasks=tasks)
    script = [turn(FIX), http_error(500, message="down"),
              turn(FIX), http_error(429, "rate_limit_error", message="slow down"),
              turn(FIX), disconnect(), disconnect(), disconnect(),
              http_error(404, "not_found_error", message="no such model")]
    result, _ = sweep(suite, script)
    result.assert_outcomes(errors=4)
    for index in range(4):
        row = suite.row(f"t{index}-baseline-r1")
        assert row["error_kind"] == "session-error" and row["counted"] is False, row


def test_the_proxy_tells_the_services_failures_from_the_clients() -> None:
    log = SessionLog()
    parser = SseToolUses(log)
    parser.feed(b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error"}}'
                b"\n\n")
    assert log.service_failures == ["an error event in the stream (overloaded_error)"]
