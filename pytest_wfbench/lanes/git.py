"""The four scenarios, driven with git (a subject whose driver is ``git``).

Setup (the remote, its seed, clones the motion starts from), clean-up and the
oracle are harness work, timed apart from the motion; the motion itself is
measured step by step.
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path
from typing import Any

from pytest_wfbench.lanes.fault import FaultFixture, GitSmartHttp, advertisement
from pytest_wfbench.lanes.scenario import (
    CI_UNMEASURED,
    LOCAL_FILE,
    LOOPBACK_FAULT,
    REPLAY_VARIANTS,
    TRANSPORTS,
    Oracle,
    Publication,
    Scenario,
    acquisition,
    disk_usage,
    interrupted_checks,
    oracle,
    payload_check,
    replay_checks,
    replay_evidence,
)
from pytest_wfbench.lanes.steps import FAILURE_CODES, StepRecorder
from pytest_wfbench.tasks import ScenarioSpec, SubjectSpec

__all__ = ["SCENARIOS", "TRANSPORTS", "environment"]


def environment(home: Path) -> dict[str, str]:
    """A clean environment for git: no user or system config, a fixed identity."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": "wfbench",
        "GIT_AUTHOR_EMAIL": "wfbench@localhost",
        "GIT_COMMITTER_NAME": "wfbench",
        "GIT_COMMITTER_EMAIL": "wfbench@localhost",
    }


def seeded_remote(git: str, recorder: StepRecorder, root: Path,
                  hooks: tuple[tuple[str, str], ...]) -> Path:
    """A bare remote with one commit on main, then the scenario's hooks."""
    remote, seed = root / "remote.git", root / "seed"
    with recorder.harness("setup.remote_create") as work:
        work.run([git, "init", "--quiet", "--bare", "-b", "main", str(remote)], root)
    with recorder.harness("setup.remote_seed") as work:
        work.run([git, "init", "--quiet", "-b", "main", str(seed)], root)
        work.do("write the seed", lambda: (seed / "README.md").write_text("# seeded project\n"))
        work.run([git, "add", "README.md"], seed)
        work.run([git, "commit", "--quiet", "-m", "seed"], seed)
        work.run([git, "push", "--quiet", str(remote), "main"], seed)
        work.do("remove the seed", lambda: shutil.rmtree(seed))
        for name, body in hooks:
            work.do(f"install the {name} hook",
                    functools.partial(_install_hook, remote / "hooks" / name, body))
    return remote


