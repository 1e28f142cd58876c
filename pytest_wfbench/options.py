"""The ``--wfbench-*`` options and ini keys (help texts first, used by both, as
pytest-timeout does). The sweep options read from them are :mod:`.optionvalues`."""

from __future__ import annotations

import pytest

from pytest_wfbench.session import DEFAULT_ADMITTED_OUTPUT_CHARS
from pytest_wfbench.tasks import DEFAULT_TIMEOUT_S

TASKS_HELP = "task file (YAML) to run as a sweep of cells; repeatable"
ARMS_HELP = "comma-separated arms to run (default: each task file's 'arms')"
# Single runs of millisecond steps say little: scenario cells run 3 times unless told.
DEFAULT_SCENARIO_RUNS = 3
RUNS_HELP = (f"runs per (task, arm) (default: 1) and per (scenario, subject) (default: "
             f"{DEFAULT_SCENARIO_RUNS})")
OUT_HELP = "out dir for results.jsonl, report.md and artifacts (default: reports/<UTC>-<suite>/)"
EXPENSIVE_HELP = "also run tasks marked expensive (otherwise they are collected as skips)"
BASELINE_HELP = "arm that savings are computed against (default: 'baseline' when in the sweep)"
UNSAFE_HELP = ("run cells on the host with NO containment (recorded in every row; refused "
               "when CI is set)")
ADMITTED_HELP = (f"characters of a step's output an agent is taken to read (default "
                 f"{DEFAULT_ADMITTED_OUTPUT_CHARS})")
KEEP_HELP = "keep each cell's workspace and the sweep's work dir for inspection"
SECRET_ENV_HELP = "name of an environment variable whose value must be redacted; repeatable"
MODEL_HELP = "model for agent arms (required when one is selected; recorded in every row)"
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
"""The pinned CLI's --effort levels (``claude --help``)."""
EFFORT_HELP = f"effort for agent sessions (the CLI's --effort: {', '.join(EFFORT_LEVELS)})"
TIMEOUT_HELP = (f"per-session timeout in seconds for tasks without 'timeout' "
                f"(default {DEFAULT_TIMEOUT_S:g})")
BASE_URL_HELP = "point agent sessions at this Anthropic-compatible endpoint"
CLAUDE_HELP = ("the Claude Code CLI (default: .tools/claude-code, which make test installs, "
               "then PATH)")
PLUGIN_DIR_HELP = "the external plugin's directory for plugin arms (ce_workflow, ...)"
AGENT_NETWORK_HELP = ("network of agent sessions: 'proxy-only' (default: nothing but the API "
                      "proxy) or 'host' (the host's network too)")
# The seed of `--wfbench-random-seed default`: shuffled, and the same order every time.
DEFAULT_RANDOM_SEED = 13
SEED_HELP = (f"shuffle the subjects' order per (scenario, run), reproducibly, with this seed; "
             f"'default' shuffles with the documented seed {DEFAULT_RANDOM_SEED} (default: "
             "no shuffle, the declared order)")
PLUGIN_VERSION_HELP = "the external plugin's exact version (checked against its plugin.json)"
CACHE_DIR_HELP = ("where what outlives a sweep is kept (the judges' trusted bytecode); 'none' "
                  "keeps nothing (default: $WFBENCH_CACHE_DIR, else the user's cache "
                  "directory: $XDG_CACHE_HOME/pytest-wfbench or ~/.cache/pytest-wfbench)")
CLONE_HELP = ("how a cell's workspace is made: 'overlay' (the template as the lower layer of "
              "an overlay: a clone costs nothing however large the repository), 'copy' (a "
              "copy of the template), or 'auto' (default: overlay where the kernel allows it)")
RESUME_HELP = ("continue the sweep in --wfbench-out DIR: cells with an admissible row of the "
               "same identity keep it; the others run")
REUSE_HELP = ("an earlier sweep's out dir: comparator arms' admissible rows of the same "
              "identity are reused instead of paid for again (one canary cell per arm runs)")
