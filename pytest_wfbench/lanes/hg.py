"""The four scenarios, driven with Mercurial (a subject whose driver is ``hg``).

The same motions as :mod:`.git`, in Mercurial's own terms: a bookmark where
git has a branch, ``hg share`` where git has a worktree (a working directory on
the same store), a changeset's phase where git has a tracking ref (a draft
changeset is one the remote has not acknowledged). Every command runs with
``HGPLAIN=1`` and ``HGRCPATH`` naming an hgrc the harness writes, so no user or
system configuration is read; the repositories' own ``.hg/hgrc`` (paths, the
scenario's hooks) still is.
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path
from typing import Any

from pytest_wfbench.lanes.fault import FaultFixture
from pytest_wfbench.lanes.hgwire import MercurialHttp, capture
from pytest_wfbench.lanes.scenario import (
    CI_UNMEASURED,
    LOCAL_FILE,
    LOOPBACK_FAULT,
    REPLAY_VARIANTS,
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

# detailed-exit-code: Mercurial's own error classes as exit codes (10 input,
# 40 remote, 100 other, ...) instead of 255 for every abort, so a failed push
# exits with an ordinary failure code (1-127) as git's does. share: hg share.
HGRC = """\
[ui]
username = wfbench <wfbench@localhost>
interactive = False
detailed-exit-code = True
[extensions]
share =
"""
# hg push and hg outgoing exit 1 when there is nothing to push: not a failure.
NOTHING_TO_PUSH = (0, 1)
PAYLOAD = "work that must not be lost\n"


def environment(home: Path) -> dict[str, str]:
    """A clean environment for hg (it writes the harness's hgrc under ``home``)."""
    hgrc = home / "hgrc"
    hgrc.write_text(HGRC)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "HGPLAIN": "1",
        "HGRCPATH": str(hgrc),
        "HGENCODING": "utf-8",
    }


def seeded_remote(hg: str, recorder: StepRecorder, root: Path,
                  hooks: tuple[tuple[str, str], ...]) -> Path:
    """A remote with one public changeset under the bookmark ``main``, then the
    scenario's hooks (``[hooks]`` entries running each body with /bin/sh)."""
    remote, seed = root / "remote", root / "seed"
    with recorder.harness("setup.remote_create") as work:
        work.run([hg, "init", str(remote)], root)
    with recorder.harness("setup.remote_seed") as work:
        work.run([hg, "init", str(seed)], root)
        work.do("write the seed", lambda: (seed / "README.md").write_text("# seeded project\n"))
        work.run([hg, "add", "README.md"], seed)
        work.run([hg, "commit", "--quiet", "-m", "seed"], seed)
        work.run([hg, "bookmark", "main"], seed)
        work.run([hg, "push", "--quiet", "-B", "main", str(remote)], seed)
        work.do("remove the seed", lambda: shutil.rmtree(seed))
        if hooks:
            work.do("install the hooks", functools.partial(_install_hooks, remote, hooks))
    return remote


def _install_hooks(remote: Path, hooks: tuple[tuple[str, str], ...]) -> None:
    lines = ["[hooks]"]
    for name, body in hooks:
        script = remote / ".hg" / f"wfbench-hook-{name}.sh"
        script.write_text(f"#!/bin/sh\n{body}\n")
        lines.append(f"{name} = /bin/sh {script}")
    with (remote / ".hg" / "hgrc").open("a") as hgrc:
        hgrc.write("\n".join(lines) + "\n")


def _set_default_path(repo: Path, url: str) -> None:
    (repo / ".hg" / "hgrc").write_text(f"[paths]\ndefault = {url}\n")


def read_payloads(hg: str, recorder: StepRecorder, remote: Path,
                  payloads: list[tuple[str, str, str]]) -> list[tuple[bool, str]]:
    """The oracle: each (bookmark or changeset, path, payload) must be on the remote."""
    recorder.phase = "oracle"
    checks = []
    with recorder.harness("oracle.read") as work:
        for revision, path, payload in payloads:
            shown = work.run([hg, "cat", "-r", revision, path], remote, check=False)
            found = shown.stdout.decode("utf-8", "replace") if shown.returncode == 0 else None
            checks.append(payload_check(found, revision, path, payload))
    return checks


def _acquire(hg: str, recorder: StepRecorder, phase: str, source: Path, workdir: Path,
             bookmark: str) -> None:
    """A working directory on ``source``'s store, at ``main``, on a new bookmark."""
    recorder.run(f"{phase}.acquire", [hg, "share", "--quiet", "--bookmarks", "--noupdate",
                                      str(source), str(workdir)], cwd=source.parent)
    recorder.run(f"{phase}.acquire.update", [hg, "update", "--quiet", "main"], cwd=workdir)
    recorder.run(f"{phase}.acquire.branch", [hg, "bookmark", bookmark], cwd=workdir)


