"""The Claude Code CLI, headless (``claude -p --output-format json``), run
inside the cell's sandbox.

Observed behaviour of the pinned CLI is written down in ``docs/claude-cli.md``.
Usage comes from the CLI's own JSON report: ``usage`` (main loop) and
``modelUsage`` (every model, side calls and subagents included),
``total_cost_usd``, ``num_turns``, ``duration_ms``, ``session_id``.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from pytest_wfbench.agents import AgentSettings, PhaseReport, PhaseRun
from pytest_wfbench.sandbox import Mount
from pytest_wfbench.workspace import fs

if TYPE_CHECKING:  # the proxy's server is imported by the sweep that starts it
    from pytest_wfbench.agents.proxy import SessionLog

PINNED_VERSION = "2.1.332"
BRIDGE = Path(__file__).resolve().parent / "bridge" / "wfbench_bridge.py"
BRIDGE_SOCKET = "/run/wfbench-api.sock"
BRIDGE_PORT = 8765
# A transcript past this is kept cut, with a note (the agent decides its size).
MAX_TRANSCRIPT_BYTES = 64 << 20
CLI_MOUNT = "/opt/wfbench/claude-code"
# Without it the CLI waits on unreachable hosts for seconds per session.
SESSION_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_TELEMETRY": "1",
}
API_KEY_VARS = ("WFBENCH_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY")
USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
              "output_tokens")
MODEL_USAGE_KEYS = {"inputTokens": "input_tokens",
                    "cacheCreationInputTokens": "cache_creation_input_tokens",
                    "cacheReadInputTokens": "cache_read_input_tokens",
                    "outputTokens": "output_tokens"}
MAX_LISTED_FAILURES = 5
# The CLI's session ids are UUIDs; one names a file in the agent's HOME.
SESSION_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,127}")


def find_cli(explicit: str | None, rootdir: Path) -> Path | None:
    """The CLI: the option's path, the copy `make test` installs, or PATH."""
    if explicit:
        return Path(explicit)
    installed = rootdir / ".tools" / "claude-code" / "node_modules" / ".bin" / "claude"
    if installed.exists():
        return installed
    found = shutil.which("claude")
    return Path(found) if found else None


def api_key_from_environment() -> str | None:
    for name in API_KEY_VARS:
        if os.environ.get(name):
            return os.environ[name]
    return None


