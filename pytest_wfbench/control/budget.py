"""The cost budget (``--wfbench-max-cost USD``): a cell starts only while the
recorded cost, plus the expected cost of the cells running and of this one,
stays within the budget; once it would not, no new cell starts anywhere.

Costs are the CLI's own (``cost_usd``), else estimated from the row's tokens
and the price table (shipped in ``prices.json``; the ini key ``wfbench_prices``
and ``--wfbench-prices FILE`` extend it). A cell's expected cost is the median
of what its arm's finished cells cost in this sweep (else any arm's, else 0:
the first cell always starts). The ledger is a file in the work dir under a
lock, shared by every xdist worker.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

PRICES = Path(__file__).with_name("prices.json")
LEDGER = "budget.json"
MTOK = 1_000_000


class PriceError(Exception):
    """A price table that cannot be read; the message says where."""


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float

    def cost(self, row: dict[str, Any]) -> float:
        return (float(row.get("input_tokens") or 0) * self.input
                + float(row.get("output_tokens") or 0) * self.output
                + float(row.get("cache_creation_input_tokens") or 0) * self.cache_write
                + float(row.get("cache_read_input_tokens") or 0) * self.cache_read) / MTOK


def _price(name: str, value: Any, where: str) -> Price:
    fields = ("input", "output", "cache_write", "cache_read")
    if isinstance(value, str):
        parts = value.split()
        value = dict(zip(fields, parts, strict=False)) if len(parts) == 4 else None
    if not isinstance(value, dict) or set(value) != set(fields):
        raise PriceError(f"{where}: the price of {name!r} must give {', '.join(fields)} "
                         "(USD per million tokens)")
    try:
        numbers = [float(value[key]) for key in fields]
    except (TypeError, ValueError):
        raise PriceError(f"{where}: the price of {name!r} has a value that is not a "
                         "number") from None
    if any(number < 0 for number in numbers):
        raise PriceError(f"{where}: the price of {name!r} is negative")
    return Price(*numbers)


def load_prices(ini_lines: list[str], files: list[Path]) -> dict[str, Price]:
    """The shipped table, then each file (JSON: model -> prices), then the ini
    lines (``model input output cache_write cache_read``); later ones win."""
    tables: list[tuple[str, dict[str, Any]]] = []
    for path in [PRICES, *files]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise PriceError(f"{path}: cannot read a price table: {error}") from error
        if not isinstance(data, dict):
            raise PriceError(f"{path}: a price table is a JSON object: model -> prices")
        tables.append((str(path), data))
    ini: dict[str, Any] = {}
    for line in ini_lines:
        name, _, rest = line.strip().partition(" ")
        if name:
            ini[name] = rest
    tables.append(("ini wfbench_prices", ini))
    prices: dict[str, Price] = {}
    for where, table in tables:
        for name, value in table.items():
            if not name.startswith("_"):
                prices[name] = _price(name, value, where)
    return prices


def price_of(model: str | None, prices: dict[str, Price]) -> Price | None:
    """The price of the longest table key the model's id starts with."""
    if not model:
        return None
    matches = [name for name in prices if model == name or model.startswith(f"{name}-")
               or model.startswith(name)]
    return prices[max(matches, key=len)] if matches else None


def row_cost(row: dict[str, Any], prices: dict[str, Price]) -> float:
    """What a cell cost: the CLI's figure, else tokens at the table's price."""
    if row.get("cost_usd") is not None:
        return float(row["cost_usd"])
    price = price_of(row.get("model"), prices)
    return price.cost(row) if price is not None else 0.0


class Ledger:
    """The sweep's spend, shared by its processes."""

    def __init__(self, work_dir: Path, budget_usd: float) -> None:
        self.path = work_dir / LEDGER
        self.lock = FileLock(str(work_dir / f".{LEDGER}.lock"))
        self.budget_usd = budget_usd

    def _read(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            loaded = None
        if isinstance(loaded, dict):
            data = loaded
        data.setdefault("spent", 0.0)
        data.setdefault("running", {})
        data.setdefault("costs", {})
        return data

    def _write(self, data: dict[str, Any]) -> None:
        temporary = self.path.with_name(f".{LEDGER}.new")
        temporary.write_text(json.dumps(data), encoding="utf-8")
        temporary.replace(self.path)

    @staticmethod
    def _expected(data: dict[str, Any], arm: str) -> float:
        costs: dict[str, list[float]] = data["costs"]
        own = costs.get(arm) or [cost for values in costs.values() for cost in values]
        return statistics.median(own) if own else 0.0

    def admit(self, cell_id: str, arm: str) -> str | None:
        """Reserve the cell's expected cost, or say why it must not start."""
        with self.lock:
            data = self._read()
            expected = self._expected(data, arm)
            running = sum(float(value) for value in data["running"].values())
            if data["spent"] + running + expected > self.budget_usd or (
                    data["spent"] >= self.budget_usd):
                return (f"the cost budget of ${self.budget_usd:,.4f} was reached "
                        f"(${data['spent']:,.4f} recorded, ${running:,.4f} expected for the "
                        f"running cells, ${expected:,.4f} for this one)")
            data["running"][cell_id] = expected
            self._write(data)
            return None

    def settle(self, cell_id: str, arm: str, cost: float) -> None:
        """A cell ended: its reservation becomes its cost."""
        with self.lock:
            data = self._read()
            if data["running"].pop(cell_id, None) is None:
                return
            data["spent"] += cost
            data["costs"].setdefault(arm, []).append(cost)
            self._write(data)

    def record_earlier(self, cost: float) -> None:
        """What earlier sessions of a resumed sweep spent on the rows it keeps: the
        budget is the sweep's, not the session's."""
        with self.lock:
            data = self._read()
            data["spent"] += cost
            self._write(data)

    def spent(self) -> float:
        with self.lock:
            return float(self._read()["spent"])