def task_loop(subject: SubjectSpec, scenario: ScenarioSpec, recorder: StepRecorder,
              root: Path, extras: dict[str, Any]) -> Oracle:
    """For a task and then a follow-up: a share at main on a new bookmark, edit,
    add, commit, push the bookmark, remove the share."""
    hg = subject.binary
    extras["transport"] = LOCAL_FILE
    remote = seeded_remote(hg, recorder, root, scenario.remote_hooks)
    base = root / "base"
    with recorder.harness("setup.workspace") as work:
        work.run([hg, "clone", "--quiet", "--noupdate", str(remote), str(base)], root)
    payloads: list[tuple[str, str, str]] = []
    for phase in ("task", "followup"):
        recorder.phase = phase
        bookmark, share = f"{phase}/1", root / f"wt-{phase}"
        name, payload = f"payload-{phase}.txt", f"{phase} payload for {scenario.id}\n"
        _acquire(hg, recorder, phase, base, share, bookmark)
        recorder.edit(f"{phase}.edit", share / name, payload)
        recorder.run(f"{phase}.snapshot.stage", [hg, "add", name], cwd=share)
        recorder.run(f"{phase}.snapshot.commit", [hg, "commit", "--quiet", "-m",
                                                  f"{phase}: add {name}"], cwd=share)
        recorder.run(f"{phase}.publish", [hg, "push", "--quiet", "-B", bookmark], cwd=share)
        recorder.run(f"{phase}.release", ["rm", "-r", str(share)], cwd=root, kind="terminal")
        payloads.append((bookmark, name, payload))
    recorder.phase = "summary"
    delta = recorder.elapsed_of("followup.acquire") - recorder.elapsed_of("task.acquire")
    extras["warm_acquire_delta_ms"] = round(delta, 3)
    recorder.summary("summary.warm_acquire_delta_ms", extras["warm_acquire_delta_ms"])
    return oracle(read_payloads(hg, recorder, remote, payloads))


def _agent_motion(hg: str, recorder: StepRecorder, phase: str, workdir: Path,
                  bookmark: str) -> tuple[str, str, str]:
    recorder.phase = phase
    name, payload = f"payload-{phase}.txt", f"{phase} work\n"
    recorder.run(f"{phase}.status", [hg, "summary"], cwd=workdir)
    recorder.edit(f"{phase}.edit", workdir / name, payload)
    recorder.run(f"{phase}.snapshot.stage", [hg, "add", name], cwd=workdir)
    recorder.run(f"{phase}.snapshot.commit", [hg, "commit", "--quiet", "-m",
                                              f"{phase}: add {name}"], cwd=workdir)
    recorder.run(f"{phase}.publish", [hg, "push", "--quiet", "-B", bookmark], cwd=workdir)
    recorder.unmeasured(f"{phase}.ci.observe", CI_UNMEASURED)
    recorder.run(f"{phase}.review.handoff", [hg, "log", "-r", ".", "--stat"], cwd=workdir)
    return bookmark, name, payload


def agent_task_baseline(subject: SubjectSpec, scenario: ScenarioSpec, recorder: StepRecorder,
                        root: Path, extras: dict[str, Any]) -> Oracle:
    """Cold: a fresh clone, a bookmark and the whole motion; warm: a share of
    the first clone's store, at main on a new bookmark, the same motion; then
    both are removed."""
    hg = subject.binary
    extras["transport"] = LOCAL_FILE
    extras.update(acquisition("hg_share"))
    remote = seeded_remote(hg, recorder, root, scenario.remote_hooks)
    cold, warm = root / "cold", root / "warm"
    recorder.phase = "cold"
    recorder.run("cold.acquire", [hg, "clone", "--quiet", str(remote), str(cold)], cwd=root)
    recorder.run("cold.branch", [hg, "bookmark", "agent/cold"], cwd=cold)
    payloads = [_agent_motion(hg, recorder, "cold", cold, "agent/cold")]
    recorder.phase = "warm"
    _acquire(hg, recorder, "warm", cold, warm, "agent/warm")
    payloads.append(_agent_motion(hg, recorder, "warm", warm, "agent/warm"))
    recorder.phase = "summary"
    usage = {"cold_bytes": disk_usage(cold), "warm_bytes": disk_usage(warm)}
    extras["disk_usage_bytes"] = usage
    recorder.summary("summary.workspace_disk_usage_bytes", usage)
    recorder.phase = "cleanup"
    with recorder.harness("cleanup.warm") as work:
        work.do("remove the share", lambda: shutil.rmtree(warm))
    with recorder.harness("cleanup.cold") as work:
        work.do("remove the cold clone", lambda: shutil.rmtree(cold))
    return oracle(read_payloads(hg, recorder, remote, payloads))


