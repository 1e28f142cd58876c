"""The sweep options read from the ``--wfbench-*`` options and ini keys
(:mod:`.options`): the command line first, then the ini file, then a default;
every value checked, a bad one a usage error naming where it came from."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pytest_wfbench.options import DEFAULT_RANDOM_SEED, DEFAULT_SCENARIO_RUNS, EFFORT_LEVELS
from pytest_wfbench.session import DEFAULT_ADMITTED_OUTPUT_CHARS
from pytest_wfbench.shard import Shard, parse_shard, parse_sweep_id
from pytest_wfbench.sweep import SweepOptions
from pytest_wfbench.tasks import DEFAULT_TIMEOUT_S


def _cache_dir(config: pytest.Config) -> Path | None:
    """Command line, ini file, $WFBENCH_CACHE_DIR, then the user's cache directory."""
    value = _setting(config, "cache_dir") or os.environ.get("WFBENCH_CACHE_DIR")
    if value == "none":
        return None
    if value:
        return (config.invocation_params.dir / value).resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-wfbench"


def _setting(config: pytest.Config, name: str) -> Any:
    """Command line first, then the ini file."""
    value = config.getoption(f"wfbench_{name}")
    return value if value is not None else (config.getini(f"wfbench_{name}") or None)


def _number(config: pytest.Config, name: str, kind: type[int] | type[float], default: Any, *,
            low: float, high: float | None = None, strict: bool = False, what: str,
            ini: bool = True, strip: str = "") -> Any:
    """A number option (command line first, then its ini key when it has one),
    within bounds: ``low`` (excluded when ``strict``) and ``high``; ``strip``:
    characters a value may start with (``$`` of an amount)."""
    raw = _setting(config, name) if ini else config.getoption(f"wfbench_{name}")
    if raw is None:
        return default
    value: float | None
    try:
        value = kind(str(raw).strip().lstrip(strip))
    except ValueError:
        value = None
    bad = (value is None or value != value or abs(value) == float("inf") or value < low
           or (strict and value == low) or (high is not None and value > high))
    if bad:
        flag = f"--wfbench-{name.replace('_', '-')}" + (f" (or ini wfbench_{name})" if ini
                                                        else "")
        raise pytest.UsageError(f"{flag} must be {what}, got {raw!r}")
    return value


def _positive_int(config: pytest.Config, name: str, default: int) -> int:
    return int(_number(config, name, int, default, low=1, what="a positive whole number"))


def _whole_number(config: pytest.Config, name: str, default: int) -> int:
    return int(_number(config, name, int, default, low=0, what="a whole number >= 0"))


def _share(config: pytest.Config, name: str, default: float) -> float:
    return float(_number(config, name, float, default, low=0.0, high=1.0, ini=False,
                         what="a share between 0 and 1"))


def _positive_number(config: pytest.Config, name: str, default: float) -> float:
    return float(_number(config, name, float, default, low=0.0, strict=True, ini=False,
                         what="a positive number"))


def _arms(config: pytest.Config) -> tuple[str, ...] | None:
    given = config.getoption("wfbench_arms")
    raw = given if given is not None else config.getini("wfbench_arms")
    if given is None and not raw:
        return None
    arms = tuple(a.strip() for a in str(raw).split(",") if a.strip())
    if not arms:
        where = "--wfbench-arms" if given is not None else "ini wfbench_arms"
        raise pytest.UsageError(f"{where} names no arm (got {raw!r}): give comma-separated "
                                "arm names, e.g. gold,noop")
    return arms


def _out_dir(config: pytest.Config) -> Path | None:
    out = _setting(config, "out")
    if not out:
        return None
    path: Path = (config.invocation_params.dir / str(out)).resolve()
    if path.exists() and not path.is_dir():
        raise pytest.UsageError(f"--wfbench-out {out}: {path} exists and is not a directory; "
                                "give a directory (a new one for a new sweep)")
    return path


