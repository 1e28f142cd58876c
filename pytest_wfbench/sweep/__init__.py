"""The sweep: its settings (:mod:`.settings`) and its shared state (:mod:`.core`)."""

from pytest_wfbench.sweep.core import Sweep
from pytest_wfbench.sweep.settings import (
    AgentArmError,
    SweepIdentity,
    SweepOptions,
    load_sweep_files,
    suite_name,
)

__all__ = ["AgentArmError", "Sweep", "SweepIdentity", "SweepOptions", "load_sweep_files",
           "suite_name"]