def _install_hook(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def read_payloads(git: str, recorder: StepRecorder, remote: Path,
                  payloads: list[tuple[str, str, str]]) -> list[tuple[bool, str]]:
    """The oracle: each (branch, path, payload) must be on the remote."""
    recorder.phase = "oracle"
    checks = []
    with recorder.harness("oracle.read") as work:
        for branch, path, payload in payloads:
            shown = work.run([git, "--git-dir", str(remote), "show", f"{branch}:{path}"],
                             remote, check=False)
            found = shown.stdout.decode("utf-8", "replace") if shown.returncode == 0 else None
            checks.append(payload_check(found, branch, path, payload))
    return checks


def task_loop(subject: SubjectSpec, scenario: ScenarioSpec, recorder: StepRecorder,
              root: Path, extras: dict[str, Any]) -> Oracle:
    """For a task and then a follow-up: a worktree on a new branch, edit, stage,
    commit, push, remove the worktree."""
    git = subject.binary
    extras["transport"] = LOCAL_FILE
    remote = seeded_remote(git, recorder, root, scenario.remote_hooks)
    base = root / "base"
    with recorder.harness("setup.workspace") as work:
        work.run([git, "clone", "--quiet", str(remote), str(base)], root)
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
    delta = recorder.elapsed_of("followup.acquire") - recorder.elapsed_of("task.acquire")
    extras["warm_acquire_delta_ms"] = round(delta, 3)
    recorder.summary("summary.warm_acquire_delta_ms", extras["warm_acquire_delta_ms"])
    return oracle(read_payloads(git, recorder, remote, payloads))


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


def agent_task_baseline(subject: SubjectSpec, scenario: ScenarioSpec, recorder: StepRecorder,
                        root: Path, extras: dict[str, Any]) -> Oracle:
    """Cold: a full clone and the whole motion; warm: a worktree sharing the
    first clone's objects, the same motion; then both are removed."""
    git = subject.binary
    extras["transport"] = LOCAL_FILE
    extras.update(acquisition("git_worktree"))
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
    usage = {"cold_bytes": disk_usage(cold), "warm_bytes": disk_usage(warm)}
    extras["disk_usage_bytes"] = usage
    recorder.summary("summary.workspace_disk_usage_bytes", usage)
    recorder.phase = "cleanup"
    with recorder.harness("cleanup.warm") as work:
        work.run([git, "worktree", "remove", "--force", str(warm)], cold)
    with recorder.harness("cleanup.cold") as work:
        work.do("remove the cold clone", lambda: shutil.rmtree(cold))
    return oracle(read_payloads(git, recorder, remote, payloads))


def _publish(git: str, recorder: StepRecorder, work: Path, fixture: FaultFixture,
             prefix: str) -> Publication:
    """Commit new work and push it to the fault fixture, then look at what the
    client kept: its head, its tracking ref, its working tree."""
    recorder.phase = prefix
    recorder.edit(f"{prefix}.edit", work / "payload.txt", "work that must not be lost\n")
    recorder.run(f"{prefix}.snapshot.stage", [git, "add", "payload.txt"], cwd=work)
    recorder.run(f"{prefix}.snapshot.commit", [git, "commit", "--quiet", "-m", "work"],
                 cwd=work)
    with recorder.harness(f"{prefix}.inspect_before") as helper:
        head_before = helper.text([git, "rev-parse", "HEAD"], work)
    push = recorder.run(f"{prefix}.push", [git, "push", "origin", "HEAD:refs/heads/work"],
                        cwd=work, expected=FAILURE_CODES, check=False)
    with recorder.harness(f"{prefix}.inspect_after") as helper:
        head_after = helper.text([git, "rev-parse", "HEAD"], work)
        tracking = helper.run([git, "rev-parse", "--verify", "--quiet",
                               "refs/remotes/origin/work"], work, check=False)
        dirty = helper.text([git, "status", "--porcelain"], work)
    needs_push = (tracking.returncode != 0
                  or tracking.stdout.decode().strip() != head_after)
    return Publication(returncode=push.returncode or 0, fixture=fixture,
                       head_before=head_before, head_after=head_after,
                       needs_push=needs_push, working_tree_dirty=bool(dirty))


def _fault_workspace(git: str, recorder: StepRecorder, root: Path, remote: Path,
                     fixture: FaultFixture, name: str, operation: str) -> Path:
    work = root / name
    with recorder.harness(operation) as helper:
        helper.run([git, "clone", "--quiet", str(remote), str(work)], root)
        helper.run([git, "remote", "set-url", "origin", fixture.url], work)
    return work


def _fault_protocol(git: str, recorder: StepRecorder, root: Path, remote: Path) -> GitSmartHttp:
    with recorder.harness("setup.fault_fixture") as helper:
        refs = helper.run([git, "receive-pack", "--stateless-rpc", "--advertise-refs",
                           str(remote)], root).stdout
    return GitSmartHttp(advertisement(refs))


def interrupted_publication(subject: SubjectSpec, scenario: ScenarioSpec,
                            recorder: StepRecorder, root: Path, extras: dict[str, Any]) -> Oracle:
    """A push whose request arrives in full and is never answered: the client
    must not claim success, must not replay, and must keep the work; once the
    fault is lifted, a reconcile (look, then push again) must land it."""
    git = subject.binary
    extras["transport"] = LOOPBACK_FAULT
    # The real remote: never reachable through the fixture, which forwards nothing.
    remote = seeded_remote(git, recorder, root, ())
    fixture = FaultFixture(_fault_protocol(git, recorder, root, remote),
                           replays=scenario.fault_replays)
    try:
        work = _fault_workspace(git, recorder, root, remote, fixture, "work",
                                "setup.workspace")
        publication = _publish(git, recorder, work, fixture, "publish")
    finally:
        fixture.close()
    extras.update(publication.evidence())
    recorder.summary("summary.publication", publication.evidence())
    recorder.phase = "reconcile"
    with recorder.harness("reconcile.fault_lifted") as helper:
        helper.run([git, "remote", "set-url", "origin", str(remote)], work)
    recorder.run("reconcile.inspect", [git, "ls-remote", "origin", "refs/heads/work"], cwd=work)
    recorder.run("reconcile.publish", [git, "push", "--quiet", "origin", "HEAD:refs/heads/work"],
                 cwd=work)
    landed = read_payloads(git, recorder, remote, [("work", "payload.txt",
                                                    "work that must not be lost\n")])[0]
    reconciled = (landed[0], "reconcile: " + landed[1])
    extras["reconciled"] = landed[0]
    return oracle(interrupted_checks(publication, reconciled))


def publication_replay(subject: SubjectSpec, scenario: ScenarioSpec, recorder: StepRecorder,
                       root: Path, extras: dict[str, Any]) -> Oracle:
    """The same unanswered push twice: on connections closed after every answer,
    and on kept-alive ones; the row counts the mutation requests of each."""
    git = subject.binary
    extras["transport"] = LOOPBACK_FAULT
    remote = seeded_remote(git, recorder, root, ())
    protocol = _fault_protocol(git, recorder, root, remote)
    publications: dict[str, Publication] = {}
    for name, keepalive in REPLAY_VARIANTS:
        recorder.phase = name
        fixture = FaultFixture(protocol, replays=scenario.fault_replays, keepalive=keepalive)
        try:
            work = _fault_workspace(git, recorder, root, remote, fixture, f"work-{name}",
                                    f"{name}.workspace")
            publications[name] = _publish(git, recorder, work, fixture, name)
        finally:
            fixture.close()
    extras.update(replay_evidence(publications))
    recorder.summary("summary.blind_replay_requests", extras["blind_replay_requests"])
    return oracle(replay_checks(publications))


SCENARIOS: dict[str, Scenario] = {
    "task_loop": task_loop,
    "agent_task_baseline": agent_task_baseline,
    "interrupted_publication": interrupted_publication,
    "publication_replay": publication_replay,
}
