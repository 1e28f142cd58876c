"""Tests of the fake Anthropic server itself (stdlib HTTP client), plus the CLI probe."""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from . import FakeAnthropic, Usage, disconnect, http_error, stall, tool_use, turn
from .probe import main as probe_main

MAIN_SYSTEM = [
    {
        "type": "text",
        "text": "x-anthropic-billing-header: cc_version=2.1.332; cc_entrypoint=sdk-cli;",
    },
    {"type": "text", "text": "You are a Claude agent, built on Anthropic's Claude Agent SDK."},
]
TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]


def main_body(messages: list[dict[str, Any]] | None = None, stream: bool = False) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "system": MAIN_SYSTEM,
        "tools": TOOLS,
        "messages": messages or [{"role": "user", "content": "hi"}],
        "stream": stream,
    }


def post(
    api: FakeAnthropic,
    path: str,
    body: Any,
    headers: dict[str, str] | None = None,
    timeout: float = 10,
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(api.host, api.port, timeout=timeout)
    try:
        hdrs = {"content-type": "application/json", "x-api-key": "sk-secret"}
        hdrs.update(headers or {})
        conn.request("POST", path, body=json.dumps(body), headers=hdrs)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def sse_events(raw: bytes) -> Iterator[tuple[str, dict[str, Any]]]:
    for frame in raw.decode().split("\n\n"):
        if not frame.strip():
            continue
        lines = dict(line.split(": ", 1) for line in frame.splitlines())
        yield lines["event"], json.loads(lines["data"])


def test_non_streaming_turns_and_tool_results() -> None:
    script = [
        turn("run it", tool_use("Bash", {"command": "ls"}), usage=Usage(10, 5, 1, 2)),
        turn("done"),
    ]
    with FakeAnthropic(script) as api:
        status, headers, raw = post(api, "/v1/messages?beta=true", main_body())
        assert status == 200 and headers["content-type"] == "application/json"
        msg = json.loads(raw)
        assert msg["stop_reason"] == "tool_use"
        assert msg["usage"] == {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_creation_input_tokens": 1,
            "cache_read_input_tokens": 2,
        }
        block = msg["content"][1]
        assert block["type"] == "tool_use" and block["input"] == {"command": "ls"}
        history = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": msg["content"]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": block["id"], "content": "a"}],
            },
        ]
        status, _, raw = post(api, "/v1/messages", main_body(history))
        assert json.loads(raw)["content"] == [{"type": "text", "text": "done"}]
        assert json.loads(raw)["stop_reason"] == "end_turn"
    assert api.script_done and api.errors == []
    assert [(r.name, r.text) for r in api.tool_results] == [("Bash", "a")]
    assert api.requests[0].headers["x-api-key"] == "<present>"
    assert api.requests[0].query == {"beta": ["true"]}


