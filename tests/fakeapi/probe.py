"""Run the real Claude Code CLI once against :class:`FakeAnthropic` and check the result.

    python -m tests.fakeapi.probe --claude /opt/wfbench-cli/node_modules/.bin/claude
    python -m tests.fakeapi.probe --claude ... --bwrap

The scripted agent runs ``Bash`` (writes ``bash.txt``), then ``Write`` (writes
``write.txt``), then answers with a final text.  Prints the CLI's JSON result and the
server's request log; exits 1 if a file is missing or anything else looks wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import FakeAnthropic, Usage, tool_use, turn

DEFAULT_CLAUDE = "/opt/wfbench-cli/node_modules/.bin/claude"
BASH_CONTENT = "probe-bash"
WRITE_CONTENT = "probe-write\n"
FINAL_TEXT = "PROBE-DONE"
SANDBOX_WS = "/workspace"
SANDBOX_HOME = "/home/agent"


def build_script(ws_in_cli: str) -> list[Any]:
    return [
        turn(
            "Writing bash.txt.",
            tool_use(
                "Bash",
                {"command": f"echo {BASH_CONTENT} > bash.txt", "description": "Write bash.txt"},
            ),
            usage=Usage(1000, 50, 200, 300),
        ),
        turn(
            tool_use("Write", {"file_path": f"{ws_in_cli}/write.txt", "content": WRITE_CONTENT}),
            usage=Usage(1200, 60, 0, 1500),
        ),
        turn(FINAL_TEXT, usage=Usage(1400, 10, 0, 1700)),
    ]


def cli_args(claude: str, model: str) -> list[str]:
    return [
        claude,
        "-p",
        "Create bash.txt with Bash, then write.txt with Write.",
        "--output-format",
        "json",
        "--model",
        model,
        "--permission-mode",
        "dontAsk",
        "--allowedTools",
        "Bash,Write,Edit,Read,Skill",
        "--strict-mcp-config",
    ]


def cli_env(base_url: str, home: str) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-test-probe",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "API_TIMEOUT_MS": "60000",
    }


def install_root(claude: str) -> str:
    """The directory to bind into the sandbox so that ``claude`` resolves inside it."""
    real = Path(claude).resolve()
    for parent in real.parents:
        if parent.name == "node_modules":
            return str(parent.parent)
    return str(real.parent)


def bwrap_prefix(ws: str, home: str, claude: str, env: dict[str, str]) -> list[str]:
    # /tmp first: the CLI may be installed under the host's /tmp (a CI clone).
    args = ["bwrap", "--tmpfs", "/tmp", "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib64"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    root = install_root(claude)
    roots = [root]
    if not Path(claude).parent.is_relative_to(root):
        roots.append(str(Path(claude).parent))
    for path in roots:
        if not path.startswith("/usr/"):
            args += ["--ro-bind", path, path]
    args += [
        "--ro-bind", "/etc", "/etc",
        "--proc", "/proc",
        "--dev", "/dev",
        "--bind", ws, SANDBOX_WS,
        "--bind", home, SANDBOX_HOME,
        "--unshare-all",
        "--share-net",
        "--die-with-parent",
        "--clearenv",
        "--chdir", SANDBOX_WS,
    ]  # fmt: skip
    for key, value in env.items():
        args += ["--setenv", key, value]
    return args


def check(ws: Path, proc: subprocess.CompletedProcess[str], api: FakeAnthropic) -> list[str]:
    problems: list[str] = []
    if proc.returncode != 0:
        problems.append(f"claude exited {proc.returncode}")
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        problems.append("stdout is not one JSON document")
        result = {}
    if result.get("is_error") is not False:
        problems.append(f"is_error={result.get('is_error')!r}")
    if result.get("result") != FINAL_TEXT:
        problems.append(f"result={result.get('result')!r}, expected {FINAL_TEXT!r}")
    if result.get("num_turns") != 3:
        problems.append(f"num_turns={result.get('num_turns')!r}, expected 3")
    usage = result.get("usage") or {}
    if usage.get("input_tokens") != 3600 or usage.get("output_tokens") != 120:
        problems.append(f"usage not the scripted sum: {usage}")
    bash_file, write_file = ws / "bash.txt", ws / "write.txt"
    if not bash_file.is_file() or bash_file.read_text().strip() != BASH_CONTENT:
        problems.append("bash.txt missing or wrong")
    if not write_file.is_file() or write_file.read_text() != WRITE_CONTENT:
        problems.append("write.txt missing or wrong")
    if not api.script_done:
        problems.append(f"only {api.script_position} of 3 script items used")
    results = api.tool_results
    if len(results) != 2 or any(r.is_error for r in results):
        problems.append(f"tool results: {[(r.name, r.is_error, r.text[:80]) for r in results]}")
    problems += api.errors
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--claude", default=DEFAULT_CLAUDE, help="path to the claude binary")
    parser.add_argument("--bwrap", action="store_true", help="run the CLI inside bubblewrap")
    parser.add_argument("--model", default="claude-sonnet-4-5")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    args = parser.parse_args(argv)

    claude = shutil.which(args.claude) or args.claude
    if not os.access(claude, os.X_OK):
        print(f"probe: {args.claude} is not executable", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="wfbench-probe-"))
    ws, home = tmp / "ws", tmp / "home"
    ws.mkdir()
    home.mkdir()
    try:
        ws_in_cli = SANDBOX_WS if args.bwrap else str(ws)
        with FakeAnthropic(build_script(ws_in_cli)) as api:
            if args.bwrap:
                env = cli_env(api.base_url, SANDBOX_HOME)
                cmd = bwrap_prefix(str(ws), str(home), claude, env) + cli_args(claude, args.model)
                run_env: dict[str, str] | None = None
                cwd = "/"
            else:
                env = cli_env(api.base_url, str(home))
                cmd, run_env, cwd = cli_args(claude, args.model), env, str(ws)
            started = time.monotonic()
            proc = subprocess.run(
                cmd,
                cwd=cwd,
                env=run_env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=args.timeout,
            )
            elapsed = time.monotonic() - started
        print(f"$ {' '.join(cmd)}")
        print(f"--- exit {proc.returncode} after {elapsed:.2f}s; stdout:")
        print(proc.stdout.strip())
        if proc.stderr.strip():
            print("--- stderr:")
            print(proc.stderr.strip())
        print("--- requests:")
        print(api.summary())
        for result in api.tool_results:
            print(f"tool_result {result.tool_use_id} {result.name} is_error={result.is_error}")
        transcripts = sorted(
            str(p.relative_to(home)) for p in home.glob(".claude/projects/*/*.jsonl")
        )
        print(f"--- transcripts: {transcripts}")
        problems = check(ws, proc, api)
        for problem in problems:
            print(f"PROBLEM: {problem}")
        print("probe: FAIL" if problems else "probe: OK")
        return 1 if problems else 0
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