REUSE_MAX_AGE_HELP = "reuse only rows younger than this many days (default 7)"
FRESH_ARMS_HELP = "comma-separated arms that always run, never reused (candidate arms never are)"
MAX_COST_HELP = ("cost budget in USD: once recorded cost plus the expected cost of the running "
                 "cells (and of the next) would pass it, no new cell starts")
PRICES_HELP = ("a JSON price table (model -> input, output, cache_write, cache_read, USD per "
               "million tokens) extending the shipped one; repeatable")
PRICES_INI_HELP = "prices, one model per line: 'model input output cache_write cache_read'"
OUTAGE_HELP = ("stop starting cells after this many systemic failures in a row (session, infra, "
               "cleanup, review-evidence errors); 0 disables (default 5)")
OVERLAY_HELP = ("a folder of candidate skill files: each skill-bearing arm X gets a paired arm "
                "candidate_X, the same with these files over its skills; promotion.json says "
                "whether the candidate should replace the incumbent")
PROMOTION_HELP = {
    "metric": "the metric a candidate must improve (default cost_usd; e.g. tokens, "
              "estimated_tokens, session_duration_s)",
    "min_runs": "scored runs each arm needs on every task (default 3)",
    "min_improvement": "overall improvement needed, in % (default 5)",
    "max_task_regression": "no task may get worse by more than this, in % (default 20)",
    "expiry_days": "days the promotion evidence stays valid (default 7)",
}
SIGNIFICANCE_HELP = "also require the improvement's interval to lie entirely above zero"
MAX_MUTANTS_HELP = "mutants per task for --wfbench-arms mutants (default 20)"
MIN_KILL_RATE_HELP = ("a task whose oracle kills fewer of the mutants that pass verify is "
                      "under-specified (default 0.6)")
SUSPICIOUS_HELP = ("a resolved cell whose patch reaches into its judges: 'flag' (default: "
                   "resolved, listed as suspicious) or 'fail' (counted as unresolved)")
SHARD_HELP = ("run only shard I of N (counted from 1) of the sweep's cells: a task's cells "
              "stay together, tasks are spread by expected cost; needs --wfbench-sweep-id, "
              "shared by all shards, which `wfbench merge` joins")
SHARD_BALANCE_HELP = ("an earlier out dir whose rows' duration_s weigh the tasks between shards "
                      "(default: a task weighs its number of cells)")
SWEEP_ID_HELP = ("the sweep's id (letters, digits, '.', '_', '-'; default: new, from the time); "
                 "every shard of one sweep is given the same one")


