"""Evidence (SPEC §3, step 8): churn against the sanitized base and the final patch.

The diff is taken of the tree the harness captured from the workspace
(:func:`~pytest_wfbench.workspace.capture.capture_tree`), never of the workspace
itself, with the template's trusted git dir and a private index: the
workspace's own ``.git``, ``.gitmodules``, attributes and ignore files change
nothing of what git does or reads. Nested repositories were captured as plain
folders, so their files show as files. What the patch cannot hold (files too
large to be worth a diff, caches, special files, nested ``.git`` entries) is
summarized in notes at the head of the patch artifact; ``git apply`` skips them.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import os
import posixpath
import secrets
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pytest_wfbench.git import run_git
from pytest_wfbench.redact import neutralize
from pytest_wfbench.sandbox.overlay import is_opaque, is_whiteout
from pytest_wfbench.workspace.capture import Capture, TreeBounds, capture_tree
from pytest_wfbench.workspace.clone import Workspace
from pytest_wfbench.workspace.fs import remove_tree
from pytest_wfbench.workspace.template import Template

# The tree's own .gitattributes must not change what the evidence sees
# (filters, encodings, "binary" diffs): the private git dir's info/attributes
# outranks every attributes file in the work tree.
NEUTRAL_ATTRIBUTES = "* -text -filter -ident -working-tree-encoding !diff !eol !merge\n"
MAX_PATCH_BYTES = 16 << 20
MAX_NOTES = 50


@dataclass(frozen=True)
class Churn:
    files: int
    insertions: int
    deletions: int
    patch: bytes
    """The artifact: notes, then the patch (cut at MAX_PATCH_BYTES)."""
    notes: tuple[str, ...] = ()


@dataclass
class _Tree:
    """What git is told to add, and what the notes must say about the rest."""

    pathspecs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def shown(path: str) -> str:
    """A path as one line of a note, with no control character (an arm chooses
    its names; the notes head a patch people read)."""
    return neutralize(path.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t"))


def _plan(capture: Capture, exclude: Sequence[str]) -> _Tree:
    plan = _Tree(pathspecs=["."])
    plan.pathspecs += [f":(exclude,glob){path}/**" for path in exclude]
    if capture.caches_left_out:
        plan.notes.append(f"{capture.caches_left_out} cache folders and bytecode files not "
                          "captured (judges never load them; the oracle did not see them)")
    plan.pathspecs += [f":(exclude,literal){f.path}" for f in capture.large_files]
    plan.notes += [f"nested repository, its .git not diffed (its files are): {shown(path)}"
                   for path in capture.nested_git]
    plan.notes += [f"special file not copied: {shown(path)}" for path in capture.special_files]
    plan.notes += [f"not copied, a name git cannot hold (the oracle did not see it): "
                   f"{shown(path)}" for path in capture.unshowable]
    for path, target in capture.links:
        resolved = posixpath.normpath(posixpath.join("/workspace", posixpath.dirname(path),
                                                     target))
        if resolved != "/workspace" and not resolved.startswith("/workspace/"):
            plan.notes.append(f"link out of the workspace: {shown(path)} -> {shown(resolved)}")
    return plan


@functools.lru_cache(maxsize=64)
def _base_paths(git_dir: Path, sha: str) -> tuple[str, ...]:
    """Every path of the sanitized base, sorted (trusted: once per template)."""
    listing = run_git(["--git-dir", str(git_dir), "ls-tree", "-r", "-z", "--name-only",
                       "--full-tree", sha]).stdout.decode("utf-8", "surrogateescape")
    return tuple(sorted(path for path in listing.split("\0") if path))


def _below(paths: tuple[str, ...], directory: str) -> list[str]:
    start = bisect.bisect_left(paths, directory + "/")
    end = bisect.bisect_left(paths, directory + "0")  # "0" follows "/" in ASCII
    return list(paths[start:end])


def _layer_changes(template: Template, layer: Path, capture: Capture,
                   exclude: Sequence[str]) -> tuple[list[str], list[str]]:
    """What a captured layer changes in the base, as git paths: those to remove
    from the base's index and those to add from the layer. The layer is the
    harness's own (nothing in it is followed)."""
    base = _base_paths(template.git_dir, template.sanitized_sha)
    known = frozenset(base)
    skipped = {f.path for f in capture.large_files}
    removed: set[str] = set()
    added: list[str] = []

    def replaced(path: str) -> None:
        if path in known:
            removed.add(path)
        removed.update(_below(base, path))

    for directory, dirs, files in os.walk(layer):
        relative = Path(directory).relative_to(layer).as_posix()
        prefix = "" if relative == "." else relative + "/"
        if prefix and any(prefix.startswith(f"{path}/") for path in exclude):
            dirs[:] = []
            continue
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            if prefix and is_opaque(fd):
                removed.update(_below(base, relative))
        finally:
            os.close(fd)
        if prefix and relative in known:
            removed.add(relative)  # a file of the base replaced by a directory
        for name in (*files, *(d for d in dirs if os.path.islink(os.path.join(directory, d)))):
            path = prefix + name
            if path in skipped:
                # Summarized in the notes, not diffed: the base's entry there stays
                # (as in a copied tree's index); what was below it is gone.
                removed.update(_below(base, path))
                continue
            replaced(path)
            if not is_whiteout(os.lstat(os.path.join(directory, name))):
                added.append(path)
    return sorted(removed - set(added)), sorted(added)


