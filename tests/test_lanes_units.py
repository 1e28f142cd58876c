"""The tool-cost lane's parts, without a sweep: steps and harness work, the
fault fixture and Mercurial's wire protocol (checked against the real server),
and the report's medians."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import urllib.parse
from email.message import Message
from pathlib import Path
from typing import Any

import pytest

from pytest_wfbench.lanes import hg as hg_driver
from pytest_wfbench.lanes.fault import FaultFixture
from pytest_wfbench.lanes.hgwire import (
    MercurialHttp,
    answer,
    capture,
    escape_batch,
    http_capabilities,
    request_command,
    stdio_string,
    unescape_batch,
)
from pytest_wfbench.lanes.medians import step_medians, step_order
from pytest_wfbench.lanes.report import side_by_side
from pytest_wfbench.lanes.scenario import Publication
from pytest_wfbench.lanes.steps import (
    FAILURE_CODES,
    STDERR_TAIL_CHARS,
    HarnessWork,
    HelperFailed,
    StepRecorder,
    describe_codes,
)

HG = shutil.which("hg") or "hg"


def test_expected_codes_are_described_in_runs() -> None:
    assert describe_codes((0,)) == "[0]"
    assert describe_codes((0, 1)) == "[0, 1]"
    assert describe_codes(FAILURE_CODES) == "[1-127]"
    assert describe_codes((1, 128)) == "[1, 128]"
    assert describe_codes((0, 2, 3, 4, 9)) == "[0, 2-4, 9]"
    assert FAILURE_CODES[0] == 1 and FAILURE_CODES[-1] == 127 and len(FAILURE_CODES) == 127


def test_a_step_keeps_the_tail_of_its_stderr(tmp_path: Path) -> None:
    recorder = StepRecorder(admitted_chars=100, env={"PATH": "/usr/bin:/bin"})
    script = "import sys; sys.stderr.write('x' * 5000 + 'THE-END'); sys.exit(3)"
    found = recorder.run("noisy", [sys.executable, "-c", script], cwd=tmp_path,
                         expected=FAILURE_CODES, check=False)
    assert found.returncode == 3 and found.expected is True
    assert found.stderr_bytes == 5007
    assert len(found.stderr_tail) == STDERR_TAIL_CHARS == 4000
    assert found.stderr_tail.endswith("THE-END") and found.output_cut is True
    assert found.to_json()["expected_returncodes"] == list(range(1, 128))


def test_harness_work_is_timed_and_counted_apart_from_the_agents(tmp_path: Path) -> None:
    recorder = StepRecorder(admitted_chars=100, env={"PATH": "/usr/bin:/bin"})
    with recorder.harness("setup.remote_create") as work:
        work.run(["true"], tmp_path)
        work.do("write a file", lambda: (tmp_path / "f").write_text("x"))
    recorder.run("act", ["echo", "hello"], cwd=tmp_path)
    harness = recorder.find("setup.remote_create")
    assert harness.step_kind == "harness" and harness.harness_command_count == 2
    totals = recorder.totals()
    assert totals["tool_calls"] == {"total": 1, "terminal": 1, "vcs": 1}
    assert totals["elapsed_ms"] == recorder.find("act").elapsed_ms
    assert totals["harness"] == {"elapsed_ms": harness.elapsed_ms, "harness_command_count": 2}


def test_a_failing_or_hanging_helper_ends_the_scenario_as_a_skip(tmp_path: Path) -> None:
    recorder = StepRecorder(admitted_chars=100, env={"PATH": "/usr/bin:/bin"},
                            helper_timeout_s=0.5)
    with pytest.raises(HelperFailed, match=r"exited 2: sh -c .*: broken"), \
            recorder.harness("setup.remote_seed") as work:
        work.run(["sh", "-c", "echo broken >&2; exit 2"], tmp_path)
    with pytest.raises(HelperFailed, match=r"timed out after 0.5s: sleep 30"), \
            recorder.harness("oracle.read") as work:
        work.run(["sleep", "30"], tmp_path)
    with pytest.raises(HelperFailed, match="could not start"), \
            recorder.harness("cleanup.cold") as work:
        work.run([str(tmp_path / "no-such-program")], tmp_path)
    for step in recorder.steps:
        assert step.returncode == 77 and step.expected is False and step.reason
    assert recorder.steps[0].stderr_tail == "broken\n"
    assert HarnessWork({}, 1.0).timeout_s == 1.0


# Mercurial's wire protocol, checked against Mercurial's own server.


def hg_env(home: Path) -> dict[str, str]:
    home.mkdir(exist_ok=True)
    return hg_driver.environment(home)


def hg(env: dict[str, str], cwd: Path, *args: str) -> str:
    return subprocess.run([HG, *args], cwd=cwd, env=env, capture_output=True, check=True,
                          text=True).stdout


@pytest.fixture
def hg_repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """Two branches, two bookmarks, draft changesets: every answer has content."""
    env = hg_env(tmp_path / "home")
    repo = tmp_path / "repo"
    hg(env, tmp_path, "init", str(repo))
    for index in range(3):
        (repo / f"f{index}").write_text(f"{index}\n")
        hg(env, repo, "add", f"f{index}")
        hg(env, repo, "commit", "-q", "-m", f"c{index}")
    hg(env, repo, "bookmark", "-r", "1", "main")
    hg(env, repo, "update", "-q", "1")
    hg(env, repo, "branch", "-q", "feature")
    (repo / "g").write_text("g\n")
    hg(env, repo, "add", "g")
    hg(env, repo, "commit", "-q", "-m", "feature work")
    hg(env, repo, "bookmark", "topic")
    return repo, env


def stdio_requests(repo: Path, env: dict[str, str],
                   requests: list[tuple[str, list[tuple[str, str]], bool]]) -> list[bytes]:
    """Ask ``hg serve --stdio`` (SSH transport, version 1): each command, its
    arguments as ``<name> <length>\\n<value>``, ``* 0`` for an empty ``*``."""
    payload = b""
    for command, args, star in requests:
        payload += command.encode() + b"\n"
        for name, value in args:
            payload += f"{name} {len(value.encode())}\n".encode() + value.encode()
        if star:
            payload += b"* 0\n"
    raw = subprocess.run([HG, "-R", str(repo), "serve", "--stdio"], input=payload, env=env,
                         capture_output=True, check=True).stdout
    answers: list[bytes] = []
    while raw:
        found = stdio_string(raw)
        answers.append(found)
        raw = raw[len(str(len(found))) + 1 + len(found):]
    return answers


def test_the_fixture_answers_read_only_commands_as_mercurial_does(
    hg_repo: tuple[Path, dict[str, str]]
) -> None:
    repo, env = hg_repo
    state = capture(HG, repo, HarnessWork(env, 60.0))
    nodes = hg(env, repo, "log", "-T", "{node}\n").split()
    unknown = "1" * 40
    known_args = " ".join([nodes[0], unknown, nodes[-1]])
    batch = f"heads ;known nodes={known_args};listkeys namespace=bookmarks"
    requests: list[tuple[str, dict[str, str], list[tuple[str, str]], bool]] = [
        ("heads", {}, [], False),
        ("known", {"nodes": known_args}, [("nodes", known_args)], True),
        ("listkeys", {"namespace": "bookmarks"}, [("namespace", "bookmarks")], False),
        ("listkeys", {"namespace": "phases"}, [("namespace", "phases")], False),
        ("listkeys", {"namespace": "namespaces"}, [("namespace", "namespaces")], False),
        ("lookup", {"key": "main"}, [("key", "main")], False),
        ("lookup", {"key": "feature"}, [("key", "feature")], False),
        ("lookup", {"key": nodes[1]}, [("key", nodes[1])], False),
        ("lookup", {"key": "nope"}, [("key", "nope")], False),
        ("batch", {"cmds": batch}, [("cmds", batch)], True),
    ]
    real = stdio_requests(repo, env, [(c, wire, star) for c, _, wire, star in requests])
    assert len(real) == len(requests)
    for (command, args, _, _), expected in zip(requests, real, strict=True):
        assert answer(state, command, args) == expected, command
    assert real[1] == b"101"  # an independent sanity check: the unknown node is 0
    # branchmap's order is the server's dict order: compare its lines.
    branchmap = stdio_requests(repo, env, [("branchmap", [], False)])[0]
    ours = answer(state, "branchmap", {})
    assert ours is not None and set(ours.split(b"\n")) == set(branchmap.split(b"\n"))
    assert answer(state, "unbundle", {}) is None and answer(state, "getbundle", {}) is None


def test_the_http_capabilities_are_the_servers_own_plus_the_http_ones(
    hg_repo: tuple[Path, dict[str, str]]
) -> None:
    repo, env = hg_repo
    stdio = stdio_requests(repo, env, [("capabilities", [], False)])[0]
    assert b"protocaps" in stdio.split()
    caps = http_capabilities(stdio).split()
    assert b"protocaps" not in caps
    assert b"httpheader=1024" in caps and b"httpmediatype=0.1rx,0.1tx" in caps
    assert set(stdio.split()) - {b"protocaps"} <= set(caps)
    assert caps == sorted(caps)
    with pytest.raises(ValueError):
        stdio_string(b"12\nshort")


def test_arguments_come_from_the_query_and_the_numbered_headers() -> None:
    encoded = urllib.parse.urlencode({"cmds": "heads ;known nodes=ab", "x": "a b"})
    headers = Message()
    headers["X-HgArg-1"] = encoded[:10]
    headers["X-HgArg-2"] = encoded[10:]
    assert request_command("/repo?cmd=batch&y=1", headers) == (
        "batch", {"y": "1", "cmds": "heads ;known nodes=ab", "x": "a b"})
    assert request_command("/repo?cmd=capabilities", Message()) == ("capabilities", {})
    # Mercurial's batch escaping (wireprototypes.escapebatcharg): ':' first.
    assert escape_batch("a:b,c;d=e") == "a:cb:oc:sd:ee"
    assert unescape_batch("a:cb:oc:sd:ee") == "a:b,c;d=e"
    assert unescape_batch(escape_batch(":e:c=;")) == ":e:c=;"


def test_a_real_mercurial_push_reaches_the_fixture_whole_and_unanswered(
    hg_repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    repo, env = hg_repo
    remote = tmp_path / "remote"
    hg(env, tmp_path, "clone", "-q", "-U", "-r", "main", str(repo), str(remote))
    state = capture(HG, remote, HarnessWork(env, 60.0))
    work = tmp_path / "work"
    hg(env, tmp_path, "clone", "-q", str(remote), str(work))
    (work / "payload").write_text("payload\n")
    hg(env, work, "add", "payload")
    hg(env, work, "commit", "-q", "-m", "work")
    fixture = FaultFixture(MercurialHttp(state))
    try:
        push = subprocess.run([HG, "push", "-r", ".", fixture.url], cwd=work, env=env,
                              capture_output=True, text=True, timeout=120)
    finally:
        fixture.close()
    assert push.returncode in FAILURE_CODES, push.stderr
    commands = [urllib.parse.parse_qs(urllib.parse.urlsplit(str(r["path"])).query)["cmd"][0]
                for r in fixture.requests]
    assert commands[0] == "capabilities" and commands[-1] == "unbundle"
    assert commands.count("unbundle") == 1 and "batch" in commands
    assert fixture.requests[-1]["complete"] is True and fixture.requests[-1]["mutation"]
    assert fixture.mutation_requests_received == fixture.mutations_delivered == 1
    assert fixture.request_bytes == fixture.requests[-1]["bytes"]
    assert fixture.request_bytes > 0
    assert hg(env, work, "log", "-r", ".", "-T", "{phase}") == "draft"
    # Nothing reached the remote: the fixture forwards nothing.
    assert set(hg(env, remote, "log", "-T", "{node}\n").split()) == state.nodes


def raw_request(url: str, data: bytes) -> bytes:
    """Send raw bytes to the fixture; what came back before it closed."""
    host, port = urllib.parse.urlsplit(url).netloc.split(":")
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def fixture_for(state_caps: bytes = b"batch unbundle=HG10UN") -> FaultFixture:
    from pytest_wfbench.lanes.hgwire import HgRemoteState
    state = HgRemoteState(capabilities=state_caps, nodes=frozenset(), heads=(),
                          branch_heads=(), keys=())
    return FaultFixture(MercurialHttp(state))


def test_the_fixture_counts_every_byte_and_judges_a_cut_push_not_sent() -> None:
    fixture = fixture_for()
    try:
        get = b"GET /repo?cmd=capabilities HTTP/1.1\r\nHost: x\r\n\r\n"
        reply = raw_request(fixture.url, get)
        assert reply.startswith(b"HTTP/1.1 200") and reply.endswith(b"batch unbundle=HG10UN")
        assert b"Content-Type: application/mercurial-0.1" in reply
        cut = (b"POST /repo?cmd=unbundle HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
               + b"HG20" * 3)
        assert raw_request(fixture.url, cut) == b""  # no answer at all
    finally:
        fixture.close()
    assert fixture.network_request_bytes == len(get) + len(cut)
    assert [r["complete"] for r in fixture.requests] == [True, False]
    assert fixture.mutation_requests_received == 0 and fixture.request_bytes == 0
    publication = Publication(returncode=1, fixture=fixture, head_before="a", head_after="a",
                              needs_push=True, working_tree_dirty=False)
    assert publication.publication_outcome == "not_sent" and publication.outcome == "failed"
    assert publication.mutation_requests_sent == 1


def test_a_complete_push_is_unknown_and_a_replay_is_counted() -> None:
    fixture = fixture_for()
    body = b"HG20" + b"x" * 60
    push = (b"POST /repo?cmd=unbundle HTTP/1.1\r\nHost: x\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\n\r\n" + body)
    try:
        assert raw_request(fixture.url, push) == b""
        assert raw_request(fixture.url, push) == b""  # a client's blind replay
    finally:
        fixture.close()
    assert fixture.mutation_requests_received == 2 and fixture.request_bytes == 2 * len(body)
    publication = Publication(returncode=100, fixture=fixture, head_before="a",
                              head_after="a", needs_push=True, working_tree_dirty=True)
    assert publication.outcome == "unknown" and publication.publication_outcome == "unknown"
    evidence = publication.evidence()
    assert evidence["mutation_requests"] == 2 and evidence["working_tree_dirty_after"] is True
    assert evidence["network_request_bytes_observed"] == 2 * len(push)


# The report's medians.


def lane_row(subject: str, transport: str, run: int, steps: list[tuple[str, float, int]],
             **extra: Any) -> dict[str, Any]:
    return {
        "arm": subject, "run": run, "status": "ran", "counted": True, "lane": "tool-cost",
        "transport": transport,
        "steps": [{"operation": op, "step_kind": "vcs", "measured": True, "elapsed_ms": ms,
                   "estimated_tokens": tokens} for op, ms, tokens in steps],
        "totals": {"elapsed_ms": sum(ms for _, ms, _ in steps),
                   "tool_calls": {"total": len(steps)},
                   "estimated_tokens": sum(t for _, _, t in steps),
                   "harness": {"elapsed_ms": 0.0, "harness_command_count": 0}},
        **extra,
    }


def test_steps_one_subject_needs_sit_beside_their_neighbours() -> None:
    git = ["acquire", "edit", "commit", "push"]
    hg = ["acquire", "acquire.update", "acquire.branch", "edit", "commit", "push"]
    assert step_order([git, hg]) == hg
    assert step_order([hg, git]) == hg
    assert step_order([["a", "c"], ["b", "c"]]) == ["b", "a", "c"]


def test_step_medians_are_over_the_runs_that_counted() -> None:
    rows = [lane_row("git", "local_file", run, [("push", ms, 10)])
            for run, ms in ((1, 1.0), (2, 3.0), (3, 10.0))]
    rows.append(lane_row("git", "local_file", 4, [("push", 500.0, 10)], counted=False))
    order, medians = step_medians(rows)
    assert order == ["push"]
    assert medians["git"]["push"].elapsed_ms == 3.0 and medians["git"]["push"].runs == 3


def test_latency_is_never_put_side_by_side_across_transports() -> None:
    rows = [lane_row("git", "local_file", 1, [("push", 2.0, 8)]),
            lane_row("git", "local_file", 2, [("push", 4.0, 8)]),
            lane_row("hg", "local_file", 1, [("push", 40.0, 7)]),
            lane_row("hg", "hg_serve", 1, [("push", 90.0, 7)])]
    lines = side_by_side(rows)
    tables = "\n".join(lines).split("Side by side on ")[1:]
    assert [t.split("`")[1] for t in tables] == ["hg_serve", "local_file"]
    served, local = tables
    assert "| step | hg ms (median of 1) | hg est. tokens |" in served and "git" not in served
    assert ("| step | git ms (median of 2) | git est. tokens | hg ms (median of 1) | "
            "hg est. tokens |") in local
    assert "| push | 3 | 8 | 40 | 7 |" in local and "90" not in local
