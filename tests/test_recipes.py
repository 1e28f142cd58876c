"""The recipes under recipes/ are checked by the validators their platforms'
users run, installed from PyPI and working offline: GitHub's workflow schema
(vendored in check-jsonschema), Kubernetes' schemas (bundled in
kubernetes-validate, strict), Docker's Dockerfile parser; their shell scripts
parse, and they use options and subcommands that exist. Each check is shown to
fail on a broken copy."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import dockerfile
import pytest
import yaml

from pytest_wfbench.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
RECIPES = ROOT / "recipes"
WORKFLOW = RECIPES / "github-actions" / "wfbench-sweep.yml"
SWEEP_JOB = RECIPES / "kubernetes" / "wfbench-sweep.yaml"
MERGE_JOB = RECIPES / "kubernetes" / "wfbench-merge.yaml"
DOCKERFILE = RECIPES / "kubernetes" / "Dockerfile"
BIN = Path(sys.executable).parent


def tool(name: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / name), *map(str, args)], capture_output=True, text=True,
                          check=False, timeout=300)


def check_workflow(path: Path) -> subprocess.CompletedProcess[str]:
    return tool("check-jsonschema", "--builtin-schema", "vendor.github-workflows", path)


def check_manifests(*paths: Path) -> subprocess.CompletedProcess[str]:
    return tool("kubernetes-validate", "--strict", "--quiet", *paths)


def test_the_github_workflow_is_valid(tmp_path: Path) -> None:
    result = check_workflow(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("runs-on:", "run-on:", 1))
    assert check_workflow(broken).returncode != 0


def test_the_kubernetes_manifests_are_valid(tmp_path: Path) -> None:
    result = check_manifests(SWEEP_JOB, MERGE_JOB)
    assert result.returncode == 0, result.stdout + result.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text(SWEEP_JOB.read_text().replace("completionMode:", "completionMod:"))
    result = check_manifests(broken)
    assert result.returncode != 0 and "completionMod" in result.stdout + result.stderr


def shell_ok(script: str, shell: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([shell, "-n", "-c", script], capture_output=True, text=True,
                          check=False)


def workflow_scripts() -> list[str]:
    document = yaml.safe_load(WORKFLOW.read_text())
    scripts = [step["run"] for job in document["jobs"].values() for step in job["steps"]
               if "run" in step]
    # GitHub replaces ${{ expressions }} before the shell sees the script.
    return [re.sub(r"\$\{\{.*?\}\}", "x", script) for script in scripts]


def job_scripts() -> list[str]:
    scripts = []
    for path in (SWEEP_JOB, MERGE_JOB):
        for document in yaml.safe_load_all(path.read_text()):
            if document["kind"] == "Job":
                scripts += [container["args"][0] for container
                            in document["spec"]["template"]["spec"]["containers"]]
    return scripts


def test_the_recipes_scripts_parse() -> None:
    assert len(workflow_scripts()) >= 5 and len(job_scripts()) == 2
    for script in workflow_scripts():
        result = shell_ok(script, "bash")
        assert result.returncode == 0, f"{script}\n{result.stderr}"
    for script in job_scripts():
        result = shell_ok(script, "sh")
        assert result.returncode == 0, f"{script}\n{result.stderr}"
    assert shell_ok("if true; then", "sh").returncode != 0


def test_the_runner_image_installs_what_a_runner_needs() -> None:
    commands = dockerfile.parse_file(str(DOCKERFILE))
    assert commands[0].cmd == "FROM"
    run = " ".join(" ".join(c.value) for c in commands if c.cmd == "RUN")
    for needed in ("bubblewrap", "mercurial", "git", "npm", "make cli", "'.[html]'"):
        assert needed in run, needed
    with pytest.raises(dockerfile.GoParseError):
        dockerfile.parse_string("FROM debian\nRUN <<EOF\n")


def recipe_text() -> str:
    return "\n".join(path.read_text() for path in (WORKFLOW, SWEEP_JOB, MERGE_JOB))


def test_the_recipes_use_options_and_commands_that_exist() -> None:
    options = (ROOT / "pytest_wfbench" / "options.py").read_text()
    used = set(re.findall(r"--wfbench-[a-z-]+", recipe_text()))
    assert {"--wfbench-shard", "--wfbench-sweep-id", "--wfbench-out"} <= used
    assert all(f'"{option}"' in options for option in used), used
    parser = build_parser()
    commands = re.findall(r"bin/wfbench ([^\n]+)", recipe_text())
    assert len(commands) == 2
    for command in commands:
        args = parser.parse_args(shlex.split(command))
        assert args.command == "merge" and args.out is not None


def test_the_shard_counts_agree() -> None:
    documents: list[dict[str, Any]] = list(yaml.safe_load_all(SWEEP_JOB.read_text()))
    job = next(d for d in documents if d["kind"] == "Job")
    spec = job["spec"]
    env = {e["name"]: e.get("value") for e in spec["template"]["spec"]["containers"][0]["env"]}
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == int(env["SHARDS"])
    workflow = yaml.safe_load(WORKFLOW.read_text())
    matrix = workflow["jobs"]["shard"]["strategy"]["matrix"]["shard"]
    assert matrix == list(range(1, len(matrix) + 1))
    assert workflow["jobs"]["merge"]["needs"] == "shard"
