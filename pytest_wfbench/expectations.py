"""The oracle's expected tests, kept in the cache dir beyond the sweep.

Establishing a task's expected tests runs its oracle once on the gold patch
(:class:`pytest_wfbench.oracle.ExpectationCache`); what that run finds depends
only on what goes into it: the template (its content), the oracle's files and
the hidden paths given back to it, the oracle's command and plugins, the gold
patch, the task's sandbox (its variables and read-only paths: the oracle is
calibrated in the sandbox its cells are judged in), the judges' interpreter and
packages, and the harness (its version and its judge-side files). So the
established expectation is kept in the cache dir (``expectations/``) under
the digest of all of those, and a later sweep with the same inputs
establishes nothing.

An entry holds its own key and a digest of its content: one that does not
check (a torn write, a hand edit) is ignored and established again. Entries
are written atomically (a temporary file renamed over) under a file lock, so
concurrent sweeps establish one once; only successful expectations are kept
(a failure may be the machine's, and is established again by the next sweep).
The store holds at most MAX_ENTRIES entries, the least recently used removed
first.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_wfbench import __version__
from pytest_wfbench.judge.expected import Expectation

ENTRY_FORMAT = 2
"""Of the entries and their key: a change in how expectations are established
must change it."""
MAX_ENTRIES = 5000
SITE = Path(__file__).resolve().parent / "judge" / "site"
LOG = "calibrations.log"


@dataclass(frozen=True)
class ExpectationInputs:
    """Everything that decides what a task's oracle run on its gold patch finds."""

    template: str
    """The template's content key (:attr:`Template.content_key`)."""
    oracle: str
    """The oracle snapshot's digest."""
    hidden: str
    """The digest of the hidden paths the oracle gets back."""
    command: str
    plugins: tuple[str, ...]
    gold: str
    """The gold patch's sha256 (of no bytes without one)."""
    interpreter: str
    """The judges' interpreter and installed packages (the bytecode tree's key)."""
    sandbox: str = ""
    """The task's sandbox policy (:func:`policy_key`): what it sets decides
    which tests run (a variable that turns tests on, a path they read)."""

    def key(self) -> str:
        return expectation_key(self, judge_files_digest())


def expectation_key(inputs: ExpectationInputs, judge_files: str) -> str:
    """The store's key of an expectation: every input, the harness's version and
    its judge-side files (the reporter decides what a test id is). Pure."""
    parts = (str(ENTRY_FORMAT), __version__, judge_files, inputs.template, inputs.oracle,
             inputs.hidden, inputs.command, "\0".join(inputs.plugins), inputs.gold,
             inputs.interpreter, inputs.sandbox)
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


def policy_key(read_only: tuple[str, ...], env: Mapping[str, str]) -> str:
    """A sandbox policy as one string (read-only paths in order, variables
    sorted). Pure."""
    return json.dumps({"read_only": list(read_only), "env": sorted(env.items())})


@functools.cache
def judge_files_digest() -> str:
    """The judge's own files (its sitecustomize and the oracle's reporter)."""
    digest = hashlib.sha256()
    for path in sorted(SITE.glob("*.py")):
        digest.update(f"{path.name}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _content_digest(key: str, expectation: dict[str, Any]) -> str:
    body = json.dumps({"key": key, "expectation": expectation}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def encode_entry(key: str, expectation: Expectation) -> str:
    """An entry's text: its key, the expectation and their digest. Pure."""
    data = expectation.to_json()
    return json.dumps({"format": ENTRY_FORMAT, "key": key, "expectation": data,
                       "sha256": _content_digest(key, data)}, sort_keys=True)


def decode_entry(key: str, text: str) -> Expectation:
    """The expectation an entry holds, checked against its key and its digest;
    ValueError when it does not check. Pure."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != ENTRY_FORMAT:
            raise ValueError("not an entry of this format")
        if data.get("key") != key:
            raise ValueError("an entry of another key")
        expectation = data["expectation"]
        if data.get("sha256") != _content_digest(key, expectation):
            raise ValueError("its content does not match its digest")
        found = Expectation.from_json(expectation)
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"malformed: {error!r}") from error
    if found.judged_by != "tests" or not found.tests:
        raise ValueError("no expected test")
    return found


class ExpectationStore:
    """The cache dir's ``expectations/``: one entry per key, locked per key."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "locks").mkdir(parents=True, exist_ok=True)

    def lock(self, key: str) -> FileLock:
        return FileLock(str(self.root / "locks" / f"{key}.lock"))

    def load(self, key: str) -> Expectation | None:
        """The stored expectation, or None when there is none or it does not
        check (then it is logged, removed, and established again)."""
        path = self.root / f"{key}.json"
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as error:
            self.log(f"ignoring {key}: the stored entry cannot be read: {error}")
            return None
        try:
            expectation = decode_entry(key, text)
        except ValueError as error:
            self.log(f"ignoring {key}: the stored entry does not check: {error}")
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used (the eviction keeps these)
        return expectation

    def save(self, key: str, expectation: Expectation, why: str) -> None:
        """Write the entry atomically (the caller holds the key's lock)."""
        path = self.root / f"{key}.json"
        temporary = path.with_name(f".{key}.{os.getpid()}.new")
        try:
            temporary.write_text(encode_entry(key, expectation), encoding="utf-8")
            os.replace(temporary, path)
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink()
            return  # a store that cannot be written costs the next sweep a calibration
        self.log(f"calibrated {key} ({why})")
        self.evict(keep=key)

    def log(self, line: str) -> None:
        with contextlib.suppress(OSError), \
                (self.root / LOG).open("a", encoding="utf-8") as out:
            out.write(f"{line}\n")

    def evict(self, keep: str, max_entries: int = MAX_ENTRIES) -> None:
        """Remove the least recently used entries beyond ``max_entries``."""
        entries = []
        for path in self.root.glob("*.json"):
            with contextlib.suppress(OSError):
                entries.append((path.stat().st_mtime, path))
        if len(entries) <= max_entries:
            return
        entries.sort(reverse=True)
        now = time.time()
        for used, path in entries[max_entries:]:
            if path.stem != keep and now - used > 60:
                with contextlib.suppress(OSError):
                    path.unlink()