def transcript_slug(cwd: str) -> str:
    """How the CLI names a project folder: every non-alphanumeric character a dash."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def skills_invoked(transcript: Path) -> list[str]:
    """Skills the transcript file shows were invoked and launched without error."""
    return skills_invoked_in(transcript.read_text(encoding="utf-8", errors="replace"))


def skills_invoked_in(transcript: str) -> list[str]:
    """Skills a transcript's text shows were invoked and launched without error."""
    calls: dict[str, str] = {}
    launched: list[str] = []
    for line in transcript.splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        message = entry.get("message") if isinstance(entry, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if entry.get("type") == "assistant" and block.get("type") == "tool_use" \
                    and block.get("name") == "Skill":
                skill = (block.get("input") or {}).get("skill")
                if isinstance(skill, str):
                    calls[str(block.get("id"))] = skill
            elif entry.get("type") == "user" and block.get("type") == "tool_result":
                skill_name = calls.get(str(block.get("tool_use_id")))
                if skill_name is not None and not block.get("is_error"):
                    launched.append(skill_name)
    return launched


class ClaudeCodeAdapter:
    name = "claude"

    def unavailable(self, settings: AgentSettings) -> str | None:
        if settings.cli is None or not settings.cli.exists():
            where = f" at {settings.cli}" if settings.cli is not None else ""
            return (f"the Claude Code CLI is not installed{where}: run `make cli` (it installs "
                    f"@anthropic-ai/claude-code@{PINNED_VERSION} into .tools/), or `npm install "
                    f"-g @anthropic-ai/claude-code@{PINNED_VERSION}`, or pass "
                    "--wfbench-claude PATH")
        if not settings.api_key:
            return "no API key: set WFBENCH_ANTHROPIC_API_KEY (or ANTHROPIC_API_KEY)"
        return None

    def argv(self, run: PhaseRun, cli: str) -> list[str]:
        phase, settings = run.phase, run.settings
        assert settings.model is not None, "the plugin requires --wfbench-model for agent arms"
        argv = [cli, "-p", "--output-format", "json", "--model", settings.model,
                "--permission-mode", "dontAsk", "--allowedTools", ",".join(phase.allowed_tools),
                "--strict-mcp-config", "--setting-sources", "project"]
        if phase.disallowed_tools:
            argv += ["--disallowedTools", ",".join(phase.disallowed_tools)]
        if settings.effort:
            argv += ["--effort", settings.effort]
        if phase.mcp_servers:
            servers = {name: json.loads(config) for name, config in phase.mcp_servers}
            argv += ["--mcp-config", json.dumps({"mcpServers": servers})]
        for plugin_dir in run.plugin_dirs:
            argv += ["--plugin-dir", plugin_dir]
        for folder in run.add_dirs:
            argv += ["--add-dir", folder]
        return argv

    def run_phase(self, run: PhaseRun) -> PhaseReport:
        settings = run.settings
        assert settings.cli is not None and settings.api_key is not None
        binary = settings.cli.resolve()
        cli_mount = Mount(binary.parent, CLI_MOUNT)
        cli_path = f"{run.sandbox.mount_path(cli_mount)}/{binary.name}"
        env = dict(SESSION_ENV)
        mounts = [cli_mount, *run.mounts]
        argv = self.argv(run, cli_path)
        if run.minimal:
            argv.append("--bare")
        command, network = shlex.join(argv), True
        # Sessions talk to the harness's API proxy with a token of their own:
        # the key never enters a sandbox.
        token, log = run.proxy.new_session()
        env["ANTHROPIC_API_KEY"] = token
        if settings.network == "proxy-only" and run.sandbox.backend == "bubblewrap":
            # No network at all: a bridge on the sandbox's own loopback relays
            # to the proxy's unix socket, the only way out.
            network = False
            mounts.append(Mount(run.proxy.socket_path, BRIDGE_SOCKET, writable=True))
            env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{BRIDGE_PORT}"
            command = (f"python {shlex.quote(str(BRIDGE))} {BRIDGE_SOCKET} {BRIDGE_PORT} "
                       f"&& exec {command}")
        else:
            env["ANTHROPIC_BASE_URL"] = run.proxy.base_url
        env.update(run.env)
        result = run.sandbox.run(
            command, workspace=run.workspace.mount(), home=run.home,
            writable=run.workspace_writable, network=network, timeout_s=run.timeout_s, env=env,
            mounts=tuple(mounts), stdin=run.prompt.encode(), limits=run.limits,
            watch=(run.workspace.files, run.home, *run.watch),
        )
        report = PhaseReport(name=run.phase.name, completed=False)
        if result.limit_hit is not None:
            report.limit_hit = result.limit_hit
            report.error = f"the session {result.limit_hit.describe()}; it was killed"
            return report
        if result.timed_out:
            report.timed_out = True
            report.error = (f"the session timed out after {run.timeout_s:g}s; its process "
                            "tree was killed")
            return report
        results = json_results(result.stdout)
        if len(results) > 1:
            # The CLI writes one; what the agent runs can write into its output.
            report.error = (f"the CLI's output holds {len(results)} results where the CLI "
                            "writes one: a process of the session wrote into it")
            report.own_failure = True
            return report
        if not results:
            report.error = (f"the CLI exited {result.returncode} without a JSON result: "
                            f"{result.tail(600)}")
            self._own_failure(report, log)
            return report
        data = results[0]
        try:
            self._read_result(report, data)
        except (TypeError, ValueError) as error:
            report.error = (f"the CLI's result is not what the CLI writes ({error}): a "
                            "process of the session wrote it")
            report.own_failure = True
            return report
        cwd = run.sandbox.workspace_path(run.workspace.mount())
        if report.session_id:
            # The agent's HOME is its own: read without following any link, bounded.
            relative = (PurePosixPath(".claude") / "projects" / transcript_slug(cwd)
                        / f"{report.session_id}.jsonl")
            content = fs.read_regular(run.home, relative, MAX_TRANSCRIPT_BYTES + 1)
            if content is not None:
                report.transcript_cut = len(content) > MAX_TRANSCRIPT_BYTES
                report.transcript = content[:MAX_TRANSCRIPT_BYTES].decode("utf-8", "replace")
                report.skills_invoked = skills_invoked_in(report.transcript)
        if log is not None:
            # What passed through the proxy is the evidence; the transcript (in the
            # agent's HOME) is kept as an artifact and compared.
            report.details["transcript_skills"] = report.skills_invoked
            report.skills_invoked = log.skills_invoked()
            report.details["proxied_requests"] = log.requests
            report.tool_uses = [dict(use) for use in log.tool_uses.values()]
        if data.get("is_error") or result.returncode != 0:
            report.error = _cli_reason(data, result.returncode)
            self._own_failure(report, log)
        else:
            report.completed = True
        return report

    @staticmethod
    def _read_result(report: PhaseReport, data: dict[str, Any]) -> None:
        """The CLI's figures; ValueError or TypeError for a result the CLI would not
        write (every figure is the CLI's, so none is guessed)."""
        session_id = data.get("session_id")
        if session_id is not None and not (isinstance(session_id, str)
                                           and SESSION_ID.fullmatch(session_id)):
            raise ValueError(f"session_id {str(session_id)[:80]!r}")
        report.session_id = session_id
        report.num_turns = int(_figure(data, "num_turns"))
        report.duration_ms = float(_figure(data, "duration_ms"))
        cost = data.get("total_cost_usd")
        report.cost_usd = None if cost is None else _figure(data, "total_cost_usd")
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        report.usage = {key: int(_figure(usage, key)) for key in USAGE_KEYS}
        model_usage = data.get("modelUsage")
        model_usage = model_usage if isinstance(model_usage, dict) else {}
        for model, figures in model_usage.items():
            if not isinstance(figures, dict):
                raise TypeError(f"modelUsage of {str(model)[:80]!r}")
            for key in MODEL_USAGE_KEYS:
                _figure(figures, key)
        report.model_usage = model_usage
        report.details = {
            "subtype": data.get("subtype"), "is_error": bool(data.get("is_error")),
            "terminal_reason": data.get("terminal_reason"),
            "permission_denials": len(data.get("permission_denials") or []),
        }

    @staticmethod
    def _own_failure(report: PhaseReport, log: SessionLog | None) -> None:
        """A failed session failed by its own doing when the proxy saw the model make
        tool calls (so what the agent ran could act) and the service fail at no
        point; without a proxy the harness cannot tell, and does not count it."""
        if log is not None:
            # What the proxy saw, in the row's phase, whichever way it decides.
            report.details["proxied_requests"] = log.requests
            report.details["service_failures"] = log.service_failures[:MAX_LISTED_FAILURES]
        if log is not None and log.tool_uses and not log.service_failures:
            report.own_failure = True
            report.error = (f"{report.error} (the model service answered every request: the "
                            "session ended by its own doing, e.g. what the agent ran killed "
                            "the CLI)")


def _figure(data: dict[str, Any], key: str) -> float:
    """A figure of the CLI's result: absent is 0; anything but a finite
    non-negative number is not what the CLI writes."""
    value = data.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or value < 0:
        raise ValueError(f"{key} {str(value)[:80]!r}")
    return value


def model_usage_totals(model_usage: dict[str, dict[str, Any]]) -> dict[str, int]:
    """All models' tokens summed, in the row's field names."""
    totals = dict.fromkeys(USAGE_KEYS, 0)
    for figures in model_usage.values():
        for source, target in MODEL_USAGE_KEYS.items():
            totals[target] += int(figures.get(source) or 0)
    return totals


def json_results(stdout: str) -> list[dict[str, Any]]:
    """Every ``result`` object in the CLI's output, one per line (lines end at
    newlines only: the CLI escapes every other separator in its strings)."""
    results = []
    for line in stdout.split("\n"):
        try:
            data = json.loads(line, parse_constant=_no_constant)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("type") == "result":
            results.append(data)
    return results


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _cli_reason(data: dict[str, Any], returncode: int) -> str:
    parts = [f"the CLI reported an error (exit {returncode}"]
    for key in ("subtype", "terminal_reason", "api_error_status"):
        if data.get(key) not in (None, "", "success"):
            parts.append(f"{key}={data[key]}")
    reason = data.get("result") or "; ".join(str(e) for e in data.get("errors") or [])
    return ", ".join(parts) + f"): {reason or 'no reason given'}"