def _fault_protocol(hg: str, recorder: StepRecorder, remote: Path) -> MercurialHttp:
    with recorder.harness("setup.fault_fixture") as helper:
        state = capture(hg, remote, helper)
    return MercurialHttp(state)


def _fault_workspace(hg: str, recorder: StepRecorder, root: Path, remote: Path,
                     fixture: FaultFixture, name: str, operation: str) -> Path:
    work = root / name
    with recorder.harness(operation) as helper:
        helper.run([hg, "clone", "--quiet", str(remote), str(work)], root)
        helper.do("point the clone at the fault fixture",
                  functools.partial(_set_default_path, work, fixture.url))
    return work


def _publish(hg: str, recorder: StepRecorder, work: Path, fixture: FaultFixture,
             prefix: str) -> tuple[Publication, str]:
    """Commit new work and push it to the fault fixture, then look at what the
    client kept: its working parent, its phase, its working directory."""
    recorder.phase = prefix
    recorder.edit(f"{prefix}.edit", work / "payload.txt", PAYLOAD)
    recorder.run(f"{prefix}.snapshot.stage", [hg, "add", "payload.txt"], cwd=work)
    recorder.run(f"{prefix}.snapshot.commit", [hg, "commit", "--quiet", "-m", "work"], cwd=work)
    with recorder.harness(f"{prefix}.inspect_before") as helper:
        head_before = helper.text([hg, "log", "-r", ".", "-T", "{node}"], work)
    push = recorder.run(f"{prefix}.push", [hg, "push", "-r", "."], cwd=work,
                        expected=FAILURE_CODES, check=False)
    with recorder.harness(f"{prefix}.inspect_after") as helper:
        head_after = helper.text([hg, "log", "-r", ".", "-T", "{node}"], work)
        phase = helper.text([hg, "log", "-r", ".", "-T", "{phase}"], work)
        dirty = helper.text([hg, "status"], work)
    publication = Publication(
        returncode=push.returncode if push.returncode is not None else 0, fixture=fixture,
        head_before=head_before, head_after=head_after, needs_push=phase == "draft",
        working_tree_dirty=bool(dirty))
    return publication, head_before


def interrupted_publication(subject: SubjectSpec, scenario: ScenarioSpec,
                            recorder: StepRecorder, root: Path, extras: dict[str, Any]) -> Oracle:
    """A push whose bundle arrives in full and is never answered: the client
    must not claim success, must not replay, and must keep the work (still
    draft); once the fault is lifted, a reconcile (outgoing, push) must land it."""
    hg = subject.binary
    extras["transport"] = LOOPBACK_FAULT
    # The real remote: never reachable through the fixture, which forwards nothing.
    remote = seeded_remote(hg, recorder, root, ())
    fixture = FaultFixture(_fault_protocol(hg, recorder, remote),
                           replays=scenario.fault_replays)
    try:
        work = _fault_workspace(hg, recorder, root, remote, fixture, "work",
                                "setup.workspace")
        publication, node = _publish(hg, recorder, work, fixture, "publish")
    finally:
        fixture.close()
    extras.update(publication.evidence())
    recorder.summary("summary.publication", publication.evidence())
    recorder.phase = "reconcile"
    with recorder.harness("reconcile.fault_lifted") as helper:
        helper.do("point the clone at the remote",
                  functools.partial(_set_default_path, work, str(remote)))
    recorder.run("reconcile.inspect", [hg, "outgoing", "--quiet"], cwd=work,
                 expected=NOTHING_TO_PUSH)
    recorder.run("reconcile.publish", [hg, "push", "--quiet", "-r", "."], cwd=work,
                 expected=NOTHING_TO_PUSH)
    landed = read_payloads(hg, recorder, remote, [(node, "payload.txt", PAYLOAD)])[0]
    extras["reconciled"] = landed[0]
    return oracle(interrupted_checks(publication, (landed[0], "reconcile: " + landed[1])))


def publication_replay(subject: SubjectSpec, scenario: ScenarioSpec, recorder: StepRecorder,
                       root: Path, extras: dict[str, Any]) -> Oracle:
    """The same unanswered push twice: on connections closed after every answer,
    and on kept-alive ones; the row counts the mutation requests of each."""
    hg = subject.binary
    extras["transport"] = LOOPBACK_FAULT
    remote = seeded_remote(hg, recorder, root, ())
    protocol = _fault_protocol(hg, recorder, remote)
    publications: dict[str, Publication] = {}
    for name, keepalive in REPLAY_VARIANTS:
        recorder.phase = name
        fixture = FaultFixture(protocol, replays=scenario.fault_replays, keepalive=keepalive)
        try:
            work = _fault_workspace(hg, recorder, root, remote, fixture, f"work-{name}",
                                    f"{name}.workspace")
            publications[name], _ = _publish(hg, recorder, work, fixture, name)
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
