"""Templates are sanitized, and the sanitizing is checked on the real object store."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_wfbench.sandbox import SandboxPolicy, make_sandbox
from pytest_wfbench.tasks import RepoSpec, load_task_file
from pytest_wfbench.workspace.template import (
    TemplateCache,
    TemplateError,
    check_sanitized,
    snapshot_directory,
)
from tests.conftest import HIDDEN_TEST, task_yaml, write_suite


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo),
                           *args], check=True, capture_output=True, text=True).stdout.strip()


def test_clone_object_store_holds_no_hidden_blob_and_no_later_commit(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite")
    repo = suite.root / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    hidden_blob = git(repo, "rev-parse", "HEAD:tests/hidden/test_hidden.py")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "commit", "-qam", "later fix")
    later = git(repo, "rev-parse", "HEAD")
    git(repo, "tag", "-a", "v1", "-m", "annotated")
    (repo / "wip.txt").write_text("wip\n")
    git(repo, "add", "wip.txt")
    git(repo, "stash", "-q")
    git(repo, "remote", "add", "origin", "https://example.invalid/r.git")
    text = suite.task_file.read_text().replace('"fix-add"', f'"fix-add", "ref": "{base[:10]}"')
    suite.task_file.write_text(text)
    task = load_task_file(suite.task_file).tasks[0]

    cache = TemplateCache(tmp_path / "work", make_sandbox(SandboxPolicy(), tmp_path / "sb",
                                                          unsafe_host=False))
    template = cache.get(task)
    assert template.base_sha == base
    clone = tmp_path / "clone"
    subprocess.run(["cp", "-a", str(template.path), str(clone)], check=True)

    objects = set(git(clone, "cat-file", "--batch-all-objects",
                      "--batch-check=%(objectname)").split())
    assert hidden_blob not in objects
    assert later not in objects and base not in objects
    commits = git(clone, "rev-list", "--all").split()
    assert len(commits) == 1 and commits[0] == template.sanitized_sha
    assert git(clone, "for-each-ref", "--format=%(refname)") == "refs/heads/main"
    assert git(clone, "tag", "-l") == "" and git(clone, "remote") == ""
    assert git(clone, "stash", "list") == ""
    assert not (clone / ".git" / "logs").exists()
    assert not (clone / "tests" / "hidden").exists()
    assert (template.hidden_store / "tests" / "hidden" / "test_hidden.py").exists()
    # the same task again is served from the cache, with the same identity
    assert cache.get(task) == template


def test_plain_directory_snapshot_is_deterministic(tmp_path: Path) -> None:
    source = tmp_path / "project"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "mod.py").write_text("x = 1\n")
    (source / "run.sh").write_text("#!/bin/sh\n")
    (source / "run.sh").chmod(0o755)
    first = snapshot_directory(source, tmp_path / "a.git")
    second = snapshot_directory(source, tmp_path / "b.git")
    assert first == second
    # fixed author, date and message: the commit's bytes are the same anywhere
    body = git(tmp_path / "a.git", "cat-file", "commit", first)
    assert "author wfbench <wfbench@localhost> 946684800 +0000" in body
    (source / "pkg" / "mod.py").write_text("x = 2\n")
    assert snapshot_directory(source, tmp_path / "c.git") != first


def test_check_sanitized_catches_a_leftover_object(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "f").write_text("visible\n")
    git(repo, "add", "f")
    git(repo, "commit", "-qm", "one")
    stray = subprocess.run(["git", "-C", str(repo), "hash-object", "-w", "--stdin"],
                           input="hidden content\n", capture_output=True, text=True,
                           check=True).stdout.strip()
    with pytest.raises(TemplateError, match="unreachable objects"):
        check_sanitized(repo, {stray})


def test_missing_hidden_path_is_a_template_error(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite", tasks=[task_yaml(oracle={
        "command": "true", "hidden_paths": ["no/such/dir"]})])
    task = load_task_file(suite.task_file).tasks[0]
    cache = TemplateCache(tmp_path / "work", make_sandbox(SandboxPolicy(), tmp_path / "sb",
                                                          unsafe_host=False))
    with pytest.raises(TemplateError, match="hidden path 'no/such/dir' does not exist"):
        cache.get(task)


def test_a_ref_is_resolved_once_per_process_for_every_task_on_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = write_suite(tmp_path / "suite", tasks=[task_yaml(f"t{i}") for i in range(5)])
    tasks = load_task_file(suite.task_file).tasks
    cache = TemplateCache(tmp_path / "work", make_sandbox(SandboxPolicy(), tmp_path / "sb",
                                                          unsafe_host=False))
    real = cache.source
    asked: list[RepoSpec] = []

    def counting(repo: RepoSpec) -> Path:
        asked.append(repo)
        return real(repo)

    monkeypatch.setattr(cache, "source", counting)
    answers = {cache.resolve(task) for task in tasks * 2}
    assert len(answers) == 1 and len(asked) == 1  # no lock, no file, no git after the first
    # Another process of the sweep reads the record the first one wrote.
    other = TemplateCache(tmp_path / "work", cache.sandbox)
    assert other.resolve(tasks[0]) in answers


def sanitized_repo(path: Path, files: dict[str, str] | None = None, *,
                   packed: bool = False) -> Path:
    """A repository shaped like a built template: one commit on main, nothing
    else (no reflogs, no COMMIT_EDITMSG), its objects loose or packed."""
    subprocess.run(["git", "init", "-q", "-b", "main", "--template=", str(path)], check=True)
    for name, content in (files or {"calc.py": "def add(a, b):\n    return a - b\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(content)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "wfbench task base")
    if packed:
        git(path, "gc", "-q", "--prune=now")
    shutil.rmtree(path / ".git" / "logs")
    (path / ".git" / "COMMIT_EDITMSG").unlink()
    return path


def blob_id(content: str) -> str:
    return subprocess.run(["git", "hash-object", "--stdin"], input=content, capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_check_sanitized_passes_a_clean_template(tmp_path: Path, packed: bool) -> None:
    repo = sanitized_repo(tmp_path / "r", packed=packed)
    check_sanitized(repo, set())
    check_sanitized(repo, {blob_id(HIDDEN_TEST)})  # hidden content that is not in the store


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_check_sanitized_catches_a_hidden_blob_in_the_store(tmp_path: Path, packed: bool) -> None:
    # The hidden file's bytes at a visible path: reachable, one commit, only main,
    # so only the hidden-blob check can see it.
    repo = sanitized_repo(tmp_path / "r", {"calc.py": "x = 1\n", "tests/copied.py": HIDDEN_TEST},
                          packed=packed)
    check_sanitized(repo, set())
    with pytest.raises(TemplateError,
                       match="a hidden file's content is in the template's object store"):
        check_sanitized(repo, {blob_id("unrelated\n"), blob_id(HIDDEN_TEST)})


@pytest.mark.parametrize("extra", ["tag", "annotated-tag", "branch", "remote", "stash"])
def test_check_sanitized_catches_an_extra_ref(tmp_path: Path, extra: str) -> None:
    repo = sanitized_repo(tmp_path / "r")
    head = git(repo, "rev-parse", "HEAD")
    refs = {"tag": "refs/tags/v1", "annotated-tag": "refs/tags/v1",
            "branch": "refs/heads/other", "remote": "refs/remotes/origin/main",
            "stash": "refs/stash"}
    if extra == "annotated-tag":
        git(repo, "tag", "-a", "v1", "-m", "a tag object, reachable from its ref")
    else:
        # update-ref without a reflog: the ref is the only thing left behind
        git(repo, "-c", "core.logAllRefUpdates=false", "update-ref", refs[extra], head)
    with pytest.raises(TemplateError, match=r"the template has refs \[.*'refs/heads/main'.*"
                                            + refs[extra] + r".*\] and 1 commits"):
        check_sanitized(repo, set())


def test_check_sanitized_catches_a_second_commit(tmp_path: Path) -> None:
    repo = sanitized_repo(tmp_path / "r")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "-c", "core.logAllRefUpdates=false", "commit", "-qam", "a later commit")
    with pytest.raises(TemplateError,
                       match=r"the template has refs \['refs/heads/main'\] and 2 commits"):
        check_sanitized(repo, set())


@pytest.mark.parametrize("leftover", ["logs", "ORIG_HEAD", "FETCH_HEAD"])
def test_check_sanitized_catches_a_leftover(tmp_path: Path, leftover: str) -> None:
    repo = sanitized_repo(tmp_path / "r")
    head = git(repo, "rev-parse", "HEAD")
    if leftover == "logs":
        # a reflog entry, as any commit or reset leaves by default
        git(repo, "update-ref", "--create-reflog", "-m", "was here", "refs/heads/main", head)
        assert (repo / ".git" / "logs").is_dir()
    else:
        (repo / ".git" / leftover).write_text(f"{head}\n")
    with pytest.raises(TemplateError,
                       match=re.escape(f"the template's git dir still has ['{leftover}']")):
        check_sanitized(repo, set())


@pytest.mark.parametrize("stray", ["blob", "commit", "tree"])
def test_check_sanitized_catches_unreachable_objects(tmp_path: Path, stray: str) -> None:
    repo = sanitized_repo(tmp_path / "r")
    if stray == "blob":
        subprocess.run(["git", "-C", str(repo), "hash-object", "-w", "--stdin"],
                       input="hidden content\n", text=True, check=True, capture_output=True)
    elif stray == "commit":
        # the later fix, committed and then reset away (its reflog gone): dangling
        (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        git(repo, "-c", "core.logAllRefUpdates=false", "commit", "-qam", "later")
        git(repo, "-c", "core.logAllRefUpdates=false", "reset", "-q", "--hard", "HEAD~1")
        (repo / ".git" / "ORIG_HEAD").unlink()
    else:
        (repo / "extra.txt").write_text("staged, never committed\n")
        git(repo, "add", "extra.txt")
        git(repo, "write-tree")
        git(repo, "-c", "core.logAllRefUpdates=false", "reset", "-q")
        (repo / ".git" / "ORIG_HEAD").unlink(missing_ok=True)
    with pytest.raises(TemplateError, match=r"^\d+ unreachable objects in the template$"):
        check_sanitized(repo, set())