def _effort(config: pytest.Config) -> str | None:
    effort = _setting(config, "effort")
    if effort is not None and effort not in EFFORT_LEVELS:
        raise pytest.UsageError(f"--wfbench-effort (or ini wfbench_effort) must be one of "
                                f"{', '.join(EFFORT_LEVELS)}, got {effort!r}")
    return None if effort is None else str(effort)


def options_from_config(config: pytest.Config) -> SweepOptions:
    root = config.invocation_params.dir
    runs = _positive_int(config, "runs", 1)
    return SweepOptions(
        task_paths=tuple((root / p).resolve() for p in config.getoption("wfbench_tasks")),
        arms=_arms(config),
        runs=runs,
        scenario_runs=runs if _setting(config, "runs") is not None else DEFAULT_SCENARIO_RUNS,
        out_dir=_out_dir(config),
        include_expensive=bool(_setting(config, "include_expensive")),
        baseline_arm=_setting(config, "baseline_arm"),
        unsafe_no_sandbox=bool(config.getoption("wfbench_unsafe_no_sandbox")),
        admitted_output_chars=_positive_int(config, "admitted_output_chars",
                                            DEFAULT_ADMITTED_OUTPUT_CHARS),
        keep_workspaces=bool(config.getoption("wfbench_keep_workspaces")),
        secret_env=(*config.getoption("wfbench_secret_env"),
                    *config.getini("wfbench_secret_env")),
        model=_setting(config, "model"),
        effort=_effort(config),
        default_timeout_s=float(_positive_int(config, "timeout", int(DEFAULT_TIMEOUT_S))),
        base_url=_setting(config, "base_url"),
        claude=config.getoption("wfbench_claude"),
        plugin_dir=config.getoption("wfbench_plugin_dir"),
        plugin_version=config.getoption("wfbench_plugin_version"),
        rootdir=config.rootpath,
        random_seed=_seed(config),
        agent_network=config.getoption("wfbench_agent_network"),
        suspicious=_choice(config, "suspicious", ("flag", "fail"), "flag"),
        cache_dir=_cache_dir(config),
        clone=_choice(config, "clone", ("auto", "overlay", "copy"), "auto"),
        resume=bool(config.getoption("wfbench_resume")),
        reuse_dir=_reuse_dir(config),
        reuse_max_age_days=_positive_number(config, "reuse_max_age", 7.0),
        fresh_arms=tuple(a.strip() for a in (config.getoption("wfbench_fresh_arms") or "")
                         .split(",") if a.strip()),
        max_cost_usd=_max_cost(config),
        price_files=tuple((root / p).resolve() for p in config.getoption("wfbench_prices")),
        price_lines=tuple(config.getini("wfbench_prices")),
        outage_streak=_whole_number(config, "outage_streak", 5),
        candidate_overlay=_overlay(config),
        max_mutants=_whole_number(config, "max_mutants", 20),
        min_kill_rate=_share(config, "min_kill_rate", 0.6),
        promotion=_promotion(config),
        shard=_shard(config),
        shard_balance=_shard_balance(config),
        sweep_id=_sweep_id(config),
    )


def _overlay(config: pytest.Config) -> Path | None:
    raw = config.getoption("wfbench_candidate_overlay")
    if raw is None:
        return None
    path: Path = (config.invocation_params.dir / raw).resolve()
    if not path.is_dir() or not any(p.is_file() for p in path.rglob("*")):
        raise pytest.UsageError(f"--wfbench-candidate-overlay {raw}: {path} is not a folder "
                                "of candidate skill files (<skill>/SKILL.md, ...)")
    return path


