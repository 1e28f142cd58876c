"""What a sweep spent, per arm and in all (the terminal's ``wfbench spend``
line): tokens, and cost where measured, of the fresh cells. Pure."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from pytest_wfbench.aggregate.select import Positions, field_is, flag_at, positions_of
from pytest_wfbench.table import Table


def exact_sum(values: Iterable[float]) -> float:
    """math.fsum's sum of the values, rounded once; a sum past the largest float
    (counts of 1e308, which fsum refuses) infinite, as the table's totals are."""
    values = list(values)
    try:
        return math.fsum(values)
    except OverflowError:
        return sum(values)


def arm_groups(table: Table, at: Positions) -> dict[str, Positions]:
    """These rows by the text of their arm, each group in their order, the
    groups in the order their first row comes (select.grouped's, from the arm's
    codes: no object a row)."""
    arms = table.texts("arm")
    codes = np.frombuffer(arms.codes, np.dtype(arms.codes.typecode))[at]
    found, first = np.unique(codes, return_index=True)
    by_arm: dict[str, list[Positions]] = {}
    for code in found[np.argsort(first, kind="stable")].tolist():
        by_arm.setdefault(str(arms.values[code]), []).append(np.flatnonzero(codes == code))
    return {arm: at[np.sort(np.concatenate(places))] for arm, places in by_arm.items()}


def spend_lines(table: Table) -> list[str]:
    """What the sweep spent, per arm and in all: tokens, and cost where measured
    (each an exact sum, math.fsum's, of the fresh cells' figures, a null as 0)."""
    positions = table.positions
    at = positions_of(positions)
    fresh = field_is(table, "status", positions, "ran") & (flag_at(table, "reused", at) != 1)
    by_arm = arm_groups(table, at[fresh])
    usage = [np.frombuffer(table.number(key), np.float64) for key in (
        "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
        "output_tokens")]
    cost_column = np.frombuffer(table.number("cost_usd"), np.float64)

    def known_at(column: npt.NDArray[np.float64], members: Positions) -> list[float]:
        values = column[members]
        found: list[float] = values[~np.isnan(values)].tolist()  # null: left out
        return found

    per_arm: dict[str, list[float]] = {}
    cost_known: dict[str, bool] = {}
    for arm, members in by_arm.items():
        costs = known_at(cost_column, members)
        per_arm[arm] = [exact_sum(exact_sum(known_at(column, members)) for column in usage),
                        exact_sum(costs)]
        cost_known[arm] = bool(costs)
    if not any(tokens for tokens, _ in per_arm.values()):
        return []
    parts = [f"{arm} {tokens:,.0f} tokens" + (f" ${cost:,.4f}" if cost_known.get(arm) else "")
             for arm, (tokens, cost) in sorted(per_arm.items())]
    total_tokens = sum(tokens for tokens, _ in per_arm.values())
    total_cost = sum(cost for _, cost in per_arm.values())
    return [f"wfbench spend: {'; '.join(parts)}; sweep {total_tokens:,.0f} tokens "
            f"${total_cost:,.4f}"]
