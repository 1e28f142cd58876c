"""The three scenarios, driven with git (a subject whose driver is ``git``).

Setup (the remote, its seed, clones the motion starts from) and the oracle are
untimed harness work; the motion itself is measured step by step.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_wfbench.lanes.fault import FaultFixture, advertisement
from pytest_wfbench.lanes.steps import StepRecorder
from pytest_wfbench.tasks import ScenarioSpec, SubjectSpec

LOCAL_FILE = "local_file"
LOOPBACK_FAULT = "loopback_fault_fixture"
CI_UNMEASURED = ("hosted CI observation cannot be measured on a local_file remote: nothing "
                 "runs CI for it")

Oracle = dict[str, Any]


def _harness(recorder: StepRecorder, argv: list[str], cwd: Path) -> str:
    """Untimed setup through the subject's own binary."""
    result = subprocess.run(argv, cwd=cwd, env=recorder.env, capture_output=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"setup failed: {' '.join(argv)}: "
                           f"{result.stderr.decode(errors='replace').strip()}")
    return result.stdout.decode("utf-8", "replace").strip()


def seeded_remote(git: str, recorder: StepRecorder, root: Path,
                  hooks: tuple[tuple[str, str], ...]) -> Path:
    """A bare remote with one commit on main, and the scenario's hooks."""
    remote = root / "remote.git"
    _harness(recorder, [git, "init", "--quiet", "--bare", "-b", "main", str(remote)], root)
    seed = root / "seed"
    _harness(recorder, [git, "init", "--quiet", "-b", "main", str(seed)], root)
    (seed / "README.md").write_text("# seeded project\n")
    _harness(recorder, [git, "add", "README.md"], seed)
    _harness(recorder, [git, "commit", "--quiet", "-m", "seed"], seed)
    _harness(recorder, [git, "push", "--quiet", str(remote), "main"], seed)
    shutil.rmtree(seed)
    for name, body in hooks:
        hook = remote / "hooks" / name
        hook.write_text(f"#!/bin/sh\n{body}\n")
        hook.chmod(0o755)
    return remote


def payload_on_branch(git: str, recorder: StepRecorder, remote: Path, branch: str, path: str,
                      payload: str) -> tuple[bool, str]:
    result = subprocess.run([git, "--git-dir", str(remote), "show", f"{branch}:{path}"],
                            env=recorder.env, capture_output=True, check=False)
    found = result.stdout.decode("utf-8", "replace")
    if result.returncode != 0:
        return False, f"{path} is not on {branch} in the remote"
    if found != payload:
        return False, f"{path} on {branch} holds other content"
    return True, f"{path} is on {branch}"


def _oracle(checks: list[tuple[bool, str]]) -> Oracle:
    return {"passed": all(ok for ok, _ in checks),
            "checks": [{"passed": ok, "detail": detail} for ok, detail in checks]}


def task_loop(subject: SubjectSpec, scenario: ScenarioSpec, recorder: StepRecorder,
              root: Path, extras: dict[str, Any]) -> Oracle:
    """For a task and then a follow-up: a worktree on a new branch, edit, stage,
    commit, push, remove the worktree."""
    git = subject.binary
    extras["transport"] = LOCAL_FILE
    remote = seeded_remote(git, recorder, root, scenario.remote_hooks)
    base = root / "base"
    _harness(recorder, [git, "clone", "--quiet", str(remote), str(base)], root)
    payloads: list[tuple[str, str, str]] = []
    for phase in ("task", "followup"):
        recorder.phase = phase
        branch, worktree = f"{phase}/1", root / f"wt-{phase}"
        name, payload = f"payload-{phase}.txt", f"{phase} payload for {scenario.id}\n"
        recorder.run(f"{phase}.acquire", [git, "worktree", "add", "--quiet", "-b", branch,
                                          str(worktree), "origin/main"], cwd=base)
        recorder.edit(f"{phase}.edit", worktree / name, payload)
        recorder.run(f"{phase}.snapshot.stage", [git, "add", name], cwd=worktree)
        recorder.run(f"{phase}.snapshot.commit", [git, "commit", "--quiet", "-m",
                                                  f"{phase}: add {name}"], cwd=worktree)
        recorder.run(f"{phase}.publish", [git, "push", "--quiet", "origin", branch],
                     cwd=worktree)
        recorder.run(f"{phase}.release", [git, "worktree", "remove", str(worktree)], cwd=base)
        payloads.append((branch, name, payload))
    recorder.phase = "summary"
    delta = ((recorder.find("followup.acquire").elapsed_ms or 0.0)
             - (recorder.find("task.acquire").elapsed_ms or 0.0))
    extras["warm_acquire_delta_ms"] = round(delta, 3)
    recorder.summary("summary.warm_acquire_delta_ms", extras["warm_acquire_delta_ms"])
    return _oracle([payload_on_branch(git, recorder, remote, *p) for p in payloads])


def _agent_motion(git: str, recorder: StepRecorder, phase: str, workdir: Path,
                  branch: str, new_branch: bool) -> tuple[str, str, str]:
    recorder.phase = phase
    name, payload = f"payload-{phase}.txt", f"{phase} work\n"
    if new_branch:
        recorder.run(f"{phase}.branch", [git, "switch", "--quiet", "-c", branch], cwd=workdir)
    recorder.run(f"{phase}.status", [git, "status", "--short", "--branch"], cwd=workdir)
    recorder.edit(f"{phase}.edit", workdir / name, payload)
    recorder.run(f"{phase}.snapshot.stage", [git, "add", name], cwd=workdir)
    recorder.run(f"{phase}.snapshot.commit", [git, "commit", "--quiet", "-m",
                                              f"{phase}: add {name}"], cwd=workdir)
    recorder.run(f"{phase}.publish", [git, "push", "--quiet", "-u", "origin", branch],
                 cwd=workdir)
    recorder.unmeasured(f"{phase}.ci.observe", CI_UNMEASURED)
    recorder.run(f"{phase}.review.handoff", [git, "show", "--stat", "HEAD"], cwd=workdir)
    return branch, name, payload


