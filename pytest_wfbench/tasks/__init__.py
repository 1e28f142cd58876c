"""Task files (SPEC §2): the data they declare and how they are loaded."""

from pytest_wfbench.tasks.load import load_task_file, load_task_files
from pytest_wfbench.tasks.model import (
    AGENT_ARM_KEYS,
    ARM_KINDS,
    BUILTIN_ARMS,
    DEFAULT_ALLOWED_TOOLS,
    DEFAULT_TIMEOUT_S,
    ORACLE_KEYS,
    PHASE_KEYS,
    PHASE_ROLES,
    SANDBOX_KEYS,
    SCENARIO_KEYS,
    SCENARIO_KINDS,
    SCHEMA_VERSION,
    SCRIPT_ARM_KEYS,
    SUBJECT_KEYS,
    TASK_KEYS,
    TOP_KEYS,
    ArmDefinition,
    OracleSpec,
    PhaseSpec,
    RepoSpec,
    SandboxSpec,
    ScenarioSpec,
    SubjectSpec,
    Task,
    TaskFile,
    TaskFileError,
)

__all__ = [
    "AGENT_ARM_KEYS", "ARM_KINDS", "BUILTIN_ARMS", "DEFAULT_ALLOWED_TOOLS", "DEFAULT_TIMEOUT_S",
    "ORACLE_KEYS", "PHASE_KEYS", "PHASE_ROLES", "SANDBOX_KEYS", "SCENARIO_KEYS", "SCENARIO_KINDS",
    "SCHEMA_VERSION", "SCRIPT_ARM_KEYS", "SUBJECT_KEYS", "TASK_KEYS", "TOP_KEYS", "ArmDefinition",
    "OracleSpec", "PhaseSpec", "RepoSpec", "SandboxSpec", "ScenarioSpec", "SubjectSpec", "Task",
    "TaskFile", "TaskFileError", "load_task_file", "load_task_files",
]
