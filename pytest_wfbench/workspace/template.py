"""The template: one sanitized checkout per (repo, SHA) per sweep (SPEC §3, step 1).

A template holds the task's tree at its SHA with the hidden paths removed and
a fresh one-commit history, so no object in an agent's clone carries hidden
content or any commit after the task's SHA. Under xdist one worker builds it
while the others wait on a file lock.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_wfbench import __version__
from pytest_wfbench.git import GitError, git_text, run_git
from pytest_wfbench.redact import scrub_location, shown_location, url_credentials
from pytest_wfbench.sandbox import Sandbox
from pytest_wfbench.tasks import RepoSpec, Task

SNAPSHOT_MESSAGE = "wfbench snapshot of a plain directory"
# What a stored template's key includes besides its inputs: a change to how
# templates are built makes older ones unusable.
TEMPLATE_FORMAT = "2"
MAX_STORE_BYTES = 20 << 30
MAX_STORE_TEMPLATES = 500


class TemplateError(Exception):
    """The template could not be built; the cell is an infra error."""


@dataclass(frozen=True)
class Template:
    path: Path
    """A work tree whose ``.git`` holds the sanitized history only."""
    base_sha: str
    sanitized_sha: str
    hidden_store: Path
    """The hidden paths' content at the task's SHA, never mounted for the agent."""
    hidden_digest: str
    content_key: str = ""
    """What the template holds, digested: its inputs' key, its files and its
    hidden paths as built (a rebuild whose ``prepare`` made other files has
    another). What depends on the template is keyed by it."""

    @property
    def git_dir(self) -> Path:
        return self.path / ".git"


def _key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def tree_digest(root: Path) -> str:
    """A content digest of a file or folder: relative paths, modes and bytes."""
    digest = hashlib.sha256()
    paths = [root] if root.is_file() else sorted(p for p in root.rglob("*"))
    for path in paths:
        relative = path.relative_to(root).as_posix() if path != root else path.name
        if path.is_symlink():
            digest.update(f"L {relative} {os.readlink(path)}\0".encode())
        elif path.is_file():
            executable = "x" if os.access(path, os.X_OK) else "-"
            digest.update(f"F {relative} {executable}\0".encode())
            digest.update(path.read_bytes())
        elif path.is_dir():
            digest.update(f"D {relative}\0".encode())
    return digest.hexdigest()


def snapshot_directory(directory: Path, git_dir: Path) -> str:
    """Commit a plain directory with fixed author, date and message: the same
    content gives the same SHA on every machine."""
    run_git(["init", "--quiet", "--bare", "--template=", str(git_dir)])
    env = {"GIT_INDEX_FILE": str(git_dir / "snapshot-index")}
    work = ["--git-dir", str(git_dir), "--work-tree", str(directory)]
    run_git([*work, "add", "--all", "--force", "--", "."], env=env)
    tree = git_text([*work, "write-tree"], env=env)
    sha = git_text(["--git-dir", str(git_dir), "commit-tree", tree, "-m", SNAPSHOT_MESSAGE])
    run_git(["--git-dir", str(git_dir), "update-ref", "refs/heads/main", sha])
    (git_dir / "snapshot-index").unlink()
    return sha


class TemplateCache:
    """Builds templates into the sweep's work dir, once each, across processes."""

    def __init__(self, work_dir: Path, sandbox: Sandbox, store: Path | None = None,
                 sweep_id: str = "") -> None:
        """``store``: where templates outlive the sweep (the cache dir's
        ``templates``), or None to keep them in the work dir."""
        self.root = work_dir
        self.sandbox = sandbox
        self.sweep_id = sweep_id
        for sub in ("sources", "locks"):
            (work_dir / sub).mkdir(parents=True, exist_ok=True)
        self.store = store if store is not None else work_dir
        for sub in ("templates", "hidden", "locks"):
            (self.store / sub).mkdir(parents=True, exist_ok=True)
        self._resolved: dict[str, tuple[Path, str]] = {}
        """This process's :meth:`resolve` answers: a record, once written, is the
        sweep's answer (every task on one repository and ref asks the same)."""

    def _lock(self, name: str) -> FileLock:
        return FileLock(str(self.root / "locks" / f"{name}.lock"))

    def source(self, repo: RepoSpec) -> Path:
        """A git dir holding the repo's history: the repo itself, a snapshot of a
        plain directory, or a mirror of a URL."""
        if not repo.is_url:
            path = Path(repo.location)
            if (path / ".git").exists():
                return path / ".git" if (path / ".git").is_dir() else path
            if (path / "HEAD").is_file() and (path / "objects").is_dir():
                return path  # a bare repository
        name = _key("source", repo.location)
        target = self.root / "sources" / name
        with self._lock(f"source-{name}"):
            if not (target / "wfbench-complete").exists():
                shutil.rmtree(target, ignore_errors=True)
                if repo.is_url:
                    self._mirror(repo.location, target)
                else:
                    snapshot_directory(Path(repo.location), target)
                (target / "wfbench-complete").write_text("")
        return target

    @staticmethod
    def _mirror(location: str, target: Path) -> None:
        """A mirror of the URL whose config, and whose failure's message, hold no
        credentials of the URL (the mirror is never fetched again)."""
        try:
            run_git(["clone", "--quiet", "--mirror", location, str(target)])
            if url_credentials(location):
                run_git(["--git-dir", str(target), "remote", "set-url", "origin",
                         shown_location(location)])
        except GitError as error:
            raise GitError(scrub_location(str(error), location)) from None

    def resolve(self, task: Task) -> tuple[Path, str]:
        """The source and the task's ref as a full SHA, resolved once per sweep."""
        name = _key("ref", task.repo.location, task.ref)
        if name in self._resolved:
            return self._resolved[name]
        source = self.source(task.repo)
        record = self.root / "sources" / f"{name}.json"
        with self._lock(f"ref-{name}"):
            if record.exists():
                sha = str(json.loads(record.read_text())["sha"])
            else:
                try:
                    sha = git_text(["--git-dir", str(source), "rev-parse", "--verify",
                                    f"{task.ref}^{{commit}}"])
                except GitError as exc:
                    raise TemplateError(f"cannot resolve ref {task.ref!r} in "
                                        f"{shown_location(task.repo.location)}: {exc}") from exc
                record.write_text(json.dumps({"sha": sha}))
        self._resolved[name] = (source, sha)
        return source, sha

    def get(self, task: Task, timings: dict[str, float] | None = None) -> Template:
        """The task's template, built here if no process (of this sweep or, with a
        store, of an earlier one) built it yet; ``timings`` gets the milliseconds
        spent waiting for the lock and building (or checking a stored one)."""
        source, sha = self.resolve(task)
        # The hidden paths as one JSON list: no list of them and prepare command
        # can name another's template.
        name = _key("template", TEMPLATE_FORMAT, __version__, task.repo.location, sha,
                    json.dumps(list(task.oracle.hidden_paths)), task.prepare or "")
        final = self.store / "templates" / name
        hidden = self.store / "hidden" / name
        meta = self.store / "templates" / f"{name}.json"
        waiting = time.monotonic()
        with FileLock(str(self.store / "locks" / f"template-{name}.lock")):
            building = time.monotonic()
            data = self._checked(final, hidden, meta)
            if data is None:
                self._build(task, source, sha, final, hidden, meta)
                data = json.loads(meta.read_text())
            if data.get("checked_by") != self.sweep_id:
                data["checked_by"] = self.sweep_id
                meta.write_text(json.dumps(data))
            if timings is not None:
                timings["template_wait"] = round((building - waiting) * 1000, 1)
                timings["template_build"] = round((time.monotonic() - building) * 1000, 1)
        content = _key("content", name, str(data["tree_digest"]), str(data["sanitized_sha"]),
                       str(data["hidden_digest"]))
        return Template(path=final, base_sha=sha, sanitized_sha=data["sanitized_sha"],
                        hidden_store=hidden, hidden_digest=data["hidden_digest"],
                        content_key=content)

    def _checked(self, final: Path, hidden: Path, meta: Path) -> dict[str, Any] | None:
        """A stored template's record, checked once per sweep: its files and its
        hidden store as built, and its history as sanitized as when it was built.
        None when there is none, or it does not check (it is then rebuilt)."""
        if not meta.exists():
            return None
        try:
            data: dict[str, Any] = json.loads(meta.read_text())
            if data.get("checked_by") == self.sweep_id:
                return data
            if tree_digest(final) != data["tree_digest"] or \
                    tree_digest(hidden) != data["hidden_digest"]:
                raise TemplateError("its files changed since it was built")
            check_sanitized(final, set(data["hidden_blobs"]))
        except (OSError, ValueError, KeyError, GitError, TemplateError) as error:
            self._log(f"rebuilding {final.name}: the stored template does not check: {error}")
            meta.unlink(missing_ok=True)
            return None
        os.utime(meta)  # recently used (the eviction keeps these)
        return data

    def _log(self, line: str) -> None:
        with (self.store / "templates" / "builds.log").open("a", encoding="utf-8") as log:
            log.write(f"{line}\n")

    def _build(self, task: Task, source: Path, sha: str, final: Path, hidden: Path,
               meta: Path) -> None:
        building = final.with_name(final.name + ".building")
        for stale in (building, final, hidden):
            shutil.rmtree(stale, ignore_errors=True)
        building.mkdir()
        hidden.mkdir(mode=0o700)
        index = {"GIT_INDEX_FILE": str(building.parent / f"{building.name}.index")}
        run_git(["--git-dir", str(source), "read-tree", sha], env=index)
        run_git(["--git-dir", str(source), "--work-tree", str(building), "checkout-index",
                 "--all", "--force"], env=index)
        Path(index["GIT_INDEX_FILE"]).unlink()
        hidden_blobs = self._remove_hidden(task, source, sha, building, hidden)
        if task.prepare:
            result = self.sandbox.run(task.prepare, workspace=building, writable=True,
                                      network=True, timeout_s=task.timeout_s)
            if not result.ok:
                timed_out = ", timed out" if result.timed_out else ""
                raise TemplateError(f"prepare failed (exit {result.returncode}{timed_out}): "
                                    f"{result.tail()}")
            shutil.rmtree(building / ".git", ignore_errors=True)
            for path in task.oracle.hidden_paths:
                if (building / path).exists():
                    raise TemplateError(f"prepare re-created the hidden path {path!r}")
        sanitized = self._fresh_history(building, sha)
        check_sanitized(building, hidden_blobs)
        building.rename(final)
        meta.write_text(json.dumps({
            "sanitized_sha": sanitized, "hidden_digest": tree_digest(hidden),
            "tree_digest": tree_digest(final), "hidden_blobs": sorted(hidden_blobs),
            "bytes": _size(final) + _size(hidden), "checked_by": self.sweep_id}))
        self._log(f"built {final.name} ({shown_location(task.repo.location)} at {sha[:12]}) "
                  f"for sweep {self.sweep_id}")
        if self.store != self.root:
            evict_templates(self.store, keep=final.name)

    def _remove_hidden(self, task: Task, source: Path, sha: str, tree: Path,
                       hidden: Path) -> set[str]:
        blobs: set[str] = set()
        for path in task.oracle.hidden_paths:
            listing = git_text(["--git-dir", str(source), "ls-tree", "-r", sha, "--", path])
            if not listing:
                raise TemplateError(f"hidden path {path!r} does not exist at {sha[:12]}")
            blobs.update(line.split()[2] for line in listing.splitlines())
            target = hidden / path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(tree / path, target)
        return blobs

    @staticmethod
    def _fresh_history(tree: Path, sha: str) -> str:
        run_git(["init", "--quiet", "--template=", str(tree)])
        run_git(["add", "--all", "--", "."], cwd=tree)
        run_git(["commit", "--quiet", "--no-verify", "--allow-empty", "-m",
                 f"wfbench task base (sanitized from {sha[:12]})"], cwd=tree)
        shutil.rmtree(tree / ".git" / "logs", ignore_errors=True)
        (tree / ".git" / "COMMIT_EDITMSG").unlink(missing_ok=True)
        run_git(["gc", "--quiet", "--prune=now"], cwd=tree)
        return git_text(["rev-parse", "HEAD"], cwd=tree)