def add_options(parser: pytest.Parser) -> None:
    """Register the ``--wfbench-*`` options and their ini keys."""
    group = parser.getgroup("wfbench", "agent workflow benchmarks (pytest-wfbench)")
    group.addoption("--wfbench-tasks", action="append", default=[], metavar="FILE",
                    help=TASKS_HELP)
    group.addoption("--wfbench-arms", metavar="A,B", help=ARMS_HELP)
    group.addoption("--wfbench-runs", metavar="N", help=RUNS_HELP)
    group.addoption("--wfbench-out", metavar="DIR", help=OUT_HELP)
    group.addoption("--wfbench-include-expensive", action="store_true", default=None,
                    help=EXPENSIVE_HELP)
    group.addoption("--wfbench-baseline-arm", metavar="NAME", help=BASELINE_HELP)
    group.addoption("--wfbench-unsafe-no-sandbox", action="store_true", default=False,
                    help=UNSAFE_HELP)
    group.addoption("--wfbench-admitted-output-chars", metavar="N", help=ADMITTED_HELP)
    group.addoption("--wfbench-keep-workspaces", action="store_true", default=False,
                    help=KEEP_HELP)
    group.addoption("--wfbench-secret-env", action="append", default=[], metavar="NAME",
                    help=SECRET_ENV_HELP)
    group.addoption("--wfbench-model", metavar="MODEL", help=MODEL_HELP)
    group.addoption("--wfbench-effort", metavar="LEVEL", help=EFFORT_HELP)
    group.addoption("--wfbench-timeout", metavar="SECONDS", help=TIMEOUT_HELP)
    group.addoption("--wfbench-base-url", metavar="URL", help=BASE_URL_HELP)
    group.addoption("--wfbench-claude", metavar="PATH", help=CLAUDE_HELP)
    group.addoption("--wfbench-plugin-dir", metavar="DIR", help=PLUGIN_DIR_HELP)
    group.addoption("--wfbench-plugin-version", metavar="VERSION", help=PLUGIN_VERSION_HELP)
    group.addoption("--wfbench-random-seed", metavar="N|default", help=SEED_HELP)
    group.addoption("--wfbench-agent-network", choices=("proxy-only", "host"),
                    default="proxy-only", help=AGENT_NETWORK_HELP)
    group.addoption("--wfbench-suspicious", choices=("flag", "fail"), help=SUSPICIOUS_HELP)
    group.addoption("--wfbench-cache-dir", metavar="DIR|none", help=CACHE_DIR_HELP)
    group.addoption("--wfbench-resume", action="store_true", default=False, help=RESUME_HELP)
    group.addoption("--wfbench-reuse", metavar="DIR", help=REUSE_HELP)
    group.addoption("--wfbench-reuse-max-age", metavar="DAYS", help=REUSE_MAX_AGE_HELP)
    group.addoption("--wfbench-fresh-arms", metavar="A,B", help=FRESH_ARMS_HELP)
    group.addoption("--wfbench-max-cost", metavar="USD", help=MAX_COST_HELP)
    group.addoption("--wfbench-prices", action="append", default=[], metavar="FILE",
                    help=PRICES_HELP)
    group.addoption("--wfbench-outage-streak", metavar="N", help=OUTAGE_HELP)
    group.addoption("--wfbench-candidate-overlay", metavar="DIR", help=OVERLAY_HELP)
    for name, text in PROMOTION_HELP.items():
        group.addoption(f"--wfbench-promotion-{name.replace('_', '-')}", metavar="VALUE",
                        help=text)
        parser.addini(f"wfbench_promotion_{name}", text)
    group.addoption("--wfbench-promotion-require-significance", action="store_true",
                    default=None, help=SIGNIFICANCE_HELP)
    parser.addini("wfbench_promotion_require_significance", SIGNIFICANCE_HELP, type="bool",
                  default=False)
    group.addoption("--wfbench-max-mutants", metavar="N", help=MAX_MUTANTS_HELP)
    group.addoption("--wfbench-min-kill-rate", metavar="SHARE", help=MIN_KILL_RATE_HELP)
    group.addoption("--wfbench-clone", choices=("auto", "overlay", "copy"), help=CLONE_HELP)
    group.addoption("--wfbench-shard", metavar="I/N", help=SHARD_HELP)
    group.addoption("--wfbench-shard-balance", metavar="DIR", help=SHARD_BALANCE_HELP)
    group.addoption("--wfbench-sweep-id", metavar="ID", help=SWEEP_ID_HELP)
    parser.addini("wfbench_arms", ARMS_HELP)
    parser.addini("wfbench_model", MODEL_HELP)
    parser.addini("wfbench_effort", EFFORT_HELP)
    parser.addini("wfbench_timeout", TIMEOUT_HELP)
    parser.addini("wfbench_base_url", BASE_URL_HELP)
    parser.addini("wfbench_runs", RUNS_HELP)
    parser.addini("wfbench_out", OUT_HELP)
    parser.addini("wfbench_include_expensive", EXPENSIVE_HELP, type="bool", default=False)
    parser.addini("wfbench_baseline_arm", BASELINE_HELP)
    parser.addini("wfbench_admitted_output_chars", ADMITTED_HELP)
    parser.addini("wfbench_secret_env", SECRET_ENV_HELP, type="args", default=[])
    parser.addini("wfbench_suspicious", SUSPICIOUS_HELP)
    parser.addini("wfbench_cache_dir", CACHE_DIR_HELP)
    parser.addini("wfbench_clone", CLONE_HELP)
    parser.addini("wfbench_max_cost", MAX_COST_HELP)
    parser.addini("wfbench_prices", PRICES_INI_HELP, type="linelist", default=[])
    parser.addini("wfbench_outage_streak", OUTAGE_HELP)
    parser.addini("wfbench_max_mutants", MAX_MUTANTS_HELP)
    parser.addini("wfbench_random_seed", SEED_HELP)
