"""Shards: one sweep's cells spread over several machines (``--wfbench-shard
I/N``), each shard writing its own out dir, joined again by ``wfbench merge``.
:mod:`.plan` decides (pure); :mod:`.glue` applies it to a sweep's cells."""

from pytest_wfbench.shard.plan import (
    Shard,
    ShardError,
    TaskCells,
    assign,
    expected_costs,
    parse_shard,
    parse_sweep_id,
    shard_loads,
    split,
)

__all__ = ["Shard", "ShardError", "TaskCells", "assign", "expected_costs", "parse_shard",
           "parse_sweep_id", "shard_loads", "split"]