def _below_large_files(template: Template, capture: Capture) -> list[str]:
    """The base's entries below a path that is now a large file (a folder the
    arm replaced by one): gone from the tree, so gone from the index, though
    the large file itself is left out of it."""
    base = _base_paths(template.git_dir, template.sanitized_sha)
    return sorted({path for large in capture.large_files for path in _below(base, large.path)})


def _nul_list(paths: Sequence[str]) -> bytes:
    return b"".join(path.encode("utf-8", "surrogateescape") + b"\0" for path in paths)


@contextmanager
def _staged(template: Template, tree: Path, scratch: Path, pathspecs: Sequence[str],
            capture: Capture | None = None,
            exclude: Sequence[str] = ()) -> Iterator[dict[str, str]]:
    """A private git dir (borrowing the template's objects) whose index holds
    the captured tree (a layered capture: the base, changed by the layer's
    entries only); yields git's env."""
    git_dir = scratch / "evidence.git"
    shutil.rmtree(git_dir, ignore_errors=True)
    run_git(["init", "--quiet", "--bare", "--template=", str(git_dir)])
    (git_dir / "objects" / "info").mkdir(parents=True, exist_ok=True)
    (git_dir / "objects" / "info" / "alternates").write_text(
        str(template.git_dir / "objects") + "\n")
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "attributes").write_text(NEUTRAL_ATTRIBUTES)
    spec_file = scratch / "evidence.pathspecs"
    spec_file.write_bytes(b"".join(spec.encode() + b"\0" for spec in pathspecs))
    env = {"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(tree),
           "GIT_INDEX_FILE": str(git_dir / "index")}
    try:
        run_git(["read-tree", template.sanitized_sha], env=env)
        if capture is not None and capture.layered:
            removed, added = _layer_changes(template, tree, capture, exclude)
            if removed:
                run_git(["update-index", "--force-remove", "-z", "--stdin"], env=env,
                        cwd=tree, stdin=_nul_list(removed))
            if added:
                run_git(["update-index", "--add", "--remove", "-z", "--stdin"], env=env,
                        cwd=tree, stdin=_nul_list(added))
        else:
            run_git(["add", "--all", "--force", f"--pathspec-from-file={spec_file}",
                     "--pathspec-file-nul"], env=env, cwd=tree)
            # A large file's exclusion also spares what its path held below it.
            below = _below_large_files(template, capture) if capture is not None else []
            if below:
                run_git(["update-index", "--force-remove", "-z", "--stdin"], env=env,
                        cwd=tree, stdin=_nul_list(below))
        yield env
    finally:
        shutil.rmtree(git_dir, ignore_errors=True)
        spec_file.unlink(missing_ok=True)