def _promotion(config: pytest.Config) -> dict[str, Any]:
    """The gate's policy: each value checked as the gate checks it (none given:
    the gate's defaults, and nothing of the gate imported)."""
    policy: dict[str, Any] = {}
    kinds = {"metric": str, "min_runs": int, "min_improvement": float,
             "max_task_regression": float, "expiry_days": int}
    for name, kind in kinds.items():
        raw = _setting(config, f"promotion_{name}")
        if raw is None:
            continue
        try:
            policy[name] = kind(raw)
        except ValueError:
            raise pytest.UsageError(f"--wfbench-promotion-{name.replace('_', '-')} must be a "
                                    f"{kind.__name__}, got {raw!r}") from None
    significance = config.getoption("wfbench_promotion_require_significance")
    if significance or config.getini("wfbench_promotion_require_significance"):
        policy["require_significance"] = True
    if not policy:
        return policy
    from pytest_wfbench.decisions import PromotionPolicy

    try:
        PromotionPolicy(**policy)
    except ValueError as error:
        raise pytest.UsageError(f"--wfbench-promotion-*: {error}") from None
    return policy


def _shard(config: pytest.Config) -> Shard | None:
    raw = config.getoption("wfbench_shard")
    if raw is None:
        return None
    try:
        shard = parse_shard(raw)
    except ValueError as error:
        raise pytest.UsageError(f"--wfbench-shard: {error}") from None
    if config.getoption("wfbench_sweep_id") is None and not config.getoption("wfbench_resume"):
        raise pytest.UsageError(
            f"--wfbench-shard {shard.label} needs --wfbench-sweep-id ID: the id every shard of "
            "the sweep is given (e.g. the CI run's id), so that `wfbench merge` joins them")
    return shard


def _shard_balance(config: pytest.Config) -> Path | None:
    raw = config.getoption("wfbench_shard_balance")
    if raw is None:
        return None
    if config.getoption("wfbench_shard") is None:
        raise pytest.UsageError("--wfbench-shard-balance weighs the tasks between shards: it "
                                "needs --wfbench-shard I/N")
    path: Path = (config.invocation_params.dir / raw).resolve()
    if not (path / "results.jsonl").is_file():
        raise pytest.UsageError(f"--wfbench-shard-balance {raw}: {path} is not the out dir of a "
                                "sweep (it has no results.jsonl)")
    return path


def _sweep_id(config: pytest.Config) -> str | None:
    raw = config.getoption("wfbench_sweep_id")
    if raw is None:
        return None
    try:
        return parse_sweep_id(raw)
    except ValueError as error:
        raise pytest.UsageError(f"--wfbench-sweep-id: {error}") from None


def _max_cost(config: pytest.Config) -> float | None:
    value = _number(config, "max_cost", float, None, low=0.0, strict=True, strip="$",
                    what="a positive amount of USD")
    return None if value is None else float(value)


def _reuse_dir(config: pytest.Config) -> Path | None:
    raw = config.getoption("wfbench_reuse")
    if raw is None:
        return None
    path: Path = (config.invocation_params.dir / raw).resolve()
    if not (path / "results.jsonl").is_file():
        raise pytest.UsageError(f"--wfbench-reuse {raw}: {path} is not the out dir of a sweep "
                                "(it has no results.jsonl)")
    return path


def _choice(config: pytest.Config, name: str, choices: tuple[str, ...], default: str) -> str:
    value = _setting(config, name) or default
    if value not in choices:
        raise pytest.UsageError(f"ini wfbench_{name} must be one of {', '.join(choices)}, "
                                f"got {value!r}")
    return str(value)


def _seed(config: pytest.Config) -> int | None:
    """Command line, then ini: a whole number, or ``default`` for the documented seed."""
    raw = _setting(config, "random_seed")
    if raw is None:
        return None
    if str(raw).strip() == "default":
        return DEFAULT_RANDOM_SEED
    try:
        return int(raw)
    except ValueError:
        raise pytest.UsageError(
            f"--wfbench-random-seed (or ini wfbench_random_seed) must be a whole number or "
            f"'default', got {raw!r}") from None