def _disk_usage(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if not p.is_symlink() and p.is_file())


def agent_task_baseline(subject: SubjectSpec, scenario: ScenarioSpec, recorder: StepRecorder,
                        root: Path, extras: dict[str, Any]) -> Oracle:
    """Cold: a full clone and the whole motion; warm: a worktree sharing the
    first clone's objects, the same motion."""
    git = subject.binary
    extras["transport"] = LOCAL_FILE
    remote = seeded_remote(git, recorder, root, scenario.remote_hooks)
    cold, warm = root / "cold", root / "warm"
    recorder.phase = "cold"
    recorder.run("cold.acquire", [git, "clone", "--quiet", str(remote), str(cold)], cwd=root)
    payloads = [_agent_motion(git, recorder, "cold", cold, "agent/cold", new_branch=True)]
    recorder.phase = "warm"
    recorder.run("warm.acquire", [git, "worktree", "add", "--quiet", "-b", "agent/warm",
                                  str(warm), "origin/main"], cwd=cold)
    payloads.append(_agent_motion(git, recorder, "warm", warm, "agent/warm", new_branch=False))
    recorder.phase = "summary"
    usage = {"cold_bytes": _disk_usage(cold), "warm_bytes": _disk_usage(warm)}
    extras["disk_usage_bytes"] = usage
    recorder.summary("summary.workspace_disk_usage_bytes", usage)
    return _oracle([payload_on_branch(git, recorder, remote, *p) for p in payloads])


def interrupted_publication(subject: SubjectSpec, scenario: ScenarioSpec,
                            recorder: StepRecorder, root: Path, extras: dict[str, Any]) -> Oracle:
    """A push whose request arrives in full and is never answered: the client
    must not claim success, must not replay, and must keep the work."""
    git = subject.binary
    extras["transport"] = LOOPBACK_FAULT
    seed_remote = seeded_remote(git, recorder, root, ())
    fixture = FaultFixture(advertisement(seed_remote), replays=scenario.fault_replays)
    work = root / "work"
    try:
        _harness(recorder, [git, "clone", "--quiet", str(seed_remote), str(work)], root)
        shutil.rmtree(seed_remote)  # the fixture keeps no remote state
        _harness(recorder, [git, "remote", "set-url", "origin", fixture.url], work)
        recorder.phase = "publish"
        recorder.edit("publish.edit", work / "payload.txt", "work that must not be lost\n")
        recorder.run("publish.snapshot.stage", [git, "add", "payload.txt"], cwd=work)
        recorder.run("publish.snapshot.commit", [git, "commit", "--quiet", "-m", "work"],
                     cwd=work)
        head_before = _harness(recorder, [git, "rev-parse", "HEAD"], work)
        push = recorder.run("publish.push", [git, "push", "origin", "HEAD:refs/heads/work"],
                            cwd=work, expected=(1, 128), check=False)
        recorder.phase = "summary"
        head_after = _harness(recorder, [git, "rev-parse", "HEAD"], work)
        tracking = subprocess.run([git, "rev-parse", "--verify", "--quiet",
                                   "refs/remotes/origin/work"], cwd=work, env=recorder.env,
                                  capture_output=True, check=False)
        needs_push = tracking.returncode != 0 or tracking.stdout.decode().strip() != head_after
    finally:
        fixture.close()
    mutations = fixture.mutations_delivered
    if push.returncode == 0:
        outcome = "success"
    elif mutations:
        outcome = "unknown"
    else:
        outcome = "failed"
    extras.update({
        "outcome": outcome, "requests_observed": len(fixture.requests),
        "mutation_requests": mutations, "request_bytes": fixture.request_bytes,
        "head_preserved": head_after == head_before, "work_marked_unpushed": needs_push,
    })
    recorder.summary("summary.publication", {k: extras[k] for k in (
        "outcome", "requests_observed", "mutation_requests", "request_bytes", "head_preserved",
        "work_marked_unpushed")})
    return _oracle([
        (outcome == "unknown", f"the client's outcome is {outcome!r} (it must be 'unknown': "
                               "the request arrived and no answer came back)"),
        (mutations == 1, f"{mutations} mutation request(s) reached the remote (exactly one: "
                         "no blind replay)"),
        (head_after == head_before, "local HEAD unchanged" if head_after == head_before
         else "local HEAD moved"),
        (needs_push, "local work still marked as needing a push" if needs_push
         else "local work marked as pushed"),
    ])


# The remote transport each scenario uses, also for the rows of cells that did not run.
TRANSPORTS = {"task_loop": LOCAL_FILE, "agent_task_baseline": LOCAL_FILE,
              "interrupted_publication": LOOPBACK_FAULT}
Scenario = Callable[[SubjectSpec, ScenarioSpec, StepRecorder, Path, dict[str, Any]], Oracle]
SCENARIOS: dict[str, Scenario] = {
    "task_loop": task_loop,
    "agent_task_baseline": agent_task_baseline,
    "interrupted_publication": interrupted_publication,
}