def _large_changes(template: Template, capture: Capture, env: dict[str, str]) -> list[str]:
    """Large files that differ from the base (compared by git blob id), as notes."""
    if not capture.large_files:
        return []
    listing = run_git(["ls-tree", "-r", "-z", template.sanitized_sha, "--",
                       *(f.path for f in capture.large_files)], env=env).stdout.decode(
        "utf-8", "surrogateescape")
    base = {}
    for record in listing.split("\0"):
        if "\t" in record:
            meta, path = record.split("\t", 1)
            base[path] = meta.split()[2]
    return [f"large file {'added' if f.path not in base else 'changed'}, summarized: "
            f"{shown(f.path)} ({f.size:,} bytes, sha256 {f.sha256})"
            for f in capture.large_files if base.get(f.path) != f.git_blob]


def diff_against_base(template: Template, tree: Path, capture: Capture, scratch: Path,
                      exclude: Sequence[str] = ()) -> Churn:
    plan = _plan(capture, exclude)
    base = template.sanitized_sha
    output = scratch / "evidence.patch"
    with _staged(template, tree, scratch, plan.pathspecs, capture, exclude) as env:
        numstat = run_git(["diff", "--cached", "--numstat", "--no-renames", "-z", base],
                          env=env).stdout.decode("utf-8", "surrogateescape")
        run_git(["diff", "--cached", "--binary", "--no-renames", base], env=env, stdout=output)
        large = _large_changes(template, capture, env)
    files = insertions = deletions = 0
    for record in numstat.split("\0"):
        if record.count("\t") < 2:
            continue
        added, removed, _ = record.split("\t", 2)
        files += 1
        insertions += int(added) if added != "-" else 0
        deletions += int(removed) if removed != "-" else 0
    files += len(large)
    try:
        patch, size, digest, truncated = _read_capped(output, MAX_PATCH_BYTES)
    finally:
        output.unlink(missing_ok=True)
    notes = [*plan.notes, *large]
    if truncated:
        notes.append(f"patch cut at {MAX_PATCH_BYTES:,} of {size:,} bytes (sha256 of the "
                     f"whole: {digest})")
    return Churn(files=files, insertions=insertions, deletions=deletions,
                 patch=_with_notes(notes, patch), notes=tuple(notes))


def _with_notes(notes: list[str], patch: bytes) -> bytes:
    if not notes:
        return patch
    shown = notes[:MAX_NOTES]
    if len(notes) > MAX_NOTES:
        shown.append(f"... and {len(notes) - MAX_NOTES} more")
    head = "".join(f"# wfbench: {note}\n" for note in shown)
    return head.encode("utf-8", "surrogateescape") + b"\n" + patch


def _read_capped(path: Path, cap: int) -> tuple[bytes, int, str, bool]:
    digest = hashlib.sha256()
    kept = bytearray()
    size = 0
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            size += len(chunk)
            digest.update(chunk)
            if len(kept) < cap:
                kept += chunk[: cap - len(kept)]
    return bytes(kept), size, digest.hexdigest(), size > cap


def tree_changes(template: Template, tree: Path, capture: Capture, scratch: Path,
                 exclude: Sequence[str] = ()) -> dict[str, str]:
    """Every path that differs from the base, with its status and new blob id:
    comparing two of these tells what one phase changed."""
    plan = _plan(capture, exclude)
    with _staged(template, tree, scratch, plan.pathspecs, capture, exclude) as env:
        raw = run_git(["diff", "--cached", "--raw", "--no-abbrev", "--no-renames", "-z",
                       template.sanitized_sha], env=env).stdout.decode("utf-8", "replace")
    fields = raw.split("\0")
    changes: dict[str, str] = {}
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        if meta.startswith(":"):
            _, _, _, new_blob, status = meta[1:].split(" ")
            changes[path] = f"{status} {new_blob}"
    for large in capture.large_files:
        changes[large.path] = f"L {large.git_blob}"
    return changes


def workspace_changes(template: Template, workspace: Workspace, scratch: Path,
                      bounds: TreeBounds, exclude: Sequence[str] = ()) -> dict[str, str]:
    """:func:`tree_changes` of the workspace as it is now (between two sessions):
    captured first, like the final tree, so nothing in it is followed or opened."""
    tree = scratch / f"phase-{secrets.token_hex(6)}"
    try:
        capture = capture_tree(workspace.files, tree, bounds, layered=workspace.layered)
        return tree_changes(template, tree, capture, scratch, exclude)
    finally:
        remove_tree(tree)