def test_streaming_events() -> None:
    with FakeAnthropic(
        [turn("hello world", tool_use("Write", {"file_path": "/x", "content": "y"}))]
    ) as api:
        status, headers, raw = post(api, "/v1/messages", main_body(stream=True))
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = list(sse_events(raw))
    names = [n for n, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert all(n == d["type"] for n, d in events)
    text = "".join(
        d["delta"]["text"] for _, d in events if d.get("delta", {}).get("type") == "text_delta"
    )
    partial = "".join(
        d["delta"]["partial_json"]
        for _, d in events
        if d.get("delta", {}).get("type") == "input_json_delta"
    )
    assert text == "hello world"
    assert json.loads(partial) == {"file_path": "/x", "content": "y"}
    delta = next(d for n, d in events if n == "message_delta")
    assert delta["delta"]["stop_reason"] == "tool_use"
    assert delta["usage"]["output_tokens"] == 20


def test_side_subagent_compact_and_other_routes() -> None:
    with FakeAnthropic([turn("main")], side_text="SIDE") as api:
        no_tools = {k: v for k, v in main_body().items() if k != "tools"}
        assert json.loads(post(api, "/v1/messages", no_tools)[2])["content"][0]["text"] == "SIDE"
        sub = post(api, "/v1/messages", main_body(), {"x-claude-code-agent-id": "a1"})
        assert json.loads(sub[2])["content"][0]["text"] == "SIDE"
        compact = main_body([{"role": "user", "content": "CRITICAL: Respond with TEXT ONLY. ..."}])
        assert (
            "<summary>" in json.loads(post(api, "/v1/messages", compact)[2])["content"][0]["text"]
        )
        count = post(api, "/v1/messages/count_tokens?beta=true", main_body())
        assert count[0] == 200 and json.loads(count[2])["input_tokens"] > 0
        assert post(api, "/v1/other", {})[0] == 404
        for method in ("HEAD", "GET"):
            conn = http.client.HTTPConnection(api.host, api.port, timeout=5)
            conn.request(method, "/")
            assert conn.getresponse().status == 200
            conn.close()
        assert not api.script_done
        assert [r.kind for r in api.requests] == [
            "side", "subagent", "compact", "count_tokens", "unknown", "probe", "probe",
        ]  # fmt: skip


def test_http_error_then_turn() -> None:
    with FakeAnthropic([http_error(529), turn("ok")]) as api:
        status, headers, raw = post(api, "/v1/messages", main_body())
        assert status == 529 and "request-id" in headers
        assert json.loads(raw)["error"] == {"type": "overloaded_error", "message": "fake error"}
        assert post(api, "/v1/messages", main_body())[0] == 200
    assert api.script_done


def test_disconnect_before_and_during_stream() -> None:
    with FakeAnthropic([disconnect(), disconnect(3), turn("ok")]) as api:
        with pytest.raises((http.client.HTTPException, ConnectionError)):
            post(api, "/v1/messages", main_body(stream=True))
        with pytest.raises(http.client.IncompleteRead):
            post(api, "/v1/messages", main_body(stream=True))
        assert post(api, "/v1/messages", main_body(stream=True))[0] == 200
    assert [r.outcome for r in api.requests] == ["disconnect", "disconnect", "turn"]
    assert api.script_done and api.errors == []


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_stall_is_released_by_close() -> None:
    api = FakeAnthropic([stall()])
    sock = socket.create_connection((api.host, api.port), timeout=10)
    payload = json.dumps(main_body()).encode()
    sock.sendall(
        b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    # The server holds the request: wait for it to get there, not for a guessed delay.
    assert wait_for(lambda: [r.outcome for r in api.requests] == ["stall"]), api.summary()
    started = time.monotonic()
    api.close()
    assert sock.recv(100) == b""
    sock.close()
    assert time.monotonic() - started < 3
    assert api.requests[0].outcome == "stall:server_closed"


def test_protocol_errors_are_recorded() -> None:
    with FakeAnthropic([turn(tool_use("Bash", {"command": "x"})), turn("a")]) as api:
        post(api, "/v1/messages", main_body())
        bogus = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nope"}]}]
        post(api, "/v1/messages", main_body(bogus))
        post(api, "/v1/messages", main_body())
    errors = api.errors
    assert any("unknown tool_use id 'nope'" in e for e in errors)
    assert any("no tool_result" in e for e in errors)
    assert any("script exhausted" in e for e in errors)
    with pytest.raises(ValueError):
        FakeAnthropic([turn(tool_use("A", {}, id="t1")), turn(tool_use("B", {}, id="t1"))])


@pytest.mark.cli
@pytest.mark.parametrize("bwrap", [False, True], ids=["host", "bwrap"])
def test_probe_real_cli(
    bwrap: bool, claude_cli: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = probe_main(["--claude", str(claude_cli), *(["--bwrap"] if bwrap else [])])
    out = capsys.readouterr().out
    assert rc == 0, out
