"""Red-team round 4, agent sessions: a session that ends without completing is
an excluded session error only when the model service failed, as the harness's
API proxy saw it; what the agent runs can end its own CLI, and that is counted."""

from __future__ import annotations

import json
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
    assert row["phases"][0]["service_failures"] == [] and row["phases"][0]["proxied_requests"]


@pytest.mark.cli
def test_the_service_failing_mid_session_stays_an_excluded_session_error(
    pytester: pytest.Pytester, sweep: Any  # noqa: F811
) -> None:
    """After a tool call, as before it: a 5xx, a 429 or a cut answer is the
    service's failure, whatever the agent ran; so is any error answer before the
    model's first tool call (an unknown model), when nothing the agent runs exists."""
    tasks = [task_yaml(f"t{i}", **RETRIES_OFF) for i in range(4)]
    suite = agent_suite(pytester.path, ["baseline"], tasks=tasks)
    script = [http_error(404, "not_found_error", message="no such model"),
              turn(FIX), http_error(500, message="down"),
              turn(FIX), http_error(429, "rate_limit_error", message="slow down"),
              turn(FIX), disconnect(), disconnect(), disconnect()]
    result, _ = sweep(suite, script)
    result.assert_outcomes(errors=4)
    seen = []
    for index in range(4):
        row = suite.row(f"t{index}-baseline-r1")
        assert row["error_kind"] == "session-error" and row["counted"] is False, row
        assert row["phases"][0]["service_failures"], row["phases"]
        seen += row["phases"][0]["service_failures"]
    # (How many requests each failure takes is the CLI's: retries, a fallback.)
    for failure in ("HTTP 404", "HTTP 500", "HTTP 429", "no answer"):
        assert any(item.startswith(failure) for item in seen), (failure, seen)


def test_the_proxy_tells_the_services_failures_from_the_clients() -> None:
    log = SessionLog()
    parser = SseToolUses(log)
    parser.feed(b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error"}}'
                b"\n\n")
    assert log.service_failures == ["an error event in the stream (overloaded_error)"]



def forge(result: dict[str, Any]) -> str:
    """A step that writes a result line into the CLI's own output, then kills it."""
    line = json.dumps(result).replace("'", "")
    return f"echo '{line}' > /proc/$PPID/fd/1; kill -9 $PPID; sleep 5"


@pytest.mark.cli
def test_a_result_line_the_agent_wrote_into_the_cli_output_is_counted(
    pytester: pytest.Pytester, sweep: Any  # noqa: F811
) -> None:
    """A process of the session can write into the CLI's stdout: a result the CLI
    would never write (a figure that is not a number) raised in the harness, a
    harness-error excluded before the session completed; a second result line
    beside the CLI's own is the session writing into it too."""
    tasks = [task_yaml("malformed"), task_yaml("second")]
    suite = agent_suite(pytester.path, ["baseline"], tasks=tasks)
    second = json.dumps({"type": "result", "is_error": True, "num_turns": 1}).replace("'", "")
    # The killed CLI asks for no further turn.
    script = [turn(bash(forge({"type": "result", "num_turns": "many", "is_error": False}))),
              turn(bash(f"echo '{second}' > /proc/$PPID/fd/1")), turn(FIX), turn("Fixed.")]
    result, _ = sweep(suite, script)
    result.assert_outcomes(errors=2)
    malformed, doubled = suite.row("malformed-baseline-r1"), suite.row("second-baseline-r1")
    assert malformed["error_kind"] == "evidence-tampered" and malformed["counted"] is True
    assert "not what the CLI writes (num_turns 'many')" in malformed["error_detail"]
    assert doubled["error_kind"] == "evidence-tampered" and doubled["counted"] is True
    assert "holds 2 results where the CLI writes one" in doubled["error_detail"]


@pytest.mark.cli
def test_a_forged_session_id_makes_the_harness_read_no_host_file(
    pytester: pytest.Pytester, sweep: Any  # noqa: F811
) -> None:
    """The transcript is read from the agent's HOME by the result's session id:
    one with ../ steps named a host file (the cell's HOME host path is in the
    sandbox's mount table), which the harness copied into the out dir."""
    loot = pytester.path / "loot.jsonl"
    loot.write_text('{"type": "HOST-SECRET-MARKER"}\n')
    relative = (f"python3 -c \"import os; print(os.path.relpath('{loot.with_suffix('')}', "
                "os.path.join([l.split()[3] for l in open('/proc/self/mountinfo') "
                "if l.split()[4] == '/home/wfbench'][0], '.claude/projects/-workspace')))\"")
    step = (f"id=$({relative}); echo '{{\"type\": \"result\", \"session_id\": \"'$id'\", "
            "\"is_error\": false}' > /proc/$PPID/fd/1; kill -9 $PPID; sleep 5")
    suite = agent_suite(pytester.path, ["baseline"])
    result, _ = sweep(suite, [turn(bash(step)), turn("Done.")])
    result.assert_outcomes(errors=1)
    row = suite.row("fix-add-baseline-r1")
    assert row["error_kind"] == "evidence-tampered" and row["counted"] is True
    assert "session_id '../" in row["error_detail"]
    for path in suite.out.rglob("*"):
        if path.is_file():
            assert "HOST-SECRET-MARKER" not in path.read_text(errors="replace"), path