def _size(root: Path) -> int:
    return sum(p.lstat().st_size for p in root.rglob("*") if not p.is_dir())


def evict_templates(store: Path, keep: str, max_bytes: int = MAX_STORE_BYTES,
                    max_templates: int = MAX_STORE_TEMPLATES) -> None:
    """Remove the least recently used stored templates beyond the bounds, never
    one used within the last hour (a concurrent sweep may be cloning it)."""
    templates = store / "templates"
    records = []
    for meta in templates.glob("*.json"):
        try:
            size = int(json.loads(meta.read_text()).get("bytes", 0))
            records.append((meta.stat().st_mtime, size, meta.stem))
        except (OSError, ValueError):
            continue
    records.sort(reverse=True)
    total = count = 0
    for used, size, name in records:
        total, count = total + size, count + 1
        if name == keep or (total <= max_bytes and count <= max_templates) \
                or time.time() - used < 3600:
            continue
        with FileLock(str(store / "locks" / f"template-{name}.lock")):
            (templates / f"{name}.json").unlink(missing_ok=True)
            shutil.rmtree(templates / name, ignore_errors=True)
            shutil.rmtree(store / "hidden" / name, ignore_errors=True)


def check_sanitized(tree: Path, hidden_blobs: set[str]) -> None:
    """Prove the sanitizing worked: every object is reachable from the one
    commit, none is a hidden blob, and only the main branch exists."""
    objects = set(git_text(["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"],
                           cwd=tree).split())
    reachable = {line.split()[0] for line in
                 git_text(["rev-list", "--objects", "--all"], cwd=tree).splitlines()}
    if objects - reachable:
        raise TemplateError(f"{len(objects - reachable)} unreachable objects in the template")
    if objects & hidden_blobs:
        raise TemplateError("a hidden file's content is in the template's object store")
    refs = git_text(["for-each-ref", "--format=%(refname)"], cwd=tree).split()
    commits = git_text(["rev-list", "--all"], cwd=tree).split()
    if refs != ["refs/heads/main"] or len(commits) != 1:
        raise TemplateError(f"the template has refs {refs} and {len(commits)} commits")
    git_dir = tree / ".git"
    leftovers = [name for name in ("logs", "refs/stash", "FETCH_HEAD",
                                   "ORIG_HEAD") if (git_dir / name).exists()]
    if leftovers:
        raise TemplateError(f"the template's git dir still has {leftovers}")
