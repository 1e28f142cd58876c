"""Checks of a sweep's agent arms and prices before any cell runs: each
failure a usage error that says what is missing and how to give it."""

from __future__ import annotations

from pytest_wfbench.agents import PluginDir, PluginError, load_plugin
from pytest_wfbench.control.budget import Price, PriceError, load_prices, price_of
from pytest_wfbench.sweep.settings import AgentArmError, SweepOptions
from pytest_wfbench.tasks import ArmDefinition


def check_prices(options: SweepOptions, arms: list[ArmDefinition]) -> dict[str, Price]:
    """The price table; with a budget, agent sessions need their model priced."""
    try:
        prices = load_prices(list(options.price_lines), list(options.price_files))
    except PriceError as error:
        raise AgentArmError(str(error)) from error
    model = options.model
    if arms and options.max_cost_usd is not None and price_of(model, prices) is None:
        raise AgentArmError(
            f"--wfbench-max-cost needs the price of model {model!r}, which the price table "
            "does not know: add it with the ini key wfbench_prices (a line "
            f"'{model} <input> <output> <cache_write> <cache_read>', USD per million "
            "tokens) or --wfbench-prices FILE")
    return prices


def check_agent_arms(options: SweepOptions, arms: list[ArmDefinition],
                     unavailable: dict[str, str | None]) -> PluginDir | None:
    """Agent arms need a model, their skills, and a pinned plugin: checked
    before any cell runs (a usage error otherwise)."""
    if not arms:
        return None
    names = sorted({arm.name for arm in arms})
    for kind, reason in sorted(unavailable.items()):
        if reason:
            named = sorted({arm.name for arm in arms if arm.kind == kind})
            raise AgentArmError(f"agent arms {named} cannot run here: {reason}")
    if not options.model:
        raise AgentArmError(f"agent arms {names} need --wfbench-model (recorded in every "
                            "row)")
    for arm in arms:
        for phase in arm.phases:
            if arm.plugin or phase.skill is None:
                continue
            if arm.skills is None:
                raise AgentArmError(
                    f"arm {arm.name!r} must invoke the {phase.skill!r} skill, but no skills "
                    "folder is given: add 'skills: <folder>' to the task file or the arm")
            if not (arm.skills / phase.skill / "SKILL.md").is_file():
                raise AgentArmError(f"arm {arm.name!r}: {arm.skills / phase.skill}/SKILL.md "
                                    "does not exist")
    if any(arm.plugin for arm in arms):
        try:
            return load_plugin(options.plugin_dir, options.plugin_version)
        except PluginError as error:
            plugin_arms = sorted({arm.name for arm in arms if arm.plugin})
            raise AgentArmError(f"arms {plugin_arms}: {error}") from error
    return None
